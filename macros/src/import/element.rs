//! What each element of the file becomes: its keyword (or why thresh does not run it)
//! and its declaration, with its binding.

use super::read::{Def, Element};
use super::spec::clone_spec;
use super::Importer;
use crate::parse::NodeAst;

/// What thresh makes of a BPMN element, or why it does not run it.
pub(super) fn keyword(e: &Element) -> Result<&'static str, String> {
    let events = [
        "startEvent",
        "endEvent",
        "intermediateCatchEvent",
        "intermediateThrowEvent",
        "boundaryEvent",
    ];
    if events.contains(&e.tag.as_str()) {
        if e.defs.len() > 1 {
            return Err(format!("`{}` has {} event definitions (a multiple event), which thresh does not run; give it one", e.id, e.defs.len()));
        }
        if let Some(Def::Other(other)) = e.defs.first() {
            return Err(format!("`{}` has a `{other}`, which thresh does not run; thresh's events are message, signal, timer, conditional, link, error, escalation, terminate, compensation and cancel", e.id));
        }
    }
    Ok(match e.tag.as_str() {
        "startEvent" => "start",
        "endEvent" => "end",
        "intermediateCatchEvent" => "catch",
        // A none intermediate event (a milestone) and a manual task: passed at once.
        _ if completes_at_once(e) => "task",
        "intermediateThrowEvent" => "throw",
        "boundaryEvent" => "boundary",
        "task" | "serviceTask" | "scriptTask" | "sendTask" | "businessRuleTask" => "task",
        "userTask" => "user",
        "receiveTask" => "receive",
        "exclusiveGateway" => "exclusive",
        "parallelGateway" => "parallel",
        "inclusiveGateway" => "inclusive",
        "complexGateway" => "complex",
        "eventBasedGateway" => "event_based",
        "subProcess" if e.attrs.get("triggeredByEvent").is_some_and(|v| v == "true") => {
            "event_subprocess"
        }
        "subProcess" => "subprocess",
        "callActivity" => "call",
        "transaction" => "transaction",
        "adHocSubProcess" => {
            return Err(format!(
                "`{}` is a `{}`, which thresh does not run; make it a plain sub-process",
                e.id, e.tag
            ))
        }
        other => {
            return Err(format!(
                "`{}` is a `bpmn:{other}`, which thresh does not run",
                e.id
            ))
        }
    })
}

/// Whether `name` reads as a process static's (`SHIPPING`, `ORDER_V2`): capitals,
/// digits and `_`.
fn is_static_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// An element BPMN passes at once: a manual task (done by someone outside the
/// process, who reports nothing back) and a none intermediate event (a milestone).
/// Each runs as a task whose handler does nothing, so it can still hold boundaries;
/// a binding may give it a handler.
pub(super) fn completes_at_once(e: &Element) -> bool {
    e.tag == "manualTask"
        || matches!(
            e.tag.as_str(),
            "intermediateThrowEvent" | "intermediateCatchEvent"
        ) && e.defs.is_empty()
}

