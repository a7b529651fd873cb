//! An error or escalation start event catches what is thrown in its enclosing scope,
//! so it belongs in an event sub-process, never at a process's top level.

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
        start failed: error("FRAUD");
        start raised: escalation("LATE");
        task intake = work;
        end done;

        begin -> intake -> done;
        failed -> done;
        raised -> done;
    }
}

fn main() {}
