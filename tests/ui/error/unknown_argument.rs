//! An unknown argument of `error(..)` is an error, with the nearest known one.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task work = work;
        boundary failed on work: error("DECLINED", aply = |d, e: &thresh::events::BpmnError| d.id = e.code.clone());
        end done;
        end rejected;

        begin -> work -> done;
        failed -> rejected;
    }
}

fn main() {}
