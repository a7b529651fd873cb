//! A flow stays within its container: a flow written inside a sub-process cannot name
//! an element outside it, as target or as source (a token enters a sub-process at its
//! start event and leaves it at its end event).

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
        task intake = work;
        subprocess handle {
            start s;
            task assess = work;
            end e;
            s -> assess -> e;
            assess -> rejected;
            intake -> assess;
        }
        end done;
        end rejected;

        begin -> intake -> handle -> done;
    }
}

fn main() {}
