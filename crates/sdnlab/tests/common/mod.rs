//! Helpers the command-line tests share.
#![allow(dead_code)]

use std::path::Path;

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
