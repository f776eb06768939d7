//! Splitting a topology over machines: switches balanced over the workers
//! (counts differ by one at most), as few switch links cut as a greedy
//! method finds, every host with its switch. Each cut link becomes a VXLAN
//! tunnel between the two workers: one VNI per link, the same at both ends.
//!
//! The method: switches in breadth-first order from the first are dealt
//! out in contiguous runs (neighbours land together), then pairs in
//! different parts are swapped while a swap cuts fewer links (the
//! Kernighan–Lin move, greedily, until no swap helps or `MAX_PASSES`).

use netlab::state::{Part, Tunnel, VXLAN_OVERHEAD};
use netlab::topo::Topology;
use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;

const MAX_PASSES: usize = 8;
/// Above this many switches the swaps are left out (their cost grows with
/// the square); the breadth-first deal stands.
const MAX_REFINED: usize = 2_000;

/// How tunnels are made.
#[derive(Clone, Debug)]
pub struct Underlay {
    /// Each worker's own address, in worker order.
    pub addresses: Vec<Ipv4Addr>,
    /// The VNI of link i is `vni_base + i`.
    pub vni_base: u32,
    pub port: u16,
    /// The underlay's MTU (the tunnels get 50 bytes less).
    pub mtu: u32,
}

/// Which worker each switch goes to (index into the workers), in the
/// topology's switch order.
pub fn assign(topo: &Topology, workers: usize) -> Vec<usize> {
    assign_graph(&switch_graph(topo), workers)
}

/// The same for an emulated fabric of the controller benchmark
/// (`ctlbench::fabric::Spec`): which worker each switch goes to, in the
/// spec's switch order.
pub fn assign_fabric(spec: &ctlbench::fabric::Spec, workers: usize) -> Vec<usize> {
    let index: HashMap<u64, usize> = spec.switches.iter().enumerate().map(|(i, s)| (s.0, i)).collect();
    let mut adj = vec![Vec::new(); spec.switches.len()];
    for (a, b) in &spec.links {
        if let (Some(&a), Some(&b)) = (index.get(&a.0), index.get(&b.0)) {
            adj[a].push(b);
            adj[b].push(a);
        }
    }
    assign_graph(&adj, workers)
}

/// Switches `0..adj.len()` (their neighbours, one entry per link) dealt
/// out over `workers`.
fn assign_graph(adj: &[Vec<usize>], workers: usize) -> Vec<usize> {
    let n = adj.len();
    if n == 0 || workers <= 1 {
        return vec![0; n];
    }
    // Breadth-first order over every component.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for s in 0..n {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut q = VecDeque::from([s]);
        while let Some(u) = q.pop_front() {
            order.push(u);
            for &v in &adj[u] {
                if !seen[v] {
                    seen[v] = true;
                    q.push_back(v);
                }
            }
        }
    }
    let mut part = vec![0; n];
    let (size, extra) = (n / workers, n % workers);
    let mut at = 0;
    for w in 0..workers {
        let take = size + usize::from(w < extra);
        for &u in &order[at..at + take] {
            part[u] = w;
        }
        at += take;
    }
    if n <= MAX_REFINED {
        refine(adj, &mut part);
    }
    part
}

/// Links cut by `part`.
pub fn cut(topo: &Topology, part: &[usize]) -> usize {
    // Each switch link is in both ends' lists.
    switch_graph(topo)
        .iter()
        .enumerate()
        .map(|(u, vs)| vs.iter().filter(|&&v| part[u] != part[v]).count())
        .sum::<usize>()
        / 2
}

/// The switches' neighbours (by index in the topology's switch order), one
/// entry per link.
fn switch_graph(topo: &Topology) -> Vec<Vec<usize>> {
    let index: HashMap<&str, usize> = topo
        .switches
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let mut adj = vec![Vec::new(); topo.switches.len()];
    for l in &topo.links {
        if let (Some(&a), Some(&b)) = (index.get(l.a.as_str()), index.get(l.b.as_str())) {
            adj[a].push(b);
            adj[b].push(a);
        }
    }
    adj
}

fn refine(adj: &[Vec<usize>], part: &mut [usize]) {
    let n = part.len();
    // Links from u into part p.
    let into = |part: &[usize], u: usize, p: usize| adj[u].iter().filter(|&&v| part[v] == p).count() as i64;
    for _ in 0..MAX_PASSES {
        let mut improved = false;
        for u in 0..n {
            let mut best: Option<(i64, usize)> = None;
            for v in u + 1..n {
                let (pu, pv) = (part[u], part[v]);
                if pu == pv {
                    continue;
                }
                let link = adj[u].iter().filter(|&&x| x == v).count() as i64;
                let gain = into(part, u, pv) - into(part, u, pu) + into(part, v, pu) - into(part, v, pv) - 2 * link;
                if gain > 0 && best.is_none_or(|(g, _)| gain > g) {
                    best = Some((gain, v));
                }
            }
            if let Some((_, v)) = best {
                part.swap(u, v);
                improved = true;
            }
        }
        if !improved {
            break;
        }
    }
}

