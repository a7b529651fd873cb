//! An error start event of an event sub-process always interrupts: the error ended the
//! work it was thrown from.

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
        event_subprocess on_fraud {
            start fraud: non_interrupting error("FRAUD");
            task report = work;
            end reported;
            fraud -> report -> reported;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
