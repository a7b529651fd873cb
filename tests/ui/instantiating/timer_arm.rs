//! An instantiating event-based gateway's arms are messages, not timers.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

pub struct Payment {
    pub amount: u64,
}

process! {
    pub P: D {
        event_based first: instantiate;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        catch nightly: timer(std::time::Duration::from_secs(3600));
        end done;
        end closed;

        first -> paid, nightly;
        paid -> done;
        nightly -> closed;
    }
}

fn main() {}
