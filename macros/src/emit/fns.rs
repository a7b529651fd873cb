//! The user's code as plain fns: every handler, condition, key, payload mapping and
//! timer of the model becomes one `fn __thresh_*`, named by [`UserFn::name`] and
//! emitted by [`all`] in one pass. The node and flow tables refer to them by name
//! only, so the set of fns and the names the tables use cannot drift apart.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::model::{Kind, Model, Node};
use crate::parse::{EventAst, EventTrigger, TimerAst};

/// One fn wrapping the user's code, by the element it belongs to (node or flow
/// index, and a complex gateway's triple).
#[derive(Clone, Copy)]
pub enum UserFn {
    /// A task's handler.
    Task(usize),
    /// The `when` of a complex gateway's activation triple.
    Activation(usize, usize),
    /// A flow's condition.
    Condition(usize),
    /// A caught event's `apply`.
    Apply(usize),
    /// A message's correlation key.
    Key(usize),
    /// A message catch's payload decoder (for durable engines).
    Decode(usize),
    /// The payload type a message catch's `apply` takes, if it takes one.
    PayloadType(usize),
    /// A conditional event's condition.
    When(usize),
    /// A conditional event's `on = [..]` fields, each read once (never called).
    On(usize),
    /// A timer's spec.
    Timer(usize),
    /// A thrown event's `payload`.
    Payload(usize),
    /// A call activity's starter: its mappings and the called process.
    Call(usize),
    /// A multi-instance call activity's starter of one instance, with its item.
    CallItem(usize),
    /// A user task's assignment (`emit/assign.rs`).
    Assign(usize),
}

impl UserFn {
    /// The fn's name: the one place the `__thresh_*` names are spelt.
    pub fn name(self) -> syn::Ident {
        match self {
            UserFn::Task(n) => format_ident!("__thresh_task_{}", n),
            UserFn::Activation(n, k) => format_ident!("__thresh_activation_{}_{}", n, k),
            UserFn::Condition(f) => format_ident!("__thresh_condition_{}", f),
            UserFn::Apply(n) => format_ident!("__thresh_apply_{}", n),
            UserFn::Key(n) => format_ident!("__thresh_key_{}", n),
            UserFn::Decode(n) => format_ident!("__thresh_decode_{}", n),
            UserFn::PayloadType(n) => format_ident!("__thresh_payload_type_{}", n),
            UserFn::When(n) => format_ident!("__thresh_when_{}", n),
            UserFn::On(n) => format_ident!("__thresh_on_{}", n),
            UserFn::Timer(n) => format_ident!("__thresh_timer_{}", n),
            UserFn::Payload(n) => format_ident!("__thresh_payload_{}", n),
            UserFn::Call(n) => format_ident!("__thresh_call_{}", n),
            UserFn::CallItem(n) => format_ident!("__thresh_call_item_{}", n),
            UserFn::Assign(n) => format_ident!("__thresh_assign_{}", n),
        }
    }

