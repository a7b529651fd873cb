//! A process's name is a string literal (the static's identifier may differ).

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub n: u32,
}

process! {
    pub ORDER_V2: D = order version 2 {
        start begin;
        end done;
        begin -> done;
    }
}

fn main() {}
