//! A process registered with the console (`Console::process`): what the console
//! does with its data, typed once here and erased behind [`Registered`], so the
//! handlers deal in JSON only.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use serde_json::Value;

use super::engines::{ConsoleData, ConsoleEngine};
use super::error::ApiError;
use super::json::{Filter, Summary};
use crate::instance::InstanceId;
use crate::query::Query;
use crate::retry::{Incident, IncidentId};
use crate::tasklist::TaskId;
use crate::{Process, Status};

pub(crate) type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, ApiError>> + Send + 'a>>;

/// One page of summaries as JSON, and the cursor of the next.
pub(crate) struct JsonPage {
    pub items: Vec<Summary>,
    pub next: Option<String>,
}

/// A registered process, its data type erased.
pub(crate) trait Registered<E>: Send + Sync {
    fn name(&self) -> &'static str;
    fn version(&self) -> u32;
    fn fingerprint(&self) -> u64;
    /// What the console names it by: its name, and past version 1 the version
    /// (`order`, `order@2`), so each version registered has pages of its own.
    fn key(&self) -> String {
        match self.version() {
            1 => self.name().to_string(),
            v => format!("{}@{v}", self.name()),
        }
    }
    /// Its elements' ids, in the model's order.
    fn elements(&self) -> Vec<&'static str>;
    fn list<'a>(&'a self, engine: &'a E, filter: &'a Filter) -> Boxed<'a, JsonPage>;
    fn count<'a>(
        &'a self,
        engine: &'a E,
        status: Option<Status>,
        incident: Option<bool>,
    ) -> Boxed<'a, u64>;
    fn one<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, Option<Summary>>;
    fn picture<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, Option<String>>;
    fn incidents<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, Vec<Incident>>;
    fn history<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, Option<crate::History>>;
    fn start<'a>(
        &'a self,
        engine: &'a E,
        key: Option<String>,
        data: Value,
    ) -> Boxed<'a, InstanceId>;
    fn complete<'a>(&'a self, engine: &'a E, id: TaskId, patch: Value) -> Boxed<'a, ()>;
    fn retry_with<'a>(&'a self, engine: &'a E, id: IncidentId, patch: Value) -> Boxed<'a, ()>;
    fn cancel<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, ()>;
}

pub(crate) struct Typed<D: 'static>(pub &'static Process<D>, pub PhantomData<fn() -> D>);

impl<D: ConsoleData> Typed<D> {
    fn query(&self, filter: &Filter) -> Result<Query<D>, ApiError> {
        let mut q = Query::of(self.0);
        for status in &filter.statuses {
            q = q.status(*status);
        }
        if let Some(at) = &filter.waiting_at {
            q = q.waiting_at(at.as_str());
        }
        if let Some(key) = &filter.key {
            q = q.key(key);
        }
        if let Some(open) = filter.incident {
            q = q.incident(open);
        }
        q = q.sort_by(filter.sort);
        if filter.descending {
            q = q.descending();
        }
        q = q.limit(filter.limit);
        if let Some(after) = &filter.after {
            q = q.after(after);
        }
        Ok(q)
    }

    /// The data of instance `id` as it last rested, as JSON.
    async fn data_of<E: ConsoleEngine>(
        &self,
        engine: &E,
        id: InstanceId,
    ) -> Result<Value, ApiError> {
        let page = engine.instances(&Query::of(self.0).id(id)).await?;
        let item = page.items.into_iter().next().ok_or_else(|| {
            ApiError::NotFound(format!(
                "no instance {id} of process `{}` is listed",
                self.0.name()
            ))
        })?;
        serde_json::to_value(&item.data).map_err(|e| ApiError::Internal(e.to_string()))
    }

    /// `patch` (a JSON merge patch) applied to `data`, read as a `D`.
    fn patched(&self, mut data: Value, patch: &Value) -> Result<D, ApiError> {
        merge(&mut data, patch);
        serde_json::from_value(data).map_err(|e| {
            ApiError::Unprocessable(format!(
                "the data does not read as the data of process `{}`: {e}",
                self.0.name()
            ))
        })
    }
}

