//! A boundary event with a misspelt event gets a "did you mean".

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
        boundary late on work: timr(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> work -> done;
        late -> too_late;
    }
}

fn main() {}
