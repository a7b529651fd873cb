//! A boundary event is declared in the same container as the activity it sits on:
//! not at the top level on a task inside a sub-process.

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
            start s;
            task assess = work;
            end e;
            s -> assess -> e;
        }
        boundary late on assess: timer(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> handle -> done;
        late -> too_late;
    }
}

fn main() {}
