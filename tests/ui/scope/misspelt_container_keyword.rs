//! Only `subprocess` and `event_subprocess` open a block of their own; a misspelt
//! keyword before a block is a parse error with a suggestion.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        subproces handle {
            start s;
            task assess = work;
            end e;
            s -> assess -> e;
        }
        end done;

        begin -> handle -> done;
    }
}

fn main() {}
