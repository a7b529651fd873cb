//! Typed references to what a caller can act on in a process, emitted by
//! [`process!`](crate::process) as constants beside the process's static — a struct
//! of the same name:
//!
//! | reference | its type | taken by |
//! |---|---|---|
//! | `ORDER::user.approve` | [`UserTask<D>`] | [`InstanceHandle::complete`](crate::InstanceHandle::complete), `fail_work`, `raise_error`, `raise_escalation` |
//! | `ORDER::message.receipt` | [`Message<P>`] (or [`AnyMessage`]) | [`Engine::publish`](crate::Engine::publish), `DurableEngine::publish` |
//! | `ORDER::signal.alarm` | [`Signal<P>`] (or [`AnySignal`]) | [`Engine::broadcast`](crate::Engine::broadcast), `DurableEngine::broadcast` |
//! | `ORDER::error.REJECTED` | [`ErrorCode<D>`] | `raise_error` |
//! | `ORDER::escalation.LATE` | [`EscalationCode<D>`] | `raise_escalation` |
//!
//! A misspelt name is a compile error (no such field, with the fields there are),
//! and so is a payload of another type than the catch's `apply` takes. A message's
//! `P` is the payload type the first catch whose `apply` closure names it takes; a
//! message no catch applies is `Message<()>` (its payload is never read); one whose
//! catches apply it only through a path to a fn (a type `process!` cannot name) is
//! an [`AnyMessage`], which takes any payload, as the string forms do. Signals alike.
//!
//! The string forms stay for names known only at run time (`complete("approve",
//! ..)`, [`Engine::publish_message`](crate::Engine::publish_message)); a user task
//! name the process does not have is then [`WorkError::NoSuchUserTask`](crate::WorkError::NoSuchUserTask),
//! listing the ones it has.
//!
//! Every reference is a name and a type: a constant, copied, never allocated, and
//! not part of the process's fingerprint. No cargo feature needed.

use std::fmt;
use std::marker::PhantomData;

/// A user task of a process over data `D` (`ORDER::user.approve`).
pub struct UserTask<D: 'static> {
    name: &'static str,
    marker: PhantomData<fn(D) -> D>,
}

/// A message a process's catches take, carrying a `P` (`ORDER::message.receipt`).
pub struct Message<P: 'static> {
    name: &'static str,
    marker: PhantomData<fn(P) -> P>,
}

/// A signal a process's catches take, carrying a `P` (`ORDER::signal.alarm`).
pub struct Signal<P: 'static> {
    name: &'static str,
    marker: PhantomData<fn(P) -> P>,
}

/// An error code a caller may raise on a user task of a process over `D`, which a
/// boundary or event sub-process of that process catches (`ORDER::error.REJECTED`).
pub struct ErrorCode<D: 'static> {
    name: &'static str,
    marker: PhantomData<fn(D) -> D>,
}

/// An escalation code a caller may raise on a user task of a process over `D`,
/// which a boundary or event sub-process of that process catches.
pub struct EscalationCode<D: 'static> {
    name: &'static str,
    marker: PhantomData<fn(D) -> D>,
}

/// A message whose catches' payload type `process!` could not name (their `apply`
/// is a path to a fn): it takes any payload, checked by the catch when it arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AnyMessage {
    name: &'static str,
}

/// A signal whose catches' payload type `process!` could not name: any payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AnySignal {
    name: &'static str,
}

/// The constructor, name, `Clone`, `Copy` and `Debug` of a reference whose type
/// parameter is only a marker (so none of them bounds it).
macro_rules! marked {
    ($($ty:ident: $what:literal),*) => {$(
        impl<T> $ty<T> {
            #[doc = concat!("The ", $what, " `name` (`process!` makes these).")]
            #[doc(hidden)]
            pub const fn new(name: &'static str) -> Self {
                $ty { name, marker: PhantomData }
            }

            #[doc = concat!("The ", $what, "'s name, as the string forms take it.")]
            pub const fn name(&self) -> &'static str {
                self.name
            }
        }

        impl<T> Clone for $ty<T> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T> Copy for $ty<T> {}

        impl<T> fmt::Debug for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}<{}>({:?})", stringify!($ty), std::any::type_name::<T>(), self.name)
            }
        }
    )*};
}

