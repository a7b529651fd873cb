//! A commit whose answer was lost: the transaction's id is read first, and after a
//! lost connection the server is asked (`txid_status`, on a new connection) whether
//! it committed — so a write is acknowledged, run again, or said unknown, never
//! taken for not stored when it may be (`PostgresStore::transact`).

use super::*;

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
            let pid = inner.pid;
            let Inner {
                client, statements, ..
            } = &mut *inner;
            let mut tx = client
                .transaction()
                .map_err(|e| self.fail("beginning a transaction", e))?;
            // The transaction's id, to look its outcome up if the commit's answer is
            // lost (it gives the transaction its id at once, which a write does anyway).
            let statement = cached(statements, &mut tx, "SELECT txid_current()", &self.location)?;
            let xid: i64 = tx
                .query_one(&statement, &[])
                .and_then(|row| row.try_get(0))
                .map_err(|e| self.fail("reading the transaction id", e))?;
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
            match self.outcome(inner, xid) {
                Outcome::Committed => {
                    info!(
                        xid,
                        "a commit's answer was lost: the server had committed it"
                    );
                    Ok(out)
                }
                Outcome::Aborted => {
                    info!(
                        xid,
                        "a commit's answer was lost: the server had not committed it"
                    );
                    Err(self.fail(COMMIT_LOST, e))
                }
                Outcome::Unknown(reason) => {
                    warn!(xid, %reason, "a commit's answer was lost and its outcome is unknown");
                    Err(StoreError::CommitUnknown {
                        path: self.location.clone(),
                        reason,
                    })
                }
            }
        })
    }

    /// Whether transaction `xid`, whose commit's answer was lost, committed: asked
    /// on a new connection, for [`RECONNECT_FOR`] at most. A transaction the server
    /// still runs (its session did not notice the lost client yet) is ended first,
    /// so that the answer cannot change after it is given.
    fn outcome(&self, inner: &mut Inner, xid: i64) -> Outcome {
        let start = std::time::Instant::now();
        let old = inner.pid;
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
            let status = inner
                .client
                .query_one("SELECT txid_status($1)", &[&xid])
                .and_then(|row| row.try_get::<_, Option<String>>(0));
            match status.as_ref().map(|s| s.as_deref()) {
                Ok(Some("committed")) => return Outcome::Committed,
                Ok(Some("aborted")) => return Outcome::Aborted,
                Ok(None) => {
                    return Outcome::Unknown(format!(
                        "the server no longer knows transaction {xid}"
                    ))
                }
                Ok(Some(other)) => {
                    last = format!("transaction {xid} is {other}");
                    // Still in progress: its backend is alive. End it (only while
                    // it runs that transaction: a pid is reused once it is gone).
                    let end = inner.client.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                         WHERE pid = $1 AND backend_xid::text::bigint = $2 % 4294967296",
                        &[&old, &xid],
                    );
                    if let Err(e) = end {
                        last = e.to_string();
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => {
                    fresh = !connection_lost(e);
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
