//! The coordinator's fabric family: an emulated OpenFlow fabric spread
//! over the workers (`SpreadFabric`), and the failures the topology tests
//! cause on it.

use super::*;

/// An emulated fabric over the workers, in one part per worker: brought
/// up and stopped, and acted on as the change-detection test does (each
/// failure made on the workers that run the switches concerned).
pub struct SpreadFabric<'a> {
    pub fleet: &'a Fleet,
    pub spec: ctlbench::fabric::Spec,
    /// Which worker runs each switch: in the spec's switch order, and by datapath id.
    pub(super) assignment: Vec<usize>,
    pub(super) owner: HashMap<u64, usize>,
}

impl<'a> SpreadFabric<'a> {
    /// `spec` dealt out over `fleet` as a topology is (balanced, few links
    /// cut), once: bringing it up, acting on it and stopping it all follow
    /// this one assignment.
    pub fn new(fleet: &'a Fleet, spec: &ctlbench::fabric::Spec) -> SpreadFabric<'a> {
        let assignment = partition::assign_fabric(spec, fleet.workers.len());
        SpreadFabric {
            fleet,
            spec: spec.clone(),
            owner: spec
                .switches
                .iter()
                .map(|s| s.0)
                .zip(assignment.iter().copied())
                .collect(),
            assignment,
        }
    }

    /// Brings the fabric up: each worker runs its part and carries the
    /// links to other parts over UDP between the workers' addresses,
    /// every switch connected to `targets`. Returns once every part has
    /// answered (its switches connected, or `timeout` passed): each
    /// worker's part as it stands.
    pub async fn up(
        &self,
        targets: &[std::net::SocketAddr],
        version: u8,
        timeout: Duration,
        malformed_per_mille: u32,
    ) -> Result<Vec<FabricPart>, FleetError> {
        let (fleet, spec, assignment) = (self.fleet, &self.spec, &self.assignment);
        let bound = join_all(fleet.workers.iter().map(|w| w.call(Call::Fabric(FabricCall::Bind))));
        let mut sockets = Vec::new();
        for (w, r) in fleet
            .workers
            .iter()
            .zip(fleet.unless_lost(async { Ok(bound.await) }).await?)
        {
            match r? {
                Reply::FabricBound { port } => sockets.push(std::net::SocketAddr::from((*w.addr.ip(), port))),
                other => return Err(FleetError::Partition(format!("fabric-bind answered {other:?}"))),
            }
        }
        let start = fleet.workers.iter().enumerate().map(|(i, w)| {
            let here: Vec<u64> = spec
                .switches
                .iter()
                .zip(assignment)
                .filter(|(_, &p)| p == i)
                .map(|(s, _)| s.0)
                .collect();
            let elsewhere = spec
                .switches
                .iter()
                .zip(assignment)
                .filter(|(_, &p)| p != i)
                .map(|(s, &p)| (s.0, sockets[p]))
                .collect();
            w.call(Call::Fabric(FabricCall::Start {
                spec: spec.clone(),
                here,
                elsewhere,
                targets: targets.to_vec(),
                version,
                timeout_ms: timeout.as_millis() as u64,
                malformed_per_mille,
            }))
        });
        let up = fleet.unless_lost(async { Ok(join_all(start).await) }).await?;
        self.parts(up)
    }

    /// Stops every worker's part of the fabric: what each counted.
    pub async fn stop(&self) -> Result<Vec<FabricPart>, FleetError> {
        let stopped = join_all(
            self.fleet
                .workers
                .iter()
                .map(|w| w.call(Call::Fabric(FabricCall::Stop))),
        )
        .await;
        self.parts(stopped)
    }

    pub(super) fn parts(&self, replies: Vec<Result<Reply, FleetError>>) -> Result<Vec<FabricPart>, FleetError> {
        let mut out = Vec::new();
        for (i, (w, r)) in self.fleet.workers.iter().zip(replies).enumerate() {
            match r? {
                Reply::FabricUp { counts } => out.push(FabricPart {
                    worker: w.name.clone(),
                    switches: self.assignment.iter().filter(|&&p| p == i).count(),
                    counts,
                }),
                other => return Err(FleetError::Partition(format!("the fabric answered {other:?}"))),
            }
        }
        Ok(out)
    }

    pub(super) fn owner(&self, dpid: u64) -> Result<&Worker, FleetError> {
        self.owner
            .get(&dpid)
            .map(|&w| &self.fleet.workers[w])
            .ok_or_else(|| FleetError::Partition(format!("no switch {dpid:#x} in the fabric")))
    }

    /// The ports wired to `at` (the far end of its link, if any).
    pub(super) fn peer(&self, at: ctlbench::fabric::Attach) -> Option<ctlbench::fabric::Attach> {
        self.spec.links.iter().find_map(|&(a, b)| {
            if a == at {
                Some(b)
            } else if b == at {
                Some(a)
            } else {
                None
            }
        })
    }

    pub(super) async fn port_down(&self, at: ctlbench::fabric::Attach) -> Result<(), FleetError> {
        let call = self.owner(at.0)?.call(Call::Fabric(FabricCall::Port { at, up: false }));
        self.fleet.unless_lost(call).await.map(drop)
    }
}

impl ctlbench::topology_tests::Failures for SpreadFabric<'_> {
    type Error = FleetError;

    fn spec(&self) -> &ctlbench::fabric::Spec {
        &self.spec
    }

    async fn link_down(&self, a: ctlbench::fabric::Attach) -> Result<(), FleetError> {
        let b = self
            .peer(a)
            .ok_or_else(|| FleetError::Partition(format!("no link at {a:?}")))?;
        let (x, y) = futures::join!(self.port_down(a), self.port_down(b));
        x.and(y)
    }

    async fn switch_off(&self, dpid: u64) -> Result<(), FleetError> {
        let off = self.owner(dpid)?.call(Call::Fabric(FabricCall::SwitchOff { dpid }));
        self.fleet.unless_lost(off).await?;
        // Its neighbours on other workers (those on its own went down with it).
        let mine = self.owner.get(&dpid).copied();
        let far: Vec<ctlbench::fabric::Attach> = self
            .spec
            .links
            .iter()
            .filter_map(|&(a, b)| match (a.0 == dpid, b.0 == dpid) {
                (true, _) => Some(b),
                (_, true) => Some(a),
                _ => None,
            })
            .filter(|p| self.owner.get(&p.0).copied() != mine)
            .collect();
        for r in join_all(far.into_iter().map(|p| self.port_down(p))).await {
            r?;
        }
        Ok(())
    }

    async fn last_probe_ns(&self) -> Result<u64, FleetError> {
        let counts = join_all(
            self.fleet
                .workers
                .iter()
                .map(|w| w.call(Call::Fabric(FabricCall::Count))),
        );
        let counts = self.fleet.unless_lost(async { Ok(counts.await) }).await?;
        let mut latest = 0u64;
        for (w, r) in self.fleet.workers.iter().zip(counts) {
            if let Reply::FabricUp { counts } = r? {
                let last_lldp_out_ns = counts.last_lldp_out_ns;
                if last_lldp_out_ns > 0 {
                    // On our clock: the worker's minus its offset.
                    let offset_ns = w.clock.map_or(0.0, |c| c.offset_us * 1e3) as i64;
                    latest = latest.max((last_lldp_out_ns as i64 - offset_ns).max(0) as u64);
                }
            }
        }
        Ok(latest)
    }
}

/// One worker's part of an emulated fabric, as it reported.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FabricPart {
    pub worker: String,
    pub switches: usize,
    #[serde(flatten)]
    pub counts: proto::FabricCounts,
}
