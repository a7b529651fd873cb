//! Soundness (ARCHITECTURE.md, "Soundness"): deadlocks, dead elements, lack of
//! synchronisation and improper completion, decided per scope on the control flow
//! alone — every data condition is a free choice, as in workflow-net soundness.
//!
//! It runs after every other check passed: on a model with errors its findings would
//! be guesses about a graph the user still has to mend.
//!
//! - [`net`]: a scope as a token game;
//! - [`explore`]: its reachable markings, with a budget;
//! - [`witness`]: the findings, each with the choices that lead to it;
//! - [`structural`]: what is still decided when the budget runs out.
//!
//! Every finding has a witness: a run the exploration found (or, for a dead element,
//! the complete exploration itself). A scope too large to explore fully gets the
//! findings its explored part proves, the structural ones, and a note in the static's
//! doc saying what may have been missed — never a finding without a run behind it.

mod explore;
mod net;
mod structural;
mod witness;

#[cfg(test)]
mod differential;
#[cfg(test)]
mod marked;
#[cfg(test)]
mod tests;

use crate::ctx::Ctx;
use crate::model::Model;

pub use explore::MAX_STATES;

/// Analyse every scope of `model`, reporting findings into `ctx`; the notes returned
/// say which scopes were too large to explore completely.
pub fn check(ctx: &Ctx, model: &Model) -> Vec<String> {
    let mut notes = Vec::new();
    for (scope, verdict) in analyse(model, MAX_STATES) {
        for finding in &verdict.findings {
            ctx.error(model.nodes[finding.at].id, &finding.message);
        }
        if !verdict.complete {
            let name = match scope {
                None => format!("`{}`", model.name),
                Some(s) => format!("`{}`", model.nodes[s].id),
            };
            notes.push(format!(
                "\n\nSoundness: {name} has more states than the analysis explores ({} markings), so it was checked in part: the deadlocks and lack of synchronisation it found on the way and the classic exclusive-split/parallel-join mismatches are reported; other deadlocks, multi-merges and dead elements may be missed.",
                verdict.states
            ));
        }
    }
    notes
}

/// One finding: the element at fault and what to tell the user.
pub struct Finding {
    pub at: usize,
    /// Read by the tests (the macro reports every class alike).
    #[allow(dead_code)]
    pub class: Class,
    pub message: String,
    /// For a deadlock or improper completion found by exploring: the choices on its
    /// run, each node with the flows it took (read by the differential generator).
    #[allow(dead_code)]
    pub choices: Vec<(usize, Box<[usize]>)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Class {
    Deadlock,
    ImproperCompletion,
    LackOfSync,
    Dead,
}

pub struct Verdict {
    pub findings: Vec<Finding>,
    pub complete: bool,
    pub states: usize,
}

/// The verdict on each scope (the process's top level first), exploring at most
/// `budget` markings per scope.
pub fn analyse(model: &Model, budget: usize) -> Vec<(Option<usize>, Verdict)> {
    model
        .scopes()
        .into_iter()
        .map(|scope| {
            let net = net::Net::new(model, scope);
            // With multi-merges, lack of synchronisation is looked for in the net where
            // they synchronise (`Net::synchronised`): their doubling is declared, and
            // what it sends on is no new one. Deadlocks and dead elements are the real
            // net's.
            let multi = net.nodes.iter().any(|&v| net.is_multi_merge(v));
            let ex = explore::run(&net, budget, !multi);
            let synchronised = multi.then(|| {
                let mut sync = net::Net::new(model, scope);
                sync.synchronised = true;
                let sx = explore::run(&sync, budget, true);
                (sync, sx)
            });
            let lacks = match &synchronised {
                Some((sync, sx)) => (sync, sx),
                None => (&net, &ex),
            };
            let mut findings = witness::findings(&net, &ex, lacks);
            if !ex.complete {
                structural::findings(&net, &mut findings);
            }
            let verdict = Verdict {
                findings,
                complete: ex.complete && lacks.1.complete,
                states: ex.states.len()
                    + synchronised.as_ref().map_or(0, |(_, sx)| sx.states.len()),
            };
            (scope, verdict)
        })
        .collect()
}
