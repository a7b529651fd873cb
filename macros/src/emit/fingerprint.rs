//! The model's fingerprint: a 64-bit hash that a durable store keeps beside each
//! instance, so an instance never resumes under a different model.
//!
//! The hash is FNV-1a 64 over a canonical byte encoding of the model, both written
//! here, so the value depends on nothing but the model (not on the Rust version, the
//! platform, or how the source is spaced).
//!
//! **In it**, in declaration order: the process's name (the header's `= "name"`,
//! else the static's identifier); every node — its id, its
//! scope (the index of the sub-process it is written in), its kind and the kind's
//! parameters (gateway kinds, an instantiating gate's `parallel`, a boundary's
//! activity and interrupting flag, an event sub-process start's interrupting flag,
//! an escalation's `end`, a compensation throw's `end` and activity, a compensation
//! boundary's handler, a call activity's called process (by name; its `input` and
//! `output` mappings are code), a complex gateway's activation triples: count, required
//! flows by name, whether it has a condition and the condition's text), and its
//! event (the trigger kind, the message, signal or link name, the error or
//! escalation code, the timer's form and the text of its expressions, a
//! conditional event's condition text and `on` fields); every flow — source and
//! target (node indices), whether it is a link's direct edge, whether it has a
//! condition and the condition's text, whether it is the default; then, only for
//! activities with a loop or multi-instance marker (so a model without one hashes
//! as before markers existed), the node index, the marker (multi-instance:
//! `sequential`, `each` or `count` with its text, the completion condition's text,
//! whether it has an output mapping; standard loop: `test_before`, the condition's
//! text, `max`), and every `#[item]` task with whether it is `#[item(output)]`;
//! last, only for a version past 1, `version` and the number (so a process with no
//! version, or version 1, hashes as before versions existed, and two versions of
//! one model differ).
//!
//! **Not in it**: anything that is code rather than model — task handlers, message
//! keys, `apply` and `payload` mappings (their bodies, and whether they are given),
//! a task's `spawn` marker (where its handler runs, not what the model does) —
//! and doc comments, attributes, the visibility and the data type.
//!
//! The text of an expression is its token sequence: each identifier, literal and
//! punctuation mark (with whether it is joined to a following mark, as in `&&`),
//! and each group's delimiters — whitespace and comments do not count.
//!
//! Every value is encoded unambiguously: a string as its length (8 bytes, little
//! endian) and its UTF-8 bytes, a number as 8 bytes little endian, a flag as one byte,
//! an optional value as a flag then the value, a list as its length then its items;
//! each kind and trigger by a fixed name (not by its position in an enum), after a
//! version string that changes whenever the encoding does.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

use crate::model::{Flow, Kind, Model, Node};
use crate::parse::{EventAst, EventTrigger, TimerAst};

/// Starts every encoding; bump it when the encoding changes.
const VERSION: &str = "thresh-fingerprint/1";

/// The fingerprint of `model`.
pub fn of(model: &Model) -> u64 {
    let mut h = Fnv::new();
    h.str(VERSION);
    h.str(&model.process_name);
    h.len(model.nodes.len());
    for node in &model.nodes {
        h.node(node);
    }
    h.len(model.flows.len());
    for flow in &model.flows {
        h.flow(flow);
    }
    h.loops(model);
    // Last, and only past 1: a process that declares no version (or version 1)
    // keeps the fingerprint it had before versions were.
    if model.version != 1 {
        h.str("version");
        h.len(usize::try_from(model.version).unwrap_or(usize::MAX));
    }
    h.0
}

/// FNV-1a, 64 bits, fed with the encoding as it is written.
struct Fnv(u64);

