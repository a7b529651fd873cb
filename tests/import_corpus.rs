//! The corpus (`tests/import/corpus/`, its README): real diagrams from public sources,
//! each imported with only the bindings a user would write.
#![allow(dead_code)]

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Data {
    pub key: String,
    pub flag: bool,
}

async fn work(_d: &mut Data) -> Result<(), TaskError> {
    Ok(())
}

/// Each accepted corpus diagram with its bindings, written once and imported three
/// times: as the file is (`NAME`); without its diagram interchange, laid out by thresh
/// (`plain::NAME`, `tests/import/corpus_plain/`); and back from its export
/// (`back::NAME`, `tests/import/corpus_back/`: the export keeps ids, so the bindings
/// still name what they bound).
macro_rules! corpus {
    ($($(#[$doc:meta])* $name:ident: $file:tt $(process $process:tt)?, $plain:tt, $back:tt {
        $($binding:tt)*
    })*) => {
        $(process! { $(#[$doc])* pub $name: Data from $file $(process $process)? { $($binding)* } })*

        /// Every accepted corpus process, by name.
        fn accepted() -> Vec<(&'static str, &'static thresh::Process<Data>)> {
            vec![$((stringify!($name), &$name)),*]
        }

        /// The accepted diagrams without their diagram interchange.
        mod plain {
            use super::{work, Data};
            use thresh::process;

            $(process! { pub $name: Data from $plain $(process $process)? { $($binding)* } })*

            pub fn all() -> Vec<(&'static str, &'static thresh::Process<Data>)> {
                vec![$((stringify!($name), &$name)),*]
            }
        }

        /// The accepted diagrams imported back from their exports.
        mod back {
            use super::{work, Data};
            use thresh::process;

            $(process! { pub $name: Data from $back { $($binding)* } })*

            /// In the order of `super::accepted`.
            pub fn accepted() -> Vec<(&'static str, &'static thresh::Process<Data>)> {
                vec![$((stringify!($name), &$name)),*]
            }
        }
    };
}

corpus! {
    /// `bpmn-io/qr-code.bpmn`
    BPMN_IO_QR_CODE: "tests/import/corpus/bpmn-io/qr-code.bpmn",
        "tests/import/corpus_plain/bpmn_io_qr_code.bpmn",
        "tests/import/corpus_back/bpmn_io_qr_code.bpmn" {
        task SCAN_QR_CODE = work;
        task "sid-E49425CF-8287-4798-B622-D2A7D78EF00B" = work;
        flow "sid-8B820AF5-DC5C-4618-B854-E08B71FB55CB" when |d| d.flag;
        flow "sid-337A23B9-A923-4CCE-B613-3E247B773CCE" when |d| d.flag;
    }

    /// `bpmn-io/starter.bpmn`
    BPMN_IO_STARTER: "tests/import/corpus/bpmn-io/starter.bpmn",
        "tests/import/corpus_plain/bpmn_io_starter.bpmn",
        "tests/import/corpus_back/bpmn_io_starter.bpmn" {
        task "sid-52EB1772-F36E-433E-8F5B-D5DFD26E6F26" = work;
        task "sid-E49425CF-8287-4798-B622-D2A7D78EF00B" = work;
        flow "sid-337A23B9-A923-4CCE-B613-3E247B773CCE" when |d| d.flag;
        flow "sid-8B820AF5-DC5C-4618-B854-E08B71FB55CB" when |d| d.flag;
    }

    /// `bpmn-io/transaction-boundaries.bpmn`
    BPMN_IO_TRANSACTION_BOUNDARIES: "tests/import/corpus/bpmn-io/transaction-boundaries.bpmn",
        "tests/import/corpus_plain/bpmn_io_transaction_boundaries.bpmn",
        "tests/import/corpus_back/bpmn_io_transaction_boundaries.bpmn" {
        task Foobar = work;
        task Task_1sj6xof = work;
        receive ReceiveTask_1nfzpjk: message("ReceiveTask_1nfzpjk", key = |d| d.key.clone());
        catch IntermediateCatchEvent_0gmbwuc: timer(::core::time::Duration::from_secs(60));
        task Task_12m3h91 = work;
        task Task_0s7hgb5 = work;
    }

    /// `camunda/TwitterDemoProcess.bpmn`
    CAMUNDA_TWITTERDEMOPROCESS: "tests/import/corpus/camunda/TwitterDemoProcess.bpmn",
        "tests/import/corpus_plain/camunda_twitterdemoprocess.bpmn",
        "tests/import/corpus_back/camunda_twitterdemoprocess.bpmn" {
        task service_task_send_rejection_notification = work;
        flow no when |d| d.flag;
        flow yes when |d| d.flag;
        task service_task_publish_on_twitter = work;
    }

    /// `camunda/asynchronousServiceInvocation.bpmn`
    CAMUNDA_ASYNCHRONOUSSERVICEINVOCATION: "tests/import/corpus/camunda/asynchronousServiceInvocation.bpmn",
        "tests/import/corpus_plain/camunda_asynchronousserviceinvocation.bpmn",
        "tests/import/corpus_back/camunda_asynchronousserviceinvocation.bpmn" {
        task serviceTaskActivity = work;
    }

    /// `camunda/instantiating_process.bpmn`
    CAMUNDA_INSTANTIATING_PROCESS: "tests/import/corpus/camunda/instantiating_process.bpmn",
        "tests/import/corpus_plain/camunda_instantiating_process.bpmn",
        "tests/import/corpus_back/camunda_instantiating_process.bpmn" {
        task ServiceTask_1 = work;
    }

    /// `camunda/invoiceApproval.bpmn`
    CAMUNDA_INVOICEAPPROVAL: "tests/import/corpus/camunda/invoiceApproval.bpmn",
        "tests/import/corpus_plain/camunda_invoiceapproval.bpmn",
        "tests/import/corpus_back/camunda_invoiceapproval.bpmn" {
    }

    /// `camunda/invoicePayment.bpmn`
    CAMUNDA_INVOICEPAYMENT: "tests/import/corpus/camunda/invoicePayment.bpmn",
        "tests/import/corpus_plain/camunda_invoicepayment.bpmn",
        "tests/import/corpus_back/camunda_invoicepayment.bpmn" {
    }

    /// `camunda/loanApproval.bpmn`
    CAMUNDA_LOANAPPROVAL: "tests/import/corpus/camunda/loanApproval.bpmn",
        "tests/import/corpus_plain/camunda_loanapproval.bpmn",
        "tests/import/corpus_back/camunda_loanapproval.bpmn" {
        task ServiceTask_1 = work;
    }

    /// `camunda/message_start_process.bpmn`
    CAMUNDA_MESSAGE_START_PROCESS: "tests/import/corpus/camunda/message_start_process.bpmn",
        "tests/import/corpus_plain/camunda_message_start_process.bpmn",
        "tests/import/corpus_back/camunda_message_start_process.bpmn" {
    }

    /// `camunda/order-handling.bpmn`
    CAMUNDA_ORDER_HANDLING: "tests/import/corpus/camunda/order-handling.bpmn",
        "tests/import/corpus_plain/camunda_order_handling.bpmn",
        "tests/import/corpus_back/camunda_order_handling.bpmn" {
        task Task_06z99p1 = work;
        start StartEvent_1: timer(::core::time::Duration::from_secs(60));
        boundary BoundaryEvent_1y1bvad: condition(|d| d.flag, on = [flag]);
        task Task_1yjkccw = work;
    }

    /// `camunda/retry-example.bpmn`
    CAMUNDA_RETRY_EXAMPLE: "tests/import/corpus/camunda/retry-example.bpmn",
        "tests/import/corpus_plain/camunda_retry_example.bpmn",
        "tests/import/corpus_back/camunda_retry_example.bpmn" {
        task "service-fetch-data" = work;
        task "service-fetch-address" = work;
        task "service-send-data" = work;
        task "service-add-address" = work;
    }

    /// `miwg/A.1.0.bpmn`
    MIWG_A_1_0: "tests/import/corpus/miwg/A.1.0.bpmn",
        "tests/import/corpus_plain/miwg_a_1_0.bpmn",
        "tests/import/corpus_back/miwg_a_1_0.bpmn" {
        task "_ec59e164-68b4-4f94-98de-ffb1c58a84af" = work;
        task "_820c21c0-45f3-473b-813f-06381cc637cd" = work;
        task "_e70a6fcb-913c-4a7b-a65d-e83adc73d69c" = work;
    }

    /// `miwg/A.2.0.bpmn`
    MIWG_A_2_0: "tests/import/corpus/miwg/A.2.0.bpmn",
        "tests/import/corpus_plain/miwg_a_2_0.bpmn",
        "tests/import/corpus_back/miwg_a_2_0.bpmn" {
        task "_5a972b87-735d-454a-b31c-f52fb3afc5c7" = work;
        task "_4f7d62d7-f0e6-46bc-be00-69e02da38f65" = work;
        task "_e6eb725a-34bc-45c7-aed0-9f9596cd7bee" = work;
        task "_7d399717-1aba-47ac-8d7d-8aaa033255e0" = work;
        flow "_f1478fb7-98c4-4c01-8c15-68bd04c91535" when |d| d.flag;
        flow "_a1570a53-28d2-41b1-a3a2-3e50c00d747e" when |d| d.flag;
        flow "_20ebb3c1-5178-4c7c-a91d-23e58f2aa73b" when |d| d.flag;
    }

    /// `miwg/A.2.1.bpmn`
    MIWG_A_2_1: "tests/import/corpus/miwg/A.2.1.bpmn",
        "tests/import/corpus_plain/miwg_a_2_1.bpmn",
        "tests/import/corpus_back/miwg_a_2_1.bpmn" {
        task _To9ZpzOCEeSknpIVFCxNIQ = work;
        task _To9ZtjOCEeSknpIVFCxNIQ = work;
        task _To9ZwDOCEeSknpIVFCxNIQ = work;
        task _To9ZzzOCEeSknpIVFCxNIQ = work;
        flow _To9Z7TOCEeSknpIVFCxNIQ when |d| d.flag;
        flow _To9Z8zOCEeSknpIVFCxNIQ when |d| d.flag;
        flow _To9Z9jOCEeSknpIVFCxNIQ when |d| d.flag;
        flow "_To9Z-TOCEeSknpIVFCxNIQ" when |d| d.flag;
        flow _To9Z_DOCEeSknpIVFCxNIQ when |d| d.flag;
    }

    /// `miwg/A.3.0.bpmn`
    MIWG_A_3_0: "tests/import/corpus/miwg/A.3.0.bpmn",
        "tests/import/corpus_plain/miwg_a_3_0.bpmn",
        "tests/import/corpus_back/miwg_a_3_0.bpmn" {
        task "_65f5459f-44ae-436d-a089-a91d6d78075b" = work;
        task "_1ae31d1b-2559-4f78-a3ec-47986a49db48" = work;
        boundary "_428dcbf5-8e5e-48e0-9c0c-d93003fa8c82": message("_428dcbf5-8e5e-48e0-9c0c-d93003fa8c82", key = |d| d.key.clone());
        task "_9fad8da5-a28c-4b6b-bb71-fbd5c65b9681" = work;
        task "_72204cd7-709c-4656-9554-3ae29b3844ce" = work;
        task "_2d2d0d29-896f-49f9-8109-77a7304309c5" = work;
    }

    /// `miwg/A.4.0.bpmn`
    MIWG_A_4_0: "tests/import/corpus/miwg/A.4.0.bpmn" process "WFP-6-1",
        "tests/import/corpus_plain/miwg_a_4_0.bpmn",
        "tests/import/corpus_back/miwg_a_4_0.bpmn" {
        task "_ab851300-b5de-4ad3-bbec-215553757fc8" = work;
        task "_80d1f02b-f39c-45c2-b731-43df75d81779" = work;
    }

    /// `miwg/A.4.1.bpmn`
    MIWG_A_4_1: "tests/import/corpus/miwg/A.4.1.bpmn" process "sid-34746A54-1D7D-46CA-B219-0C4CEAE51170",
        "tests/import/corpus_plain/miwg_a_4_1.bpmn",
        "tests/import/corpus_back/miwg_a_4_1.bpmn" {
        task "sid-3D477D07-D669-4A26-9454-12AD775FDE70" = work;
        task "sid-1208A5BA-9E1C-49D2-82E3-5DB2C0E9887D" = work;
    }

    /// `miwg/B.1.0.bpmn`
    MIWG_B_1_0: "tests/import/corpus/miwg/B.1.0.bpmn" process "Process_ba16239e-181e-4b9f-bc5b-0bb2ee973450",
        "tests/import/corpus_plain/miwg_b_1_0.bpmn",
        "tests/import/corpus_back/miwg_b_1_0.bpmn" {
        task "_c57a5344-213f-4834-a6c3-94ce878b413c" = work;
    }

    /// `miwg/C.1.0.bpmn`
    MIWG_C_1_0: "tests/import/corpus/miwg/C.1.0.bpmn" process "sid-5FBB6CB3-8A7C-42B5-9024-15BB2684EC57",
        "tests/import/corpus_plain/miwg_c_1_0.bpmn",
        "tests/import/corpus_back/miwg_c_1_0.bpmn" {
        start "sid-36EA43D1-0FE6-4197-AC57-7A43785B784B": message("sid-36EA43D1-0FE6-4197-AC57-7A43785B784B");
        task "sid-05039C4F-59F7-4CBD-8C84-D35E27C7B5EF" = work;
        task "sid-CFAC8502-0E69-4F08-BE36-8499B8C0FA44" = work;
        catch "sid-40EC6574-E644-425C-8CE7-EE384F0C3520": message("sid-40EC6574-E644-425C-8CE7-EE384F0C3520", key = |d| d.key.clone());
        task "sid-64AFCE49-96A2-4A51-96CB-9DF689C37DAD" = work;
        catch "sid-B548B980-12E3-408E-9AC4-7031B85A8F2D": message("sid-B548B980-12E3-408E-9AC4-7031B85A8F2D", key = |d| d.key.clone());
        task "sid-6FC20E19-AF3A-4A77-8588-2D671C98D93D" = work;
        catch "sid-0E349B8B-14A7-4565-988A-38F3A9B624D2": timer(::core::time::Duration::from_secs(60));
    }

    /// `miwg/C.3.0.bpmn`
    MIWG_C_3_0: "tests/import/corpus/miwg/C.3.0.bpmn",
        "tests/import/corpus_plain/miwg_c_3_0.bpmn",
        "tests/import/corpus_back/miwg_c_3_0.bpmn" {
        task "_cd6f230f-13c3-4027-aa3e-57de601a1ab2" = work;
        flow "_b99800c3-c340-460c-a43e-098014a365d0" when |d| d.flag;
        flow "_437e5969-1e61-4cb9-aa76-4f8854f32eeb" when |d| d.flag;
        flow "_ada039b6-94dd-4a15-a6b1-c7fe662c64ee" when |d| d.flag;
        flow "_cddf9325-a85b-4347-8c57-8b909fa77ae9" when |d| d.flag;
        flow "_be893987-caec-4605-b078-bd96b7cd6c12" when |d| d.flag;
        flow "_cf380e47-1401-4e7e-b710-193b626e49eb" when |d| d.flag;
        flow "_3fb323d5-2c59-487a-af63-804208f6c5cb" when |d| d.flag;
        boundary Bpmn_BoundaryEvent_LwKtwhqHEeWDuOtG0oS24A: message("Service Level", key = |d| d.key.clone());
    }

    /// `spiff/MessageBoundary.bpmn`
    SPIFF_MESSAGEBOUNDARY: "tests/import/corpus/spiff/MessageBoundary.bpmn" process "Process_1kjyavs",
        "tests/import/corpus_plain/spiff_messageboundary.bpmn",
        "tests/import/corpus_back/spiff_messageboundary.bpmn" {
        flow Flow_0saykw5 when |d| d.flag;
        throw Event_0g8w85g: message("Message_Interrupt", key = |d| d.key.clone());
    }

    /// `spiff/ParallelOrder.bpmn`
    SPIFF_PARALLELORDER: "tests/import/corpus/spiff/ParallelOrder.bpmn",
        "tests/import/corpus_plain/spiff_parallelorder.bpmn",
        "tests/import/corpus_back/spiff_parallelorder.bpmn" {
        task Activity_0wjwnuk = work;
        task Activity_1aj4dg6 = work;
        task Activity_1spu8el = work;
        task Activity_0x0i4s3 = work;
    }

    /// `spiff/boundary.bpmn`
    SPIFF_BOUNDARY: "tests/import/corpus/spiff/boundary.bpmn",
        "tests/import/corpus_plain/spiff_boundary.bpmn",
        "tests/import/corpus_back/spiff_boundary.bpmn" {
        flow Flow_0q65w45 when |d| d.flag;
        boundary Event_0iiih8g: timer(::core::time::Duration::from_secs(60));
    }

    /// `spiff/boundary_timer_on_task.bpmn`
    SPIFF_BOUNDARY_TIMER_ON_TASK: "tests/import/corpus/spiff/boundary_timer_on_task.bpmn",
        "tests/import/corpus_plain/spiff_boundary_timer_on_task.bpmn",
        "tests/import/corpus_back/spiff_boundary_timer_on_task.bpmn" {
        boundary Event_0y4hbl0: timer(::core::time::Duration::from_secs(60));
        task set_variable = work;
        task Activity_0dzjjk3 = work;
    }

    /// `spiff/event-gateway.bpmn`
    SPIFF_EVENT_GATEWAY: "tests/import/corpus/spiff/event-gateway.bpmn",
        "tests/import/corpus_plain/spiff_event_gateway.bpmn",
        "tests/import/corpus_back/spiff_event_gateway.bpmn" {
        catch message_1_event: message("message_1", key = |d| d.key.clone());
        catch message_2_event: message("message_2", key = |d| d.key.clone());
        catch timer_event: timer(::core::time::Duration::from_secs(60));
    }

    /// `spiff/event-subprocess.bpmn`
    SPIFF_EVENT_SUBPROCESS: "tests/import/corpus/spiff/event-subprocess.bpmn",
        "tests/import/corpus_plain/spiff_event_subprocess.bpmn",
        "tests/import/corpus_back/spiff_event_subprocess.bpmn" {
        task set_data = work;
        task task = work;
    }

    /// `spiff/exclusive_gateway_no_default.bpmn`
    SPIFF_EXCLUSIVE_GATEWAY_NO_DEFAULT: "tests/import/corpus/spiff/exclusive_gateway_no_default.bpmn",
        "tests/import/corpus_plain/spiff_exclusive_gateway_no_default.bpmn",
        "tests/import/corpus_back/spiff_exclusive_gateway_no_default.bpmn" {
        flow Flow_Greater1 when |d| d.flag;
        flow Flow_Less1 when |d| d.flag;
        task Activity_Greater = work;
        task Activity_Less = work;
    }

    /// `spiff/inclusive_gateway.bpmn`
    SPIFF_INCLUSIVE_GATEWAY: "tests/import/corpus/spiff/inclusive_gateway.bpmn",
        "tests/import/corpus_plain/spiff_inclusive_gateway.bpmn",
        "tests/import/corpus_back/spiff_inclusive_gateway.bpmn" {
        flow u_positive when |d| d.flag;
        flow w_positive when |d| d.flag;
        flow check_v when |d| d.flag;
        task increment_v = work;
        task u_plus_v = work;
        task w_plus_v = work;
    }

    /// `spiff/transaction.bpmn`
    SPIFF_TRANSACTION: "tests/import/corpus/spiff/transaction.bpmn",
        "tests/import/corpus_plain/spiff_transaction.bpmn",
        "tests/import/corpus_back/spiff_transaction.bpmn" {
        flow Quantity_LT_Zero when |d| d.flag;
        flow Flow_1k10r1p when |d| d.flag;
        end Error_None: error("FAILED");
        flow Flow_1j0zczv when |d| d.flag;
        task Activity_Print_Data = work;
        task Error_1_Action = work;
        task Error_None_Action = work;
        task Cancel_Action = work;
    }
}

#[test]
fn every_accepted_diagram_imports_with_its_ids_and_names_as_written() {
    for (name, p) in accepted() {
        assert!(p.nodes().len() >= 2, "{name}: nothing imported");
        // Ids and names as the file writes them (hyphens, UUIDs, leading digits).
        for n in p.nodes() {
            assert!(!n.id().is_empty(), "{name}: a node without id");
        }
    }
    let written = |p: &thresh::Process<Data>, id: &str| p.nodes().iter().any(|n| n.id() == id);
    assert!(written(
        &MIWG_A_1_0,
        "_93c466ab-b271-4376-a427-f4c353d55ce8"
    ));
    assert!(written(
        &BPMN_IO_QR_CODE,
        "sid-E49425CF-8287-4798-B622-D2A7D78EF00B"
    ));
}

/// `tests/import/corpus_back/<name>.bpmn`.
fn back_file(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/corpus_back")
        .join(format!("{}.bpmn", name.to_lowercase()))
}

#[test]
#[ignore = "writes the corpus's exports afresh"]
fn write_the_corpus_exports() {
    for (name, p) in accepted() {
        let file = back_file(name);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("create");
        std::fs::write(file, p.to_bpmn()).expect("write");
    }
}

#[test]
fn the_corpus_exports_are_todays() {
    for (name, p) in accepted() {
        let file = back_file(name);
        let kept = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run `cargo test --test import_corpus write_the_corpus_exports -- --ignored`",
                file.display()
            )
        });
        assert!(
            kept == p.to_bpmn(),
            "{} is not today's export: run `cargo test --test import_corpus write_the_corpus_exports -- --ignored` and review the change",
            file.display()
        );
    }
}

