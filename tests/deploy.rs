//! Start events and deployments: `Engine::deploy`, `Deployment::next`,
//! `Engine::undeploy`, and what each kind of start event starts.
//!
//! - A message start: a published message with no waiting catch starts an instance
//!   (its payload mapped by the start's `apply`), and its key becomes the instance's
//!   correlation key: while that instance runs, a further message with the key goes
//!   to it (delivered, or buffered until its catch subscribes), never to a new
//!   instance; once it has ended, the key starts a new one. Other keys start their own
//!   instances meanwhile.
//! - A signal start: every broadcast starts one instance per deployed process (and the
//!   broadcast counts them with the catchers it reached).
//! - A timer start, on the paused clock: once at its duration; a cycle `times` times.
//! - Undeploy and shutdown stop every start event; `next()` then drains and ends.
//! - Deploy errors, `Engine::start` on a process with only event starts, a process
//!   with both kinds of start, and a payload of the wrong type.
//! - Races on a four-worker multi-thread runtime, 200 times each: many keys published
//!   from several tasks at once (one instance per key, every message consumed),
//!   publishers racing an undeploy, and concurrent broadcasts.
//!
//! Three tests pin bugs these tests found and that are fixed: a message lost in the
//! buffer while its catch waits (`Hub::publish`), a duplicate instance for a running
//! key in a second deployment, and `running_instances` counting a timer start's task.

#[allow(unused_macros)]
mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use thresh::{
    process, BrokerStats, DeployError, Deployment, Engine, Happening, InstanceError, InstanceId,
    Outcome, ProcessData, Published,
};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Order {
    id: String,
    amount: u64,
    /// What the catches after the start added up.
    extra: u64,
    /// Set from the deployment's data (or by a task), never by a message.
    tag: String,
}

/// What the shop sends with an `order` message.
#[derive(Debug)]
struct Placed {
    id: String,
    amount: u64,
}

fn placed(id: impl Into<String>, amount: u64) -> Placed {
    Placed {
        id: id.into(),
        amount,
    }
}

fn tagged(tag: &str) -> Order {
    Order {
        tag: tag.into(),
        ..Order::default()
    }
}

process! {
    /// Started by an `order` message; ends at once.
    ORDER: Order {
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        end   done;
        received -> done;
    }

    /// Started by an `order` message, then waits for one more with its id.
    ORDER_MORE: Order {
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        catch more: message("order", key = |o| o.id.clone(), apply = |o, p: &Placed| o.extra += p.amount);
        end   done;
        received -> more -> done;
    }

    /// Started by an `order` message, then waits for three more with its id.
    ORDER_THREE_MORE: Order {
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        catch more1: message("order", key = |o| o.id.clone(), apply = |o, p: &Placed| o.extra += p.amount);
        catch more2: message("order", key = |o| o.id.clone(), apply = |o, p: &Placed| o.extra += p.amount);
        catch more3: message("order", key = |o| o.id.clone(), apply = |o, p: &Placed| o.extra += p.amount);
        end   done;
        received -> more1 -> more2 -> more3 -> done;
    }

    /// Started by an `order` message, then held at a user task until completed.
    ORDER_HELD: Order {
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        user  review;
        end   done;
        received -> review -> done;
    }

    /// Started by the signal `go`, mapping its payload.
    GO_A: Order {
        start go: signal("go", apply = |o, n: &u64| o.amount = *n);
        end   done;
        go -> done;
    }

    /// Started by the signal `go`, ignoring its payload; a task marks the data.
    GO_B: Order {
        start go: signal("go");
        task  mark = |o| async move {
            o.tag = "b".into();
            Ok(())
        };
        end   done;
        go -> mark -> done;
    }

    /// An instance (started with `Engine::start`) that catches `go`.
    LISTENER: Order {
        start s;
        catch heard: signal("go", apply = |o, n: &u64| o.extra = *n);
        end   e;
        s -> heard -> e;
    }

    /// Started once, ten seconds after it is deployed.
    ONCE: Order {
        start tick: timer(Duration::from_secs(10));
        end   done;
        tick -> done;
    }

    /// Started every five seconds, three times.
    THRICE: Order {
        start tick: timer(every = Duration::from_secs(5), times = 3);
        end   done;
        tick -> done;
    }

    /// Started every second without end.
    ENDLESS: Order {
        start tick: timer(every = Duration::from_secs(1));
        end   done;
        tick -> done;
    }

    /// Started every second without end; each instance then waits an hour.
    ENDLESS_NAPS: Order {
        start tick: timer(every = Duration::from_secs(1));
        catch nap: timer(Duration::from_secs(3600));
        end   done;
        tick -> nap -> done;
    }

    /// Only a none start: it cannot be deployed.
    PLAIN: Order {
        start s;
        end   e;
        s -> e;
    }

    /// A none start and a message start, both into the same task.
    BOTH: Order {
        start plain;
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        task  stamp = |o| async move {
            o.tag = format!("{}-stamped", o.tag);
            Ok(())
        };
        end   done;
        plain -> stamp;
        received -> stamp;
        stamp -> done;
    }
}

// ----- helpers ---------------------------------------------------------------------

