//! RFC 8456's denial-of-service test: the rate served under a PACKET_IN
//! or SYN flood, and the guard that drops the flood's SYN-ACKs.

use super::*;

/// `--test dos`: the well-behaved switches (latency mode) measured alone and
/// then while `--attackers` switches flood the controller, trial by trial.
pub(super) fn run_dos(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let Some((_, base)) = scenarios(a)?.into_iter().next() else {
        return Err(LabError::Config("--test dos: no scenario".into()));
    };
    if place.workers.is_some() && a.syn_flood_pps > 0 {
        return Err(
            Conflict::new("not over workers (the SYN flood runs on this machine's loopback)")
                .with("syn-flood-pps", a.syn_flood_pps)
                .flag("workers")
                .into(),
        );
    }
    let run_id = place.name("ctl-dos");
    let dir = place.dir(&run_id);
    let meta = Meta {
        benchmark: "bench ctl --test dos".into(),
        parameters: serde_json::json!({"openflow": a.ofp, "trials": a.trials, "loops": a.loops, "loop_ms": a.loop_ms,
            "good_switches": a.switches, "attackers": a.attackers, "syn_flood_pps": a.syn_flood_pps, "attacker_window": 4096, "macs": a.macs}),
        metrics: dos_metrics(),
        ..started(&run_id)
    };
    let (mut run, rt) = open_run(&dir, meta, a, place)?;
    say(obs, format!(
        "sdnlab bench ctl --test dos: {} well-behaved switches (latency mode), {} attackers; {} trial(s); results in {}",
        a.switches,
        a.attackers,
        a.trials,
        dir.display()
    ));
    let fleet = match connect_fleet(place, &rt, &mut run.meta, obs, "the attackers") {
        Ok(f) => f,
        Err(e) => return Err(run.fail(e)),
    };
    for trial in 0..a.trials {
        let started = start_trial_controller(a, fleet.as_ref(), &rt, &mut run.meta, obs)?;
        let addr = started.addr;
        // In a cluster, the well-behaved switches and the attackers alike
        // connect to every member.
        let members = started.members.clone();
        let good = ctlbench::Config {
            target: addr,
            mode: ctlbench::Mode::Latency,
            members: members.clone(),
            ..base.clone()
        };
        let attack = ctlbench::Config {
            target: addr,
            members,
            mode: ctlbench::Mode::Throughput,
            switches: a.attackers,
            window: 4096,
            first_dpid: a.first_dpid + DOS_ATTACKER_DPIDS,
            threads: 1,
            // Running from before the measurement to after it.
            warmup: 1,
            loops: good.warmup + good.loops + 2,
            ..base.clone()
        };
        let alone = or_interrupted!(rt, ctlbench::run(good.clone(), |_| {}), run);
        let (under, flood) = match &fleet {
            None => {
                // The attackers run on a thread and runtime of their own, so the
                // well-behaved switches' side of the driver is not queued behind them.
                let flood = std::thread::spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .ok()
                        .map(|rt| rt.block_on(ctlbench::run(attack, |_| {})))
                });
                // Let the flood build up first.
                std::thread::sleep(Duration::from_millis(good.loop_ms));
                let under = or_interrupted!(rt, ctlbench::run(good.clone(), |_| {}), run);
                (under, flood.join().ok().flatten())
            }
            // The attackers on the workers, the well-behaved switches here:
            // a flood from other machines.
            Some(f) => {
                let (flood, under) = rt.block_on(async {
                    tokio::join!(f.ctl(&attack, |_| {}), async {
                        tokio::time::sleep(Duration::from_millis(good.loop_ms)).await;
                        ctlbench::run(good.clone(), |_| {}).await
                    })
                });
                match flood {
                    Ok((flood, _)) => (under, Some(flood)),
                    Err(e) => return Err(run.fail(LabError::setup(e))),
                }
            }
        };
        // Under a SYN flood (the well-behaved switches connect anew during it).
        let syn = if a.syn_flood_pps > 0 {
            Some(under_syn_flood(addr, a.syn_flood_pps, &good, &rt)?)
        } else {
            None
        };
        if let Err(e) = started.stop(&rt) {
            return Err(run.fail(LabError::setup(e)));
        }
        let flood_rate = flood.as_ref().map(|f| f.mean(|l| l.matched_per_s)).unwrap_or(0.0);
        let mut phases = vec![("alone", &alone), ("under attack", &under)];
        if let Some((r, _)) = &syn {
            phases.push(("under SYN flood", r));
        }
        for (scenario, r) in phases {
            let matched = r.mean(|l| l.matched_per_s);
            let note = (r.sessions_lost > 0).then(|| {
                format!(
                    "{scenario} trial {trial}: {} well-behaved session(s) lost",
                    r.sessions_lost
                )
            });
            if let Some(n) = &note {
                run.meta.events.push(n.clone());
            }
            let mut values = BTreeMap::from([
                ("matched_per_s".to_string(), matched),
                ("rtt_p50_us".to_string(), r.rtt_us_p50),
                ("rtt_p99_us".to_string(), r.rtt_us_p99),
                ("sessions_lost".to_string(), r.sessions_lost as f64),
            ]);
            if scenario == "under attack" {
                values.insert("attackers_answered_per_s".to_string(), flood_rate);
            }
            if let (true, Some((r, sent))) = (scenario == "under SYN flood", &syn) {
                let secs = (good.warmup + good.loops) as f64 * good.loop_ms as f64 / 1000.0 + 1.0;
                values.insert("syns_per_s".to_string(), *sent as f64 / secs);
                values.insert("sessions_lost".to_string(), r.sessions_lost as f64);
            }
            let s = Sample::trial(scenario, trial, values)
                .with_cdf(r.rtt_cdf.clone())
                .noted(note);
            run.sample(&s)?;
        }
        say(obs, format!(
            "  trial {trial}: alone p50 {:.1} us, under attack p50 {:.1} us (p99 {:.1} -> {:.1}); attackers answered {}/s",
            alone.rtt_us_p50,
            under.rtt_us_p50,
            alone.rtt_us_p99,
            under.rtt_us_p99,
            report::fmt_num(flood_rate)
        ));
        std::thread::sleep(Duration::from_millis(a.cooldown_ms));
    }
    finish_run(run, obs)
}

