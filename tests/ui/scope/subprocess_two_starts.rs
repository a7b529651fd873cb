//! A sub-process has exactly one none start event: a token entering it begins there.

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
            start s2;
            task assess = work;
            end e;
            s -> assess -> e;
            s2 -> assess;
        }
        end done;

        begin -> handle -> done;
    }
}

fn main() {}
