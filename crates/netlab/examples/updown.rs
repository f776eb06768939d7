//! Times `up` and `down` of a topology through the netlab API, and can print
//! the same bring-up as one `ip` command per object (the baseline netlab's
//! netlink path is compared against). Used by scripts/bench-net.sh.
//!
//!   updown time SPEC bridge|ovs REPS SAMPLES.jsonl
//!   updown ip-script SPEC PREFIX      (prints `ip ...` lines: up, then a line `#down`, then down)

use netlab::run::{Net, SwitchKind, UpOptions};
use std::io::Write;
use std::time::Instant;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["time", spec, kind, reps, out] => {
            let topo = netlab::topo::shape(spec).unwrap_or_else(|e| die(e));
            let kind: SwitchKind = kind.parse().unwrap_or_else(|e: netlab::run::UnknownSwitchKind| die(e));
            let reps: usize = reps.parse().unwrap_or_else(|_| die("REPS must be a number"));
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(out)
                .unwrap_or_else(|e| die(format!("{out}: {e}")));
            for rep in 0..reps {
                let t = Instant::now();
                let net = Net::up(topo.clone(), UpOptions::of(kind))
                    .await
                    .unwrap_or_else(|e| die(e));
                let up_s = t.elapsed().as_secs_f64();
                let t = Instant::now();
                net.down().await.unwrap_or_else(|e| die(e));
                let down_s = t.elapsed().as_secs_f64();
                let line = serde_json::json!({"tool": "netlab", "spec": spec, "kind": format!("{kind:?}").to_lowercase(), "rep": rep, "up_s": up_s, "down_s": down_s});
                writeln!(file, "{line}").unwrap_or_else(|e| die(e));
                file.flush().ok();
            }
        }
        ["ip-script", spec, prefix] => {
            let t = netlab::topo::shape(spec).unwrap_or_else(|e| die(e));
            let sw: std::collections::HashMap<&str, usize> = t
                .switches
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_str(), i + 1))
                .collect();
            for i in 1..=t.switches.len() {
                println!("link add {prefix}s{i} type bridge");
                println!("link set {prefix}s{i} up");
            }
            for (i, h) in t.hosts.iter().enumerate() {
                let ns = format!("{prefix}-{}", h.name);
                println!("netns add {ns}");
                println!("link add {prefix}h{} type veth peer name {prefix}t{}", i + 1, i + 1);
                println!("link set {prefix}t{} netns {ns} name eth0", i + 1);
                println!("-n {ns} link set lo up");
                println!("-n {ns} addr add {}/{} dev eth0", h.ip, h.prefix_len);
                println!("-n {ns} link set eth0 up");
            }
            let blocked = netlab::run::loop_links(&t);
            for (i, l) in t.links.iter().enumerate() {
                let up = if blocked.contains(&i) { "" } else { " up" };
                match (t.host(&l.a), t.host(&l.b)) {
                    (Some(h), _) | (_, Some(h)) => {
                        let hi = t.hosts.iter().position(|x| x.name == h.name).unwrap() + 1;
                        let s = if t.is_switch(&l.a) { &l.a } else { &l.b };
                        println!("link set {prefix}h{hi} master {prefix}s{} up", sw[s.as_str()]);
                    }
                    _ => {
                        println!("link add {prefix}l{}a type veth peer name {prefix}l{}b", i + 1, i + 1);
                        println!("link set {prefix}l{}a master {prefix}s{}{up}", i + 1, sw[l.a.as_str()]);
                        println!("link set {prefix}l{}b master {prefix}s{}{up}", i + 1, sw[l.b.as_str()]);
                    }
                }
            }
            println!("#down");
            for h in &t.hosts {
                println!("netns del {prefix}-{}", h.name);
            }
            for (i, l) in t.links.iter().enumerate() {
                if t.is_switch(&l.a) && t.is_switch(&l.b) {
                    println!("link del {prefix}l{}a", i + 1);
                }
            }
            for i in 1..=t.switches.len() {
                println!("link del {prefix}s{i}");
            }
        }
        _ => die("usage: updown time SPEC bridge|ovs REPS SAMPLES.jsonl | updown ip-script SPEC PREFIX"),
    }
}

fn die(e: impl std::fmt::Display) -> ! {
    eprintln!("updown: {e}");
    std::process::exit(2)
}
