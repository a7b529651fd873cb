//! A task with two incoming flows merges without synchronising: fed by both
//! branches of a parallel split, it runs twice (lack of synchronisation).

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
        task bill = work;
        end e;

        s -> fork -> a, b;
        a, b -> bill -> e;
    }
}

fn main() {}
