//! The process's open-file limit: raised as far as allowed at start, and explained in one
//! sentence when it runs out.
//!
//! Every connection is a file descriptor, on both ends of a run. Many systems start a
//! process with a soft limit of 1024 but allow far more (the hard limit), so herd raises
//! its own soft limit to the hard one before it opens anything; what remains is a limit
//! only the operator can raise, and [`exhausted`] says how.

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// How many times this process ran out of descriptors where it opens sockets (the
/// upstream's accept, the driver's connect), as counted by [`note`]: the limit is the
/// process's, so the count is too, and a run compares it with the count at its start.
static RAN_OUT: AtomicU64 = AtomicU64::new(0);

/// The error code of the last time [`RAN_OUT`] was counted.
static LAST: AtomicI32 = AtomicI32::new(0);

/// Raises the soft limit on open files to the hard limit. Returns the limit now in force
/// (None where it cannot be read).
pub fn raise() -> Option<u64> {
    imp::raise()
}

/// The limit on open files now in force, if it can be read.
pub fn current() -> Option<u64> {
    imp::current()
}

/// If `e` says the process (or the system) ran out of file descriptors, one sentence that
/// says so, with the limit and how to raise it.
pub fn exhausted(e: &io::Error) -> Option<String> {
    const EMFILE: i32 = 24;
    const ENFILE: i32 = 23;
    match e.raw_os_error() {
        Some(EMFILE) => Some(match current() {
            Some(n) => format!(
                "out of file descriptors: this process may have {n} open at once; raise the limit \
                 before starting herd (`ulimit -n {}`, or LimitNOFILE= for a systemd service)",
                (n * 4).max(65_536)
            ),
            None => {
                "out of file descriptors; raise the limit before starting herd (`ulimit -n 65536`)"
                    .to_owned()
            }
        }),
        Some(ENFILE) => Some(
            "the system is out of file descriptors (all processes together); raise fs.file-max \
             (`sysctl fs.file-max`) or close other programs"
                .to_owned(),
        ),
        _ => None,
    }
}

/// [`exhausted`], counting the exhaustion in [`ran_out`] when it is one: for the places
/// that open sockets, so a run can stop and say so instead of counting failures.
pub fn note(e: &io::Error) -> Option<String> {
    let sentence = exhausted(e)?;
    if let Some(code) = e.raw_os_error() {
        LAST.store(code, Ordering::Relaxed);
    }
    RAN_OUT.fetch_add(1, Ordering::Relaxed);
    Some(sentence)
}

/// How many exhaustions [`note`] has counted in this process so far, with the sentence
/// for the last one (`None` before any).
pub fn ran_out() -> (u64, Option<String>) {
    let n = RAN_OUT.load(Ordering::Relaxed);
    let last = io::Error::from_raw_os_error(LAST.load(Ordering::Relaxed));
    (n, exhausted(&last).filter(|_| n > 0))
}

#[cfg(unix)]
mod imp {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

    pub(super) fn raise() -> Option<u64> {
        let lim = getrlimit(Resource::Nofile);
        if lim.current < lim.maximum {
            let raised = Rlimit {
                current: lim.maximum,
                maximum: lim.maximum,
            };
            if let Err(e) = setrlimit(Resource::Nofile, raised) {
                tracing::debug!("cannot raise the open-file limit: {e}");
            }
        }
        current()
    }

    pub(super) fn current() -> Option<u64> {
        getrlimit(Resource::Nofile).current
    }
}

#[cfg(not(unix))]
mod imp {
    pub(super) fn raise() -> Option<u64> {
        None
    }

    pub(super) fn current() -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_descriptor_exhaustion_is_explained() {
        let emfile = exhausted(&io::Error::from_raw_os_error(24)).expect("EMFILE");
        assert!(emfile.contains("ulimit -n"), "{emfile}");
        assert!(exhausted(&io::Error::from_raw_os_error(23)).is_some());
        assert_eq!(exhausted(&io::Error::from_raw_os_error(104)), None);
        assert_eq!(exhausted(&io::Error::other("x")), None);
    }

    #[cfg(unix)]
    #[test]
    fn raising_reaches_the_hard_limit() {
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        assert_eq!(raise(), hard);
    }
}
