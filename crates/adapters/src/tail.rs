//! The last few KiB of an adapter's stderr, kept for error messages.
//!
//! An adapter that fails usually says why on stderr (a stack trace, a missing module), so
//! every [`ExternalError`](super::ExternalError) quotes the end of it. Only the end: a
//! chatty adapter must not grow herd's memory.

use std::sync::{Arc, Mutex, PoisonError};

/// How much of stderr is kept.
pub(crate) const TAIL_BYTES: usize = 4096;

/// A shared, bounded buffer of the most recent stderr bytes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tail {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl Tail {
    /// Appends `chunk`, dropping the oldest bytes beyond [`TAIL_BYTES`].
    pub(crate) fn push(&self, chunk: &[u8]) {
        let mut b = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        b.extend_from_slice(chunk);
        if b.len() > TAIL_BYTES {
            let cut = b.len() - TAIL_BYTES;
            b.drain(..cut);
        }
    }

    /// What is kept so far, as (lossy) text.
    pub(crate) fn text(&self) -> String {
        let b = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&b).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_end() {
        let t = Tail::default();
        t.push(&vec![b'a'; TAIL_BYTES]);
        t.push(b"xyz");
        let s = t.text();
        assert_eq!(s.len(), TAIL_BYTES);
        assert!(s.ends_with("axyz"));
    }
}
