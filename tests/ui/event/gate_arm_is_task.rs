//! An event-based gateway's arm must wait for an event, not be a task.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

pub struct Payment {
    pub amount: u64,
}

async fn remind(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        event_based wait;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        task remind = remind;
        end done;

        begin -> wait -> paid, remind;
        paid, remind -> done;
    }
}

fn main() {}
