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

process! {
    /// `bpmn-io/kitchen-sink.bpmn`
    pub BPMN_IO_KITCHEN_SINK: Data from "tests/import/corpus/bpmn-io/kitchen-sink.bpmn" process "Process_1" {
        boundary BoundaryEvent_04znm02: condition(|d| d.flag, on = [flag]);
        boundary BoundaryEvent_0iiyz0j: message("BoundaryEvent_0iiyz0j", key = |d| d.key.clone());
        boundary BoundaryEvent_09zzeyl: condition(|d| d.flag, on = [flag]);
        boundary BoundaryEvent_1fs6xst: timer(::core::time::Duration::from_secs(60));
        boundary BoundaryEvent_0nu3946: message("BoundaryEvent_0nu3946", key = |d| d.key.clone());
        catch IntermediateThrowEvent_0731jft: condition(|d| d.flag, on = [flag]);
        catch IntermediateThrowEvent_1vaa2b4: timer(::core::time::Duration::from_secs(60));
        throw IntermediateThrowEvent_1755nsj: message("IntermediateThrowEvent_1755nsj", key = |d| d.key.clone());
        catch IntermediateThrowEvent_17ci1dt: message("IntermediateThrowEvent_17ci1dt", key = |d| d.key.clone());
        task Task_1suvpez = work;
        task Task_1165fo8 = work;
        receive Task_0oz8m30: message("Task_0oz8m30", key = |d| d.key.clone());
        task Task_0qibn8y = work;
        task Task_1ank6jx = work;
    }
}

process! {
    /// `bpmn-io/modeling-api.bpmn`
    pub BPMN_IO_MODELING_API: Data from "tests/import/corpus/bpmn-io/modeling-api.bpmn" {

    }
}

process! {
    /// `bpmn-io/nested-subprocesses.bpmn`
    pub BPMN_IO_NESTED_SUBPROCESSES: Data from "tests/import/corpus/bpmn-io/nested-subprocesses.bpmn" {

    }
}

process! {
    /// `bpmn-io/pizza-collaboration.bpmn`
    pub BPMN_IO_PIZZA_COLLABORATION: Data from "tests/import/corpus/bpmn-io/pizza-collaboration.bpmn" process "_6-1" {
        catch "_6-674": message("_1275940932433", key = |d| d.key.clone());
        task "_6-695" = work;
        task "_6-463" = work;
        task "_6-514" = work;
        task "_6-565" = work;
    }
}

process! {
    /// `bpmn-io/qr-code.bpmn`
    pub BPMN_IO_QR_CODE: Data from "tests/import/corpus/bpmn-io/qr-code.bpmn" {
        task SCAN_QR_CODE = work;
        task "sid-E49425CF-8287-4798-B622-D2A7D78EF00B" = work;
        flow "sid-8B820AF5-DC5C-4618-B854-E08B71FB55CB" when |d| d.flag;
        flow "sid-337A23B9-A923-4CCE-B613-3E247B773CCE" when |d| d.flag;
    }
}

process! {
    /// `bpmn-io/starter.bpmn`
    pub BPMN_IO_STARTER: Data from "tests/import/corpus/bpmn-io/starter.bpmn" {
        task "sid-52EB1772-F36E-433E-8F5B-D5DFD26E6F26" = work;
        task "sid-E49425CF-8287-4798-B622-D2A7D78EF00B" = work;
        flow "sid-337A23B9-A923-4CCE-B613-3E247B773CCE" when |d| d.flag;
        flow "sid-8B820AF5-DC5C-4618-B854-E08B71FB55CB" when |d| d.flag;
    }
}

process! {
    /// `bpmn-io/transaction-boundaries.bpmn`
    pub BPMN_IO_TRANSACTION_BOUNDARIES: Data from "tests/import/corpus/bpmn-io/transaction-boundaries.bpmn" {
        task Foobar = work;
        task Task_1sj6xof = work;
        receive ReceiveTask_1nfzpjk: message("ReceiveTask_1nfzpjk", key = |d| d.key.clone());
        catch IntermediateCatchEvent_0gmbwuc: timer(::core::time::Duration::from_secs(60));
        task Task_12m3h91 = work;
        task Task_0s7hgb5 = work;
    }
}

process! {
    /// `camunda/TwitterDemoProcess.bpmn`
    pub CAMUNDA_TWITTERDEMOPROCESS: Data from "tests/import/corpus/camunda/TwitterDemoProcess.bpmn" {
        task service_task_send_rejection_notification = work;
        flow no when |d| d.flag;
        flow yes when |d| d.flag;
        task service_task_publish_on_twitter = work;
    }
}