/// Assert that the deployment yields nothing for an hour (on the paused clock: once
/// every task is idle), without ending.
async fn no_handle_for_an_hour<D: Clone>(deployment: &mut Deployment<D>) {
    no_handle_for(deployment, Duration::from_secs(3600)).await;
}

/// Assert that the deployment yields nothing for `time`, without ending.
async fn no_handle_for<D: Clone>(deployment: &mut Deployment<D>, time: Duration) {
    match tokio::time::timeout(time, deployment.next()).await {
        Err(_) => {}
        Ok(Some(handle)) => panic!("unexpected instance {}", handle.id()),
        Ok(None) => panic!("the deployment ended"),
    }
}

/// Assert that the deployment's `next()` returns `None` (at once: within [`HANG`]).
async fn ended<D: Clone>(deployment: &mut Deployment<D>) {
    match tokio::time::timeout(HANG, deployment.next()).await {
        Ok(None) => {}
        Ok(Some(handle)) => panic!("unexpected instance {}", handle.id()),
        Err(_) => panic!("the deployment's next() never returned None"),
    }
}

/// The whole history of an `ORDER` instance.
fn order_history() -> Vec<(u32, &'static str, Happening)> {
    vec![
        (0, "received", Happening::Started),
        (0, "received", caught(&["id", "amount"])),
        (0, "done", Happening::Ended),
    ]
}

/// The whole history of an `ORDER_MORE` instance whose second message came after it
/// parked at `more`.
fn order_more_history() -> Vec<(u32, &'static str, Happening)> {
    vec![
        (0, "received", Happening::Started),
        (0, "received", caught(&["id", "amount"])),
        (0, "more", Happening::Parked),
        (0, "more", caught(&["extra"])),
        (0, "done", Happening::Ended),
    ]
}

/// The history of an instance a timer started (`ONCE`, `THRICE`, `ENDLESS`).
fn timer_history() -> Vec<(u32, &'static str, Happening)> {
    vec![
        (0, "tick", Happening::Started),
        (0, "tick", caught(&[])),
        (0, "done", Happening::Ended),
    ]
}

// ----- message starts --------------------------------------------------------------

/// A published message starts an instance: `Published::Started`, the deployment yields
/// its handle, and it completes with the deployment's data and the payload applied.
/// Nothing else starts.
#[tokio::test(start_paused = true)]
async fn a_message_starts_an_instance_with_its_payload() {
    let engine = Engine::new();
    let mut orders = engine.deploy(&ORDER, tagged("shop")).expect("deployed");
    assert_eq!(
        engine.publish_message("order", "A-1", placed("A-1", 250)),
        Published::Started
    );
    let h = next_handle(&mut orders).await;
    let (outcome, history) = finish(&h).await;
    assert_eq!(
        completed(outcome, &history),
        Order {
            id: "A-1".into(),
            amount: 250,
            extra: 0,
            tag: "shop".into(),
        }
    );
    assert_eq!(steps(&history), order_history());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            ..BrokerStats::default()
        }
    );
    no_handle_for_an_hour(&mut orders).await;
    engine.shutdown(HANG).await.expect("every loop stops");
    ended(&mut orders).await;
    assert_eq!(engine.running_instances(), 0);
}

