//! The sdnlab> prompt as a person uses it: driven through tmux (send-keys,
//! capture-pane) on a private tmux server, with assertions on the screen's
//! text, and nothing of the run left after `exit`. Also the live view of a
//! running experiment, seen on a terminal and with its output redirected.
//! As root (namespaces, interfaces).

mod common;
use common::leftovers;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of this test's own (its socket named for the test), with
/// one session running `command`; killed on drop.
struct Tmux {
    socket: String,
    prompts: usize,
}

impl Tmux {
    fn start(name: &str, command: &str) -> Tmux {
        let socket = format!("sdnlab-test-{name}-{}", std::process::id());
        let home = std::env::temp_dir().join(&socket);
        std::fs::create_dir_all(&home).unwrap();
        // The pane stays after the program ends, so its last words can be read.
        let cmd = format!(
            "env HOME={} TERM=xterm {command}; echo \"[exited $?]\"; sleep 120",
            home.display()
        );
        let st = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                "180",
                "-y",
                "50",
                &cmd,
            ])
            .status()
            .expect("tmux (scripts/install-deps.sh installs it)");
        assert!(st.success());
        Tmux { socket, prompts: 0 }
    }

    /// Everything the pane has shown, scroll-back included.
    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-J", "-t", "t", "-S", "-"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["-L", &self.socket, "send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        assert!(Command::new("tmux").args(&args).status().unwrap().success());
    }

    /// Waits until the screen satisfies `ok`; panics with the screen if not.
    fn wait(&self, what: &str, secs: u64, ok: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if t.elapsed() > Duration::from_secs(secs) {
                panic!("waited {secs} s for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Prompt lines on the screen (a completion list redraws the prompt
    /// below it, so after one the test waits for the command's own output).
    fn prompt_count(s: &str) -> usize {
        s.lines().filter(|l| l.starts_with("sdnlab> ")).count() + s.lines().filter(|l| *l == "sdnlab>").count()
    }

    /// Waits for the next prompt.
    fn ready(&mut self, secs: u64) -> String {
        let want = self.prompts + 1;
        let s = self.wait("the prompt", secs, |s| Tmux::prompt_count(s) >= want);
        self.prompts = Tmux::prompt_count(&s);
        s
    }

    /// Types `line` and Enter at the prompt; the screen once the next prompt shows.
    fn run(&mut self, line: &str, secs: u64) -> String {
        self.keys(&["-l", line]);
        self.keys(&["Enter"]);
        let s = self.ready(secs);
        // What this command printed: from its own prompt line to the next.
        let start = s.rfind(&format!("sdnlab> {line}")).expect("the command echoed");
        let end = s[start + 1..]
            .rfind("sdnlab>")
            .map(|e| e + start + 1)
            .unwrap_or(s.len());
        s[start..end].to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(&self.socket));
    }
}

fn run_id(screen: &str) -> String {
    let line = screen
        .lines()
        .find(|l| l.starts_with("run ") && l.contains(" hosts, "))
        .unwrap_or_else(|| panic!("no run summary on the screen:\n{screen}"));
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string()
}

/// Takes a run down whatever the test did (a failed assertion included).
struct Cleanup(String);
impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.0.is_empty() && std::path::Path::new(&format!("/run/sdnlab/net/{}", self.0)).exists() {
            let _ = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
                .args(["net", "down", "--id", &self.0])
                .output();
        }
    }
}

