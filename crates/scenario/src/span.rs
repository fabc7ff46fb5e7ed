//! Where in a TOML file a key lives, so an error can name the file, line and key.
//!
//! serde tells us *what* is wrong but, for value checks made after deserializing, not
//! *where*. We parse the text once more with toml's spanned parser and map a key path to
//! its byte range, or a byte offset back to the key path that contains it.

use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// One step of a key path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// A key in a table.
    Key(String),
    /// An element of an array (0-based).
    Index(usize),
}

/// A key path, e.g. `arms[2].jitter`.
pub type KeyPath = Vec<Seg>;

/// Renders a path as `upstream.incidents[0].hold`.
pub fn render(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Builds a path from `"upstream"`, `"error_rate"`-style keys.
pub fn keys(ks: &[&str]) -> KeyPath {
    ks.iter().map(|k| Seg::Key((*k).to_owned())).collect()
}

/// A parsed document that can answer "where is this key?".
pub struct Spans<'i> {
    root: Option<Spanned<DeTable<'i>>>,
    text: &'i str,
}

impl<'i> Spans<'i> {
    /// Parses `text`; a syntax error leaves an empty index (serde reports syntax errors).
    pub fn new(text: &'i str) -> Self {
        Spans {
            root: DeTable::parse(text).ok(),
            text,
        }
    }

    /// The byte range of the value at `path`, or of the deepest existing parent.
    pub fn locate(&self, path: &[Seg]) -> Option<Range<usize>> {
        let root = self.root.as_ref()?;
        let mut best = None;
        let mut cur: Option<&DeValue<'i>> = None;
        let mut table = Some(root.get_ref());
        for seg in path {
            let next: Option<&Spanned<DeValue<'i>>> = match (seg, table, cur) {
                (Seg::Key(k), Some(t), _) => t
                    .iter()
                    .find(|(key, _)| key.get_ref().as_ref() == k.as_str())
                    .map(|(_, v)| v),
                (Seg::Index(i), _, Some(DeValue::Array(a))) => a.get(*i),
                _ => None,
            };
            let Some(v) = next else { break };
            best = Some(v.span());
            cur = Some(v.get_ref());
            table = match v.get_ref() {
                DeValue::Table(t) => Some(t),
                _ => None,
            };
        }
        best
    }

    /// The deepest key path whose key or value contains byte `offset`.
    pub fn path_at(&self, offset: usize) -> KeyPath {
        let mut path = vec![];
        if let Some(root) = &self.root {
            if !walk_table(root.get_ref(), offset, &mut path) {
                path.clear();
            }
        }
        path
    }

    /// 1-based line and column of byte `offset`.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
}

/// Depth-first over every key: table and array-of-table spans cover only their headers,
/// so containment is tested at each key and value, never pruned at a parent.
fn walk_table(t: &DeTable<'_>, offset: usize, path: &mut KeyPath) -> bool {
    for (k, v) in t.iter() {
        path.push(Seg::Key(k.get_ref().to_string()));
        if walk_value(v.get_ref(), offset, path) {
            return true;
        }
        if k.span().contains(&offset) || v.span().contains(&offset) {
            return true;
        }
        path.pop();
    }
    false
}

fn walk_value(v: &DeValue<'_>, offset: usize, path: &mut KeyPath) -> bool {
    match v {
        DeValue::Table(t) => walk_table(t, offset, path),
        DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                path.push(Seg::Index(i));
                if walk_value(item.get_ref(), offset, path) || item.span().contains(&offset) {
                    return true;
                }
                path.pop();
            }
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "name = \"x\"\n[upstream]\nerror_rate = 1.5\n\n[[arms]]\nid = \"a\"\n\n[[arms]]\nid = \"b\"\njitter = \"fulll\"\n";

    #[test]
    fn locate_and_back() {
        let s = Spans::new(DOC);
        let r = s.locate(&keys(&["upstream", "error_rate"])).unwrap();
        assert_eq!(&DOC[r.clone()], "1.5");
        assert_eq!(s.line_col(r.start), (3, 14));
        let p = vec![
            Seg::Key("arms".into()),
            Seg::Index(1),
            Seg::Key("jitter".into()),
        ];
        let r = s.locate(&p).unwrap();
        assert_eq!(s.line_col(r.start).0, 10);
        assert_eq!(render(&s.path_at(r.start)), "arms[1].jitter");
        // A missing key falls back to its parent.
        let r = s.locate(&keys(&["upstream", "workers"])).unwrap();
        assert!(s.line_col(r.start).0 >= 2);
    }
}
