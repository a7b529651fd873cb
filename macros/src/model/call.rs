//! A call activity's binding, `call ship = SHIPPING(input = |o| .., output = |o, s| ..);`:
//! the called process's static and its two typed mappings, read from the expression
//! written after the `=`. Both mappings are optional (`call audit = AUDIT;` has
//! neither): without `input` the child starts from its data type's `Default`, without
//! `output` nothing is mapped back.

use syn::spanned::Spanned;
use syn::{Expr, Ident};

use crate::symbol::{INPUT, OUTPUT};

/// The parts of a call activity's binding.
pub struct CallParts<'a> {
    /// The called process's static, as written (`SHIPPING`, `ship::SHIPPING`).
    pub callee: &'a Expr,
    /// Its name: the static's last path segment (what the diagram's `calledElement`
    /// and the fingerprint say).
    pub name: String,
    /// `input = |parent| child_data` (for a multi-instance call, also
    /// `|parent, item, index| child_data`).
    pub input: Option<&'a Expr>,
    /// `output = |parent, child| ...`.
    pub output: Option<&'a Expr>,
}

/// Whether a call activity's `input` takes a multi-instance item and index
/// (`|parent, item, index| ...`) rather than the parent's data alone.
pub fn takes_item(input: &Expr) -> bool {
    matches!(input, Expr::Closure(c) if c.inputs.len() == 3)
}

/// Read the binding; an error on the part at fault, saying how it is written.
pub fn parts(expr: &Expr) -> syn::Result<CallParts<'_>> {
    let shape = "a call activity names the process it calls and maps the data both ways: `call ship = SHIPPING(input = |order| Shipment { id: order.id.clone() }, output = |order, shipment| order.tracking = shipment.tracking);` — both mappings are optional: `call audit = AUDIT;`";
    // `call audit = AUDIT;`: no mappings.
    if let Expr::Path(path) = expr {
        if path.qself.is_none() {
            let name = path.path.segments.last().map(|s| s.ident.to_string());
            return Ok(CallParts {
                callee: expr,
                name: name.unwrap_or_default(),
                input: None,
                output: None,
            });
        }
    }
    let Expr::Call(call) = expr else {
        return Err(syn::Error::new(
            expr.span(),
            format!("expected the called process's static with its mappings; {shape}"),
        ));
    };
    let name = match &*call.func {
        Expr::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        other => {
            return Err(syn::Error::new(
                other.span(),
                format!("expected the called process's static by its path (`SHIPPING` or `shipping::SHIPPING`); {shape}"),
            ))
        }
    };
    let mut parts = CallParts {
        callee: &call.func,
        name,
        input: None,
        output: None,
    };
    for arg in &call.args {
        let Expr::Assign(assign) = arg else {
            return Err(syn::Error::new(
                arg.span(),
                format!("expected `input = ...` or `output = ...`; {shape}"),
            ));
        };
        let key: Option<&Ident> = match &*assign.left {
            Expr::Path(p) => p.path.get_ident(),
            _ => None,
        };
        let slot = match key {
            Some(k) if k == INPUT => &mut parts.input,
            Some(k) if k == OUTPUT => &mut parts.output,
            _ => {
                let hint = crate::suggest::hint(
                    &key.map(Ident::to_string).unwrap_or_default(),
                    [INPUT, OUTPUT],
                );
                return Err(syn::Error::new(
                    assign.left.span(),
                    format!("unknown mapping; {hint}a call activity takes `input = |parent| child_data` and `output = |parent, child| ...`"),
                ));
            }
        };
        if slot.is_some() {
            return Err(syn::Error::new(
                assign.left.span(),
                format!(
                    "`{}` is given twice; give each mapping once",
                    key.expect("matched")
                ),
            ));
        }
        *slot = Some(&assign.right);
    }
    Ok(parts)
}
