use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

process! {
    pub P: D {
        start begin;
        catch wait: non_interrupting timer(std::time::Duration::from_secs(60));
        end done;

        begin -> wait -> done;
    }
}

fn main() {}
