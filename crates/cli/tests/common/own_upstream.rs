//! `herd upstream SCENARIO` as a service of its own, for tests that put something (herd's
//! front, a calibration) before it and read what it counted.

use super::nginx::free_port;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `herd upstream SCENARIO` on a free port, killed when dropped.
pub struct OwnUpstream {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    addr: std::net::SocketAddr,
}

impl OwnUpstream {
    /// Writes `model` (a scenario whose `[upstream]` table is used) into `dir` and serves it.
    pub fn start(dir: &Path, model: &str) -> OwnUpstream {
        let path = dir.join("own.toml");
        std::fs::write(&path, model).unwrap();
        let addr = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
            .args(["upstream", path.to_str().unwrap(), "--listen"])
            .arg(addr.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("herd upstream starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(addr).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("herd upstream exited: {status}");
            }
            assert!(Instant::now() < deadline, "herd upstream did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        OwnUpstream {
            child,
            url: format!("http://{addr}"),
            addr,
        }
    }

    /// Its `GET /__herd/stats`.
    pub fn stats(&self) -> serde_json::Value {
        let mut s = std::net::TcpStream::connect(self.addr).expect("connects");
        s.write_all(b"GET /__herd/stats HTTP/1.1\r\nHost: herd\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        let body = reply.split_once("\r\n\r\n").expect("a response").1;
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {reply}"))
    }
}

impl Drop for OwnUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
