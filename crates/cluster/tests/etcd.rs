//! Cluster members against a real etcd (Debian's etcd-server, started
//! here on ports of its own): one master per switch, spread over the
//! members, the same generation id at master and slaves, re-election with
//! a higher generation when a member leaves; with one of three etcd
//! members gone the cluster works on, with quorum lost every role stays
//! as it is and the members say so, and they recover when quorum returns.

use cluster::etcd::Etcd;
use cluster::{Config, Handle, Notice, Role};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Log = Arc<Mutex<Vec<Notice>>>;

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sdnlab-cluster-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn member(etcd: &Etcd, name: &str, cluster: &str) -> (Handle, Log) {
    let log: Log = Arc::default();
    let l = log.clone();
    let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut cfg = Config::new(etcd.endpoint_list(), name.into(), listen);
    cfg.cluster = cluster.into();
    cfg.request_timeout = Duration::from_millis(700);
    let h = cluster::start(cfg, Box::new(move |n| l.lock().unwrap().push(n))).unwrap();
    (h, log)
}

/// The last role each member was told for each switch: dpid -> member -> (role, generation).
fn roles(logs: &[(&str, &Log)]) -> BTreeMap<u64, BTreeMap<String, (Role, u64)>> {
    let mut out: BTreeMap<u64, BTreeMap<String, (Role, u64)>> = BTreeMap::new();
    for (name, log) in logs {
        for n in log.lock().unwrap().iter() {
            if let Notice::Role {
                dpid, role, generation, ..
            } = n
            {
                out.entry(*dpid)
                    .or_default()
                    .insert(name.to_string(), (*role, *generation));
            }
        }
    }
    out
}

fn wait_until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < within, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every switch has exactly one master, every other member is its slave,
/// all with the master's generation id.
fn settled(r: &BTreeMap<u64, BTreeMap<String, (Role, u64)>>, members: &[&str], switches: u64) -> bool {
    (1..=switches).all(|d| {
        let Some(m) = r.get(&d) else { return false };
        let masters: Vec<_> = members
            .iter()
            .filter(|n| m.get(**n).is_some_and(|x| x.0 == Role::Master))
            .collect();
        let gens: std::collections::BTreeSet<u64> = members.iter().filter_map(|n| m.get(*n).map(|x| x.1)).collect();
        masters.len() == 1 && members.iter().all(|n| m.contains_key(*n)) && gens.len() == 1
    })
}

