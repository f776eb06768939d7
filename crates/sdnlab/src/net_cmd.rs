//! `sdnlab net ...`: bring emulated networks up and down, run commands in
//! hosts, measure reachability (pingall) and throughput (iperf3).

use netlab::run::{self, Net, State, SwitchKind, UpOptions};
use netlab::topo;
use std::process::ExitCode;
use std::time::Instant;

/// `net up --detach`: the same command without `--detach`, in a session
/// of its own (a terminal's Ctrl-C or hang-up does not reach it), its
/// output in an unlinked temporary file; returns once it says the network
/// is up, printing what it said, or with its error if it ended first. A
/// Ctrl-C meanwhile takes the network down as `net up` would.
pub async fn detach() -> ExitCode {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).filter(|a| a != "--detach").collect();
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find this program to start it again: {e}")),
    };
    let dir = match netlab::private::temp_dir("sdnlab-net-up-") {
        Ok(d) => d,
        Err(e) => return fail(format!("cannot make a temporary directory: {e}")),
    };
    let path = dir.path().join("output");
    let opened = std::fs::File::create(&path).and_then(|w| Ok((w.try_clone()?, w, std::fs::File::open(&path)?)));
    // Unlinked at once (with its directory): nothing is left on disk, and
    // the network's process writes on into it while it runs.
    drop(dir);
    let (out, err, mut reader) = match opened {
        Ok(f) => f,
        Err(e) => return fail(format!("cannot make the background run's output file: {e}")),
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err);
    // SAFETY: setsid is async-signal-safe and has no preconditions.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot start the network in the background: {e}")),
    };
    let (mut int, mut term) = match (
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()),
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()),
    ) {
        (Ok(i), Ok(t)) => (i, t),
        _ => return fail("cannot watch SIGINT and SIGTERM"),
    };
    let mut said = String::new();
    loop {
        let mut more = String::new();
        let _ = reader.read_to_string(&mut more);
        said.push_str(&more);
        if let Some(at) = said.find("up; Ctrl-C or ") {
            let (before, after) = said.split_at(at);
            print!("{before}");
            let rest = after
                .trim_start_matches("up; Ctrl-C or ")
                .lines()
                .next()
                .unwrap_or_default();
            println!("up, in the background (pid {}); {rest}", child.id());
            return ExitCode::SUCCESS;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut last = String::new();
            let _ = reader.read_to_string(&mut last);
            eprint!("{said}{last}");
            return ExitCode::from(status.code().unwrap_or(1).clamp(1, 255) as u8);
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
            _ = int.recv() => break,
            _ = term.recv() => break,
        }
    }
    // Stopped before it was up: it takes down what it made, as on Ctrl-C.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
    eprintln!("sdnlab: interrupted; the network was taken down");
    ExitCode::from(130)
}

pub fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("sdnlab: {msg}");
    ExitCode::from(2)
}

pub use ofconn::admission::warn_plain_listeners;

/// `net up --cli`: the prompt instead of waiting for Ctrl-C.
pub struct Prompt {
    /// Leave the network up when the prompt ends.
    pub keep: bool,
}

/// The built-in controller of `net up --app`: one, or a cluster's members
/// (`--cluster N`) with their etcd, under the run's directory.
struct Builtin {
    members: Vec<controller::runtime::Handle>,
    /// Dropped after the members (they leave the cluster first).
    etcd: Option<cluster::etcd::Etcd>,
}

impl Builtin {
    /// A cluster's members leave it (before teardown stops their etcd).
    fn leave(&self) {
        for m in &self.members {
            m.leave_cluster();
        }
    }
}

impl Drop for Builtin {
    fn drop(&mut self) {
        for m in &self.members {
            m.stop();
        }
        self.members.clear();
        // etcd's files go with it (teardown removes the run's directory
        // too; a run that never came up has only this in it).
        if let Some(e) = self.etcd.take() {
            let dir = e.dir().to_path_buf();
            drop(e);
            let _ = std::fs::remove_dir_all(&dir);
            if let Some(run) = dir.parent() {
                let _ = std::fs::remove_dir(run);
            }
        }
    }
}

