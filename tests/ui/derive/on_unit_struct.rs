//! `derive(ProcessData)` needs at least one field.

use thresh::ProcessData;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Nothing;

fn main() {}
