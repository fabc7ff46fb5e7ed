//! Obvious retries folded into the request they repeat.
//!
//! ## Why
//!
//! An access log taken behind clients that retry already holds their retries: replaying it
//! under a retrying arm retries the retries, and the load multiplier then counts them
//! twice. A request is folded when the same client sent the same method to the same path
//! (and query) within the window after its previous one, folded or not, so a chain of
//! retries 200 ms apart folds into its first request. The log cannot tell a retry from a
//! second identical request (a page polled quickly), so this is a heuristic, opt-in, and
//! reported as a count; the window compares the log's instants at the log's resolution.
//!
//! Only the keys seen within the last window are held, so memory follows the traffic of
//! one window, not the log's size.

use super::time::Micros;
use herd_retry::Method;
use std::collections::{HashMap, VecDeque};

type Key = (u64, Method, String);

/// Decides, request by request, which are retries of the one before.
pub(super) struct Folder {
    window: Micros,
    /// Each key's last instant.
    last: HashMap<Key, Micros>,
    /// The keys in the order they were seen, to forget those older than the window.
    seen: VecDeque<(Micros, Key)>,
    /// Requests folded so far.
    pub folded: u64,
}

impl Folder {
    pub fn new(window: Micros) -> Folder {
        Folder {
            window,
            last: HashMap::new(),
            seen: VecDeque::new(),
            folded: 0,
        }
    }

    /// Whether the request at `at` (never earlier than the one before) repeats one within
    /// the window; either way it becomes its key's latest.
    pub fn is_retry(&mut self, at: Micros, consumer: u64, method: Method, path: &str) -> bool {
        while let Some((t, _)) = self.seen.front() {
            if at - *t <= self.window {
                break;
            }
            if let Some((t, key)) = self.seen.pop_front() {
                if self.last.get(&key) == Some(&t) {
                    self.last.remove(&key);
                }
            }
        }
        let key = (consumer, method, path.to_owned());
        let retry = self.last.get(&key).is_some_and(|&t| at - t <= self.window);
        self.last.insert(key.clone(), at);
        self.seen.push_back((at, key));
        if retry {
            self.folded += 1;
        }
        retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_client_method_and_path_within_the_window_fold() {
        let mut f = Folder::new(500_000);
        let mut r = |at, c, m, p| f.is_retry(at, c, m, p);
        assert!(!r(0, 0, Method::Get, "/a"));
        assert!(r(200_000, 0, Method::Get, "/a"), "a retry");
        assert!(
            r(600_000, 0, Method::Get, "/a"),
            "chained: 400 ms after the last"
        );
        assert!(!r(600_000, 1, Method::Get, "/a"), "another client");
        assert!(!r(600_000, 0, Method::Post, "/a"), "another method");
        assert!(!r(600_000, 0, Method::Get, "/a?x"), "another query");
        assert!(!r(1_200_000, 0, Method::Get, "/a"), "600 ms later: new");
        assert_eq!(f.folded, 2);
        assert!(f.last.len() <= 4, "old keys forgotten: {}", f.last.len());
    }
}
