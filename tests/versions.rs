//! Versions of a process under one name (README, "Versions"), on the in-memory
//! engine: registered side by side, started by name (the newest, or a named one),
//! deployed (the newest version's start events start instances), queried and
//! drawn with their version; a version number claimed by two models is refused.
//! The durable side — resume on each version, a timer start moving to a new
//! version — is `tests/durable/versions.rs`.

use std::time::Duration;

use thresh::{process, DeployError, Engine, EngineError, ProcessData, Published, Query};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Order {
    pub id: String,
    pub total: u64,
    pub reviewed: bool,
}

/// Another data type, for a version that changed it.
#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Order3 {
    pub id: String,
    pub cents: u64,
}

process! {
    pub ORDER_V1: Order = "order" version 1 {
        start received: message("order", apply = |o, id: &String| o.id = id.clone());
        start by_hand;
        task  price = |o| async move { o.total = 100; Ok(()) };
        user  approve;
        end   done;
        received -> price -> approve -> done;
        by_hand -> price;
    }

    pub ORDER_V2: Order = "order" version 2 {
        start received: message("order", apply = |o, id: &String| o.id = id.clone());
        start by_hand;
        task  price = |o| async move { o.total = 120; Ok(()) };
        user  approve;
        task  review = |o| async move { o.reviewed = true; Ok(()) };
        end   done;
        received -> price -> approve -> review -> done;
        by_hand -> price;
    }

    /// Version 2's number with another model: refused beside it.
    pub ORDER_V2_AGAIN: Order = "order" version 2 {
        start received;
        end   done;
        received -> done;
    }

    pub ORDER_V3: Order3 = "order" version 3 {
        start received;
        task  price = |o| async move { o.cents = 12_000; Ok(()) };
        end   done;
        received -> price -> done;
    }
}

