//! A catch event needs the event it waits for.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        catch paid;
        end done;

        begin -> paid -> done;
    }
}

fn main() {}