process! {
    /// `camunda/asynchronousServiceInvocation.bpmn`
    pub CAMUNDA_ASYNCHRONOUSSERVICEINVOCATION: Data from "tests/import/corpus/camunda/asynchronousServiceInvocation.bpmn" {
        task serviceTaskActivity = work;
    }
}

process! {
    /// `camunda/instantiating_process.bpmn`
    pub CAMUNDA_INSTANTIATING_PROCESS: Data from "tests/import/corpus/camunda/instantiating_process.bpmn" {
        task ServiceTask_1 = work;
    }
}

process! {
    /// `camunda/invoiceApproval.bpmn`
    pub CAMUNDA_INVOICEAPPROVAL: Data from "tests/import/corpus/camunda/invoiceApproval.bpmn" {

    }
}

process! {
    /// `camunda/invoicePayment.bpmn`
    pub CAMUNDA_INVOICEPAYMENT: Data from "tests/import/corpus/camunda/invoicePayment.bpmn" {

    }
}

process! {
    /// `camunda/job-announcement.bpmn`
    pub CAMUNDA_JOB_ANNOUNCEMENT: Data from "tests/import/corpus/camunda/job-announcement.bpmn" {
        task mail = work;
        flow Flow_1gfi885 when |d| d.flag;
        flow Flow_0yjunvn when |d| d.flag;
    }
}

process! {
    /// `camunda/loan-granting.bpmn`
    pub CAMUNDA_LOAN_GRANTING: Data from "tests/import/corpus/camunda/loan-granting.bpmn" {
        task Task_1lvjtd4 = work;
        flow SequenceFlow_17zmvol when |d| d.flag;
        flow SequenceFlow_0vpum3q when |d| d.flag;
        task Task_0v4gadf = work;
        task Task_0j0sjlk = work;
        start StartEvent_1: timer(::core::time::Duration::from_secs(60));
    }
}

process! {
    /// `camunda/loanApproval.bpmn`
    pub CAMUNDA_LOANAPPROVAL: Data from "tests/import/corpus/camunda/loanApproval.bpmn" {
        task ServiceTask_1 = work;
    }
}

process! {
    /// `camunda/message_start_process.bpmn`
    pub CAMUNDA_MESSAGE_START_PROCESS: Data from "tests/import/corpus/camunda/message_start_process.bpmn" {

    }
}

process! {
    /// `camunda/order-handling.bpmn`
    pub CAMUNDA_ORDER_HANDLING: Data from "tests/import/corpus/camunda/order-handling.bpmn" {
        task Task_06z99p1 = work;
        start StartEvent_1: timer(::core::time::Duration::from_secs(60));
        boundary BoundaryEvent_1y1bvad: condition(|d| d.flag, on = [flag]);
        task Task_1yjkccw = work;
    }
}

process! {
    /// `camunda/retry-example.bpmn`
    pub CAMUNDA_RETRY_EXAMPLE: Data from "tests/import/corpus/camunda/retry-example.bpmn" {
        task "service-fetch-data" = work;
        task "service-fetch-address" = work;
        task "service-send-data" = work;
        task "service-add-address" = work;
    }
}

process! {
    /// `miwg/A.1.0.bpmn`
    pub MIWG_A_1_0: Data from "tests/import/corpus/miwg/A.1.0.bpmn" {
        task "_ec59e164-68b4-4f94-98de-ffb1c58a84af" = work;
        task "_820c21c0-45f3-473b-813f-06381cc637cd" = work;
        task "_e70a6fcb-913c-4a7b-a65d-e83adc73d69c" = work;
    }
}

process! {
    /// `miwg/A.2.0.bpmn`
    pub MIWG_A_2_0: Data from "tests/import/corpus/miwg/A.2.0.bpmn" {
        task "_5a972b87-735d-454a-b31c-f52fb3afc5c7" = work;
        task "_4f7d62d7-f0e6-46bc-be00-69e02da38f65" = work;
        task "_e6eb725a-34bc-45c7-aed0-9f9596cd7bee" = work;
        task "_7d399717-1aba-47ac-8d7d-8aaa033255e0" = work;
        flow "_f1478fb7-98c4-4c01-8c15-68bd04c91535" when |d| d.flag;
        flow "_a1570a53-28d2-41b1-a3a2-3e50c00d747e" when |d| d.flag;
        flow "_20ebb3c1-5178-4c7c-a91d-23e58f2aa73b" when |d| d.flag;
    }
}