#[test]
fn mininets_session_on_linear_3() {
    let bin = env!("CARGO_BIN_EXE_sdnlab");
    let mut t = Tmux::start("linear", &format!("{bin} net up linear,3 --switch ovs --cli"));
    let s = t.ready(60);
    let id = run_id(&s);
    let _cleanup = Cleanup(id.clone());

    let out = t.run("pingall", 30);
    assert!(out.contains("h1 -> h2 h3"), "{out}");
    assert!(out.contains("*** Results: 0% dropped (6/6 received)"), "{out}");

    // Node names become addresses, as in Mininet.
    let out = t.run("h1 ping -c1 h3", 15);
    assert!(out.contains("PING 10.0.0.3"), "{out}");
    assert!(out.contains("1 received"), "{out}");

    let out = t.run("link s1 s2 down", 10);
    assert!(out.contains("link s1 - s2 down"), "{out}");
    let out = t.run("pingall", 30);
    assert!(out.contains("h1 -> h2 h3") || out.contains("h1 -> X X"), "{out}");
    assert!(out.contains("h1 -> X X"), "h1 is cut off from the others: {out}");
    assert!(out.contains("h2 -> X h3"), "{out}");
    assert!(out.contains("*** Results: 66% dropped (2/6 received)"), "{out}");
    let out = t.run("link s1 s2 up", 10);
    assert!(out.contains("link s1 - s2 up"), "{out}");
    let out = t.run("pingall", 30);
    assert!(out.contains("*** Results: 0% dropped (6/6 received)"), "{out}");

    // ovs-ofctl against every switch: standalone OVS shows its NORMAL flow.
    let out = t.run("dpctl dump-flows", 20);
    for s in ["*** s1", "*** s2", "*** s3"] {
        assert!(out.contains(s), "{out}");
    }
    assert!(out.matches("actions=NORMAL").count() >= 3, "{out}");
    // The same table read through OpenFlow by sdnlab's own client.
    let out = t.run("flows s2", 20);
    assert!(out.contains("s2 (datapath 0000000000000002): 1 flow entries"), "{out}");
    assert!(out.contains("actions=NORMAL"), "{out}");

    let out = t.run("net", 10);
    assert!(out.contains("s2 port1:h2-eth0 port2:s1-port2 port3:s3-port2"), "{out}");

    // A bad command, a bad node: one line each, and the prompt stays.
    let out = t.run("frobnicate now", 10);
    assert!(
        out.contains("*** unknown command or node 'frobnicate' (`help` lists the commands, `nodes` the nodes)"),
        "{out}"
    );
    let out = t.run("link s1 s9 down", 10);
    assert!(out.contains("*** no node 's9' (`nodes` lists them)"), "{out}");

    // Three commands pasted at once, as a terminal pastes (bracketed):
    // each runs, in order.
    let tmux = |args: &[&str]| {
        assert!(Command::new("tmux")
            .args(["-L", &t.socket])
            .args(args)
            .status()
            .unwrap()
            .success())
    };
    tmux(&["set-buffer", "sh echo pasted-1\nsh echo pasted-2\nsh echo pasted-3"]);
    tmux(&["paste-buffer", "-p", "-t", "t"]);
    t.keys(&["Enter"]);
    let s = t.wait("the three pasted commands", 20, |s| {
        ["pasted-1", "pasted-2", "pasted-3"]
            .iter()
            .all(|w| s.lines().any(|l| l.trim() == *w))
    });
    let order: Vec<&str> = s.lines().map(str::trim).filter(|l| l.starts_with("pasted-")).collect();
    assert_eq!(order, ["pasted-1", "pasted-2", "pasted-3"], "{s}");
    let s = t.wait("the prompt after them", 10, |s| s.trim_end().ends_with("sdnlab>"));
    t.prompts = Tmux::prompt_count(&s);

    // Tab completion: a command's name, then a node name.
    t.keys(&["-l", "pingp"]);
    t.keys(&["Tab"]);
    t.wait("pingpair completed", 10, |s| s.contains("sdnlab> pingpair "));
    t.keys(&["C-u"]);
    t.keys(&["-l", "h2 ping -c1 h"]);
    t.keys(&["Tab", "Tab"]);
    t.wait("the node names listed", 10, |s| {
        s.lines().any(|l| l.trim() == "h1  h2  h3")
    });
    t.keys(&["-l", "1"]);
    t.keys(&["Enter"]);
    let s = t.wait("the completed command's ping", 15, |s| {
        s.split("sdnlab> h2 ping -c1 h1")
            .nth(1)
            .is_some_and(|after| after.contains("1 received"))
    });
    assert!(s.contains("PING 10.0.0.1"), "{s}");

    t.keys(&["-l", "exit"]);
    t.keys(&["Enter"]);
    let s = t.wait("the prompt to end", 60, |s| s.contains("[exited "));
    assert!(s.contains(&format!("run {id} down in")), "{s}");
    assert!(s.contains("[exited 0]"), "{s}");
    assert_eq!(leftovers(&id), Vec::<String>::new(), "run {id} left things behind");
}

