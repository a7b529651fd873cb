//! What a node, a flow and a node's kind say of themselves: the accessors a graph is
//! read through (its fields are for the expansion of `process!`).

use super::*;

impl<D> Node<D> {
    /// The node's identifier in the `process!` block.
    pub fn id(&self) -> &'static str {
        self.id
    }

    /// The element's name in the diagram it was imported from (empty when it has
    /// none, or was written inline).
    pub fn name(&self) -> &'static str {
        self.label
    }

    /// The BPMN element type the diagram it was imported from gives it (`sendTask`,
    /// `manualTask`, ...; empty for an inline process).
    pub fn element(&self) -> &'static str {
        self.tag
    }

    /// The node's doc comment.
    pub fn doc(&self) -> &'static str {
        self.doc
    }

    /// The node's kind, as a BPMN keyword (`task`, `parallel`, ...).
    pub fn keyword(&self) -> &'static str {
        match self.kind {
            NodeKind::Start => "start",
            NodeKind::End => "end",
            NodeKind::Terminate => "end (terminate)",
            NodeKind::Task(_) => "task",
            NodeKind::Exclusive => "exclusive",
            NodeKind::Parallel => "parallel",
            NodeKind::Inclusive { .. } => "inclusive",
            NodeKind::Complex { .. } => "complex",
            NodeKind::Catch(_) => "catch",
            NodeKind::Receive(_) => "receive",
            NodeKind::User => "user",
            NodeKind::Throw(_) => "throw",
            NodeKind::ThrowEnd(_) => "end (throw)",
            NodeKind::EventGate => "event_based",
            NodeKind::Link => "link",
            NodeKind::StartEvent(_) => "start (event)",
            NodeKind::InstantiatingGate { .. } => "event_based (instantiating)",
            NodeKind::Boundary { .. } => "boundary",
            NodeKind::ErrorEnd { .. } => "end (error)",
            NodeKind::Escalate { end: false, .. } => "throw (escalation)",
            NodeKind::Escalate { end: true, .. } => "end (escalation)",
            NodeKind::SubProcess { .. } => "subprocess",
            NodeKind::EventSubProcess { .. } => "event_subprocess",
            NodeKind::EventSubStart { .. } => "start (event sub-process)",
            NodeKind::Call(_) => "call",
            NodeKind::Compensate { end: false, .. } => "throw (compensation)",
            NodeKind::Compensate { end: true, .. } => "end (compensation)",
            NodeKind::CancelEnd => "end (cancel)",
            NodeKind::CompensationBoundary { .. } => "boundary (compensation)",
            NodeKind::CancelBoundary { .. } => "boundary (cancel)",
            NodeKind::CompensationStart => "start (compensation)",
        }
    }

    /// Incoming flows, in declaration order.
    pub fn incoming(&self) -> &'static [FlowIdx] {
        self.incoming
    }

    /// Outgoing flows, in declaration order.
    pub fn outgoing(&self) -> &'static [FlowIdx] {
        self.outgoing
    }

    /// Whether this node synchronises arriving tokens (a converging parallel or
    /// inclusive gateway).
    pub(crate) fn is_sync_join(&self) -> bool {
        self.incoming.len() > 1
            && matches!(
                self.kind,
                NodeKind::Parallel | NodeKind::Inclusive { .. } | NodeKind::Complex { .. }
            )
    }
}

impl<D> Flow<D> {
    /// The id of the diagram's sequence flow it was imported from (empty for an
    /// inline process: the exports make one).
    pub fn id(&self) -> &'static str {
        self.id
    }

    /// The flow's name in that diagram (empty when none).
    pub fn name(&self) -> &'static str {
        self.label
    }

    /// Source node index.
    pub fn source(&self) -> NodeIdx {
        self.source
    }

    /// Target node index.
    pub fn target(&self) -> NodeIdx {
        self.target
    }

    /// Whether the flow carries a condition.
    pub fn is_conditional(&self) -> bool {
        self.condition.is_some()
    }
}

impl<D> NodeKind<D> {
    /// The trigger of a catch, receive task, boundary event or event start.
    pub(crate) fn trigger(&self) -> Option<&Trigger<D>> {
        match self {
            NodeKind::Catch(trigger)
            | NodeKind::Receive(trigger)
            | NodeKind::Boundary { trigger, .. }
            | NodeKind::EventSubStart { trigger, .. }
            | NodeKind::StartEvent(trigger) => Some(trigger),
            _ => None,
        }
    }
}