/// The DoS test's metrics: the well-behaved switches' answers and round trips.
fn dos_metrics() -> Vec<Metric> {
    vec![
        Metric::new(
            "matched_per_s",
            "well-behaved switches' answered PACKET_INs/s",
            stats::Better::Higher,
        )
        .titled("Well-behaved switches' answered PACKET_INs per second"),
        Metric::new("rtt_p50_us", "us", stats::Better::Lower).titled("Round-trip time, median"),
        Metric::new("rtt_p99_us", "us", stats::Better::Lower).titled("Round-trip time, 99th percentile"),
    ]
}

/// The well-behaved switches measured while a SYN flood of `pps` hits the
/// controller at `addr` (they connect anew during it), the flood's SYN-ACKs
/// dropped so its connections stay half-open; and the SYNs sent.
fn under_syn_flood(
    addr: std::net::SocketAddr,
    pps: u64,
    good: &ctlbench::Config,
    rt: &tokio::runtime::Runtime,
) -> Result<(ctlbench::Report, u64), LabError> {
    let std::net::SocketAddr::V4(v4) = addr else {
        return Err(Conflict::new("the SYN flood needs an IPv4 loopback target")
            .with("syn-flood-pps", pps)
            .with("target", addr)
            .into());
    };
    let guard = DropSynAcks::install(v4.port()).map_err(LabError::setup)?;
    let flood = ctlbench::synflood::SynFlood::start(v4, pps).map_err(LabError::setup)?;
    std::thread::sleep(Duration::from_millis(good.loop_ms));
    let r = rt.block_on(ctlbench::run(good.clone(), |_| {}));
    let sent = flood.stop();
    drop(guard);
    Ok((r, sent))
}

/// An nftables table that drops the controller's SYN-ACKs to the SYN
/// flood's fake source (loopback only), so half-open connections stay
/// half-open; removed on drop.
pub(super) struct DropSynAcks {
    table: String,
}

impl DropSynAcks {
    // Text on purpose: said as `LabError::Setup`, with nft's own words and the package to install.
    pub(super) fn install(port: u16) -> Result<DropSynAcks, String> {
        let table = format!("sdnlab_synflood_{}", std::process::id());
        let rules = format!(
            "table ip {table} {{\n chain out {{\n  type filter hook output priority 0; policy accept;\n  \
             ip saddr 127.0.0.0/8 ip daddr {}/32 tcp sport {port} drop\n }}\n}}\n",
            ctlbench::synflood::FAKE_SOURCE
        );
        netlab::install::need(&[netlab::install::NFT]).map_err(|e| format!("--syn-flood-pps: {e}"))?;
        let mut child = std::process::Command::new("nft")
            .args(["-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("nft: {e}"))?;
        use std::io::Write as _;
        if let Some(mut i) = child.stdin.take() {
            let _ = i.write_all(rules.as_bytes());
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("nft: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(DropSynAcks { table })
    }
}

impl Drop for DropSynAcks {
    fn drop(&mut self) {
        let _ = std::process::Command::new("nft")
            .args(["delete", "table", "ip", &self.table])
            .status();
    }
}
