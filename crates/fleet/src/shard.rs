//! The controller benchmark over several workers: its switches shared out
//! (each worker a contiguous range of datapath ids, counts differing by
//! one at most), and the shards' results merged back into one run's. Loops
//! are merged by index (the shards start together, each by its own clock
//! corrected by the coordinator's estimate of it): rates and counts add
//! up, per-switch figures are laid side by side in datapath-id order.
//! Round trips merge exactly: each shard sends its whole histogram.

use base64::Engine;
use ctlbench::{Config, LoopResult, Report};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// One worker's shard, done.
#[derive(Clone, Debug)]
pub struct Shard {
    pub worker: String,
    pub switches: usize,
    pub first_dpid: u64,
    pub report: Report,
}

/// The capacity test's `cfg` shared out over `workers`: worker i may open
/// its share of `max_sessions` (counts differing by one at most), with the
/// datapath ids that follow the previous worker's share.
pub fn split_sessions(
    cfg: &ctlbench::capacity::CapacityConfig,
    workers: usize,
) -> Vec<ctlbench::capacity::CapacityConfig> {
    let workers = workers.max(1);
    let (each, extra) = (cfg.max_sessions / workers, cfg.max_sessions % workers);
    let mut first = cfg.first_dpid;
    (0..workers)
        .map(|i| {
            let n = each + usize::from(i < extra);
            let c = ctlbench::capacity::CapacityConfig {
                max_sessions: n,
                first_dpid: first,
                ..cfg.clone()
            };
            first += n as u64;
            c
        })
        .collect()
}

/// The capacity shards' results as one: the sessions all of them held at
/// once; how the test ended (the first shard the controller failed, named,
/// or "limit" when every shard reached its count); the slowest shard's
/// time.
pub fn merge_sessions(shards: &[(String, ctlbench::capacity::CapacityResult)]) -> ctlbench::capacity::CapacityResult {
    let held: usize = shards.iter().map(|(_, r)| r.held).sum();
    let seconds = shards.iter().map(|(_, r)| r.seconds).fold(0.0, f64::max);
    let failed = shards
        .iter()
        .find(|(_, r)| r.ended_by != "limit" && r.ended_by != "stopped");
    let (ended_by, detail) = match failed {
        Some((w, r)) => (r.ended_by.clone(), format!("worker {w}: {}", r.detail)),
        None => (
            "limit".to_string(),
            format!("every shard opened its share ({held} sessions)"),
        ),
    };
    ctlbench::capacity::CapacityResult {
        held,
        ended_by,
        detail,
        seconds,
        sessions_per_s: held as f64 / seconds.max(1e-9),
        progress: Vec::new(),
    }
}

/// `cfg` shared out over `workers`: worker i gets its switch count and the
/// datapath ids that follow the previous worker's. A worker may get none
/// (fewer switches than workers).
pub fn split(cfg: &Config, workers: usize) -> Vec<Config> {
    let workers = workers.max(1);
    let (each, extra) = (cfg.switches / workers, cfg.switches % workers);
    let mut first = cfg.first_dpid;
    (0..workers)
        .map(|i| {
            let n = each + usize::from(i < extra);
            let c = Config {
                switches: n,
                first_dpid: first,
                // A paced load, and the pace of new connections, are
                // shared out like the switches.
                offered_rate: cfg.offered_rate * n as f64 / cfg.switches.max(1) as f64,
                connect_rate: cfg.connect_rate * n as f64 / cfg.switches.max(1) as f64,
                ..cfg.clone()
            };
            first = first.wrapping_add(n as u64);
            c
        })
        .collect()
}

