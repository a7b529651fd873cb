//! There is no intermediate cancel event.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub charged: bool,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        transaction booking {
            start s;
            throw stop: cancel;
            end e;
            s -> stop -> e;
        }
        end done;
        begin -> booking -> done;
    }
}

fn main() {}
