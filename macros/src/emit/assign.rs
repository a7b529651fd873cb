//! A user task's assignment: one fn per user task that has one, evaluated by the
//! engine when the task opens (`Node::assign`), and the node table's field.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::fns::UserFn;
use crate::model::{Kind, Model};
use crate::parse::assign::Value;

/// The assignment fns of the model's user tasks.
pub fn fns(model: &Model) -> Vec<TokenStream> {
    let data = model.data;
    let mut fns = Vec::new();
    for (n, node) in model.nodes.iter().enumerate() {
        let Some(assign) = node.assign.as_ref().filter(|_| node.kind == Kind::User) else {
            continue;
        };
        let none = quote!(::core::option::Option::None);
        // The conversion is spanned on the closure too: a value of the wrong type
        // is reported there, not on the whole `process!`.
        let read = |closure: &syn::Expr, wrap: TokenStream| {
            let wrap = respan(wrap, closure.span());
            super::hygienic(
                quote_spanned!(closure.span()=> #wrap(::thresh::__private::read_data(#closure, data))),
            )
        };
        let assignee = match &assign.assignee {
            Some(Value::Constant(e)) => super::hygienic(
                quote_spanned!(e.span()=> ::thresh::IntoAssignee::into_assignee(#e)),
            ),
            Some(Value::FromData(c)) => read(c, quote!(::thresh::IntoAssignee::into_assignee)),
            None => none.clone(),
        };
        let groups = match &assign.groups {
            Some(Value::Constant(groups)) => {
                let groups = groups
                    .iter()
                    .map(|g| quote_spanned!(g.span()=> ::std::string::String::from(#g)));
                quote!(::std::vec![#(#groups),*])
            }
            Some(Value::FromData(c)) => read(c, quote!(::thresh::__private::task_groups)),
            None => quote!(::std::vec::Vec::new()),
        };
        let due = match &assign.due {
            Some(Value::Constant(d)) => {
                let millis = d.millis;
                quote!(::core::option::Option::Some(::thresh::TimerSpec::After(::core::time::Duration::from_millis(#millis))))
            }
            Some(Value::FromData(c)) => {
                let spec = read(c, quote!(::thresh::IntoTimer::into_timer));
                quote!(::core::option::Option::Some(#spec))
            }
            None => none.clone(),
        };
        let priority = match &assign.priority {
            Some(Value::Constant(p)) => {
                quote_spanned!(p.span()=> ::thresh::__private::task_priority(#p))
            }
            Some(Value::FromData(c)) => read(c, quote!(::thresh::__private::task_priority)),
            None => quote!(::thresh::Task::DEFAULT_PRIORITY),
        };
        let name = UserFn::Assign(n).name();
        fns.push(quote! {
            #[allow(non_snake_case, unused_variables)]
            fn #name(data: &::thresh::__private::Erased) -> ::thresh::__private::Assigned {
                let data: &#data = ::thresh::__private::Erased::typed(data);
                ::thresh::__private::Assigned {
                    assignee: #assignee,
                    groups: #groups,
                    due: #due,
                    priority: #priority,
                }
            }
        });
    }
    fns
}

/// Node `n`'s `Node::assign`.
pub fn field(model: &Model, n: usize) -> TokenStream {
    let node = &model.nodes[n];
    UserFn::Assign(n).some_if(node.assign.is_some() && node.kind == Kind::User)
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), respan(group.stream(), span));
                new.set_span(span);
                TokenTree::Group(new)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
