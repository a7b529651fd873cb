//! Durable engines in tests (features `testing` and `durable`): a store that cleans
//! up after itself, and a restart in the middle of a test.
//!
//! ```
//! use thresh::testing::{restart, TestStore};
//! use thresh::{process, ProcessData};
//!
//! #[derive(Clone, Debug, Default, PartialEq, ProcessData, serde::Serialize, serde::Deserialize)]
//! pub struct Leave { pub approved: bool }
//!
//! process! {
//!     pub LEAVE: Leave { start asked; user approve; end granted; asked -> approve -> granted; }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let store = TestStore::memory();
//! let engine = store.engine().unwrap();
//! let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
//! thresh::testing::expect_open_work(&handle, "approve").await;
//!
//! // Stop the engine here, reopen the store, resume.
//! let restarted = restart(engine, &store, |engine| engine.register(&LEAVE)).await.unwrap();
//! let handle = restarted.handle(&LEAVE, handle.id()).unwrap();
//! thresh::testing::expect_open_work(&handle, "approve").await;
//! handle.complete("approve", |l| l.approved = true).await.unwrap();
//! assert!(handle.outcome().await.completed().unwrap().approved);
//! restarted.engine.shutdown(std::time::Duration::from_secs(5)).await.unwrap();
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::graph::Process;
use crate::instance::{InstanceHandle, InstanceId};
use crate::store::{MemoryStore, Store, StoreError};
use crate::{DurableEngine, EngineError, ResumeReport};

/// How long [`restart`] gives the old engine's instances to stop.
///
/// Needs the `testing` and `durable` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "durable"))))]
pub const RESTART_DEADLINE: Duration = Duration::from_secs(20);

/// The environment variable [`TestStore::from_env`] reads: `memory` (the default),
/// `sqlite` (a temporary file, feature `sqlite`) or `postgres` (a temporary schema of
/// `THRESH_POSTGRES_URL`, feature `postgres`).
///
/// Needs the `testing` and `durable` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "durable"))))]
pub const TEST_STORE_VAR: &str = "THRESH_TEST_STORE";

/// A store for one test: in memory, or in a temporary SQLite file removed (with its
/// WAL files) when the `TestStore` is dropped. Engines on it share the one store
/// object, so a restart in the same test process finds everything written.
///
/// Needs the `testing` and `durable` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "durable"))))]
pub struct TestStore {
    store: Arc<dyn Store>,
    file: Option<TempFile>,
    /// The PostgreSQL schema the store is in (dropped with it).
    #[cfg(feature = "postgres")]
    #[allow(dead_code)] // held for its drop
    schema: Option<super::TempSchema>,
}

impl TestStore {
    /// The reference store, in memory.
    pub fn memory() -> Self {
        Self {
            store: Arc::new(MemoryStore::new()),
            file: None,
            #[cfg(feature = "postgres")]
            schema: None,
        }
    }

    /// A SQLite store in a new temporary file named after `name` (and this process
    /// and a counter, so tests running side by side never share one).
    ///
    /// Needs the `sqlite` feature.
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    pub fn sqlite(name: &str) -> Result<Self, StoreError> {
        let file = TempFile::new(name, "db");
        let store = crate::store::SqliteStore::open(file.path())?;
        Ok(Self {
            store: Arc::new(store),
            file: Some(file),
            #[cfg(feature = "postgres")]
            schema: None,
        })
    }

    /// The store [`TEST_STORE_VAR`] names (`memory` if unset): run one suite on each
    /// kind of store by setting it.
    pub fn from_env(name: &str) -> Result<Self, TestStoreError> {
        let kind = std::env::var(TEST_STORE_VAR).unwrap_or_default();
        match kind.as_str() {
            "" | "memory" => Ok(Self::memory()),
            #[cfg(feature = "sqlite")]
            "sqlite" => Ok(Self::sqlite(name)?),
            #[cfg(feature = "postgres")]
            "postgres" => Ok(Self::postgres(name)?),
            _ => {
                let _ = name;
                Err(TestStoreError::UnknownKind(kind))
            }
        }
    }

