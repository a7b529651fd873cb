//! `multi` marks a merge and `may_deadlock` a join; elsewhere they are errors.

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
        parallel fork: multi;
        task a = work;
        task b = work;
        exclusive join: may_deadlock;
        end e;

        s -> fork -> a, b -> join -> e;
    }
}

fn main() {}
