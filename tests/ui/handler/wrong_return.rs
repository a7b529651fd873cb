//! A handler whose future resolves to the wrong type is a type error on the handler.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

async fn returns_u32(d: &mut D) -> Result<u32, TaskError> {
    Ok(d.x)
}

process! {
    pub P: D {
        start begin;
        task a = returns_u32;
        end done;

        begin -> a -> done;
    }
}

fn main() {}
