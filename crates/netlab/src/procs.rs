//! Processes by pid, found through the command lines in /proc: those
//! that name a path of ours (a run directory) or a tag of ours, never by
//! program name. Stopping waits for them to go.

use std::path::Path;

/// Sends SIGTERM to every process whose command line names a path under
/// `dir` (a run directory: only processes netlab started mention it), and
/// waits up to 5 s for them to exit. This finds processes by our own unique
/// path, never by program name.
pub fn stop_processes_under(dir: &Path) -> Vec<u32> {
    let needle = format!("{}/", dir.display());
    let pids = processes_whose_command_line(|c| c.replace('\0', " ").contains(&needle));
    for &pid in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(5) && pids.iter().any(|p| alive(*p)) {
        for &p in &pids {
            let _ = nix::sys::wait::waitpid(
                nix::unistd::Pid::from_raw(p as i32),
                Some(nix::sys::wait::WaitPidFlag::WNOHANG),
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    pids
}

/// Sends SIGTERM to one process and waits (5 s at most) for it to go,
/// reaping it if it is our child.
pub fn stop_pid(pid: u32) {
    let p = nix::unistd::Pid::from_raw(pid as i32);
    let _ = nix::sys::signal::kill(p, nix::sys::signal::Signal::SIGTERM);
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(5) && alive(pid) {
        let _ = nix::sys::wait::waitpid(p, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = nix::sys::wait::waitpid(p, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
}

/// Every process but this one whose command line (arguments separated by
/// NUL bytes) satisfies `matches`.
pub(crate) fn processes_whose_command_line(matches: impl Fn(&str) -> bool) -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|&pid| pid != me)
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .map(|c| matches(&String::from_utf8_lossy(&c)))
                        .unwrap_or(false)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Alive and not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// Whether a live pid is an sdnlab process (so a recycled pid is never signalled).
pub fn is_sdnlab(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("sdnlab"))
        .unwrap_or(false)
}

/// Whether `program` is installed: an executable of that name in a
/// directory of PATH, or in /usr/sbin or /sbin (daemons such as
/// ovs-vswitchd live there, off a user's PATH).
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(std::path::PathBuf::from))
        .any(|d| std::fs::metadata(d.join(program)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}
