//! A task after a join that never fires never runs (dead element), beside the
//! deadlock at the join.

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
        task ship = work;
        end e;

        s -> pick;
        pick -> a when |d| d.x > 0;
        pick -> b else;
        a, b -> join -> ship -> e;
    }
}

fn main() {}
