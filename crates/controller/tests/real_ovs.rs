//! The controller against a real switch with real traffic: Open vSwitch
//! (userspace datapath) in namespaces brought up by netlab, hosts pinging
//! every other host, OpenFlow 1.0 and 1.3, on a single switch, a chain of 4
//! and a small leaf-spine. `l2-learning` runs with the redundant spine links
//! down; `paths` runs with them up (loops) and must not flood forever. The
//! flows installed are read back with `ovs-ofctl dump-flows`, and the REST
//! API is driven over real HTTP. Needs root.

use controller::embedded::Options;
use controller::runtime;
use netlab::run::{Net, SwitchKind, UpOptions};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The REST API's token in these tests.
const TOKEN: &str = "real-ovs-test-token-0123456789";

fn start_controller(app: &str) -> (runtime::Handle, SocketAddr) {
    start(Options::new(app, 2))
}

/// A controller with its REST API, whose token is the tests' own.
fn start(o: Options) -> (runtime::Handle, SocketAddr) {
    let (ctl, rest, _) = controller::embedded::start_with_rest(Options {
        token: Some(TOKEN.into()),
        ..o
    })
    .unwrap();
    (ctl, rest)
}

/// One HTTP/1.1 exchange through the lab's client, with the test's
/// token; the status and the JSON body.
fn http(rest: SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let req = httpc::Request {
        method,
        path,
        body: Some(body),
        token: Some(TOKEN),
    };
    let r = httpc::request_blocking(rest, req, Duration::from_secs(10)).unwrap();
    let json = serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{method} {path}: {e}: {}", r.body));
    (r.status, json)
}

