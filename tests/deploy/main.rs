//! Start events and deployments: `Engine::deploy`, `Deployment::next`,
//! `Engine::undeploy`, and what each kind of start event starts.
//!
//! - A message start: a published message with no waiting catch starts an instance
//!   (its payload mapped by the start's `apply`), and its key becomes the instance's
//!   correlation key: while that instance runs, a further message with the key goes
//!   to it (delivered, or buffered until its catch subscribes), never to a new
//!   instance; once it has ended, the oldest message left for the key starts the
//!   next instance (or the next message with it does). Other keys start their own
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
#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use thresh::{
    process, BrokerStats, DeployError, Deployment, Engine, EngineError, Happening, InstanceError,
    InstanceId, Outcome, ProcessData, Published,
};
use tokio::time::Instant;

mod errors_and_mixed_starts;
mod message_starts;
mod races;
mod signal_starts;
mod timer_starts;
mod undeploy;

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

// ----- processes used by several modules --------------------------------------

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
}

process! {
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
}

process! {
    /// Started by the signal `go`, mapping its payload.
    GO_A: Order {
        start go: signal("go", apply = |o, n: &u64| o.amount = *n);
        end   done;
        go -> done;
    }
}

process! {
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
}

process! {
    /// Started once, ten seconds after it is deployed.
    ONCE: Order {
        start tick: timer(Duration::from_secs(10));
        end   done;
        tick -> done;
    }
}

process! {
    /// Only a none start: it cannot be deployed.
    PLAIN: Order {
        start s;
        end   e;
        s -> e;
    }
}
