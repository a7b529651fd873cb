//! A boundary event attached to a misspelt activity gets a "did you mean".

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
        task check = work;
        boundary late on chek: timer(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> check -> done;
        late -> too_late;
    }
}

fn main() {}
