//! A receive task's `apply` returns `()` or `Result<(), TaskError>` (to raise a BPMN
//! error when the message carries a failure) — not another type.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

pub struct Reply {
    pub amount: u64,
}

process! {
    pub P: D {
        start begin;
        receive pay: message("payment", key = |d| d.id.clone(), apply = |d, r: &Reply| {
            d.paid = r.amount;
            r.amount > 0
        });
        end done;

        begin -> pay -> done;
    }
}

fn main() {}
