//! A version is a number, not a string.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub n: u32,
}

process! {
    pub P: D = "p" version "2" {
        start begin;
        end done;
        begin -> done;
    }
}

fn main() {}
