//! `process!` written inside a `macro_rules!` of the user's, its closures passed in:
//! the code the macro writes around them finds its own locals (`data`, `payload`,
//! ...), whatever hygiene the user's tokens bring.

// The parentheses make each closure one token tree for `billing!`.
#![allow(unused_parens)]

use thresh::{process, Engine, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Bill {
    pub id: String,
    pub paid: u64,
    pub big: bool,
}

async fn check(bill: &mut Bill) -> Result<(), TaskError> {
    bill.big = bill.paid > 100;
    Ok(())
}

/// One process per name, all with the same shape and the closures given (as token
/// trees, which keep their spans: the hygiene of the caller's tokens).
macro_rules! billing {
    ($($name:ident: $key:tt, $apply:tt, $when:tt;)*) => {
        $(process! {
            pub $name: Bill {
                start s;
                receive pay: message("pay", key = $key, apply = $apply);
                task check = check;
                exclusive big;
                end large;
                end small;
                s -> pay -> check -> big;
                big -> large when $when;
                big -> small else;
            }
        })*
    };
}

billing! {
    BY_ID: (|b| b.id.clone()), (|b, amount: &u64| b.paid += *amount), (|b| b.big);
    BY_ID_TOO: (|data| data.id.clone()), (|data, payload: &u64| data.paid = *payload), (|data| data.big);
}

#[tokio::test]
async fn a_process_written_through_macro_rules_runs() {
    let engine = Engine::new();
    for process in [&BY_ID, &BY_ID_TOO] {
        let handle = engine
            .start(
                process,
                Bill {
                    id: "B-1".into(),
                    ..Bill::default()
                },
            )
            .await
            .unwrap();
        engine.publish_message("pay", "B-1", 250_u64).await.unwrap();
        let bill = handle.outcome().await.completed().expect("completed");
        assert_eq!((bill.paid, bill.big), (250, true));
        assert_eq!(handle.history().await.completed_tasks(), ["pay", "check"]);
    }
}
