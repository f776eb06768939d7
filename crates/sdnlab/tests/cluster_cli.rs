//! sdnlab's controller as a three-member cluster on a real etcd, with real
//! Open vSwitch as the oracle for roles, through the command line a user
//! types: `sdnlab controller --cluster URL --member NAME` three times,
//! `sdnlab net up linear,4 --switch ovs --controller A,B,C` (every bridge
//! given all three). OVS shows exactly one master per bridge, the masters
//! spread over the members and agree with the members' GET /cluster;
//! pingall passes. The master of a bridge killed with SIGKILL: another
//! member becomes its master (OVS says so) well within the lease's TTL,
//! pingall passes again, and the flow the REST API installed is still
//! there.

mod common;

use common::{free_port, scratch};
use std::io::Read;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "cluster-cli-test-token-0123456789abcdef";

/// Processes killed (and reaped) when the test ends, however it ends.
struct Kids(Vec<(String, Child)>);

impl Drop for Kids {
    fn drop(&mut self) {
        for (_, c) in self.0.iter_mut().rev() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let t = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One HTTP/1.1 exchange through the lab's client, with the test's
/// token; the status and the JSON body (null when it is none).
fn http(rest: SocketAddr, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    let req = httpc::Request {
        method,
        path,
        body: Some(body),
        token: Some(TOKEN),
    };
    let r = httpc::request_blocking(rest, req, Duration::from_secs(10)).unwrap();
    (
        r.status,
        serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null),
    )
}

fn wait_until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < within, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Bridge name -> [(controller port, role, connected)], from OVS's database.
fn ovs_roles(db: &str) -> std::collections::BTreeMap<String, Vec<(u16, String, bool)>> {
    let mut out = std::collections::BTreeMap::new();
    let bridges = common::ok(&["ovs-vsctl", &format!("--db={db}"), "list-br"]);
    for br in bridges.lines() {
        let list = common::ok(&["ovs-vsctl", &format!("--db={db}"), "get-controller", br]);
        let mut rows = Vec::new();
        for target in list.lines() {
            let port: u16 = target.rsplit(':').next().unwrap().parse().unwrap();
            let uuid = common::ok(&[
                "ovs-vsctl",
                &format!("--db={db}"),
                "--bare",
                "--columns=_uuid",
                "find",
                "controller",
                &format!("target=\"{target}\""),
            ]);
            // Each bridge has its own Controller rows with the same targets.
            let mut found = None;
            for u in uuid.split_whitespace() {
                let owner = common::ok(&["ovs-vsctl", &format!("--db={db}"), "get", "bridge", br, "controller"]);
                if owner.contains(u) {
                    let get = |col: &str| {
                        common::ok(&["ovs-vsctl", &format!("--db={db}"), "get", "controller", u, col])
                            .trim()
                            .trim_matches('"')
                            .to_string()
                    };
                    found = Some((port, get("role"), get("is_connected") == "true"));
                }
            }
            rows.push(found.unwrap());
        }
        out.insert(br.to_string(), rows);
    }
    out
}

/// `sdnlab net up ARGS --no-live`, once it says "up;": the process and the run's id.
fn net_up(args: &[&str]) -> (Child, String) {
    let mut up = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "up", "--no-live"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (_, id, mut out) = common::until_up(&mut up);
    // The rest of its output ("run ID down" at the end) still has a reader.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (up, id)
}

/// `sdnlab bench ctl ARGS --out OUT`, which must succeed.
fn bench_ctl(args: &[&str], out: &std::path::Path) {
    let r = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["bench", "ctl"])
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

/// A run directory's meta.json.
fn meta_of(run: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap()
}

/// A run directory's samples.jsonl: its text, and each sample.
fn samples_of(run: &std::path::Path) -> (String, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(run.join("samples.jsonl")).unwrap();
    let samples = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (text, samples)
}

fn pingall(id: &str, hosts: u32) -> Vec<String> {
    let mut failed = Vec::new();
    for a in 1..=hosts {
        for b in 1..=hosts {
            if a == b {
                continue;
            }
            let ok = Command::new("ip")
                .args(["netns", "exec", &format!("sdnlab-{id}-h{a}"), "ping", "-c1", "-W1"])
                .arg(format!("10.0.0.{b}"))
                .output()
                .unwrap()
                .status
                .success();
            if !ok {
                failed.push(format!("h{a}->h{b}"));
            }
        }
    }
    failed
}

/// `n` members c1..cN of the cluster "clitest" on `etcd`, each `sdnlab
/// controller --app l2-learning` with its REST API (token `TOKEN`), its
/// log in `dir`/cI.log; once every REST API answers: the processes and
/// (name, OpenFlow port, REST address) of each.
fn start_members(
    dir: &std::path::Path,
    etcd: &cluster::etcd::Etcd,
    n: usize,
) -> (Kids, Vec<(String, u16, SocketAddr)>) {
    let token = dir.join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let mut kids = Kids(Vec::new());
    let mut members = Vec::new();
    for i in 1..=n {
        let (of, rest) = (free_port(), free_port());
        let log = std::fs::File::create(dir.join(format!("c{i}.log"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .args(["controller", "--app", "l2-learning", "--cluster", &etcd.endpoints()])
            .args(["--member", &format!("c{i}"), "--cluster-name", "clitest"])
            .args([
                "--listen",
                &format!("127.0.0.1:{of}"),
                "--rest",
                &format!("127.0.0.1:{rest}"),
            ])
            .arg("--rest-token-file")
            .arg(&token)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        kids.0.push((format!("c{i}"), child));
        members.push((format!("c{i}"), of, SocketAddr::from(([127, 0, 0, 1], rest))));
    }
    for (name, _, rest) in &members {
        wait_until(&format!("{name}'s REST API"), Duration::from_secs(10), || {
            std::net::TcpStream::connect(rest).is_ok()
        });
    }
    (kids, members)
}

#[test]
fn three_members_one_master_per_bridge_and_a_killed_master_is_replaced() {
    let dir = scratch("cluster", "ovs");
    std::fs::create_dir_all(&dir).unwrap();
    let etcd = cluster::etcd::Etcd::start(&dir.join("etcd"), 1).unwrap();
    let (mut kids, members) = start_members(&dir, &etcd, 3);
    let logs = || -> String {
        (1..=3)
            .map(|i| std::fs::read_to_string(dir.join(format!("c{i}.log"))).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let controllers: Vec<String> = members.iter().map(|(_, of, _)| format!("127.0.0.1:{of}")).collect();
    let (up, id) = net_up(&["linear,4", "--switch", "ovs", "--controller", &controllers.join(",")]);
    kids.0.push(("net".into(), up));
    let db = format!("unix:/run/sdnlab/net/{id}/ovs/db.sock");

    // Exactly one master per bridge, everyone else a slave, all connected.
    let settled = |r: &std::collections::BTreeMap<String, Vec<(u16, String, bool)>>| {
        r.len() == 4
            && r.values().all(|rows| {
                rows.len() == 3
                    && rows.iter().all(|x| x.2)
                    && rows.iter().filter(|x| x.1 == "master").count() == 1
                    && rows.iter().filter(|x| x.1 == "slave").count() == 2
            })
    };
    let t = Instant::now();
    let mut roles = ovs_roles(&db);
    while !settled(&roles) {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "OVS roles never settled: {roles:?}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
        roles = ovs_roles(&db);
    }
    let name_of = |port: u16| members.iter().find(|m| m.1 == port).unwrap().0.clone();
    let master_of = |rows: &Vec<(u16, String, bool)>| name_of(rows.iter().find(|x| x.1 == "master").unwrap().0);
    // The members' map says the same (datapath ids 1..4 are s1..s4).
    let (_, map) = http(members[0].2, "GET", "/cluster", "");
    let bridges: Vec<String> = roles.keys().cloned().collect();
    for (i, br) in bridges.iter().enumerate() {
        let dpid = format!("{:016x}", i + 1);
        assert_eq!(
            map["masters"][&dpid]["master"].as_str(),
            Some(master_of(&roles[br]).as_str()),
            "bridge {br}: {map}"
        );
    }
    let masters: std::collections::BTreeSet<String> = roles.values().map(master_of).collect();
    assert!(masters.len() >= 2, "masters spread over the members: {roles:?}");
    wait_until("pingall", Duration::from_secs(15), || pingall(&id, 4).is_empty());

    // Any member takes writes: a flow through a slave of s1 is in etcd,
    // and s1's master puts it in the switch before the slave answers.
    let s1 = &bridges[0];
    let m1 = master_of(&roles[s1]);
    let slave = members.iter().find(|m| m.0 != m1).unwrap();
    let flow = r#"{"priority": 700, "cookie": 4660, "match": {"eth_type": 2048, "ip_proto": 17, "tp_dst": 5999}, "actions": [{"output": 1}]}"#;
    let (st, body) = http(slave.2, "POST", "/switches/1/flows", flow);
    assert_eq!(st, 201, "{body}\n{}", logs());
    let mgmt = format!("unix:/run/sdnlab/net/{id}/ovs/{s1}.mgmt");
    let dump = || common::ok(&["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", &mgmt]);
    assert!(dump().contains("cookie=0x1234"), "{}", dump());
    // A second flow, then a delete through another member: gone from the
    // switch, and no longer kept (no new master sends it again).
    let other = r#"{"priority": 701, "cookie": 22136, "match": {"eth_type": 2048, "ip_proto": 17, "tp_dst": 6000}, "actions": [{"output": 1}]}"#;
    let (st, body) = http(members[0].2, "POST", "/switches/1/flows", other);
    assert_eq!(st, 201, "{body}");
    assert!(dump().contains("cookie=0x5678"), "{}", dump());
    let filter = r#"{"match": {"eth_type": 2048, "ip_proto": 17, "tp_dst": 6000}}"#;
    let (st, body) = http(members[2].2, "DELETE", "/switches/1/flows", filter);
    assert_eq!(st, 200, "{body}");
    assert!(!dump().contains("cookie=0x5678"), "{}", dump());
    // The kept flow removed behind the cluster's back: s1's next master
    // must send it again.
    common::ok(&["ovs-ofctl", "-O", "OpenFlow13", "del-flows", &mgmt, "cookie=0x1234/-1"]);
    assert!(!dump().contains("cookie=0x1234"), "{}", dump());

    // SIGKILL s1's master: another member takes s1 over, well within the
    // lease's TTL (5 s), with OVS as the witness.
    let k = kids.0.iter().position(|(n, _)| *n == m1).unwrap();
    let (_, mut victim) = kids.0.remove(k);
    let killed = Instant::now();
    victim.kill().unwrap();
    victim.wait().unwrap();
    let survivor = members.iter().find(|m| m.0 != m1).unwrap().2;
    wait_until("the survivors re-elect s1's master", Duration::from_secs(4), || {
        let (_, m) = http(survivor, "GET", "/cluster", "");
        m["masters"]["0000000000000001"]["master"]
            .as_str()
            .is_some_and(|n| n != m1)
    });
    let reelected = killed.elapsed();
    let t = Instant::now();
    loop {
        let r = ovs_roles(&db);
        let new = r[s1].iter().find(|x| x.1 == "master" && x.2).map(|x| name_of(x.0));
        if new.as_ref().is_some_and(|n| *n != m1) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "OVS never saw a new master of {s1}: {r:?}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_until("pingall after the failover", Duration::from_secs(15), || {
        pingall(&id, 4).is_empty()
    });
    wait_until(
        "s1's new master sends the kept flow again",
        Duration::from_secs(5),
        || dump().contains("cookie=0x1234"),
    );
    assert!(
        !dump().contains("cookie=0x5678"),
        "a deleted flow is not sent again: {}",
        dump()
    );
    assert!(
        logs().contains(&format!("cluster member {m1} is gone")),
        "the survivors noticed the death themselves (not the lease's expiry): {}",
        logs()
    );
    eprintln!("s1's master {m1} killed: re-elected in {reelected:?}");
    drop(kids);
    drop(etcd);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stale master: the master of s1 is stopped (SIGSTOP) past its lease's
/// TTL, so etcd ends its lease and another member is elected with a higher
/// generation id; OVS takes the new master. When the old one runs again
/// (SIGCONT) it joins again (its lease is gone: not an outage), the
/// switch goes back to it only through a new election with a higher
/// generation id, its view agrees with the others' and the switch's, and
/// pingall passes.
#[test]
fn a_stopped_master_past_its_lease_comes_back_as_a_slave_and_the_switch_keeps_the_new_one() {
    let dir = scratch("cluster", "stale");
    std::fs::create_dir_all(&dir).unwrap();
    let etcd = cluster::etcd::Etcd::start(&dir.join("etcd"), 1).unwrap();
    let (mut kids, members) = start_members(&dir, &etcd, 3);
    let controllers: Vec<String> = members.iter().map(|(_, of, _)| format!("127.0.0.1:{of}")).collect();
    let (up, id) = net_up(&["linear,2", "--switch", "ovs", "--controller", &controllers.join(",")]);
    kids.0.push(("net".into(), up));
    let db = format!("unix:/run/sdnlab/net/{id}/ovs/db.sock");
    let name_of = |port: u16| members.iter().find(|m| m.1 == port).unwrap().0.clone();
    let s1_master = || -> Option<String> {
        let r = ovs_roles(&db);
        let rows = r.values().next()?;
        let m: Vec<&(u16, String, bool)> = rows.iter().filter(|x| x.1 == "master" && x.2).collect();
        (m.len() == 1 && rows.len() == 3).then(|| name_of(m[0].0))
    };
    wait_until("s1 has one master", Duration::from_secs(30), || s1_master().is_some());
    let old = s1_master().unwrap();
    let rest_of = |n: &str| members.iter().find(|m| m.0 == n).unwrap().2;
    let (_, before) = http(rest_of(&old), "GET", "/cluster", "");
    let old_generation = before["masters"]["0000000000000001"]["generation_id"].as_u64().unwrap();
    wait_until("pingall", Duration::from_secs(15), || pingall(&id, 2).is_empty());

    let pid = kids.0.iter().find(|(n, _)| *n == old).unwrap().1.id() as i32;
    let pid = nix::unistd::Pid::from_raw(pid);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    // Its probes still connect (the kernel accepts for a stopped process):
    // only the lease's expiry (5 s) tells the others.
    let survivor = rest_of(&members.iter().find(|m| m.0 != old).unwrap().0);
    let new = std::cell::RefCell::new(String::new());
    wait_until("another member elected master of s1", Duration::from_secs(12), || {
        let (_, m) = http(survivor, "GET", "/cluster", "");
        let e = &m["masters"]["0000000000000001"];
        let name = e["master"].as_str().unwrap_or("");
        let higher = e["generation_id"].as_u64().is_some_and(|g| g > old_generation);
        if !name.is_empty() && name != old && higher {
            *new.borrow_mut() = name.to_string();
        }
        !new.borrow().is_empty()
    });
    let new = new.into_inner();
    wait_until("OVS takes the new master", Duration::from_secs(10), || {
        s1_master().as_deref() == Some(new.as_str())
    });
    let (_, m) = http(survivor, "GET", "/cluster", "");
    let new_generation = m["masters"]["0000000000000001"]["generation_id"].as_u64().unwrap();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    // The old master runs again with its old generation id. The switch
    // takes it back only if etcd elects it again (it is s1's preferred
    // member: the masters rebalance when it rejoins), by a new claim with
    // a higher generation id; OVS is read before etcd, and OVS follows
    // etcd, so the order of the reads cannot make a false alarm.
    let t = Instant::now();
    let mut agreed = false;
    while t.elapsed() < Duration::from_secs(8) {
        let on_switch = s1_master();
        let (_, view) = http(survivor, "GET", "/cluster", "");
        let e = &view["masters"]["0000000000000001"];
        let (elected, generation) = (
            e["master"].as_str().unwrap_or(""),
            e["generation_id"].as_u64().unwrap_or(0),
        );
        if on_switch.as_deref() == Some(old.as_str()) {
            assert!(
                elected == old && generation > new_generation,
                "the stale master {old} (generation {old_generation}) got s1 back without a new election: etcd says {elected} at {generation} (the new master had {new_generation})"
            );
        }
        // The old member's view agrees with the others', and the switch
        // with both.
        let (_, mine) = http(rest_of(&old), "GET", "/cluster", "");
        agreed = mine["etcd_reachable"] == true
            && mine["masters"]["0000000000000001"] == view["masters"]["0000000000000001"]
            && on_switch.as_deref() == Some(elected);
        if agreed && t.elapsed() > Duration::from_secs(2) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if !agreed {
        let (_, view) = http(rest_of(&old), "GET", "/cluster", "");
        let log = std::fs::read_to_string(dir.join(format!("{old}.log"))).unwrap_or_default();
        panic!(
            "the old master {old} and the switch never agreed with etcd: {view}\n{:?}\n{log}",
            ovs_roles(&db)
        );
    }
    wait_until(
        "pingall after the stale master's return",
        Duration::from_secs(15),
        || pingall(&id, 2).is_empty(),
    );
    drop(kids);
    drop(etcd);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `net up --app paths --cluster 3 --slave-packet-ins none` on a
/// leaf-spine with its loops (2 spines, 3 leaves): each member hears only its own switches, yet every host
/// reaches every other. The links each master finds are shared through
/// etcd, so all three see the same network; a broadcast goes hop by hop
/// over the one spanning tree they all build, each switch's master
/// flooding on from its switch, and paths are set up hop by hop the same
/// way (checked to fail when floods do not go on from a link, and when
/// the links are not shared: pingall loses the hosts behind other
/// members' switches).
#[test]
fn paths_over_a_cluster_whose_slaves_hear_nothing() {
    let (up, id) = net_up(&[
        "leaf-spine,2,3,1",
        "--switch",
        "ovs",
        "--keep-loops",
        "--app",
        "paths",
        "--cluster",
        "3",
        "--slave-packet-ins",
        "none",
    ]);
    let _kids = Kids(vec![("net".into(), up)]);
    let db = format!("unix:/run/sdnlab/net/{id}/ovs/db.sock");
    wait_until("one master per bridge", Duration::from_secs(30), || {
        let r = ovs_roles(&db);
        r.len() == 5
            && r.values()
                .all(|rows| rows.len() == 3 && rows.iter().filter(|x| x.1 == "master" && x.2).count() == 1)
    });
    // Masters spread: no member has all five switches, so a flood must
    // cross members.
    wait_until("pingall over the cluster", Duration::from_secs(40), || {
        pingall(&id, 3).is_empty()
    });
}

/// `net up --app l2-learning --cluster 3 --slave-packet-ins none`: three
/// members and their etcd in the run's directory; OVS shows one master per bridge, pingall
/// passes, and SIGTERM (what `net down` sends) leaves nothing behind, the
/// etcd included.
#[test]
fn net_up_with_a_cluster_of_three_and_nothing_left_after() {
    // l2-learning works with them: each switch's master alone floods and
    // learns on its own switch.
    let (up, id) = net_up(&[
        "linear,3",
        "--switch",
        "ovs",
        "--app",
        "l2-learning",
        "--cluster",
        "3",
        "--slave-packet-ins",
        "none",
    ]);
    let mut kids = Kids(vec![("net".into(), up)]);
    let etcd_dir = format!("/run/sdnlab/net/{id}/etcd");
    assert!(
        std::path::Path::new(&etcd_dir).is_dir(),
        "the cluster's etcd lives in the run"
    );
    let db = format!("unix:/run/sdnlab/net/{id}/ovs/db.sock");
    let t = Instant::now();
    loop {
        let r = ovs_roles(&db);
        let one_master = r.len() == 3
            && r.values()
                .all(|rows| rows.len() == 3 && rows.iter().filter(|x| x.1 == "master" && x.2).count() == 1);
        if one_master {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "roles never settled: {r:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_until("pingall", Duration::from_secs(15), || pingall(&id, 3).is_empty());

    let (_, mut net) = kids.0.pop().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(net.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = net.wait().unwrap();
    let mut err = String::new();
    let _ = net.stderr.as_mut().unwrap().read_to_string(&mut err);
    assert!(status.success(), "{err}");
    let left = common::leftovers(&id);
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(
        !err.contains("controller: etcd:"),
        "the members left before their etcd stopped: {err}"
    );
}

/// RFC 8456's Controller Failover Time in cluster mode: `bench ctl --test
/// failover --cluster 3` starts three members and their etcd per trial,
/// waits for mastership to settle, kills (SIGKILL) the master of the first
/// host's switch, and reports the gap, the takeover and the re-mastering
/// of every switch the dead member held, with the mastership map; then
/// starts it again and reports its rejoin and what that cost the traffic.
#[test]
fn bench_failover_in_a_cluster_of_three() {
    let out = scratch("cluster", "bench");
    bench_ctl(
        &[
            "--test",
            "failover",
            "--cluster",
            "3",
            "--ofp",
            "1.3",
            "--fabric",
            "leaf-spine,2,3,1",
            "--trials",
            "2",
            "--cooldown-ms",
            "0",
            "--td-s",
            "15",
            // 1.8 s of traffic after the kill: room for a loaded machine
            // (below).
            "--reprov-ms",
            "3000",
        ],
        &out,
    );
    let text = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    let trials: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|s| s["kind"] == "trial")
        .collect();
    assert_eq!(trials.len(), 2, "{text}");
    let value = |t: &serde_json::Value, k: &str| t["values"][k].as_f64().unwrap_or_else(|| panic!("no {k} in {t}"));
    for t in &trials {
        // About 0.06 s on a quiet machine. Beside the other tests, a
        // survivor that had not yet registered the switch as connected
        // left it to the others' claim grace (0.5 s): 0.71 s seen in CI,
        // its takeover then past a 0.9 s window. Either way well before
        // the lease's 5 s, which is what the test tells apart (checked to
        // fail when only the lease's expiry re-elects).
        let remaster = value(t, "remaster_s");
        assert!(
            remaster > 0.0 && remaster < 2.0,
            "re-mastered well within the lease's 5 s: {t}"
        );
        let takeover = value(t, "takeover_s");
        assert!(takeover > 0.0 && takeover < 2.0, "{t}");
        assert!(value(t, "failover_s") >= takeover, "{t}");
        assert_eq!(value(t, "cluster_size"), 3.0, "{t}");
        assert!(value(t, "orphaned_switches") >= 1.0, "{t}");
        assert_eq!(value(t, "duplicates"), 0.0, "{t}");
        // The killed member started again: the masters move back to it
        // once it has had its switches for the handover delay (2 s), and
        // then with a handful of frames lost (about 5 on a quiet machine,
        // 118 seen beside the other tests; taken over cold, before its
        // apps knew the fabric, it lost about a thousand: a second of
        // traffic).
        let rejoin = value(t, "rejoin_s");
        assert!((1.9..8.0).contains(&rejoin), "{t}");
        assert!(value(t, "rejoin_lost_frames") < 500.0, "{t}");
        let note = t["note"].as_str().unwrap_or("");
        assert!(note.contains("masters before: ") && note.contains("; after: c"), "{t}");
    }
    let meta = meta_of(&out);
    let command = meta["targets"][0]["command"].as_str().unwrap();
    assert!(command.contains("--cluster") && command.contains("etcd"), "{meta}");
    assert!(
        meta["targets"][0]["name"].as_str().unwrap().contains("cluster of 3"),
        "{meta}"
    );
    let _ = std::fs::remove_dir_all(&out);

    // The control: a member the traffic does not need, killed the same
    // way; the traffic does not notice (checked to fail when the master
    // is killed instead: 30 to 60 frames lost).
    let out = scratch("cluster", "bench-control");
    bench_ctl(
        &[
            "--test",
            "failover",
            "--cluster",
            "3",
            "--kill",
            "non-master",
            "--ofp",
            "1.3",
            "--fabric",
            "leaf-spine,2,3,1",
            "--trials",
            "1",
            "--td-s",
            "15",
            "--reprov-ms",
            "1500",
        ],
        &out,
    );
    let text = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    let t = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|s| s["kind"] == "trial")
        .unwrap();
    assert_eq!(value(&t, "lost_frames"), 0.0, "{t}");
    // (Under 50 ms on a quiet machine; 68 ms seen with a build beside it.
    // The lost frames are what tell the control from a failover.)
    assert!(value(&t, "failover_s") < 0.25, "{t}");
    assert!(t["note"].as_str().unwrap_or("").contains("the control"), "{t}");
    let _ = std::fs::remove_dir_all(&out);
}

/// RFC 8456's cluster column for the tests on fabrics: `bench ctl --test
/// reactive-paths --cluster 3` waits for mastership to settle (every
/// switch one master, connected to all three) before each trial, measures
/// the paths through the cluster, and records the mode, the size and the
/// mastership map, which the report shows (checked as Chromium builds it).
#[test]
fn bench_reactive_paths_in_a_cluster_of_three() {
    let out = scratch("cluster", "paths");
    bench_ctl(
        &[
            "--test",
            "reactive-paths",
            "--cluster",
            "3",
            "--fabric",
            "leaf-spine,2,4,1",
            "--trials",
            "2",
            "--cooldown-ms",
            "0",
            "--td-s",
            "15",
        ],
        &out,
    );
    let text = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    let trials: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|s| s["kind"] == "trial")
        .collect();
    assert_eq!(trials.len(), 2, "{text}");
    for t in &trials {
        let v = |k: &str| t["values"][k].as_f64().unwrap_or_else(|| panic!("no {k} in {t}"));
        assert!(v("settle_s") > 0.0 && v("settle_s") < 15.0, "{t}");
        assert!(v("reactive_path_s") > 0.0 && v("reactive_rate_per_s") > 0.0, "{t}");
        // Six switches, each mastered by one member, spread over them.
        let note = t["note"].as_str().unwrap_or("");
        let map = note
            .split("masters: ")
            .nth(1)
            .unwrap_or_else(|| panic!("no map: {t}"))
            .split(" (")
            .next()
            .unwrap();
        let masters: Vec<&str> = map.split("; ").filter(|m| m.starts_with('c')).collect();
        let switches: usize = masters
            .iter()
            .map(|m| m.split_once(": ").unwrap().1.split(',').count())
            .sum();
        assert!(masters.len() >= 2, "masters spread: {t}");
        assert!(switches >= 6, "every switch has a master: {t}");
    }
    let meta = meta_of(&out);
    assert_eq!(meta["parameters"]["rfc8456_mode"], "cluster", "{meta}");
    assert_eq!(meta["parameters"]["cluster_size"], 3, "{meta}");
    let (dom, _) = common::chromium(&out.join("report.html"), &out.join("report.png"));
    for want in [
        "cluster of 3",
        "identical members",
        "masters: c",
        "every switch to every member",
        // A run of fewer trials than the method asks says so at the top.
        "<b>Note:</b>",
        "per scenario, under RFC 8456",
    ] {
        assert!(dom.contains(want), "the report does not show '{want}'");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// RFC 8456's proactive path provisioning in cluster mode: the paths are
/// asked of the first member's REST API and reach every switch through
/// the cluster's shared state (each switch's master installs its hops),
/// so traffic flows on them; the rate and time are measured.
#[test]
fn bench_proactive_paths_in_a_cluster_of_three() {
    let out = scratch("cluster", "proactive");
    bench_ctl(
        &[
            "--test",
            "proactive-paths",
            "--cluster",
            "3",
            // An etcd of three members under the cluster.
            "--etcd-members",
            "3",
            "--fabric",
            "leaf-spine,2,4,1",
            "--trials",
            "1",
            "--cooldown-ms",
            "0",
            "--td-s",
            "15",
        ],
        &out,
    );
    let (_, samples) = samples_of(&out);
    let trial = samples
        .iter()
        .find(|s| s["kind"] == "trial")
        .unwrap_or_else(|| panic!("no trial: {samples:?}"));
    let v = |k: &str| {
        trial["values"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("no {k} in {trial}"))
    };
    assert!(
        v("proactive_path_s") > 0.0 && v("proactive_rate_per_s") > 0.0,
        "{trial}"
    );
    assert!(trial["note"].as_str().unwrap_or("").contains("masters: c"), "{trial}");
    let meta = meta_of(&out);
    assert_eq!(meta["parameters"]["cluster_size"], 3, "{meta}");
    let command = meta["targets"][0]["command"].as_str().unwrap_or("");
    assert!(command.contains("on this machine, 3 members"), "{meta}");
    let _ = std::fs::remove_dir_all(&out);
}

/// RFC 8456's Control Session Capacity in cluster mode: each emulated
/// switch opens a session to every member and counts as held while all
/// of them answer.
#[test]
fn bench_sessions_against_a_cluster_of_three() {
    let out = scratch("cluster", "sessions");
    // Standalone and a cluster of three side by side in one run.
    bench_ctl(
        &[
            "--test",
            "sessions",
            "--sweep",
            "cluster=0,3",
            "--max-sessions",
            "200",
            "--trials",
            "1",
        ],
        &out,
    );
    let (_, samples) = samples_of(&out);
    let trial = |scenario: &str| {
        samples
            .iter()
            .find(|s| s["kind"] == "trial" && s["scenario"] == scenario)
            .unwrap_or_else(|| panic!("no {scenario} trial: {samples:?}"))
            .clone()
    };
    let (alone, three) = (trial("standalone"), trial("cluster=3"));
    for t in [&alone, &three] {
        assert_eq!(t["values"]["sessions_held"].as_f64(), Some(200.0), "{t}");
    }
    assert!(
        three["note"]
            .as_str()
            .unwrap_or("")
            .contains("200 switches held, each with a session to each of 3 members (600 sessions)"),
        "{three}"
    );
    assert!(
        alone["note"].as_str().unwrap_or("").starts_with("200 sessions held"),
        "{alone}"
    );
    let meta = meta_of(&out);
    assert_eq!(meta["parameters"]["rfc8456_mode"], "cluster", "{meta}");
    assert_eq!(meta["parameters"]["cluster_sizes"], serde_json::json!([0, 3]), "{meta}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Network Topology Discovery Time at several cluster sizes in one run
/// (`--sweep cluster=0,2`): standalone and two members, each its own
/// scenario, each discovered; two members' trial carries its mastership
/// map.
#[test]
fn bench_discovery_sweeps_cluster_sizes() {
    let out = scratch("cluster", "discovery-sweep");
    bench_ctl(
        &[
            "--test",
            "discovery",
            "--sweep",
            "cluster=0,2",
            "--fabric",
            "leaf-spine,2,2,1",
            "--trials",
            "1",
            "--cooldown-ms",
            "0",
            "--td-s",
            "15",
        ],
        &out,
    );
    let (text, samples) = samples_of(&out);
    for scenario in ["leaf-spine,2,2,1 standalone", "leaf-spine,2,2,1 cluster=2"] {
        let t = samples
            .iter()
            .find(|s| s["kind"] == "trial" && s["scenario"] == scenario)
            .unwrap_or_else(|| panic!("no {scenario} trial: {text}"));
        assert!(t["values"]["discovery_s"].as_f64().is_some_and(|v| v > 0.0), "{t}");
        let clustered = t["note"].as_str().unwrap_or("").contains("masters: c");
        assert_eq!(clustered, scenario.ends_with("cluster=2"), "{t}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// RFC 8456's exception handling in cluster mode: every malformed case
/// against each member in turn, the witness switch connected to both; the
/// witness is served after every case and both members live. A member
/// holds its apps' first rules back until the case switch's election, and
/// those are not taken for an answer to the case (none but the corrupted
/// buffer id is acted on).
#[test]
fn bench_security_against_a_cluster_of_two() {
    let out = scratch("cluster", "security");
    bench_ctl(
        &[
            "--test",
            "security",
            "--cluster",
            "2",
            "--ofp",
            "1.3",
            "--case-wait-ms",
            "300",
            "--hello-wait-s",
            "1",
        ],
        &out,
    );
    let (text, samples) = samples_of(&out);
    let cases: Vec<&serde_json::Value> = samples.iter().filter(|s| s["kind"] == "case").collect();
    assert_eq!(cases.len(), 22, "11 cases against each of 2 members: {text}");
    for c in &cases {
        let scenario = c["scenario"].as_str().unwrap();
        assert!(scenario.ends_with(" @ c1") || scenario.ends_with(" @ c2"), "{c}");
        assert_eq!(c["values"]["others_served"].as_f64(), Some(1.0), "{c}");
        assert_eq!(c["values"]["controller_alive"].as_f64(), Some(1.0), "{c}");
        if !scenario.starts_with("corrupted buffer id") {
            assert_eq!(c["values"]["acted"].as_f64(), Some(0.0), "{c}");
        }
    }
    let meta = meta_of(&out);
    assert_eq!(meta["parameters"]["rfc8456_mode"], "cluster", "{meta}");
    assert_eq!(meta["parameters"]["cluster_size"], 2, "{meta}");
    let _ = std::fs::remove_dir_all(&out);
}

/// RFC 8456's asynchronous message processing in cluster mode: `bench ctl
/// --cluster 3 --ofp 1.3` (cbench's load) connects every emulated switch
/// to the three members, waits for their roles (one MASTER per switch by
/// ROLE_REQUEST, the others SLAVE), sends every PACKET_IN to every member
/// (the slaves asked for them with SET_ASYNC) and counts per member: the
/// masters answer, the slaves write nothing, no answer comes twice.
#[test]
fn bench_cbench_load_against_a_cluster_of_three() {
    let out = scratch("cluster", "cbench");
    bench_ctl(
        &[
            "--cluster",
            "3",
            "--ofp",
            "1.3",
            "--switches",
            "8",
            "--trials",
            "1",
            "--loops",
            "2",
            "--loop-ms",
            "500",
        ],
        &out,
    );
    let (text, samples) = samples_of(&out);
    let trial = samples.iter().find(|s| s["kind"] == "trial").expect("a trial");
    let v = |s: &serde_json::Value, k: &str| s["values"][k].as_f64().unwrap_or_else(|| panic!("no {k} in {s}"));
    assert!(v(trial, "matched_per_s") > 0.0, "{trial}");
    assert!(v(trial, "settle_s") > 0.0, "{trial}");
    for k in [
        "unsettled",
        "without_master",
        "slave_writes",
        "duplicates",
        "sessions_lost",
    ] {
        assert_eq!(v(trial, k), 0.0, "{k}: {trial}");
    }
    let members: Vec<&serde_json::Value> = samples.iter().filter(|s| s["kind"] == "member").collect();
    assert_eq!(members.len(), 3, "{text}");
    assert_eq!(members.iter().map(|m| v(m, "masters")).sum::<f64>(), 8.0, "{text}");
    assert!(
        members.iter().filter(|m| v(m, "masters") > 0.0).count() >= 2,
        "masters spread: {text}"
    );
    let requests = v(members[0], "requests");
    for m in &members {
        // Every member heard every PACKET_IN; only masters answered.
        assert!(
            v(m, "requests") > 0.0 && (v(m, "requests") - requests).abs() <= requests * 0.02,
            "{m}"
        );
        assert_eq!(v(m, "first_answers") > 0.0, v(m, "masters") > 0.0, "{m}");
    }
    assert!(
        trial["note"]
            .as_str()
            .unwrap_or("")
            .contains("masters (as the switches saw the roles): c1: master of"),
        "{trial}"
    );
    let _ = std::fs::remove_dir_all(&out);

    // `--slave-packet-ins none`: the slaves ask for nothing, so each
    // PACKET_IN goes to its switch's master alone.
    let out = scratch("cluster", "cbench-none");
    bench_ctl(
        &[
            "--cluster",
            "3",
            "--ofp",
            "1.3",
            "--switches",
            "8",
            "--slave-packet-ins",
            "none",
            "--trials",
            "1",
            "--loops",
            "2",
            "--loop-ms",
            "500",
        ],
        &out,
    );
    let (text, samples) = samples_of(&out);
    let members: Vec<&serde_json::Value> = samples.iter().filter(|s| s["kind"] == "member").collect();
    assert_eq!(members.len(), 3, "{text}");
    // Each request sent once, to the member that answers it (with every
    // slave asking, three times as many are sent as answered first).
    let sent: f64 = members.iter().map(|m| v(m, "requests")).sum();
    let answered: f64 = members.iter().map(|m| v(m, "first_answers")).sum();
    assert!(sent > 0.0 && sent <= 1.1 * answered, "{text}");
    for m in &members {
        if v(m, "masters") == 0.0 {
            assert_eq!(v(m, "requests"), 0.0, "{m}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Faucet's documented redundancy measured as it is: `bench ctl --ofp 1.3
/// --peer faucet --cluster 2` starts two Faucet instances with one
/// faucet.yaml, every switch connected to both. Faucet asks for no
/// MASTER or SLAVE role, so the switches settle as all EQUAL, send every
/// new source to both, and both learn it: each request is answered twice,
/// the second counted as a duplicate, per instance.
#[test]
fn bench_faucet_as_a_cluster_of_two_equal_instances() {
    let out = scratch("cluster", "faucet");
    bench_ctl(
        &[
            "--ofp",
            "1.3",
            "--peer",
            "faucet",
            "--cluster",
            "2",
            "--switches",
            "2",
            "--trials",
            "1",
            "--loops",
            "2",
        ],
        &out,
    );
    let (text, samples) = samples_of(&out.join("faucet"));
    let v = |s: &serde_json::Value, k: &str| s["values"][k].as_f64().unwrap_or_else(|| panic!("no {k} in {s}"));
    let trial = samples.iter().find(|s| s["kind"] == "trial").expect("a trial");
    assert!(v(trial, "matched_per_s") > 0.0, "{trial}");
    assert!(v(trial, "settle_s") >= 1.0, "settled as all EQUAL: {trial}");
    assert_eq!(v(trial, "without_master"), 2.0, "{trial}");
    let members: Vec<&serde_json::Value> = samples.iter().filter(|s| s["kind"] == "member").collect();
    assert_eq!(members.len(), 2, "{text}");
    for m in &members {
        assert!(v(m, "requests") > 0.0, "{m}");
        // Both instances answered (first or second).
        assert!(
            v(m, "first_answers") + v(m, "duplicates") > 0.5 * v(m, "requests"),
            "{m}"
        );
    }
    let firsts: f64 = members.iter().map(|m| v(m, "first_answers")).sum();
    let dups: f64 = members.iter().map(|m| v(m, "duplicates")).sum();
    assert!(
        dups > 0.5 * firsts,
        "the second instance's answers are duplicates: {text}"
    );
    let meta = meta_of(&out.join("faucet"));
    assert!(
        meta["targets"][0]["name"].as_str().unwrap().contains("cluster of 2"),
        "{meta}"
    );
    let _ = std::fs::remove_dir_all(&out);

    // What Faucet's redundancy does when an instance dies: the first is
    // killed (SIGKILL) after the first measured loop; the other goes on
    // learning new sources alone (checked to fail when nothing is killed:
    // no loss of the first's sessions, no figure after the kill).
    let out = scratch("cluster", "faucet-kill");
    bench_ctl(
        &[
            "--ofp",
            "1.3",
            "--peer",
            "faucet",
            "--cluster",
            "2",
            "--switches",
            "2",
            "--trials",
            "1",
            "--loops",
            "3",
            "--kill-after-loop",
            "1",
        ],
        &out,
    );
    let (text, samples) = samples_of(&out.join("faucet"));
    let trial = samples.iter().find(|s| s["kind"] == "trial").expect("a trial");
    assert!(v(trial, "matched_before_kill_per_s") > 0.0, "{trial}");
    assert!(
        v(trial, "matched_after_kill_per_s") > 0.0,
        "the survivor learns alone: {trial}"
    );
    assert_eq!(
        v(trial, "sessions_lost"),
        2.0,
        "the killed instance's, one a switch: {trial}"
    );
    assert!(trial["note"].as_str().unwrap_or("").contains("instance 1"), "{trial}");
    // The survivor was asked through every loop, the killed one only
    // until its death. (Not its first answers against the other's: the
    // killed one answers faster while both live, seen in CI: 573 against
    // the survivor's 529 over two loops alone.)
    let members: Vec<&serde_json::Value> = samples.iter().filter(|s| s["kind"] == "member").collect();
    assert!(v(members[1], "requests") > v(members[0], "requests"), "{text}");
    let meta = meta_of(&out.join("faucet"));
    let events = meta["events"].to_string();
    assert!(events.contains("killed (SIGKILL) after measured loop 1"), "{events}");
    assert!(
        !events.contains("session(s) lost"),
        "the kill's losses are not a failure: {events}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// `--target A,B,C`: a cluster sdnlab did not start (here three `sdnlab
/// controller --cluster` processes on a real etcd), measured in RFC
/// 8456's cluster mode: every emulated switch connects to the three
/// addresses, the members elect one master per switch, and the run
/// records the cluster as its target.
#[test]
fn bench_a_cluster_at_addresses() {
    let dir = scratch("cluster", "target");
    std::fs::create_dir_all(&dir).unwrap();
    let etcd = cluster::etcd::Etcd::start(&dir.join("etcd"), 1).unwrap();
    let (kids, members) = start_members(&dir, &etcd, 3);
    let targets: Vec<String> = members.iter().map(|m| format!("127.0.0.1:{}", m.1)).collect();
    let out = dir.join("run");
    bench_ctl(
        &[
            "--target",
            &targets.join(","),
            "--ofp",
            "1.3",
            "--switches",
            "6",
            "--trials",
            "1",
            "--loops",
            "2",
            "--loop-ms",
            "500",
        ],
        &out,
    );
    let (text, samples) = samples_of(&out);
    let v = |s: &serde_json::Value, k: &str| s["values"][k].as_f64().unwrap_or_else(|| panic!("no {k} in {s}"));
    let trial = samples.iter().find(|s| s["kind"] == "trial").expect("a trial");
    assert!(v(trial, "matched_per_s") > 0.0, "{trial}");
    assert_eq!(
        (v(trial, "unsettled"), v(trial, "without_master")),
        (0.0, 0.0),
        "{trial}"
    );
    let members_seen: Vec<&serde_json::Value> = samples.iter().filter(|s| s["kind"] == "member").collect();
    assert_eq!(members_seen.len(), 3, "{text}");
    assert_eq!(members_seen.iter().map(|m| v(m, "masters")).sum::<f64>(), 6.0, "{text}");
    let meta = meta_of(&out);
    assert_eq!(meta["targets"][0]["name"], "controller cluster of 3", "{meta}");
    for t in &targets {
        assert!(
            meta["targets"][0]["address"].as_str().unwrap().contains(t.as_str()),
            "{meta}"
        );
    }
    drop(kids);
    drop(etcd);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Cluster sizes side by side in one run: `--sweep cluster=0,1,2` measures
/// sdnlab standalone (embedded, no member samples), as a cluster of one
/// (settled once its member is MASTER) and of two (two member samples per
/// trial), each against the driver's own ceiling taken at its fan-out
/// (two sessions per switch to the responder).
#[test]
fn bench_sweeps_cluster_sizes() {
    let out = scratch("cluster", "sweep");
    bench_ctl(
        &[
            "--sweep",
            "cluster=0,1,2",
            "--ofp",
            "1.3",
            "--switches",
            "4",
            "--trials",
            "1",
            "--loops",
            "2",
            "--loop-ms",
            "300",
        ],
        &out,
    );
    let (text, samples) = samples_of(&out);
    let of = |kind: &str, scenario: &str| {
        samples
            .iter()
            .filter(|s| s["kind"] == kind && s["scenario"] == scenario)
            .count()
    };
    assert_eq!((of("trial", "cluster=0"), of("trial", "cluster=2")), (1, 1), "{text}");
    assert_eq!((of("member", "cluster=0"), of("member", "cluster=2")), (0, 2), "{text}");
    // A cluster of one settles too (its member asks for MASTER).
    for s in samples
        .iter()
        .filter(|s| s["kind"] == "trial" && s["scenario"] != "cluster=0")
    {
        assert_eq!(s["values"]["unsettled"].as_f64(), Some(0.0), "{s}");
        assert!(s["values"]["settle_s"].as_f64().is_some_and(|x| x < 5.0), "{s}");
    }
    let ceiling = |scenario: &str| {
        samples
            .iter()
            .find(|s| s["kind"] == "ceiling" && s["scenario"] == scenario)
            .unwrap_or_else(|| panic!("no ceiling for {scenario}: {text}"))["values"]
            .clone()
    };
    let (alone, two) = (ceiling("cluster=0"), ceiling("cluster=2"));
    let ratio = |v: &serde_json::Value| v["responses_per_s"].as_f64().unwrap() / v["matched_per_s"].as_f64().unwrap();
    assert!(
        (ratio(&alone) - 1.0).abs() < 0.05,
        "standalone: one answer per request: {alone}"
    );
    assert!((ratio(&two) - 2.0).abs() < 0.1, "two sessions, both answering: {two}");
    let meta = std::fs::read_to_string(out.join("meta.json")).unwrap();
    assert!(meta.contains("at a cluster's fan-out (2 sessions per switch"), "{meta}");
    let _ = std::fs::remove_dir_all(&out);
}