/// One loop over every shard: rates and counts added, per-switch figures
/// side by side in shard order, the longest loop's length.
pub fn merge_loop(parts: &[&LoopResult]) -> LoopResult {
    let sum_f = |f: &dyn Fn(&LoopResult) -> f64| parts.iter().map(|l| f(l)).sum::<f64>();
    let sum_u = |f: &dyn Fn(&LoopResult) -> u64| parts.iter().map(|l| f(l)).sum::<u64>();
    let per_switch: Vec<u64> = parts.iter().flat_map(|l| l.per_switch.iter().copied()).collect();
    LoopResult {
        loop_index: parts.first().map(|l| l.loop_index).unwrap_or(0),
        seconds: parts.iter().map(|l| l.seconds).fold(0.0, f64::max),
        responses_per_s: sum_f(&|l| l.responses_per_s),
        matched_per_s: sum_f(&|l| l.matched_per_s),
        unmatched: sum_u(&|l| l.unmatched),
        requests_per_s: sum_f(&|l| l.requests_per_s),
        malformed_sent: sum_u(&|l| l.malformed_sent),
        malformed_acted: sum_u(&|l| l.malformed_acted),
        errors: sum_u(&|l| l.errors),
        unanswered: sum_u(&|l| l.unanswered),
        duplicates: sum_u(&|l| l.duplicates),
        per_switch_min: per_switch.iter().copied().min().unwrap_or(0),
        per_switch_max: per_switch.iter().copied().max().unwrap_or(0),
        per_switch,
    }
}

/// Merges loops as shards report them: a loop is complete once every
/// shard has sent it.
pub struct LoopMerger {
    shards: usize,
    waiting: BTreeMap<usize, BTreeMap<usize, LoopResult>>,
}

impl LoopMerger {
    pub fn new(shards: usize) -> LoopMerger {
        LoopMerger {
            shards,
            waiting: BTreeMap::new(),
        }
    }

    /// Shard `shard`'s loop; the merged loop if it completes one.
    pub fn add(&mut self, shard: usize, l: LoopResult) -> Option<LoopResult> {
        let index = l.loop_index;
        let got = self.waiting.entry(index).or_default();
        got.insert(shard, l);
        if got.len() < self.shards {
            return None;
        }
        let got = self.waiting.remove(&index)?;
        let parts: Vec<&LoopResult> = got.values().collect();
        Some(merge_loop(&parts))
    }
}

/// The run's report from its shards' (in worker order): loops merged by
/// index (those every shard measured), round trips from the merged
/// histograms, lost sessions added.
pub fn merge(cfg: &Config, shards: &[Shard]) -> Report {
    let n = shards.iter().map(|s| s.report.loops.len()).min().unwrap_or(0);
    let loops = (0..n)
        .map(|i| {
            let parts: Vec<&LoopResult> = shards.iter().map(|s| &s.report.loops[i]).collect();
            merge_loop(&parts)
        })
        .collect();
    let mut hist: Option<Histogram<u64>> = None;
    for h in shards.iter().filter_map(|s| s.report.rtt_histogram.as_ref()) {
        match &mut hist {
            None => hist = Some(h.clone()),
            Some(all) => {
                let _ = all.add(h);
            }
        }
    }
    let (p50, p99, max, cdf) = hist
        .as_ref()
        .map(ctlbench::rtt_figures)
        .unwrap_or((0.0, 0.0, 0.0, Vec::new()));
    Report {
        config: cfg.clone(),
        loops,
        rtt_us_p50: p50,
        rtt_us_p99: p99,
        rtt_us_max: max,
        rtt_cdf: cdf,
        sessions_lost: shards.iter().map(|s| s.report.sessions_lost).sum(),
        cluster: merge_cluster(shards),
        rtt_histogram: hist,
    }
}

/// What the shards saw of a cluster, as one run against it: each member's
/// counts added up over the shards (by its address), the switches not
/// settled or without a master added, settled when the slowest shard
/// was (never, if one never was). None when the run was standalone.
fn merge_cluster(shards: &[Shard]) -> Option<ctlbench::ClusterReport> {
    let mut out: Option<ctlbench::ClusterReport> = None;
    for c in shards.iter().filter_map(|s| s.report.cluster.as_ref()) {
        let Some(all) = &mut out else {
            out = Some(c.clone());
            continue;
        };
        for m in &c.members {
            match all.members.iter_mut().find(|x| x.address == m.address) {
                Some(x) => {
                    x.masters += m.masters;
                    x.requests += m.requests;
                    x.first_answers += m.first_answers;
                    x.duplicates += m.duplicates;
                    x.slave_writes += m.slave_writes;
                }
                None => all.members.push(m.clone()),
            }
        }
        all.settle_s = match (all.settle_s, c.settle_s) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        all.unsettled += c.unsettled;
        all.without_master += c.without_master;
    }
    out
}

