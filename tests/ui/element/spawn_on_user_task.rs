//! `spawn` marks a task whose handler runs on its own tokio task; a user task has no
//! handler to run.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub n: u32,
}

process! {
    pub P: D {
        start begin;
        user approve: spawn;
        end done;

        begin -> approve -> done;
    }
}

fn main() {}
