//! A throw event sends, so it takes no `apply`.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

pub struct Payment {
    pub amount: u64,
}

process! {
    pub P: D {
        start begin;
        throw shipped: signal("shipped", apply = |d, p: &Payment| d.paid = p.amount);
        end done;

        begin -> shipped -> done;
    }
}

fn main() {}