marked!(UserTask: "user task", Message: "message", Signal: "signal", ErrorCode: "error code", EscalationCode: "escalation code");

/// The constructor and name of a reference that takes any payload.
macro_rules! any {
    ($($ty:ident: $what:literal),*) => {$(
        impl $ty {
            #[doc = concat!("The ", $what, " `name` (`process!` makes these).")]
            #[doc(hidden)]
            pub const fn new(name: &'static str) -> Self {
                $ty { name }
            }

            #[doc = concat!("The ", $what, "'s name, as the string forms take it.")]
            pub const fn name(&self) -> &'static str {
                self.name
            }
        }
    )*};
}

any!(AnyMessage: "message", AnySignal: "signal");

/// What names a user task of a process over `D`: a [`UserTask<D>`] (checked at
/// compile time), or its name as a string (checked when it is used).
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not name a user task of a process over `{D}`",
    label = "not a user task of this instance's process",
    note = "name it by the process's typed reference, `PROCESS::user.name` (a `UserTask<{D}>`), or by its name as a string"
)]
pub trait UserTaskRef<D> {
    /// The user task's name.
    fn user_task(&self) -> &str;
}

impl<D> UserTaskRef<D> for UserTask<D> {
    fn user_task(&self) -> &str {
        self.name
    }
}

impl<D> UserTaskRef<D> for &str {
    fn user_task(&self) -> &str {
        self
    }
}

impl<D> UserTaskRef<D> for String {
    fn user_task(&self) -> &str {
        self
    }
}

impl<D> UserTaskRef<D> for &String {
    fn user_task(&self) -> &str {
        self
    }
}

/// What names an error (`Error = true`) or escalation code raised on a user task of
/// a process over `D`: an [`ErrorCode<D>`] or [`EscalationCode<D>`], or any string.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a code to raise on a user task of a process over `{D}`",
    label = "not a code of this instance's process",
    note = "name it by the process's typed reference, `PROCESS::error.CODE` or `PROCESS::escalation.CODE`, or by a string"
)]
pub trait CodeRef<D, Kind> {
    /// The code.
    fn code(self) -> String;
}

/// [`CodeRef`]'s kind for error codes.
#[derive(Debug)]
pub enum ForError {}

/// [`CodeRef`]'s kind for escalation codes.
#[derive(Debug)]
pub enum ForEscalation {}

impl<D> CodeRef<D, ForError> for ErrorCode<D> {
    fn code(self) -> String {
        self.name.to_string()
    }
}

impl<D> CodeRef<D, ForEscalation> for EscalationCode<D> {
    fn code(self) -> String {
        self.name.to_string()
    }
}

impl<D, K> CodeRef<D, K> for &str {
    fn code(self) -> String {
        self.to_string()
    }
}

impl<D, K> CodeRef<D, K> for String {
    fn code(self) -> String {
        self
    }
}

impl<D, K> CodeRef<D, K> for &String {
    fn code(self) -> String {
        self.clone()
    }
}

/// A message reference whose catches take a `P`: [`Message<P>`], or an
/// [`AnyMessage`] (any `P`).
#[diagnostic::on_unimplemented(
    message = "the message `{Self}` does not carry a `{P}`",
    label = "its catches take another payload type",
    note = "a `Message<T>` is published with a `T`: the type its catch's `apply` takes"
)]
pub trait MessageRef<P> {
    /// The message's name.
    fn message(&self) -> &'static str;
}

impl<P> MessageRef<P> for Message<P> {
    fn message(&self) -> &'static str {
        self.name
    }
}

impl<P> MessageRef<P> for AnyMessage {
    fn message(&self) -> &'static str {
        self.name
    }
}

/// A signal reference whose catches take a `P`: [`Signal<P>`], or an [`AnySignal`]
/// (any `P`).
#[diagnostic::on_unimplemented(
    message = "the signal `{Self}` does not carry a `{P}`",
    label = "its catches take another payload type",
    note = "a `Signal<T>` is broadcast with a `T`: the type its catch's `apply` takes"
)]
pub trait SignalRef<P> {
    /// The signal's name.
    fn signal(&self) -> &'static str;
}

impl<P> SignalRef<P> for Signal<P> {
    fn signal(&self) -> &'static str {
        self.name
    }
}

impl<P> SignalRef<P> for AnySignal {
    fn signal(&self) -> &'static str {
        self.name
    }
}
