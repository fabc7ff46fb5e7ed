//! One HTTP/1.1 exchange on a kept-alive connection, as the driver sends it: a request
//! without a body, then the response's head and its whole body, read and discarded.
//!
//! Why not hyper's client connection: it runs a dispatcher between the request and the
//! socket (a channel in, a channel out, a body stream, a `HeaderMap` for every response),
//! and under callgrind that was ~14,500 instructions of the ~28,500 the driver spent per
//! request, more than the server it measured spent on the same request. A load tool's
//! overhead is part of every latency it reports, so the driver speaks the little HTTP/1.1
//! it needs directly, as wrk does: one `write` per request, `httparse` (hyper's own
//! parser) for the response head, and the message-length rules of RFC 9112 §6.3 for the
//! body: no body for `HEAD`, 1xx, 204 and 304; chunked (chunk extensions and trailers
//! skipped); `Content-Length`; otherwise until the server closes. It never re-sends
//! anything, so there is no hidden retry.

use super::stream::Stream;
use std::io;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
#[cfg(test)]
use tokio::net::TcpStream;

/// The most bytes of one response head (or chunk line, or trailer section) held before
/// the response is refused.
const MAX_HEAD: usize = 64 * 1024;
/// The most header fields in one response head (hyper's default).
const MAX_HEADERS: usize = 100;
/// The read buffer's starting size: a typical response head and body fit in one read.
const BUF: usize = 4 * 1024;

/// Why an exchange got no response.
#[derive(Debug)]
pub(super) enum WireError {
    /// Reading or writing failed.
    Io(io::Error),
    /// The server closed the connection before the response was whole.
    Closed,
    /// The response was not HTTP/1.x as RFC 9112 frames it.
    Malformed(&'static str),
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}

/// What the client needs of a response: its status, its `Retry-After` and its AWS error
/// code (`x-amzn-ErrorType`, which says whether it is throttling), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Answer {
    pub status: u16,
    pub retry_after: Option<Box<str>>,
    pub error_code: Option<Box<str>>,
}

/// How the body after a head is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

/// A response head, read.
struct Head {
    answer: Answer,
    body: Body,
    keep_alive: bool,
    informational: bool,
}

/// One open connection and the bytes read from it but not yet used.
#[derive(Debug)]
pub(super) struct Wire {
    stream: Stream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
}

impl Wire {
    pub fn new(stream: Stream) -> Wire {
        Wire {
            stream,
            buf: vec![0; BUF],
            start: 0,
            end: 0,
            out: Vec::with_capacity(256),
        }
    }

    /// Whether an idle connection can take a request: the server has neither closed it
    /// nor sent anything unasked. Costs no system call unless the socket was reported
    /// readable (tokio keeps its readiness).
    pub fn usable(&mut self) -> bool {
        self.stream.idle_and_open()
    }

    /// Sends `method target` with `host` and the request id header, reads the response
    /// (skipping any 1xx) and its body. `Ok((answer, reusable))`: `reusable` is false
    /// when the server asked to close, the body ran to the close, or bytes followed it.
    pub async fn exchange(
        &mut self,
        method: &str,
        target: &str,
        host: &str,
        id_header: (&str, u64),
    ) -> Result<(Answer, bool), WireError> {
        write_request(&mut self.out, method, target, host, id_header);
        self.stream.write_all(&self.out).await?;
        if matches!(self.stream, Stream::Tls(_)) {
            self.stream.flush().await?;
        }
        let head = loop {
            let head = self.read_head().await?;
            if !head.informational {
                break head;
            }
        };
        let body = if method == "HEAD" {
            Body::Empty
        } else {
            head.body
        };
        let closed = match body {
            Body::Empty => false,
            Body::Length(n) => {
                self.skip(n).await?;
                false
            }
            Body::Chunked => {
                self.skip_chunked().await?;
                false
            }
            Body::UntilClose => {
                self.skip_to_close().await?;
                true
            }
        };
        let reusable = head.keep_alive && !closed && self.start == self.end;
        Ok((head.answer, reusable))
    }

