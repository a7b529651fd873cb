//! An error is not caught by a catch event mid-path, only by a boundary event.

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
        catch failed: error("DECLINED");
        end done;

        begin -> work -> failed -> done;
    }
}

fn main() {}