/// Each worker's part of `topo` under `assignment`: its switches, their
/// hosts, and a tunnel for every link to another worker.
pub fn parts(topo: &Topology, assignment: &[usize], underlay: &Underlay) -> Result<Vec<Part>, crate::FleetError> {
    let workers = underlay.addresses.len();
    let mtu = underlay
        .mtu
        .checked_sub(VXLAN_OVERHEAD)
        .filter(|m| *m >= 576)
        .ok_or_else(|| {
            crate::FleetError::Partition(format!(
                "an underlay MTU of {} leaves too little for VXLAN (576 bytes at least inside)",
                underlay.mtu
            ))
        })?;
    let mut where_: HashMap<&str, usize> = topo
        .switches
        .iter()
        .zip(assignment)
        .map(|(s, &w)| (s.name.as_str(), w))
        .collect();
    for h in &topo.hosts {
        let sw = topo
            .links
            .iter()
            .find_map(|l| {
                if l.a == h.name {
                    Some(l.b.as_str())
                } else if l.b == h.name {
                    Some(l.a.as_str())
                } else {
                    None
                }
            })
            .ok_or_else(|| crate::FleetError::Partition(format!("host {} has no link", h.name)))?;
        let w = *where_
            .get(sw)
            .ok_or_else(|| crate::FleetError::Partition(format!("host {} is not linked to a switch", h.name)))?;
        where_.insert(h.name.as_str(), w);
    }
    let mut out: Vec<Part> = (0..workers)
        .map(|_| Part {
            nodes: Vec::new(),
            tunnels: Vec::new(),
            mtu,
        })
        .collect();
    for h in &topo.hosts {
        out[where_[h.name.as_str()]].nodes.push(h.name.clone());
    }
    for s in &topo.switches {
        out[where_[s.name.as_str()]].nodes.push(s.name.clone());
    }
    for (i, l) in topo.links.iter().enumerate() {
        let (a, b) = (where_[l.a.as_str()], where_[l.b.as_str()]);
        if a == b {
            continue;
        }
        let vni = underlay.vni_base + i as u32;
        if vni >= 1 << 24 {
            return Err(crate::FleetError::Partition(format!(
                "link {} needs VNI {vni}, past VXLAN's 24 bits: lower the VNI base",
                i + 1
            )));
        }
        for (here, there) in [(a, b), (b, a)] {
            out[here].tunnels.push(Tunnel {
                link: i,
                vni,
                local: underlay.addresses[here],
                remote: underlay.addresses[there],
                port: underlay.port,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_are_balanced_and_every_node_is_placed_once() {
        for spec in ["leaf-spine,2,4,1", "linear,7", "tree,2,3", "leaf-spine,4,8,2"] {
            let topo = netlab::topo::shape(spec).unwrap();
            for k in 1..=4 {
                let a = assign(&topo, k);
                let mut counts = vec![0; k];
                for &w in &a {
                    counts[w] += 1;
                }
                let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                assert!(hi - lo <= 1, "{spec} over {k}: {counts:?}");
                let u = Underlay {
                    addresses: (0..k).map(|i| Ipv4Addr::new(10, 9, 0, i as u8 + 1)).collect(),
                    vni_base: 1000,
                    port: 4789,
                    mtu: 1500,
                };
                let parts = parts(&topo, &a, &u).unwrap();
                let mut all: Vec<&String> = parts.iter().flat_map(|p| &p.nodes).collect();
                all.sort();
                let n = all.len();
                all.dedup();
                assert_eq!(all.len(), n, "{spec}: a node placed twice");
                assert_eq!(n, topo.hosts.len() + topo.switches.len());
                // Tunnels come in pairs, the same VNI facing each other.
                let tunnels: Vec<&Tunnel> = parts.iter().flat_map(|p| &p.tunnels).collect();
                assert_eq!(tunnels.len(), 2 * cut(&topo, &a), "{spec}");
                for t in &tunnels {
                    assert!(tunnels
                        .iter()
                        .any(|o| o.vni == t.vni && o.local == t.remote && o.remote == t.local));
                }
                assert!(parts.iter().all(|p| p.mtu == 1450));
            }
        }
    }

    #[test]
    fn a_line_is_cut_once_per_boundary_not_scattered() {
        // Seven switches in a line over three workers: two cuts is the least.
        let topo = netlab::topo::shape("linear,7").unwrap();
        assert_eq!(cut(&topo, &assign(&topo, 3)), 2);
        // Dealt out round-robin it would be six; the swaps find the least
        // from a bad start too.
        let n = topo.switches.len();
        let mut part: Vec<usize> = (0..n).map(|i| i % 3).collect();
        let adj = switch_graph(&topo);
        let before = cut(&topo, &part);
        refine(&adj, &mut part);
        assert!(cut(&topo, &part) < before, "{before} -> {}", cut(&topo, &part));
    }

    #[test]
    fn an_underlay_too_small_for_vxlan_is_refused() {
        let topo = netlab::topo::shape("linear,2").unwrap();
        let u = Underlay {
            addresses: vec![Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)],
            vni_base: 1,
            port: 4789,
            mtu: 600,
        };
        assert!(parts(&topo, &assign(&topo, 2), &u).is_err());
    }
}
