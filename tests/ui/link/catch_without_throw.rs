//! A link catch event whose name no link throw has.

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
        task handle = work;
        catch again: link("again");
        end done;

        begin -> handle -> done;
        again -> handle;
    }
}

fn main() {}
