//! Timers read off the instance's data (`timer(|data| ..)`): evaluated when armed,
//! on the data as it is then, kept as a deadline; a `Duration` waits that long, a
//! `SystemTime` until then. On the paused clock.

use std::time::SystemTime;

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Loan {
    /// How long the borrower has to sign.
    pub grace: Duration,
    /// When the payment is due.
    pub due: Option<SystemTime>,
    pub reminded: bool,
}

process! {
    GRACE: Loan {
        start s;
        catch wait: timer(|l| l.grace);
        end   e;
        s -> wait -> e;
    }
    DUE: Loan {
        start s;
        catch wait: timer(|l| l.due.unwrap_or(SystemTime::UNIX_EPOCH));
        end   e;
        s -> wait -> e;
    }
    /// A boundary timer from the data on a user task: a reminder when it runs out.
    SIGN: Loan {
        start s;
        user  sign;
        boundary late on sign: timer(|l| l.grace);
        task  remind = |l| async move { l.reminded = true; Ok(()) };
        end   signed;
        end   reminded;
        s -> sign -> signed;
        late -> remind -> reminded;
    }
}

async fn took(process: &'static thresh::Process<Loan>, loan: Loan) -> Duration {
    let engine = Engine::new();
    let t0 = Instant::now();
    let outcome = engine.start(process, loan).await.unwrap().outcome().await;
    assert!(outcome.completed().is_some());
    t0.elapsed()
}

#[tokio::test(start_paused = true)]
async fn a_duration_read_off_the_data_waits_that_long() {
    for secs in [0, 7, 3600] {
        let loan = Loan {
            grace: Duration::from_secs(secs),
            ..Loan::default()
        };
        assert_eq!(took(&GRACE, loan).await, Duration::from_secs(secs));
    }
}

#[tokio::test(start_paused = true)]
async fn a_date_read_off_the_data_waits_until_then() {
    let loan = Loan {
        due: Some(SystemTime::now() + Duration::from_secs(30)),
        ..Loan::default()
    };
    let took = took(&DUE, loan).await;
    assert!(
        took > Duration::from_secs(29) && took <= Duration::from_secs(30),
        "{took:?}"
    );
    // A date passed fires at once.
    assert_eq!(took_past().await, Duration::ZERO);
}

async fn took_past() -> Duration {
    took(&DUE, Loan::default()).await
}

/// A boundary timer from the data is armed with the data as its task starts, and
/// fires at that deadline.
#[tokio::test(start_paused = true)]
async fn a_boundary_timer_from_the_data_fires_at_the_deadline_it_was_armed_with() {
    let engine = Engine::new();
    let loan = Loan {
        grace: Duration::from_secs(60),
        ..Loan::default()
    };
    let t0 = Instant::now();
    let handle = engine.start(&SIGN, loan).await.unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(!handle.is_finished());
    let outcome = handle.outcome().await;
    let loan = outcome.completed().expect("completed");
    assert!(loan.reminded);
    assert_eq!(t0.elapsed(), Duration::from_secs(60));
}
