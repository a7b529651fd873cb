//! A process's name, given in its header, is not empty.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub n: u32,
}

process! {
    pub P: D = "" version 2 {
        start begin;
        end done;
        begin -> done;
    }
}

fn main() {}
