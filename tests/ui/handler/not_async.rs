//! A handler written as a plain fn (not `async`) is one error at the handler, naming
//! the shape a handler has.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

fn not_async(d: &mut D) -> Result<(), TaskError> {
    d.x += 1;
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task a = not_async;
        end done;

        begin -> a -> done;
    }
}

fn main() {}
