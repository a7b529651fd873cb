//! An operations console a service mounts (feature `console`): [`router`] gives an
//! axum [`Router`](axum::Router) of HTML pages and a JSON API over an engine — the
//! processes registered with it, their instances (filtered, paginated, sorted), one
//! instance on its diagram with its data, open tasks and incidents, the task list,
//! the message buffer — and the operations on them: start, claim, unclaim,
//! complete, fail, retry. README, "Console"; ARCHITECTURE.md, "The console".
//!
//! ```no_run
//! # use thresh::{process, Engine, ProcessData};
//! # #[derive(Clone, Debug, Default, ProcessData, serde::Serialize, serde::Deserialize)]
//! # pub struct Order { pub n: u32 }
//! # process! { pub ORDER: Order { start s; user approve; end e; s -> approve -> e; } }
//! # async fn serve(engine: Engine) {
//! let console = thresh::console::router(engine).process(&ORDER).into_router();
//! // Nested under the service's own auth layer:
//! let app = thresh::console::axum::Router::new().nest("/console", console);
//! # }
//! ```
//!
//! The console holds no state of its own and does no work while nobody asks: each
//! request is the engine's own call ([`ConsoleEngine`]), so nothing bypasses the
//! engine's rules — a completion goes through `complete_task`, a retry through
//! `retry_with_data`. Data is read and written as JSON through the registered
//! process's serde impls: a change is a JSON merge patch over the data, refused
//! (422) unless the result reads as the process's data type.
//!
//! Safe behind the service's auth: state changes are POSTs that carry the
//! console's CSRF token (a form's `csrf` field, or the API's `x-csrf-token`
//! header; `GET /api/csrf` gives it — a page of another origin cannot read it), and
//! [`Console::read_only`] refuses every POST. Bad input is a 4xx with a message
//! (JSON or a page), never a panic.

mod api;
mod engines;
mod error;
mod json;
mod pages;
mod typed;

use std::hash::{BuildHasher, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

use axum::http::HeaderMap;

/// The axum the router is made with, for a service to nest it with the same
/// version (`thresh::console::axum::Router`).
pub use axum;
pub use engines::{ConsoleData, ConsoleEngine};
use error::ApiError;
use typed::{Registered, Typed};

use crate::Process;

/// A console over `engine`, to register processes with and turn into a
/// [`Router`](axum::Router) ([`Console::into_router`]). Feature `console`.
pub fn router<E: ConsoleEngine>(engine: E) -> Console<E> {
    Console {
        engine,
        processes: Vec::new(),
        read_only: false,
        token: new_token(),
        metrics: None,
    }
}

/// What renders the metrics page: the application's exporter.
pub(crate) type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// A console being set up: [`router`] makes it. Feature `console`.
pub struct Console<E: ConsoleEngine> {
    engine: E,
    processes: Vec<Box<dyn Registered<E>>>,
    read_only: bool,
    token: String,
    metrics: Option<Render>,
}

impl<E: ConsoleEngine> Console<E> {
    /// Show `process`'s instances and act on them, its data as JSON through its
    /// serde impls. A process registered twice is listed once; each version of a
    /// name is registered on its own (`.process(&ORDER_V1).process(&ORDER_V2)`)
    /// and named by the pages and the API as `order` (version 1) and `order@2`.
    pub fn process<D: ConsoleData>(mut self, process: &'static Process<D>) -> Self {
        if !self
            .processes
            .iter()
            .any(|p| p.fingerprint() == process.fingerprint())
        {
            self.processes.push(Box::new(Typed(process, PhantomData)));
        }
        self
    }

    /// Serve `GET /metrics` as Prometheus text from `render`: the application's
    /// exporter, which the engine's metrics (feature `metrics`) reach through the
    /// `metrics` facade — with `metrics-exporter-prometheus`,
    /// `.metrics(move || handle.render())` on its `PrometheusHandle`. Without it,
    /// `/metrics` is a 404 that says so.
    pub fn metrics(mut self, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.metrics = Some(Arc::new(render));
        self
    }

    /// Use `token` as the CSRF token, in place of the random one each console
    /// makes: for several replicas of a service behind one address, so a form one
    /// served is accepted by another. Keep it secret as a password; one shorter
    /// than 16 characters is ignored (the random one stays).
    pub fn csrf_token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        if token.chars().count() >= 16 {
            self.token = token;
        }
        self
    }

    /// Refuse every state change (403): a console to look, not to act.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The routes, to nest under the service's own (authenticated) router: pages
    /// at `/`, `/instances`, `/instances/{id}`, `/tasks`, `/messages`; the JSON API
    /// under `/api`; `/metrics` if [`Console::metrics`] gave a renderer (README,
    /// "Console").
    pub fn into_router(self) -> axum::Router {
        let shared = Arc::new(Shared {
            engine: self.engine,
            processes: self.processes,
            read_only: self.read_only,
            token: self.token,
            metrics: self.metrics,
        });
        api::routes::<E>()
            .merge(pages::routes::<E>())
            .fallback(pages::not_found)
            .with_state(shared)
    }
}

impl<E: ConsoleEngine> From<Console<E>> for axum::Router {
    fn from(console: Console<E>) -> Self {
        console.into_router()
    }
}

/// What every handler reads.
pub(crate) struct Shared<E> {
    engine: E,
    processes: Vec<Box<dyn Registered<E>>>,
    read_only: bool,
    token: String,
    metrics: Option<Render>,
}

pub(crate) type State<E> = axum::extract::State<Arc<Shared<E>>>;

impl<E: ConsoleEngine> Shared<E> {
    fn process(&self, name: &str) -> Result<&dyn Registered<E>, ApiError> {
        self.processes
            .iter()
            .find(|p| p.key() == name)
            .map(|p| &**p)
            .ok_or_else(|| {
                let known: Vec<String> = self.processes.iter().map(|p| p.key()).collect();
                ApiError::BadRequest(format!(
                    "no process `{name}` is registered with the console (registered: {})",
                    known.join(", ")
                ))
            })
    }

    /// A POST may change state: not in a read-only console, and only with the
    /// token (from the header, or a form's field).
    fn check_post(&self, headers: &HeaderMap, form: Option<&str>) -> Result<(), ApiError> {
        if self.read_only {
            return Err(ApiError::Forbidden(
                "the console is read-only: nothing can be changed from it".into(),
            ));
        }
        let given = headers
            .get("x-csrf-token")
            .and_then(|v| v.to_str().ok())
            .or(form);
        match given {
            Some(t) if constant_time_eq(t.as_bytes(), self.token.as_bytes()) => Ok(()),
            Some(_) => Err(ApiError::Forbidden(
                "the CSRF token is not this console's: reload the page (or GET /api/csrf)".into(),
            )),
            None => Err(ApiError::Forbidden(
                "a state change needs the console's CSRF token: the x-csrf-token header (GET /api/csrf gives it) or a form's csrf field".into(),
            )),
        }
    }

    /// The instance `id` of whichever registered process has it.
    async fn find(
        &self,
        id: crate::InstanceId,
    ) -> Result<(&dyn Registered<E>, json::Summary), ApiError> {
        for p in &self.processes {
            if let Some(summary) = p.one(&self.engine, id).await? {
                return Ok((&**p, summary));
            }
        }
        Err(ApiError::NotFound(format!(
            "no instance {id} is listed (unknown, of a process not registered with the console, or no longer kept)"
        )))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 128 random bits, as hex: std's `RandomState` is seeded from the OS.
fn new_token() -> String {
    let mut token = String::new();
    for i in 0..2u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(i);
        token += &format!("{:016x}", h.finish());
    }
    token
}
