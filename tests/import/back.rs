//! Each example's process imported back from its export, with the bindings the inline
//! process has in code: handlers, conditions, message keys and `apply` closures, and
//! timers (the file's `PT0.2S` reads as `Duration::from_millis(200)`, the same time but
//! not the same expression text, which the fingerprint hashes: binding the inline
//! expression gives back the inline model exactly).

use std::time::Duration;

pub mod approval {
    use crate::approval::{approve, Purchase};
    use thresh::process;

    process! {
        pub APPROVAL: Purchase from "tests/import/roundtrip/approval/approval.bpmn" {
            task     manager = |p| approve(&mut p.manager_ok, p.delays[0]);
            task     cfo = |p| approve(&mut p.cfo_ok, p.delays[1]);
            task     legal = |p| approve(&mut p.legal_ok, p.delays[2]);
            complex  approved: activate(count = 2, require = [cfo])
                             | activate(count = 1, require = [cfo], when = |p| p.urgent);
            task     order = |p| async move { p.ordered = true; Ok(()) };
        }
    }
}

pub mod claims {
    use crate::claims::{assess, pay, Claim, Filed};
    use thresh::events::BpmnError;
    use thresh::process;

    process! {
        pub CLAIMS: Claim from "tests/import/roundtrip/claims/claims.bpmn" {
            start    filed: message("claim", apply = |c, f: &Filed| {
                         c.id = f.id.clone();
                         c.amount = f.amount;
                         c.suspicious = f.suspicious;
                     });
            task     assess = assess;
            receive  documents: message("documents", key = |c| c.id.clone(), apply = |c, _: &()| c.documents = true);
            task     pay = pay;
            boundary fraud: error("FRAUD", apply = |c, e: &BpmnError| c.reason = e.message.clone());
            task     reject = |c| async move { c.status = "rejected".into(); Ok(()) };
            start    withdrawn: message("withdraw", key = |c| c.id.clone());
            task     close = |c| async move { c.status = "withdrawn".into(); Ok(()) };
            flow Flow_needs_documents_documents when |c| c.amount > 1_000;
        }
    }
}

pub mod expenses {
    use crate::expenses::Expense;
    use thresh::process;

    process! {
        pub EXPENSE: Expense from "tests/import/roundtrip/expenses/expense.bpmn" {
            start received: message("expense", apply = |e, claim: &(u32, String)| {
                e.amount = claim.0;
                e.manager = claim.1.clone();
            });
            task  pay = |e| async move { e.paid = e.approved; Ok(()) };
        }
    }
}

#[cfg(feature = "console")]
pub mod console {
    use crate::console::{charge, Order};
    use thresh::process;

    process! {
        pub ORDER: Order from "tests/import/roundtrip/console/order.bpmn" {
            user approve: groups("sales") | priority(|o| if o.amount > 1000 { 80 } else { 50 });
            task charge = charge;
        }
    }
}

pub mod durable {
    use super::Duration;
    use crate::durable::{check_stock, Order};
    use thresh::process;

    process! {
        pub APPROVAL: Order from "tests/import/roundtrip/durable/approval.bpmn" {
            task     check = check_stock;
            boundary expired: timer(Duration::from_secs(86_400));
        }
    }
}

pub mod loan {
    use super::Duration;
    use crate::loan::{credit_check, gather_documents, improve, Loan};
    use thresh::process;

    process! {
        pub LOAN: Loan from "tests/import/roundtrip/loan/loan.bpmn" {
            task     check = credit_check;
            boundary blacklisted: error("BLACKLISTED", apply = |l, e: &thresh::events::BpmnError| l.rejected_reason = e.message.clone());
            task     documents = gather_documents;
            boundary remind: timer(every = Duration::from_millis(20), times = 10);
            task     send_reminder = |l| async move { l.reminders += 1; Ok(()) };
            boundary too_slow: timer(Duration::from_millis(200));
            task     improve = improve;
            catch    score_ok: condition(|l| l.score >= 70, on = [score]);
            task     approve = |l| async move { l.approved = true; Ok(()) };
            flow Flow_more_again when |l| l.score < 70;
        }
    }
}

pub mod order {
    use crate::order::{handlers, Order};
    use thresh::process;

    process! {
        pub ORDER: Order from "tests/import/roundtrip/order/order.bpmn" {
            task screen = handlers::screen;
            task check_stock = handlers::check_stock;
            task pack = handlers::pack;
            task invoice = handlers::invoice;
            flow Flow_fraud_rejected when |o| o.flagged;
            flow Flow_stock_fork when |o| o.in_stock;
        }
    }
}

