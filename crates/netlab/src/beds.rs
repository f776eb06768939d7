//! Benchmark test beds on record, so that `sdnlab net clean` can remove
//! what a benchmark killed with SIGKILL left behind. A bed (`sdnlab bench
//! switch`, `bench dp`, `bench gen`) names every object it makes with its own tag:
//! the hosts' namespaces `TAG` + `g`/`r`, the root-namespace interfaces
//! and bridges starting with `TAG`, the switches it starts (their command
//! lines name those interfaces) and Open vSwitch daemons under its run
//! directory. Its record holds the owner's pid, the tag and that
//! directory; a record whose owner is gone is an orphan.

use std::io;
use std::path::{Path, PathBuf};

pub const BEDS_ROOT: &str = "/run/sdnlab/beds";

/// Every bed's tag starts with one of these and four hex digits of its
/// owner's pid, then a letter or none: `sbsw` for the switch benchmarks'
/// beds (`bench switch`, `bench dp`), `sbgn` for `bench gen`'s pair of
/// namespaces.
pub const TAG_PREFIXES: [&str; 2] = ["sbsw", "sbgn"];

/// One bed's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bed {
    pub pid: u32,
    pub tag: String,
    pub dir: PathBuf,
}

fn record_path(tag: &str) -> PathBuf {
    Path::new(BEDS_ROOT).join(tag)
}

/// Records a bed of this process.
pub fn register(tag: &str, dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(BEDS_ROOT)?;
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    std::fs::write(record_path(tag), format!("{}\n{}\n", std::process::id(), dir.display()))
}

/// The bed's objects are gone: its record goes too.
pub fn unregister(tag: &str) {
    let _ = std::fs::remove_file(record_path(tag));
}

/// Every record (unreadable ones skipped).
pub fn list() -> Vec<Bed> {
    let Ok(d) = std::fs::read_dir(BEDS_ROOT) else {
        return Vec::new();
    };
    d.filter_map(|e| {
        let e = e.ok()?;
        let tag = e.file_name().to_str()?.to_string();
        let text = std::fs::read_to_string(e.path()).ok()?;
        let mut lines = text.lines();
        let pid = lines.next()?.parse().ok()?;
        let dir = PathBuf::from(lines.next()?);
        Some(Bed { pid, tag, dir })
    })
    .collect()
}

/// Whether a bed's owner still runs (an sdnlab process of that pid).
pub fn owner_alive(bed: &Bed) -> bool {
    crate::procs::is_sdnlab(bed.pid)
}

/// Processes whose command line names `tag` followed by more of a name
/// (the switches a bed started on its interfaces).
fn processes_naming(tag: &str) -> Vec<u32> {
    crate::procs::processes_whose_command_line(|c| {
        c.split(['\0', ':', '=', ','])
            .any(|arg| arg.starts_with(tag) && arg.len() > tag.len())
    })
}

/// Removes the objects of every bed whose owner is gone; what it removed.
pub async fn clean_orphans() -> io::Result<Vec<String>> {
    let mut removed = Vec::new();
    for bed in list() {
        if owner_alive(&bed) {
            continue;
        }
        for pid in processes_naming(&bed.tag) {
            if crate::procs::is_sdnlab(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                removed.push(format!("process {pid}"));
            }
        }
        for pid in crate::procs::stop_processes_under(&bed.dir) {
            removed.push(format!("process {pid}"));
        }
        for ns in crate::kernel::netns_list(&bed.tag) {
            if crate::kernel::netns_delete(&ns).is_ok() {
                removed.push(format!("namespace {ns}"));
            }
        }
        let root = crate::kernel::Nl::here()?;
        for name in root.names_with_prefix(&bed.tag).await? {
            if root.delete(&name).await.is_ok() {
                removed.push(format!("interface {name}"));
            }
        }
        unregister(&bed.tag);
        removed.push(format!("bench bed {} (process {} is gone)", bed.tag, bed.pid));
    }
    // Objects of a bed with no record (one removed too early, or never
    // written): every one named like a bed's but for the live beds'.
    let live: Vec<String> = list().into_iter().filter(owner_alive).map(|b| b.tag).collect();
    let unowned = |name: &str| !live.iter().any(|t| name.starts_with(t.as_str()));
    let root = crate::kernel::Nl::here()?;
    for prefix in TAG_PREFIXES {
        for ns in crate::kernel::netns_list(prefix) {
            if unowned(&ns) && crate::kernel::netns_delete(&ns).is_ok() {
                removed.push(format!("namespace {ns} (no bed on record)"));
            }
        }
        for name in root.names_with_prefix(prefix).await? {
            if unowned(&name) && root.delete(&name).await.is_ok() {
                removed.push(format!("interface {name} (no bed on record)"));
            }
        }
    }
    Ok(removed)
}
