//! Two tokens reach one flow of a parallel join (through a merge marked `multi`):
//! the join fires once, the process reaches its end, and one token is left at the
//! join for ever (improper completion).

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
        parallel fork;
        task x1 = work;
        task x2 = work;
        task y1 = work;
        exclusive both: multi;
        parallel join;
        end done;

        s -> fork -> x1, x2, y1;
        x1, x2 -> both -> join;
        y1 -> join -> done;
    }
}

fn main() {}
