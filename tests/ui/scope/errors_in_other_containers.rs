//! An element dropped with an error (here a task without handler at the top level)
//! holds back only the rules of its own container: an empty sub-process elsewhere is
//! still reported as having no start and no end.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

process! {
    pub P: D {
        start begin;
        task work;
        subprocess empty {}
        end done;

        begin -> work -> empty -> done;
    }
}

fn main() {}
