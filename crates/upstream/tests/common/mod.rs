//! Raw HTTP/1.1 on TCP for the upstream's end-to-end tests: requests written by hand, so a
//! reset or a refused head shows up exactly as a client would see it, with no client
//! library retrying or rewriting behind our back.

#![allow(dead_code)]

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Fails the test instead of hanging it.
pub async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(15), f)
        .await
        .expect("test took too long")
}

/// One parsed response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Status line and headers, lowercased.
    pub head: String,
    pub body: String,
}

/// Sends `GET path` on `stream` (kept alive) and reads one response.
pub async fn send(stream: &mut TcpStream, path: &str) -> io::Result<Reply> {
    send_with(stream, path, "").await
}

/// Sends `GET path` with `headers` (each line ending in `\r\n`) and reads one response.
pub async fn send_with(stream: &mut TcpStream, path: &str, headers: &str) -> io::Result<Reply> {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n");
    stream.write_all(req.as_bytes()).await?;
    read_reply(stream).await
}

/// Reads one response from `stream`.
pub async fn read_reply(stream: &mut TcpStream) -> io::Result<Reply> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or(io::ErrorKind::InvalidData)?;
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < end + len {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[end..end + len]).into_owned();
    Ok(Reply { status, head, body })
}

/// `GET path` on a fresh connection.
pub async fn get(addr: SocketAddr, path: &str) -> io::Result<Reply> {
    let mut s = TcpStream::connect(addr).await?;
    send(&mut s, path).await
}

/// `GET path` with `headers` on a fresh connection.
pub async fn get_with(addr: SocketAddr, path: &str, headers: &str) -> io::Result<Reply> {
    let mut s = TcpStream::connect(addr).await?;
    send_with(&mut s, path, headers).await
}
