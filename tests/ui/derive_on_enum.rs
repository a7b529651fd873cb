use thresh::ProcessData;

#[derive(Clone, Debug, PartialEq, ProcessData)]
pub enum State {
    Open,
    Closed,
}

fn main() {}
