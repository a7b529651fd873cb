//! A condition closure that does not return `bool` is a type error on the closure.

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
        exclusive choose;
        task a = work;
        task b = work;
        exclusive merge;
        end done;

        begin -> choose;
        choose -> a when |d| d.x;
        choose -> b else;
        a, b -> merge -> done;
    }
}

fn main() {}
