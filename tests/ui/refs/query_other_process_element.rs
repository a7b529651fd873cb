//! A query waits at an element of its own process: a user task of another
//! process (over another data type) is refused, naming the query's data type.

use thresh::{process, ProcessData, Query};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Expense {
    pub approved: bool,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Leave {
    pub granted: bool,
}

process! {
    pub EXPENSE: Expense {
        start s;
        user approve;
        end e;
        s -> approve -> e;
    }
}

process! {
    pub LEAVE: Leave {
        start s;
        user grant;
        end e;
        s -> grant -> e;
    }
}

fn main() {
    let _ = Query::of(&EXPENSE).waiting_at(LEAVE::user.grant);
}
