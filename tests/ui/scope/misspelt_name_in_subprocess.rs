//! A misspelt name in a flow inside a sub-process is matched against the
//! sub-process's own elements first: a flow stays within its container.

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
        end finish;
        subprocess handle {
            start open;
            task assess = work;
            end finished;
            open -> assess -> finishd;
        }

        begin -> handle -> finish;
    }
}

fn main() {}
