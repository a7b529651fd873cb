//! A typed publish with a payload of another type than the catch's `apply` takes is
//! a compile error.

use thresh::{process, Engine, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub paid: u64,
}

pub struct Receipt {
    pub amount: u64,
}

process! {
    pub ORDER: Order {
        start s;
        catch paid: message("receipt", key = |o| o.id.clone(), apply = |o, r: &Receipt| o.paid = r.amount);
        end e;
        s -> paid -> e;
    }
}

async fn pay(engine: &Engine) {
    engine.publish(ORDER::message.receipt, "order-1", 250_u64).await.unwrap();
}

fn main() {
    let _ = pay;
}
