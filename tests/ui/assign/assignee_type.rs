//! An assignee read off the data is a user's name, not a number.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

#[allow(dead_code)]
async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        user a: assignee(|d| d.x);
        end done;

        begin -> a -> done;
    }
}

fn main() {}
