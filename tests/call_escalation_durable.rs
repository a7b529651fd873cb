//! A resumed child's escalation reaches its resumed parent's call: after a restart
//! the child's loop and the parent's may run in either order, and an escalation the
//! child raises before the parent's call has adopted it again is kept and told on
//! adoption, or with its end if it ends before the adoption reaches it — never
//! dropped, never told twice. Repeated, on two workers (both orders come up).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::events::Escalation;
use thresh::store::{MemoryStore, Store};
use thresh::{process, DurableEngine, Happening, Outcome, ProcessData};

const HANG: Duration = Duration::from_secs(20);

/// Set while the first engine runs: the child's `slow` task never finishes there.
static FIRST_RUN: AtomicBool = AtomicBool::new(true);

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub late: u32,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Shipment {
    pub packed: bool,
}

process! {
    SHIPPING: Shipment {
        start begin;
        task slow = |s| async move {
            if FIRST_RUN.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            s.packed = true;
            Ok(())
        };
        throw late: escalation("LATE");
        user finish;
        end shipped;
        begin -> slow -> late -> finish -> shipped;
    }
}

process! {
    ORDER: Order {
        start placed;
        call ship = SHIPPING(input = |_o| Shipment::default(), output = |_o, _s| {});
        boundary late on ship: non_interrupting escalation("LATE", apply = |o, _e: &Escalation| o.late += 1);
        end done;
        end noted;
        placed -> ship -> done;
        late -> noted;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_childs_escalation_before_adoption_reaches_the_call() {
    for run in 0..100 {
        FIRST_RUN.store(true, Ordering::SeqCst);
        let store = Arc::new(MemoryStore::new());
        let engine = DurableEngine::with_store(store.clone()).expect("open");
        engine.register(&SHIPPING).expect("register the callee");
        let parent = engine
            .start(&ORDER, Order::default())
            .await
            .expect("stored");
        // Until both are stored with the call recorded and the child at `slow`.
        let parent_id = parent.id();
        tokio::time::timeout(HANG, async {
            loop {
                let recorded = store
                    .instance(parent_id.0)
                    .ok()
                    .flatten()
                    .is_some_and(|r| r.state.contains("\"calls\""));
                let child = parent.children().await.pop();
                let child_stored = child.is_some_and(|c| {
                    store
                        .instance(c.0)
                        .ok()
                        .flatten()
                        .is_some_and(|r| r.state.contains("\"tracks\""))
                });
                if recorded && child_stored {
                    return;
                }
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the checkpoints were stored");
        engine.shutdown(HANG).await.expect("shutdown");

        // Resumed: the child's `slow` runs again, is ready at once and raises LATE —
        // before or after the parent's call adopts the child.
        FIRST_RUN.store(false, Ordering::SeqCst);
        let engine = DurableEngine::with_store(store.clone()).expect("reopen");
        engine.register(&ORDER).expect("register");
        engine.register(&SHIPPING).expect("register");
        engine.resume().await.expect("resume");
        let parent = engine.handle(&ORDER, parent_id).expect("parent resumed");
        let child_id = tokio::time::timeout(HANG, async {
            loop {
                if let Some(child) = parent.children().await.pop() {
                    return child;
                }
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the parent lists its child");
        let child = engine.handle(&SHIPPING, child_id).expect("child resumed");
        tokio::time::timeout(HANG, async {
            while !child.open_work().await.iter().any(|w| w.node == "finish") {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the child raised LATE and waits at finish");
        child
            .complete("finish", |_: &mut Shipment| {})
            .await
            .expect("completed");
        let outcome = tokio::time::timeout(HANG, parent.outcome())
            .await
            .expect("the parent ended");
        let Outcome::Completed(order) = outcome else {
            panic!("run {run}: not completed: {outcome:?}")
        };
        assert_eq!(order.late, 1, "run {run}: LATE reached the call once");
        let caught = parent
            .history()
            .await
            .steps()
            .iter()
            .filter(|s| s.node == "late" && matches!(s.what, Happening::Caught { .. }))
            .count();
        assert_eq!(caught, 1, "run {run}");
        engine.shutdown(HANG).await.expect("shutdown");
    }
}
