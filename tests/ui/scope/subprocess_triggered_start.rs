//! A sub-process starts when a token enters it, so its start event has no trigger
//! (`start s: message(..)` belongs in an event sub-process).

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
        subprocess handle {
            start s: message("claim", key = |d| d.id.clone());
            task assess = work;
            end e;
            s -> assess -> e;
        }
        end done;

        begin -> handle -> done;
    }
}

fn main() {}
