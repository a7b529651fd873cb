//! An instantiating event-based gateway cannot have an incoming flow.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
    pub retries: u32,
}

pub struct Payment {
    pub amount: u64,
}

async fn check(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        event_based first: instantiate;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        catch refunded: message("refund", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid -= p.amount);
        task check = check;
        exclusive again;
        end done;

        first -> paid, refunded;
        paid -> check;
        refunded -> check;
        check -> again;
        again -> first when |d| d.retries < 3;
        again -> done else;
    }
}

fn main() {}
