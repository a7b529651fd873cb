//! An event-based gateway takes one arm only: a parallel join after both arms
//! waits for ever (deadlock).

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
    pub y: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start s;
        event_based wait;
        catch paid: signal("paid");
        catch late: timer(std::time::Duration::from_secs(60));
        parallel join;
        end e;

        s -> wait -> paid, late;
        paid, late -> join -> e;
    }
}

fn main() {}
