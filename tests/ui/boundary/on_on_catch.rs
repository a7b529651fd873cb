//! Only a boundary event is attached with `on`; a catch event with `on` is an error.

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
        catch late on work: timer(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> work -> done;
        late -> too_late;
    }
}

fn main() {}