impl Importer<'_> {
    /// The declaration of element `e` as `keyword`, with its binding.
    pub(super) fn node(
        &self,
        e: &Element,
        keyword: &'static str,
        binding: Option<&NodeAst>,
    ) -> Option<NodeAst> {
        let mut binding = binding;
        if let Some(b) = binding {
            if b.keyword != keyword {
                let shown = match keyword {
                    "task" => format!("`task {} = handler;`", e.id),
                    "user" => format!(
                        "`user {}` (a user task needs no binding: leave it out)",
                        e.id
                    ),
                    _ => format!("`{keyword} {} ...;`", e.id),
                };
                self.ctx.error(&b.keyword, format!("`{}` is a `bpmn:{}` in the diagram, which thresh runs as `{keyword}`, not `{}`; bind it as {shown}, or change the element's type in the modeler", e.id, e.tag, b.keyword));
                // The element as the file has it, without the binding: the graph
                // stays whole.
                binding = None;
            }
        }
        if let Some(b) = binding {
            if let Some(on) = &b.attached {
                self.ctx.error(on, format!("the diagram attaches `{}` to its activity (`attachedToRef`); leave `on ...` out of the binding", e.id));
            }
            if let Some(label) = &b.label {
                self.ctx.error(label, format!("the diagram names `{}`; rename it in the modeler, and leave the name out of the binding", e.id));
            }
            if let Some((kw, _)) = &b.kind {
                self.ctx.error(kw, format!("the diagram gives `{}`'s type (`bpmn:{}`); change it in the modeler, and leave `kind(..)` out of the binding", e.id, e.tag));
            }
            if let Some(ni) = &b.non_interrupting {
                self.ctx.error(ni, format!("the diagram says whether `{}` interrupts (`cancelActivity`, `isInterrupting`); leave `non_interrupting` out of the binding", e.id));
            }
        }
        let mut node = NodeAst {
            attrs: binding.map(|b| b.attrs.clone()).unwrap_or_default(),
            keyword: self.ident(keyword),
            id: self.id(&e.id),
            handler: binding.and_then(|b| b.handler.clone()).or_else(|| {
                // An empty sub-process, refused, too: so nothing more is reported.
                (completes_at_once(e) || e.empty).then(|| {
                    syn::parse2(self.respan(quote::quote!(|_| async move { Ok(()) })))
                        .expect("a closure")
                })
            }),
            spec: None,
            more: Vec::new(),
            attached: None,
            non_interrupting: None,
            association: None,
            scope: None,
            label: None,
            kind: None,
            // A user task's assignment is the binding's to give (the diagram's
            // extensions are not read).
            assign: binding.map(|b| b.assign.clone()).unwrap_or_default(),
        };
        self.marker(e, keyword, &mut node.attrs);
        let attr = |name: &str| e.attrs.get(name).map(String::as_str);
        if keyword == "boundary" {
            match attr("attachedToRef") {
                Some(host) if !host.is_empty() => node.attached = Some(self.id(host)),
                _ => {
                    self.error(&e.id, format!("boundary event `{}` is attached to nothing (`attachedToRef`); attach it to an activity in the modeler", e.id));
                    return None;
                }
            }
            if attr("cancelActivity") == Some("false") {
                node.non_interrupting = Some(self.ident("non_interrupting"));
            }
            // A compensation boundary's handler: the target of its association.
            if matches!(e.defs.first(), Some(Def::Compensate(_))) {
                let handler = self
                    .diagram
                    .associations
                    .iter()
                    .find(|(source, _)| *source == e.id)
                    .map(|(_, target)| target.as_str());
                match handler {
                    Some(h) if !h.is_empty() => node.association = Some(self.id(h)),
                    _ => {
                        self.error(&e.id, format!("compensation boundary `{}` has no association to its handler; draw one in the modeler to the task marked for compensation that undoes `{}`", e.id, attr("attachedToRef").unwrap_or("its activity")));
                        return None;
                    }
                }
            }
        }
        // A call activity bound to nothing calls the process its `calledElement`
        // names: `call ship = SHIPPING;` (a binding gives the mappings).
        if keyword == "call" && node.handler.is_none() {
            match attr("calledElement") {
                // Only a name in capitals is taken for a static's: any other one
                // (`shipping`, `Process_1`, a process id of the modeler's) would
                // leave rustc's bare "cannot find value" on the file's literal,
                // naming neither the call activity nor its line.
                Some(called) if super::ids::is_ident(called) && is_static_name(called) => {
                    let path: syn::Path = self.ident(called).into();
                    node.handler = Some(syn::Expr::Path(syn::ExprPath {
                        attrs: Vec::new(),
                        qself: None,
                        path,
                    }));
                }
                Some(called) => {
                    let what = match super::ids::is_ident(called) {
                        true => "which is no process static's name (a static is named in capitals, `SHIPPING`)",
                        false => "which is no Rust name",
                    };
                    let id = self.ids.ident(&e.id);
                    self.error(&e.id, format!("call activity `{}` calls `{called}` (its `calledElement`), {what}; bind the called process's static: `call {id} = SHIPPING;`, with its mappings `call {id} = SHIPPING(input = |data| ..., output = |data, child| ...);`", e.id));
                    return None;
                }
                // No binding and no callee: `model` says how to bind one.
                None => {}
            }
        }
        if keyword == "start" && attr("isInterrupting") == Some("false") {
            node.non_interrupting = Some(self.ident("non_interrupting"));
        }
        let from_file = self.file_spec(e, keyword, binding.is_some_and(|b| b.spec.is_some()))?;
        match binding.and_then(|b| b.spec.as_ref().map(|s| (s, &b.more))) {
            Some((spec, more)) => {
                if let Some(file) = &from_file {
                    self.agrees(e, file, spec);
                }
                node.spec = Some(clone_spec(spec));
                node.more = more.iter().map(clone_spec).collect();
            }
            None => {
                if let Some(specs) = from_file {
                    let mut specs = specs.into_iter();
                    node.spec = specs.next();
                    node.more = specs.collect();
                }
            }
        }
        Some(node)
    }
}
