//! A boundary event needs `on activity`: the activity it is attached to.

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
        task work = work;
        boundary late: timer(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> work -> done;
        late -> too_late;
    }
}

fn main() {}
