//! A call activity retries starting its child; its child's run is no attempt a
//! timeout can cut.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

process! {
    pub CHILD: D {
        start begin;
        end done;
        begin -> done;
    }
}

process! {
    pub P: D {
        start begin;
        call c = CHILD(input = |d| d.clone(), output = |d, c| d.x = c.x): retry(3) | timeout(30s);
        end done;

        begin -> c -> done;
    }
}

fn main() {}
