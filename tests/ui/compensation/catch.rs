//! Compensation is not caught mid-path.

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
        catch wait: compensation;
        end done;
        begin -> wait -> done;
    }
}

fn main() {}