pub mod payment {
    use super::Duration;
    use crate::payment::{ship, Order, Payment};
    use thresh::process;

    process! {
        pub PAYMENT: Order from "tests/import/roundtrip/payment/payment.bpmn" {
            catch paid: message("payment", key = |o| o.id.clone(), apply = |o, p: &Payment| o.paid = p.amount);
            catch too_late: timer(Duration::from_millis(200));
            task  ship = ship;
            throw announce: signal("shipped", payload = |o| o.id.clone());
        }

        pub LEDGER: Order from "tests/import/roundtrip/payment/ledger.bpmn" {
            catch heard: signal("shipped", apply = |o, id: &String| o.id = id.clone());
        }
    }
}

pub mod saga {
    use crate::saga::{charge, refund, release, reserve, ship, Order};
    use thresh::process;

    process! {
        pub SAGA: Order from "tests/import/roundtrip/saga/saga.bpmn" {
            task charge = charge;
            task reserve = reserve;
            task ship = ship;
            task refund = refund;
            task release = release;
            task done = |o| async move { o.status = "shipped".into(); Ok(()) };
            task mark = |o| async move { o.status = "rolled back".into(); Ok(()) };
        }
    }
}

pub mod processes {
    use crate::processes::Job;
    use thresh::process;

    process! {
        pub COMPENSATION: Job from "tests/import/roundtrip/processes/compensation.bpmn" {
            task charge = |j| async move { j.n += 1; Ok(()) };
            task refund = |j| async move { j.n -= 1; Ok(()) };
            task flight = |j| async move { j.ok = true; Ok(()) };
            task cancel_flight = |j| async move { j.ok = false; Ok(()) };
            flow Flow_seats_booked when |j| j.ok;
        }
    }

    // The markers' flags and maximum come from the file; their expressions are
    // bound, as inline. (The diagram tests' `MULTI` writes `Duration` unqualified.)
    use std::time::Duration;

    process! {
        pub MULTI: Job from "tests/import/roundtrip/processes/multi.bpmn" {
            #[multi_instance(each = |j| vec![j.n; 3], completion = |_j, n| n.completed >= 2)]
            task fan = |j, _n: &u32, _i| async move { j.ok = true; Ok(()) };
            #[multi_instance(count = |j| j.n)]
            subprocess rounds;
            #[item]
            task round = |j, _k: &usize, _i| async move { j.n += 1; Ok(()) };
            #[multi_instance(count = |_j| 2)]
            user sign;
            #[standard_loop(while = |j, runs| !j.ok && runs < 3)]
            receive poll: message("poll", key = |j| j.id.clone());
            boundary late: timer(Duration::from_secs(60));
        }
    }
}

pub mod shipping {
    use crate::shipping::{handlers, Shipment};
    use thresh::process;

    process! {
        pub SHIPPING: Shipment from "tests/import/roundtrip/shipping/shipping.bpmn" {
            task book = handlers::book;
            task label = handlers::label;
        }
    }

    process! {
        pub ORDER: crate::shipping::Order from "tests/import/roundtrip/shipping/order.bpmn" {
            #[multi_instance(each = |o| o.lines.clone(), output = |o, _i, s| o.labels.push(s.label))]
            call ship = SHIPPING(
                input = |o, line, index| Shipment {
                    order: o.id.clone(),
                    line: index,
                    sku: line.sku.clone(),
                    kilos: line.kilos,
                    ..Shipment::default()
                }
            );
            boundary refused: error("REFUSED", apply = |o, e: &thresh::events::BpmnError| o.held = e.message.clone());
        }
    }
}

pub mod review {
    use crate::review::{handlers, Document};
    use thresh::process;

    /// The example's (private) `MAX_ROUNDS`, for the condition that names it.
    const MAX_ROUNDS: u32 = 3;

    process! {
        pub REVIEW: Document from "tests/import/roundtrip/review/review.bpmn" {
            task intake = handlers::intake;
            task legal = handlers::legal;
            task finance = handlers::finance;
            task security = handlers::security;
            task editorial = handlers::editorial;
            task consolidate = handlers::consolidate;
            task decide = handlers::decide;
            task revise = handlers::revise;
            flow Flow_route_legal when |d| d.contract;
            flow Flow_route_finance when |d| d.amount >= 10_000;
            flow Flow_route_security when |d| d.personal_data;
            flow Flow_verdict_published when |d| d.approved;
            flow Flow_verdict_revise when |d| d.round < MAX_ROUNDS;
        }
    }
}
