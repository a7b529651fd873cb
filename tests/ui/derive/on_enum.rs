//! `derive(ProcessData)` needs a struct with fields, not an enum.

use thresh::ProcessData;

#[derive(Clone, Debug, PartialEq, ProcessData)]
pub enum State {
    Open,
    Closed,
}

fn main() {}