/// `net up --cli` without `--switch` is Mininet's default: Open vSwitch
/// with a learning controller (sdnlab's `l2-learning`), said in a line;
/// and what is typed while a command runs is run, in order, once it ends.
#[test]
fn the_prompts_default_is_ovs_with_a_controller_and_type_ahead_is_kept() {
    let bin = env!("CARGO_BIN_EXE_sdnlab");
    let mut t = Tmux::start("default", &format!("{bin} net up linear,2 --cli"));
    let s = t.ready(60);
    assert!(
        s.contains("*** Open vSwitch with sdnlab's l2-learning controller, as Mininet's default"),
        "{s}"
    );
    let id = run_id(&s);
    let _cleanup = Cleanup(id.clone());
    // Two commands typed while the first runs (its pings wait for the
    // controller's first answers). What they print ("out-1") is not what
    // was typed ("out-$((0+1))"), so the echo of the typing, which a busy
    // machine interleaves with the output, is never taken for it.
    t.keys(&["-l", "pingall"]);
    t.keys(&["Enter"]);
    t.keys(&["-l", "sh echo out-$((0+1))"]);
    t.keys(&["Enter"]);
    t.keys(&["-l", "sh echo out-$((0+2))"]);
    t.keys(&["Enter"]);
    let s = t.wait("the typed-ahead commands", 40, |s| s.contains("out-2"));
    let at = |what: &str| s.find(what).unwrap_or_else(|| panic!("no {what}: {s}"));
    let (results, one, two) = (at("*** Results: 0% dropped (2/2 received)"), at("out-1"), at("out-2"));
    assert!(results < one && one < two, "{s}");
    let s = t.wait("the prompt after them", 10, |s| s.trim_end().ends_with("sdnlab>"));
    t.prompts = Tmux::prompt_count(&s);
    // Two lines arriving in one write at the prompt (a fast typist, or a
    // busy machine joining the keys): the editor reads both at once, and
    // the second runs after the first instead of going with the editor's
    // buffer (lost so once in CI).
    t.keys(&["-l", "sh echo out-$((0+3))\rsh echo out-$((0+4))\r"]);
    let s = t.wait("both lines of one write", 20, |s| s.contains("\nout-4"));
    let at = |what: &str| s.find(what).unwrap_or_else(|| panic!("no {what}: {s}"));
    assert!(at("\nout-3") < at("\nout-4"), "{s}");
    let s = t.wait("the prompt after them", 10, |s| s.trim_end().ends_with("sdnlab>"));
    t.prompts = Tmux::prompt_count(&s);
    // Open vSwitch, learning through the controller.
    let out = t.run("dpctl dump-flows", 20);
    assert!(out.contains("*** s1") && out.contains("actions=CONTROLLER"), "{out}");
    t.keys(&["-l", "exit"]);
    t.keys(&["Enter"]);
    let s = t.wait("the prompt to end", 60, |s| s.contains("[exited "));
    assert!(s.contains("[exited 0]"), "{s}");
    assert_eq!(leftovers(&id), Vec::<String>::new(), "run {id} left things behind");
}

