//! A transaction's cancel boundary is one way out of it: its path meeting the normal
//! one at a parallel join deadlocks when the transaction is cancelled.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub ok: bool,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        transaction booking {
            start s;
            task book = work;
            exclusive ok;
            end booked;
            end no: cancel;
            s -> book -> ok;
            ok -> booked when |d| d.ok;
            ok -> no else;
        }
        boundary cancelled on booking: cancel;
        parallel join;
        end done;
        begin -> booking -> join;
        cancelled -> join;
        join -> done;
    }
}

fn main() {}
