//! Every sub-process has its own end event: a token leaves it there.

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
            start s;
            task assess = work;
            s -> assess;
        }
        end done;

        begin -> handle -> done;
    }
}

fn main() {}
