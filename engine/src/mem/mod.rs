//! The engine's memory primitives: every `unsafe` block of the crate is in this
//! module tree (`#![deny(unsafe_code)]` everywhere else, `lib.rs`). Each primitive
//! is small, generic over what it holds, and keeps its invariant behind a safe
//! API: code outside `mem` cannot break it, whatever it does.
//!
//! | primitive | what it is for | the invariant it relies on |
//! |---|---|---|
//! | [`cell::DataCell`] | an instance's committed data, changed in place when no task's snapshot shares it | no `Weak` of its `Arc` exists: the `Arc` never leaves the module |
//! | [`once::SetOnce`] | where an instance's end is left for its handles | one write, claimed by a compare-and-swap, published by a release store |
//! | [`shared::Shared`] | an end and its steps in one counted block | the last reference drops the contents once and frees with the recorded layout |
//! | [`intake`] | the loop's lock-free multi-producer queue | a cell is owned by its sender until published, by the receiver after the swap that takes it; links carry exposed provenance |
//! | [`run_box`] | a task run's box reused for the next run of the same layout | the spare is raw memory of the recorded layout, holding no value |
//! | [`vec`] | forgetting a history's steps that own nothing | forgetting is never unsound (at worst a leak) |
//!
//! # Safety
//! Each module states its contract in its doc and at each `unsafe` block
//! (`clippy::undocumented_unsafe_blocks` is denied). Every `Send`/`Sync` impl
//! here is bounded on what the type holds, so a field added later is checked by
//! the compiler. The unit tests of this tree run under a memory checker in CI
//! (AddressSanitizer on a nightly toolchain, `.ci/run`), and the intake under
//! loom.

pub(crate) mod cell;
pub(crate) mod intake;
pub(crate) mod once;
pub(crate) mod run_box;
pub(crate) mod shared;
pub(crate) mod vec;
