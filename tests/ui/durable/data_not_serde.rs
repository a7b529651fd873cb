//! A durable engine stores the process data as JSON: registering a process whose
//! data type lacks the serde derives is a compile error saying what to derive.

use thresh::{process, DurableEngine, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
}

process! {
    pub ORDER: Order {
        start s;
        user approve;
        end e;
        s -> approve -> e;
    }
}

fn register(engine: &DurableEngine) {
    engine.register(&ORDER).unwrap();
}

fn main() {
    let _ = register;
}
