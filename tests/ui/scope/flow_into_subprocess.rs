//! A flow stays within its container: a flow written at the top level cannot name an
//! element inside a sub-process, as target or as source (a token enters a sub-process
//! at its start event and leaves it at its end event).

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
        }
        end done;

        begin -> intake -> assess;
        intake -> handle -> done;
        assess -> done;
    }
}

fn main() {}
