//! A catch event waits, so it takes no `payload`.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        catch shipped: signal("shipped", payload = |d| d.id.clone());
        end done;

        begin -> shipped -> done;
    }
}

fn main() {}
