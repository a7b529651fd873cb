//! A cancel boundary sits only on a transaction.

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
            end e;
            s -> e;
        }
        boundary cancelled on booking: cancel;
        end done;
        end gave_up;
        begin -> booking -> done;
        cancelled -> gave_up;
    }
}

fn main() {}