process! {
    /// `miwg/A.2.1.bpmn`
    pub MIWG_A_2_1: Data from "tests/import/corpus/miwg/A.2.1.bpmn" {
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
}

process! {
    /// `miwg/A.3.0.bpmn`
    pub MIWG_A_3_0: Data from "tests/import/corpus/miwg/A.3.0.bpmn" {
        task "_65f5459f-44ae-436d-a089-a91d6d78075b" = work;
        boundary "_428dcbf5-8e5e-48e0-9c0c-d93003fa8c82": message("_428dcbf5-8e5e-48e0-9c0c-d93003fa8c82", key = |d| d.key.clone());
        task "_9fad8da5-a28c-4b6b-bb71-fbd5c65b9681" = work;
        task "_72204cd7-709c-4656-9554-3ae29b3844ce" = work;
        task "_2d2d0d29-896f-49f9-8109-77a7304309c5" = work;
    }
}

process! {
    /// `miwg/A.4.0.bpmn`
    pub MIWG_A_4_0: Data from "tests/import/corpus/miwg/A.4.0.bpmn" process "WFP-6-1" {
        task "_ab851300-b5de-4ad3-bbec-215553757fc8" = work;
        task "_80d1f02b-f39c-45c2-b731-43df75d81779" = work;
    }
}

process! {
    /// `miwg/A.4.1.bpmn`
    pub MIWG_A_4_1: Data from "tests/import/corpus/miwg/A.4.1.bpmn" process "sid-34746A54-1D7D-46CA-B219-0C4CEAE51170" {
        task "sid-3D477D07-D669-4A26-9454-12AD775FDE70" = work;
        task "sid-1208A5BA-9E1C-49D2-82E3-5DB2C0E9887D" = work;
    }
}

process! {
    /// `miwg/B.1.0.bpmn`
    pub MIWG_B_1_0: Data from "tests/import/corpus/miwg/B.1.0.bpmn" process "Process_ba16239e-181e-4b9f-bc5b-0bb2ee973450" {
        task "_c57a5344-213f-4834-a6c3-94ce878b413c" = work;
    }
}

process! {
    /// `miwg/B.2.0.bpmn`
    pub MIWG_B_2_0: Data from "tests/import/corpus/miwg/B.2.0.bpmn" process "Process_ba16239e-181e-4b9f-bc5b-0bb2ee973450" {
        start "_cba8fbed-2bb6-40a9-8ac5-83e827ce9d9f": condition(|d| d.flag, on = [flag]);
        boundary "_86b052b4-225c-424e-b900-bb94bdd77cec": message("_86b052b4-225c-424e-b900-bb94bdd77cec", key = |d| d.key.clone());
        task "_3bfec246-ab94-4807-a79a-3df91ac13800" = work;
    }
}

process! {
    /// `miwg/C.1.0.bpmn`
    pub MIWG_C_1_0: Data from "tests/import/corpus/miwg/C.1.0.bpmn" process "sid-5FBB6CB3-8A7C-42B5-9024-15BB2684EC57" {
        task "sid-05039C4F-59F7-4CBD-8C84-D35E27C7B5EF" = work;
        task "sid-CFAC8502-0E69-4F08-BE36-8499B8C0FA44" = work;
        catch "sid-40EC6574-E644-425C-8CE7-EE384F0C3520": message("sid-40EC6574-E644-425C-8CE7-EE384F0C3520", key = |d| d.key.clone());
        task "sid-64AFCE49-96A2-4A51-96CB-9DF689C37DAD" = work;
        catch "sid-B548B980-12E3-408E-9AC4-7031B85A8F2D": message("sid-B548B980-12E3-408E-9AC4-7031B85A8F2D", key = |d| d.key.clone());
        task "sid-6FC20E19-AF3A-4A77-8588-2D671C98D93D" = work;
        catch "sid-0E349B8B-14A7-4565-988A-38F3A9B624D2": timer(::core::time::Duration::from_secs(60));
    }
}

process! {
    /// `miwg/C.3.0.bpmn`
    pub MIWG_C_3_0: Data from "tests/import/corpus/miwg/C.3.0.bpmn" {
        flow "_b99800c3-c340-460c-a43e-098014a365d0" when |d| d.flag;
        flow "_437e5969-1e61-4cb9-aa76-4f8854f32eeb" when |d| d.flag;
        flow "_ada039b6-94dd-4a15-a6b1-c7fe662c64ee" when |d| d.flag;
        flow "_cddf9325-a85b-4347-8c57-8b909fa77ae9" when |d| d.flag;
        flow "_be893987-caec-4605-b078-bd96b7cd6c12" when |d| d.flag;
        flow "_cf380e47-1401-4e7e-b710-193b626e49eb" when |d| d.flag;
        flow "_3fb323d5-2c59-487a-af63-804208f6c5cb" when |d| d.flag;
        boundary Bpmn_BoundaryEvent_LwKtwhqHEeWDuOtG0oS24A: message("Service Level", key = |d| d.key.clone());
    }
}

process! {
    /// `spiff/MessageBoundary.bpmn`
    pub SPIFF_MESSAGEBOUNDARY: Data from "tests/import/corpus/spiff/MessageBoundary.bpmn" process "Process_1kjyavs" {
        flow Flow_0saykw5 when |d| d.flag;
        throw Event_0g8w85g: message("Message_Interrupt", key = |d| d.key.clone());
    }
}

process! {
    /// `spiff/ParallelOrder.bpmn`
    pub SPIFF_PARALLELORDER: Data from "tests/import/corpus/spiff/ParallelOrder.bpmn" {
        task Activity_0wjwnuk = work;
        task Activity_1aj4dg6 = work;
        task Activity_1spu8el = work;
        task Activity_0x0i4s3 = work;
    }
}

process! {
    /// `spiff/boundary.bpmn`
    pub SPIFF_BOUNDARY: Data from "tests/import/corpus/spiff/boundary.bpmn" {
        flow Flow_0q65w45 when |d| d.flag;
        boundary Event_0iiih8g: timer(::core::time::Duration::from_secs(60));
    }
}

process! {
    /// `spiff/boundary_timer_on_task.bpmn`
    pub SPIFF_BOUNDARY_TIMER_ON_TASK: Data from "tests/import/corpus/spiff/boundary_timer_on_task.bpmn" {
        boundary Event_0y4hbl0: timer(::core::time::Duration::from_secs(60));
        task set_variable = work;
        task Activity_0dzjjk3 = work;
    }
}

process! {
    /// `spiff/event-gateway.bpmn`
    pub SPIFF_EVENT_GATEWAY: Data from "tests/import/corpus/spiff/event-gateway.bpmn" {
        catch message_1_event: message("message_1", key = |d| d.key.clone());
        catch message_2_event: message("message_2", key = |d| d.key.clone());
        catch timer_event: timer(::core::time::Duration::from_secs(60));
    }
}

process! {
    /// `spiff/event-subprocess.bpmn`
    pub SPIFF_EVENT_SUBPROCESS: Data from "tests/import/corpus/spiff/event-subprocess.bpmn" {
        task set_data = work;
        task task = work;
    }
}

process! {
    /// `spiff/exclusive_gateway_no_default.bpmn`
    pub SPIFF_EXCLUSIVE_GATEWAY_NO_DEFAULT: Data from "tests/import/corpus/spiff/exclusive_gateway_no_default.bpmn" {
        flow Flow_Greater1 when |d| d.flag;
        flow Flow_Less1 when |d| d.flag;
        task Activity_Greater = work;
        task Activity_Less = work;
    }
}

process! {
    /// `spiff/inclusive_gateway.bpmn`
    pub SPIFF_INCLUSIVE_GATEWAY: Data from "tests/import/corpus/spiff/inclusive_gateway.bpmn" {
        flow u_positive when |d| d.flag;
        flow w_positive when |d| d.flag;
        flow check_v when |d| d.flag;
        task increment_v = work;
        task u_plus_v = work;
        task w_plus_v = work;
    }
}

process! {
    /// `spiff/standard_loop.bpmn`
    pub SPIFF_STANDARD_LOOP: Data from "tests/import/corpus/spiff/standard_loop.bpmn" {
        task any_task = work;
    }
}

process! {
    /// `spiff/timer-non-interrupt-boundary.bpmn`
    pub SPIFF_TIMER_NON_INTERRUPT_BOUNDARY: Data from "tests/import/corpus/spiff/timer-non-interrupt-boundary.bpmn" {
        flow Flow_10bimyk when |d| d.flag;
        boundary Event_0jyy8ao: timer(::core::time::Duration::from_secs(60));
    }
}

process! {
    /// `spiff/transaction.bpmn`
    pub SPIFF_TRANSACTION: Data from "tests/import/corpus/spiff/transaction.bpmn" {
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

