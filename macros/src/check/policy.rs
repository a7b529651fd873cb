//! Retry policies and timeouts (`task t = h: retry(..) | timeout(..);`): only on a
//! task, which runs a handler to try again, and `retry(..)` on a call activity,
//! which tries starting its child again; at least one attempt; a timeout that
//! lets an attempt run; a backoff that grows, by a multiplier of at least 1, with
//! jitter a fraction.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};

pub fn check(ctx: &Ctx, model: &Model) {
    for node in &model.nodes {
        let Some(policy) = &node.policy else {
            continue;
        };
        if node.kind == Kind::Call {
            // A call activity retries starting its child; the child's run is no
            // attempt to cut short.
            if let Some(timeout) = &policy.timeout {
                ctx.error_at(
                    timeout.span,
                    format!(
                        "`{id}` is a call activity: `retry(..)` retries starting its child, but its child's run is no attempt a `timeout(..)` can cut — put the timeout on the child's tasks, or a timer boundary on `{id}` to leave it after a while",
                        id = node.id,
                    ),
                );
            }
        } else if node.kind != Kind::Task {
            ctx.error_at(
                policy.at,
                format!(
                    "`{id}` is {what}, which runs no handler to try again: `retry(..)` and `timeout(..)` go on a task, `task {id} = handler: retry(3) | timeout(30s);` (and `retry(..)` on a call activity) — drop them here, or put them on the task that does the work",
                    id = node.id,
                    what = node.kind.describe_with_article(),
                ),
            );
            continue;
        }
        if let Some(retry) = &policy.retry {
            if retry.attempts == 0 {
                ctx.error_at(
                    retry.attempts_span,
                    format!("`retry(0)` allows no attempt at all: the count is the attempts in all, the first included — `retry(1)` never retries, `retry(3)` tries `{}` up to three times", node.id),
                );
            }
            if let Some((first, last)) = &retry.backoff {
                if first.millis > last.millis {
                    ctx.error_at(
                        last.span,
                        "the backoff's longest wait is shorter than its first: write `backoff = FIRST..LONGEST`, e.g. `backoff = 1s..5min`",
                    );
                }
            }
            if let Some((multiplier, span)) = retry.multiplier {
                if !(multiplier >= 1.0 && multiplier.is_finite()) {
                    ctx.error_at(
                        span,
                        format!("a multiplier of {multiplier} would shrink the waits: each wait is the one before times the multiplier, at least 1 (`multiplier = 1` waits alike, `multiplier = 2` doubles)"),
                    );
                }
            }
            if let Some((jitter, span)) = retry.jitter {
                if !(0.0..=1.0).contains(&jitter) {
                    ctx.error_at(
                        span,
                        format!("a jitter of {jitter} is no fraction: each wait moves by up to that fraction of itself, from 0 (none) to 1 (`jitter = 0.1`: ±10 %)"),
                    );
                }
            }
        }
        if let Some(timeout) = &policy.timeout {
            if timeout.millis == 0 {
                ctx.error_at(
                    timeout.span,
                    format!("a zero timeout cancels every attempt of `{}` before it runs: give the longest an attempt may take, `timeout(30s)`, or drop the timeout to let attempts run as long as they need", node.id),
                );
            }
        }
    }
}
