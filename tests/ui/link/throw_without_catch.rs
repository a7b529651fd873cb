//! A link throw event whose name no link catch has gets a "did you mean".

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
        throw again: link("rescroe");
        catch rescore: link("rescore");
        end done;

        begin -> score -> enough;
        rescore -> score;
        enough -> again when |d| d.score < 70;
        enough -> done else;
    }
}

fn main() {}
