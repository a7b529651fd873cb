//! An error boundary's `apply` is given once: a second one is an error, not the last
//! one winning.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub reason: String,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task work = work;
        boundary failed on work: error(
            "DECLINED",
            apply = |d, e: &thresh::events::BpmnError| d.id = e.code.clone(),
            apply = |d, e: &thresh::events::BpmnError| d.reason = e.message.clone(),
        );
        end done;
        end rejected;

        begin -> work -> done;
        failed -> rejected;
    }
}

fn main() {}
