//! The body of a process imported from a diagram (`from "file.bpmn" { bindings }`):
//! the bindings parsed here, and what the `import` stage keeps of the file beside the
//! tree.

use syn::parse::ParseStream;
use syn::{Attribute, Expr, Ident, Token};

use super::{parse_node_rest, NodeAst};
use crate::symbol::{FLOW, WHEN};

/// What a diagram says of its elements that the model does not need and the
/// exports and messages keep: ids as written, names, element types.
#[derive(Default)]
pub struct FileMeta {
    /// By the identifier the element has in the tree.
    pub nodes: std::collections::HashMap<String, NodeMeta>,
}

/// One element of a diagram, beside its identifier.
pub struct NodeMeta {
    /// Its id as the file writes it.
    pub written: String,
    /// Its `name` (empty: none).
    pub name: String,
    /// Its BPMN element type (`sendTask`, `manualTask`, ...).
    pub tag: String,
    /// Where the file draws it (`import/di.rs`; empty: nowhere).
    pub drawing: Vec<i32>,
}

/// A diagram's sequence flow: its id and name, kept by the exports.
#[derive(Clone)]
pub struct FlowMeta {
    pub id: String,
    /// Empty: none.
    pub name: String,
    /// Where the file draws it (`import/di.rs`; empty: nowhere).
    pub drawing: Vec<i32>,
}

/// The header's `from "file.bpmn" (process "Id")?` and the body's bindings.
pub struct ImportAst {
    pub path: syn::LitStr,
    /// `process "Id"`: which process of the file, when it has several.
    pub process: Option<syn::LitStr>,
    /// Element bindings, written like the inline DSL's declarations.
    pub nodes: Vec<Binding>,
    pub flows: Vec<FlowBinding>,
}

/// An element's binding: `task check = ...;`, or by the id as the file writes it when
/// that is no Rust identifier, `task "check-stock" = ...;`.
pub struct Binding {
    /// The element's id as written in the binding.
    pub written: String,
    /// The declaration; its `id` is spanned on the name or the literal.
    pub node: NodeAst,
}

/// `flow id when |data| ...;`: the condition of the diagram's flow `id`.
pub struct FlowBinding {
    /// The flow's id as written in the binding (`flow "Flow-1" when ...` for one that
    /// is no Rust identifier).
    pub written: String,
    /// Spanned on the name or the literal.
    pub id: Ident,
    pub when: Ident,
    pub condition: Expr,
}

/// The bindings of an imported process: element declarations (without flows or
/// blocks: the diagram has the structure) and `flow id when ...;`.
pub(super) fn parse_bindings(body: ParseStream, import: &mut ImportAst) -> syn::Result<()> {
    while !body.is_empty() {
        let attrs = body.call(Attribute::parse_outer)?;
        if body.peek(Ident) && body.fork().parse::<Ident>()? == FLOW {
            body.parse::<Ident>()?;
            let (written, id) = parse_ref(body)?;
            if !(body.peek(Ident) && body.fork().parse::<Ident>()? == WHEN) {
                return Err(body.error(format!(
                    "a flow binding gives the condition of a flow of the diagram: `flow {written} when |data| ...;` (a default flow is marked in the diagram)"
                )));
            }
            let when = body.parse()?;
            let condition = body.parse()?;
            body.parse::<Token![;]>()?;
            import.flows.push(FlowBinding {
                written,
                id,
                when,
                condition,
            });
            continue;
        }
        if !(body.peek(Ident) && (body.peek2(Ident) || body.peek2(syn::LitStr))) {
            return Err(body.error(
                "expected a binding: `task id = handler;` (`task \"id-as-written\" = handler;` for an id that is no Rust name), `catch id: message(\"name\", key = |data| ...);` or `flow id when |data| ...;` — the diagram has the elements and flows",
            ));
        }
        let keyword: Ident = body.parse()?;
        let (written, id) = parse_ref(body)?;
        let node = parse_node_rest(body, attrs, keyword, id)?;
        import.nodes.push(Binding { written, node });
    }
    Ok(())
}

/// A binding's reference to the file: a name, or the id as written in a string
/// literal (then an identifier spanned on the literal stands for it in the tree).
fn parse_ref(input: ParseStream) -> syn::Result<(String, Ident)> {
    if input.peek(syn::LitStr) {
        let lit: syn::LitStr = input.parse()?;
        return Ok((lit.value(), Ident::new("__written", lit.span())));
    }
    let id: Ident = input.parse()?;
    Ok((id.to_string(), id))
}
