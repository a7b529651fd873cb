//! An event-based gateway's arm cannot be the default flow.

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
        start begin;
        event_based wait;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        catch late: timer(std::time::Duration::from_secs(30));
        end done;

        begin -> wait -> paid;
        wait -> late else;
        paid, late -> done;
    }
}

fn main() {}
