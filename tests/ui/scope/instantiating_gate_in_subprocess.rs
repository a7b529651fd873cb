//! An instantiating event-based gateway starts instances of the deployed process, so
//! it stands only at the process's top level, not inside a sub-process.

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
        subprocess handle {
            event_based first: instantiate;
            catch paid: message("paid", key = |d| d.id.clone());
            catch shipped: message("shipped", key = |d| d.id.clone());
            end e;
            first -> paid, shipped;
            paid, shipped -> e;
        }
        end done;

        begin -> handle -> done;
    }
}

fn main() {}