    /// Reads until one response head is whole and parses it.
    async fn read_head(&mut self) -> Result<Head, WireError> {
        loop {
            if self.start < self.end {
                if let Some((n, head)) = parse_head(&self.buf[self.start..self.end])? {
                    self.start += n;
                    return Ok(head);
                }
            }
            if self.fill().await? == 0 {
                return Err(WireError::Closed);
            }
        }
    }

    /// Reads more bytes after the ones held; 0 at the end of the stream. The buffer grows
    /// only while what it holds is one unfinished head, chunk line or trailer, and never
    /// past [`MAX_HEAD`]: a server that sends more is refused, not buffered.
    async fn fill(&mut self) -> Result<usize, WireError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() >= MAX_HEAD {
                return Err(WireError::Malformed(
                    "response head or chunk line too large",
                ));
            } else {
                self.buf.resize((self.buf.len() * 2).min(MAX_HEAD), 0);
            }
        }
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n)
    }

    /// Consumes `n` body bytes.
    async fn skip(&mut self, mut n: u64) -> Result<(), WireError> {
        loop {
            let held = (self.end - self.start) as u64;
            let take = held.min(n);
            self.start += take as usize;
            n -= take;
            if n == 0 {
                return Ok(());
            }
            if self.fill().await? == 0 {
                return Err(WireError::Closed);
            }
        }
    }

    /// Consumes a chunked body: chunks, the last (empty) chunk, trailer fields.
    async fn skip_chunked(&mut self) -> Result<(), WireError> {
        loop {
            let size = loop {
                match httparse::parse_chunk_size(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete((n, size))) => {
                        self.start += n;
                        break size;
                    }
                    Ok(httparse::Status::Partial) => {
                        if self.fill().await? == 0 {
                            return Err(WireError::Closed);
                        }
                    }
                    Err(_) => return Err(WireError::Malformed("bad chunk size")),
                }
            };
            if size == 0 {
                return self.skip_trailers().await;
            }
            self.skip(size).await?;
            self.expect_crlf().await?;
        }
    }

    /// The CRLF after a chunk's data.
    async fn expect_crlf(&mut self) -> Result<(), WireError> {
        while self.end - self.start < 2 {
            if self.fill().await? == 0 {
                return Err(WireError::Closed);
            }
        }
        if &self.buf[self.start..self.start + 2] != b"\r\n" {
            return Err(WireError::Malformed("chunk data not followed by CRLF"));
        }
        self.start += 2;
        Ok(())
    }

    /// Trailer fields after the last chunk, up to the empty line.
    async fn skip_trailers(&mut self) -> Result<(), WireError> {
        let mut taken = 0;
        loop {
            let held = &self.buf[self.start..self.end];
            if let Some(i) = held.windows(2).position(|w| w == b"\r\n") {
                self.start += i + 2;
                if i == 0 {
                    return Ok(());
                }
                taken += i + 2;
                if taken > MAX_HEAD {
                    return Err(WireError::Malformed("trailer section too large"));
                }
                continue;
            }
            if self.fill().await? == 0 {
                return Err(WireError::Closed);
            }
        }
    }

    /// A body that ends when the server closes the connection.
    async fn skip_to_close(&mut self) -> Result<(), WireError> {
        self.start = self.end;
        while self.fill().await? > 0 {
            self.start = self.end;
        }
        Ok(())
    }
}

