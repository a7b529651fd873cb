//! A boundary event cannot sit on a gateway: boundary events sit only on activities.

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
        exclusive choose;
        boundary late on choose: timer(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> work -> choose;
        choose -> done;
        late -> too_late;
    }
}

fn main() {}
