//! A required flow must be an incoming flow of the gateway, named by its source.

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
        complex approved: activate(count = 2, require = [cf0]);
        end done;

        begin -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> done;
    }
}

fn main() {}
