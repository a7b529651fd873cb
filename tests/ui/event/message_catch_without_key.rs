//! A message catch event needs a correlation key.

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
        catch paid: message("payment", apply = |d, p: &Payment| d.paid = p.amount);
        end done;

        begin -> paid -> done;
    }
}

fn main() {}
