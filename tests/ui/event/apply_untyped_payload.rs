//! An `apply` closure without a payload type is a type error on the closure.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p| d.paid = p.amount);
        end done;

        begin -> paid -> done;
    }
}

fn main() {}
