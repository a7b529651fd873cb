//! How a node of several runs (feature `postgres`): [`NodeConfig`], and a fresh
//! node id.

use std::time::Duration;

use crate::store::DEFAULT_SCHEMA;

/// How a node of several runs ([`DurableEngine::connect_with`](super::DurableEngine::connect_with)).
///
/// Needs the `postgres` feature.
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub struct NodeConfig {
    /// The store's schema. Default [`DEFAULT_SCHEMA`].
    pub schema: String,
    /// This node's id: unique among the nodes, never reused (a restarted process is
    /// a new node). Default: `host-pid-time`.
    pub node_id: Option<String>,
    /// How long a lease lasts without renewal; renewed every third of it. A dead
    /// node's instances are taken over by the others after at most this. Default 10 s.
    pub lease: Duration,
    /// The safety-net poll for stored messages (woken earlier by `NOTIFY`). Default
    /// 500 ms.
    pub poll: Duration,
    /// How many expired instances one takeover statement takes. Default 500.
    pub takeover_batch: usize,
    /// How many instance and message ids a node reserves at a time. Default 2^32.
    pub id_block: u64,
    /// The engine's own settings: the broker's bound and the time-to-live of
    /// published messages (how long one waits in the store for its catch; default
    /// 60 s), history, call depth.
    pub engine: crate::EngineConfig,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            schema: DEFAULT_SCHEMA.to_string(),
            node_id: None,
            lease: Duration::from_secs(10),
            poll: Duration::from_millis(500),
            takeover_batch: 500,
            id_block: 1 << 32,
            engine: crate::EngineConfig::default(),
        }
    }
}

/// A fresh node id: the host, the process and the time it started.
pub(super) fn fresh_node_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".to_string());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{host}-{}-{nanos:x}", std::process::id())
}
