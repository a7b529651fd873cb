//! A property of migration (issue 34): an instance of version 1 driven to a random
//! resting state — its user tasks completed and its payment published in a random
//! order, stopped at a random step — on an engine that keeps it in memory or evicts
//! it, or after a restart from the store alone, migrated under one of two valid
//! plans chosen at random, finishes on the new
//! version with the outcome that version's model gives: what was done before the
//! migration kept, the rest done under the new version's names, and the new
//! version's own work after the join.

use proptest::prelude::*;

use super::*;
use thresh::{migrate, Migration, Query};

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Deal {
    pub id: String,
    pub paid: u64,
    /// The user tasks completed, by the name they were completed under.
    pub log: Vec<String>,
    pub shipped: bool,
    pub audited: bool,
}

process! {
    DEAL_V1: Deal = "deal" version 1 {
        start    s;
        parallel fork;
        user     offer;
        receive  pay: message("deal-paid", key = |d| d.id.clone(), apply = |d, n: &u64| d.paid += *n);
        user     sign;
        parallel join;
        end      e;
        s -> fork;
        fork -> offer, sign;
        offer -> pay -> join;
        sign -> join;
        join -> e;
    }

    DEAL_V2: Deal = "deal" version 2 {
        start    s;
        parallel fork;
        user     review;
        receive  pay: message("deal-paid", key = |d| d.id.clone(), apply = |d, n: &u64| d.paid += *n);
        user     sign;
        parallel join;
        task     ship = |d| async move { d.shipped = true; Ok(()) };
        end      e;
        s -> fork;
        fork -> review, sign;
        review -> pay -> join;
        sign -> join;
        join -> ship -> e;
    }

    DEAL_V3: Deal = "deal" version 3 {
        start    s;
        parallel fork;
        user     offer;
        receive  pay: message("deal-paid", key = |d| d.id.clone(), apply = |d, n: &u64| d.paid += *n);
        user     countersign;
        parallel join;
        task     audit = |d| async move { d.audited = true; Ok(()) };
        end      e;
        s -> fork;
        fork -> offer, countersign;
        offer -> pay -> join;
        countersign -> join;
        join -> audit -> e;
    }
}

static TO_V2: Migration<Deal, Deal> = migrate!(DEAL_V1 => DEAL_V2 { offer => review });
static TO_V3: Migration<Deal, Deal> = migrate!(DEAL_V1 => DEAL_V3 { sign => countersign });

/// What the test does to an instance.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Offer,
    Sign,
    Pay,
}

/// Do `step` to `handle` (of data `Deal`), the user tasks named as `plan` maps
/// them once `migrated`.
async fn act(engine: &DurableEngine, handle: &InstanceHandle<Deal>, step: Step, name: &str) {
    match step {
        Step::Pay => {
            engine
                .publish_message("deal-paid", name, 1_u64)
                .await
                .expect("published");
        }
        Step::Offer | Step::Sign => {
            until_open(handle, name).await;
            let logged = name.to_string();
            handle
                .complete(name, move |d: &mut Deal| d.log.push(logged))
                .await
                .expect("completed");
        }
    }
}

/// The name a step's user task has on version 1, or after plan `plan`.
fn name(step: Step, plan: Option<usize>) -> &'static str {
    match (step, plan) {
        (Step::Offer, Some(0)) => "review",
        (Step::Offer, _) => "offer",
        (Step::Sign, Some(1)) => "countersign",
        (Step::Sign, _) => "sign",
        (Step::Pay, _) => unreachable!("a payment names the deal"),
    }
}

/// Where the instance is when it is migrated.
#[derive(Clone, Copy, Debug)]
enum Held {
    /// In its loop, on the engine that migrates it.
    Live,
    /// Evicted there.
    Evicted,
    /// In the store alone: migrated after a restart, before `resume`.
    Stored,
}

fn steps() -> impl Strategy<Value = (Vec<Step>, usize, usize, Held)> {
    (
        Just(vec![Step::Offer, Step::Sign, Step::Pay]).prop_shuffle(),
        0..=2_usize,
        0..2_usize,
        prop_oneof![Just(Held::Live), Just(Held::Evicted), Just(Held::Stored)],
    )
}

async fn case(order: Vec<Step>, before: usize, plan: usize, held: Held) {
    let store = test_store();
    let mut engine = store.engine().expect("open");
    if let Held::Evicted = held {
        engine.evict_idle(Some(Duration::ZERO));
    }
    let deal = Deal {
        id: "D".into(),
        ..Deal::default()
    };
    let mut handle = engine.start(&DEAL_V1, deal).await.expect("started");
    let mut log = Vec::new();
    for &step in &order[..before] {
        let name = match step {
            Step::Pay => "D",
            step => name(step, None),
        };
        act(&engine, &handle, step, name).await;
        if step != Step::Pay {
            log.push(name.to_string());
        }
    }
    if let Held::Stored = held {
        engine.shutdown(HANG).await.expect("shutdown");
        drop(engine);
        engine = store.engine().expect("reopen");
        engine.register(&DEAL_V1).expect("registered");
    }
    let report = match plan {
        0 => engine.migrate(&TO_V2, &Query::of(&DEAL_V1)).await,
        _ => engine.migrate(&TO_V3, &Query::of(&DEAL_V1)).await,
    }
    .expect("migrate");
    assert_eq!(report.migrated, [handle.id()], "{report:?}");
    if let Held::Stored = held {
        let resumed = engine.resume().await.expect("resumed");
        assert!(resumed.skipped.is_empty(), "{:?}", resumed.skipped);
        let to = if plan == 0 { &DEAL_V2 } else { &DEAL_V3 };
        handle = engine.handle(to, handle.id()).expect("on the new version");
    }
    for &step in &order[before..] {
        let name = match step {
            Step::Pay => "D",
            step => name(step, Some(plan)),
        };
        act(&engine, &handle, step, name).await;
        if step != Step::Pay {
            log.push(name.to_string());
        }
    }
    let done = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    // The new version's model: each user task once, the payment once, and its own
    // task after the join.
    let expected = Deal {
        id: "D".into(),
        paid: 1,
        log,
        shipped: plan == 0,
        audited: plan == 1,
    };
    assert_eq!(done, expected);
    engine.shutdown(HANG).await.expect("shutdown");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_random_resting_instance_migrates_and_finishes_as_the_new_version_says(
        (order, before, plan, held) in steps()
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(case(order, before, plan, held));
    }
}
