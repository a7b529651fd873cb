//! A timer takes `at` or `every`, not both.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        catch tick: timer(at = std::time::SystemTime::now(), every = std::time::Duration::from_secs(30));
        end done;

        begin -> tick -> done;
    }
}

fn main() {}
