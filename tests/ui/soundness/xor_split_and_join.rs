//! An exclusive split feeds a parallel join: only one branch ever runs, so the join
//! waits for ever (deadlock).

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
    pub y: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start s;
        exclusive pick;
        task a = work;
        task b = work;
        parallel join;
        end e;

        s -> pick;
        pick -> a when |d| d.x > 0;
        pick -> b else;
        a, b -> join -> e;
    }
}

fn main() {}