    /// A PostgreSQL store in a new schema (named after `name`) of the database
    /// `THRESH_POSTGRES_URL` names (default the local `test` database), dropped with
    /// everything in it when the `TestStore` is dropped.
    ///
    /// Needs the `postgres` feature.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub fn postgres(name: &str) -> Result<Self, StoreError> {
        let schema = super::TempSchema::new(name);
        let store = schema.connect()?;
        Ok(Self {
            store: Arc::new(store),
            file: None,
            schema: Some(schema),
        })
    }

    /// The store, to read what it holds or to open an engine on it.
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The file the store is in, if it is one.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(TempFile::path)
    }

    /// A new durable engine on this store.
    pub fn engine(&self) -> Result<DurableEngine, EngineError> {
        DurableEngine::with_store(self.store())
    }
}

/// Read the store through it: `store.instance(id)`, `store.messages()`, ...
impl std::ops::Deref for TestStore {
    type Target = dyn Store;

    fn deref(&self) -> &Self::Target {
        &*self.store
    }
}

/// Why [`TestStore::from_env`] made no store.
///
/// Needs the `testing` and `durable` features.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub enum TestStoreError {
    /// The environment variable names no store this build has.
    #[error("{TEST_STORE_VAR}={0:?} names no store of this build: use `memory`, `sqlite` (feature `sqlite`) or `postgres` (feature `postgres`)")]
    UnknownKind(String),
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A path in the temporary directory, removed — with SQLite's `-wal` and `-shm`
/// files beside it — when dropped.
///
/// Needs the `testing` and `durable` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "durable"))))]
pub struct TempFile {
    path: PathBuf,
}

impl TempFile {
    /// A new path `thresh-<name>-<pid>-<n>.<extension>` in the temporary directory
    /// (nothing is created there; a leftover of that name is removed).
    pub fn new(name: &str, extension: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let file = format!("thresh-{name}-{}-{n}.{extension}", std::process::id());
        let file = Self {
            path: std::env::temp_dir().join(file),
        };
        file.remove();
        file
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut side = self.path.clone().into_os_string();
            side.push(suffix);
            let _ = std::fs::remove_file(side);
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.remove();
    }
}

/// What [`restart`] gives back: the new engine, what its resume did, and what the
/// setup returned (a deployment, say).
///
/// Needs the `testing` and `durable` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "durable"))))]
pub struct Restarted<T = ()> {
    /// The engine on the store after the restart.
    pub engine: DurableEngine,
    /// What `resume` did: the instances resumed, those skipped and why, the messages
    /// published again.
    pub report: ResumeReport,
    /// What the setup returned.
    pub setup: T,
}

impl<T> Restarted<T> {
    /// The handle of the resumed instance `id` of `process`.
    pub fn handle<D: 'static>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> Option<InstanceHandle<D>> {
        self.engine.handle(process, id)
    }

    /// The handles of every resumed instance of `process`, by id.
    pub fn handles<D: 'static>(&self, process: &'static Process<D>) -> Vec<InstanceHandle<D>> {
        self.report
            .resumed
            .iter()
            .filter(|(_, name)| *name == process.name())
            .filter_map(|(id, _)| self.engine.handle(process, *id))
            .collect()
    }
}

/// A restart in the middle of a test: shut `old` down (its instances stay stored as
/// running; at most [`RESTART_DEADLINE`]), open a new engine on `store`, let `setup`
/// register processes, payload types and deployments on it (what a program does at
/// its start; what it returns comes back in [`Restarted::setup`]), and resume.
///
/// Not under a timeout on a paused clock: the store's writer thread answers from
/// outside the runtime, and the paused clock jumps to the timeout meanwhile.
///
/// Needs the `testing` and `durable` features.
#[cfg_attr(docsrs, doc(cfg(all(feature = "testing", feature = "durable"))))]
pub async fn restart<F, T>(
    old: DurableEngine,
    store: &TestStore,
    setup: F,
) -> Result<Restarted<T>, EngineError>
where
    F: FnOnce(&DurableEngine) -> Result<T, EngineError>,
{
    // Instances that do not stop in time are left to the new engine all the same:
    // what they did after their last checkpoint is not stored.
    let _ = old.shutdown(RESTART_DEADLINE).await;
    drop(old);
    let engine = store.engine()?;
    let setup = setup(&engine)?;
    let report = engine.resume().await?;
    Ok(Restarted {
        engine,
        report,
        setup,
    })
}