/// While an instance started by key `K` runs, a message with `K` goes to it — here to
/// its `catch more`, which is already waiting: `Published::Delivered` — and starts no
/// new instance. Once it has ended, `K` starts a new instance.
#[tokio::test(start_paused = true)]
async fn a_message_with_a_running_key_goes_to_that_instance() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_MORE, tagged("shop"))
        .expect("deployed");
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 10)),
        Published::Started
    );
    let first = next_handle(&mut orders).await;
    parked_at(&first, "more", 1).await;
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 5)),
        Published::Delivered
    );
    let (outcome, history) = finish(&first).await;
    assert_eq!(
        completed(outcome, &history),
        Order {
            id: "K".into(),
            amount: 10,
            extra: 5,
            tag: "shop".into(),
        }
    );
    assert_eq!(steps(&history), order_more_history());
    no_handle_for_an_hour(&mut orders).await;

    // It has ended: the same key starts a new instance.
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 20)),
        Published::Started
    );
    let second = next_handle(&mut orders).await;
    assert_ne!(second.id(), first.id());
    parked_at(&second, "more", 1).await;
    assert!(!second.is_finished());
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 2)),
        Published::Delivered
    );
    let (outcome, history) = finish(&second).await;
    let data = completed(outcome, &history);
    assert_eq!((data.amount, data.extra), (20, 2));
    assert_eq!(steps(&history), order_more_history());
    no_handle_for_an_hour(&mut orders).await;
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 4,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// The second message with the key comes before the instance it started has run at
/// all: no catch waits yet, so it is buffered (not a new instance), and the instance's
/// catch takes it from the buffer.
#[tokio::test(start_paused = true)]
async fn a_message_for_a_starting_instance_is_buffered_for_it() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_MORE, Order::default())
        .expect("deployed");
    // No await in between: on the current-thread runtime the instance has not run.
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 10)),
        Published::Started
    );
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 5)),
        Published::Buffered
    );
    assert_eq!(engine.broker_stats().buffered, 1);
    let h = next_handle(&mut orders).await;
    let (outcome, history) = finish(&h).await;
    let data = completed(outcome, &history);
    assert_eq!((data.id.as_str(), data.amount, data.extra), ("K", 10, 5));
    // The catch parked, subscribed and found the message in the buffer.
    assert_eq!(steps(&history), order_more_history());
    no_handle_for_an_hour(&mut orders).await;
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// A different key starts a second instance while the first runs; each then gets the
/// message with its own key.
#[tokio::test(start_paused = true)]
async fn different_keys_start_instances_side_by_side() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_MORE, Order::default())
        .expect("deployed");
    assert_eq!(
        engine.publish_message("order", "K1", placed("K1", 1)),
        Published::Started
    );
    let one = next_handle(&mut orders).await;
    parked_at(&one, "more", 1).await;
    assert_eq!(
        engine.publish_message("order", "K2", placed("K2", 2)),
        Published::Started
    );
    let two = next_handle(&mut orders).await;
    parked_at(&two, "more", 1).await;
    assert_ne!(one.id(), two.id());
    assert!(!one.is_finished() && !two.is_finished());
    assert_eq!(engine.running_instances(), 2);

    assert_eq!(
        engine.publish_message("order", "K2", placed("K2", 20)),
        Published::Delivered
    );
    let (outcome, history) = finish(&two).await;
    let data = completed(outcome, &history);
    assert_eq!((data.id.as_str(), data.amount, data.extra), ("K2", 2, 20));
    assert!(!one.is_finished());
    assert_eq!(
        engine.publish_message("order", "K1", placed("K1", 10)),
        Published::Delivered
    );
    let (outcome, history) = finish(&one).await;
    let data = completed(outcome, &history);
    assert_eq!((data.id.as_str(), data.amount, data.extra), ("K1", 1, 10));
    assert_eq!(steps(&history), order_more_history());
    no_handle_for_an_hour(&mut orders).await;
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// Messages with a running instance's key are buffered for it, not new instances —
/// even more of them than it catches: the one it does not take stays in the buffer
/// after it ends, and the next instance with that key (started by the next message)
/// takes it at its catch.
#[tokio::test(start_paused = true)]
async fn a_message_its_instance_did_not_take_waits_for_the_next_with_that_key() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_MORE, Order::default())
        .expect("deployed");
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 1)),
        Published::Started
    );
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 2)),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 3)),
        Published::Buffered
    );
    let (outcome, history) = finish(&next_handle(&mut orders).await).await;
    let data = completed(outcome, &history);
    assert_eq!((data.amount, data.extra), (1, 2));
    assert_eq!(engine.broker_stats().buffered, 1);
    // Less than the buffer's time-to-live (a minute): the leftover must not expire.
    no_handle_for(&mut orders, Duration::from_secs(10)).await;

    assert_eq!(
        engine.publish_message("order", "K", placed("K", 4)),
        Published::Started
    );
    let (outcome, history) = finish(&next_handle(&mut orders).await).await;
    let data = completed(outcome, &history);
    assert_eq!((data.amount, data.extra), (4, 3));
    assert_eq!(engine.broker_stats().buffered, 0);
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// Two deployments with a start on the same message: the first deployed starts the
/// instance for a new key; while that instance runs, a further message with its key is
/// buffered for it — it does not start an instance of the other deployment, which
/// would then run a second instance with the same correlation key.
#[tokio::test(start_paused = true)]
async fn a_running_key_starts_no_instance_in_another_deployment() {
    let engine = Engine::new();
    let mut first = engine
        .deploy(&ORDER_MORE, tagged("first"))
        .expect("deployed");
    let mut second = engine
        .deploy(&ORDER_MORE, tagged("second"))
        .expect("deployed");
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 1)),
        Published::Started
    );
    // No await in between: the instance has not run, no catch waits.
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 2)),
        Published::Buffered
    );
    let h = next_handle(&mut first).await;
    assert_eq!(h.data().await.map(|d| d.tag), Some("first".to_string()));
    no_handle_for(&mut second, Duration::from_secs(10)).await;
    let (outcome, history) = finish(&h).await;
    let data = completed(outcome, &history);
    assert_eq!((data.amount, data.extra), (1, 2));
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// A payload of another type than the start's `apply` maps: the instance still starts
/// (`Published::Started`), then fails with `TaskFailed` naming the start event and
/// the type it expected.
#[tokio::test(start_paused = true)]
async fn a_payload_of_the_wrong_type_fails_the_started_instance() {
    let engine = Engine::new();
    let mut orders = engine.deploy(&ORDER, tagged("shop")).expect("deployed");
    assert_eq!(
        engine.publish_message("order", "W", 7_u64),
        Published::Started
    );
    let h = next_handle(&mut orders).await;
    let (outcome, history) = finish(&h).await;
    let InstanceError::TaskFailed { node, message } = failed(outcome, &history) else {
        panic!("expected TaskFailed\n{history}");
    };
    assert_eq!(node, "received");
    assert!(
        message.contains(std::any::type_name::<Placed>()),
        "the message names the expected type: {message}"
    );
    assert_eq!(
        steps(&history),
        [
            (0, "received", Happening::Started),
            (0, "received", Happening::Failed { message }),
            (0, "received", Happening::Cancelled),
        ]
    );
    // The data is the deployment's, untouched.
    assert_eq!(h.data().await, Some(tagged("shop")));
    // A right payload with the same key starts the next one normally.
    assert_eq!(
        engine.publish_message("order", "W", placed("W", 3)),
        Published::Started
    );
    let (outcome, history) = finish(&next_handle(&mut orders).await).await;
    assert_eq!(completed(outcome, &history).amount, 3);
    engine.shutdown(HANG).await.expect("every loop stops");
}

