//! An element from which no path leads to an end event.

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
        task a = work;
        exclusive choose;
        task stuck = work;
        end done;

        begin -> a -> choose;
        choose -> done when |d| d.x > 0;
        choose -> stuck else;
    }
}

fn main() {}
