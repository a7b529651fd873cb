//! Migration plans checked at compile time (README, "Migration plans"):
//! `migrate!` reads both versions' models from the macros `process!` emits beside
//! their statics — in the same module, in other modules by path, inside a function
//! — and gives the whole mapping, implicit and explicit, and the data's conversion.
//! Each plan error is a ui case in `tests/ui/migrate/`.

use thresh::{migrate, Migration, ProcessData};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Order {
    pub id: String,
    pub total: u64,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct OrderCents {
    pub id: String,
    pub cents: u64,
}

mod v1 {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order = "order" version 1 {
            start     received;
            task      price = |o| async move { o.total = 10; Ok(()) };
            parallel  fork;
            user      approve;
            receive   payment: message("payment", key = |o| o.id.clone());
            parallel  join;
            catch     cool_off: timer(Duration::from_secs(60));
            subprocess pack {
                start s;
                task  wrap = |_| async move { Ok(()) };
                end   e;
                s -> wrap -> e;
            }
            end       done;
            received -> price -> fork;
            fork -> approve, payment;
            approve, payment -> join -> cool_off -> pack -> done;
        }
    }
}

mod v2 {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order = "order" version 2 {
            start     received;
            task      price = |o| async move { o.total = 12; Ok(()) };
            parallel  fork;
            user      review;
            receive   payment: message("payment", key = |o| o.id.clone());
            parallel  join;
            catch     cool_off: timer(Duration::from_secs(120));
            subprocess packing {
                start s;
                task  wrap = |_| async move { Ok(()) };
                task  label = |_| async move { Ok(()) };
                end   e;
                s -> wrap -> label -> e;
            }
            end       done;
            received -> price -> fork;
            fork -> review, payment;
            review, payment -> join -> cool_off -> packing -> done;
        }
    }

    thresh::process! {
        pub ORDER_CENTS: super::OrderCents = "order" version 3 {
            start     received;
            task      price = |o| async move { o.cents = 1_200; Ok(()) };
            parallel  fork;
            user      review;
            receive   payment: message("payment", key = |o| o.id.clone());
            parallel  join;
            catch     cool_off: timer(Duration::from_secs(120));
            subprocess packing {
                start s;
                task  wrap = |_| async move { Ok(()) };
                end   e;
                s -> wrap -> e;
            }
            end       done;
            received -> price -> fork;
            fork -> review, payment;
            review, payment -> join -> cool_off -> packing -> done;
        }
    }
}

/// Across modules, by path: the renamed user task and sub-process are mapped,
/// every other place by its id — the sub-process's task into the renamed one.
static V1_TO_V2: Migration<Order, Order> =
    migrate!(v1::ORDER => v2::ORDER { approve => review, pack => packing });

fn to_cents(order: Order) -> OrderCents {
    OrderCents {
        id: order.id,
        cents: order.total * 100,
    }
}

/// A plan to a version with another data type converts it.
static V1_TO_CENTS: Migration<Order, OrderCents> = migrate!(v1::ORDER => v2::ORDER_CENTS {
    approve => review,
    pack => packing,
    data = to_cents,
});

#[test]
fn a_plan_maps_every_resting_place_explicitly_or_by_id() {
    assert_eq!(
        V1_TO_V2.mapping(),
        [
            ("approve", "review"),
            ("cool_off", "cool_off"),
            ("join", "join"),
            ("pack", "packing"),
            ("payment", "payment"),
            ("price", "price"),
            ("wrap", "wrap"),
        ]
    );
    assert_eq!(V1_TO_V2.target("approve"), Some("review"));
    assert_eq!(
        V1_TO_V2.target("received"),
        None,
        "no token rests at a start"
    );
    assert_eq!(V1_TO_V2.from().version(), 1);
    assert_eq!(V1_TO_V2.to().version(), 2);
}

#[test]
fn a_plan_converts_the_data_it_is_given_a_conversion_for() {
    let old = Order {
        id: "A-1".into(),
        total: 12,
    };
    let new = V1_TO_CENTS.convert(old.clone());
    assert_eq!((new.id.as_str(), new.cents), ("A-1", 1_200));
    assert_eq!(V1_TO_V2.convert(old.clone()), old);
}

#[test]
fn a_plan_inside_a_function_reads_the_models_declared_there() {
    thresh::process! {
        LOCAL_V1: Order = "local" version 1 {
            start s; user approve; end e;
            s -> approve -> e;
        }
        LOCAL_V2: Order = "local" version 2 {
            start s; user approve; task ship = |_| async move { Ok(()) }; end e;
            s -> approve -> ship -> e;
        }
    }
    static PLAN: Migration<Order, Order> = migrate!(LOCAL_V1 => LOCAL_V2 {});
    assert_eq!(PLAN.mapping(), [("approve", "approve")]);
}
