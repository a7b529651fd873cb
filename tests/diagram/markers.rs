//! Loop and multi-instance markers in the Mermaid text: Mermaid draws no markers, so
//! each marked activity's label carries one (`↻` a standard loop, `|||` parallel
//! multi-instance, `≡` sequential), a sub-process's in its subgraph's title.

use crate::processes;

#[test]
fn mermaid_labels_carry_loop_and_multi_instance_markers() {
    let mermaid = processes::MULTI.to_mermaid();
    // `|` is quoted for Mermaid (`#124;`), so the bars are spelt that way.
    assert!(
        mermaid.contains("fan[\"fan #124;#124;#124;\"]"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("subgraph rounds[\"rounds ≡\"]"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("sign[\"👤 sign #124;#124;#124;\"]"),
        "{mermaid}"
    );
    assert!(mermaid.contains("poll[\"✉ poll ↻\"]"), "{mermaid}");
    // Unmarked activities carry none.
    assert!(mermaid.contains("round[\"round\"]"), "{mermaid}");
    let plain = processes::GATEWAYS.to_mermaid();
    for mark in [" ↻\"", " #124;#124;#124;\"", " ≡\""] {
        assert!(!plain.contains(mark), "{plain}");
    }
}
