//! Compile-fail tests: one file per compile-time rule of `process!` and
//! `#[derive(ProcessData)]`, each with the diagnostics a user sees in its `.stderr`.
//! Re-bless after a deliberate message change with
//! `TRYBUILD=overwrite cargo test --test ui`, then read every changed `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
