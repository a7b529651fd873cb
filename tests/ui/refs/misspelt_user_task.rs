//! A misspelt user task in a typed reference is a compile error naming the field
//! and listing the user tasks the process has.

use thresh::{process, InstanceHandle, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Expense {
    pub approved: bool,
}

process! {
    pub EXPENSE: Expense {
        start s;
        user approve;
        user review;
        end e;
        s -> review -> approve -> e;
    }
}

async fn approve(handle: &InstanceHandle<Expense>) {
    handle.complete(EXPENSE::user.aprove, |e| e.approved = true).await.unwrap();
}

fn main() {
    let _ = approve;
}
