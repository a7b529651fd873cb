//! One build reports every error, not only the first.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        parallel fork;
        task a = work;
        task b = work;
        parallel join;
        end done;

        begin -> fork;
        fork -> a when |d| d.x > 0;
        fork -> b;
        a, b -> joim -> done;
        done -> a;
    }
}

fn main() {}
