//! A commit whose answer was lost: every writing transaction first sets its
//! connection's commit mark (a row of `commit_marks`) to a number of its own, and
//! after a lost connection the store reads the mark on a new connection — so a
//! write is acknowledged, run again, or said unknown, never taken for not stored
//! when it may be, nor for stored when it is not (`PostgresStore::transact`).
//!
//! Why not the transaction id and `txid_status`: a crash that loses a commit before
//! it reached the disk loses the id with it, and the server hands the same id to a
//! later transaction — `txid_status` then reports that one's outcome ("committed"
//! for a write that was never stored).

use std::hash::{BuildHasher, Hasher};

use super::*;

/// A random id for a connection's commit mark.
pub(super) fn writer_id(pid: i32) -> i64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_i32(pid);
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish() as i64
}

/// The statement that sets a connection's commit mark, first in every writing
/// transaction (it takes the mark's row lock until the transaction ends).
const SET_MARK: &str = "INSERT INTO commit_marks (writer, mark) VALUES ($1, $2)
     ON CONFLICT (writer) DO UPDATE SET mark = EXCLUDED.mark, at = now()";

impl PostgresStore {
    /// Run `f` in one transaction and commit it; if the connection is lost while
    /// the commit is on its way, ask the server (on a new connection) whether the
    /// transaction committed: `Ok` if it did, the call runs again if it did not, and
    /// [`StoreError::CommitUnknown`] if the server cannot tell within
    /// [`RECONNECT_FOR`]. Never "not stored" for a transaction that may be.
    pub(super) fn transact<T: Send>(
        &self,
        mut f: impl FnMut(
                &mut postgres::Transaction<'_>,
                &mut HashMap<&'static str, Statement>,
            ) -> Result<T, StoreError>
            + Send,
    ) -> Result<T, StoreError> {
        self.with(|inner| {
            let (pid, writer) = (inner.pid, inner.writer);
            inner.mark += 1;
            let mark = inner.mark;
            let Inner {
                client, statements, ..
            } = &mut *inner;
            let mut tx = client
                .transaction()
                .map_err(|e| self.fail("beginning a transaction", e))?;
            // The mark, to look the outcome up if the commit's answer is lost.
            let statement = cached(statements, &mut tx, SET_MARK, &self.location)?;
            tx.execute(&statement, &[&writer, &mark])
                .map_err(|e| self.fail("setting the commit mark", e))?;
            // An error drops `tx`, which rolls the whole transaction back.
            let out = f(&mut tx, statements)?;
            let fault = {
                let mut faults = self.faults.lock().unwrap_or_else(|p| p.into_inner());
                (!faults.is_empty()).then(|| faults.remove(0))
            };
            // Kept open while the outcome is asked (the `Stalled` fault).
            let mut _stalled = None;
            let committed = match fault {
                None => tx.commit(),
                Some(CommitFault::Lost) => {
                    self.terminate(pid);
                    tx.commit()
                }
                Some(CommitFault::Before(f)) => {
                    f();
                    tx.commit()
                }
                Some(CommitFault::AnswerLost) => tx.commit().and_then(|()| {
                    self.terminate(pid);
                    // What the client gets when the answer is lost: a closed connection.
                    inner.client.simple_query("SELECT 1").map(|_| ())
                }),
                Some(CommitFault::Stalled) => {
                    // Neither COMMIT nor ROLLBACK is sent: the server keeps the
                    // transaction open on the old connection, kept aside; the store
                    // goes on with a connection that is closed, as after a cut.
                    std::mem::forget(tx);
                    let mut other = self
                        .config
                        .connect(NoTls)
                        .map_err(|e| self.fail("connecting", e))?;
                    let other_pid: i32 = other
                        .query_one("SELECT pg_backend_pid()", &[])
                        .map(|row| row.get(0))
                        .map_err(|e| self.fail("reading the backend pid", e))?;
                    _stalled = Some(std::mem::replace(&mut inner.client, other));
                    self.terminate(other_pid);
                    inner.client.simple_query("SELECT 1").map(|_| ())
                }
            };
            let e = match committed {
                Ok(()) => return Ok(out),
                Err(e) => e,
            };
            if !(inner.client.is_closed() || connection_lost(&e)) {
                // The server answered: it did not commit.
                return Err(self.fail(COMMITTING, e));
            }
            let lost = Lost { pid, writer, mark };
            match self.outcome(inner, lost) {
                Outcome::Committed => {
                    info!(
                        mark,
                        "a commit's answer was lost: the server had committed it"
                    );
                    Ok(out)
                }
                Outcome::Aborted => {
                    info!(
                        mark,
                        "a commit's answer was lost: the server had not committed it"
                    );
                    Err(self.fail(COMMIT_LOST, e))
                }
                Outcome::Unknown(reason) => {
                    warn!(mark, %reason, "a commit's answer was lost and its outcome is unknown");
                    Err(StoreError::CommitUnknown {
                        path: self.location.clone(),
                        reason,
                    })
                }
            }
        })
    }