/// RFC 7386 JSON merge patch: objects merge key by key, `null` removes, anything
/// else replaces.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            let Value::Object(target) = target else {
                return;
            };
            for (name, value) in fields {
                match value {
                    Value::Null => {
                        target.remove(name);
                    }
                    _ => merge(target.entry(name.clone()).or_insert(Value::Null), value),
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

impl<E: ConsoleEngine, D: ConsoleData> Registered<E> for Typed<D> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn version(&self) -> u32 {
        self.0.version()
    }

    fn fingerprint(&self) -> u64 {
        self.0.fingerprint()
    }

    fn elements(&self) -> Vec<&'static str> {
        self.0.graph().nodes.iter().map(|n| n.id).collect()
    }

    fn list<'a>(&'a self, engine: &'a E, filter: &'a Filter) -> Boxed<'a, JsonPage> {
        Box::pin(async move {
            let page = engine.instances(&self.query(filter)?).await?;
            let items = page
                .items
                .into_iter()
                .map(Summary::of)
                .collect::<Result<_, _>>()?;
            Ok(JsonPage {
                items,
                next: page.next,
            })
        })
    }

    fn count<'a>(
        &'a self,
        engine: &'a E,
        status: Option<Status>,
        incident: Option<bool>,
    ) -> Boxed<'a, u64> {
        Box::pin(async move {
            let mut q = Query::of(self.0);
            if let Some(status) = status {
                q = q.status(status);
            }
            if let Some(open) = incident {
                q = q.incident(open);
            }
            Ok(engine.count(&q).await?)
        })
    }

    fn one<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, Option<Summary>> {
        Box::pin(async move {
            let page = engine.instances(&Query::of(self.0).id(id)).await?;
            page.items.into_iter().next().map(Summary::of).transpose()
        })
    }

    fn picture<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, Option<String>> {
        Box::pin(async move { Ok(engine.picture(self.0, id).await?) })
    }

    fn history<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, Option<crate::History>> {
        Box::pin(async move { Ok(engine.history(self.0, id).await?) })
    }

    fn incidents<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, Vec<Incident>> {
        Box::pin(async move { Ok(engine.incidents_of(self.0, id).await?) })
    }

    fn start<'a>(
        &'a self,
        engine: &'a E,
        key: Option<String>,
        data: Value,
    ) -> Boxed<'a, InstanceId> {
        Box::pin(async move {
            let data: D = serde_json::from_value(data).map_err(|e| {
                ApiError::Unprocessable(format!(
                    "the data does not read as the data of process `{}`: {e}",
                    self.0.name()
                ))
            })?;
            Ok(engine.start(self.0, key, data).await?)
        })
    }

    fn complete<'a>(&'a self, engine: &'a E, id: TaskId, patch: Value) -> Boxed<'a, ()> {
        Box::pin(async move {
            // Checked against the data as the instance rests at the task (as it
            // does while the task is open), so a patch that does not read as a
            // `D` is refused before anything changes.
            let checked = self.patched(self.data_of(engine, id.instance).await?, &patch)?;
            let update = move |data: &mut D| {
                // The same patch over the live data (a parallel branch may have
                // changed other fields since); should that not read, what was
                // checked.
                let live = serde_json::to_value(&*data)
                    .ok()
                    .map(|mut v| {
                        merge(&mut v, &patch);
                        v
                    })
                    .and_then(|v| serde_json::from_value::<D>(v).ok());
                *data = live.unwrap_or(checked);
            };
            Ok(engine.complete_task(self.0, id, update).await?)
        })
    }

    fn retry_with<'a>(&'a self, engine: &'a E, id: IncidentId, patch: Value) -> Boxed<'a, ()> {
        Box::pin(async move {
            let data = self.patched(self.data_of(engine, id.instance).await?, &patch)?;
            Ok(engine.retry_with_data(id, data).await?)
        })
    }

    fn cancel<'a>(&'a self, engine: &'a E, id: InstanceId) -> Boxed<'a, ()> {
        Box::pin(async move { Ok(engine.cancel_instance(self.0, id).await?) })
    }
}
