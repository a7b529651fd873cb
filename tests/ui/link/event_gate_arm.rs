//! A link catch event cannot be an arm of an event-based gateway.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

process! {
    pub P: D {
        start begin;
        event_based wait;
        catch late: timer(std::time::Duration::from_secs(30));
        catch skip: link("skip");
        throw jump: link("skip");
        end done;

        begin -> wait -> late, skip;
        late -> jump;
        skip -> done;
    }
}

fn main() {}
