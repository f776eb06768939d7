//! The README runs as written: every shell block is taken from README.md
//! and run as a reader would paste it, in bash with `sdnlab` on PATH, and
//! every command must succeed. Where a command would run for minutes, it
//! is shrunk (`SHRINK`: fewer trials, fewer rules, shorter loops, or only
//! its command line checked with `--print-config` where another test runs
//! it whole); the placeholders (`results/<run>`) are filled with the runs
//! the block made; the OVSDB block's interface names get this test's own
//! prefix. The first block (`scripts/main.sh`, `scripts/test.sh`) is what
//! CI itself runs (`.ci/run` is test.sh, which runs main.sh's job at its
//! end): here it is only checked to be those two commands.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The README's shell blocks, each as its lines (comments kept, as bash
/// reads them).
fn blocks() -> Vec<Vec<String>> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(readme).unwrap();
    let mut out = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```sh") => current = Some(Vec::new()),
            (Some(_), l) if l.starts_with("```") => out.push(current.take().unwrap()),
            (Some(b), _) => b.push(line.to_string()),
            _ => {}
        }
    }
    out
}

/// Commands that would run for minutes, and how each is shrunk: the
/// README's text (its start), and what replaces or follows it.
const SHRINK: &[(&str, &str, &str)] = &[
    // (README command starts with, replace this, by that)
    (
        "sdnlab bench ctl --mode latency --peer sdnlab --peer ovs-testcontroller --peer os-ken",
        "--peer os-ken",
        // (a warm-up loop of a second: os-ken, started afresh, may answer
        // nothing in a first 300 ms)
        "--peer os-ken --trials 1 --loops 1 --loop-ms 1000",
    ),
    (
        "sdnlab bench ref generate",
        "--mode latency",
        "--mode latency --loops 1",
    ),
    (
        "sdnlab bench ctl --ofp 1.3 --peer sdnlab --peer os-ken --peer faucet",
        "--trials 3",
        "--trials 1 --loops 1 --loop-ms 1000",
    ),
    // The suite, whole, is bench_suite_cli's (with and without a cluster):
    // here its command line, as written, is checked.
    ("sdnlab bench ctl --suite rfc8456", " --out ", " --print-config --out "),
    (
        "sdnlab bench switch",
        "--rules 0,1000000",
        "--rules 0,1000 --quick --seconds 1",
    ),
    (
        "sdnlab bench dp --quick",
        "--quick",
        "--quick --frames 64 --tests throughput,latency",
    ),
    ("sdnlab net iperf", "h9", "h9 --seconds 1"),
    ("sdnlab bench fidelity --quick", "--quick", "--quick --seconds 1"),
];

/// Shrinks `line` (a command as the README writes it) as `SHRINK` says,
/// and fills its placeholders.
fn shrunk(line: &str) -> String {
    let mut l = line.to_string();
    for (starts, from, to) in SHRINK {
        if l.trim_start().starts_with(starts) {
            assert!(
                l.contains(from),
                "the README's '{starts}' no longer has '{from}': update SHRINK"
            );
            l = l.replacen(from, to, 1);
        }
    }
    // `sdnlab run latency.toml`: the file as written, its trials and
    // loops cut first.
    if l.trim_start().starts_with("sdnlab run latency.toml") {
        l = format!("sed -i -e 's/^trials = .*/trials = 1/' -e 's/^loops = .*/loops = 1/' latency.toml && {l}");
    }
    // Other tests' networks may be up beside this one: the tour's net
    // commands name the network it brought up (a reader's machine has
    // only theirs, and they need no --id).
    let t = l.trim_start().to_string();
    if t.starts_with("sdnlab net up") && t.contains("--detach") {
        l = format!("{l} | tee net-up.out");
    }
    for cmd in ["sdnlab net pingall", "sdnlab net iperf", "sdnlab net down"] {
        if t.starts_with(cmd) {
            l = l.replacen(
                cmd,
                &format!("{cmd} --id $(sed -n 's/.*down --id \\([0-9a-f]*\\).*/\\1/p' net-up.out)"),
                1,
            );
        }
    }
    // The runs the block made: the one a file ran (and then its repeat),
    // and the first one, of several peers, for its report.
    l.replace("results/<run>/", "$(ls -d results/ctl-2*/ | head -1)")
        .replace("results/<run-a>", "$(ls -d results/ctl-2* | head -1)")
        .replace("results/<run-b>", "$(ls -d results/ctl-2* | tail -1)")
        .replace("results/<run>", "$(ls -d results/ctl-peers-* | head -1)")
}

