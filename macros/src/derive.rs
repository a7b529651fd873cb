//! `#[derive(ProcessData)]`: field-level diff and three-way merge for a struct.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, Index, Member};

pub fn process_data(input: &DeriveInput) -> syn::Result<TokenStream> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            format!(
                "ProcessData can be derived for a struct with fields only: the engine tracks changes field by field — hold the {} in a field, e.g. `struct Data {{ state: {} }}`",
                if matches!(input.data, Data::Enum(_)) { "enum" } else { "union" },
                input.ident
            ),
        ));
    };
    let members: Vec<Member> = match &data.fields {
        Fields::Named(f) => f
            .named
            .iter()
            .map(|f| Member::Named(f.ident.clone().expect("named")))
            .collect(),
        Fields::Unnamed(f) => (0..f.unnamed.len())
            .map(|i| Member::Unnamed(Index::from(i)))
            .collect(),
        Fields::Unit => Vec::new(),
    };
    if members.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "ProcessData needs at least one field; use a struct with the fields the process reads and writes",
        ));
    }
    let names: Vec<String> = members
        .iter()
        .map(|m| match m {
            Member::Named(i) => i.to_string(),
            Member::Unnamed(i) => i.index.to_string(),
        })
        .collect();
    let bindings: Vec<_> = (0..members.len())
        .map(|i| format_ident!("__edited_{}", i))
        .collect();
    let index = 0..members.len();
    let index2 = 0..members.len();
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();

    Ok(quote! {
        impl #impl_generics ::thresh::ProcessData for #ident #ty_generics #where_clause {
            const FIELDS: &'static [&'static str] = &[#(#names),*];

            fn diff(&self, other: &Self) -> ::thresh::ChangedFields {
                let mut changed = ::thresh::ChangedFields::new(Self::FIELDS);
                #( if self.#members != other.#members { changed.insert(#index); } )*
                changed
            }

            #[inline]
            fn clone_fields_from(&mut self, source: &Self) {
                #[allow(unused_imports)]
                use ::thresh::__private::copy::{CloneKind as _, WholeKind as _};
                let copied = true #(
                    & (&::thresh::__private::copy::probe(&source.#members))
                        .kind()
                        .copy(&mut self.#members, &source.#members)
                )*;
                if !copied {
                    ::core::clone::Clone::clone_from(self, source);
                }
            }

            fn merge(&mut self, base: &Self, edited: Self) -> ::thresh::ChangedFields {
                let mut changed = ::thresh::ChangedFields::new(Self::FIELDS);
                let Self { #(#members: #bindings),* } = edited;
                #(
                    if #bindings != base.#members && #bindings != self.#members {
                        self.#members = #bindings;
                        changed.insert(#index2);
                    }
                )*
                changed
            }
        }
    })
}
