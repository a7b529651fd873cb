//! A PostgreSQL schema for one test (features `testing` and `postgres`): made fresh,
//! dropped with everything in it when the [`TempSchema`] is dropped.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::{PostgresStore, StoreError};

/// The environment variable naming the test database: a `postgres://` URL.
///
/// Needs the `testing` and `postgres` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "postgres"))))]
pub const POSTGRES_URL_VAR: &str = "THRESH_POSTGRES_URL";

/// The database tests use when [`POSTGRES_URL_VAR`] is unset: the local server's
/// `test` database (trust authentication, user `root`).
///
/// Needs the `testing` and `postgres` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "postgres"))))]
pub const DEFAULT_POSTGRES_URL: &str = "postgres://root@127.0.0.1:5432/test";

/// The test database's URL: [`POSTGRES_URL_VAR`], or [`DEFAULT_POSTGRES_URL`].
///
/// Needs the `testing` and `postgres` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "postgres"))))]
pub fn postgres_url() -> String {
    std::env::var(POSTGRES_URL_VAR).unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_string())
}

/// A schema `thresh_<name>_<pid>_<n>` of the test database, dropped (with every
/// table in it) at drop, so tests running side by side never share a store.
///
/// Needs the `testing` and `postgres` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "postgres"))))]
pub struct TempSchema {
    url: String,
    name: String,
}

impl TempSchema {
    /// A new schema name for `name` (nothing is created yet; a leftover of that name
    /// is dropped).
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        let schema = Self {
            url: postgres_url(),
            name: format!("thresh_{name}_{}_{n}", std::process::id()),
        };
        schema.drop_it();
        schema
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A store in this schema (created at the first connect).
    pub fn connect(&self) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_schema(&self.url, &self.name)
    }

    fn drop_it(&self) {
        let (url, sql) = (
            self.url.clone(),
            format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name),
        );
        // On a thread of its own: the blocking client cannot run in a tokio context.
        let _ = std::thread::spawn(move || {
            if let Ok(mut client) = ::postgres::Client::connect(&url, ::postgres::NoTls) {
                let _ = client.batch_execute(&sql);
            }
        })
        .join();
    }
}

impl Drop for TempSchema {
    fn drop(&mut self) {
        self.drop_it();
    }
}
