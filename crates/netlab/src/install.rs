//! The peers and platforms a command needs, installed the first time it
//! needs them: `scripts/install-deps.sh main` installs only what building
//! sdnlab and its main job take, so Open vSwitch, iperf3, nginx, etcd,
//! Mininet and the rest come from Debian's packages when a command first
//! starts one, with a line saying so. As root with apt-get; anyone else
//! (or `SDNLAB_INSTALL=never`) is told the one command that installs it.
//! The decision is apart from the I/O (`plan`), so it is tested without
//! a package manager.

use std::process::Command;
use std::sync::Mutex;

/// A program sdnlab starts, and the Debian package that brings it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// Looked for on PATH (and in /usr/sbin, /sbin).
    pub program: &'static str,
    pub package: &'static str,
    /// What it is for, in the progress line and the error.
    pub what: &'static str,
    /// A service Debian starts on install that the lab does not want
    /// running in the root namespace (it starts its own): stopped and
    /// disabled right after.
    pub service: Option<&'static str>,
}

const fn tool(program: &'static str, package: &'static str, what: &'static str) -> Tool {
    Tool {
        program,
        package,
        what,
        service: None,
    }
}

pub const OVS: Tool = tool("ovs-vswitchd", "openvswitch-switch", "Open vSwitch");
pub const OVS_OFCTL: Tool = tool("ovs-ofctl", "openvswitch-common", "ovs-ofctl");
pub const OVS_TESTCONTROLLER: Tool = tool(
    "ovs-testcontroller",
    "openvswitch-testcontroller",
    "the ovs-testcontroller peer",
);
pub const IPERF3: Tool = tool("iperf3", "iperf3", "iperf3 (throughput between hosts)");
pub const PING: Tool = tool("ping", "iputils-ping", "ping (reachability between hosts)");
pub const NGINX: Tool = Tool {
    service: Some("nginx"),
    ..tool("nginx", "nginx", "nginx (the load balancer's replicas)")
};
pub const HTTPERF: Tool = tool("httperf", "httperf", "httperf (the load balancer's HTTP client)");
pub const ETCD: Tool = Tool {
    service: Some("etcd"),
    ..tool("etcd", "etcd-server", "etcd (the controller's cluster store)")
};
pub const MININET: Tool = tool("mnexec", "mininet", "Mininet's Python API");
pub const BRCTL: Tool = tool("brctl", "bridge-utils", "brctl (Mininet's Linux bridges)");
pub const NFT: Tool = tool("nft", "nftables", "nft (the SYN flood's filter)");
pub const TRAFGEN: Tool = tool("trafgen", "netsniff-ng", "trafgen");
pub const TCPREPLAY: Tool = tool("tcpreplay", "tcpreplay", "tcpreplay");
pub const DOT: Tool = tool("dot", "graphviz", "dot (graphviz)");
pub const PYTHON3_VENV: Tool = tool("python3", "python3-venv", "Python's venv module");
pub const PYTHON3_DEV: Tool = tool(
    "python3-config",
    "python3-dev",
    "Python's headers (a peer's C extensions)",
);

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("not installed: {what}; {fix}")]
    Missing { what: String, fix: String },
    #[error("apt-get install {packages} failed: {detail}")]
    Apt { packages: String, detail: String },
}

/// What to do about the tools a command needs.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    Ready,
    /// Install these (root, apt-get there, installing allowed).
    Install(Vec<Tool>),
    /// Say how, install nothing.
    Tell(Vec<Tool>),
}

/// The decision alone: `missing` are the tools not found.
pub fn plan(missing: Vec<Tool>, root: bool, apt: bool, allowed: bool) -> Plan {
    if missing.is_empty() {
        Plan::Ready
    } else if root && apt && allowed {
        Plan::Install(missing)
    } else {
        Plan::Tell(missing)
    }
}

fn packages(tools: &[Tool]) -> String {
    let mut p: Vec<&str> = tools.iter().map(|t| t.package).collect();
    p.dedup();
    p.join(" ")
}

fn whats(tools: &[Tool]) -> String {
    tools.iter().map(|t| t.what).collect::<Vec<_>>().join(", ")
}

