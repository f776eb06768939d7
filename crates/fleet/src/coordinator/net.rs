//! The coordinator's network family: an emulated network spread over the
//! workers (`SpreadNet`), its pings, iperf3 runs, flows and HTTP loads.

use super::*;

impl Fleet {
    /// Brings `topo` up spread over the workers.
    pub async fn net_up(
        &self,
        topo: &Topology,
        kind: SwitchKind,
        controller: Option<String>,
    ) -> Result<SpreadNet<'_>, FleetError> {
        let assignment = partition::assign(topo, self.workers.len());
        let underlay = Underlay {
            addresses: self.workers.iter().map(|w| *w.addr.ip()).collect(),
            vni_base: self.inventory.vni_base,
            port: self.inventory.vxlan_port,
            mtu: self.inventory.underlay_mtu,
        };
        let parts = partition::parts(topo, &assignment, &underlay)?;
        let calls = self.workers.iter().zip(&parts).map(|(w, part)| {
            w.call(Call::Net(NetCall::Up {
                topology: topo.clone(),
                part: part.clone(),
                kind,
                controller: controller.clone(),
            }))
        });
        let results = self.unless_lost(async { Ok(join_all(calls).await) }).await?;
        let mut runs = Vec::new();
        let mut first_error = None;
        for r in results {
            match r {
                Ok(Reply::NetUp { run, .. }) => runs.push(run),
                Ok(other) => {
                    first_error = first_error.or(Some(FleetError::Partition(format!("net-up answered {other:?}"))))
                }
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if let Some(e) = first_error {
            // What did come up goes down again.
            let _ = join_all(self.workers.iter().map(|w| w.call(Call::Down))).await;
            return Err(e);
        }
        let host_worker = topo
            .hosts
            .iter()
            .map(|h| {
                let w = parts
                    .iter()
                    .position(|p| p.nodes.contains(&h.name))
                    .expect("every host placed");
                (h.name.clone(), (h.ip, w))
            })
            .collect();
        Ok(SpreadNet {
            fleet: self,
            parts,
            runs,
            cut: partition::cut(topo, &assignment),
            hosts: host_worker,
        })
    }
}

/// A topology up over a fleet.
pub struct SpreadNet<'a> {
    pub(super) fleet: &'a Fleet,
    /// Each worker's part.
    pub parts: Vec<Part>,
    /// Each worker's netlab run id.
    pub runs: Vec<String>,
    /// Links carried between workers.
    pub cut: usize,
    /// Each host's address and worker.
    pub hosts: HashMap<String, (Ipv4Addr, usize)>,
}

