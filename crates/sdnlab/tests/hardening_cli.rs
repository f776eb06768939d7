//! Hardening, as an attacker on the same machine would try it: a peer that
//! resets a connection with replies unread must not kill a daemon (SIGPIPE),
//! and nothing sdnlab makes may go through a path another user planted.

mod common;

use common::free_port;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sdnlab");

/// A fresh private directory for one test (removed on drop).
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let out = Command::new("mktemp")
            .args(["-d", &format!("/tmp/sdnlab-hard-{test}.XXXXXX")])
            .output()
            .unwrap();
        Scratch(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sdnlab credentials DIR`, as a user would run it.
fn credentials(dir: &Path) -> std::process::Output {
    Command::new(BIN).arg("credentials").arg(dir).output().unwrap()
}

fn wait_listening(child: &mut Child, port: u16) {
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the daemon exited before listening"
        );
        assert!(t.elapsed() < Duration::from_secs(20), "nothing listened on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A TLS client that sends `n` pipelined requests for `path` and resets
/// the connection (SO_LINGER 0) without reading a byte of the answers.
const PIPELINE_AND_RESET: &str = r#"
import socket, ssl, struct, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
for _ in range(int(sys.argv[3])):
    try:
        raw = socket.create_connection(("127.0.0.1", port))
        t = ctx.wrap_socket(raw)
    except OSError as e:
        print("the API is gone:", e)
        break
    req = ("GET /stats HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port).encode()
    try:
        t.sendall(req * n)
    except OSError:
        pass
    time.sleep(0.02)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    t.close()
"#;

#[test]
fn a_tls_client_resetting_after_pipelined_requests_does_not_kill_the_controller() {
    let dir = Scratch::new("rest");
    let creds = dir.0.join("creds");
    let st = credentials(&creds);
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let (of, rest) = (free_port(), free_port());
    let mut ctl = Daemon(
        Command::new(BIN)
            .args(["controller", "--listen", &format!("127.0.0.1:{of}")])
            .args(["--rest", &format!("127.0.0.1:{rest}")])
            .arg("--rest-tls-cert")
            .arg(creds.join("worker.pem"))
            .arg("--rest-tls-key")
            .arg(creds.join("worker-key.pem"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(&mut ctl.0, rest);
    let out = Command::new("python3")
        .args(["-c", PIPELINE_AND_RESET, &rest.to_string(), "200", "30"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the client: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        ctl.0.try_wait().unwrap(),
        None,
        "the controller died of a client that reset its connection"
    );
    // And it still answers.
    let ok = Command::new("curl")
        .args(["-s", "-k", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("https://127.0.0.1:{rest}/stats"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "200");
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn credentials_go_into_a_private_directory_and_never_through_a_symlink() {
    let dir = Scratch::new("creds");
    // A fresh directory is made 0700, its keys 0600.
    let fresh = dir.0.join("fresh");
    let st = credentials(&fresh);
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    assert_eq!(mode(&fresh), 0o700);
    for key in ["ca-key.pem", "worker-key.pem", "coordinator-key.pem"] {
        assert_eq!(mode(&fresh.join(key)), 0o600, "{key}");
    }
    // A key planted as a symlink to someone else's file: refused, the file untouched.
    let planted = dir.0.join("planted");
    std::fs::create_dir(&planted).unwrap();
    let victim = dir.0.join("victim");
    std::fs::write(&victim, "theirs\n").unwrap();
    std::os::unix::fs::symlink(&victim, planted.join("worker-key.pem")).unwrap();
    let st = credentials(&planted);
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "theirs\n");
    // The directory itself a symlink: refused.
    let link = dir.0.join("link");
    std::os::unix::fs::symlink(&fresh, &link).unwrap();
    let st = credentials(&link);
    assert!(!st.status.success());
    // A directory others may write into: refused.
    let open = dir.0.join("open");
    std::fs::create_dir(&open).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let st = credentials(&open);
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(!st.status.success() && err.contains("others"), "{err}");
}

#[test]
fn a_peer_environment_planted_by_another_user_is_never_run() {
    let dir = Scratch::new("cache");
    // The cache as another user (nobody) would leave it for root to find:
    // their directory, their "python".
    let cache = dir.0.join("cache");
    let bin = cache.join("sdnlab/peers/osken/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = dir.0.join("ran");
    let py = bin.join("python");
    std::fs::write(&py, format!("#!/bin/sh\ntouch {}\nexit 0\n", marker.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let st = Command::new("chown")
        .args(["-R", "nobody"])
        .arg(cache.join("sdnlab"))
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(BIN)
        .args("bench ctl --peer os-ken --trials 1 --loops 1 --switches 1".split_whitespace())
        .arg("--out")
        .arg(dir.0.join("run"))
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(!marker.exists(), "root ran a file another user planted: {err}");
    assert!(err.contains("belongs to user"), "{err}");
}

/// Raises this process's soft open-file limit to its hard one.
fn raise_own_file_limit() {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write one rlimit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
    }
}

#[test]
fn a_flood_of_connections_cannot_keep_the_coordinator_out_of_a_worker() {
    use std::io::{BufRead, Write};
    raise_own_file_limit();
    let dir = Scratch::new("worker");
    let creds = dir.0.join("creds");
    let st = credentials(&creds);
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let port = free_port();
    // The worker as a systemd unit's default would leave it: 1,024 files.
    let mut worker = Daemon(
        Command::new("prlimit")
            .arg("--nofile=1024:1024")
            .arg(BIN)
            .args(["worker", "--listen", &format!("127.0.0.1:{port}"), "--credentials"])
            .arg(&creds)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(&mut worker.0, port);
    // 1,100 connections that never start their TLS handshake.
    let flood: Vec<std::net::TcpStream> = (0..1100)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // The coordinator: its certificate, a hello, the worker's answer.
    let t = Instant::now();
    let cfg = fleet::creds::coordinator_config(&fleet::creds::Credentials::in_dir(
        &creds,
        fleet::creds::Role::Coordinator,
    ))
    .unwrap();
    let name = rustls::pki_types::ServerName::try_from(fleet::proto::WORKER_NAME).unwrap();
    let conn = rustls::ClientConnection::new(cfg, name).unwrap();
    let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let hello = fleet::proto::Request {
        id: 1,
        call: fleet::proto::Call::Hello {
            version: fleet::proto::VERSION,
            lease_ms: 5000,
        },
    };
    let answer = tls
        .write_all(&fleet::proto::line(&hello))
        .and_then(|_| {
            let mut line = String::new();
            std::io::BufReader::new(&mut tls).read_line(&mut line).map(|_| line)
        })
        .unwrap_or_else(|e| panic!("the coordinator was kept out ({:?}): {e}", t.elapsed()));
    let r: fleet::proto::Response = serde_json::from_str(&answer).unwrap();
    assert!(matches!(r.reply, fleet::proto::Reply::Hello { .. }), "{answer}");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "the coordinator waited {:?} behind the flood",
        t.elapsed()
    );
    drop(flood);
}
