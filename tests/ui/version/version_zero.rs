//! A version is a whole number from 1.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub n: u32,
}

process! {
    pub P: D = "p" version 0 {
        start begin;
        end done;
        begin -> done;
    }
}

fn main() {}
