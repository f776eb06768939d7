//! The coordinator's controller-load family: the session and cbench loads
//! shared out over the workers, the driver's ceiling on each, and sdnlab's
//! controller as a cluster spread over them.

use super::*;

/// A cluster of sdnlab's controller running on the workers
/// ([`Fleet::cluster_up`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SpreadCluster {
    /// The worker running its etcd, the etcd's client URLs and version.
    pub etcd_worker: String,
    pub endpoints: Vec<String>,
    pub etcd_version: String,
    pub members: Vec<SpreadMember>,
}

/// One member of a [`SpreadCluster`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct SpreadMember {
    pub name: String,
    /// The worker it runs on.
    pub worker: String,
    pub openflow: std::net::SocketAddr,
    pub rest: std::net::SocketAddr,
}

impl Fleet {
    /// The control session capacity test `cfg` with its sessions shared
    /// out over the workers ([`crate::shard::split_sessions`]), all opening
    /// at once. When one shard ends because the controller failed, the
    /// others are told to stop; every shard holds its sessions until all
    /// have ended, so the sum is what the controller held at once.
    /// `on_progress` sees the total held as the shards report it. Returns
    /// the merged result and each worker's own.
    pub async fn sessions(
        &self,
        cfg: &ctlbench::capacity::CapacityConfig,
        mut on_progress: impl FnMut(usize),
    ) -> Result<
        (
            ctlbench::capacity::CapacityResult,
            Vec<(String, ctlbench::capacity::CapacityResult)>,
        ),
        FleetError,
    > {
        let configs = crate::shard::split_sessions(cfg, self.workers.len());
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Reply)>();
        let mut active = Vec::new();
        let mut calls = Vec::new();
        for (i, (w, c)) in self.workers.iter().zip(&configs).enumerate() {
            if c.max_sessions == 0 {
                continue;
            }
            active.push(i);
            let tx = tx.clone();
            calls.push(
                w.call_with(Call::Ctl(CtlCall::Sessions { config: c.clone() }), move |r| {
                    let _ = tx.send((i, r));
                }),
            );
        }
        drop(tx);
        let run = async {
            let all = join_all(calls);
            tokio::pin!(all);
            let mut held = vec![0usize; self.workers.len()];
            let mut ended: Vec<Option<ctlbench::capacity::CapacityResult>> = vec![None; self.workers.len()];
            let mut stopped = false;
            let mut finished = None;
            while active.iter().any(|&i| ended[i].is_none()) {
                tokio::select! {
                    Some((i, r)) = rx.recv() => match r {
                        Reply::SessionsProgress { held: n, .. } => {
                            held[i] = n;
                            on_progress(held.iter().sum());
                        }
                        Reply::SessionsEnded { result } => {
                            held[i] = result.held;
                            on_progress(held.iter().sum());
                            if result.ended_by != "limit" && !stopped {
                                // The controller failed: the test is over everywhere.
                                stopped = true;
                                let stops = active
                                    .iter()
                                    .filter(|&&j| j != i && ended[j].is_none())
                                    .map(|&j| self.workers[j].call(Call::Ctl(CtlCall::SessionsStop { release: false })));
                                for r in join_all(stops).await {
                                    r?;
                                }
                            }
                            ended[i] = Some(*result);
                        }
                        _ => {}
                    },
                    r = &mut all, if finished.is_none() => {
                        // Every call ended before all said how: one failed.
                        for r in r {
                            r?;
                        }
                        finished = Some(());
                    }
                }
            }
            // Every shard holds its count: now they may let go.
            for r in join_all(
                active
                    .iter()
                    .map(|&i| self.workers[i].call(Call::Ctl(CtlCall::SessionsStop { release: true }))),
            )
            .await
            {
                r?;
            }
            if finished.is_none() {
                for r in all.await {
                    r?;
                }
            }
            let shards: Vec<(String, ctlbench::capacity::CapacityResult)> = active
                .iter()
                .map(|&i| (self.workers[i].name.clone(), ended[i].take().expect("ended")))
                .collect();
            Ok((crate::shard::merge_sessions(&shards), shards))
        };
        self.unless_lost(run).await
    }

    /// Runs the controller benchmark `cfg` with its switches shared out over
    /// the workers ([`crate::shard`]), all starting together; `on_loop`
    /// sees each loop merged over the shards once every shard has measured
    /// it. Returns the merged report and each shard's own.
    pub async fn ctl(
        &self,
        cfg: &ctlbench::Config,
        mut on_loop: impl FnMut(&ctlbench::LoopResult),
    ) -> Result<(ctlbench::Report, Vec<crate::shard::Shard>), FleetError> {
        let configs = crate::shard::split(cfg, self.workers.len());
        // Everyone starts a moment from now, each by its own clock.
        let start = clock::unix_ns() + 500_000_000;
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, ctlbench::LoopResult)>();
        let calls = self
            .workers
            .iter()
            .zip(&configs)
            .enumerate()
            .filter(|(_, (_, c))| c.switches > 0)
            .map(|(i, (w, c))| {
                let offset_ns = w.clock.map(|o| (o.offset_us * 1e3) as i64).unwrap_or(0);
                let tx = tx.clone();
                async move {
                    let r = w
                        .call_with(
                            Call::Ctl(CtlCall::Shard {
                                config: c.clone(),
                                start_unix_ns: start.saturating_add_signed(offset_ns),
                            }),
                            |reply| {
                                if let Reply::CtlLoop { result } = reply {
                                    let _ = tx.send((i, result));
                                }
                            },
                        )
                        .await;
                    (i, r)
                }
            });
        let calls: Vec<_> = calls.collect();
        drop(tx);
        let shards = configs.iter().filter(|c| c.switches > 0).count();
        let mut merger = crate::shard::LoopMerger::new(shards);
        let all = join_all(calls);
        tokio::pin!(all);
        let results = loop {
            tokio::select! {
                Some((i, l)) = rx.recv() => {
                    if let Some(merged) = merger.add(i, l) {
                        on_loop(&merged);
                    }
                }
                r = &mut all => break r,
                e = self.first_lost() => return Err(e),
            }
        };
        while let Ok((i, l)) = rx.try_recv() {
            if let Some(merged) = merger.add(i, l) {
                on_loop(&merged);
            }
        }
        let mut out = Vec::new();
        for (i, r) in results {
            match r? {
                Reply::Ctl {
                    mut report,
                    rtt_histogram,
                } => {
                    report.rtt_histogram =
                        Some(
                            crate::shard::decode_histogram(&rtt_histogram).map_err(|source| FleetError::Unpack {
                                worker: self.workers[i].name.clone(),
                                source,
                            })?,
                        );
                    out.push(crate::shard::Shard {
                        worker: self.workers[i].name.clone(),
                        switches: configs[i].switches,
                        first_dpid: configs[i].first_dpid,
                        report: *report,
                    })
                }
                other => {
                    return Err(FleetError::Failed {
                        worker: self.workers[i].name.clone(),
                        message: format!("answered the benchmark with {other:?}"),
                    })
                }
            }
        }
        Ok((crate::shard::merge(cfg, &out), out))
    }

    /// The driver's own ceiling for `cfg` over the workers: each measures
    /// its shard of the load against the reference null responder on its
    /// machine, all at once (as the shards will run), and the figures add
    /// up (the round trip is the slowest worker's median). None when the
    /// load cannot be answered by the reference responder.
    pub async fn ceiling(&self, cfg: &ctlbench::Config) -> Result<Option<ctlbench::ceiling::Ceiling>, FleetError> {
        let configs = crate::shard::split(cfg, self.workers.len());
        let calls = self
            .workers
            .iter()
            .zip(&configs)
            .filter(|(_, c)| c.switches > 0)
            .map(|(w, c)| async move { (w, w.call(Call::Ctl(CtlCall::Ceiling { config: c.clone() })).await) });
        let results = self.unless_lost(async { Ok(join_all(calls).await) }).await?;
        let mut sum = ctlbench::ceiling::Ceiling {
            responses_per_s: 0.0,
            matched_per_s: 0.0,
            rtt_us_p50: 0.0,
        };
        for (w, r) in results {
            match r? {
                Reply::Ceiling { ceiling: None } => return Ok(None),
                Reply::Ceiling { ceiling: Some(c) } => {
                    sum.responses_per_s += c.responses_per_s;
                    sum.matched_per_s += c.matched_per_s;
                    sum.rtt_us_p50 = sum.rtt_us_p50.max(c.rtt_us_p50);
                }
                other => {
                    return Err(FleetError::Failed {
                        worker: w.name.clone(),
                        message: format!("answered the ceiling with {other:?}"),
                    })
                }
            }
        }
        Ok(Some(sum))
    }

    /// Starts a cluster of `n` members of sdnlab's controller running
    /// `app` (named `name`; `slave_packet_ins` as `sdnlab controller
    /// --slave-packet-ins all` says) on the workers: its etcd of
    /// `etcd_members` on the first worker, member cI on worker (I - 1)
    /// modulo their number, each on its worker's address. What started is
    /// stopped again if any part fails; `cluster_down` stops it all.
    pub async fn cluster_up(
        &self,
        n: usize,
        etcd_members: usize,
        app: &str,
        name: &str,
        slave_packet_ins: bool,
    ) -> Result<SpreadCluster, FleetError> {
        // What started before a failure is stopped with it.
        let up = async {
            let first = self
                .workers
                .first()
                .ok_or_else(|| FleetError::Partition("a cluster on workers needs one worker at least".into()))?;
            let failed = |w: &Worker, other: Reply| FleetError::Failed {
                worker: w.name.clone(),
                message: format!("answered with {other:?}"),
            };
            let (endpoints, etcd_version) = match self
                .unless_lost(first.call(Call::Ctl(CtlCall::EtcdUp { members: etcd_members })))
                .await?
            {
                Reply::EtcdUp { endpoints, version } => (endpoints, version),
                other => return Err(failed(first, other)),
            };
            // One after another: each member's claims settle as it joins.
            let mut members = Vec::new();
            for i in 1..=n {
                let w = &self.workers[(i - 1) % self.workers.len()];
                let member = format!("c{i}");
                let call = Call::Ctl(CtlCall::MemberUp {
                    endpoints: endpoints.clone(),
                    cluster: name.to_string(),
                    member: member.clone(),
                    app: app.to_string(),
                    slave_packet_ins,
                });
                match self.unless_lost(w.call(call)).await? {
                    Reply::MemberUp { openflow, rest } => members.push(SpreadMember {
                        name: member,
                        worker: w.name.clone(),
                        openflow,
                        rest,
                    }),
                    other => return Err(failed(w, other)),
                }
            }
            Ok(SpreadCluster {
                etcd_worker: first.name.clone(),
                endpoints,
                etcd_version,
                members,
            })
        };
        let r = up.await;
        if r.is_err() {
            let _ = self.cluster_down().await;
        }
        r
    }

    /// Every worker stops the cluster members and the etcd it runs.
    pub async fn cluster_down(&self) -> Result<(), FleetError> {
        for r in join_all(self.workers.iter().map(|w| w.call(Call::Ctl(CtlCall::ClusterDown)))).await {
            r?;
        }
        Ok(())
    }
}
