//! A handler taking `&D` instead of `&mut D` is a type error on the handler.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

async fn shared(_: &D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task a = shared;
        end done;

        begin -> a -> done;
    }
}

fn main() {}
