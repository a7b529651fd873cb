//! `non_interrupting` belongs on a boundary event or an event sub-process's start, not on a catch event.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

process! {
    pub P: D {
        start begin;
        catch wait: non_interrupting timer(std::time::Duration::from_secs(60));
        end done;

        begin -> wait -> done;
    }
}

fn main() {}