/// The switch kind and app of `net up` when `--switch` is left out: Linux
/// bridges, but at the prompt (`--cli`) Mininet's default, Open vSwitch
/// with a learning controller (sdnlab's `l2-learning`, unless a controller
/// or an app is named), said in a line. Without Open vSwitch installed,
/// bridges, said too.
pub fn default_switch(
    kind: Option<SwitchKind>,
    cli: bool,
    controller: bool,
    app: Option<String>,
) -> (SwitchKind, Option<String>) {
    match kind {
        Some(k) => (k, app),
        None if !cli => (SwitchKind::Bridge, app),
        None if netlab::procs::on_path("ovs-vswitchd") => {
            let app = match app {
                None if !controller => {
                    println!("*** Open vSwitch with sdnlab's l2-learning controller, as Mininet's default (--switch bridge for Linux bridges)");
                    Some("l2-learning".to_string())
                }
                a => a,
            };
            (SwitchKind::Ovs, app)
        }
        None => {
            println!("*** Linux bridges: Open vSwitch (Mininet's default) is not installed (scripts/install-deps.sh test installs it)");
            (SwitchKind::Bridge, app)
        }
    }
}

/// `options` as the command line gave them; with `app`, its controller
/// is sdnlab's own, started here (with `cluster`, that many members of a
/// cluster on an etcd of the run's own, and whether their slaves ask for
/// every PACKET_IN).
pub async fn up(
    spec: &str,
    options: UpOptions,
    app: Option<String>,
    cluster: Option<(usize, bool)>,
    prompt: Option<Prompt>,
) -> ExitCode {
    // The topology first: a bad one is refused before anything starts.
    let t = match topo::load(spec) {
        Ok(t) => t,
        Err(problems) => {
            for p in &problems {
                eprintln!("sdnlab: {p}");
            }
            return ExitCode::from(2);
        }
    };
    let id = run::new_id();
    let kind = options.kind;
    // Ctrl-C and SIGTERM are ours from here on: one that comes while the
    // controller or the network is being made waits until they are up,
    // then takes them down (the default action would kill this process
    // and leave the run's directory, its etcd's files among them).
    let mut int = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot watch SIGINT: {e}")),
    };
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot watch SIGTERM: {e}")),
    };
    // --app: sdnlab's own controller, started in this process for the run's
    // lifetime, with its REST API on loopback (the console's `controller`).
    let mut builtin = None;
    let mut rest = None;
    let mut options = options;
    if options.ovsdb && kind != SwitchKind::Sdnlab {
        return fail("--ovsdb manages sdnlab's switch through OVSDB: add --switch sdnlab");
    }
    if let Some(app) = app {
        if kind == SwitchKind::Bridge {
            return fail("--app needs OpenFlow switches: add --switch ovs");
        }
        match start_builtin(&app, cluster, &id) {
            Ok((b, first_rest, token)) => {
                let addrs: Vec<String> = b.members.iter().map(|h| h.local_addrs[0].to_string()).collect();
                options.controller = Some(addrs.join(","));
                builtin = Some(b);
                rest = Some(labconsole::Rest {
                    addr: first_rest,
                    token: Some(token),
                });
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(std::path::Path::new(netlab::state::STATE_ROOT).join(&id));
                return fail(e);
            }
        }
    } else if cluster.is_some() {
        return fail("--cluster N starts a cluster of sdnlab's controller: add --app APP");
    }
    if let Some(cs) = &options.controller {
        // One controller, or several (a cluster's members; each switch
        // connects to every one), comma separated.
        for c in cs.split(',').map(str::trim) {
            let addr = c.strip_prefix("tcp:").or_else(|| c.strip_prefix("ssl:")).unwrap_or(c);
            if addr.parse::<std::net::SocketAddr>().is_err() {
                return fail(format!(
                    "--controller '{c}' is not HOST:PORT, tcp:HOST:PORT or ssl:HOST:PORT (e.g. 127.0.0.1:6653; several, comma separated, for a cluster)"
                ));
            }
            if c.starts_with("ssl:") && options.ssl.is_none() {
                return fail("an ssl: controller needs --ssl KEY CERT CACERT (the switches' PEM files)");
            }
        }
        if kind == SwitchKind::Bridge {
            return fail("--controller needs OpenFlow switches: add --switch ovs");
        }
    }
    let started = Instant::now();
    let up = Net::up_as(t, options, id);
    tokio::pin!(up);
    let mut stop = false;
    let net = loop {
        tokio::select! {
            r = &mut up => break r,
            _ = int.recv(), if !stop => stop = true,
            _ = term.recv(), if !stop => stop = true,
        }
    };
    let net = match net {
        Ok(n) => n,
        Err(e) => {
            return fail(format!(
                "bringing {spec} up failed (everything created was removed): {e}"
            ))
        }
    };
    let took = started.elapsed();
    if let Some(r) = &rest {
        if let Err(e) = r.save(&net.dir) {
            eprintln!(
                "sdnlab: warning: cannot record the REST API in {}: {e}",
                net.dir.display()
            );
        }
    }
    if let (Some(p), false) = (&prompt, stop) {
        print_summary(&net.state, took);
        return console(labconsole::Lab::Owned(net), rest, p.keep, builtin, term).await;
    }
    if !stop {
        print_summary(&net.state, took);
        println!("up; Ctrl-C or `sdnlab net down --id {}` tears it down", net.state.id);
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    }
    let t = Instant::now();
    let id = net.state.id.clone();
    if let Some(b) = &builtin {
        b.leave();
    }
    let down = net.down().await;
    drop(builtin);
    match down {
        Ok(()) => {
            println!("run {id} down in {:.2} s", t.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!(
            "teardown of run {id} left something behind ({e}); `sdnlab net clean` removes it"
        )),
    }
}