/// The request as it goes on the wire, into `out` (cleared first). Header names in
/// lower case, as hyper sends them; `content-length: 0` for the methods whose requests
/// carry a body by convention, as hyper does for an empty one.
fn write_request(out: &mut Vec<u8>, method: &str, target: &str, host: &str, id: (&str, u64)) {
    use std::io::Write;
    out.clear();
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(id.0.as_bytes());
    let _ = write!(out, ": {}\r\n", id.1);
    if matches!(method, "POST" | "PUT" | "PATCH") {
        out.extend_from_slice(b"content-length: 0\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Parses one response head from the front of `bytes`: `None` while it is incomplete,
/// else its length and what it says.
fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Head)>, WireError> {
    // Uninitialised room for the fields, as hyper parses: zeroing a hundred of them per
    // response would cost more than parsing a typical head.
    let mut fields = [std::mem::MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let n = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        bytes,
        &mut fields,
    ) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(WireError::Malformed("too many header fields"))
        }
        Err(_) => return Err(WireError::Malformed("not an HTTP/1.x response head")),
    };
    let status = resp.code.unwrap_or(0);
    let http11 = resp.version == Some(1);
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut encoded = false;
    let mut close = false;
    let mut keep_alive = false;
    let mut retry_after = None;
    let mut error_code = None;
    for f in resp.headers.iter() {
        let name = f.name;
        if name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(f.value)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or(WireError::Malformed("bad content-length"))?;
            if length.is_some_and(|l| l != v) {
                return Err(WireError::Malformed("conflicting content-length"));
            }
            length = Some(v);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            encoded = true;
            // Chunked only when it is the last coding applied.
            chunked = tokens(f.value)
                .last()
                .is_some_and(|t| t.eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case("connection") {
            for t in tokens(f.value) {
                close |= t.eq_ignore_ascii_case(b"close");
                keep_alive |= t.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("retry-after") {
            retry_after = std::str::from_utf8(f.value).ok().map(Box::from);
        } else if name.eq_ignore_ascii_case("x-amzn-errortype") {
            error_code = std::str::from_utf8(f.value).ok().map(Box::from);
        }
    }
    let informational = (100..200).contains(&status) && status != 101;
    let body = if informational || status == 101 || status == 204 || status == 304 {
        Body::Empty
    } else if encoded {
        if chunked {
            Body::Chunked
        } else {
            Body::UntilClose
        }
    } else if let Some(l) = length {
        Body::Length(l)
    } else {
        Body::UntilClose
    };
    let head = Head {
        answer: Answer {
            status,
            retry_after,
            error_code,
        },
        body,
        keep_alive: !close && (http11 || keep_alive) && status != 101,
        informational,
    };
    Ok(Some((n, head)))
}

/// The comma-separated tokens of a header value, trimmed.
fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(|t| t.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A server that reads one request head, answers with `reply` (written in pieces of
    /// `piece` bytes, to cross reads) and then closes if `close`; gives back the request.
    async fn serve_once(
        reply: &'static [u8],
        piece: usize,
        close: bool,
    ) -> (Wire, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut req = Vec::new();
            let mut b = [0u8; 1024];
            while !req.ends_with(b"\r\n\r\n") {
                let n = s.read(&mut b).await.unwrap();
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&b[..n]);
            }
            for p in reply.chunks(piece) {
                s.write_all(p).await.unwrap();
                s.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
            if close {
                drop(s);
            } else {
                // Keep the connection open until the client is done with it.
                let _ = s.read(&mut b).await;
            }
            req
        });
        let wire = Wire::new(Stream::Plain(TcpStream::connect(addr).await.unwrap()));
        (wire, server)
    }

    async fn get(
        reply: &'static [u8],
        piece: usize,
        close: bool,
    ) -> Result<(Answer, bool), WireError> {
        let (mut w, _server) = serve_once(reply, piece, close).await;
        w.exchange("GET", "/x?y=1", "example:80", ("x-herd-request-id", 7))
            .await
    }

    fn ok(status: u16) -> Answer {
        Answer {
            status,
            retry_after: None,
            error_code: None,
        }
    }

    #[tokio::test]
    async fn the_request_is_what_hyper_would_send() {
        let (mut w, server) =
            serve_once(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", 64, true).await;
        w.exchange("POST", "/p", "h:1", ("x-herd-request-id", 42))
            .await
            .unwrap();
        let req = server.await.unwrap();
        assert_eq!(
            String::from_utf8(req).unwrap(),
            "POST /p HTTP/1.1\r\nhost: h:1\r\nx-herd-request-id: 42\r\ncontent-length: 0\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn a_body_of_known_length_is_read_whatever_the_reads() {
        for piece in [1, 3, 1000] {
            let r = get(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Length: 5\r\n\r\nhello", piece, false).await;
            let (a, reusable) = r.unwrap();
            assert_eq!(a.status, 503);
            assert_eq!(a.retry_after.as_deref(), Some("2"));
            assert!(reusable, "piece {piece}");
        }
    }

    #[tokio::test]
    async fn a_chunked_body_with_extensions_and_trailers_is_read() {
        let reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\n";
        for piece in [1, 2, 7, 1000] {
            assert_eq!(
                get(reply, piece, false).await.unwrap(),
                (ok(200), true),
                "piece {piece}"
            );
        }
    }

    #[tokio::test]
    async fn a_body_until_close_ends_the_connection() {
        let r = get(b"HTTP/1.1 200 OK\r\n\r\nsome bytes", 4, true).await;
        assert_eq!(r.unwrap(), (ok(200), false));
        let r = get(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx",
            4,
            true,
        )
        .await;
        assert_eq!(r.unwrap(), (ok(200), false));
    }

    #[tokio::test]
    async fn interim_responses_are_skipped_and_bodiless_statuses_have_no_body() {
        let r = get(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: x\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 5, false).await;
        assert_eq!(r.unwrap(), (ok(204), true));
        let r = get(
            b"HTTP/1.1 304 Not Modified\r\ncontent-length: 99\r\n\r\n",
            64,
            false,
        )
        .await;
        assert_eq!(r.unwrap(), (ok(304), true));
    }

    #[tokio::test]
    async fn the_server_can_ask_to_close() {
        let r = get(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 2\r\n\r\nok",
            64,
            true,
        )
        .await;
        assert_eq!(r.unwrap(), (ok(200), false));
        let r = get(b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok", 64, true).await;
        assert_eq!(r.unwrap(), (ok(200), false));
        let r = get(
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\ncontent-length: 2\r\n\r\nok",
            64,
            false,
        )
        .await;
        assert_eq!(r.unwrap(), (ok(200), true));
    }

    #[tokio::test]
    async fn bytes_after_the_response_make_the_connection_unusable() {
        let r = get(
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA",
            64,
            false,
        )
        .await;
        assert_eq!(r.unwrap(), (ok(200), false));
    }

    #[tokio::test]
    async fn a_close_before_the_response_is_whole_is_closed() {
        for reply in [
            &b""[..],
            b"HTTP/1.1 200 OK\r\ncontent-le",
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel",
        ] {
            let r = get(reply, 64, true).await;
            assert!(matches!(r, Err(WireError::Closed)), "{reply:?}: {r:?}");
        }
    }

    #[tokio::test]
    async fn what_is_not_http_is_malformed() {
        for reply in [
            &b"garbage\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        ] {
            let r = get(reply, 64, true).await;
            assert!(
                matches!(r, Err(WireError::Malformed(_))),
                "{reply:?}: {r:?}"
            );
        }
    }

    #[tokio::test]
    async fn an_endless_head_is_refused_not_buffered() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut b = [0u8; 1024];
            let _ = s.read(&mut b).await;
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n").await;
            let line = [b'a'; 1000];
            loop {
                if s.write_all(b"x-a: ").await.is_err()
                    || s.write_all(&line).await.is_err()
                    || s.write_all(b"\r\n").await.is_err()
                {
                    return;
                }
            }
        });
        let mut w = Wire::new(Stream::Plain(TcpStream::connect(addr).await.unwrap()));
        let r = w.exchange("GET", "/", "h", ("x-herd-request-id", 1)).await;
        assert!(matches!(r, Err(WireError::Malformed(_))), "{r:?}");
        assert!(w.buf.len() <= MAX_HEAD);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_not_usable() {
        let (mut w, _server) =
            serve_once(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", 64, true).await;
        let (_, reusable) = w
            .exchange("GET", "/", "h", ("x-herd-request-id", 1))
            .await
            .unwrap();
        assert!(reusable);
        // The server has closed; once the runtime has seen it, the connection is not usable.
        w.stream.tcp().readable().await.unwrap();
        assert!(!w.usable());
    }
}