/// What a failed block may leave: its network (taken down), the OVSDB
/// block's ovsdb-server (its pid file) and interfaces. (Its background
/// jobs go with its process group, killed by `run_block` as soon as the
/// block fails, never later: a group id left to be reused may by then
/// name another test's processes.)
struct Guard {
    ovsdb_dir_file: PathBuf,
    veth: String,
    scratch: PathBuf,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The network the tour brought up with --detach, if it is still
        // up (only that one: other tests' networks are up beside it).
        if let Ok(said) = std::fs::read_to_string(self.scratch.join("net-up.out")) {
            if let Some(id) = said.split("down --id ").nth(1).and_then(|r| r.split('`').next()) {
                let _ = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
                    .args(["net", "down", "--id", id.trim()])
                    .output();
            }
        }
        if let Ok(d) = std::fs::read_to_string(&self.ovsdb_dir_file) {
            let d = PathBuf::from(d.trim());
            if let Ok(pid) = std::fs::read_to_string(d.join("ovsdb.pid")) {
                if let Ok(pid) = pid.trim().parse::<i32>() {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
                }
            }
            let _ = std::fs::remove_dir_all(d);
        }
        let _ = Command::new("ip")
            .args(["link", "del", &format!("{}-a", self.veth)])
            .output();
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Runs `lines` as one bash script in `dir` (each command echoed with the
/// time it started, the first failure ending it) and returns what it said;
/// fails the test, with the script's output, if any command failed.
fn run_block(name: &str, lines: &[String], dir: &Path) -> String {
    let script = format!(
        "set -e -o pipefail\nexport PS4='+ [$SECONDS s] '\nset -x\n{}\n",
        lines.join("\n")
    );
    let bin = Path::new(env!("CARGO_BIN_EXE_sdnlab")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(dir)
            .env("PATH", path)
            // A prompt (`--cli`) reads its commands from here and ends.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let group = child.id() as i32;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"nodes\ncontroller\nexit\nnodes\ncontroller\nexit\n");
    }
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", common::text(&out.stdout), common::text(&out.stderr));
    if !out.status.success() {
        // What the failed block left running in its group (a command it
        // sent to the background), now, while the group is still its own.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(-group), nix::sys::signal::Signal::SIGKILL);
    }
    assert!(
        out.status.success(),
        "README block '{name}' failed ({}):\n{said}",
        out.status
    );
    said
}

#[test]
fn every_shell_block_of_the_readme_runs_as_written() {
    let blocks = blocks();
    assert!(blocks.len() >= 4, "{} shell blocks", blocks.len());
    // The first: the two commands CI runs.
    let first: Vec<&str> = blocks[0]
        .iter()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(first, ["bash scripts/main.sh", "bash scripts/test.sh"]);
    let test_sh = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test.sh")).unwrap();
    assert!(
        test_sh.contains("scripts/main.sh"),
        "test.sh no longer runs the main command"
    );

    let scratch = common::scratch("readme", "tour");
    std::fs::create_dir_all(&scratch).unwrap();
    let veth = format!("rdm{:04x}", std::process::id() & 0xffff);
    let guard = Guard {
        ovsdb_dir_file: scratch.join("ovsdb-dir"),
        veth: veth.clone(),
        scratch: scratch.clone(),
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut ran = 0;
    for (i, block) in blocks.iter().enumerate().skip(1) {
        // Continuation lines joined, as bash would read them.
        let mut lines: Vec<String> = Vec::new();
        let mut pending = String::new();
        for l in block {
            if let Some(head) = l.strip_suffix('\\') {
                pending.push_str(head);
                continue;
            }
            pending.push_str(l);
            lines.push(shrunk(&std::mem::take(&mut pending)));
        }
        let lines: Vec<String> = lines
            .into_iter()
            .map(|l| {
                l.replace("swdemo", &veth).replace(
                    "d=$(mktemp -d)",
                    &format!("d=$(mktemp -d) && echo $d > {}", guard.ovsdb_dir_file.display()),
                )
            })
            .collect();
        let name = format!(
            "#{i}: {}",
            lines.iter().find(|l| !l.trim_start().starts_with('#')).unwrap()
        );
        // The router builds run from the repository (its scripts); the
        // others where a reader would be, a directory of their own.
        let dir = if lines.iter().any(|l| l.contains("scripts/")) {
            repo.clone()
        } else {
            scratch.clone()
        };
        let said = run_block(&name, &lines, &dir);
        eprintln!("README block {name}: ran\n{said}");
        ran += 1;
    }
    assert!(ran >= 3);
    // The tour's runs are where it says, and its reports were rebuilt.
    let runs: Vec<String> = std::fs::read_dir(scratch.join("results"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        runs.iter().filter(|r| r.starts_with("ctl-peers-")).count() >= 2,
        "{runs:?}"
    );
    // The file's run and its repeat, compared.
    assert!(runs.iter().filter(|r| r.starts_with("ctl-2")).count() >= 2, "{runs:?}");
    assert!(runs.iter().any(|r| r.starts_with("compare-")), "{runs:?}");
    assert!(Path::new(&scratch).join("latency.toml").is_file());
}

/// Every main command's help ends with examples, and every option has a
/// line of help; the benchmarks' examples are valid command lines (each
/// checked with `--print-config`, which parses and validates it all and
/// runs nothing).
#[test]
fn every_commands_help_has_examples_that_parse() {
    let help = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?} --help");
        common::text(&out.stdout)
    };
    for cmd in [
        &["bench", "ctl"][..],
        &["bench", "switch"],
        &["bench", "dp"],
        &["bench", "gen"],
        &["bench", "lb"],
        &["bench", "fidelity"],
        &["net", "up"],
        &["run"],
        &["report"],
        &["controller"],
        &["switch"],
    ] {
        let text = help(cmd);
        let examples = text
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("`sdnlab {}` --help has no examples", cmd.join(" ")));
        // An option with nothing under it or beside it has no help.
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim_start();
            let bare_option =
                t.starts_with("--") && !t.contains("  ") && lines.get(i + 1).is_none_or(|n| n.trim().is_empty());
            assert!(!bare_option, "`sdnlab {}`: {t} has no help", cmd.join(" "));
        }
        if cmd[0] != "bench" {
            continue;
        }
        for ex in examples.lines().filter(|l| l.trim_start().starts_with("sdnlab ")) {
            let line = ex.split(" #").next().unwrap().trim();
            let args: Vec<&str> = line.split_whitespace().skip(1).collect();
            let out = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
                .args(&args)
                .arg("--print-config")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "the example `{line}` is refused: {}",
                common::text(&out.stderr)
            );
        }
    }
}
