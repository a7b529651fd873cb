//! The macros of [thresh](https://docs.rs/thresh): `process!` and
//! `#[derive(ProcessData)]`. Use them through the `thresh` crate, which re-exports
//! them.
//!
//! `process!` is a pipeline, one module per stage:
//! [`parse`] (tokens → syntax tree with spans) → [`model`] (one IR of the process,
//! names resolved) → [`check`] (one module per family of rules) → [`emit`] (IR →
//! the `static` graph). Every stage reports into one [`ctx::Ctx`], so a user sees all
//! errors at once, each on the span at fault.

#![forbid(unsafe_code)]

mod check;
mod ctx;
mod derive;
mod emit;
mod import;
mod migrate;
mod model;
mod parse;
mod suggest;
mod symbol;

use proc_macro::TokenStream;

/// Declare a BPMN process as a `static thresh::Process<D>`. See the thresh README.
#[proc_macro]
pub fn process(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as parse::Input);
    input
        .processes
        .iter()
        .map(expand_process)
        .collect::<proc_macro2::TokenStream>()
        .into()
}

fn expand_process(ast: &parse::ProcessAst) -> proc_macro2::TokenStream {
    let ctx = ctx::Ctx::new();
    // An imported process: the diagram and its bindings become the inline tree.
    let imported;
    let mut diagram = None;
    let mut unchecked = false;
    let ast = match (&ast.import, &ast.syntax_error) {
        (Some(import), None) => {
            let built = import::build(&ctx, ast, import);
            // A diagram that could not be read, or whose graph has a hole where an
            // element was rejected: only the import's errors are reported.
            unchecked = !built.read || !built.whole;
            imported = built.tree;
            diagram = built.path;
            &imported
        }
        _ => ast,
    };
    let model = model::build(&ctx, ast);
    let mut notes = Vec::new();
    match &ast.syntax_error {
        // The body did not parse: nothing to check, only the error to report.
        Some(error) => ctx.push(error.clone()),
        // The diagram could not be read, or a rejected element left a hole in
        // its graph: the import's errors are the only ones.
        None if unchecked => {}
        None => {
            check::all(&ctx, &model);
            // Soundness is decided on a well-formed model only: on one with errors its
            // findings would be guesses about a graph the user has still to mend.
            if !ctx.has_errors() {
                notes = check::soundness::check(&ctx, &model);
            }
        }
    }
    let errors = ctx.finish();
    // Emit the graph even with errors, so rustc and rust-analyzer see the static and
    // do not pile secondary errors ("cannot find value ORDER") on the real ones.
    let graph = match errors {
        Some(_) => emit::Graph::Empty,
        None => emit::Graph::Full,
    };
    let item = emit::process(&model, graph, &notes);
    let errors = errors.map(|e| e.to_compile_error());
    // The diagram is read by the macro: including its bytes makes cargo rebuild the
    // crate when the file changes.
    let rebuild = diagram.as_ref().and_then(|p| p.to_str()).map(|p| {
        quote::quote!(
            const _: &[u8] = include_bytes!(#p);
        )
    });
    quote::quote!(#item #rebuild #errors)
}

/// A migration plan from one version of a process to another, checked when it
/// compiles: `migrate!(ORDER_V1 => ORDER_V2 { approve => review, data = upgrade })`.
/// See the thresh README, "Migration plans".
#[proc_macro]
pub fn migrate(input: TokenStream) -> TokenStream {
    let plan = syn::parse_macro_input!(input as migrate::Plan);
    migrate::expand(plan).into()
}

/// `migrate!`'s second step (the new version's model). Not public API.
#[doc(hidden)]
#[proc_macro]
pub fn __migrate_next(input: TokenStream) -> TokenStream {
    migrate::next(input.into())
        .unwrap_or_else(|e| e.to_compile_error())
        .into()
}

/// `migrate!`'s last step: the checks and the plan. Not public API.
#[doc(hidden)]
#[proc_macro]
pub fn __migrate_check(input: TokenStream) -> TokenStream {
    migrate::check(input.into()).into()
}

/// Derive `thresh::ProcessData`: field-level change detection and three-way merge.
#[proc_macro_derive(ProcessData)]
pub fn derive_process_data(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    derive::process_data(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
