//! At most one outgoing flow is the default (`else`).

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
        exclusive choose;
        task a = work;
        task b = work;
        task c = work;
        exclusive merge;
        end done;

        begin -> choose;
        choose -> a when |d| d.x > 0;
        choose -> b else;
        choose -> c else;
        a, b, c -> merge -> done;
    }
}

fn main() {}
