//! A parallel split whose branches meet at an exclusive merge: what follows the
//! merge runs twice (lack of synchronisation).

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
        task a = work;
        task b = work;
        exclusive merge;
        task bill = work;
        end e;

        s -> fork -> a, b -> merge -> bill -> e;
    }
}

fn main() {}
