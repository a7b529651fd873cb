//! Pictures of the order process (`examples/order.rs`): its BPMN 2.0 XML (opens in
//! bpmn.io or Camunda Modeler, laid out), its SVG, and the SVG of an instance — one
//! that was back-ordered — drawn on it. Writes them to `target/diagrams/` and prints
//! where; prints the Mermaid text too.
//!
//! Run: `cargo run --example diagram`

use std::path::PathBuf;

#[allow(dead_code)]
#[path = "order.rs"]
mod order;

use order::{Order, ORDER};
use thresh::Engine;

#[tokio::main]
async fn main() {
    let dir = PathBuf::from("target/diagrams");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    // An instance: too big an order is back-ordered.
    let engine = Engine::new();
    let handle = engine
        .start(
            &ORDER,
            Order {
                id: "A-2".into(),
                total: 5_000,
                ..Order::default()
            },
        )
        .await
        .unwrap();
    let outcome = handle.outcome().await;
    let history = handle.history().await;
    let files = [
        ("order.bpmn", ORDER.to_bpmn()),
        ("order.svg", ORDER.to_svg()),
        ("order-instance.svg", ORDER.to_svg_with(&history)),
        ("order.mmd", ORDER.to_mermaid()),
    ];
    for (name, text) in &files {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
        println!("wrote {}", path.display());
    }
    println!(
        "the instance ended {} at {:?}",
        outcome.kind(),
        history.ended_at()
    );
    println!("\n{}", ORDER.to_mermaid());
    if let Err(e) = engine.shutdown(std::time::Duration::from_secs(5)).await {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
