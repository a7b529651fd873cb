//! Two link catch events with the same name.

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
        throw jump: link("retry");
        catch retry: link("retry");
        catch retry_again: link("retry");
        task handle = work;
        end done;

        begin -> jump;
        retry -> handle -> done;
        retry_again -> done;
    }
}

fn main() {}
