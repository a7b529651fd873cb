//! An OR-join on a loop that goes back through a boundary event (here, one on a
//! sub-process) lies on a cycle like any other: the single-pass join is rejected.
use std::time::Duration;
use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

process! {
    pub P: D {
        start b;
        inclusive j;
        subprocess s {
            start sb;
            user u;
            end se;
            sb -> u -> se;
        }
        boundary again on s: timer(Duration::from_secs(5));
        end e;

        b -> j -> s -> e;
        again -> j;
    }
}

fn main() {}