/// Wait until the user task `node` is open on `handle`.
async fn until_open<D: Clone>(handle: &thresh::InstanceHandle<D>, node: &str) {
    tokio::time::timeout(HANG, async {
        while !handle.open_work().await.iter().any(|w| w.node == node) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the user task opened");
}

#[test]
fn versions_share_a_name_and_differ_in_fingerprint() {
    assert_eq!(ORDER_V1.name(), "order");
    assert_eq!(ORDER_V2.name(), "order");
    assert_eq!((ORDER_V1.version(), ORDER_V2.version()), (1, 2));
    assert_ne!(ORDER_V1.fingerprint(), ORDER_V2.fingerprint());
    assert_ne!(ORDER_V2.fingerprint(), ORDER_V2_AGAIN.fingerprint());
}

/// Two versions registered side by side: a start by name takes the newest, or
/// the one named; a start by static takes that one. Each runs its own model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_versions_start_side_by_side() {
    let engine = Engine::new();
    engine.register(&ORDER_V1).expect("v1");
    engine.register(&ORDER_V2).expect("v2");
    engine.register(&ORDER_V1).expect("v1 again: nothing new");

    let newest = engine
        .start_newest("order", Order::default())
        .await
        .expect("newest");
    let first = engine
        .start_version("order", 1, Order::default())
        .await
        .expect("version 1");
    let by_static = engine
        .start(&ORDER_V1, Order::default())
        .await
        .expect("by static");
    for handle in [&newest, &first, &by_static] {
        until_open(handle, "approve").await;
        handle
            .complete("approve", |_: &mut Order| {})
            .await
            .expect("approved");
    }
    let newest = newest.outcome().await.completed().expect("completed");
    assert_eq!((newest.total, newest.reviewed), (120, true));
    for handle in [first, by_static] {
        let order = handle.outcome().await.completed().expect("completed");
        assert_eq!((order.total, order.reviewed), (100, false));
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

/// Queries select one version's instances by its static, and say which version
/// each runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_of_a_version_lists_its_instances_with_their_version() {
    let engine = Engine::new();
    let v1 = engine.start(&ORDER_V1, Order::default()).await.expect("v1");
    let v2 = engine.start(&ORDER_V2, Order::default()).await.expect("v2");
    until_open(&v1, "approve").await;
    until_open(&v2, "approve").await;
    for (process, id, version) in [(&ORDER_V1, v1.id(), 1), (&ORDER_V2, v2.id(), 2)] {
        let page = engine.instances(&Query::of(process)).await.expect("query");
        let found: Vec<_> = page
            .items
            .iter()
            .map(|s| (s.id, s.process.as_str(), s.version))
            .collect();
        assert_eq!(found, [(id, "order", Some(version))]);
    }
    v1.cancel();
    v2.cancel();
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A version number two models claim, a version nobody registered, data of the
/// wrong type: each a clear error.
#[tokio::test]
async fn a_version_taken_unknown_or_of_other_data_is_an_error() {
    let engine = Engine::new();
    engine.register(&ORDER_V2).expect("v2");
    let taken = engine.register(&ORDER_V2_AGAIN).expect_err("taken");
    assert!(
        matches!(
            taken,
            EngineError::VersionTaken { process: "order", version: 2, registered, given }
                if registered == ORDER_V2.fingerprint() && given == ORDER_V2_AGAIN.fingerprint()
        ),
        "{taken:?}"
    );
    assert!(
        taken.to_string().contains("version 2 of `order`"),
        "{taken}"
    );

    let unknown = engine
        .start_version("order", 7, Order::default())
        .await
        .expect_err("no version 7");
    assert_eq!(
        unknown.to_string(),
        "version 7 of `order` is not registered (registered versions: 2)"
    );
    let unknown = engine
        .start_newest("ordre", Order::default())
        .await
        .expect_err("no such process");
    assert_eq!(
        unknown.to_string(),
        "no version of `ordre` is registered (registered processes: order)"
    );

    engine.register(&ORDER_V3).expect("v3");
    let wrong = engine
        .start_newest("order", Order::default())
        .await
        .expect_err("version 3 takes an Order3");
    assert!(
        matches!(wrong, EngineError::WrongData { version: 3, .. }),
        "{wrong:?}"
    );
    let newest = engine
        .start_newest("order", Order3::default())
        .await
        .expect("v3");
    assert_eq!(
        newest.outcome().await.completed().expect("completed").cents,
        12_000
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A deploy of a newer version replaces the older version's deployment: its
/// stream ends, and the next start message starts the new version. Deploying
/// the older one again is refused while the newer one is deployed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployed_start_starts_the_newest_version() {
    let engine = Engine::new();
    let mut old = engine.deploy(&ORDER_V1, Order::default()).expect("v1");
    let published = engine
        .publish_message("order", "A-1", "A-1".to_string())
        .await;
    assert_eq!(published.expect("published"), Published::Started);
    let a1 = old.next().await.expect("an instance of version 1");

    let mut new = engine.deploy(&ORDER_V2, Order::default()).expect("v2");
    assert!(
        tokio::time::timeout(HANG, old.next())
            .await
            .expect("ended")
            .is_none(),
        "the older deployment ends"
    );
    let published = engine
        .publish_message("order", "A-2", "A-2".to_string())
        .await;
    assert_eq!(published.expect("published"), Published::Started);
    let a2 = new.next().await.expect("an instance of version 2");
    for handle in [&a1, &a2] {
        until_open(handle, "approve").await;
        handle
            .complete("approve", |_: &mut Order| {})
            .await
            .expect("approved");
    }
    let a1 = a1.outcome().await.completed().expect("completed");
    assert_eq!((a1.id.as_str(), a1.reviewed), ("A-1", false));
    let a2 = a2.outcome().await.completed().expect("completed");
    assert_eq!((a2.id.as_str(), a2.reviewed), ("A-2", true));

    let Err(refused) = engine.deploy(&ORDER_V1, Order::default()) else {
        panic!("deployed version 1 beside version 2");
    };
    assert!(
        matches!(
            refused,
            EngineError::Deploy(DeployError::NewerDeployed {
                process: "order",
                deployed: 2,
                given: 1
            })
        ),
        "{refused:?}"
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

#[test]
fn a_picture_names_the_version() {
    assert!(ORDER_V2.to_svg().contains("<title>order version 2</title>"));
    assert!(ORDER_V1.to_svg().contains("<title>order</title>"));
}

mod plain {
    thresh::process! {
        pub P: super::Order { start s; end e; s -> e; }
    }
}

mod named {
    thresh::process! {
        pub ONE: super::Order = "P" version 1 { start s; end e; s -> e; }
        pub TWO: super::Order = "P" version 2 { start s; end e; s -> e; }
        pub OTHER: super::Order = "Q" { start s; end e; s -> e; }
    }
}

/// A process that declares no version is version 1 under its identifier: naming
/// both changes nothing (so stored instances of processes written before versions
/// keep their fingerprint); the name and a version past 1 are in the fingerprint.
#[test]
fn version_one_under_its_own_name_is_the_undeclared_process() {
    assert_eq!(plain::P.version(), 1);
    assert_eq!(plain::P.fingerprint(), named::ONE.fingerprint());
    assert_ne!(named::ONE.fingerprint(), named::TWO.fingerprint());
    assert_ne!(named::ONE.fingerprint(), named::OTHER.fingerprint());
    assert_eq!(named::OTHER.name(), "Q");
}