#[test]
fn one_master_per_switch_spread_and_reelected_with_a_higher_generation() {
    let dir = scratch("roles");
    let etcd = Etcd::start(&dir, 1).unwrap();
    let names = ["c1", "c2", "c3"];
    let mut members: Vec<(Handle, Log)> = names.iter().map(|n| member(&etcd, n, "roles")).collect();
    for (h, _) in &members {
        for d in 1..=12 {
            h.switch_up(d);
        }
    }
    let logs = |m: &[(Handle, Log)], names: &[&'static str]| -> Vec<(&'static str, Log)> {
        names.iter().zip(m).map(|(n, (_, l))| (*n, l.clone())).collect()
    };
    let view = |m: &[(Handle, Log)], names: &[&'static str]| {
        let l = logs(m, names);
        roles(&l.iter().map(|(n, l)| (*n, l)).collect::<Vec<_>>())
    };
    wait_until("every switch settles", Duration::from_secs(10), || {
        settled(&view(&members, &names), &names, 12)
    });
    let before = view(&members, &names);
    let master_of = |r: &BTreeMap<String, (Role, u64)>| {
        r.iter()
            .find(|(_, x)| x.0 == Role::Master)
            .map(|(n, x)| (n.clone(), x.1))
            .unwrap()
    };
    let spread: std::collections::BTreeSet<String> = before.values().map(|r| master_of(r).0).collect();
    assert_eq!(
        spread.len(),
        3,
        "twelve switches, three members: each masters some: {before:?}"
    );
    // The members' own views agree with what they were told.
    let m = members[1].0.mastership();
    for (d, r) in &before {
        let (name, generation) = master_of(r);
        assert_eq!(m.masters.get(d), Some(&(name.clone(), generation)), "switch {d}");
    }

    // c1 leaves: its switches get a new master among c2 and c3, with a
    // higher generation id; the others' keep theirs.
    let (c1, _) = members.remove(0);
    let t = Instant::now();
    c1.leave();
    let rest = ["c2", "c3"];
    wait_until("c1's switches re-elected", Duration::from_secs(5), || {
        let r = view(&members, &rest);
        (1..=12).all(|d| {
            let m = r.get(&d).map(|m| {
                let masters = m.iter().filter(|(_, x)| x.0 == Role::Master).count();
                let gens: std::collections::BTreeSet<u64> = m.values().map(|x| x.1).collect();
                masters == 1 && gens.len() == 1
            });
            m == Some(true)
        })
    });
    let took = t.elapsed();
    let after = view(&members, &rest);
    for d in 1..=12u64 {
        let (old, old_gen) = master_of(&before[&d]);
        let (new, new_gen) = master_of(&after[&d]);
        if old == "c1" {
            assert!(new_gen > old_gen, "switch {d}: generation {old_gen} -> {new_gen}");
        } else {
            assert_eq!(
                (new.as_str(), new_gen),
                (old.as_str(), old_gen),
                "switch {d} kept its master"
            );
        }
    }
    assert!(
        took < Duration::from_secs(2),
        "re-election took {took:?} (the lease's TTL is 5 s)"
    );
    drop(members);
    drop(etcd);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn three_etcd_members_one_lost_works_on_quorum_lost_keeps_roles_then_recovers() {
    let dir = scratch("quorum");
    let mut etcd = Etcd::start(&dir, 3).unwrap();
    let names = ["a", "b"];
    let members: Vec<(Handle, Log)> = names.iter().map(|n| member(&etcd, n, "quorum")).collect();
    let view = || {
        let l: Vec<(&str, &Log)> = names.iter().zip(&members).map(|(n, (_, l))| (*n, l)).collect();
        roles(&l)
    };
    for (h, _) in &members {
        h.switch_up(1);
    }
    wait_until("switch 1 settles", Duration::from_secs(10), || {
        settled(&view(), &names, 1)
    });

    // One etcd member of three gone: a new switch still gets a master.
    etcd.kill(2);
    for (h, _) in &members {
        h.switch_up(2);
    }
    wait_until(
        "switch 2 settles with two etcd members",
        Duration::from_secs(10),
        || settled(&view(), &names, 2),
    );

    let noted: Vec<Vec<Notice>> = members.iter().map(|(_, l)| l.lock().unwrap().clone()).collect();
    eprintln!("with two etcd members of three: {noted:?}");
    // Quorum lost: the members say so, and nobody's role changes.
    let told_before: Vec<usize> = members.iter().map(|(_, l)| l.lock().unwrap().len()).collect();
    let roles_before = view();
    etcd.kill(1);
    wait_until("the members notice etcd is gone", Duration::from_secs(10), || {
        members.iter().all(|(_, l)| {
            l.lock()
                .unwrap()
                .iter()
                .any(|n| matches!(n, Notice::Etcd { reachable: false, .. }))
        })
    });
    for (h, _) in &members {
        h.switch_up(3);
    }
    std::thread::sleep(Duration::from_secs(2));
    for (i, (_, l)) in members.iter().enumerate() {
        let l = l.lock().unwrap();
        assert!(
            l[told_before[i]..]
                .iter()
                .all(|n| !matches!(n, Notice::Role { dpid: 1 | 2, .. })),
            "no role changed without quorum: {:?}",
            &l[told_before[i]..]
        );
        assert!(!members[i].0.mastership().etcd_reachable);
    }
    assert_eq!(view().get(&1), roles_before.get(&1));
    assert!(!settled(&view(), &names, 3), "no election without quorum");

    // Quorum back: the members say so and the waiting switch gets its master.
    etcd.restart(1).unwrap();
    etcd.restart(2).unwrap();
    let t = Instant::now();
    while !settled(&view(), &names, 3) {
        let told: Vec<_> = members.iter().map(|(_, l)| l.lock().unwrap().clone()).collect();
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the switch that came during the outage never settled: {:?}; told {told:?}; seen {:?}",
            view(),
            members[0].0.mastership()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for (h, l) in &members {
        assert!(l
            .lock()
            .unwrap()
            .iter()
            .any(|n| matches!(n, Notice::Etcd { reachable: true, .. })));
        assert!(h.mastership().etcd_reachable);
    }
    assert_eq!(
        view().get(&1),
        roles_before.get(&1),
        "switch 1 kept its master through it all"
    );
    drop(members);
    drop(etcd);
    let _ = std::fs::remove_dir_all(&dir);
}

/// What is told MASTER acts at once (sends its role request, takes the
/// switch's PACKET_INs and asks who masters the switch): the member's own
/// view must already say so, for every switch of a burst, not only once
/// the member has claimed them all.
#[test]
fn a_member_told_it_is_master_already_says_so() {
    let dir = scratch("told");
    let etcd = Etcd::start(&dir, 1).unwrap();
    let cell: Arc<std::sync::OnceLock<Handle>> = Arc::default();
    // (switch, who its view said masters it when told MASTER)
    type Told = Arc<Mutex<Vec<(u64, Option<String>)>>>;
    let seen: Told = Arc::default();
    let (c, s) = (cell.clone(), seen.clone());
    let cfg = Config::new(etcd.endpoint_list(), "m1".into(), "127.0.0.1:0".parse().unwrap());
    let notify = move |n: Notice| {
        if let Notice::Role {
            dpid,
            role: Role::Master,
            ..
        } = n
        {
            s.lock().unwrap().push((dpid, c.get().and_then(|h| h.master_of(dpid))));
        }
    };
    let h = cluster::start(cfg, Box::new(notify)).unwrap();
    let h = cell.get_or_init(|| h);
    for d in 1..=24 {
        h.switch_up(d);
    }
    wait_until("every switch mastered", Duration::from_secs(10), || {
        seen.lock().unwrap().len() >= 24
    });
    let wrong: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, m)| m.as_deref() != Some("m1"))
        .cloned()
        .collect();
    assert!(wrong.is_empty(), "told MASTER while its view said otherwise: {wrong:?}");
    h.leave();
    drop(etcd);
    let _ = std::fs::remove_dir_all(&dir);
}
