//! A complex gateway with one incoming flow never synchronises, so it takes no activation rule.

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
        complex route: activate(count = 1);
        task a = work;
        task b = work;
        inclusive merge;
        end done;

        begin -> route;
        route -> a when |d| d.urgent;
        route -> b else;
        a, b -> merge -> done;
    }
}

fn main() {}
