// A condition bound on the gateway's default flow (`small`) besides the
// conditioned one.
#[derive(Clone, Debug, Default, thresh::ProcessData)]
pub struct Order {
    pub total: u64,
}

thresh::process! {
    pub P: Order from "default_bound.bpmn" {
        flow large when |o| o.total > 100;
        flow small when |o| o.total <= 100;
    }
}

fn main() {}
