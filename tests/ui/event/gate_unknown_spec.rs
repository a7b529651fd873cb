//! An unknown event-based gateway kind.

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
        event_based g: bogus;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        catch timeout: timer(std::time::Duration::from_secs(30));
        end done;
        end late;

        begin -> g -> paid, timeout;
        paid -> done;
        timeout -> late;
    }
}

fn main() {}
