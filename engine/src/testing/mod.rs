//! A test kit for your processes (feature `testing`; turn it on for your
//! dev-dependency: `thresh = { version = "..", features = ["testing"] }`).
//!
//! - **Waits that never sleep**: [`wait_until_parked`], [`wait_until_open_work`],
//!   [`wait_until_ended`], [`wait_for`] (and [`Wait`] for another timeout) return a
//!   [`Stuck`] error with a [`Picture`] of where the instance is — its path as rows,
//!   where its tokens wait, its open work — instead of hanging; the `expect_*`
//!   forms fail the test with it. They never move tokio's paused clock: the test
//!   does, with [`advance`] and [`advance_to_next_timer`].
//! - **Assertions that read as the model**: [`AssertHistory`] on a [`History`](crate::History),
//!   [`Observed`] (from [`observe`]) on an instance — passed (in order, in any
//!   order), not passed, waits at, ended at, outcome, data. A failure prints the
//!   path the instance really took.
//! - **Flow coverage**: [`Coverage`] counts which elements and flows of each process
//!   the tests took, reports it as text or SVG, and fails under a threshold.
//! - **Handler overrides**: [`Overrides`] replaces tasks' handlers for one engine
//!   ([`Overrides::install`]) or one instance ([`Overrides::start`]), by element id
//!   (checked): a mock, a failure, a BPMN error or escalation, or the real handler
//!   held until the test releases it ([`Gate`]).
//! - **Durable engines** (feature `durable` too): [`TestStore`] — in memory, or in
//!   a temporary SQLite file that is removed afterwards, or the kind the
//!   `THRESH_TEST_STORE` environment variable names — and [`restart`]: stop the
//!   engine here, reopen the store, resume, and get the report and the handles.
//!
//! ```
//! use thresh::testing::{expect_open_work, observe, AssertHistory};
//! use thresh::{process, Engine, ProcessData};
//!
//! #[derive(Clone, Debug, Default, ProcessData)]
//! pub struct Leave { pub approved: bool }
//!
//! process! {
//!     pub LEAVE: Leave { start asked; user approve; end granted; asked -> approve -> granted; }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let handle = Engine::new().start(&LEAVE, Leave::default()).await.unwrap();
//! expect_open_work(&handle, "approve").await;
//! observe(&handle).await.assert_waits_at("approve");
//! handle.complete("approve", |l| l.approved = true).await.unwrap();
//! thresh::testing::expect_ended(&handle).await;
//! observe(&handle)
//!     .await
//!     .assert_passed(["asked", "approve", "granted"])
//!     .assert_outcome_completed()
//!     .assert_data("approved", |l| l.approved);
//! # }
//! ```

mod assert;
mod coverage;
#[cfg(feature = "durable")]
mod durable;
mod overrides;
mod picture;
#[cfg(feature = "postgres")]
mod postgres;
mod wait;

pub use assert::{observe, AssertHistory, Observed};
pub use coverage::Coverage;
#[cfg(feature = "durable")]
pub use durable::{
    restart, Restarted, TempFile, TestStore, TestStoreError, RESTART_DEADLINE, TEST_STORE_VAR,
};
pub(crate) use overrides::HandlerTable;
pub use overrides::{Gate, OverrideError, Overrides};
pub use picture::{rows, what, Picture};
#[cfg(feature = "postgres")]
pub use postgres::{postgres_url, TempSchema, DEFAULT_POSTGRES_URL, POSTGRES_URL_VAR};
pub use wait::{
    advance, advance_to_next_timer, expect_ended, expect_open_work, expect_parked, expect_that,
    wait_for, wait_until_ended, wait_until_open_work, wait_until_parked, ClockError, Stuck,
    StuckReason, Wait, DEFAULT_TIMEOUT,
};