// ----- signal starts ---------------------------------------------------------------

/// One broadcast starts one instance of every process deployed with that signal start,
/// and counts them with the catchers it reached; a second broadcast starts them again.
/// Two deployments of the same process start one each.
#[tokio::test(start_paused = true)]
async fn a_signal_starts_one_instance_per_deployed_process() {
    let engine = Engine::new();
    let mut a = engine.deploy(&GO_A, tagged("a")).expect("deployed");
    let mut b = engine.deploy(&GO_B, Order::default()).expect("deployed");
    let listener = engine.start(&LISTENER, Order::default());
    parked_at(&listener, "heard", 1).await;

    assert_eq!(engine.broadcast_signal("go", 7_u64), 3);
    let (outcome, history) = finish(&next_handle(&mut a).await).await;
    assert_eq!(completed(outcome, &history), {
        let mut o = tagged("a");
        o.amount = 7;
        o
    });
    assert_eq!(
        steps(&history),
        [
            (0, "go", Happening::Started),
            (0, "go", caught(&["amount"])),
            (0, "done", Happening::Ended),
        ]
    );
    let (outcome, history) = finish(&next_handle(&mut b).await).await;
    assert_eq!(completed(outcome, &history), tagged("b"));
    assert_eq!(
        steps(&history),
        [
            (0, "go", Happening::Started),
            (0, "go", caught(&[])),
            (0, "mark", Happening::TaskStarted),
            (0, "mark", done(&["tag"])),
            (0, "done", Happening::Ended),
        ]
    );
    let (outcome, history) = finish(&listener).await;
    assert_eq!(completed(outcome, &history).extra, 7);
    no_handle_for_an_hour(&mut a).await;
    no_handle_for_an_hour(&mut b).await;

    // No catcher now: the two starts alone.
    assert_eq!(engine.broadcast_signal("go", 8_u64), 2);
    let (outcome, history) = finish(&next_handle(&mut a).await).await;
    assert_eq!(completed(outcome, &history).amount, 8);
    let (outcome, history) = finish(&next_handle(&mut b).await).await;
    completed(outcome, &history);

    // A second deployment of GO_A: one instance each.
    let mut a2 = engine.deploy(&GO_A, tagged("a2")).expect("deployed");
    assert_ne!(a2.id(), a.id());
    assert_eq!(engine.broadcast_signal("go", 9_u64), 3);
    let (outcome, history) = finish(&next_handle(&mut a).await).await;
    assert_eq!(completed(outcome, &history).tag, "a");
    let (outcome, history) = finish(&next_handle(&mut a2).await).await;
    assert_eq!(completed(outcome, &history).tag, "a2");
    let (outcome, history) = finish(&next_handle(&mut b).await).await;
    completed(outcome, &history);
    no_handle_for_an_hour(&mut a).await;
    no_handle_for_an_hour(&mut a2).await;
    no_handle_for_an_hour(&mut b).await;

    // Another signal's name starts nothing.
    assert_eq!(engine.broadcast_signal("stop", 1_u64), 0);
    no_handle_for_an_hour(&mut a).await;
    engine.shutdown(HANG).await.expect("every loop stops");
    ended(&mut a).await;
    ended(&mut a2).await;
    ended(&mut b).await;
}

// ----- timer starts ----------------------------------------------------------------

/// `timer(Duration::from_secs(10))` starts exactly one instance, ten seconds after the
/// deployment. With its schedule spent, the deployment's `next()` returns `None`,
/// though it is still deployed (`undeploy` returns `true`).
#[tokio::test(start_paused = true)]
async fn a_timer_start_fires_once() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let mut ticks = engine.deploy(&ONCE, tagged("t")).expect("deployed");
    let h = next_handle(&mut ticks).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(10));
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history), tagged("t"));
    assert_eq!(steps(&history), timer_history());
    // Nothing more, ever: the schedule is spent and the deployment says so.
    ended(&mut ticks).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(10));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(engine.running_instances(), 0);
    // Instance ids are handed out in order: nothing else was started.
    assert_eq!(engine.start(&PLAIN, Order::default()).id(), InstanceId(1));
    assert!(engine.undeploy(ticks.id()));
    assert!(!engine.undeploy(ticks.id()));
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// `timer(every = 5 s, times = 3)` starts three instances, at 5, 10 and 15 s, and no
/// more.
#[tokio::test(start_paused = true)]
async fn a_timer_cycle_starts_its_instances_and_no_more() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let mut ticks = engine.deploy(&THRICE, Order::default()).expect("deployed");
    let mut at = Vec::new();
    for _ in 0..3 {
        let h = next_handle(&mut ticks).await;
        at.push(t0.elapsed().as_secs());
        let (outcome, history) = finish(&h).await;
        completed(outcome, &history);
        assert_eq!(steps(&history), timer_history());
    }
    assert_eq!(at, [5, 10, 15]);
    ended(&mut ticks).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(15));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(engine.running_instances(), 0);
    assert_eq!(engine.start(&PLAIN, Order::default()).id(), InstanceId(3));
    engine.shutdown(HANG).await.expect("every loop stops");
}