#[test]
fn sdnlab_switches_stop_start_and_the_controllers_view() {
    let bin = env!("CARGO_BIN_EXE_sdnlab");
    let mut t = Tmux::start(
        "sdnsw",
        &format!("{bin} net up linear,2 --switch sdnlab --app l2-learning --cli"),
    );
    let s = t.ready(60);
    let id = run_id(&s);
    let _cleanup = Cleanup(id.clone());

    let out = t.run("pingall", 30);
    assert!(out.contains("*** Results: 0% dropped (2/2 received)"), "{out}");
    // The learnt entries, through OpenFlow 1.3 from the switch itself.
    let out = t.run("flows s1", 20);
    assert!(out.contains("actions=CONTROLLER"), "{out}");
    assert!(out.contains("actions=output:"), "{out}");
    let out = t.run("controller", 20);
    assert!(out.contains("switches: 2"), "{out}");
    assert!(out.contains("0000000000000001  OpenFlow 1.3"), "{out}");
    assert!(out.contains("links: not known (link discovery is off"), "{out}");

    let out = t.run("switch s2 stop", 20);
    assert!(out.contains("switch s2 stopped"), "{out}");
    let out = t.run("pingall", 30);
    assert!(out.contains("*** Results: 100% dropped (0/2 received)"), "{out}");
    let out = t.run("dump", 10);
    assert!(out.contains("<SdnlabSwitch s2: stopped>"), "{out}");
    let out = t.run("switch s2 start", 20);
    assert!(out.contains("switch s2 started"), "{out}");
    let out = t.run("pingall", 30);
    assert!(out.contains("*** Results: 0% dropped (2/2 received)"), "{out}");

    // Live counters until a key: a ping flood through s1 shows up as a rate.
    let flood = Command::new("ip")
        .args([
            "netns",
            "exec",
            &format!("sdnlab-{id}-h1"),
            "ping",
            "-q",
            "-i",
            "0.01",
            "-c",
            "400",
            "10.0.0.2",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut flood = scopeguard(flood);
    t.keys(&["-l", "watch s1"]);
    t.keys(&["Enter"]);
    let s = t.wait("a live rate on s1's host port", 15, |s| {
        s.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 8 && f[0] == "1" && f[1] == "h1" && f[2].parse::<f64>().is_ok_and(|r| r >= 20.0)
        })
    });
    assert!(s.contains("s1: port counters (any key stops)"), "{s}");
    t.keys(&["q"]);
    t.ready(10);
    let _ = flood.0.kill();
    let _ = flood.0.wait();

    let svg = std::env::temp_dir().join(format!("sdnlab-test-graph-{}.svg", std::process::id()));
    let out = t.run(&format!("graph {}", svg.display()), 20);
    assert!(out.contains("topology drawn into"), "{out}");
    let text = std::fs::read_to_string(&svg).unwrap();
    let _ = std::fs::remove_file(&svg);
    assert!(
        text.contains("<svg") && text.contains("h1") && text.contains("s2"),
        "{text}"
    );
    // A host's name and address on two lines of its own, not "h1\n10...".
    assert!(text.contains(">h1</text>") && !text.contains("\\n10."), "{text}");

    t.keys(&["C-d"]);
    let s = t.wait("the prompt to end", 60, |s| s.contains("[exited "));
    assert!(s.contains(&format!("run {id} down in")), "{s}");
    assert_eq!(leftovers(&id), Vec::<String>::new(), "run {id} left things behind");
}

/// Kills a child on drop.
struct Guard(std::process::Child);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
fn scopeguard(c: std::process::Child) -> Guard {
    Guard(c)
}

