//! A cancel end event is written directly in its transaction.

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
            subprocess inner {
                start si;
                end stop: cancel;
                si -> stop;
            }
            end e;
            s -> inner -> e;
        }
        boundary cancelled on booking: cancel;
        end done;
        end gave_up;
        begin -> booking -> done;
        cancelled -> gave_up;
    }
}

fn main() {}
