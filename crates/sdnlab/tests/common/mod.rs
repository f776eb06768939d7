//! Helpers the command-line tests share.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A path of this test process's own under the temporary directory,
/// `sdnlab-KIND-PID-NAME`, emptied if an earlier run left it there.
pub fn scratch(kind: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sdnlab-{kind}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A loopback port free now, for a process to bind: netlab's, below the
/// ephemeral range, so no other test's process takes it in the meantime.
pub fn free_port() -> u16 {
    netlab::ports::free_loopback_port().unwrap()
}

/// What is left of run `id`: namespaces, root interfaces, state, processes.
pub fn leftovers(id: &str) -> Vec<String> {
    let mut left = Vec::new();
    for e in std::fs::read_dir("/run/netns").into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&format!("sdnlab-{id}-")) {
            left.push(format!("namespace {n}"));
        }
    }
    for e in std::fs::read_dir("/sys/class/net").into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&format!("sl{id}")) {
            left.push(format!("interface {n}"));
        }
    }
    let dir = format!("/run/sdnlab/net/{id}");
    if Path::new(&dir).exists() {
        left.push(format!("state {dir}"));
    }
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(&format!("{dir}/")) {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                if !stat.contains(") Z ") {
                    left.push(format!("process {cmd}"));
                }
            }
        }
    }
    left
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs sdnlab with `args` to its end: whether it succeeded, and what it
/// printed (its standard output, then its standard error).
pub fn sdnlab_says<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> (bool, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sdnlab")).args(args).output().unwrap();
    (o.status.success(), format!("{}{}", text(&o.stdout), text(&o.stderr)))
}

pub fn sh(cmd: &[&str]) -> Output {
    Command::new(cmd[0]).args(&cmd[1..]).output().unwrap()
}