/// The error for tools that are missing and will not be installed here.
pub fn missing_error(tools: &[Tool], root: bool) -> InstallError {
    let cmd = format!("apt-get install {}", packages(tools));
    let fix = if root {
        format!("run `{cmd}` (or scripts/install-deps.sh peers)")
    } else {
        format!("as root, run `{cmd}` (or scripts/install-deps.sh peers)")
    };
    InstallError::Missing {
        what: whats(tools),
        fix,
    }
}

/// Whether `SDNLAB_INSTALL` allows installing (anything but `never`).
fn allowed() -> bool {
    std::env::var("SDNLAB_INSTALL").map_or(true, |v| v != "never")
}

/// Makes sure every tool is there, installing the missing ones (one
/// apt-get for all, a line saying so) where that is allowed.
pub fn need(tools: &[Tool]) -> Result<(), InstallError> {
    provide(
        tools
            .iter()
            .copied()
            .filter(|t| !crate::procs::on_path(t.program))
            .collect(),
    )
}

/// Installs `missing`, found missing by the caller's own check (a Python
/// module, say), or says how to.
pub fn provide(missing: Vec<Tool>) -> Result<(), InstallError> {
    // One install at a time in this process (apt's own lock would refuse
    // the second); another process's install is waited for by apt-get.
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let root = nix::unistd::geteuid().is_root();
    match plan(missing, root, crate::procs::on_path("apt-get"), allowed()) {
        Plan::Ready => Ok(()),
        Plan::Tell(t) => Err(missing_error(&t, root)),
        Plan::Install(t) => install(&t),
    }
}

fn install(tools: &[Tool]) -> Result<(), InstallError> {
    let pkgs = packages(tools);
    tracing::info!("sdnlab: installing {pkgs} (apt, the first time: {})", whats(tools));
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(["-q", "-y", "-o", "DPkg::Lock::Timeout=120"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
    };
    let fail = |detail: String| InstallError::Apt {
        packages: pkgs.clone(),
        detail,
    };
    let mut args = vec!["install", "--no-install-recommends"];
    args.extend(tools.iter().map(|t| t.package));
    let mut out = apt(&args).map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        // A machine that never ran `apt-get update` knows no package.
        apt(&["update"]).map_err(|e| fail(e.to_string()))?;
        out = apt(&args).map_err(|e| fail(e.to_string()))?;
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(fail(err.lines().last().unwrap_or("").trim().to_string()));
    }
    for svc in tools.iter().filter_map(|t| t.service) {
        if crate::procs::on_path("systemctl") {
            let _ = Command::new("systemctl").args(["disable", "--now", svc]).output();
        }
    }
    if let Some(t) = tools.iter().find(|t| !crate::procs::on_path(t.program)) {
        return Err(fail(format!(
            "{} installed, but {} is still not found",
            t.package, t.program
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_only_as_root_with_apt_when_allowed() {
        assert_eq!(plan(vec![], false, false, false), Plan::Ready);
        assert_eq!(plan(vec![OVS], true, true, true), Plan::Install(vec![OVS]));
        for (root, apt, allowed) in [(false, true, true), (true, false, true), (true, true, false)] {
            assert_eq!(
                plan(vec![OVS, IPERF3], root, apt, allowed),
                Plan::Tell(vec![OVS, IPERF3])
            );
        }
    }

    #[test]
    fn the_error_says_what_and_the_one_command() {
        let e = missing_error(&[NGINX, HTTPERF], false).to_string();
        assert_eq!(
            e,
            "not installed: nginx (the load balancer's replicas), httperf (the load balancer's HTTP client); \
             as root, run `apt-get install nginx httperf` (or scripts/install-deps.sh peers)"
        );
        assert!(missing_error(&[OVS], true)
            .to_string()
            .ends_with("; run `apt-get install openvswitch-switch` (or scripts/install-deps.sh peers)"));
    }

    #[test]
    fn a_tool_on_path_needs_nothing() {
        // `sh` is on every machine: nothing to install, whoever asks.
        assert!(need(&[tool("sh", "dash", "a shell")]).is_ok());
        assert!(provide(vec![]).is_ok());
    }
}
