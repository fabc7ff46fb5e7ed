//! Each arm driven by a thread of its own, on a single-threaded runtime.
//!
//! On a shared multi-threaded runtime, every wake-up of a request's task could rouse a
//! parked worker (a futex call and two context switches), and a load tool's CPU went more
//! to moving work between threads than to the work. An arm's requests share nothing with
//! the other arms' or with herd's upstream but a few counters, so the arm gets one thread
//! that runs its pacing ([`super::pace::Pacer`]), its requests' tasks and its sockets: the
//! thread sleeps in one place and a request costs one task and the syscalls of its
//! exchange, as in wrk. herd's own upstream keeps the process's multi-threaded runtime,
//! so the two sides of a run do not compete for one thread.

use std::future::Future;
use std::io;

/// Starts the future `make` returns on a new thread named `name` with a single-threaded
/// runtime of its own; the returned future is its output. The future is made on that
/// thread, so it need not be `Send`; what `make` captures must be.
pub(super) fn on_own_thread<T, F>(
    name: String,
    make: impl FnOnce() -> F + Send + 'static,
) -> io::Result<impl Future<Output = io::Result<T>>>
where
    T: Send + 'static,
    F: Future<Output = io::Result<T>>,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name(name).spawn(move || {
        let result = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .and_then(|rt| rt.block_on(make()));
        let _ = tx.send(result);
    })?;
    Ok(async move {
        rx.await
            .map_err(|_| io::Error::other("an arm's driving thread ended without a result"))?
    })
}
