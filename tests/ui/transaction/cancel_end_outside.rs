//! A cancel end event exists only in a transaction.

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
        subprocess booking {
            start s;
            end stop: cancel;
            s -> stop;
        }
        end done;
        begin -> booking -> done;
    }
}

fn main() {}
