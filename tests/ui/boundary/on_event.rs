//! A boundary event cannot sit on a catch event: boundary events sit only on activities.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

process! {
    pub P: D {
        start begin;
        catch wait: timer(std::time::Duration::from_secs(10));
        boundary late on wait: timer(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> wait -> done;
        late -> too_late;
    }
}

fn main() {}
