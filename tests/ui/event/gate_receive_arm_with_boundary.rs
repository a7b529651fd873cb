//! A receive task that is an event-based gateway's arm carries no boundary event.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
}

process! {
    pub P: D {
        start begin;
        event_based wait;
        receive paid: message("payment", key = |d| d.id.clone());
        boundary late on paid: timer(std::time::Duration::from_secs(60));
        catch cancelled: signal("cancel");
        end done;
        end gave_up;

        begin -> wait -> paid, cancelled;
        paid -> done;
        cancelled -> done;
        late -> gave_up;
    }
}

fn main() {}