#[test]
fn attached_prompt_keeps_the_network_with_keep_and_reads_a_script() {
    let bin = env!("CARGO_BIN_EXE_sdnlab");
    // `net up` in the background, then a prompt fed from a file, as a script.
    let mut up = Command::new(bin)
        .args(["net", "up", "single,2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut out = std::io::BufReader::new(up.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    let id = run_id(&first);
    let _cleanup = Cleanup(id.clone());
    let script = std::env::temp_dir().join(format!("sdnlab-test-script-{}", std::process::id()));
    let inner = std::env::temp_dir().join(format!("sdnlab-test-inner-{}", std::process::id()));
    std::fs::write(&inner, "sh echo sourced-$((40 + 2))\nnodes\n").unwrap();
    std::fs::write(
        &script,
        format!(
            "pingall\nbogus\nh1 echo h2 is h2\nflows s1\nsource {}\n",
            inner.display()
        ),
    )
    .unwrap();
    let o = Command::new(bin)
        .args(["net", "cli", "--id", &id, "--keep"])
        .stdin(std::fs::File::open(&script).unwrap())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&script);
    let _ = std::fs::remove_file(&inner);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("*** Results: 0% dropped (2/2 received)"), "{text}");
    assert!(text.contains("*** unknown command or node 'bogus'"), "{text}");
    assert!(text.contains("10.0.0.2 is 10.0.0.2"), "{text}");
    // A bridge's flows: what it is, not "stopped".
    assert!(text.contains("s1 is a Linux bridge, which has no flow table"), "{text}");
    // `source` runs a file's commands; `sh` a shell in the root namespace.
    assert!(text.contains("sourced-42"), "{text}");
    assert!(text.contains("available nodes are:\nh1 h2 s1"), "{text}");
    assert!(!text.contains("sdnlab> "), "no prompt without a terminal: {text}");
    assert!(text.contains(&format!("run {id} stays up")), "{text}");
    assert!(std::path::Path::new(&format!("/run/sdnlab/net/{id}")).exists());
    // Without --keep, leaving takes the network (and its `up` process) down.
    let o = Command::new(bin)
        .args(["net", "cli", "--id", &id])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let status = up.wait().unwrap();
    assert!(status.success(), "the up process ends cleanly: {status}");
    assert_eq!(leftovers(&id), Vec::<String>::new(), "run {id} left things behind");
}

/// The live view of a short `bench dp`: on a terminal, a changing rate on
/// the switch's ports while trials run; with stderr redirected, plain lines
/// only (no cursor movement, no carriage returns, no live lines).
#[test]
fn live_view_of_bench_dp_on_a_terminal_and_plain_when_redirected() {
    let bin = env!("CARGO_BIN_EXE_sdnlab");
    let out = std::env::temp_dir().join(format!("sdnlab-test-live-{}", std::process::id()));
    let args = "bench dp --quick --dut sdnlab --frames 64 --tests throughput --out";
    let t = Tmux::start("live", &format!("{bin} {args} {}/tty", out.display()));
    let mut rates = std::collections::BTreeSet::new();
    let mut saw_now = false;
    let t0 = Instant::now();
    loop {
        let s = t.screen();
        for l in s.lines() {
            if l.starts_with("now   sdnlab throughput") {
                saw_now = true;
            }
            // "ports in rx 328.6 kfps tx 8 fps | out rx ..."
            if let Some(rest) = l.strip_prefix("ports in rx ") {
                let r: String = rest.split(" fps").next().unwrap_or("").to_string();
                if !r.starts_with("0 ") && r != "0" {
                    rates.insert(r);
                }
            }
        }
        if s.contains("[exited ") {
            assert!(s.contains("[exited 0]"), "{s}");
            assert!(s.contains("| sdnlab | 64 |"), "the results follow the live view: {s}");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "bench dp did not end: {s}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(saw_now, "the live view said what runs now");
    assert!(rates.len() >= 2, "a changing rate on the switch's ports: {rates:?}");

    let o = Command::new(bin)
        .args(args.split(' '))
        .arg(out.join("plain"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains('\x1b') && !err.contains('\r'),
        "plain lines only: {err:?}"
    );
    assert!(!err.contains("now   ") && !err.contains("ports in rx"), "{err}");
}
