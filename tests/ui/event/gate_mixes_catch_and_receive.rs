//! An event-based gateway's message arms are all catch events or all receive tasks.

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
        receive refused: message("refusal", key = |d| d.id.clone());
        end done;

        begin -> wait -> paid, refused;
        paid, refused -> done;
    }
}

fn main() {}