impl SpreadNet<'_> {
    /// Every host pings every other, `count` times.
    pub async fn ping_all(&self, count: u32) -> Result<Vec<PingResult>, FleetError> {
        let mut targets: Vec<(String, Ipv4Addr)> = self.hosts.iter().map(|(n, (ip, _))| (n.clone(), *ip)).collect();
        targets.sort();
        let calls = self.fleet.workers.iter().map(|w| {
            w.call(Call::Net(NetCall::Ping {
                targets: targets.clone(),
                count,
            }))
        });
        let mut out = Vec::new();
        for r in self.fleet.unless_lost(async { Ok(join_all(calls).await) }).await? {
            match r? {
                Reply::Ping { results } => out.extend(results),
                other => return Err(FleetError::Partition(format!("ping answered {other:?}"))),
            }
        }
        Ok(out)
    }

    /// iperf3 (TCP) from host `client` to host `server`, wherever they are.
    pub async fn iperf(&self, client: &str, server: &str, seconds: u32) -> Result<IperfResult, FleetError> {
        let ((_, cw), (sip, sw)) = (self.find(client)?, self.find(server)?);
        let workers = &self.fleet.workers;
        self.fleet
            .unless_lost(workers[sw].call(Call::Net(NetCall::IperfServer { host: server.into() })))
            .await?;
        let reply = self
            .fleet
            .unless_lost(workers[cw].call(Call::Net(NetCall::Iperf {
                client: client.into(),
                server_ip: sip,
                seconds,
            })))
            .await?;
        match reply {
            Reply::Iperf { result } => Ok(result),
            other => Err(FleetError::Partition(format!("iperf answered {other:?}"))),
        }
    }

    /// Runs `flows` at once between hosts wherever they are: every
    /// receiver listening first (on its host's worker), then every sender
    /// from one moment, each worker starting by its own clock. Each
    /// receiver takes the two workers' clock offset off its latencies;
    /// the result says how well that offset is known. `on_interval` sees
    /// each flow's intervals (by index in `flows`) as they arrive.
    pub async fn flows(
        &self,
        flows: &[traffic::flow::Flow],
        interval_ms: u32,
        mut on_interval: impl FnMut(usize, &traffic::run::Interval),
    ) -> Result<Vec<traffic::flow::FlowResult>, FleetError> {
        let workers = &self.fleet.workers;
        let worker = |h: &str| self.find(h).map(|(_, w)| w);
        let clock = |w: usize| {
            workers[w].clock.unwrap_or(Offset {
                offset_us: 0.0,
                uncertainty_us: f64::INFINITY,
                exchanges: 0,
            })
        };
        let ns = |us: f64| (us * 1e3) as i64;
        let mut ends = Vec::new();
        for f in flows {
            ends.push((worker(&f.from.host)?, worker(&f.to.host)?));
        }
        // Receivers count until the senders' planned end; a sender that
        // starts later only makes its receiver wait for the frames to stop.
        let planned = clock::unix_ns() + 1_000_000_000;
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Reply)>();
        let receive = flows
            .iter()
            .zip(&ends)
            .enumerate()
            .map(|(i, (f, &(sw, rw)))| {
                let tx = tx.clone();
                let ahead = if sw == rw {
                    0
                } else {
                    ns(clock(rw).offset_us - clock(sw).offset_us)
                };
                let until = (planned as i64 + ns(clock(rw).offset_us)) as u64 + (f.seconds * 1e9) as u64;
                workers[rw].call_with(
                    Call::Net(NetCall::FlowReceive {
                        flow: f.clone(),
                        clock_ahead_ns: ahead,
                        until_unix_ns: until,
                        interval_ms,
                    }),
                    move |r| {
                        let _ = tx.send((i, r));
                    },
                )
            })
            .collect::<Vec<_>>();
        drop(tx);
        let run = async {
            let received = join_all(receive);
            tokio::pin!(received);
            let mut received_all = None;
            let mut listening = 0;
            while listening < flows.len() {
                tokio::select! {
                    Some((i, r)) = rx.recv() => match r {
                        Reply::FlowListening => listening += 1,
                        Reply::FlowInterval { interval } => on_interval(i, &interval),
                        _ => {}
                    },
                    r = &mut received => {
                        received_all = Some(r);
                        break;
                    }
                }
            }
            if let Some(r) = received_all {
                // A receiver ended before all were listening: it failed.
                for r in r {
                    r?;
                }
                return Err(FleetError::Partition(
                    "a flow's receiver ended before it counted".into(),
                ));
            }
            let start = planned.max(clock::unix_ns() + 100_000_000);
            let send = join_all(flows.iter().zip(&ends).map(|(f, &(sw, _))| {
                workers[sw].call(Call::Net(NetCall::FlowSend {
                    flow: f.clone(),
                    start_unix_ns: (start as i64 + ns(clock(sw).offset_us)) as u64,
                }))
            }));
            tokio::pin!(send);
            let mut sent_all = None;
            while sent_all.is_none() || received_all.is_none() {
                tokio::select! {
                    Some((i, r)) = rx.recv() => {
                        if let Reply::FlowInterval { interval } = r {
                            on_interval(i, &interval);
                        }
                    }
                    r = &mut send, if sent_all.is_none() => sent_all = Some(r),
                    r = &mut received, if received_all.is_none() => received_all = Some(r),
                }
            }
            while let Ok((i, r)) = rx.try_recv() {
                if let Reply::FlowInterval { interval } = r {
                    on_interval(i, &interval);
                }
            }
            let (sent_all, received_all) = (sent_all.unwrap_or_default(), received_all.unwrap_or_default());
            let mut out = Vec::new();
            for ((f, &(sw, rw)), (s, r)) in flows.iter().zip(&ends).zip(sent_all.into_iter().zip(received_all)) {
                let (Reply::FlowSent { report: sent }, Reply::FlowReceived { report: received }) = (s?, r?) else {
                    return Err(FleetError::Partition("a flow's ends answered out of turn".into()));
                };
                out.push(traffic::flow::FlowResult {
                    flow: f.clone(),
                    sent,
                    received: *received,
                    clock_uncertainty_us: if sw == rw {
                        0.0
                    } else {
                        clock(sw).uncertainty_us + clock(rw).uncertainty_us
                    },
                });
            }
            Ok(out)
        };
        self.fleet.unless_lost(run).await
    }

    /// Starts nginx on host `host`, on its worker (port 80, until the
    /// network comes down).
    pub async fn http_server(&self, host: &str) -> Result<(), FleetError> {
        let (_, w) = self.find(host)?;
        self.fleet
            .unless_lost(self.fleet.workers[w].call(Call::Net(NetCall::HttpServer { host: host.into() })))
            .await
            .map(drop)
    }

    /// Open-loop HTTP load from host `client` to host `server` (whose
    /// nginx is started), on the client's worker; `on_batch` sees the
    /// requests done in each interval as they come back (every request,
    /// once).
    pub async fn http_load(
        &self,
        client: &str,
        server: &str,
        rate: f64,
        seconds: f64,
        interval_ms: u32,
        mut on_batch: impl FnMut(Vec<lb::load::Request>),
    ) -> Result<(), FleetError> {
        let ((_, cw), (sip, _)) = (self.find(client)?, self.find(server)?);
        let call = self.fleet.workers[cw].call_with(
            Call::Net(NetCall::HttpLoad {
                client: client.into(),
                server_ip: sip,
                rate,
                seconds,
                interval_ms,
            }),
            |r| {
                if let Reply::HttpRequests { requests } = r {
                    on_batch(requests);
                }
            },
        );
        match self.fleet.unless_lost(call).await? {
            Reply::Done => Ok(()),
            other => Err(FleetError::Partition(format!("http-load answered {other:?}"))),
        }
    }

    /// A host's address and worker.
    pub(super) fn find(&self, h: &str) -> Result<(Ipv4Addr, usize), FleetError> {
        self.hosts
            .get(h)
            .copied()
            .ok_or_else(|| FleetError::Partition(format!("no host '{h}' in the topology")))
    }

    /// The worker a host is on.
    pub fn worker_of(&self, host: &str) -> Option<&str> {
        self.hosts.get(host).map(|(_, w)| self.fleet.workers[*w].name.as_str())
    }

    /// Every worker tears its part down.
    pub async fn down(self) -> Result<(), FleetError> {
        for r in join_all(self.fleet.workers.iter().map(|w| w.call(Call::Down))).await {
            r?;
        }
        Ok(())
    }
}
