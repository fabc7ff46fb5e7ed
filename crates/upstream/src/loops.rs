//! Connections served on event loops of their own: N threads, each a single-threaded
//! runtime, and every accepted connection handed to one of them in turn, as nginx's worker
//! processes each run one event loop.
//!
//! On tokio's multi-threaded runtime a request's wake-up can go to a parked worker (a futex
//! call and a context switch on top of the socket's), and a connection's task moves between
//! workers. On a loop a connection's task, its timers and its socket stay on one thread that
//! sleeps in one place (`epoll_wait`) and serves whatever is ready when it wakes. Measured
//! with `scripts/shards-on-loopback` (four `herd bench` shards at 12,500 req/s each against
//! `herd upstream`, 2-core VM): the upstream spent 17.9–19.2 µs of CPU a request on the
//! multi-threaded runtime and 13.3–14.1 µs on two loops, and the four shards' 50,000 req/s
//! got through (42,532 req/s, 1.6 s behind at the p99, before).
//!
//! What the loops share is the server's state ([`super::shared::Shared`]: counts, fault
//! draws, the capacity's queue), which is already built to be shared across threads; only
//! where a connection's task runs changes, not what it does.
//!
//! A connection stays on the loop it was given, so a client that keeps a few busy
//! connections and many idle ones can load one loop more than another; handing out in turn
//! is what a single accept queue without feedback can do.

use std::future::Future;
use std::io;
use std::thread::JoinHandle;
use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The event loops and whose turn it is.
pub(crate) struct Loops {
    handles: Vec<Handle>,
    next: usize,
    /// Dropped to end the loops.
    end: watch::Sender<()>,
    threads: Vec<JoinHandle<()>>,
}

impl Loops {
    /// Starts `n` (at least one) loop threads, named `herd-loop-I`.
    pub fn start(n: usize) -> io::Result<Loops> {
        let (end, ended) = watch::channel(());
        let mut loops = Loops {
            handles: Vec::with_capacity(n),
            next: 0,
            end,
            threads: Vec::with_capacity(n),
        };
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            loops.handles.push(rt.handle().clone());
            let mut ended = ended.clone();
            let thread = std::thread::Builder::new()
                .name(format!("herd-loop-{i}"))
                .spawn(move || {
                    rt.block_on(async move {
                        // Never sent on: the sender's drop is the signal.
                        let _ = ended.changed().await;
                    });
                })?;
            loops.threads.push(thread);
        }
        Ok(loops)
    }

    /// Serves `stream` on the next loop, with `serve`, as a task of `conns`.
    pub fn spawn<F, Fut>(&mut self, conns: &mut JoinSet<()>, stream: TcpStream, serve: F)
    where
        F: FnOnce(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handle = &self.handles[self.next % self.handles.len()];
        self.next = self.next.wrapping_add(1);
        // The socket leaves the accepting runtime's reactor and joins the loop's.
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => return tracing::debug!("cannot hand a connection to a loop: {e}"),
        };
        conns.spawn_on(
            async move {
                match TcpStream::from_std(stream) {
                    Ok(stream) => serve(stream).await,
                    Err(e) => tracing::debug!("a loop cannot take a connection: {e}"),
                }
            },
            handle,
        );
    }

    /// Ends the loops once their connections are gone (`conns` shut down) and waits for
    /// their threads.
    pub async fn end(self) {
        let Loops { end, threads, .. } = self;
        drop(end);
        let joined = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        });
        let _ = joined.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// Every connection is served, in turn on each loop, and ending the loops ends their
    /// threads.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn connections_go_round_the_loops_and_the_loops_end() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut loops = Loops::start(2).expect("loops");
        let mut conns = JoinSet::new();
        let mut names = Vec::new();
        for _ in 0..4 {
            let mut client = TcpStream::connect(addr).await.expect("connect");
            let (stream, _) = listener.accept().await.expect("accept");
            loops.spawn(&mut conns, stream, |mut s| async move {
                let name = std::thread::current().name().unwrap_or("").to_owned();
                let _ = s.write_all(name.as_bytes()).await;
            });
            let mut name = String::new();
            client.read_to_string(&mut name).await.expect("read");
            names.push(name);
        }
        assert_eq!(
            names,
            ["herd-loop-0", "herd-loop-1", "herd-loop-0", "herd-loop-1"]
        );
        conns.shutdown().await;
        loops.end().await;
    }
}
