//! `sdnlab net ...`: bring emulated networks up and down, run commands in
//! hosts, measure reachability (pingall) and throughput (iperf3).

use netlab::run::{self, Net, State, SwitchKind, UpOptions};
use netlab::topo;
use std::process::ExitCode;
use std::time::Instant;

pub fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("sdnlab: {msg}");
    ExitCode::from(2)
}

/// One warning line when a daemon listens in plain text beyond loopback:
/// `what` on each of `addrs` that is not a loopback address (an unspecified
/// address, [::] or 0.0.0.0, is every address), and how to avoid it.
pub fn warn_plain_listeners(who: &str, addrs: &[(&str, std::net::SocketAddr)], fix: &str) {
    let open: Vec<String> = addrs
        .iter()
        .filter(|(_, a)| !a.ip().is_loopback())
        .map(|(what, a)| format!("{what} on {a}"))
        .collect();
    if !open.is_empty() {
        eprintln!(
            "{who}: warning: plain text, reachable beyond this machine: {} (anyone who reaches it can use it; {fix})",
            open.join(", ")
        );
    }
}

/// Reads `SPEC` as a built-in shape, or a `.toml` file.
pub fn load_topology(spec: &str) -> Result<topo::Topology, Vec<String>> {
    if spec.ends_with(".toml") || std::path::Path::new(spec).is_file() {
        let text = std::fs::read_to_string(spec).map_err(|e| vec![format!("{spec}: {e}")])?;
        topo::from_toml(&text).map_err(|ps| ps.into_iter().map(|p| format!("{spec}: {p}")).collect())
    } else {
        topo::shape(spec).map_err(|e| vec![e])
    }
}

pub async fn up(
    spec: &str,
    kind: SwitchKind,
    controller: Option<String>,
    app: Option<String>,
    keep_loops: bool,
    ssl: Option<netlab::run::SslFiles>,
) -> ExitCode {
    // --app: sdnlab's own controller, started in this process for the run's lifetime.
    let mut builtin = None;
    let mut controller = controller;
    if let Some(app) = app {
        if kind == SwitchKind::Bridge {
            return fail("--app needs OpenFlow switches: add --switch ovs");
        }
        match controller::embedded::start_local(&app, 1) {
            Ok(h) => {
                controller = Some(h.local_addrs[0].to_string());
                eprintln!("sdnlab: built-in controller with app {app} on {}", h.local_addrs[0]);
                builtin = Some(h);
            }
            Err(e) => return fail(e),
        }
    }
    if let Some(c) = &controller {
        let addr = c.strip_prefix("tcp:").or_else(|| c.strip_prefix("ssl:")).unwrap_or(c);
        if addr.parse::<std::net::SocketAddr>().is_err() {
            return fail(format!(
                "--controller '{c}' is not HOST:PORT, tcp:HOST:PORT or ssl:HOST:PORT (e.g. 127.0.0.1:6653)"
            ));
        }
        if c.starts_with("ssl:") && ssl.is_none() {
            return fail("an ssl: controller needs --ssl KEY CERT CACERT (the switches' PEM files)");
        }
        if kind == SwitchKind::Bridge {
            return fail("--controller needs OpenFlow switches: add --switch ovs");
        }
    }
    let t = match load_topology(spec) {
        Ok(t) => t,
        Err(problems) => {
            for p in &problems {
                eprintln!("sdnlab: {p}");
            }
            return ExitCode::from(2);
        }
    };
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot watch SIGTERM: {e}")),
    };
    let started = Instant::now();
    let up = Net::up(
        t,
        UpOptions {
            kind,
            controller,
            keep_loops,
            ssl,
        },
    );
    tokio::pin!(up);
    let mut stop = false;
    let net = loop {
        tokio::select! {
            r = &mut up => break r,
            _ = tokio::signal::ctrl_c(), if !stop => stop = true,
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
    if !stop {
        print_summary(&net.state, took);
        println!("up; Ctrl-C or `sdnlab net down --id {}` tears it down", net.state.id);
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    let t = Instant::now();
    let id = net.state.id.clone();
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
            "  ovs: ovsdb-server pid {}, ovs-vswitchd pid {}, files in {}",
            o.ovsdb_pid,
            o.vswitchd_pid,
            o.dir.display()
        );
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
    let alive = run::is_sdnlab(st.pid);
    let dir = std::path::Path::new(run::STATE_ROOT).join(&st.id);
    if alive {
        // The foreground `up` tears its own network down on SIGTERM.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(st.pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let t = Instant::now();
        while dir.exists() && t.elapsed().as_secs() < 30 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        if !dir.exists() {
            println!("run {} down", st.id);
            return ExitCode::SUCCESS;
        }
    }
    let r = run::teardown(&st).await;
    let _ = std::fs::remove_dir_all(&dir);
    match r {
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

pub async fn iperf(id: Option<&str>, client: &str, server: &str, seconds: u32) -> ExitCode {
    let st = match pick(id) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let Some(srv) = st.hosts.iter().find(|h| h.name == server) else {
        return fail(format!("no host '{server}'"));
    };
    let mut server_cmd = match run::command_in(&st, server, &["iperf3", "-s", "-1", "-p", "5201"]) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let mut server_proc = match server_cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(p) => p,
        Err(e) => return fail(format!("iperf3 (run scripts/install-deps.sh): {e}")),
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let ip = srv.ip.to_string();
    let secs = seconds.to_string();
    let out = match run::command_in(&st, client, &["iperf3", "-c", &ip, "-p", "5201", "-t", &secs, "-J"])
        .map(|mut c| c.output())
    {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return fail(format!("iperf3: {e}")),
        Err(e) => return fail(e),
    };
    let _ = server_proc.kill();
    let _ = server_proc.wait();
    let v: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(_) => {
            return fail(format!(
                "iperf3 {client} -> {server} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    if let Some(e) = v["error"].as_str() {
        return fail(format!("iperf3 {client} -> {server}: {e}"));
    }
    let bps = v["end"]["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0);
    let retr = v["end"]["sum_sent"]["retransmits"].as_u64().unwrap_or(0);
    println!(
        "{client} -> {server}: {:.3} Gbit/s received over {seconds} s TCP ({retr} retransmits)",
        bps / 1e9
    );
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
