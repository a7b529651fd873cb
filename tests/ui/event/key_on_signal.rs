//! Only a message has a correlation key; a signal takes no `key`.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        throw shipped: signal("shipped", key = |d| d.id.clone());
        end done;

        begin -> shipped -> done;
    }
}

fn main() {}