fn dump_flows(net: &Net, switch: &str, protocol: &str) -> String {
    let sock = net.ovs_mgmt(switch).unwrap();
    let out = Command::new("ovs-ofctl")
        .args(["-O", protocol, "dump-flows", &format!("unix:{}", sock.display())])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn check(shape: &str, protocol: &str, app: &str) {
    let (ctl, rest) = start_controller(app);
    let paths = app == "paths";
    let mut topo = netlab::topo::shape(shape).unwrap();
    for s in &mut topo.switches {
        s.protocols = vec![protocol.to_string()];
    }
    let n_switches = topo.switches.len();
    let n_hosts = topo.hosts.len();
    let is_switch = |n: &str| topo.switches.iter().any(|s| s.name == n);
    let inter_switch = topo.links.iter().filter(|l| is_switch(&l.a) && is_switch(&l.b)).count();
    let net = Net::up(
        topo,
        UpOptions {
            kind: SwitchKind::Ovs,
            controller: Some(ctl.local_addrs[0].to_string()),
            // paths handles loops; l2-learning does not.
            keep_loops: paths,
            ssl: None,
            ovsdb: false,
            part: None,
        },
    )
    .await
    .unwrap();
    let label = format!("{shape}/{protocol}/{app}");
    wait_for(&format!("{label}: switches"), || ctl.switches().len() == n_switches).await;
    if paths {
        // Every cable, both directions, before traffic.
        wait_for(&format!("{label}: links"), || {
            http(rest, "GET", "/topology", "").1["links"]
                .as_array()
                .map(|l| l.len())
                == Some(2 * inter_switch)
        })
        .await;
    }
    let mut results = net.ping_all(2).await;
    let t = Instant::now();
    while results.iter().any(|r| r.received == 0) && t.elapsed() < Duration::from_secs(10) {
        results = net.ping_all(1).await;
    }
    let failed: Vec<_> = results
        .iter()
        .filter(|r| r.received == 0)
        .map(|r| format!("{}->{}", r.from, r.to))
        .collect();
    assert!(failed.is_empty(), "{label}: unanswered pairs {failed:?}");
    // The flows are in the switch, as the app writes them.
    let first = net
        .state
        .switches
        .iter()
        .find(|s| s.0.starts_with("leaf"))
        .unwrap_or(&net.state.switches[0])
        .0
        .clone();
    let flows = dump_flows(&net, &first, protocol);
    let (cookie, shape_of) = if paths {
        ("cookie=0x5d1a0a75", "priority=10,dl_dst=02:00:00")
    } else {
        ("cookie=0x5d1a", "dl_src=02:00:00")
    };
    let learnt: Vec<&str> = flows.lines().filter(|l| l.contains(&format!("{cookie},"))).collect();
    assert!(!learnt.is_empty(), "{label}: no app flow on {first}:\n{flows}");
    for l in &learnt {
        assert!(
            l.contains("idle_timeout=60") && l.contains(shape_of) && l.contains("actions=output:"),
            "{label}: {l}"
        );
    }
    if protocol == "OpenFlow13" {
        assert!(
            flows.contains("priority=0 actions=CONTROLLER:65535"),
            "table-miss flow missing:\n{flows}"
        );
    }
    if paths {
        assert!(
            flows.contains("priority=65000,dl_type=0x88cc actions=CONTROLLER:65535"),
            "LLDP flow missing:\n{flows}"
        );
        // A host is learnt from a frame it sends at its edge port that
        // reaches the controller. One that only ever answered (ARP replies
        // and echo replies go unicast along paths already installed) may
        // never have been seen: each host asks once for an address nobody
        // has, a broadcast the controller floods and so sees.
        let asking: Vec<_> = net
            .state
            .hosts
            .iter()
            .filter_map(|h| {
                net.command(&h.name, &["ping", "-c", "1", "-W", "1", "10.255.255.254"])
                    .unwrap()
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .ok()
            })
            .collect();
        for mut a in asking {
            let _ = a.wait();
        }
        wait_for(&format!("{label}: every host learnt"), || {
            http(rest, "GET", "/hosts", "").1.as_array().map(|a| a.len()) == Some(n_hosts)
        })
        .await;
        check_rest(&net, &ctl, rest, &label, protocol, (n_hosts, inter_switch)).await;
    }
    net.down().await.unwrap();
    ctl.stop();
}

/// The REST API over the running network.
async fn check_rest(
    net: &Net,
    ctl: &runtime::Handle,
    rest: SocketAddr,
    label: &str,
    protocol: &str,
    size: (usize, usize),
) {
    let (n_hosts, inter_switch) = size;
    let (st, switches) = http(rest, "GET", "/switches", "");
    assert_eq!(st, 200);
    assert_eq!(switches.as_array().unwrap().len(), ctl.switches().len(), "{label}");
    let (st, hosts) = http(rest, "GET", "/hosts", "");
    assert_eq!(
        (st, hosts.as_array().unwrap().len()),
        (200, n_hosts),
        "{label}: {hosts}"
    );
    // Flows as the switch reports them, with the app's cookie.
    let dpid = ctl.switches()[0];
    let (st, flows) = http(rest, "GET", &format!("/switches/{dpid:#x}/flows"), "");
    assert_eq!(st, 200);
    assert!(
        flows
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["cookie"] == controller::topology::LLDP_COOKIE),
        "{label}: {flows}"
    );
    // A path provisioned between the first and the last host, both ways.
    let last = format!("10.0.0.{n_hosts}");
    let (st, path) = http(
        rest,
        "POST",
        "/paths",
        &format!(r#"{{"src": "10.0.0.1", "dst": "{last}"}}"#),
    );
    assert_eq!(st, 201, "{label}: {path}");
    let hops = path["forward"].as_array().unwrap().len();
    let provisioned: usize = net
        .state
        .switches
        .iter()
        .map(|s| dump_flows(net, &s.0, protocol).matches("cookie=0x5d1a0a76").count())
        .sum();
    assert_eq!(provisioned, 2 * hops, "{label}: one flow per hop each way");
    // Traffic on the provisioned path goes through the provisioned flows.
    let r = net.ping_all(1).await;
    assert!(r.iter().all(|r| r.received > 0));
    let (st, stats) = http(rest, "GET", "/stats", "");
    assert_eq!(st, 200);
    assert!(
        stats["messages_in"].as_u64().unwrap() > 0 && stats["errors_sent"] == 0,
        "{stats}"
    );
    assert!(
        stats["topology"]["links_up"].as_u64().unwrap() >= 2 * inter_switch as u64,
        "{stats}"
    );
    assert_eq!(stats["switches"].as_array().unwrap().len(), ctl.switches().len());
    // No storm: a loop flooding forever would show as thousands of
    // PACKET_INs and floods within seconds.
    let floods = stats["paths"]["floods"].as_u64().unwrap();
    assert!(floods < 40 * n_hosts as u64, "{label}: {floods} floods: {stats}");
    assert!(stats["messages_in"].as_u64().unwrap() < 5000, "{label}: {stats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_learning_single_switch() {
    check("single,3", "OpenFlow10", "l2-learning").await;
    check("single,3", "OpenFlow13", "l2-learning").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_learning_linear_chain_of_four() {
    check("linear,4", "OpenFlow10", "l2-learning").await;
    check("linear,4", "OpenFlow13", "l2-learning").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_learning_leaf_spine() {
    check("leaf-spine,2,2,2", "OpenFlow13", "l2-learning").await;
    check("leaf-spine,2,2,2", "OpenFlow10", "l2-learning").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_single_switch() {
    check("single,3", "OpenFlow10", "paths").await;
    check("single,3", "OpenFlow13", "paths").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_linear_chain_of_four() {
    check("linear,4", "OpenFlow13", "paths").await;
    check("linear,4", "OpenFlow10", "paths").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_leaf_spine_with_loops() {
    check("leaf-spine,2,3,2", "OpenFlow13", "paths").await;
    check("leaf-spine,2,3,2", "OpenFlow10", "paths").await;
}

/// Flows added and deleted through the REST API land in the switch; bad
/// requests get 4xx with a reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_flows_reach_the_switch() {
    for protocol in ["OpenFlow13", "OpenFlow10"] {
        let (ctl, rest) = start_controller("l2-learning");
        let mut topo = netlab::topo::shape("single,2").unwrap();
        topo.switches[0].protocols = vec![protocol.to_string()];
        let net = Net::up(
            topo,
            UpOptions {
                controller: Some(ctl.local_addrs[0].to_string()),
                ..UpOptions::of(SwitchKind::Ovs)
            },
        )
        .await
        .unwrap();
        wait_for("switch", || ctl.switches().len() == 1).await;
        let dpid = ctl.switches()[0];
        let sw = net.state.switches[0].0.clone();
        let flow = r#"{"priority": 700, "cookie": 4660, "match": {"in_port": 1, "eth_type": 2048,
            "ipv4_dst": "10.0.0.0/24", "ip_proto": 17, "tp_dst": 5001}, "actions": [{"output": 2}]}"#;
        let (st, body) = http(rest, "POST", &format!("/switches/{dpid}/flows"), flow);
        assert_eq!(st, 201, "{protocol}: {body}");
        let flows = dump_flows(&net, &sw, protocol);
        let line = flows
            .lines()
            .find(|l| l.contains("cookie=0x1234"))
            .unwrap_or_else(|| panic!("{flows}"));
        assert!(
            line.contains("priority=700,udp,in_port=1,nw_dst=10.0.0.0/24,tp_dst=5001 actions=output:2"),
            "{protocol}: {line}"
        );
        // Read back through the API.
        let (_, listed) = http(rest, "GET", &format!("/switches/{dpid:016x}/flows"), "");
        assert!(listed
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["cookie"] == 4660 && f["priority"] == 700));
        // Delete it by match.
        let del = r#"{"match": {"in_port": 1, "eth_type": 2048, "ipv4_dst": "10.0.0.0/24", "ip_proto": 17, "tp_dst": 5001},
                      "strict": true, "priority": 700}"#;
        let (st, _) = http(rest, "DELETE", &format!("/switches/{dpid}/flows"), del);
        assert_eq!(st, 200);
        assert!(!dump_flows(&net, &sw, protocol).contains("cookie=0x1234"));
        // Ports, live.
        let (st, ports) = http(rest, "GET", &format!("/switches/{dpid}/ports"), "");
        assert_eq!(st, 200);
        assert!(
            ports.as_array().unwrap().iter().filter(|p| p["up"] == true).count() >= 2,
            "{ports}"
        );
        // Bad requests.
        let bad = [
            (
                "POST",
                format!("/switches/{dpid}/flows"),
                r#"{"match": {"ipv4_dst": "10.0.0.1"}}"#,
                400,
                "eth_type",
            ),
            (
                "POST",
                format!("/switches/{dpid}/flows"),
                r#"{"actions": [{"output": "up"}]}"#,
                400,
                "unknown port",
            ),
            ("POST", format!("/switches/{dpid}/flows"), "{", 400, "bad flow"),
            ("GET", "/switches/77/flows".to_string(), "", 404, "no switch"),
            ("GET", "/topology".to_string(), "", 409, "--app topology"),
            ("POST", "/paths".to_string(), r#"{"src": "a"}"#, 409, "paths app"),
        ];
        for (m, path, body, want, why) in bad {
            let (st, v) = http(rest, m, &path, body);
            assert_eq!(st, want, "{m} {path}: {v}");
            assert!(v["error"].as_str().unwrap().contains(why), "{m} {path}: {v}");
        }
        // The switch refusing a flow is a 502 with its error (1.3: table 200 does not exist).
        if protocol == "OpenFlow13" {
            let (st, v) = http(
                rest,
                "POST",
                &format!("/switches/{dpid}/flows"),
                r#"{"table_id": 254, "actions": []}"#,
            );
            assert_eq!(st, 502, "{v}");
            assert!(v["error"].as_str().unwrap().contains("error"), "{v}");
        }
        net.down().await.unwrap();
        ctl.stop();
    }
}

/// Certificates for a TLS test: a CA, the controller's (127.0.0.1) and a
/// switch's, signed by it; written as PEM files under `dir`.
fn make_pki(dir: &std::path::Path) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "sdnlab test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    for (name, san) in [("controller", "127.0.0.1"), ("switch", "switch.sdnlab.test")] {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![san.to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}-key.pem")), key.serialize_pem()).unwrap();
    }
}

