//! A flow written from a link throw to its own catch is one error, not two.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task score = work;
        exclusive enough;
        throw again: link("rescore");
        catch rescore: link("rescore");
        end done;

        begin -> score -> enough;
        enough -> again when |d| d.score < 70;
        enough -> done else;
        again -> rescore;
        rescore -> score;
    }
}

fn main() {}
