//! An inclusive split feeds a parallel join: when the split takes only some of its
//! flows, the join waits for ever (deadlock).

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
        inclusive some;
        task a = work;
        task b = work;
        parallel join;
        end e;

        s -> some;
        some -> a when |d| d.x > 0;
        some -> b when |d| d.y > 0;
        a, b -> join -> e;
    }
}

fn main() {}
