//! An error end event throws, so it takes no `apply`.

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
        task work = work;
        end failed: error("DECLINED", apply = |d, e: &thresh::events::BpmnError| d.id = e.message.clone());

        begin -> work -> failed;
    }
}

fn main() {}
