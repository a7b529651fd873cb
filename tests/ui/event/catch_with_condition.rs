//! A catch event's outgoing flow cannot have a condition.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        catch shipped: signal("shipped");
        end done;

        begin -> shipped;
        shipped -> done when |d| d.paid > 0;
    }
}

fn main() {}
