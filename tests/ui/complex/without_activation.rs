//! A converging complex gateway needs an activation rule.

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
        complex approved;
        end done;

        begin -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> done;
    }
}

fn main() {}
