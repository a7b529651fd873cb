//! Compile-fail tests: one file per compile-time rule of `process!` and
//! `#[derive(ProcessData)]`, grouped in folders by rule family (`tests/ui/<family>/`),
//! each with the diagnostics a user sees in its `.stderr`.
//! Re-bless after a deliberate message change with
//! `TRYBUILD=overwrite cargo test --test ui`, then read every changed `.stderr`.

#[test]
fn ui() {
    // One run for every family: trybuild builds all its cases in one batch.
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}
