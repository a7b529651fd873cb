//! A small XML writer: elements with escaped attributes and text, indented.

/// Escape text for an attribute value or element content.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot carry at all are dropped; other control
            // characters but tab and newlines likewise.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            '\u{FFFE}' | '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// An indenting writer of nested elements.
pub(crate) struct Writer {
    out: String,
    open: Vec<String>,
    /// The innermost open element has no children yet (its start tag is unclosed).
    pending: bool,
}

impl Writer {
    pub fn new() -> Self {
        Writer {
            out: String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
            open: Vec::new(),
            pending: false,
        }
    }

    fn close_pending(&mut self) {
        if self.pending {
            self.out.push_str(">\n");
            self.pending = false;
        }
    }

    fn indent(&mut self) {
        for _ in 0..self.open.len() {
            self.out.push_str("  ");
        }
    }

    fn start_tag(&mut self, name: &str, attrs: &[(&str, &str)]) {
        self.close_pending();
        self.indent();
        self.out.push('<');
        self.out.push_str(name);
        for (k, v) in attrs {
            self.out.push(' ');
            self.out.push_str(k);
            self.out.push_str("=\"");
            self.out.push_str(&escape(v));
            self.out.push('"');
        }
    }

    /// Open an element; children follow until [`Writer::end`].
    pub fn open(&mut self, name: &str, attrs: &[(&str, &str)]) {
        self.start_tag(name, attrs);
        self.pending = true;
        self.open.push(name.to_string());
    }

    /// Close the innermost open element.
    pub fn end(&mut self) {
        let Some(name) = self.open.pop() else {
            return;
        };
        if self.pending {
            self.out.push_str(" />\n");
            self.pending = false;
        } else {
            self.indent();
            self.out.push_str("</");
            self.out.push_str(&name);
            self.out.push_str(">\n");
        }
    }

    /// An element with no children.
    pub fn empty(&mut self, name: &str, attrs: &[(&str, &str)]) {
        self.start_tag(name, attrs);
        self.out.push_str(" />\n");
    }

    /// An element holding only text.
    pub fn text(&mut self, name: &str, attrs: &[(&str, &str)], text: &str) {
        self.start_tag(name, attrs);
        self.out.push('>');
        self.out.push_str(&escape(text));
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push_str(">\n");
    }

    pub fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.end();
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_nests() {
        let mut w = Writer::new();
        w.open("a", &[("x", "1 < 2 & \"q\"")]);
        w.text("b", &[], "|o| o.total > 5 && o.ok");
        w.empty("c", &[]);
        w.open("d", &[]);
        w.end();
        let xml = w.finish();
        assert!(xml.contains("<a x=\"1 &lt; 2 &amp; &quot;q&quot;\">"));
        assert!(xml.contains("<b>|o| o.total &gt; 5 &amp;&amp; o.ok</b>"));
        assert!(xml.contains("<c />") && xml.contains("<d />") && xml.ends_with("</a>\n"));
    }
}