// ----- undeploy ----------------------------------------------------------------------

/// Undeploying a message start: further messages are buffered, the deployment's
/// `next()` yields what was started and then `None`; a second undeploy is `false`.
#[tokio::test(start_paused = true)]
async fn undeploy_stops_message_starts() {
    let engine = Engine::new();
    let mut orders = engine.deploy(&ORDER, Order::default()).expect("deployed");
    assert_eq!(
        engine.publish_message("order", "K1", placed("K1", 1)),
        Published::Started
    );
    assert!(engine.undeploy(orders.id()));
    assert_eq!(
        engine.publish_message("order", "K2", placed("K2", 2)),
        Published::Buffered
    );
    let h = next_handle(&mut orders).await;
    ended(&mut orders).await;
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).id, "K1");
    assert!(!engine.undeploy(orders.id()));
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: 1,
            ..BrokerStats::default()
        }
    );
    // Deployed again, it starts afresh (the buffered message stays in the buffer).
    let mut again = engine.deploy(&ORDER, Order::default()).expect("deployed");
    assert_ne!(again.id(), orders.id());
    assert_eq!(
        engine.publish_message("order", "K3", placed("K3", 3)),
        Published::Started
    );
    let (outcome, history) = finish(&next_handle(&mut again).await).await;
    assert_eq!(completed(outcome, &history).id, "K3");
    engine.shutdown(HANG).await.expect("every loop stops");
    ended(&mut again).await;
}

/// Undeploying a signal start: a broadcast then reaches nobody.
#[tokio::test(start_paused = true)]
async fn undeploy_stops_signal_starts() {
    let engine = Engine::new();
    let mut a = engine.deploy(&GO_A, Order::default()).expect("deployed");
    let mut b = engine.deploy(&GO_B, Order::default()).expect("deployed");
    assert_eq!(engine.broadcast_signal("go", 1_u64), 2);
    assert!(engine.undeploy(a.id()));
    assert_eq!(engine.broadcast_signal("go", 2_u64), 1);
    assert!(engine.undeploy(b.id()));
    assert_eq!(engine.broadcast_signal("go", 3_u64), 0);
    assert!(!engine.undeploy(a.id()));
    assert!(!engine.undeploy(b.id()));
    let (outcome, history) = finish(&next_handle(&mut a).await).await;
    assert_eq!(completed(outcome, &history).amount, 1);
    ended(&mut a).await;
    for _ in 0..2 {
        let (outcome, history) = finish(&next_handle(&mut b).await).await;
        completed(outcome, &history);
    }
    ended(&mut b).await;
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// Undeploying an endless timer start: no instance after it.
#[tokio::test(start_paused = true)]
async fn undeploy_stops_timer_starts() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let mut ticks = engine.deploy(&ENDLESS, Order::default()).expect("deployed");
    for s in 1..=3 {
        let (outcome, history) = finish(&next_handle(&mut ticks).await).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(s));
        completed(outcome, &history);
        assert_eq!(steps(&history), timer_history());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(engine.undeploy(ticks.id()));
    ended(&mut ticks).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(engine.running_instances(), 0);
    // Ids 0..3 went to the three ticks: nothing else was started.
    assert_eq!(engine.start(&PLAIN, Order::default()).id(), InstanceId(3));
    assert!(!engine.undeploy(ticks.id()));
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// `running_instances` counts instance loops; a deployed timer start is none.
#[tokio::test(start_paused = true)]
async fn running_instances_counts_no_timer_start() {
    let engine = Engine::new();
    let mut naps = engine
        .deploy(&ENDLESS_NAPS, Order::default())
        .expect("deployed");
    assert_eq!(engine.running_instances(), 0);
    let nap = next_handle(&mut naps).await;
    parked_at(&nap, "nap", 1).await;
    assert_eq!(engine.running_instances(), 1);
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// `shutdown` undeploys everything: timers stop, messages are buffered, broadcasts
/// reach nobody, every deployment's `next()` ends, and running instances are
/// cancelled.
#[tokio::test(start_paused = true)]
async fn shutdown_stops_every_start_event() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let mut naps = engine
        .deploy(&ENDLESS_NAPS, Order::default())
        .expect("deployed");
    let mut orders = engine
        .deploy(&ORDER_MORE, Order::default())
        .expect("deployed");
    let mut a = engine.deploy(&GO_A, Order::default()).expect("deployed");
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 1)),
        Published::Started
    );
    let order = next_handle(&mut orders).await;
    parked_at(&order, "more", 1).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut napping = Vec::new();
    for _ in 0..2 {
        let nap = next_handle(&mut naps).await;
        parked_at(&nap, "nap", 1).await;
        napping.push(nap);
    }

    engine.shutdown(HANG).await.expect("every loop stops");
    assert_eq!(engine.running_instances(), 0);
    assert_eq!(t0.elapsed(), Duration::from_millis(2500));
    for nap in napping {
        assert!(matches!(nap.outcome().await, Outcome::Cancelled(_)));
    }
    ended(&mut naps).await;
    ended(&mut orders).await;
    ended(&mut a).await;
    assert!(matches!(order.outcome().await, Outcome::Cancelled(_)));
    for deployment in [naps.id(), orders.id(), a.id()] {
        assert!(!engine.undeploy(deployment));
    }
    assert_eq!(
        engine.publish_message("order", "K2", placed("K2", 2)),
        Published::Buffered
    );
    assert_eq!(engine.broadcast_signal("go", 1_u64), 0);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(engine.running_instances(), 0);
}

