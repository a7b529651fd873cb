//! A timer start event starts instances: there is no instance data to read its
//! time from.

use std::time::Duration;

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub every: Duration,
}

process! {
    pub P: D {
        start tick: timer(|d| d.every);
        end done;
        tick -> done;
    }
}

fn main() {}
