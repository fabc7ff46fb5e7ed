//! A real nginx (Debian's, /usr/sbin/nginx) for the proxy tests: one process in the
//! foreground (`daemon off; master_process off`), its own prefix in a temporary directory,
//! listening on a free loopback port, answering `return 200`, with an access log whose
//! lines name the herd arm (`x-herd-arm`) that sent each request. Dropped, it is killed.
//! [`Nginx::rate_limited`] serves a static file behind `limit_req` instead (`return`
//! answers before `limit_req` runs, so it would never limit anything).
//! [`Nginx::tls`] serves HTTPS with a certificate the test made.
//! A missing nginx fails the test (install it: `apt-get install nginx`, as .ci/run does).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The binary Debian's package installs.
pub const NGINX: &str = "/usr/sbin/nginx";

/// A running nginx.
pub struct Nginx {
    child: Option<Child>,
    /// Its loopback address.
    pub addr: SocketAddr,
    /// Its prefix directory (config, logs, temp files).
    pub dir: PathBuf,
    /// Serving HTTPS.
    tls: bool,
}

impl Nginx {
    /// Starts nginx in `dir` (created) and waits until it accepts connections.
    pub fn start(dir: PathBuf) -> Nginx {
        Nginx::with(dir, "", "return 200 \"ok\\n\";")
    }

    /// nginx serving a two-byte static file behind `limit_req zone=one rate=RATE
    /// burst=BURST nodelay`, rejecting with 503.
    pub fn rate_limited(dir: PathBuf, rate: &str, burst: u32) -> Nginx {
        std::fs::create_dir_all(dir.join("html")).expect("nginx html dir");
        std::fs::write(dir.join("html/index.html"), "ok").expect("index.html");
        let http = format!("limit_req_zone $binary_remote_addr zone=one:1m rate={rate};\n  ");
        let location = format!(
            "root {}/html; try_files /index.html =404; limit_req zone=one burst={burst} nodelay; limit_req_status 503;",
            dir.display()
        );
        Nginx::with(dir, &http, &location)
    }

    /// nginx answering `return 200` over HTTPS with the PEM files `cert` and `key`.
    pub fn tls(dir: PathBuf, cert: &std::path::Path, key: &std::path::Path) -> Nginx {
        Nginx::build(dir, "", "return 200 \"ok\\n\";", Some((cert, key)))
    }

    /// nginx with `http` at the top of its `http` block and `location` as the body of
    /// `location /`.
    pub fn with(dir: PathBuf, http: &str, location: &str) -> Nginx {
        Nginx::build(dir, http, location, None)
    }

    fn build(
        dir: PathBuf,
        http: &str,
        location: &str,
        tls: Option<(&std::path::Path, &std::path::Path)>,
    ) -> Nginx {
        assert!(
            std::path::Path::new(NGINX).exists(),
            "{NGINX} not found: the proxy tests need Debian's nginx (apt-get install nginx)"
        );
        std::fs::create_dir_all(dir.join("tmp")).expect("nginx dirs");
        let addr = free_port();
        let d = dir.display();
        let listen = match tls {
            None => format!("{addr}"),
            Some((cert, key)) => format!(
                "{addr} ssl;\n    ssl_certificate {};\n    ssl_certificate_key {}",
                cert.display(),
                key.display()
            ),
        };
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\nevents {{ worker_connections 4096; }}\n\
             http {{\n  {http}access_log off;\n  \
             log_format arm '$msec $http_x_herd_arm $status $request_method $request_uri';\n  \
             client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;\n  \
             uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n  keepalive_requests 1000000;\n  \
             server {{\n    listen {listen};\n    access_log {d}/access.log arm;\n    \
             location / {{ {location} }}\n  }}\n}}\n"
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("nginx.conf");
        let child = Command::new(NGINX)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut n = Nginx {
            child: Some(child),
            addr,
            dir,
            tls: tls.is_some(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            if let Some(Ok(Some(status))) = n.child.as_mut().map(Child::try_wait) {
                panic!("nginx exited ({status}): {}", n.error_log());
            }
            assert!(
                Instant::now() < deadline,
                "nginx did not listen: {}",
                n.error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        n
    }

    /// `http://ADDR` (`https://ADDR` for [`Nginx::tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The access log's lines so far: `msec arm status method uri`.
    pub fn access_log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Lines logged for requests that carried `x-herd-arm: arm`.
    pub fn lines_for(&self, arm: &str) -> usize {
        self.access_log()
            .iter()
            .filter(|l| l.split(' ').nth(1) == Some(arm))
            .count()
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// Kills nginx now (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    l.local_addr().expect("local addr")
}