    /// Whether the transaction `lost` names, whose commit's answer was lost,
    /// committed: its connection's mark read on a new connection, for
    /// [`RECONNECT_FOR`] at most. A transaction the server still runs (its session
    /// did not notice the lost client yet) holds the mark's row: it is ended first,
    /// so that the answer cannot change after it is given.
    fn outcome(&self, inner: &mut Inner, lost: Lost) -> Outcome {
        let start = std::time::Instant::now();
        let mut last = String::new();
        // The old connection is not asked: it may look open and be dead.
        let mut fresh = false;
        while start.elapsed() < RECONNECT_FOR {
            if !fresh || inner.client.is_closed() {
                if let Err(e) = self.reconnect(inner) {
                    return Outcome::Unknown(e.to_string());
                }
                fresh = true;
            }
            let read = inner.client.query_opt(
                "SELECT mark FROM commit_marks WHERE writer = $1 FOR UPDATE NOWAIT",
                &[&lost.writer],
            );
            match read {
                Ok(row) => {
                    let committed = match row.map(|row| row.try_get::<_, i64>(0)) {
                        Some(Ok(mark)) => mark == lost.mark,
                        // No mark yet: that connection's first write did not commit.
                        None => false,
                        Some(Err(e)) => return Outcome::Unknown(e.to_string()),
                    };
                    // The old connection's mark is not needed any more.
                    if let Err(e) = inner.client.execute(
                        "DELETE FROM commit_marks WHERE writer = $1",
                        &[&lost.writer],
                    ) {
                        debug!(error = %e, "removing a lost connection's commit mark failed");
                    }
                    return match committed {
                        true => Outcome::Committed,
                        false => Outcome::Aborted,
                    };
                }
                Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                    // The transaction still runs, on the old connection's session
                    // (only it writes that row): end it.
                    last = format!("the transaction setting mark {} still runs", lost.mark);
                    let end = inner
                        .client
                        .execute("SELECT pg_terminate_backend($1)", &[&lost.pid]);
                    if let Err(e) = end {
                        last = e.to_string();
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => {
                    fresh = !connection_lost(&e);
                    last = e.to_string();
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            }
        }
        Outcome::Unknown(last)
    }

    /// End the server process `pid` from a connection of its own (a fault for
    /// tests: the store's connection dies).
    fn terminate(&self, pid: i32) {
        let ended = self.config.connect(NoTls).and_then(|mut client| {
            client.execute("SELECT pg_terminate_backend($1)", &[&pid])?;
            // Wait until it is gone, so the store's connection sees it closed.
            while client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                    &[&pid],
                )?
                .get::<_, i64>(0)
                > 0
            {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            client.close()
        });
        if let Err(e) = ended {
            warn!(error = %e, "the injected fault could not end the connection");
        }
    }
}

/// The transaction whose commit's answer was lost: its connection's server process
/// and commit mark.
struct Lost {
    pid: i32,
    writer: i64,
    mark: i64,
}
