//! A message throw event needs a correlation key.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        throw invoice: message("invoice", payload = |d| d.paid);
        end done;

        begin -> invoice -> done;
    }
}

fn main() {}
