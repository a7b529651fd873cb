//! A transaction with a cancel end event needs a cancel boundary.

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
            exclusive ok;
            end e;
            end stop: cancel;
            s -> ok;
            ok -> e when |d| d.charged;
            ok -> stop else;
        }
        end done;
        begin -> booking -> done;
    }
}

fn main() {}
