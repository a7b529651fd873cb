//! Versions of a process under one name (README, "Versions"): the processes an
//! engine registered, kept by name and version, so a start can take the newest one,
//! a stored instance finds the version it was stored with by its fingerprint, and a
//! version number claimed by two models is refused.
//!
//! Both engines keep one ([`Engine::register`]); a durable engine registers into its
//! in-memory engine's and keeps each version's codec beside it, by fingerprint.

use std::any::TypeId;
use std::collections::HashMap;

use super::{Engine, EngineError};
use crate::data::{Erased, ProcessData};
use crate::graph::{Graph, Process};
use crate::instance::InstanceHandle;

/// The registered versions of every process, by name.
#[derive(Default)]
pub(crate) struct Versions {
    by_name: HashMap<&'static str, Vec<Version>>,
}

/// One registered version: its graph and its data type (a version may change the
/// data type; a start by name checks the data it is given against it).
#[derive(Clone, Copy)]
pub(crate) struct Version {
    pub(crate) graph: &'static Graph<Erased>,
    data: TypeId,
    data_name: &'static str,
}

impl Version {
    /// The version of `process`.
    pub(crate) fn of<D: 'static>(process: &'static Process<D>) -> Self {
        Version {
            graph: process.graph(),
            data: TypeId::of::<D>(),
            data_name: std::any::type_name::<D>(),
        }
    }

    /// Its graph, if its data is a `D`; else why not.
    fn taking<D: 'static>(self) -> Result<&'static Graph<Erased>, EngineError> {
        match self.data == TypeId::of::<D>() {
            true => Ok(self.graph),
            false => Err(EngineError::WrongData {
                process: self.graph.name,
                version: self.graph.version,
                expected: self.data_name,
                given: std::any::type_name::<D>(),
            }),
        }
    }
}

impl Versions {
    /// Register `version`: `Ok(true)` if it is new, `Ok(false)` if it was
    /// registered already; [`EngineError::VersionTaken`] if another model of its
    /// name registered its number.
    pub(crate) fn register(&mut self, version: Version) -> Result<bool, EngineError> {
        let graph = version.graph;
        let versions = self.by_name.entry(graph.name).or_default();
        match versions.binary_search_by_key(&graph.version, |v| v.graph.version) {
            Ok(at) if versions[at].graph.fingerprint == graph.fingerprint => Ok(false),
            Ok(at) => Err(EngineError::VersionTaken {
                process: graph.name,
                version: graph.version,
                registered: versions[at].graph.fingerprint,
                given: graph.fingerprint,
            }),
            Err(at) => {
                versions.insert(at, version);
                Ok(true)
            }
        }
    }

    /// The registered versions of `name`, oldest first.
    pub(crate) fn of_name(&self, name: &str) -> &[Version] {
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }

    /// Every registered name.
    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.by_name.keys().copied()
    }

    /// Every registered version.
    #[cfg(feature = "durable")]
    pub(crate) fn all(&self) -> impl Iterator<Item = Version> + '_ {
        self.by_name.values().flatten().copied()
    }

    /// Version `version` of `name` (`None`: the newest), taking a `D`.
    pub(crate) fn pick<D: 'static>(
        &self,
        name: &str,
        version: Option<u32>,
    ) -> Result<&'static Graph<Erased>, EngineError> {
        let versions = self.of_name(name);
        let found = match version {
            None => versions.last(),
            Some(n) => versions.iter().find(|v| v.graph.version == n),
        };
        match found {
            Some(found) => found.taking::<D>(),
            None => Err(self.unknown(name, version)),
        }
    }

    /// Why `name` (at `version`) is not registered: what is.
    fn unknown(&self, name: &str, version: Option<u32>) -> EngineError {
        let versions = self.of_name(name);
        let known = match versions.is_empty() {
            true => {
                let mut names: Vec<&str> = self.names().collect();
                names.sort_unstable();
                match names.is_empty() {
                    true => "no process is registered: register it first".to_string(),
                    false => format!("registered processes: {}", names.join(", ")),
                }
            }
            false => {
                let numbers: Vec<String> = versions
                    .iter()
                    .map(|v| v.graph.version.to_string())
                    .collect();
                format!("registered versions: {}", numbers.join(", "))
            }
        };
        EngineError::UnknownVersion {
            process: name.to_string(),
            version,
            known,
        }
    }
}

impl Engine {
    /// Register `process` as a version of its name (README, "Versions"): a start
    /// by name ([`start_newest`](Self::start_newest),
    /// [`start_version`](Self::start_version)) can take it, and a deploy of a newer
    /// version of its name replaces its deployments. Registering one version again
    /// does nothing; another model claiming the number of a registered version of
    /// its name is [`EngineError::VersionTaken`]. ([`Engine::start`] of a process
    /// needs no registration.)
    ///
    /// ```
    /// # use thresh::{process, Engine, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Order { pub total: u64 }
    /// process! {
    ///     pub ORDER_V1: Order = "order" version 1 {
    ///         start s; task price = |o| async move { o.total = 10; Ok(()) }; end e;
    ///         s -> price -> e;
    ///     }
    ///     pub ORDER_V2: Order = "order" version 2 {
    ///         start s; task price = |o| async move { o.total = 20; Ok(()) };
    ///         task discount = |o| async move { o.total -= 2; Ok(()) }; end e;
    ///         s -> price -> discount -> e;
    ///     }
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), thresh::EngineError> {
    /// let engine = Engine::new();
    /// engine.register(&ORDER_V1)?;
    /// engine.register(&ORDER_V2)?;
    /// let newest = engine.start_newest("order", Order::default()).await?;
    /// assert_eq!(newest.outcome().await.completed().unwrap().total, 18);
    /// let first = engine.start_version("order", 1, Order::default()).await?;
    /// assert_eq!(first.outcome().await.completed().unwrap().total, 10);
    /// # Ok(()) }
    /// ```
    pub fn register<D: ProcessData>(
        &self,
        process: &'static Process<D>,
    ) -> Result<(), EngineError> {
        self.inner
            .versions()
            .register(Version::of(process))
            .map(drop)
    }

    /// Start an instance of the newest registered version of the process `name`,
    /// as [`Engine::start`] does. [`EngineError::UnknownVersion`] if none is
    /// registered; [`EngineError::WrongData`] if that version's data is not a `D`.
    pub async fn start_newest<D: ProcessData>(
        &self,
        name: &str,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError> {
        let graph = self.inner.versions().pick::<D>(name, None)?;
        self.start_graph(graph, Erased::new(data))
            .map(InstanceHandle::typed)
    }

    /// Start an instance of version `version` of the process `name`, as
    /// [`Engine::start`] does; errors as [`start_newest`](Self::start_newest)'s.
    pub async fn start_version<D: ProcessData>(
        &self,
        name: &str,
        version: u32,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError> {
        let graph = self.inner.versions().pick::<D>(name, Some(version))?;
        self.start_graph(graph, Erased::new(data))
            .map(InstanceHandle::typed)
    }
}
