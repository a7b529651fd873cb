//! A receive task waits for a message, not a signal.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        receive shipped: signal("shipped");
        end done;

        begin -> shipped -> done;
    }
}

fn main() {}
