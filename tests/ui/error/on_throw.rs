//! An error is thrown only by an end event, not by a throw event.

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
        throw failed: error("DECLINED");
        end done;

        begin -> work -> failed -> done;
    }
}

fn main() {}
