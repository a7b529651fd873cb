use thresh::ProcessData;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Nothing;

fn main() {}
