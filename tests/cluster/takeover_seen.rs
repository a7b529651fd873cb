//! Takeover you can see (issue 33): after a node dies, `resume` on another says which
//! instances the dead node's leases still hold and when they run out; once they
//! have, it takes them over and gives their handles; instances of processes
//! registered nowhere alive are reported, not silently left.

use std::time::{Duration, SystemTime};

use thresh::{process, SkipReason};

use super::{one_at_a_time, order, pay_approve_and_finish, Order, Schema, HANG, ORDER};

process! {
    AUDIT: Order {
        start s;
        user  review;
        end   e;
        s -> review -> e;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resume_reports_leases_still_running_then_takes_them_over() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("seen");
    // a holds its instances by 3 s leases; b's own takeover poll (every third of its
    // 60 s lease) stays out of the way: `resume` does the taking here.
    let a = schema.node_with("a", Duration::from_secs(3)).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let handle = a
            .start(&ORDER, order(&format!("S-{n}")))
            .await
            .expect("start");
        ids.push(handle.id());
    }
    let audit = a.start(&AUDIT, order("audit")).await.expect("start");
    // a dies (its leases stay, unrenewed).
    a.shutdown(HANG).await.expect("shutdown");
    let stopped = SystemTime::now();
    let b = schema.node_with("b", Duration::from_secs(60)).await;
    b.register(&ORDER).expect("register");
    b.message_type::<u64>("pay");
    let report = b.resume().await.expect("resume");
    assert!(report.resumed.is_empty(), "{report:?}");
    assert!(
        report.skipped.is_empty(),
        "a live lease is no skip: {report:?}"
    );
    assert_eq!(report.leased.len(), 1, "{report:?}");
    let held = &report.leased[0];
    assert_eq!((held.node.as_str(), held.instances), ("a", 3), "{report:?}");
    assert!(
        held.free_at > stopped - Duration::from_secs(1)
            && held.free_at < stopped + Duration::from_secs(4),
        "a's leases run out about 3 s after it stopped: {report:?}"
    );
    // Once they ran out, resume takes them over and their handles are here.
    let wait = held
        .free_at
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_millis(300)).await;
    let report = b.resume().await.expect("resume");
    let mut resumed: Vec<_> = report.resumed.iter().map(|(id, _)| *id).collect();
    resumed.sort();
    assert_eq!(resumed, ids, "{report:?}");
    assert!(report.leased.is_empty(), "{report:?}");
    // The audit instance's process is registered on no live node: reported.
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert_eq!(
        (report.skipped[0].id, report.skipped[0].reason.clone()),
        (audit.id(), SkipReason::NotRegistered)
    );
    for id in ids {
        let handle = b
            .handle(&ORDER, id)
            .expect("a handle for a taken-over instance");
        pay_approve_and_finish(&b, &handle).await;
    }
    b.shutdown(HANG).await.expect("shutdown");
}