    /// `Some(name)` when `present`, else `None`, as an expression of the table.
    pub fn some_if(self, present: bool) -> TokenStream {
        if present {
            let f = self.name();
            quote!(::core::option::Option::Some(#f))
        } else {
            quote!(::core::option::Option::None)
        }
    }
}

/// What an element does with its event: waits for it, or sends it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Catches,
    Throws,
}

impl Role {
    /// The role of an element of `kind` with its event, if its event has fns (an
    /// error or escalation end sends only its code; a link is a plain edge).
    pub fn of(kind: Kind) -> Option<Role> {
        match kind {
            Kind::Catch(EventTrigger::Link) | Kind::Throw(EventTrigger::Link) => None,
            Kind::Catch(_)
            | Kind::Receive
            | Kind::StartEvent(_)
            | Kind::Boundary { .. }
            | Kind::EventSubStart { .. } => Some(Role::Catches),
            Kind::Throw(_) | Kind::ThrowEnd(_) => Some(Role::Throws),
            _ => None,
        }
    }
}

/// Every fn of the model, node by node in declaration order, then the flows'
/// conditions. The same fns with or without errors in the model, so the user's
/// code is type-checked either way.
pub fn all(model: &Model) -> Vec<TokenStream> {
    let data = model.data;
    let mut fns = Vec::new();
    for (n, node) in model.nodes.iter().enumerate() {
        // A handler that takes an item (or is marked to, in the wrong place: that
        // is reported) is never the plain one.
        let takes_item = super::loops::item_source(model, n).is_some() || node.item.is_some();
        if node.handler.is_some() && takes_item {
            // Its handler takes an item: the loop runs `loops::fns`'s run instead.
            fns.push(super::loops::placeholder_task_fn(n));
            node_fns(n, node, false, data, &mut fns);
            continue;
        }
        // A task whose handler is an earlier task's runs that one's fn.
        let handler = model.handler_fn[n] == n;
        node_fns(n, node, handler, data, &mut fns);
    }
    fns.extend(super::loops::fns(model));
    fns.extend(super::assign::fns(model));
    for (i, flow) in model.flows.iter().enumerate() {
        if let Some(expr) = flow.condition {
            fns.push(condition_fn(UserFn::Condition(i), data, expr));
        }
    }
    fns
}

/// The fns of one node: its handler, its activation conditions, its event's fns.
fn node_fns(n: usize, node: &Node, handler: bool, data: &syn::Type, fns: &mut Vec<TokenStream>) {
    if let Some(h) = node.handler {
        match node.kind {
            Kind::Call => {
                if let Ok(mut parts) = crate::model::call::parts(h) {
                    // A multi-instance call starts each child with its item
                    // (`emit::loops`); the plain starter is never run, and an input
                    // that takes an item cannot be its.
                    if parts.input.is_some_and(crate::model::call::takes_item) {
                        parts.input = None;
                    }
                    fns.push(call_fn(UserFn::Call(n), data, &parts));
                }
            }
            // A multi-instance task's handler is emitted with its item (the caller
            // says so by `handler: false`).
            _ if handler => fns.push(task_fn(UserFn::Task(n), data, h)),
            _ => {}
        }
    }
    for (k, triple) in node.activation.iter().enumerate() {
        if let Some(expr) = &triple.when {
            fns.push(condition_fn(UserFn::Activation(n, k), data, expr));
        }
    }
    let (Some(event), Some(role)) = (&node.event, Role::of(node.kind)) else {
        return;
    };
    match (role, event.trigger) {
        (_, EventTrigger::Link) => {}
        (Role::Catches, trigger) => {
            if let Some((_, expr)) = &event.apply {
                fns.push(apply_fn(UserFn::Apply(n), data, expr));
            }
            match trigger {
                EventTrigger::Message => {
                    fns.push(key_fn(UserFn::Key(n), data, event));
                    fns.push(decode_fn(UserFn::Decode(n), data, event));
                }
                EventTrigger::Condition => {
                    let condition = event.condition.as_ref();
                    let condition = condition.expect("a condition parsed its closure");
                    fns.push(condition_fn(UserFn::When(n), data, condition));
                    fns.push(on_fn(UserFn::On(n), data, event));
                }
                EventTrigger::Timer => fns.push(timer_fn(UserFn::Timer(n), data, event)),
                _ => {}
            }
        }
        (Role::Throws, trigger) => {
            if let Some((_, expr)) = &event.payload {
                fns.push(payload_fn(UserFn::Payload(n), data, expr));
            }
            if trigger == EventTrigger::Message {
                fns.push(key_fn(UserFn::Key(n), data, event));
            }
        }
    }
}

/// A task handler — a path to an async fn or a closure returning a future — wrapped
/// as the graph's uniform `fn(Erased) -> TaskRun<Erased>`: the run owns the task's
/// copy and gives it back with the result. Spanned on the user's expression, so a handler of
/// the wrong type (or whose future is not `Send`) is reported there.
fn task_fn(f: UserFn, data: &syn::Type, handler: &syn::Expr) -> TokenStream {
    let name = f.name();
    let span = handler.span();
    // The run borrows the erased copy as a `D` for the handler and gives the same
    // copy back: no allocation beyond the copy's own.
    let call = super::hygienic(
        quote_spanned!(span=> ::thresh::task::handler(#handler, ::thresh::__private::Erased::typed_mut::<#data>(&mut data)).await),
    );
    let run = super::hygienic(
        quote_spanned!(span=> ::thresh::__private::task_run(move || async move {
            let result = #call;
            (data, result)
        })),
    );
    quote! {
        #[allow(non_snake_case)]
        fn #name(mut data: ::thresh::__private::Erased) -> ::thresh::__private::TaskRun<::thresh::__private::Erased> { #run }
    }
}

/// A call activity's starter: the user's mappings and the called process, checked by
/// rustc where they are written (`input` must give the callee's data type, `output`
/// take it) — an omitted `input` starts the child from `Default`.
fn call_fn(f: UserFn, data: &syn::Type, parts: &crate::model::call::CallParts) -> TokenStream {
    let name = f.name();
    let callee = parts.callee;
    let input = match parts.input {
        Some(input) => super::hygienic(quote_spanned!(input.span()=> #input)),
        None => super::hygienic(
            quote_spanned!(callee.span()=> |_: &#data| ::core::default::Default::default()),
        ),
    };
    let output = match parts.output {
        Some(output) => super::hygienic(quote_spanned!(output.span()=> #output)),
        None => quote!(|_: &mut #data, _| {}),
    };
    let call = super::hygienic(
        quote_spanned!(callee.span()=> ::thresh::__private::call_child(caller, &#callee, data, #input, #output)),
    );
    quote! {
        #[allow(non_snake_case)]
        fn #name(caller: ::thresh::__private::Caller, data: &::thresh::__private::Erased) -> ::thresh::__private::ChildCall<::thresh::__private::Erased> {
            let data: &#data = ::thresh::__private::Erased::typed(data);
            #call
        }
    }
}

/// A condition — a closure or a path to a fn over `&D` — as a plain fn.
fn condition_fn(f: UserFn, data: &syn::Type, condition: &syn::Expr) -> TokenStream {
    let name = f.name();
    let span = condition.span();
    let call = super::hygienic(
        quote_spanned!(span=> ::thresh::__private::call_condition(#condition, data)),
    );
    quote! {
        #[allow(non_snake_case)]
        fn #name(data: &::thresh::__private::Erased) -> bool {
            let data: &#data = ::thresh::__private::Erased::typed(data);
            #call
        }
    }
}

/// How a caught payload changes the data.
fn apply_fn(f: UserFn, data: &syn::Type, expr: &syn::Expr) -> TokenStream {
    let name = f.name();
    let call = super::hygienic(
        quote_spanned!(expr.span()=> ::thresh::__private::call_apply(#expr, data, payload)),
    );
    quote! {
        #[allow(non_snake_case)]
        fn #name(data: &mut ::thresh::__private::Erased, payload: &::thresh::__private::Payload) -> ::core::result::Result<(), ::thresh::__private::ApplyFailure> {
            let data: &mut #data = ::thresh::__private::Erased::typed_mut(data);
            #call
        }
    }
}

/// A message catch's payload decoder: by the type its `apply` takes — written on a
/// closure's payload parameter (an unwritten one is the apply fn's error, reported
/// once, there), or a function's, looked at through the function (never called) —
/// or any payload without `apply`. Beside it, the fn naming that type at run time
/// ([`UserFn::PayloadType`]), so a durable engine refuses a publish of another type.
fn decode_fn(f: UserFn, data: &syn::Type, event: &EventAst) -> TokenStream {
    let UserFn::Decode(n) = f else {
        unreachable!("decode_fn makes a Decode fn")
    };
    let name = f.name();
    let type_name = UserFn::PayloadType(n).name();
    let probe = match &event.apply {
        None => None,
        Some((_, syn::Expr::Closure(closure))) => match closure.inputs.iter().nth(1) {
            Some(syn::Pat::Type(typed)) => {
                let payload = match &*typed.ty {
                    syn::Type::Reference(reference) => &*reference.elem,
                    other => other,
                };
                Some(quote!(::thresh::__private::decode::Probe::<#payload>::new()))
            }
            _ => {
                return quote! {
                    #[allow(non_snake_case)]
                    fn #name() -> ::thresh::__private::decode::PayloadDecode {
                        ::core::option::Option::None
                    }
                    #[allow(non_snake_case)]
                    fn #type_name() -> ::core::option::Option<::thresh::__private::decode::PayloadType> {
                        ::core::option::Option::None
                    }
                }
            }
        },
        Some((_, expr)) => {
            Some(quote!(::thresh::__private::decode::probe::<#data, _, _, _>(#expr)))
        }
    };
    let (body, type_body) = match probe {
        Some(probe) => (
            quote! {
                #[allow(unused_imports)]
                use ::thresh::__private::decode::{Deserializable as _, Opaque as _};
                let probe = #probe;
                (&probe).decoder()
            },
            quote!(::core::option::Option::Some(::thresh::__private::decode::payload_type(&#probe))),
        ),
        None => (
            quote!(::thresh::__private::decode::ignored()),
            quote!(::core::option::Option::None),
        ),
    };
    quote! {
        // The borrow chooses the decoder (`__private::decode`).
        #[allow(non_snake_case, clippy::needless_borrow)]
        fn #name() -> ::thresh::__private::decode::PayloadDecode { #body }
        #[allow(non_snake_case)]
        fn #type_name() -> ::core::option::Option<::thresh::__private::decode::PayloadType> { #type_body }
    }
}

/// A message's correlation key (`check::events` makes sure there is one).
fn key_fn(f: UserFn, data: &syn::Type, event: &EventAst) -> TokenStream {
    let name = f.name();
    let call = match &event.key {
        Some((_, expr)) => super::hygienic(
            quote_spanned!(expr.span()=> ::thresh::__private::call_key(#expr, data)),
        ),
        None => quote!(::std::string::String::new()),
    };
    quote! {
        #[allow(non_snake_case, unused_variables)]
        fn #name(data: &::thresh::__private::Erased) -> ::std::string::String {
            let data: &#data = ::thresh::__private::Erased::typed(data);
            #call
        }
    }
}

/// Each field a conditional event names in `on = [..]`, read once in a dead fn, so a
/// misspelt one is a compile error on the user's name.
fn on_fn(f: UserFn, data: &syn::Type, event: &EventAst) -> TokenStream {
    let name = f.name();
    let fields = event.on.iter().flat_map(|(_, _, fields)| fields.iter());
    quote! {
        #[allow(non_snake_case, dead_code)]
        fn #name(data: &#data) { #( let _ = &data.#fields; )* }
    }
}

/// A timer's spec, evaluated when the timer is armed (on the data, for
/// `timer(|data| ..)`).
fn timer_fn(f: UserFn, data: &syn::Type, event: &EventAst) -> TokenStream {
    let name = f.name();
    let timer = event.timer.as_ref().expect("a timer parsed its arguments");
    if let TimerAst::FromData(closure) = timer {
        let call = super::hygienic(
            quote_spanned!(closure.span()=> ::thresh::IntoTimer::into_timer(::thresh::__private::read_data(#closure, data))),
        );
        return quote! {
            #[allow(non_snake_case)]
            fn #name(data: &::thresh::__private::Erased) -> ::thresh::TimerSpec {
                let data: &#data = ::thresh::__private::Erased::typed(data);
                #call
            }
        };
    }
    let spec = match timer {
        TimerAst::FromData(_) => unreachable!("handled above"),
        TimerAst::After(d) => {
            super::hygienic(quote_spanned!(d.span()=> ::thresh::TimerSpec::After(#d)))
        }
        TimerAst::At(at) => {
            super::hygienic(quote_spanned!(at.span()=> ::thresh::TimerSpec::At(#at)))
        }
        TimerAst::Every { every, times } => {
            let times = match times {
                Some(t) => {
                    super::hygienic(quote_spanned!(t.span()=> ::core::option::Option::Some(#t)))
                }
                None => quote!(::core::option::Option::None),
            };
            super::hygienic(
                quote_spanned!(every.span()=> ::thresh::TimerSpec::Every { every: #every, times: #times }),
            )
        }
    };
    quote! {
        #[allow(non_snake_case)]
        fn #name() -> ::thresh::TimerSpec { #spec }
    }
}

/// What a throw sends with its event.
fn payload_fn(f: UserFn, data: &syn::Type, expr: &syn::Expr) -> TokenStream {
    let name = f.name();
    let call = super::hygienic(
        quote_spanned!(expr.span()=> ::thresh::__private::call_payload(#expr, data)),
    );
    quote! {
        #[allow(non_snake_case)]
        fn #name(data: &::thresh::__private::Erased) -> ::thresh::__private::Payload {
            let data: &#data = ::thresh::__private::Erased::typed(data);
            #call
        }
    }
}
