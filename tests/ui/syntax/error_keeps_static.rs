//! A syntax error in a process body is the only error reported: the static is still
//! declared (as an empty graph), so code using it raises nothing more.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub n: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task work = work
        end done;
        begin -> work -> done;
    }
}

fn main() {
    let _process = &P;
}