pub fn ok(cmd: &[&str]) -> String {
    let out = sh(cmd);
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Two hosts (h1 10.77.0.1, h2 10.77.0.2) on veths whose root ends the
/// switch uses; removed on drop.
pub struct Hosts {
    pub tag: String,
}

impl Hosts {
    /// `prefix`: the test file's own (namespaces and interfaces are named
    /// by it), `tag`: the test's.
    pub fn new(prefix: &str, tag: &str) -> Hosts {
        let tag = format!("{prefix}{}{}", tag, std::process::id() % 1000);
        let h = Hosts { tag };
        h.remove();
        for i in 1..=2 {
            let ns = h.ns(i);
            ok(&["ip", "netns", "add", &ns]);
            ok(&[
                "ip",
                "link",
                "add",
                &h.port(i),
                "type",
                "veth",
                "peer",
                "name",
                &h.host_if(i),
            ]);
            ok(&["ip", "link", "set", &h.host_if(i), "netns", &ns]);
            ok(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("10.77.0.{i}/24"),
                "dev",
                &h.host_if(i),
            ]);
            ok(&["ip", "-n", &ns, "link", "set", &h.host_if(i), "up"]);
            ok(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            ok(&["ip", "link", "set", &h.port(i), "up"]);
        }
        h
    }
    pub fn ns(&self, i: u32) -> String {
        format!("{}-h{i}", self.tag)
    }
    pub fn port(&self, i: u32) -> String {
        format!("{}p{i}", self.tag)
    }
    pub fn host_if(&self, i: u32) -> String {
        format!("{}e{i}", self.tag)
    }
    pub fn exec(&self, i: u32, cmd: &[&str]) -> Output {
        let ns = self.ns(i);
        let mut args = vec!["ip", "netns", "exec", &ns];
        args.extend(cmd);
        sh(&args)
    }
    pub fn ping(&self, count: u32) -> bool {
        self.exec(
            1,
            &["ping", "-c", &count.to_string(), "-i", "0.1", "-W", "1", "10.77.0.2"],
        )
        .status
        .success()
    }
    pub fn remove(&self) {
        for i in 1..=2 {
            let _ = sh(&["ip", "link", "del", &self.port(i)]);
            let _ = sh(&["ip", "netns", "del", &self.ns(i)]);
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The page as headless Chromium (Debian's) builds it: the serialised DOM
/// after load, what it logged (console messages included), and a
/// screenshot at `png`.
pub fn chromium(page: &Path, png: &Path) -> (String, String) {
    let profile = page.with_file_name("chromium-profile");
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let dom = Command::new("chromium")
        .args(common)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("chromium (apt-get install chromium; scripts/install-deps.sh does)");
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let shot = Command::new("chromium")
        .args(common)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args([
            "--window-size=1200,2600",
            &format!("--screenshot={}", png.display()),
            &url,
        ])
        .output()
        .unwrap();
    assert!(shot.status.success(), "{}", String::from_utf8_lossy(&shot.stderr));
    let _ = std::fs::remove_dir_all(profile);
    (
        String::from_utf8_lossy(&dom.stdout).into_owned(),
        String::from_utf8_lossy(&dom.stderr).into_owned(),
    )
}

/// Reads `sdnlab net up`'s output until its "up;" line: what it printed
/// so far, the run's id, and the reader of the rest (panics with its
/// stderr if it exits first).
pub fn until_up(child: &mut std::process::Child) -> (String, String, std::io::BufReader<std::process::ChildStdout>) {
    use std::io::BufRead;
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut summary = String::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
            panic!("sdnlab net up exited: {summary}{err}");
        }
        summary.push_str(&line);
        if line.starts_with("up;") {
            break;
        }
    }
    let id = summary
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    (summary, id, out)
}

/// Sends SIGINT to `child` and waits (`within` at most) for it to end:
/// how it ended, and what it said on stderr.
pub fn interrupt(
    child: &mut std::process::Child,
    within: std::time::Duration,
    what: &str,
) -> (std::process::ExitStatus, String) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let deadline = std::time::Instant::now() + within;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: still running {within:?} after SIGINT"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status, err)
}

/// Moments to stop a program at, different in each run (clock and
/// process id); the caller prints each, so a failure can be replayed.
pub struct Moments(u64);

impl Moments {
    pub fn new() -> Moments {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
        Moments(nanos ^ u64::from(std::process::id()).rotate_left(17))
    }

    /// A moment `from_ms` plus up to `within_ms` after a start.
    pub fn next(&mut self, from_ms: u64, within_ms: u64) -> std::time::Duration {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::time::Duration::from_millis(from_ms + (self.0 >> 33) % within_ms.max(1))
    }
}

/// Starts `cmd` (its stderr piped) and, if it still runs after `at`,
/// stops it as Ctrl-C would (`interrupt`): the child, its exit status
/// and what it said; None when it ended by itself before `at`.
pub fn stop_after(
    cmd: &mut Command,
    at: std::time::Duration,
    moment: &str,
) -> Option<(std::process::Child, std::process::ExitStatus, String)> {
    let mut child = cmd.stderr(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(at);
    if child.try_wait().unwrap().is_some() {
        return None;
    }
    let (status, err) = interrupt(&mut child, std::time::Duration::from_secs(60), moment);
    Some((child, status, err))
}

/// An interrupted experiment's run directory, if it wrote one: `sdnlab
/// report` reads it, and its meta.json says `said` ("interrupted").
pub fn assert_reads_interrupted(out: &Path, said: &str, moment: &str) {
    if !out.join("meta.json").exists() {
        return;
    }
    let report = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .arg("report")
        .arg(out)
        .output()
        .unwrap();
    assert!(report.status.success(), "{moment}: {}", text(&report.stderr));
    let meta = std::fs::read_to_string(out.join("meta.json")).unwrap();
    assert!(meta.contains(said), "{moment}: {meta}");
}

/// The networks `net up` holds now (their directories under
/// /run/sdnlab/net).
pub fn net_runs() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/run/sdnlab/net")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}
