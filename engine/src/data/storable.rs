//! What a durable engine can store: the bound its entry points name, so a type
//! without the serde derives is reported as such, with what to derive.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A type a durable engine can store — process data, a message's payload — as JSON:
/// `Serialize` and `DeserializeOwned`, which `#[derive(Serialize, Deserialize)]`
/// gives. Implemented for every such type; named by `DurableEngine::register`,
/// `start`, `deploy`, `watch` and `publish` so that a type without the derives is
/// one error saying what to derive.
///
/// Needs the `durable` feature.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored by a durable engine, which keeps it as JSON",
    label = "a durable engine stores this type",
    note = "derive both for it: `#[derive(serde::Serialize, serde::Deserialize)]` on `{Self}` (for a type of another crate, see whether that crate has a `serde` feature)"
)]
pub trait Storable: Serialize + DeserializeOwned {}

impl<T: Serialize + DeserializeOwned> Storable for T {}
