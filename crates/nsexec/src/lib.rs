//! The one place the lab runs things in network namespaces and stops what
//! it started: every crate that enters a namespace (the emulation, the
//! traffic generators, the load balancer's servers and loads, the
//! workers) does it through here.
//!
//! - a named namespace is the file `ip netns add` makes under /run/netns;
//! - [`enter`] moves the calling thread into one (a socket opened there
//!   stays there, whichever thread uses it); [`on_thread`] runs a closure on
//!   a thread of its own inside one, so the caller's thread never moves;
//! - [`command`] is a program that starts inside one (like `ip netns exec`,
//!   without the `ip` process, its private /sys or its mount namespace);
//!   tokio's callers convert it (`tokio::process::Command::from`);
//! - [`run_tool`] runs a tool to its end and turns a failure into an error
//!   that says which tool, for what, and what it printed on stderr;
//! - [`stop`] and [`Children`] stop children: SIGTERM to every one at once,
//!   a grace period for each to go, then SIGKILL, and every one reaped.
//!
//! Its own crate, below the emulation (netlab) and the traffic tools, so
//! that neither needs the other for it.

use nix::sched::{setns, CloneFlags};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Where named namespaces are (as `ip netns` keeps them).
pub const NETNS_DIR: &str = "/run/netns";

/// The grace period children get between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);

/// The file of named namespace `name`.
pub fn netns_path(name: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(name)
}

fn open(name: &str) -> io::Result<File> {
    File::open(netns_path(name)).map_err(|e| io::Error::new(e.kind(), format!("namespace {name}: {e}")))
}

/// Moves the calling thread (only it) into namespace `name`.
pub fn enter(name: &str) -> io::Result<()> {
    let f = open(name)?;
    setns(&f, CloneFlags::CLONE_NEWNET).map_err(|e| io::Error::other(format!("setns {name}: {e}")))
}

/// Runs `f` on a thread of its own, inside namespace `netns` (None: this
/// one), and returns what it returns: what `f` opens (a socket, a netlink
/// connection) belongs to that namespace, and the caller's thread stays
/// where it is.
pub fn on_thread<T, F>(netns: Option<&str>, f: F) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> io::Result<T> + Send + 'static,
{
    let netns = netns.map(str::to_string);
    std::thread::spawn(move || {
        if let Some(ns) = &netns {
            enter(ns)?;
        }
        f()
    })
    .join()
    .map_err(|_| io::Error::other("a namespace thread panicked"))?
}

/// A command that runs `program` inside namespace `netns`.
pub fn command(netns: &str, program: impl AsRef<std::ffi::OsStr>) -> io::Result<Command> {
    use std::os::unix::process::CommandExt;
    let fd = open(netns)?;
    let mut c = Command::new(program);
    // SAFETY: setns(2) on an already open descriptor is async-signal-safe
    // and touches nothing of the parent's between fork and exec.
    unsafe {
        c.pre_exec(move || setns(&fd, CloneFlags::CLONE_NEWNET).map_err(io::Error::from));
    }
    Ok(c)
}

/// A tool that could not run, or failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// It did not start (not installed, no permission).
    #[error("{what}: {program}: {source}")]
    Start {
        what: String,
        program: String,
        #[source]
        source: io::Error,
    },
    /// It ran and exited with an error: what it said on stderr.
    #[error("{what}: {stderr}")]
    Failed { what: String, stderr: String },
}

/// Runs `cmd` (for `what`: "rate limit on eth0") to its end; its standard
/// output, or the error its exit and standard error say.
pub fn run_tool(cmd: &mut Command, what: &str) -> Result<String, ToolError> {
    let out = cmd.output().map_err(|source| ToolError::Start {
        what: what.to_string(),
        program: cmd.get_program().to_string_lossy().into_owned(),
        source,
    })?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(ToolError::Failed {
            what: what.to_string(),
            stderr: if said.is_empty() {
                format!("{} ({})", cmd.get_program().to_string_lossy(), out.status)
            } else {
                said
            },
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Stops `children`: SIGTERM to all of them at once, then each gets what
/// is left of `grace` to exit before SIGKILL; every one is reaped.
pub fn stop(children: impl IntoIterator<Item = Child>, grace: Duration) {
    let mut children: Vec<Child> = children.into_iter().collect();
    for c in &children {
        let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    for c in &mut children {
        while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Children stopped (as [`stop`] does, [`GRACE`]) when this is dropped:
/// on every way out of the scope that started them, errors and panics
/// included.
#[derive(Debug, Default)]
pub struct Children(pub Vec<Child>);

impl Children {
    pub fn push(&mut self, c: Child) {
        self.0.push(c);
    }

    /// Stops them now.
    pub fn stop(&mut self) {
        stop(self.0.drain(..), GRACE);
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_failure_says_what_for_and_what_it_printed() {
        let ok = run_tool(Command::new("sh").args(["-c", "echo out"]), "a shell").unwrap();
        assert_eq!(ok, "out\n");
        let e = run_tool(
            Command::new("sh").args(["-c", "echo no such qdisc >&2; exit 2"]),
            "rate limit on eth0",
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "rate limit on eth0: no such qdisc");
        let e = run_tool(&mut Command::new("/nonexistent/tool"), "a tool").unwrap_err();
        assert!(matches!(e, ToolError::Start { .. }), "{e}");
        assert!(e.to_string().starts_with("a tool: /nonexistent/tool: "), "{e}");
    }

    #[test]
    fn children_get_sigterm_then_sigkill_after_the_grace_and_are_reaped() {
        // One leaves at SIGTERM; one ignores it and must be killed.
        let polite = Command::new("sleep").arg("30").spawn().unwrap();
        let stubborn = Command::new("sh")
            .args(["-c", "trap '' TERM; while :; do sleep 0.05; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100)); // (the trap set)
        let pids = [polite.id(), stubborn.id()];
        let t = Instant::now();
        stop([polite, stubborn], Duration::from_millis(400));
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(400),
            "the stubborn one had its grace: {took:?}"
        );
        assert!(took < Duration::from_secs(3), "then it was killed: {took:?}");
        for pid in pids {
            // Reaped: no zombie left with that pid.
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "{pid} still there"
            );
        }
    }

    #[test]
    fn dropped_children_are_stopped() {
        let c = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = c.id();
        drop(Children(vec![c]));
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn a_namespace_that_is_not_there_is_named() {
        let e = enter("nsexec-test-none").unwrap_err();
        assert!(e.to_string().starts_with("namespace nsexec-test-none: "), "{e}");
        let e = command("nsexec-test-none", "true").unwrap_err();
        assert!(e.to_string().starts_with("namespace nsexec-test-none: "), "{e}");
        let e = on_thread(Some("nsexec-test-none"), || Ok(())).unwrap_err();
        assert!(e.to_string().starts_with("namespace nsexec-test-none: "), "{e}");
        assert_eq!(on_thread(None, || Ok(7)).unwrap(), 7);
    }
}