/// Starts the built-in controller (or a cluster of `n` members and its
/// etcd, under run `id`'s directory so teardown stops them whatever
/// happens to this process); returns it, and the first member's REST API
/// and its token.
fn start_builtin(
    app: &str,
    n: Option<(usize, bool)>,
    id: &str,
) -> Result<(Builtin, std::net::SocketAddr, String), String> {
    let Some((n, slave_packet_ins)) = n else {
        let (h, addr, token) = controller::embedded::start_local_with_rest(app, 1).map_err(|e| e.to_string())?;
        eprintln!(
            "sdnlab: built-in controller with app {app} on {}, REST API on http://{addr}",
            h.local_addrs[0]
        );
        let b = Builtin {
            members: vec![h],
            etcd: None,
        };
        return Ok((b, addr, token));
    };
    if !(1..=9).contains(&n) {
        return Err(format!("--cluster {n}: give 1 to 9 members"));
    }
    let dir = std::path::Path::new(netlab::state::STATE_ROOT).join(id).join("etcd");
    let etcd = cluster::etcd::Etcd::start(&dir, 1).map_err(|e| e.to_string())?;
    let mut b = Builtin {
        members: Vec::new(),
        etcd: Some(etcd),
    };
    let endpoints = b.etcd.as_ref().map(|e| e.endpoint_list()).unwrap_or_default();
    let mut first = None;
    for i in 1..=n {
        let mut c = cluster::Config::new(endpoints.clone(), format!("c{i}"), ([127, 0, 0, 1], 0).into());
        c.cluster = format!("net-{id}");
        c.slave_packet_ins = slave_packet_ins;
        let (h, addr, token) =
            controller::embedded::start_member_with_rest(app, 1, Some(c)).map_err(|e| e.to_string())?;
        eprintln!(
            "sdnlab: cluster member c{i} with app {app} on {}, REST API on http://{addr}",
            h.local_addrs[0]
        );
        first.get_or_insert((addr, token));
        b.members.push(h);
    }
    let (addr, token) = first.expect("at least one member");
    eprintln!(
        "sdnlab: the members' etcd: {} (files in {}); GET /cluster on any member shows who masters what",
        endpoints.join(","),
        dir.display()
    );
    Ok((b, addr, token))
}

