//! The model's fingerprint (`Process::fingerprint`): the same for a model whose
//! code changed, different for any change to the model, and a fixed value for a
//! fixed model — so a change to its encoding, which would strand every stored
//! instance, is noticed and made on purpose.
//!
//! Each module declares `ORDER` (the process name is part of the fingerprint), the
//! base model with one change.

use thresh::ProcessData;

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub total: u64,
}

/// The model every other one is compared with.
mod base {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            start received;
            task check = |o| async move { o.total += 1; Ok(()) };
            exclusive paid;
            receive payment: message("payment", key = |o| o.id.clone());
            boundary too_late on payment: timer(Duration::from_secs(30));
            end shipped;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 100;
            paid -> free else;
            payment -> shipped;
            too_late -> expired;
        }
    }
}

/// The base with other code: a handler's body, a key, a doc comment.
mod code {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            /// Where it begins.
            start received;
            task check = |o| async move { o.total += 2; Ok(()) };
            exclusive paid;
            receive payment: message("payment", key = |o| o.id.to_uppercase());
            boundary too_late on payment: timer(Duration::from_secs(30));
            end shipped;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 100;
            paid -> free else;
            payment -> shipped;
            too_late -> expired;
        }
    }
}

/// A flow goes elsewhere.
mod flow {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            start received;
            task check = |o| async move { o.total += 1; Ok(()) };
            exclusive paid;
            receive payment: message("payment", key = |o| o.id.clone());
            boundary too_late on payment: timer(Duration::from_secs(30));
            end shipped;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 100;
            paid -> free else;
            payment -> expired;
            too_late -> shipped;
        }
    }
}

/// A condition's text.
mod condition {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            start received;
            task check = |o| async move { o.total += 1; Ok(()) };
            exclusive paid;
            receive payment: message("payment", key = |o| o.id.clone());
            boundary too_late on payment: timer(Duration::from_secs(30));
            end shipped;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 200;
            paid -> free else;
            payment -> shipped;
            too_late -> expired;
        }
    }
}

/// A timer's duration.
mod timer {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            start received;
            task check = |o| async move { o.total += 1; Ok(()) };
            exclusive paid;
            receive payment: message("payment", key = |o| o.id.clone());
            boundary too_late on payment: timer(Duration::from_secs(60));
            end shipped;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 100;
            paid -> free else;
            payment -> shipped;
            too_late -> expired;
        }
    }
}

/// A message's name.
mod message {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            start received;
            task check = |o| async move { o.total += 1; Ok(()) };
            exclusive paid;
            receive payment: message("paid_in", key = |o| o.id.clone());
            boundary too_late on payment: timer(Duration::from_secs(30));
            end shipped;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 100;
            paid -> free else;
            payment -> shipped;
            too_late -> expired;
        }
    }
}

/// The boundary does not interrupt.
mod interrupting {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            start received;
            task check = |o| async move { o.total += 1; Ok(()) };
            exclusive paid;
            receive payment: message("payment", key = |o| o.id.clone());
            boundary too_late on payment: non_interrupting timer(Duration::from_secs(30));
            end shipped;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 100;
            paid -> free else;
            payment -> shipped;
            too_late -> expired;
        }
    }
}

/// A gateway's kind.
mod kind {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            start received;
            task check = |o| async move { o.total += 1; Ok(()) };
            inclusive paid;
            receive payment: message("payment", key = |o| o.id.clone());
            boundary too_late on payment: timer(Duration::from_secs(30));
            end shipped;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 100;
            paid -> free else;
            payment -> shipped;
            too_late -> expired;
        }
    }
}

/// A node's id.
mod id {
    use std::time::Duration;

    thresh::process! {
        pub ORDER: super::Order {
            start received;
            task check = |o| async move { o.total += 1; Ok(()) };
            exclusive paid;
            receive payment: message("payment", key = |o| o.id.clone());
            boundary too_late on payment: timer(Duration::from_secs(30));
            end sent;
            end expired;
            end free;

            received -> check -> paid;
            paid -> payment when |o| o.total > 100;
            paid -> free else;
            payment -> sent;
            too_late -> expired;
        }
    }
}

#[test]
fn code_is_not_in_the_fingerprint() {
    assert_eq!(base::ORDER.fingerprint(), code::ORDER.fingerprint());
}

#[test]
fn every_change_to_the_model_changes_it() {
    let changed = [
        ("flow", flow::ORDER.fingerprint()),
        ("condition", condition::ORDER.fingerprint()),
        ("timer", timer::ORDER.fingerprint()),
        ("message", message::ORDER.fingerprint()),
        ("interrupting", interrupting::ORDER.fingerprint()),
        ("kind", kind::ORDER.fingerprint()),
        ("id", id::ORDER.fingerprint()),
    ];
    for (i, (what, fingerprint)) in changed.iter().enumerate() {
        assert_ne!(*fingerprint, base::ORDER.fingerprint(), "{what}");
        for (other, theirs) in &changed[..i] {
            assert_ne!(fingerprint, theirs, "{what} and {other}");
        }
    }
}

/// The base model's fingerprint, written down once. If this fails, the encoding or
/// the hash changed: every instance a durable store holds would no longer resume.
/// Make such a change on purpose (bump `VERSION` in `macros/src/emit/fingerprint.rs`),
/// then update the value here.
#[test]
fn a_fixed_model_has_a_fixed_fingerprint() {
    assert_eq!(base::ORDER.fingerprint(), 0x6452_dc85_d82b_2c1a);
}