// ----- errors and mixed starts -------------------------------------------------------

/// A process with only a none start cannot be deployed.
#[tokio::test]
async fn deploy_needs_an_event_start() {
    let engine = Engine::new();
    let error = engine
        .deploy(&PLAIN, Order::default())
        .err()
        .expect("an error");
    assert_eq!(error, DeployError::NoEventStart { process: "PLAIN" });
    assert!(error.to_string().contains("`PLAIN`"), "{error}");
    assert_eq!(engine.running_instances(), 0);
}

/// Deploying outside a tokio runtime is an error, not a panic.
#[test]
fn deploy_needs_a_runtime() {
    let engine = Engine::new();
    let error = engine
        .deploy(&ORDER, Order::default())
        .err()
        .expect("an error");
    assert_eq!(error, DeployError::NoRuntime);
    // Nothing was registered: a message published now is buffered.
    assert_eq!(
        engine.publish_message("order", "K", placed("K", 1)),
        Published::Buffered
    );
}

/// `Engine::start` on a process with only event starts: the instance fails with
/// `NoNoneStart` at once.
#[tokio::test]
async fn start_needs_a_none_start() {
    let engine = Engine::new();
    for h in [
        engine.start(&ORDER, Order::default()),
        engine.start(&GO_A, Order::default()),
        engine.start(&ONCE, Order::default()),
    ] {
        let (outcome, history) =
            tokio::time::timeout(HANG, async { (h.outcome().await, h.history().await) })
                .await
                .expect("it ends");
        assert!(
            matches!(outcome, Outcome::Failed(InstanceError::NoNoneStart)),
            "{outcome:?}"
        );
        assert!(history.steps().is_empty(), "{history}");
    }
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// A process with a none start and a message start: `Engine::start` starts it at the
/// none start, a deployment at the message start.
#[tokio::test(start_paused = true)]
async fn a_process_with_both_kinds_of_start_starts_both_ways() {
    let engine = Engine::new();
    let (outcome, history) = run(&engine, &BOTH, tagged("plain")).await;
    assert_eq!(completed(outcome, &history), tagged("plain-stamped"));
    assert_eq!(
        steps(&history),
        [
            (0, "plain", Happening::Started),
            (0, "stamp", Happening::TaskStarted),
            (0, "stamp", done(&["tag"])),
            (0, "done", Happening::Ended),
        ]
    );

    let mut both = engine.deploy(&BOTH, tagged("msg")).expect("deployed");
    assert_eq!(
        engine.publish_message("order", "B", placed("B", 4)),
        Published::Started
    );
    let (outcome, history) = finish(&next_handle(&mut both).await).await;
    assert_eq!(
        completed(outcome, &history),
        Order {
            id: "B".into(),
            amount: 4,
            extra: 0,
            tag: "msg-stamped".into(),
        }
    );
    assert_eq!(
        steps(&history),
        [
            (0, "received", Happening::Started),
            (0, "received", caught(&["id", "amount"])),
            (0, "stamp", Happening::TaskStarted),
            (0, "stamp", done(&["tag"])),
            (0, "done", Happening::Ended),
        ]
    );
    // Still startable by hand while deployed; that starts nothing in the deployment.
    let (outcome, history) = run(&engine, &BOTH, tagged("hand")).await;
    assert_eq!(completed(outcome, &history).tag, "hand-stamped");
    no_handle_for_an_hour(&mut both).await;
    engine.shutdown(HANG).await.expect("every loop stops");
    ended(&mut both).await;
}

// ----- races -----------------------------------------------------------------------

/// Repetitions of each race.
const RACES: usize = 200;

/// How long a race's instance may take on the real clock.
const RACE_HANG: Duration = Duration::from_secs(5);

/// Keys per race and publishing tasks; every task publishes every key once, so each
/// key gets one message per task: the first starts its instance, the other three are
/// its three catches'.
const KEYS: usize = 16;
const PUBLISHERS: u64 = 4;

/// Many keys published from several tasks at once, to instances that catch the
/// further messages with their key: exactly one instance per key, none duplicated,
/// every message consumed by that key's instance (its start's payload plus its three
/// catches' add up to every task's), nothing left in the buffer.
///
/// Fails within a few dozen races: an instance parks at a catch while the message
/// for it sits in the buffer. `Hub::publish` checks for a waiter, and finding none
/// offers the message to the starters; the deployment declines (the key's instance
/// runs) and `publish` buffers the message under a fresh lock, without looking for
/// a waiter again. A catch that subscribed in between found the buffer empty and
/// waits; the buffered message is never handed to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_keys_caught_by_their_instances_from_many_tasks() {
    for race in 0..RACES {
        let engine = Engine::new();
        let mut orders = engine
            .deploy(&ORDER_THREE_MORE, Order::default())
            .expect("deployed");
        let mut publishers = tokio::task::JoinSet::new();
        for task in 0..PUBLISHERS {
            let engine = engine.clone();
            publishers.spawn(async move {
                let mut results = Vec::new();
                for k in 0..KEYS {
                    // Each task goes through the keys in its own order.
                    let k = (k * (2 * task as usize + 1) + race) % KEYS;
                    let key = format!("r{race}-k{k}");
                    if (k + task as usize) % 3 == 1 {
                        tokio::task::yield_now().await;
                    }
                    let amount = 1 << (8 * task);
                    let published =
                        engine.publish_message("order", &key, placed(key.clone(), amount));
                    results.push((key, published));
                }
                results
            });
        }
        let mut started: BTreeMap<String, usize> = BTreeMap::new();
        let mut total = 0;
        while let Some(results) = publishers.join_next().await {
            for (key, published) in results.expect("a publisher") {
                total += 1;
                match published {
                    Published::Started => *started.entry(key).or_default() += 1,
                    Published::Delivered | Published::Buffered => {}
                    Published::Dropped => panic!("race {race}: {key} dropped"),
                    Published::ShutDown => panic!("race {race}: {key} refused before shutdown"),
                }
            }
        }
        assert_eq!(total, KEYS * PUBLISHERS as usize);
        assert_eq!(started.len(), KEYS, "race {race}: {started:?}");
        assert!(
            started.values().all(|&n| n == 1),
            "race {race}: {started:?}"
        );

        let mut ids = BTreeMap::new();
        for _ in 0..KEYS {
            let h = tokio::time::timeout(RACE_HANG, orders.next())
                .await
                .unwrap_or_else(|_| panic!("race {race}: too few instances"))
                .expect("deployed");
            let Ok(outcome) = tokio::time::timeout(RACE_HANG, h.outcome()).await else {
                panic!(
                    "race {race}: instance {} hung; broker {:?}\n{}",
                    h.id(),
                    engine.broker_stats(),
                    h.history().await
                )
            };
            let history = h.history().await;
            check_history(&history, &outcome);
            let data = completed(outcome, &history);
            // One message from each task: 1 + 256 + 65536 + 16777216.
            assert_eq!(
                data.amount + data.extra,
                0x0101_0101,
                "race {race}: {data:?}"
            );
            assert!(
                ids.insert(data.id.clone(), h.id()).is_none(),
                "race {race}: {} twice",
                data.id
            );
        }
        assert_eq!(ids.len(), KEYS);
        assert!(engine.undeploy(orders.id()));
        assert!(
            tokio::time::timeout(RACE_HANG, orders.next())
                .await
                .expect("next() ends")
                .is_none(),
            "race {race}: an instance too many"
        );
        assert_eq!(
            engine.broker_stats(),
            BrokerStats {
                delivered: (KEYS * PUBLISHERS as usize) as u64,
                ..BrokerStats::default()
            },
            "race {race}"
        );
        engine.shutdown(RACE_HANG).await.expect("every loop stops");
    }
}

