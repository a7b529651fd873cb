//! Stage 3: the compile-time rules, one module per family (see ARCHITECTURE.md,
//! "Compile-time checks"). Every rule reports into the context with the span of the
//! element at fault and keeps going, so one build shows every error.

mod assign;
mod boundary;
pub mod compensation;
mod complex;
mod events;
mod gateways;
mod graph;
mod link;
pub mod loops;
mod policy;
mod scopes;
pub mod soundness;

use crate::ctx::Ctx;
use crate::model::Model;

pub fn all(ctx: &Ctx, model: &Model) {
    graph::check(ctx, model);
    gateways::check(ctx, model);
    complex::check(ctx, model);
    events::check(ctx, model);
    link::check(ctx, model);
    boundary::check(ctx, model);
    scopes::check(ctx, model);
    loops::check(ctx, model);
    compensation::check(ctx, model);
    policy::check(ctx, model);
    assign::check(ctx, model);
}
