//! Every path that begins a message wait wakes the node's claimer: messages stored
//! on another node before the wait began reach it although the node polls the store
//! only once a minute — an event sub-process's message start, an event-based
//! gateway's arm, a message boundary moved to a new key, a resumed (taken-over)
//! instance's receive task, and a message start deployed after its message came.

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Probe {
    pub id: String,
    pub key: String,
    pub poked: u32,
    pub armed: u32,
    pub nudged: u32,
}

process! {
    PROBE: Probe {
        start    s;
        user     hold;
        parallel fork;
        user     review;
        boundary nudge on review: non_interrupting message("nudge", key = |p| p.key.clone(), apply = |p, n: &u32| p.nudged += *n);
        user     rekey;
        event_based gate;
        catch    arm: message("arm", key = |p| p.id.clone(), apply = |p, n: &u32| p.armed += *n);
        catch    off: signal("off");
        end      reviewed;
        end      nudged;
        end      rekeyed;
        end      armed;
        end      called_off;
        s -> hold -> fork -> review, rekey, gate;
        review -> reviewed;
        nudge -> nudged;
        rekey -> rekeyed;
        gate -> arm, off;
        arm -> armed;
        off -> called_off;
        event_subprocess on_poke {
            start poke: non_interrupting message("poke", key = |p| p.id.clone(), apply = |p, n: &u32| p.poked += *n);
            end   poked;
            poke -> poked;
        }
    }
}

/// Wait (at most `HANG`, well under the minute's poll) until `handle`'s data says so.
async fn until_data<D: Clone + Send + Sync + 'static>(
    handle: &InstanceHandle<D>,
    what: &str,
    done: impl Fn(&D) -> bool,
) {
    tokio::time::timeout(HANG, async {
        while !done(&handle.data().await.expect("data")) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} before the poll"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_wait_that_begins_wakes_the_claimer() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("wakes");
    let a = schema.node_polling("a", Duration::from_secs(60)).await;
    let b = schema.node("b").await;
    // No message_type: the node reads the payloads back by the types its catches'
    // `apply` take.
    // Stored before the instance exists: its event sub-process's start takes it.
    b.publish_message("poke", "P-1", 1_u32)
        .await
        .expect("stored");
    let data = Probe {
        id: "P-1".into(),
        key: "old".into(),
        ..Probe::default()
    };
    let probe = a.start(&PROBE, data).await.expect("start");
    until_data(&probe, "the event sub-process took its message", |p| {
        p.poked == 1
    })
    .await;
    until_open(&probe, "hold").await;
    // Stored while it holds: the gateway's arm, and the boundary's new key.
    b.publish_message("arm", "P-1", 1_u32)
        .await
        .expect("stored");
    b.publish_message("nudge", "new", 1_u32)
        .await
        .expect("stored");
    probe
        .complete("hold", |_: &mut Probe| {})
        .await
        .expect("held");
    until_data(&probe, "the gateway's arm took its message", |p| {
        p.armed == 1
    })
    .await;
    until_open(&probe, "rekey").await;
    assert_eq!(
        probe.data().await.expect("data").nudged,
        0,
        "not under the old key"
    );
    probe
        .complete("rekey", |p: &mut Probe| p.key = "new".into())
        .await
        .expect("rekeyed");
    until_data(
        &probe,
        "the boundary under its new key took its message",
        |p| p.nudged == 1,
    )
    .await;
    probe
        .complete("review", |_: &mut Probe| {})
        .await
        .expect("reviewed");
    let done = tokio::time::timeout(HANG, probe.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!((done.poked, done.armed, done.nudged), (1, 1, 1));

    // A stopped node's instance waits at its receive task; its payment is stored;
    // a node polling once a minute takes the instance over and claims it at once.
    let x = schema.node("x").await;
    let order = x.start(&ORDER, order("T-1")).await.expect("start");
    until_checked(&x, &order).await;
    x.shutdown(HANG).await.expect("shutdown");
    b.publish_message("pay", "T-1", 5_u64)
        .await
        .expect("stored");
    let y = schema.node_polling("y", Duration::from_secs(60)).await;
    y.register(&ORDER).expect("register");
    let resumed = taken_over(&y, order.id()).await;
    until_open(&resumed, "approve").await;
    assert_eq!(resumed.data().await.expect("data").paid, 5);

    // A message start deployed after its message was stored claims it at once.
    b.publish_message("booking", "B-1", 4_u32)
        .await
        .expect("stored");
    // The notification of its storing has come and gone meanwhile.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut bookings = y.deploy(&BOOKING, Ticket::default()).expect("deploy");
    let booked = tokio::time::timeout(HANG, bookings.next())
        .await
        .expect("started before the poll")
        .expect("an instance");
    let ticket = tokio::time::timeout(HANG, booked.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!(ticket.seats, 4);
    for node in [a, b, y] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}