/// OVS connects over TLS (mutual: each side checks the other's certificate
/// against the CA) and hosts ping through l2-learning; a switch speaking
/// plain OpenFlow to the TLS port gets nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switches_connect_over_tls() {
    let dir = std::env::temp_dir().join(format!("sdnlab-tls-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    make_pki(&dir);
    let tls = controller::tls::server_config(
        &dir.join("controller.pem"),
        &dir.join("controller-key.pem"),
        Some(&dir.join("ca.pem")),
    )
    .unwrap();
    let set = controller::catalog::build(&["l2-learning"]).unwrap();
    let ctl = runtime::start(runtime::Config {
        tls_listen: vec!["127.0.0.1:0".parse().unwrap()],
        tls: Some(tls),
        workers: 2,
        apps: set.factories,
        ..Default::default()
    })
    .unwrap();
    assert!(ctl.local_addrs.is_empty());
    let tls_addr = ctl.tls_addrs[0];
    // Plain OpenFlow on the TLS port: the TLS layer rejects it, nothing registers.
    let mut plain = std::net::TcpStream::connect(tls_addr).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    plain.write_all(&[1, 0, 0, 8, 0, 0, 0, 1]).unwrap();
    let mut buf = [0u8; 256];
    let n = plain.read(&mut buf).unwrap_or(0);
    assert!(
        n == 0 || buf[0] == 0x15,
        "expected a close or a TLS alert, got {:?}",
        &buf[..n]
    );
    for protocol in ["OpenFlow13", "OpenFlow10"] {
        let mut topo = netlab::topo::shape("single,2").unwrap();
        topo.switches[0].protocols = vec![protocol.to_string()];
        let net = Net::up(
            topo,
            UpOptions {
                kind: SwitchKind::Ovs,
                controller: Some(format!("ssl:{tls_addr}")),
                keep_loops: false,
                ssl: Some(netlab::run::SslFiles {
                    private_key: dir.join("switch-key.pem"),
                    certificate: dir.join("switch.pem"),
                    ca_certificate: dir.join("ca.pem"),
                }),
                ovsdb: false,
                part: None,
            },
        )
        .await
        .unwrap();
        wait_for("the switch over TLS", || ctl.switches().len() == 1).await;
        let results = net.ping_all(2).await;
        assert!(results.iter().all(|r| r.received > 0), "{protocol}: {results:?}");
        let flows = dump_flows(&net, &net.state.switches[0].0, protocol);
        assert!(flows.contains("cookie=0x5d1a,"), "{flows}");
        net.down().await.unwrap();
        wait_for("the switch to leave", || ctl.switches().is_empty()).await;
    }
    ctl.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// An active/standby pair on real Open vSwitch (two controllers per
/// bridge): OVS makes the standby a slave that still gets PACKET_INs (its
/// SET_ASYNC), so the standby learns every link from the active one's
/// probes; when the active one dies the standby becomes master in OVS's
/// own view and sets up new paths (its reactive flows were deleted first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_controller_takes_over_real_switches() {
    let (active, active_rest) = start_controller("paths");
    // What the standby watches: a listener that accepts (and closes) its
    // probes until the active controller "dies". Never accepting would
    // fill the backlog after ~128 probes (6 s), and the standby would take
    // over early on a slow machine.
    let watched = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let watched_addr = watched.local_addr().unwrap();
    let alive = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let acceptor = {
        let alive = alive.clone();
        watched.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while alive.load(std::sync::atomic::Ordering::SeqCst) {
                match watched.accept() {
                    Ok(_) => {}
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        })
    };
    let (standby, standby_rest) = start(Options {
        standby_for: Some(watched_addr),
        ..Options::new("paths", 2)
    });
    let mut topo = netlab::topo::shape("linear,3").unwrap();
    for s in &mut topo.switches {
        s.protocols = vec!["OpenFlow13".into()];
    }
    let net = Net::up(
        topo,
        UpOptions {
            controller: Some(format!("{},{}", active.local_addrs[0], standby.local_addrs[0])),
            ..UpOptions::of(SwitchKind::Ovs)
        },
    )
    .await
    .unwrap();
    wait_for("both controllers see the switches", || {
        active.switches().len() == 3 && standby.switches().len() == 3
    })
    .await;
    for rest in [active_rest, standby_rest] {
        wait_for("every link, in both views", || {
            http(rest, "GET", "/topology", "").1["links"]
                .as_array()
                .map(|l| l.len())
                == Some(4)
        })
        .await;
    }
    // OVS writes each connection's role to its database every few seconds.
    let roles = |net: &Net| net.ovs_vsctl(&["--columns=target,role", "list", "controller"]).unwrap();
    let standby_target = format!("tcp:{}", standby.local_addrs[0]);
    let role_of_standby = |net: &Net, role: &str| {
        let r = roles(net);
        let rows: Vec<&str> = r.split("\n\n").filter(|c| c.contains(&standby_target)).collect();
        rows.len() == 3
            && rows
                .iter()
                .all(|c| c.contains(&format!("role                : {role}")))
    };
    wait_for("OVS sees the standby as slave", || role_of_standby(&net, "slave")).await;
    assert!(net.ping_all(2).await.iter().all(|r| r.received > 0));
    assert_eq!(http(standby_rest, "GET", "/stats", "").1["role"], "standby");

    active.kill();
    alive.store(false, std::sync::atomic::Ordering::SeqCst);
    acceptor.join().unwrap();
    wait_for("the standby takes over", || !standby.ha().unwrap().is_standby()).await;
    wait_for("OVS sees the standby as master", || role_of_standby(&net, "master")).await;
    // Paths set up by the dead controller go; the new master sets them up again.
    for sw in ["s1", "s2", "s3"] {
        let sock = net.ovs_mgmt(sw).unwrap();
        let ok = Command::new("ovs-ofctl")
            .args(["-O", "OpenFlow13", "del-flows", &format!("unix:{}", sock.display())])
            .arg("cookie=0x5d1a0a75/-1")
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let mut results = net.ping_all(2).await;
    let t = Instant::now();
    while results.iter().any(|r| r.received == 0) && t.elapsed() < Duration::from_secs(10) {
        results = net.ping_all(1).await;
    }
    assert!(results.iter().all(|r| r.received > 0), "{results:?}");
    assert!(dump_flows(&net, "s1", "OpenFlow13").contains("cookie=0x5d1a0a75,"));
    assert!(http(standby_rest, "GET", "/stats", "").1["role"]
        .as_str()
        .unwrap()
        .starts_with("active (took over"));
    net.down().await.unwrap();
    standby.stop();
}