/// Many keys published from several tasks at once, to instances that hold at a user
/// task (no catch: the further messages for a key only ever go to the buffer):
/// exactly one `Started` and one instance per key, none duplicated; every other
/// message is buffered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_keys_from_many_tasks_start_one_instance_each() {
    for race in 0..RACES {
        let engine = Engine::new();
        let mut orders = engine
            .deploy(&ORDER_HELD, Order::default())
            .expect("deployed");
        let mut publishers = tokio::task::JoinSet::new();
        for task in 0..PUBLISHERS {
            let engine = engine.clone();
            publishers.spawn(async move {
                let mut results = Vec::new();
                for k in 0..KEYS {
                    let k = (k * (2 * task as usize + 1) + race) % KEYS;
                    let key = format!("r{race}-k{k}");
                    if (k + task as usize) % 3 == 1 {
                        tokio::task::yield_now().await;
                    }
                    let published =
                        engine.publish_message("order", &key, placed(key.clone(), task));
                    results.push((key, task, published));
                }
                results
            });
        }
        // key -> the task whose message started its instance.
        let mut starters: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        while let Some(results) = publishers.join_next().await {
            for (key, task, published) in results.expect("a publisher") {
                match published {
                    Published::Started => starters.entry(key).or_default().push(task),
                    Published::Buffered => {}
                    other => panic!("race {race}: {key}: {other:?}"),
                }
            }
        }
        assert_eq!(starters.len(), KEYS, "race {race}: {starters:?}");
        assert!(
            starters.values().all(|tasks| tasks.len() == 1),
            "race {race}: {starters:?}"
        );
        assert_eq!(
            engine.broker_stats().buffered,
            KEYS * (PUBLISHERS as usize - 1),
            "race {race}"
        );

        let mut seen = BTreeMap::new();
        for _ in 0..KEYS {
            let h = tokio::time::timeout(RACE_HANG, orders.next())
                .await
                .unwrap_or_else(|_| panic!("race {race}: too few instances"))
                .expect("deployed");
            let review = async {
                while h.complete("review", |_| {}).await.is_err() {
                    tokio::task::yield_now().await;
                }
                h.outcome().await
            };
            let outcome = tokio::time::timeout(RACE_HANG, review)
                .await
                .unwrap_or_else(|_| panic!("race {race}: instance {} hung", h.id()));
            let history = h.history().await;
            check_history(&history, &outcome);
            let data = completed(outcome, &history);
            // Its start's payload is the one whose publish said `Started`.
            assert_eq!(
                starters.get(&data.id).map(|t| t[0]),
                Some(data.amount),
                "race {race}: {data:?}"
            );
            assert!(
                seen.insert(data.id.clone(), h.id()).is_none(),
                "race {race}: {} twice",
                data.id
            );
        }
        assert!(engine.undeploy(orders.id()));
        assert!(
            tokio::time::timeout(RACE_HANG, orders.next())
                .await
                .expect("next() ends")
                .is_none(),
            "race {race}: an instance too many"
        );
        engine.shutdown(RACE_HANG).await.expect("every loop stops");
    }
}

