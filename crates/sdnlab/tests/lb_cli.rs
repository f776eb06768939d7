//! The `lb` app end to end, as root, through the command line a user
//! types: `sdnlab net up` (three clients, four replicas, sdnlab's switch,
//! a management network), `sdnlab controller --app lb`, nginx and
//! `sdnlab agent` in the replicas' namespaces, curl and Python's HTTP
//! client in the clients'. Round-robin reaches every replica; a keep-alive
//! connection idle past its rules' timeout comes back to its replica.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::free_port;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Children stopped with SIGTERM (nginx masters stop their workers, the
/// controller prints its metrics) when the test ends, however it ends.
struct Children(Vec<Child>);

impl Children {
    fn stop(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for c in self.0.iter_mut().rev() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
            let mut err = String::new();
            if let Some(e) = c.stderr.as_mut() {
                let _ = std::io::Read::read_to_string(e, &mut err);
            }
            out.push(err);
        }
        self.0.clear();
        out
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Net {
    child: Child,
    id: String,
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .args(["net", "down", "--id", &self.id])
            .output();
        let _ = self.child.wait();
    }
}

fn in_ns(id: &str, host: &str, argv: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &format!("sdnlab-{id}-{host}")]).args(argv);
    c
}

#[test]
fn round_robin_reaches_every_replica_and_a_flow_keeps_its_replica() {
    let dir = std::env::temp_dir().join(format!("sdnlab-lb-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A management subnet of this test's own.
    let m = 100 + std::process::id() % 100;
    let mut topo = String::from("[mgmt]\n");
    topo += &format!("subnet = \"10.79.{m}.0/24\"\nroot_ip = \"10.79.{m}.254\"\n");
    for c in 1..=3 {
        topo += &format!("[[host]]\nname = \"c{c}\"\nip = \"10.0.0.{c}/24\"\nmgmt_ip = \"10.79.{m}.{c}\"\n");
    }
    for r in 1..=4 {
        topo += &format!(
            "[[host]]\nname = \"r{r}\"\nip = \"10.0.0.1{r}/24\"\nmac = \"02:00:00:00:00:1{r}\"\nmgmt_ip = \"10.79.{m}.1{r}\"\n"
        );
    }
    topo += "[[switch]]\nname = \"s1\"\nprotocols = [\"OpenFlow13\"]\n";
    for h in ["c1", "c2", "c3", "r1", "r2", "r3", "r4"] {
        topo += &format!("[[link]]\na = \"{h}\"\nb = \"s1\"\n");
    }
    std::fs::write(dir.join("lab.toml"), &topo).unwrap();
    // Ports follow the links: clients 1-3, replicas 4-7. Rules idle out
    // after 1 s, the app remembers flows for 30 s.
    let mut lb = String::from(
        "policy = \"round-robin\"\nidle_timeout = 1\nmemory_s = 30\nhealth = { kind = \"tcp\", interval_ms = 200, timeout_ms = 1000, failures = 3 }\n[vip]\nip = \"10.0.0.100\"\nmac = \"02:00:00:00:01:00\"\n",
    );
    for r in 1..=4 {
        lb += &format!(
            "[[replica]]\nip = \"10.0.0.1{r}\"\nmac = \"02:00:00:00:00:1{r}\"\nport = {}\nmgmt = \"10.79.{m}.1{r}\"\n",
            3 + r
        );
    }
    std::fs::write(dir.join("lb.toml"), &lb).unwrap();

    let port = free_port();
    let mut children = Children(Vec::new());
    children.0.push(
        Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .args(["controller", "--app", "lb", "--no-rest", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--lb-config")
            .arg(dir.join("lb.toml"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut up = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "up"])
        .arg(dir.join("lab.toml"))
        .args(["--switch", "sdnlab", "--controller", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The rest of its output is read by nobody but kept open until the end.
    let (_, id, _out) = common::until_up(&mut up);
    let net = Net {
        child: up,
        id: id.clone(),
    };
    let run_dir = format!("/run/sdnlab/net/{id}");

    // nginx and an agent in every replica; their files under the run's
    // directory, so `net down` stops them even if this test does not.
    for r in 1..=4 {
        let name = format!("r{r}");
        let rdir = std::path::PathBuf::from(&run_dir).join(&name);
        let argv = lb::replica::prepare(&rdir, &name, 80, &[]).unwrap();
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        children
            .0
            .push(in_ns(&id, &name, &argv).stderr(Stdio::piped()).spawn().unwrap());
        let pidfile = rdir.join("agent.pid");
        children.0.push(
            in_ns(
                &id,
                &name,
                &[
                    env!("CARGO_BIN_EXE_sdnlab"),
                    "agent",
                    "--pidfile",
                    pidfile.to_str().unwrap(),
                ],
            )
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        );
    }
    // The health checks reach every replica over the management network.
    let deadline = Instant::now() + Duration::from_secs(20);
    let get = |client: &str| -> Output {
        in_ns(
            &id,
            client,
            &[
                "curl",
                "-s",
                "-m",
                "3",
                "-D",
                "-",
                "-o",
                "/dev/null",
                "http://10.0.0.100/",
            ],
        )
        .output()
        .unwrap()
    };
    // Every nginx answers on its own address (through l2-learning), then
    // the health checks have a moment to see them all.
    for r in 1..=4 {
        let url = format!("http://10.0.0.1{r}/");
        while !in_ns(&id, "c1", &["curl", "-s", "-m", "1", &url])
            .output()
            .unwrap()
            .status
            .success()
        {
            assert!(Instant::now() < deadline, "r{r}'s nginx does not answer");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    std::thread::sleep(Duration::from_millis(600));
    // An agent answers the controller's question over the management network.
    let mut client = lb::agent::Client::new().unwrap();
    let agent: std::net::SocketAddr = format!("10.79.{m}.11:9109").parse().unwrap();
    let answers = client.ask(&[Some(agent)], Duration::from_secs(1), true);
    assert!(answers[0].is_some_and(|a| a.tx_bytes > 0), "agent r1: {answers:?}");

    let mut seen = std::collections::BTreeMap::new();
    for i in 0..8 {
        let o = get(["c1", "c2", "c3"][i % 3]);
        let head = text(&o.stdout);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}{}", text(&o.stderr));
        let replica = head
            .lines()
            .find_map(|l| l.strip_prefix("X-Replica: "))
            .unwrap()
            .trim()
            .to_string();
        *seen.entry(replica).or_insert(0) += 1;
    }
    assert_eq!(
        seen.keys().cloned().collect::<Vec<_>>(),
        ["r1", "r2", "r3", "r4"],
        "round-robin reaches all four: {seen:?}"
    );
    assert!(seen.values().all(|&n| n == 2), "and evenly: {seen:?}");

    // One keep-alive connection, idle past its rules' timeout between two
    // requests: the second reaches the same replica (a different one
    // would reset the connection).
    let sticky = "import http.client, time\n\
        c = http.client.HTTPConnection('10.0.0.100', 80, timeout=5)\n\
        for i in range(2):\n\
        \x20   c.request('GET', '/')\n\
        \x20   r = c.getresponse(); r.read(); print(r.getheader('X-Replica'))\n\
        \x20   time.sleep(3 if i == 0 else 0)\n";
    let o = in_ns(&id, "c2", &["python3", "-c", sticky]).output().unwrap();
    let replicas: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
    if !o.status.success() {
        // What the controller saw (its metrics: refused flows, health
        // events, returning flows) says which side lost the request.
        let errs = children.stop();
        panic!(
            "{}\nprinted before: {replicas:?}\nthe controller and replicas: {errs:#?}",
            text(&o.stderr)
        );
    }
    assert_eq!(replicas.len(), 2, "{replicas:?}");
    assert_eq!(replicas[0], replicas[1], "the flow came back to its replica");

    let errs = children.stop();
    let metrics = errs
        .iter()
        .find_map(|e| e.lines().find_map(|l| l.strip_prefix("sdnlab lb: ")))
        .unwrap_or_else(|| panic!("the controller's metrics: {errs:?}"));
    let m: serde_json::Value = serde_json::from_str(metrics).unwrap();
    assert!(m["returning"].as_u64().unwrap() >= 1, "{m}");
    assert!(m["new_flows"].as_u64().unwrap() >= 9, "{m}");
    // Replicas checked before their nginx started were out, then back in.
    for r in 0..4 {
        let last = m["health_events"].as_array().unwrap().iter().rev().find(|e| e[1] == r);
        assert!(last.is_none_or(|e| e[2] == true), "replica {r} ends alive: {m}");
    }
    drop(net);
    let _ = std::fs::remove_dir_all(&dir);
}