/// Runs the prompt on a blocking thread until it ends, then takes the
/// network down (unless `keep`). SIGTERM (`sdnlab net down` from another
/// shell) removes the network and ends the process.
async fn console(
    lab: labconsole::Lab,
    rest: Option<labconsole::Rest>,
    keep: bool,
    builtin: Option<Builtin>,
    mut term: tokio::signal::unix::Signal,
) -> ExitCode {
    let rt = tokio::runtime::Handle::current();
    let st = match &lab {
        labconsole::Lab::Owned(n) => n.state.clone(),
        labconsole::Lab::Attached(s) => s.clone(),
    };
    let owned = matches!(lab, labconsole::Lab::Owned(_));
    let leave: Vec<controller::runtime::Handle> = builtin.as_ref().map(|b| b.members.clone()).unwrap_or_default();
    let prompt = tokio::task::spawn_blocking(move || {
        let mut c = labconsole::Console::new(rt, lab, rest);
        let r = labconsole::prompt::run(&mut c);
        // A cluster's members leave it before teardown stops their etcd.
        if !keep {
            for m in &leave {
                m.leave_cluster();
            }
        }
        (r, c.finish(keep))
    });
    tokio::pin!(prompt);
    let (r, finished) = tokio::select! {
        done = &mut prompt => match done {
            Ok(v) => v,
            Err(e) => return fail(format!("the prompt stopped: {e}")),
        },
        _ = term.recv(), if owned => {
            let _ = crossterm_reset();
            let r = run::teardown(&st).await;
            let _ = std::fs::remove_dir_all(st.dir());
            match r {
                Ok(()) => {
                    println!("\nrun {} down (SIGTERM)", st.id);
                    std::process::exit(0)
                }
                Err(e) => {
                    eprintln!("sdnlab: teardown of run {} left something behind ({e}); `sdnlab net clean` removes it", st.id);
                    std::process::exit(1)
                }
            }
        }
    };
    if keep && builtin.is_some() {
        eprintln!(
            "sdnlab: the built-in controller stops with this process: the switches keep the flows they have and learn nothing new"
        );
    }
    drop(builtin);
    if let Err(e) = r {
        eprintln!("sdnlab: {e}");
    }
    match finished {
        Ok(msg) => {
            println!("{msg}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// Leaves the terminal as it was found (the prompt may be in raw mode).
fn crossterm_reset() -> std::io::Result<()> {
    let _ = std::process::Command::new("stty").arg("sane").status();
    Ok(())
}

/// `sdnlab net cli`: the prompt on a network another process brought up.
pub async fn cli(id: Option<&str>, keep: bool, rest: Option<&str>, token_file: Option<&std::path::Path>) -> ExitCode {
    let st = match pick(id) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let rest = match rest {
        Some(a) => {
            let addr = match a.parse() {
                Ok(a) => a,
                Err(_) => return fail(format!("--rest '{a}' is not HOST:PORT (e.g. 127.0.0.1:8080)")),
            };
            let token = match token_file {
                Some(f) => match controller::rest::token_from_file(f) {
                    Ok(t) => Some(t),
                    Err(e) => return fail(format!("--rest-token-file: {e}")),
                },
                None => None,
            };
            Some(labconsole::Rest { addr, token })
        }
        None => labconsole::Rest::load(&st.dir()),
    };
    let term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot watch SIGTERM: {e}")),
    };
    print_summary(&st, std::time::Duration::ZERO);
    console(labconsole::Lab::Attached(st), rest, keep, None, term).await
}

fn print_summary(st: &State, took: std::time::Duration) {
    let took = if took.is_zero() {
        String::new()
    } else {
        format!(", up in {:.2} s", took.as_secs_f64())
    };
    println!(
        "run {}: {} hosts, {} switches ({:?}), {} links{took}",
        st.id,
        st.hosts.len(),
        st.switches.len(),
        st.options.kind,
        st.links.len(),
    );
    for h in &st.hosts {
        println!("  host {:<8} {:<15} namespace {}", h.name, h.ip, h.netns);
    }
    for (name, br) in &st.switches {
        println!("  switch {name:<6} {br}");
    }
    for l in &st.links {
        let note = if l.blocked {
            "  (left down to break a loop; --keep-loops keeps it)"
        } else {
            ""
        };
        println!("  link {} - {} [{}]{note}", l.a, l.b, l.root_ends.join(" "));
    }
    if let Some(o) = &st.ovs {
        println!(
            "  ovs: ovsdb-server pid {}, {} pid {}, files in {}",
            o.ovsdb_pid,
            daemon_name(st),
            o.vswitchd_pid,
            o.dir.display()
        );
    }
}

/// What runs the switches of a run with an ovsdb-server.
fn daemon_name(st: &State) -> &'static str {
    match st.options.kind {
        SwitchKind::Sdnlab => "sdnlab switch --ovsdb",
        _ => "ovs-vswitchd",
    }
}

/// The run to act on: the one with `id`, or the only one.
pub fn pick(id: Option<&str>) -> Result<State, String> {
    let states: Vec<State> = run::list_states().into_iter().filter_map(|(_, s)| s.ok()).collect();
    match id {
        Some(id) => states
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| format!("no run with id '{id}' (see `sdnlab net show`)")),
        None => match states.len() {
            0 => Err("no network is up (start one with `sdnlab net up SPEC`)".into()),
            1 => Ok(states.into_iter().next().expect("one state")),
            _ => Err(format!(
                "{} networks are up ({}): pick one with --id",
                states.len(),
                states.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ")
            )),
        },
    }
}

pub async fn down(id: Option<&str>) -> ExitCode {
    let st = match pick(id) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    match run::stop_run(&st).await {
        Ok(()) => {
            println!("run {} down", st.id);
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("run {}: {e}", st.id)),
    }
}

pub fn show() -> ExitCode {
    let states = run::list_states();
    if states.is_empty() {
        println!("no network is up");
    }
    for (dir, st) in states {
        match st {
            Ok(st) => print_summary(&st, std::time::Duration::ZERO),
            Err(e) => println!(
                "{}: unreadable state ({e}); `sdnlab net clean` removes it",
                dir.display()
            ),
        }
    }
    ExitCode::SUCCESS
}

pub async fn clean() -> ExitCode {
    match run::clean().await {
        Ok(removed) if removed.is_empty() => {
            println!("nothing to clean");
            ExitCode::SUCCESS
        }
        Ok(removed) => {
            for r in removed {
                println!("removed {r}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

pub fn exec(id: Option<&str>, host: &str, argv: &[String]) -> ExitCode {
    let st = match pick(id) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    // As at the prompt (and in Mininet): a host's name in the command is
    // its address (`net exec h1 -- ping h4`).
    let argv = labconsole::command::Names::of(&st).substitute_args(argv);
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut cmd = match run::command_in(&st, host, &args) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    match cmd.status() {
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => fail(format!("{}: {e}", argv.join(" "))),
    }
}

pub async fn pingall(id: Option<&str>, count: u32, json: bool) -> ExitCode {
    let st = match pick(id) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let results = run::ping_all(&st, count).await;
    let all_ok = results.iter().all(|r| r.received == r.sent);
    if json {
        println!("{}", serde_json::to_string(&results).unwrap_or_default());
    } else {
        let w = st.hosts.iter().map(|h| h.name.len()).max().unwrap_or(2).max(9);
        print!("{:w$}", "from\\to");
        for h in &st.hosts {
            print!(" {:>w$}", h.name);
        }
        println!();
        for a in &st.hosts {
            print!("{:w$}", a.name);
            for b in &st.hosts {
                let cell = match results.iter().find(|r| r.from == a.name && r.to == b.name) {
                    None => "-".to_string(),
                    Some(r) if r.received == 0 => "X".to_string(),
                    Some(r) => {
                        let loss = 100 * (r.sent - r.received) / r.sent.max(1);
                        match (loss, r.rtt_avg_ms) {
                            (0, Some(ms)) => format!("{ms:.3}ms"),
                            (l, _) => format!("{l}%loss"),
                        }
                    }
                };
                print!(" {cell:>w$}");
            }
            println!();
        }
        let answered = results.iter().filter(|r| r.received == r.sent).count();
        println!("{answered}/{} pairs answered every ping ({count} each)", results.len());
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The slowest configured rate (Mbit/s) on the path from host `a` to
/// host `b` (breadth-first over the topology's links), and its link, if
/// any link on the path has one.
fn path_rate(st: &State, a: &str, b: &str) -> Option<(String, f64)> {
    let topo = st.topology.as_ref()?;
    let mut prev: std::collections::HashMap<&str, (&str, Option<f64>)> = Default::default();
    let mut queue = std::collections::VecDeque::from([a]);
    prev.insert(a, (a, None));
    while let Some(n) = queue.pop_front() {
        if n == b {
            break;
        }
        for (l, ls) in topo.links.iter().zip(&st.links) {
            if ls.blocked {
                continue;
            }
            let next = if l.a == n {
                l.b.as_str()
            } else if l.b == n {
                l.a.as_str()
            } else {
                continue;
            };
            if !prev.contains_key(next) {
                prev.insert(next, (n, l.rate_mbit));
                queue.push_back(next);
            }
        }
    }
    let mut slowest: Option<(String, f64)> = None;
    let mut n = b;
    while n != a {
        let (p, r) = *prev.get(n)?;
        if let Some(r) = r {
            if slowest.as_ref().is_none_or(|(_, x)| r < *x) {
                slowest = Some((format!("link {p}-{n}"), r));
            }
        }
        n = p;
    }
    slowest
}

pub async fn iperf(id: Option<&str>, client: &str, server: &str, seconds: u32, json: bool) -> ExitCode {
    let st = match pick(id) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    // The measured path's processes: the switches (iperf3's two join as they start).
    let mut watched: Vec<(String, u32)> = st
        .sdnlab
        .iter()
        .filter(|p| p.pid != 0)
        .map(|p| (format!("switch {}", p.name), p.pid))
        .collect();
    if let Some(o) = &st.ovs {
        watched.push((daemon_name(&st).into(), o.vswitchd_pid));
    }
    let watch = lab::host::HostWatch::start(watched, lab::host::Rule::default());
    let add = watch.adder();
    let r = run::iperf(&st, client, server, seconds, None, &add).await;
    let mut host = watch.finish();
    let r = match r {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    // A configured rate not reached while a core was saturated: the host, not the link, limited it.
    let link = path_rate(&st, client, server);
    let rate = link.as_ref().map(|l| l.1);
    if let Some(mbit) = rate {
        host.rate_not_reached(
            &format!("the path's configured {mbit} Mbit/s"),
            mbit * 1e6,
            r.received_bps,
        );
    }
    // The operational bound: each process's CPU seconds per bit received,
    // the kernel's, and the slowest shaped link's 1/rate; N (bits in
    // flight) is not known for TCP, so the bound is 1/D_max.
    let bits = r.received_bps * f64::from(seconds);
    let mut demands = host.demands(bits);
    if let Some((name, mbit)) = &link {
        demands.push((format!("{name} at {mbit} Mbit/s"), 1.0 / (mbit * 1e6)));
    }
    let bound = lab::host::Bound::of("bit", demands, None);
    if json {
        println!(
            "{}",
            serde_json::json!({"client": client, "server": server, "seconds": seconds, "iperf": r,
                "configured_mbit": rate, "host": host, "bound": bound})
        );
    } else {
        println!(
            "{client} -> {server}: {:.3} Gbit/s received over {seconds} s TCP ({} retransmits)",
            r.received_bps / 1e9,
            r.retransmits
        );
        println!("host: {}", host.line());
        if let Some(b) = &bound {
            println!(
                "bound: X <= {:.3} Gbit/s (operational law, 1/D_max), bottleneck {}; measured {:.0} % of it",
                b.bound / 1e9,
                b.bottleneck,
                100.0 * r.received_bps / b.bound
            );
        }
    }
    ExitCode::SUCCESS
}

pub async fn link(id: Option<&str>, a: &str, b: &str, up: bool) -> ExitCode {
    let st = match pick(id) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    match run::set_link(&st, a, b, up).await {
        Ok(()) => {
            println!("link {a} - {b} {}", if up { "up" } else { "down" });
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
