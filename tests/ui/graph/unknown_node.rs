//! A misspelt element in a flow gets a "did you mean".

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task check_stock = work;
        end done;

        begin -> chek_stock -> done;
    }
}

fn main() {}
