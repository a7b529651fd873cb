//! "Did you mean": the nearest known name by edit distance.

/// The candidate closest to `name`, if it is close enough to be a likely typo.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// "did you mean `x`?" — the question a hint asks about `x`.
pub fn did_you_mean(x: &str) -> String {
    format!("did you mean `{x}`?")
}

/// "did you mean `x`? " for the candidate `x` nearest `name`, ready to open a
/// sentence; empty when no candidate is near.
pub fn hint<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    nearest(name, candidates)
        .map(|x| format!("{} ", did_you_mean(x)))
        .unwrap_or_default()
}

/// Levenshtein distance over chars.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn nearest_finds_typos_only() {
        let names = ["check_stock", "pack", "shipped"];
        assert_eq!(super::nearest("chek_stock", names), Some("check_stock"));
        assert_eq!(super::nearest("shiped", names), Some("shipped"));
        assert_eq!(super::nearest("zebra", names), None);
        assert_eq!(super::hint("pak", names), "did you mean `pack`? ");
        assert_eq!(super::hint("zebra", names), "");
    }
}
