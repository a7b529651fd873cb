//! A message end event needs a correlation key.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        end done: message("invoice", payload = |d| d.paid);

        begin -> done;
    }
}

fn main() {}