/// Publishers race an undeploy: every `Published::Started` is one handle out of the
/// deployment (and no other handle comes out), a message published after `undeploy`
/// returned is buffered, and `next()` ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn publishers_race_an_undeploy() {
    for race in 0..RACES {
        let engine = Engine::new();
        let mut orders = engine.deploy(&ORDER, Order::default()).expect("deployed");
        let mut publishers = tokio::task::JoinSet::new();
        for task in 0..3 {
            let engine = engine.clone();
            publishers.spawn(async move {
                let mut started = Vec::new();
                for i in 0..20 {
                    let key = format!("t{task}-{i}");
                    match engine.publish_message("order", &key, placed(key.clone(), 1)) {
                        Published::Started => started.push(key),
                        Published::Buffered => {}
                        other => panic!("{key}: {other:?}"),
                    }
                    tokio::task::yield_now().await;
                }
                started
            });
        }
        for _ in 0..race % 7 {
            tokio::task::yield_now().await;
        }
        assert!(engine.undeploy(orders.id()));
        assert_eq!(
            engine.publish_message("order", "after", placed("after", 1)),
            Published::Buffered,
            "race {race}"
        );
        let mut started = Vec::new();
        while let Some(keys) = publishers.join_next().await {
            started.extend(keys.expect("a publisher"));
        }
        let mut yielded = Vec::new();
        loop {
            match tokio::time::timeout(RACE_HANG, orders.next()).await {
                Ok(Some(h)) => {
                    let outcome = tokio::time::timeout(RACE_HANG, h.outcome())
                        .await
                        .expect("the instance ends");
                    let history = h.history().await;
                    yielded.push(completed(outcome, &history).id);
                }
                Ok(None) => break,
                Err(_) => panic!("race {race}: next() never ended after undeploy"),
            }
        }
        started.sort();
        yielded.sort();
        assert_eq!(started, yielded, "race {race}");
        let buffered = 60 + 1 - started.len();
        assert_eq!(engine.broker_stats().buffered, buffered, "race {race}");
        engine.shutdown(RACE_HANG).await.expect("every loop stops");
    }
}

/// Broadcasts from several tasks at once: each starts exactly one instance of each
/// deployed process.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_broadcasts_start_one_instance_each() {
    const TASKS: u64 = 4;
    const EACH: u64 = 5;
    for race in 0..RACES {
        let engine = Engine::new();
        let mut a = engine.deploy(&GO_A, Order::default()).expect("deployed");
        let mut b = engine.deploy(&GO_B, Order::default()).expect("deployed");
        let mut broadcasters = tokio::task::JoinSet::new();
        for task in 0..TASKS {
            let engine = engine.clone();
            broadcasters.spawn(async move {
                for i in 0..EACH {
                    assert_eq!(engine.broadcast_signal("go", task * EACH + i), 2);
                    tokio::task::yield_now().await;
                }
            });
        }
        while let Some(result) = broadcasters.join_next().await {
            result.expect("a broadcaster");
        }
        assert!(engine.undeploy(a.id()));
        assert!(engine.undeploy(b.id()));
        let mut amounts = Vec::new();
        while let Some(h) = tokio::time::timeout(RACE_HANG, a.next())
            .await
            .expect("next() ends")
        {
            let outcome = tokio::time::timeout(RACE_HANG, h.outcome())
                .await
                .expect("the instance ends");
            amounts.push(completed(outcome, &h.history().await).amount);
        }
        amounts.sort_unstable();
        assert_eq!(
            amounts,
            (0..TASKS * EACH).collect::<Vec<_>>(),
            "race {race}"
        );
        let mut count = 0;
        while let Some(h) = tokio::time::timeout(RACE_HANG, b.next())
            .await
            .expect("next() ends")
        {
            let outcome = tokio::time::timeout(RACE_HANG, h.outcome())
                .await
                .expect("the instance ends");
            assert_eq!(completed(outcome, &h.history().await).tag, "b");
            count += 1;
        }
        assert_eq!(count, TASKS * EACH, "race {race}");
        engine.shutdown(RACE_HANG).await.expect("every loop stops");
    }
}
