//! A required flow is named once in an activation.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub urgent: bool,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        parallel ask;
        task manager = work;
        task cfo = work;
        task legal = work;
        complex approved: activate(count = 2, require = [cfo, cfo]);
        end done;

        begin -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> done;
    }
}

fn main() {}
