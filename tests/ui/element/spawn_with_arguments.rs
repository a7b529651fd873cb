//! `spawn` is a marker: it takes no arguments.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub n: u32,
}

process! {
    pub P: D {
        start begin;
        task crunch = |d| async move { d.n += 1; Ok(()) }: spawn(2);
        end done;

        begin -> crunch -> done;
    }
}

fn main() {}
