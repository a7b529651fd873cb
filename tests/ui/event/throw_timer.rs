//! A throw event cannot send a timer.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        throw later: timer(std::time::Duration::from_secs(30));
        end done;

        begin -> later -> done;
    }
}

fn main() {}
