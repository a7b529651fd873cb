//! The typed references `process!` emits beside a process's static
//! (`EXPENSE::user.approve`, `EXPENSE::message.receipt`, ...): they name what a
//! caller can act on, typed by the process's data or the payload its catches take,
//! on the in-memory and the durable engine alike; for processes declared in a
//! function, through a `macro_rules!` of the user's, and imported from a .bpmn file
//! whose ids are no Rust identifiers. The string forms stay, and a name the process
//! has no user task of is an error listing the ones it has; both engines refuse a
//! string-form publish of the wrong payload type.

// The parentheses make each closure one token tree for `two_of!`.
#![allow(unused_parens)]

use serde::{Deserialize, Serialize};
use thresh::refs::{AnyMessage, AnySignal, ErrorCode, EscalationCode, Message, Signal, UserTask};
use thresh::testing::{expect_open_work, expect_parked, TestStore};
use thresh::{process, Engine, EngineError, Outcome, ProcessData, WorkError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Expense {
    pub id: String,
    pub approved: bool,
    pub paid: u64,
    pub note: String,
    pub nudged: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub amount: u64,
}

fn take_receipt(e: &mut Expense, r: &Receipt) {
    e.paid = r.amount;
}

process! {
    pub EXPENSE: Expense {
        start     filed;
        task      audit = |_| async move { Ok(()) };
        boundary  audit_failed on audit: error("AUDIT_FAILED");
        user      review;
        boundary  rejected on review: error("REJECTED", apply = |e, err: &thresh::events::BpmnError| e.note = err.message.clone());
        user      approve;
        boundary  late on approve: non_interrupting escalation("LATE");
        task      remind = |e| async move { e.note = "reminded".into(); Ok(()) };
        catch     receipt: message("receipt", key = |e| e.id.clone(), apply = |e, r: &Receipt| e.paid = r.amount);
        end       paid;
        end       returned;
        end       reminded;
        end       audit_stopped;
        event_subprocess nudges {
            start n: non_interrupting message("nudge", key = |e| e.id.clone());
            task  mark = |e| async move { e.nudged = true; Ok(()) };
            end   marked;
            n -> mark -> marked;
        }
        event_subprocess recall {
            start r: signal("recall", apply = |e, why: &String| e.note = why.clone());
            end   recalled;
            r -> recalled;
        }
        filed -> audit -> review -> approve -> receipt -> paid;
        audit_failed -> audit_stopped;
        rejected -> returned;
        late -> remind -> reminded;
    }
}

// Catches whose `apply` is a path: their payload type cannot be named, any goes.
process! {
    pub BY_PATH: Expense {
        start s;
        catch receipt: message("receipt", key = |e| e.id.clone(), apply = take_receipt);
        catch alarm: signal("alarm", apply = |e, _: &u8| e.nudged = true);
        end e;
        s -> receipt -> alarm -> e;
    }
}

fn expense(id: &str) -> Expense {
    Expense {
        id: id.into(),
        ..Expense::default()
    }
}

#[test]
fn the_references_are_typed_constants_of_what_a_caller_can_act_on() {
    let _: UserTask<Expense> = EXPENSE::user.review;
    let _: Message<Receipt> = EXPENSE::message.receipt;
    // No catch reads the nudge's payload: it carries `()`.
    let _: Message<()> = EXPENSE::message.nudge;
    let _: Signal<String> = EXPENSE::signal.recall;
    let _: ErrorCode<Expense> = EXPENSE::error.REJECTED;
    let _: EscalationCode<Expense> = EXPENSE::escalation.LATE;
    let _: AnyMessage = BY_PATH::message.receipt;
    let _: Signal<u8> = BY_PATH::signal.alarm;
    let _: AnySignal = AnySignal::new("any");
    assert_eq!(EXPENSE::user.approve.name(), "approve");
    assert_eq!(EXPENSE::message.receipt.name(), "receipt");
    // A name and nothing else: a `&'static str` big.
    assert_eq!(
        std::mem::size_of::<UserTask<Expense>>(),
        std::mem::size_of::<&str>()
    );
    assert_eq!(
        std::mem::size_of::<Message<Receipt>>(),
        std::mem::size_of::<&str>()
    );
    // Only the codes a caller can raise on a user task and something catches: the
    // audit task's error code is no user task's.
    let errors = format!("{:?}", EXPENSE::error);
    assert!(
        errors.contains("REJECTED") && !errors.contains("AUDIT_FAILED"),
        "{errors}"
    );
    assert_eq!(
        format!("{:?}", EXPENSE::escalation),
        "EXPENSE_Escalations { LATE: EscalationCode<typed_refs::Expense>(\"LATE\") }"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_is_driven_by_its_typed_references() {
    let engine = Engine::new();
    let handle = engine.start(&EXPENSE, expense("x-1")).await.unwrap();
    expect_open_work(&handle, EXPENSE::user.review).await;
    handle.complete(EXPENSE::user.review, |_| {}).await.unwrap();
    expect_open_work(&handle, EXPENSE::user.approve).await;
    engine
        .publish(EXPENSE::message.nudge, "x-1", ())
        .await
        .unwrap();
    handle
        .raise_escalation(EXPENSE::user.approve, EXPENSE::escalation.LATE)
        .await
        .unwrap();
    handle
        .complete(EXPENSE::user.approve, |e| e.approved = true)
        .await
        .unwrap();
    engine
        .publish(EXPENSE::message.receipt, "x-1", Receipt { amount: 120 })
        .await
        .unwrap();
    let Outcome::Completed(done) = handle.outcome().await else {
        panic!("not completed")
    };
    assert_eq!((done.approved, done.paid, done.nudged), (true, 120, true));
    assert_eq!(done.note, "reminded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_error_and_signal_reach_their_catchers() {
    let engine = Engine::new();
    let rejected = engine.start(&EXPENSE, expense("x-2")).await.unwrap();
    expect_open_work(&rejected, EXPENSE::user.review).await;
    rejected
        .raise_error(EXPENSE::user.review, EXPENSE::error.REJECTED, "no receipt")
        .await
        .unwrap();
    let done = rejected.outcome().await.completed().expect("completed");
    assert_eq!(done.note, "no receipt");

    let recalled = engine.start(&EXPENSE, expense("x-3")).await.unwrap();
    expect_open_work(&recalled, EXPENSE::user.review).await;
    assert_eq!(
        engine
            .broadcast(EXPENSE::signal.recall, "withdrawn".to_string())
            .await
            .unwrap(),
        1
    );
    let done = recalled.outcome().await.completed().expect("completed");
    assert_eq!(done.note, "withdrawn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_string_naming_no_user_task_lists_the_known_ones() {
    let engine = Engine::new();
    let handle = engine.start(&EXPENSE, expense("x-4")).await.unwrap();
    expect_open_work(&handle, "review").await;
    let error = handle.complete("aprove", |_| {}).await.unwrap_err();
    assert_eq!(
        error,
        WorkError::NoSuchUserTask {
            node: "aprove".into(),
            process: "EXPENSE",
            known: vec!["review", "approve"],
        }
    );
    assert_eq!(
        error.to_string(),
        "the process `EXPENSE` has no user task `aprove` (its user tasks: review, approve)"
    );
    // A user task of the process where no token waits now.
    assert_eq!(
        handle.complete("approve", |_| {}).await,
        Err(WorkError::NoOpenWork {
            node: "approve".into()
        })
    );
    handle.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_apply_takes_any_payload_through_its_reference() {
    let engine = Engine::new();
    let handle = engine.start(&BY_PATH, expense("x-5")).await.unwrap();
    engine
        .publish(BY_PATH::message.receipt, "x-5", Receipt { amount: 7 })
        .await
        .unwrap();
    expect_parked(&handle, "alarm").await;
    engine.broadcast(BY_PATH::signal.alarm, 1_u8).await.unwrap();
    let done = handle.outcome().await.completed().expect("completed");
    assert_eq!((done.paid, done.nudged), (7, true));
}

/// In memory too, a string-form publish of another payload type than the catch
/// maps is refused once such a catch has waited; one buffered before is dropped
/// when the catch comes (counted, logged), and the instance goes on waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_memory_engine_refuses_a_wrong_payload_and_drops_a_buffered_one() {
    let engine = Engine::new();
    // No catch of "receipt" has waited: any payload is taken, into the buffer.
    let early = engine.publish_message("receipt", "m-1", 120_u64).await;
    assert_eq!(early.unwrap(), thresh::Published::Buffered);
    let handle = engine.start(&EXPENSE, expense("m-1")).await.unwrap();
    expect_open_work(&handle, EXPENSE::user.review).await;
    handle.complete(EXPENSE::user.review, |_| {}).await.unwrap();
    expect_open_work(&handle, EXPENSE::user.approve).await;
    handle
        .complete(EXPENSE::user.approve, |_| {})
        .await
        .unwrap();
    // The catch waits, and dropped the buffered `u64` rather than fail on it.
    expect_parked(&handle, "receipt").await;
    let stats = engine.broker_stats();
    assert_eq!((stats.mistyped, stats.buffered), (1, 0));
    let refused = engine.publish_message("receipt", "m-1", 7_u64).await;
    let Err(EngineError::WrongPayload { message, given, .. }) = refused else {
        panic!("not refused: {refused:?}")
    };
    assert_eq!((message.as_str(), given), ("receipt", "u64"));
    engine
        .publish_message("receipt", "m-1", Receipt { amount: 5 })
        .await
        .unwrap();
    let done = handle.outcome().await.completed().expect("completed");
    assert_eq!(done.paid, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_engine_takes_the_typed_references_and_refuses_a_wrong_payload() {
    let store = TestStore::memory();
    let durable = store.engine().expect("a durable engine");
    durable.register(&EXPENSE).expect("registered");
    let handle = durable.start(&EXPENSE, expense("d-1")).await.unwrap();
    expect_open_work(&handle, EXPENSE::user.review).await;
    handle.complete(EXPENSE::user.review, |_| {}).await.unwrap();
    expect_open_work(&handle, EXPENSE::user.approve).await;
    handle
        .complete(EXPENSE::user.approve, |_| {})
        .await
        .unwrap();
    // The string form with a payload the catch cannot take: refused at publish.
    let refused = durable.publish_message("receipt", "d-1", 120_u64).await;
    let Err(EngineError::WrongPayload {
        message,
        expected,
        given,
    }) = refused
    else {
        panic!("not refused: {refused:?}")
    };
    assert_eq!((message.as_str(), given), ("receipt", "u64"));
    assert!(expected.ends_with("Receipt"), "{expected}");
    durable
        .publish(EXPENSE::message.receipt, "d-1", Receipt { amount: 120 })
        .await
        .unwrap();
    let done = handle.outcome().await.completed().expect("completed");
    assert_eq!(done.paid, 120);
    let _ = durable
        .broadcast(EXPENSE::signal.recall, String::new())
        .await;
}

/// Two processes with the same elements, declared through a `macro_rules!` of the
/// user's: each has its own references.
macro_rules! two_of {
    ($($name:ident: $approve:tt;)*) => {
        $(process! {
            pub $name: Expense {
                start s;
                user approve;
                catch receipt: message("receipt", key = |e| e.id.clone(), apply = $approve);
                end e;
                s -> approve -> receipt -> e;
            }
        })*
    };
}

two_of! {
    FIRST: (|e, r: &Receipt| e.paid = r.amount);
    SECOND: (|e, r: &Receipt| e.paid = r.amount * 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_through_macro_rules_with_the_same_names_do_not_clash() {
    let engine = Engine::new();
    for (process, approve, receipt, paid) in [
        (&FIRST, FIRST::user.approve, FIRST::message.receipt, 5),
        (&SECOND, SECOND::user.approve, SECOND::message.receipt, 10),
    ] {
        let handle = engine.start(process, expense("m-1")).await.unwrap();
        expect_open_work(&handle, approve).await;
        handle.complete(approve, |_| {}).await.unwrap();
        engine
            .publish(receipt, "m-1", Receipt { amount: 5 })
            .await
            .unwrap();
        assert_eq!(handle.outcome().await.completed().unwrap().paid, paid);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_declared_in_a_function_has_its_references() {
    #[derive(Clone, Debug, Default, PartialEq, ProcessData)]
    struct Leave {
        granted: bool,
    }
    process! {
        LEAVE: Leave {
            start s;
            user grant;
            end e;
            s -> grant -> e;
        }
    }
    let engine = Engine::new();
    let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
    expect_open_work(&handle, LEAVE::user.grant).await;
    handle
        .complete(LEAVE::user.grant, |l| l.granted = true)
        .await
        .unwrap();
    assert!(handle.outcome().await.completed().unwrap().granted);
}

process! {
    pub IMPORTED: Expense from "tests/import/refs/expense.bpmn" {
        catch "receipt-1": message("receipt-received", key = |e| e.id.clone(), apply = |e, r: &Receipt| e.paid = r.amount);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_process_s_ids_become_fields_and_keep_their_spelling() {
    // `approve-expense` is no identifier: its field is the import's identifier for
    // it, its name the id as written.
    assert_eq!(IMPORTED::user.approve_expense.name(), "approve-expense");
    assert_eq!(
        IMPORTED::message.receipt_received.name(),
        "receipt-received"
    );
    let engine = Engine::new();
    let handle = engine.start(&IMPORTED, expense("i-1")).await.unwrap();
    expect_open_work(&handle, IMPORTED::user.approve_expense).await;
    handle
        .complete(IMPORTED::user.approve_expense, |_| {})
        .await
        .unwrap();
    engine
        .publish(
            IMPORTED::message.receipt_received,
            "i-1",
            Receipt { amount: 3 },
        )
        .await
        .unwrap();
    assert_eq!(handle.outcome().await.completed().unwrap().paid, 3);
}