/// Why a histogram or packed words did not make it onto, or off, the wire.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("cannot serialise the round trips: {0}")]
    Serialise(String),
    #[error("{what} not in base64: {source}")]
    Base64 {
        what: &'static str,
        source: base64::DecodeError,
    },
    /// hdrhistogram's own error, in its words.
    #[error("round trips unreadable: {0}")]
    Histogram(String),
    #[error("packed words: {0}")]
    Deflate(#[from] std::io::Error),
    #[error("packed words: {0} bytes is not whole words")]
    Partial(usize),
}

/// A histogram for the wire: V2 with deflate, base64 (empty: none).
pub fn encode_histogram(h: Option<&Histogram<u64>>) -> Result<String, PackError> {
    let Some(h) = h else { return Ok(String::new()) };
    let mut buf = Vec::new();
    // (hdrhistogram's errors implement Debug only.)
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| PackError::Serialise(format!("{e:?}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// The histogram [`encode_histogram`] wrote (an empty one for "").
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, PackError> {
    if text.is_empty() {
        return Histogram::new(3).map_err(|e| PackError::Histogram(e.to_string()));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|source| PackError::Base64 {
            what: "round trips",
            source,
        })?;
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| PackError::Histogram(format!("{e:?}")))
}

/// 64-bit words for the wire: little-endian bytes, deflated, base64 (a
/// receiver's bitmap of a million frames that all arrived is a few
/// hundred bytes this way, not megabytes of JSON numbers).
pub fn pack_words(words: &[u64]) -> Result<String, PackError> {
    use std::io::Write;
    let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    for w in words {
        z.write_all(&w.to_le_bytes())?;
    }
    let bytes = z.finish()?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The words [`pack_words`] packed.
pub fn unpack_words(text: &str) -> Result<Vec<u64>, PackError> {
    use std::io::Read;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|source| PackError::Base64 {
            what: "packed words",
            source,
        })?;
    let mut raw = Vec::new();
    flate2::read::DeflateDecoder::new(&bytes[..]).read_to_end(&mut raw)?;
    if raw.len() % 8 != 0 {
        return Err(PackError::Partial(raw.len()));
    }
    Ok(raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clusters_counts_add_up_over_the_shards_and_it_settles_with_the_slowest() {
        let member = |address: &str, masters, requests| ctlbench::MemberCounts {
            address: address.into(),
            masters,
            requests,
            first_answers: requests,
            duplicates: 1,
            slave_writes: 0,
        };
        let shard = |members, settle_s, unsettled| Shard {
            worker: "w".into(),
            switches: 2,
            first_dpid: 1,
            report: Report {
                config: cfg(2),
                loops: Vec::new(),
                rtt_us_p50: 0.0,
                rtt_us_p99: 0.0,
                rtt_us_max: 0.0,
                rtt_cdf: Vec::new(),
                sessions_lost: 0,
                cluster: Some(ctlbench::ClusterReport {
                    members,
                    settle_s,
                    unsettled,
                    without_master: 0,
                }),
                rtt_histogram: None,
            },
        };
        let a = shard(
            vec![member("10.0.0.1:1", 1, 10), member("10.0.0.2:1", 1, 20)],
            Some(0.1),
            0,
        );
        let b = shard(
            vec![member("10.0.0.2:1", 2, 5), member("10.0.0.3:1", 0, 7)],
            Some(0.3),
            1,
        );
        let c = merge_cluster(&[a.clone(), b.clone()]).unwrap();
        let got: Vec<(&str, u64, u64, u64)> = c
            .members
            .iter()
            .map(|m| (m.address.as_str(), m.masters, m.requests, m.duplicates))
            .collect();
        assert_eq!(
            got,
            [
                ("10.0.0.1:1", 1, 10, 1),
                ("10.0.0.2:1", 3, 25, 2),
                ("10.0.0.3:1", 0, 7, 1)
            ]
        );
        assert_eq!(c.settle_s, Some(0.3));
        assert_eq!(c.unsettled, 1);
        // A shard that never settled: the run never did.
        let never = shard(vec![member("10.0.0.1:1", 0, 0)], None, 2);
        assert_eq!(merge_cluster(&[a, never]).unwrap().settle_s, None);
        // Standalone shards: no cluster at all.
        let mut alone = b;
        alone.report.cluster = None;
        assert!(merge_cluster(&[alone]).is_none());
    }

    #[test]
    fn packed_words_come_back_as_they_were_and_a_full_bitmap_packs_small() {
        let full = vec![u64::MAX; 1 << 14];
        let packed = pack_words(&full).unwrap();
        assert!(packed.len() < 2000, "{} chars", packed.len());
        assert_eq!(unpack_words(&packed).unwrap(), full);
        let odd: Vec<u64> = (0..1000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        assert_eq!(unpack_words(&pack_words(&odd).unwrap()).unwrap(), odd);
        assert_eq!(unpack_words(&pack_words(&[]).unwrap()).unwrap(), Vec::<u64>::new());
        assert!(unpack_words("not base64!").is_err());
    }

    #[test]
    fn sessions_are_shared_out_and_their_shards_merge_into_what_was_held_at_once() {
        let cfg = ctlbench::capacity::CapacityConfig {
            target: "127.0.0.1:6653".parse().unwrap(),
            version: 4,
            first_dpid: 100,
            max_sessions: 10,
            check_every: 500,
            timeout: std::time::Duration::from_secs(5),
            members: Vec::new(),
        };
        let parts = split_sessions(&cfg, 3);
        assert_eq!(parts.iter().map(|c| c.max_sessions).collect::<Vec<_>>(), [4, 3, 3]);
        assert_eq!(parts.iter().map(|c| c.first_dpid).collect::<Vec<_>>(), [100, 104, 107]);
        let r = |held, ended_by: &str, seconds| ctlbench::capacity::CapacityResult {
            held,
            ended_by: ended_by.into(),
            detail: format!("{ended_by} here"),
            seconds,
            sessions_per_s: 0.0,
            progress: Vec::new(),
        };
        let m = merge_sessions(&[
            ("a".into(), r(4, "stopped", 1.0)),
            ("b".into(), r(2, "refused", 2.0)),
            ("c".into(), r(3, "stopped", 1.5)),
        ]);
        assert_eq!((m.held, m.ended_by.as_str(), m.seconds), (9, "refused", 2.0));
        assert_eq!(m.detail, "worker b: refused here");
        let all = merge_sessions(&[("a".into(), r(4, "limit", 1.0)), ("b".into(), r(3, "limit", 1.0))]);
        assert_eq!((all.held, all.ended_by.as_str()), (7, "limit"));
    }

    fn cfg(switches: usize) -> Config {
        Config {
            switches,
            macs: 100,
            version: 4,
            loops: 2,
            loop_ms: 100,
            warmup: 0,
            window: 8,
            first_dpid: 100,
            ..Config::new("127.0.0.1:6653".parse().unwrap())
        }
    }

    #[test]
    fn switches_are_shared_out_with_ranges_of_datapath_ids_that_do_not_overlap() {
        let parts = split(&cfg(16), 3);
        assert_eq!(parts.iter().map(|c| c.switches).collect::<Vec<_>>(), [6, 5, 5]);
        assert_eq!(parts.iter().map(|c| c.first_dpid).collect::<Vec<_>>(), [100, 106, 111]);
        let parts = split(&cfg(2), 3);
        assert_eq!(parts.iter().map(|c| c.switches).collect::<Vec<_>>(), [1, 1, 0]);
        // Paces add up to the run's.
        let paced = Config {
            connect_rate: 1000.0,
            offered_rate: 1600.0,
            ..cfg(16)
        };
        let parts = split(&paced, 3);
        let sum = |f: &dyn Fn(&Config) -> f64| parts.iter().map(f).sum::<f64>();
        assert!((sum(&|c| c.connect_rate) - 1000.0).abs() < 1e-9);
        assert!((sum(&|c| c.offered_rate) - 1600.0).abs() < 1e-9);
    }

    fn loop_of(i: usize, per: &[u64], secs: f64) -> LoopResult {
        let total: u64 = per.iter().sum();
        LoopResult {
            loop_index: i,
            seconds: secs,
            responses_per_s: total as f64 / secs,
            matched_per_s: total as f64 / secs,
            unmatched: 1,
            requests_per_s: total as f64 / secs,
            malformed_sent: 0,
            malformed_acted: 0,
            errors: 2,
            unanswered: 0,
            duplicates: 0,
            per_switch_min: *per.iter().min().unwrap(),
            per_switch_max: *per.iter().max().unwrap(),
            per_switch: per.to_vec(),
        }
    }

    #[test]
    fn loops_merge_once_every_shard_has_sent_them_and_add_up() {
        let mut m = LoopMerger::new(2);
        assert!(m.add(0, loop_of(0, &[10, 20], 1.0)).is_none());
        assert!(m.add(0, loop_of(1, &[11, 21], 1.0)).is_none());
        let l0 = m.add(1, loop_of(0, &[5], 1.0)).unwrap();
        assert_eq!(l0.responses_per_s, 35.0);
        assert_eq!(l0.per_switch, [10, 20, 5]);
        assert_eq!(
            (l0.per_switch_min, l0.per_switch_max, l0.unmatched, l0.errors),
            (5, 20, 2, 4)
        );
        let l1 = m.add(1, loop_of(1, &[6], 1.0)).unwrap();
        assert_eq!(l1.loop_index, 1);
        assert_eq!(l1.matched_per_s, 38.0);
    }

    #[test]
    fn round_trips_merge_exactly_through_the_wire() {
        let mut a = Histogram::<u64>::new(3).unwrap();
        let mut b = Histogram::<u64>::new(3).unwrap();
        for _ in 0..900 {
            a.record(10_000).unwrap(); // 10 us
        }
        for _ in 0..100 {
            b.record(1_000_000).unwrap(); // 1 ms
        }
        let b2 = decode_histogram(&encode_histogram(Some(&b)).unwrap()).unwrap();
        assert_eq!(b2.len(), 100);
        let shard = |h: Histogram<u64>, l: LoopResult| Shard {
            worker: "w".into(),
            switches: 1,
            first_dpid: 1,
            report: Report {
                config: cfg(1),
                loops: vec![l],
                rtt_us_p50: 0.0,
                rtt_us_p99: 0.0,
                rtt_us_max: 0.0,
                rtt_cdf: Vec::new(),
                sessions_lost: 1,
                cluster: None,
                rtt_histogram: Some(h),
            },
        };
        let r = merge(
            &cfg(2),
            &[shard(a, loop_of(0, &[4], 1.0)), shard(b2, loop_of(0, &[6], 1.0))],
        );
        // 90 % of the round trips were 10 us: the median; the 99th percentile is 1 ms.
        assert!((r.rtt_us_p50 - 10.0).abs() < 0.1, "{}", r.rtt_us_p50);
        assert!((r.rtt_us_p99 - 1000.0).abs() < 1.0, "{}", r.rtt_us_p99);
        assert_eq!(r.loops[0].responses_per_s, 10.0);
        assert_eq!(r.sessions_lost, 2);
        assert_eq!(r.config.switches, 2);
    }
}