/// What a round trip keeps of a node: id, name, element type, keyword, scope.
fn nodes(p: &thresh::Process<Data>) -> Vec<(String, String, String, String)> {
    let mut v: Vec<_> = p
        .nodes()
        .iter()
        .map(|n| {
            // A task's element type: what the export writes for it.
            (
                n.id().to_string(),
                n.name().to_string(),
                n.element().to_string(),
                n.keyword().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_corpus_export_imports_back_to_the_same_model() {
    for ((name, p), (_, q)) in accepted().into_iter().zip(back::accepted()) {
        assert_eq!(
            p.fingerprint(),
            q.fingerprint(),
            "{name}: another fingerprint"
        );
        let flows = |p: &thresh::Process<Data>| {
            let mut v: Vec<(String, String)> = p
                .flows()
                .iter()
                .map(|f| (f.id().to_string(), f.name().to_string()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(flows(p), flows(q), "{name}: flow ids or names changed");
        let (a, b) = (nodes(p), nodes(q));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (&x.0, &x.1, &x.3),
                (&y.0, &y.1, &y.3),
                "{name}: id, name or kind changed"
            );
            // A task's type is kept (an empty sub-process bound as a task is exported
            // as the task it runs as).
            if x.3 == "task" && !matches!(x.2.as_str(), "subProcess" | "transaction") {
                assert_eq!(x.2, y.2, "{name}: `{}` changed its element type", x.0);
            }
        }
        assert_eq!(a.len(), b.len(), "{name}: elements added or lost");
    }
}

#[test]
fn an_imported_diagram_keeps_its_layout_through_the_round_trip() {
    // As the file draws it (MIWG A.1.0's start event: `x="186.0" y="336.0"`, 30 × 30).
    let start = MIWG_A_1_0
        .layout()
        .shape("_93c466ab-b271-4376-a427-f4c353d55ce8")
        .map(|s| s.bounds)
        .expect("drawn");
    assert_eq!(
        (start.x, start.y, start.width, start.height),
        (186, 336, 30, 30)
    );
    for ((name, p), (_, q)) in accepted().into_iter().zip(back::accepted()) {
        let (a, b) = (p.layout(), q.layout());
        let shapes = |l: &thresh::diagram::Layout| {
            let mut v: Vec<_> = l.shapes.iter().map(|s| (s.id.clone(), s.bounds)).collect();
            v.sort_by(|x, y| x.0.cmp(&y.0));
            v
        };
        assert_eq!(shapes(&a), shapes(&b), "{name}: shapes moved");
        let edges = |l: &thresh::diagram::Layout| {
            let mut v: Vec<_> = l
                .edges
                .iter()
                .map(|e| (e.id.clone(), e.waypoints.clone()))
                .collect();
            v.sort_by(|x, y| x.0.cmp(&y.0));
            v
        };
        assert_eq!(edges(&a), edges(&b), "{name}: flows rerouted");
    }
}

#[path = "diagram/clear.rs"]
mod clear;

/// Issue 37's layout rules (`diagram/clear.rs`) over thresh's own layout of these real
/// graphs (the corpus without its diagram interchange).
#[test]
fn the_corpus_laid_out_by_thresh_has_no_overlapping_labels_and_no_flow_across_a_shape() {
    let mut all = Vec::new();
    for (name, p) in plain::all() {
        let layout = p.layout();
        assert!(
            layout.overlapping().is_empty(),
            "{name}: overlapping shapes {:?}",
            layout.overlapping()
        );
        let ends: Vec<(usize, usize)> =
            p.flows().iter().map(|f| (f.source(), f.target())).collect();
        all.extend(
            clear::problems(&layout, &ends)
                .into_iter()
                .map(|m| format!("{name}: {m}")),
        );
    }
    assert!(
        all.is_empty(),
        "{} problems:\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
fn exports_keep_names_task_types_and_flow_labels() {
    // A script task and a manual task (which passes at once) keep their types.
    let xml = SPIFF_BOUNDARY.to_bpmn();
    assert!(
        xml.contains(r#"<bpmn:manualTask id="StopCar" name="Stop Car">"#),
        "{xml}"
    );
    assert!(SPIFF_TRANSACTION.to_bpmn().contains("<bpmn:scriptTask "));
    // The picture draws each type's icon: the manual task a hand, the script task a
    // scroll — not a service task's gear.
    assert!(SPIFF_BOUNDARY.to_svg().contains("q1,0 1,1.3"), "a hand");
    assert!(
        SPIFF_TRANSACTION.to_svg().contains("c-4,4 4,8 0,14"),
        "a scroll"
    );
    // A named flow is labelled by its name, in the export and the picture.
    let flow = r#"<bpmn:sequenceFlow id="Flow_Greater2" sourceRef="Activity_Greater" targetRef="Event_End" name="Greater" />"#;
    assert!(SPIFF_EXCLUSIVE_GATEWAY_NO_DEFAULT.to_bpmn().contains(flow));
    assert!(SPIFF_EXCLUSIVE_GATEWAY_NO_DEFAULT
        .to_svg()
        .contains(">Greater</text>"));
    assert!(plain::SPIFF_EXCLUSIVE_GATEWAY_NO_DEFAULT
        .to_svg()
        .contains(">Greater</text>"));
}

#[tokio::test]
async fn a_diagram_with_uuid_ids_runs_and_reports_them_as_written() {
    let engine = thresh::Engine::new();
    let h = engine.start(&MIWG_A_1_0, Data::default()).await.unwrap();
    h.outcome().await.completed().expect("completed");
    let done = h.history().await.completed_tasks();
    assert_eq!(done.len(), 3, "{done:?}");
    assert!(
        done.iter().all(|t| t.starts_with('_') && t.contains('-')),
        "{done:?}"
    );
}

process! {
    /// No start and no end event (both implicit), a manual task and a milestone.
    pub PASSING: Data from "tests/import/passing.bpmn" {
        task notify = |d| async move { d.flag = true; Ok(()) };
    }
}

#[tokio::test]
async fn implicit_starts_and_ends_manual_tasks_and_milestones_run_as_bpmn_says() {
    let engine = thresh::Engine::new();
    let h = engine.start(&PASSING, Data::default()).await.unwrap();
    let d = h.outcome().await.completed().expect("completed");
    assert!(d.flag);
    assert_eq!(
        h.history().await.completed_tasks(),
        ["sign-form", "signed", "notify"]
    );
    let kinds: Vec<_> = PASSING
        .nodes()
        .iter()
        .map(|n| (n.id(), n.element()))
        .collect();
    assert!(kinds.contains(&("sign-form", "manualTask")));
    assert!(kinds.contains(&("notify", "sendTask")));
    assert!(PASSING.node("process_implicit_start").is_some());
    assert!(PASSING.node("notify_implicit_end").is_some());
}