impl Fnv {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Fnv(Self::OFFSET)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }

    fn flag(&mut self, b: bool) {
        self.bytes(&[u8::from(b)]);
    }

    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes(s.as_bytes());
    }

    fn index(&mut self, i: Option<usize>) {
        self.flag(i.is_some());
        if let Some(i) = i {
            self.len(i);
        }
    }

    fn text(&mut self, s: Option<&syn::LitStr>) {
        self.flag(s.is_some());
        if let Some(s) = s {
            self.str(&s.value());
        }
    }

    fn expr(&mut self, e: Option<&syn::Expr>) {
        self.flag(e.is_some());
        if let Some(e) = e {
            self.tokens(e.to_token_stream());
        }
    }

    /// An expression's tokens, as the module's doc says.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut tokens = tokens.into_iter().peekable();
        while let Some(token) = tokens.next() {
            match token {
                TokenTree::Ident(i) => {
                    self.bytes(b"i");
                    self.str(&i.to_string());
                }
                TokenTree::Literal(l) => {
                    self.bytes(b"l");
                    self.str(&l.to_string());
                }
                TokenTree::Punct(p) => {
                    // Joined only to a mark that follows: `&&` is not `& &`.
                    let joined = p.spacing() == Spacing::Joint
                        && matches!(tokens.peek(), Some(TokenTree::Punct(_)));
                    self.bytes(if joined { b"j" } else { b"p" });
                    self.str(p.as_char().encode_utf8(&mut [0; 4]));
                }
                TokenTree::Group(g) => {
                    self.bytes(match g.delimiter() {
                        Delimiter::Parenthesis => b"(",
                        Delimiter::Bracket => b"[",
                        Delimiter::Brace => b"{",
                        Delimiter::None => b"_",
                    });
                    self.tokens(g.stream());
                    self.bytes(b")");
                }
            }
        }
    }

    fn node(&mut self, node: &Node) {
        self.str(&node.id.to_string());
        self.index(node.scope);
        let kind = match node.kind {
            Kind::Start => "start",
            Kind::End => "end",
            Kind::Terminate => "terminate",
            // A compensation handler and a transaction are kinds of their own; the
            // names of existing kinds are unchanged, so are existing fingerprints.
            Kind::Task if node.for_compensation => "compensation_handler",
            Kind::Task => "task",
            Kind::User => "user",
            Kind::Exclusive => "exclusive",
            Kind::Parallel => "parallel",
            Kind::Inclusive => "inclusive",
            Kind::Complex => "complex",
            Kind::EventGate => "event_based",
            Kind::InstantiatingGate { .. } => "instantiating_gate",
            Kind::Catch(_) => "catch",
            Kind::Receive => "receive",
            Kind::Throw(_) => "throw",
            Kind::ThrowEnd(_) => "throw_end",
            Kind::StartEvent(_) => "start_event",
            Kind::Boundary { .. } => "boundary",
            Kind::ErrorEnd => "error_end",
            Kind::Escalate { .. } => "escalate",
            Kind::SubProcess if node.transaction => "transaction",
            Kind::SubProcess => "subprocess",
            Kind::EventSubProcess => "event_subprocess",
            Kind::EventSubStart { .. } => "event_sub_start",
            Kind::Call => "call",
            Kind::Compensate { .. } => "compensate",
            Kind::CancelEnd => "cancel_end",
        };
        self.str(kind);
        match node.kind {
            Kind::InstantiatingGate { parallel } => self.flag(parallel),
            Kind::Boundary { interrupting, .. } => {
                self.index(node.attached_to);
                self.flag(interrupting);
            }
            Kind::EventSubStart { interrupting, .. } => self.flag(interrupting),
            Kind::Escalate { end } => self.flag(end),
            // The called process by name (its mappings are code, not model).
            Kind::Call => {
                let parts = node.handler.and_then(|b| crate::model::call::parts(b).ok());
                self.str(&parts.map(|p| p.name).unwrap_or_default());
            }
            Kind::Compensate { end } => {
                self.flag(end);
                self.index(node.compensate_target);
            }
            _ => {}
        }
        // A compensation boundary's association.
        if node.association.is_some() {
            self.index(node.handler_node);
        }
        self.len(node.activation.len());
        for triple in &node.activation {
            let count = triple.count.as_ref().and_then(|c| c.base10_parse().ok());
            self.u64(count.unwrap_or(0));
            self.len(triple.require.len());
            for required in &triple.require {
                self.str(&required.to_string());
            }
            self.expr(triple.when.as_ref());
        }
        self.flag(node.event.is_some());
        if let Some(event) = &node.event {
            self.event(event);
        }
    }

    fn event(&mut self, event: &EventAst) {
        self.str(match event.trigger {
            EventTrigger::Message => "message",
            EventTrigger::Signal => "signal",
            EventTrigger::Timer => "timer",
            EventTrigger::Link => "link",
            EventTrigger::Condition => "condition",
            EventTrigger::Error => "error",
            EventTrigger::Escalation => "escalation",
            EventTrigger::Compensation => "compensation",
            EventTrigger::Cancel => "cancel",
        });
        self.text(event.name.as_ref());
        self.text(event.code.as_ref());
        self.flag(event.timer.is_some());
        match &event.timer {
            Some(TimerAst::After(after)) => {
                self.str("after");
                self.expr(Some(after));
            }
            Some(TimerAst::At(at)) => {
                self.str("at");
                self.expr(Some(at));
            }
            Some(TimerAst::Every { every, times }) => {
                self.str("every");
                self.expr(Some(every));
                self.expr(times.as_ref());
            }
            Some(TimerAst::FromData(closure)) => {
                self.str("data");
                self.expr(Some(closure));
            }
            None => {}
        }
        self.expr(event.condition.as_ref());
        let on = event.on.iter().flat_map(|(_, _, fields)| fields);
        self.len(on.clone().count());
        for field in on {
            self.str(&field.to_string());
        }
    }

    /// The loop and multi-instance markers, and `#[item]` tasks (nothing at all for
    /// a model without them).
    fn loops(&mut self, model: &Model) {
        use crate::parse::loops::LoopAstKind;
        for (n, node) in model.nodes.iter().enumerate() {
            if let Some(marker) = &node.looping {
                self.str("loop");
                self.len(n);
                match &marker.kind {
                    LoopAstKind::Multi(m) => {
                        self.str("multi_instance");
                        self.flag(m.sequential.is_some());
                        self.expr(m.each.as_ref().map(|(_, e)| e));
                        self.expr(m.count.as_ref().map(|(_, e)| e));
                        self.expr(m.completion.as_ref().map(|(_, e)| e));
                        self.flag(m.output.is_some());
                    }
                    LoopAstKind::Standard(l) => {
                        self.str("standard_loop");
                        self.flag(l.test_before.is_some());
                        self.expr(l.condition.as_ref().map(|(_, e)| e));
                        self.str(
                            &l.max
                                .as_ref()
                                .map(|(_, m)| m.to_string())
                                .unwrap_or_default(),
                        );
                    }
                }
            }
            if node.item.is_some() {
                self.str("item");
                self.len(n);
                self.flag(crate::check::loops::is_output_task(model, n));
            }
        }
    }

    fn flow(&mut self, flow: &Flow) {
        self.len(flow.source);
        self.len(flow.target);
        self.flag(flow.link);
        self.expr(flow.condition);
        self.flag(flow.is_default());
    }
}

#[cfg(test)]
mod tests {
    use super::Fnv;

    /// The published FNV-1a 64 test vectors.
    #[test]
    fn fnv_1a_64() {
        for (input, hash) in [
            ("", 0xcbf2_9ce4_8422_2325),
            ("a", 0xaf63_dc4c_8601_ec8c),
            ("foobar", 0x8594_4171_f739_67e8),
        ] {
            let mut h = Fnv::new();
            h.bytes(input.as_bytes());
            assert_eq!(h.0, hash, "{input:?}");
        }
    }

    /// `&&` and `& &` are different expressions; spacing before a name is not.
    #[test]
    fn tokens_keep_joined_marks_only() {
        let text = |s: &str| {
            let mut h = Fnv::new();
            h.tokens(s.parse().expect("tokens"));
            h.0
        };
        assert_ne!(text("a && b"), text("a & &b"));
        assert_eq!(text("a&&b"), text("a  &&  b"));
        assert_eq!(text("|d| d.total > 100"), text("|d|d.total>100"));
        assert_ne!(text("f(x)"), text("f[x]"));
    }
}
