//! Escalations: whether one thrown in a scope ends it.

use crate::model::{Kind, Model};
use crate::parse::EventTrigger;

/// Whether an escalation thrown in `scope` may be caught by an interrupting catcher,
/// which ends the scope: an interrupting escalation event sub-process in it or around
/// it, or an interrupting escalation boundary on a sub-process around it.
pub(super) fn escalation_clears(model: &Model, scope: Option<usize>) -> bool {
    let mut s = scope;
    loop {
        let esp = model.members(s).any(|e| {
            model.nodes[e].kind == Kind::EventSubProcess
                && model.starts_in(Some(e)).iter().any(|&st| {
                    model.nodes[st].kind
                        == Kind::EventSubStart {
                            trigger: EventTrigger::Escalation,
                            interrupting: true,
                        }
                })
        });
        if esp {
            return true;
        }
        let Some(sub) = s else { return false };
        let boundary = model.nodes[sub].boundaries.iter().any(|&b| {
            model.nodes[b].kind
                == Kind::Boundary {
                    interrupting: true,
                    trigger: EventTrigger::Escalation,
                }
        });
        if boundary {
            return true;
        }
        s = model.nodes[sub].scope;
    }
}
