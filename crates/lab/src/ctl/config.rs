//! The controller benchmark's configuration: every parameter of `sdnlab
//! bench ctl` (and of an `experiment = "ctl"` file), with its default, and
//! the check that each is in its range. Names are the command line's, with
//! `_` for `-`.

use crate::check::{range, real, Conflict, ParamError};
use crate::peers::Name;
pub use crate::peers::SlavePacketIns;
use crate::LabError;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

crate::check::choice! {
    /// A test of `bench ctl`: cbench's load, RFC 8456's tests on sessions
    /// alone, and those on emulated fabrics (`topology`).
    pub enum CtlTest {
        Cbench = "cbench",
        Security = "security",
        Sessions = "sessions",
        Rate = "rate",
        Dos = "dos",
        Discovery = "discovery",
        DiscoverySize = "discovery-size",
        ReactivePaths = "reactive-paths",
        ProactivePaths = "proactive-paths",
        ChangeDetection = "change-detection",
        Reprovisioning = "reprovisioning",
        TableCapacity = "table-capacity",
        TableCapacityProactive = "table-capacity-proactive",
        Failover = "failover",
    }
}

impl CtlTest {
    /// Whether it runs on an emulated fabric, read and driven through a
    /// northbound API (`topology`), rather than on sessions alone.
    pub fn on_a_fabric(self) -> bool {
        !matches!(
            self,
            CtlTest::Cbench | CtlTest::Security | CtlTest::Sessions | CtlTest::Rate | CtlTest::Dos
        )
    }

    /// Whether workers on other machines can share its load (`--workers`).
    pub fn spreads_over_workers(self) -> bool {
        matches!(
            self,
            CtlTest::Cbench
                | CtlTest::Rate
                | CtlTest::Sessions
                | CtlTest::Dos
                | CtlTest::Discovery
                | CtlTest::DiscoverySize
                | CtlTest::ChangeDetection
        )
    }
}

crate::check::choice! {
    /// The OpenFlow version the emulated switches speak.
    pub enum Ofp {
        V10 = "1.0",
        V13 = "1.3",
    }
}

impl Ofp {
    /// Its version byte on the wire.
    pub fn version(self) -> u8 {
        match self {
            Ofp::V10 => ofwire::OFP10_VERSION,
            Ofp::V13 => ofwire::OFP13_VERSION,
        }
    }
}

crate::check::choice! {
    /// A whole methodology `--suite` runs.
    pub enum Suite {
        /// Every RFC 8456 test the target supports, one report.
        Rfc8456 = "rfc8456",
    }
}

crate::check::choice! {
    /// How the load driver matches answers to PACKET_INs.
    pub enum MatchBy {
        /// cbench's: a FLOW_MOD or PACKET_OUT with the PACKET_IN's buffer id.
        Buffer = "buffer",
        /// Every PACKET_IN a new source, answered by the first FLOW_MOD naming it.
        NewSource = "new-source",
    }
}

crate::check::choice! {
    /// What the change-detection test makes fail.
    pub enum Failure {
        Link = "link",
        Switch = "switch",
    }
}

crate::check::choice! {
    /// Which member of a cluster the failover test kills.
    pub enum Kill {
        /// The master of the switch the traffic needs.
        Master = "master",
        /// A member the traffic does not need (the control).
        NonMaster = "non-master",
    }
}

crate::check::choice! {
    /// How the emulated switches offer PACKET_INs (cbench's modes).
    pub enum CbenchMode {
        /// A window of PACKET_INs outstanding per switch: answers per second.
        Throughput = "throughput",
        /// One at a time per switch: every round trip timed.
        Latency = "latency",
    }
}

impl CbenchMode {
    /// The load driver's mode.
    pub fn driver(self) -> ctlbench::Mode {
        match self {
            CbenchMode::Throughput => ctlbench::Mode::Throughput,
            CbenchMode::Latency => ctlbench::Mode::Latency,
        }
    }
}

/// The controller benchmark. The defaults are cbench's throughput mode
/// against sdnlab's own controller: 16 switches, 1,000 MACs each, 5 loops
/// of 1 s, 10 trials (RFC 8456's minimum).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
#[command(allow_negative_numbers = true)]
pub struct CtlConfig {
    /// What to run: cbench (throughput or latency, --mode) or security (RFC 8456
    /// exception handling: every known malformed case, one session each).
    /// sessions: RFC 8456 control session capacity (open sessions until the controller fails).
    /// rate: RFC 8456 asynchronous message processing rate (loss-free search).
    /// dos: RFC 8456 denial-of-service handling (well-behaved switches' latency with and without a PACKET_IN flood).
    /// On emulated fabrics (--fabric), read and driven through a northbound API (RFC 8456):
    /// discovery (topology discovery time), discovery-size (grow the fabric until discovery fails),
    /// reactive-paths and proactive-paths (path provisioning time and rate),
    /// change-detection (a link or a switch fails, --failure), reprovisioning (traffic around a
    /// failed link: gap and loss per direction), table-capacity and table-capacity-proactive
    /// (forwarding table capacity: destinations sent to, or paths requested, until the flow count stops growing),
    /// failover (an active/standby sdnlab pair with OpenFlow 1.3 roles, or a cluster with --cluster N;
    /// the active one, or the master, is killed).
    #[arg(long, default_value_t = CtlTest::Cbench)]
    pub test: CtlTest,
    /// Run a whole methodology: rfc8456 (every test the target supports, one report).
    #[arg(long)]
    pub suite: Option<Suite>,
    /// With --suite: small fabrics and at most 3 trials (a smoke run).
    #[arg(long, requires = "suite")]
    pub quick: bool,
    /// A controller to measure that sdnlab does not start (HOST:PORT).
    #[arg(skip)]
    pub target: Option<SocketAddr>,
    /// A cluster to measure that sdnlab does not start: every member
    /// (`target` is the first), every emulated switch connected to each
    /// (RFC 8456's cluster mode; `--target A,B,C`). Empty: one controller.
    #[arg(skip)]
    pub target_members: Vec<SocketAddr>,
    /// Real controllers to compare, installed (when missing), started and stopped by sdnlab:
    /// sdnlab, ovs-testcontroller, os-ken, ryu, faucet (OpenFlow 1.3; cbench, rate and dos tests)
    /// (repeatable; one run each, then one comparison).
    #[arg(long = "peer", value_name = "PEER", conflicts_with = "target")]
    pub peers: Vec<Name>,
    /// App of the embedded controller (l2-learning, hub, null, ...).
    #[arg(long, default_value = "l2-learning")]
    pub app: String,
    /// OpenFlow version the emulated switches speak.
    #[arg(long, default_value_t = CtlConfig::default().ofp)]
    pub ofp: Ofp,
    /// cbench mode.
    #[arg(long, default_value_t = CtlConfig::default().mode)]
    pub mode: CbenchMode,
    /// Emulated switches.
    #[arg(long, default_value_t = CtlConfig::default().switches)]
    pub switches: usize,
    /// Host MAC addresses per switch.
    #[arg(long, default_value_t = CtlConfig::default().macs)]
    pub macs: usize,
    /// Measured loops per trial.
    #[arg(long, default_value_t = CtlConfig::default().loops)]
    pub loops: usize,
    /// Length of a loop, ms.
    #[arg(long, default_value_t = CtlConfig::default().loop_ms)]
    pub loop_ms: u64,
    /// Unmeasured loops before the measured ones.
    #[arg(long, default_value_t = CtlConfig::default().warmup)]
    pub warmup: usize,
    /// Pause between trials, ms.
    #[arg(long, default_value_t = CtlConfig::default().cooldown_ms)]
    pub cooldown_ms: u64,
    /// Outstanding PACKET_INs per switch in throughput mode.
    #[arg(long, default_value_t = CtlConfig::default().window)]
    pub window: usize,
    /// Ports each emulated switch reports.
    #[arg(long, default_value_t = CtlConfig::default().ports)]
    pub ports: u32,
    /// Datapath id of the first emulated switch (the others follow).
    #[arg(long, default_value_t = CtlConfig::default().first_dpid)]
    pub first_dpid: u64,
    /// New switch connections per second (0: as fast as accepted).
    #[arg(long, default_value_t = CtlConfig::default().connect_rate)]
    pub connect_rate: f64,
    /// Malformed messages mixed into the load, percent (RFC 8456 exception handling: 1 and 2).
    #[arg(long, default_value_t = CtlConfig::default().malformed_percent)]
    pub malformed_percent: f64,
    /// Repetitions of each scenario (RFC 8456 asks for at least 10).
    #[arg(long, default_value_t = CtlConfig::default().trials)]
    pub trials: u32,
    /// Sweep one parameter: switches, macs, window, loop-ms or malformed (percent), e.g. `switches=1,2,4,8`.
    #[arg(long, value_name = "PARAM=V1,V2,...")]
    pub sweep: Option<String>,
    /// rate: two rounds agree when the answered rate is within this fraction of the offered one.
    #[arg(long, default_value_t = CtlConfig::default().rate_tolerance)]
    pub rate_tolerance: f64,
    /// dos: flooding switches (each keeps up to 4096 PACKET_INs outstanding and never slows down).
    #[arg(long, default_value_t = CtlConfig::default().attackers)]
    pub attackers: usize,
    /// Topology tests: --attackers switches flood the controller with this many PACKET_INs per
    /// second in all, whatever it answers, throughout each trial (RFC 8456 DoS handling applied
    /// to the test; 0: no flood). --malformed-percent applies to them too: that share of the
    /// fabric's messages is followed by a malformed one.
    #[arg(long, default_value_t = CtlConfig::default().flood_pps)]
    pub flood_pps: f64,
    /// dos: also measure under a TCP SYN flood of this many SYNs per second on the OpenFlow port (0: off).
    #[arg(long, default_value_t = CtlConfig::default().syn_flood_pps)]
    pub syn_flood_pps: u64,
    /// Topology tests: emulated fabrics, repeatable: leaf-spine,SPINES,LEAVES,HOSTS_PER_LEAF, linear,N,
    /// tree,DEPTH,FANOUT or file:PATH (JSON).
    #[arg(long = "fabric", value_name = "SHAPE")]
    pub fabrics: Vec<String>,
    /// Topology tests: how the controller is read and asked for paths: sdnlab:HOST:PORT (its REST
    /// API), osken:HOST:PORT (os-ken's or Ryu's rest_topology + ofctl_rest) or none.
    /// Default: the embedded controller's or the peer's own.
    #[arg(long, value_name = "ADAPTER")]
    pub northbound: Option<String>,
    /// Topology tests: give up after this many seconds (the RFC's Td).
    #[arg(long, default_value_t = CtlConfig::default().td_s)]
    pub td_s: u64,
    /// Path tests: addresses per emulated host (the rate tests use them all as destinations).
    #[arg(long, default_value_t = CtlConfig::default().host_macs)]
    pub host_macs: u16,
    /// change-detection: what fails, repeatable: link, switch (default both).
    #[arg(long = "failure")]
    pub failures: Vec<Failure>,
    /// sdnlab's cluster: its slaves ask for every PACKET_IN (all: they know the network at a
    /// takeover) or none (each PACKET_IN handled by its master alone).
    #[arg(long, default_value_t = CtlConfig::default().slave_packet_ins)]
    pub slave_packet_ins: SlavePacketIns,
    /// sdnlab's cluster: the members of its etcd (1, 3 or 5), started for each trial.
    #[arg(long, default_value_t = CtlConfig::default().etcd_members)]
    pub etcd_members: usize,
    /// failover with --cluster: kill the master of the switch the traffic needs, or a
    /// non-master (the control: the traffic should not notice).
    #[arg(long, default_value_t = CtlConfig::default().kill)]
    pub kill: Kill,
    /// cbench against a cluster (--cluster N, sdnlab's or --peer faucet's instances): kill
    /// (SIGKILL) the first member after this many measured loops; the loops after it show
    /// what the others answer alone.
    #[arg(long, value_name = "K")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_after_loop: Option<u32>,
    /// reprovisioning and failover: one frame (each way) every this many microseconds.
    #[arg(long, default_value_t = CtlConfig::default().reprov_interval_us)]
    pub reprov_interval_us: u64,
    /// reprovisioning and failover: how long the frames go on, ms.
    #[arg(long, default_value_t = CtlConfig::default().reprov_ms)]
    pub reprov_ms: u64,
    /// table-capacity(-proactive): destinations added per step.
    #[arg(long, default_value_t = CtlConfig::default().table_step)]
    pub table_step: u16,
    /// table-capacity(-proactive): at most this many destinations (up to 65535).
    #[arg(long, default_value_t = CtlConfig::default().table_max)]
    pub table_max: u16,
    /// discovery-size: grow leaf-spine fabrics (2 spines, leaves doubling) up to this many switches.
    #[arg(long, default_value_t = CtlConfig::default().max_switches)]
    pub max_switches: u32,
    /// sessions: stop at this many if the controller has not failed before.
    #[arg(long, default_value_t = CtlConfig::default().max_sessions)]
    pub max_sessions: usize,
    /// security: how long to watch each case, ms.
    #[arg(long, default_value_t = CtlConfig::default().case_wait_ms)]
    pub case_wait_ms: u64,
    /// security: how long to wait for the controller to drop a silent connection, s.
    #[arg(long, default_value_t = CtlConfig::default().hello_wait_s)]
    pub hello_wait_s: u64,
    /// One peer started afresh for each trial (set for each of `peers`, and by suites).
    #[arg(skip)]
    pub peer: Option<Name>,
    /// Tag the emulated switches' PACKET_IN frames with this 802.1Q VLAN id (1-4094). With
    /// --peer faucet they carry its ports' native VLAN, 100, unless this says otherwise.
    #[arg(long, value_name = "VID")]
    pub vlan: Option<u16>,
    /// How answers are matched to PACKET_INs: buffer (cbench's: a FLOW_MOD or PACKET_OUT with
    /// the PACKET_IN's buffer id) or new-source (OpenFlow 1.3: every PACKET_IN a source never
    /// sent before, answered by the first FLOW_MOD naming it, as Faucet learns). Default:
    /// new-source for --peer faucet, else buffer.
    #[arg(long, value_name = "HOW")]
    pub match_by: Option<MatchBy>,
    /// The driver's event loops (threads) the emulated switches are spread over (0: half the
    /// cores, leaving the rest to a controller on the same machine).
    #[arg(long, default_value_t = CtlConfig::default().driver_threads)]
    pub driver_threads: usize,
    /// RFC 8456's cluster mode: sdnlab's controller as N members (1 to 9) on an etcd of the
    /// run's own, every emulated switch connected to each, trials once every switch has one
    /// master. Tests on fabrics: discovery, discovery-size, reactive-paths, change-detection,
    /// reprovisioning, table-capacity, and failover (2 or more: the master of the last host's
    /// switch is killed with SIGKILL).
    #[arg(long, value_name = "N", default_value_t = CtlConfig::default().cluster)]
    pub cluster: usize,
}

impl Default for CtlConfig {
    fn default() -> CtlConfig {
        CtlConfig {
            test: CtlTest::Cbench,
            suite: None,
            quick: false,
            target: None,
            target_members: Vec::new(),
            peers: Vec::new(),
            app: "l2-learning".into(),
            ofp: Ofp::V10,
            mode: CbenchMode::Throughput,
            switches: 16,
            macs: 1000,
            loops: 5,
            loop_ms: 1000,
            warmup: 1,
            cooldown_ms: 500,
            window: 256,
            ports: 4,
            first_dpid: 1,
            connect_rate: 0.0,
            malformed_percent: 0.0,
            trials: 10,
            sweep: None,
            rate_tolerance: 0.01,
            attackers: 4,
            flood_pps: 0.0,
            syn_flood_pps: 0,
            fabrics: Vec::new(),
            northbound: None,
            td_s: 30,
            host_macs: 8,
            failures: Vec::new(),
            kill: Kill::Master,
            kill_after_loop: None,
            slave_packet_ins: SlavePacketIns::All,
            etcd_members: 1,
            reprov_interval_us: 1000,
            reprov_ms: 3000,
            table_step: 1000,
            table_max: 20000,
            max_switches: 1024,
            max_sessions: 10_000,
            case_wait_ms: 1500,
            hello_wait_s: 12,
            peer: None,
            vlan: None,
            match_by: None,
            driver_threads: 0,
            cluster: 0,
        }
    }
}

impl CtlConfig {
    /// The VLAN the emulated switches' frames carry: `vlan`, else Faucet's
    /// ports' native VLAN when Faucet is the controller measured.
    pub fn frame_vlan(&self) -> Option<u16> {
        self.vlan
            .or((self.peer == Some(Name::Faucet)).then_some(crate::peers::FAUCET_VLAN))
    }

    /// How the driver matches answers: Faucet learns each new source once
    /// and answers with flows, not buffers (`ctlbench::Answers`).
    pub fn answers(&self) -> ctlbench::Answers {
        match (self.match_by, self.peer) {
            (Some(MatchBy::NewSource), _) | (None, Some(Name::Faucet)) => ctlbench::Answers::NewSource,
            _ => ctlbench::Answers::Buffer,
        }
    }

    /// Checks every parameter; the error is one line naming the first one
    /// out of range and what it accepts.
    pub fn validate(&self) -> Result<(), LabError> {
        self.check_choices()?;
        self.check_cluster()?;
        self.check_load()?;
        self.check_sweep_and_kills()?;
        self.check_tests()?;
        Ok(())
    }

    /// The test, the suite, the peers, the answers' matching, and the load's sizes.
    fn check_choices(&self) -> Result<(), LabError> {
        if self.quick && self.suite.is_none() {
            return Err(Conflict::new("only with --suite").flag("quick").into());
        }
        if let Some(m) = &self.match_by {
            if *m == MatchBy::NewSource && self.ofp != Ofp::V13 {
                return Err(Conflict::new("the answers are OpenFlow 1.3 FLOW_MODs; add --ofp 1.3")
                    .with("match-by", m)
                    .with("ofp", self.ofp)
                    .into());
            }
        }
        if let Some(v) = self.vlan {
            range("vlan", v as usize, 1, 4094)?;
        }
        for p in self.all_peers() {
            if self.suite.is_none() {
                if let Some(why) = super::faucet_unsupported(p, self.test, self.ofp) {
                    return Err(Conflict::new(why).with("peer", p).with("test", self.test).into());
                }
            }
        }
        if self.target.is_some() && !self.peers.is_empty() {
            return Err(
                Conflict::new("choose one (a target is a controller sdnlab does not start)")
                    .flag("target")
                    .flag("peer")
                    .into(),
            );
        }
        range("switches", self.switches, 1, 100_000)?;
        range("macs", self.macs, 2, 65_535)?;
        range("loops", self.loops, 1, 1_000_000)?;
        range("loop-ms", self.loop_ms, 10, 3_600_000)?;
        range("warmup", self.warmup, 0, 1_000_000)?;
        range("cooldown-ms", self.cooldown_ms, 0, 3_600_000)?;
        range("window", self.window, 1, 1_000_000)?;
        range("driver-threads", self.driver_threads, 0, 1024)?;
        range("cluster", self.cluster, 0, 9)?;
        Ok(())
    }

    /// The cluster options: sdnlab's cluster or Faucet's, or one at addresses, and the tests each takes.
    fn check_cluster(&self) -> Result<(), LabError> {
        if !self.target_members.is_empty() {
            if self.target != self.target_members.first().copied() {
                return Err(
                    Conflict::new("the first member must be the target (--target A,B,C sets both)")
                        .flag("target-members")
                        .flag("target")
                        .into(),
                );
            }
            if self.cluster > 0 {
                return Err(Conflict::new(
                    "a target of several addresses is a cluster there; --cluster N starts sdnlab's own: give one of them",
                )
                .with("target", self.members_given())
                .with("cluster", self.cluster)
                .into());
            }
            if self.test == CtlTest::Failover {
                return Err(Conflict::new(
                    "a cluster at addresses takes every test but failover so far; give one address",
                )
                .with("target", self.members_given())
                .with("test", self.test)
                .into());
            }
        }
        if self.cluster == 1 && self.test == CtlTest::Failover {
            return Err(Conflict::new("a failover needs a member to take over; give 2 or more")
                .with("cluster", 1)
                .with("test", CtlTest::Failover)
                .into());
        }
        let faucet = self.all_peers().any(|p| p == Name::Faucet);
        if self.cluster > 0
            && (self.target.is_some()
                || self.all_peers().any(|p| !matches!(p, Name::Sdnlab | Name::Faucet))
                || (faucet && self.all_peers().any(|p| p == Name::Sdnlab)))
        {
            return Err(Conflict::new(
                "a cluster is of sdnlab's controller (or, with --peer faucet, of Faucet): leave out --target and other peers",
            )
            .with("cluster", self.cluster)
            .into());
        }
        if self.cluster > 0 && faucet && (self.test != CtlTest::Cbench || self.suite.is_some()) {
            return Err(Conflict::new(format!(
                "Faucet's cluster takes cbench's load only (it has no topology discovery or northbound API sdnlab can drive); leave out --test{}",
                if self.suite.is_some() { " and --suite" } else { "" }
            ))
            .with("peer", "faucet")
            .with("cluster", self.cluster)
            .into());
        }
        Ok(())
    }

    /// The load's and the cluster's numbers and choices (ports, rates, trials, attackers, etcd, slaves' PACKET_INs).
    fn check_load(&self) -> Result<(), LabError> {
        range("ports", self.ports, 1, 0xff00)?;
        real("connect-rate", self.connect_rate, 0.0, 1e9)?;
        real("malformed-percent", self.malformed_percent, 0.0, 100.0)?;
        range("trials", self.trials, 1, 100_000)?;
        real("rate-tolerance", self.rate_tolerance, 0.001, 0.5)?;
        range("attackers", self.attackers, 1, 100_000)?;
        real("flood-pps", self.flood_pps, 0.0, 1e9)?;
        range("syn-flood-pps", self.syn_flood_pps, 0, 100_000_000)?;
        range("td-s", self.td_s, 1, 86_400)?;
        range("host-macs", self.host_macs, 1, u16::MAX)?;
        let sweeps_clusters = self.sweeps_clusters();
        if ![1, 3, 5].contains(&self.etcd_members) {
            return Err(ParamError::new(
                "etcd-members",
                self.etcd_members,
                "give 1, 3 or 5 (an odd count keeps a quorum)",
            )
            .into());
        }
        if self.etcd_members != 1 && self.cluster == 0 && !sweeps_clusters {
            return Err(
                Conflict::new("an option of sdnlab's cluster: add --cluster N (or --sweep cluster=...)")
                    .with("etcd-members", self.etcd_members)
                    .into(),
            );
        }
        if self.slave_packet_ins != SlavePacketIns::All
            && (self.all_peers().any(|p| p != Name::Sdnlab) || (self.cluster == 0 && !sweeps_clusters))
        {
            return Err(Conflict::new(
                "an option of sdnlab's cluster (no other peer): add --cluster N (or --sweep cluster=...)",
            )
            .with("slave-packet-ins", self.slave_packet_ins)
            .into());
        }
        Ok(())
    }

    /// The sweep (what each test sweeps) and the kills (which member, after which loop).
    fn check_sweep_and_kills(&self) -> Result<(), LabError> {
        if let Some(sweep) = &self.sweep {
            let topology = self.test.on_a_fabric();
            let by_cluster = topology || self.test == CtlTest::Sessions;
            let sweepable =
                matches!(self.test, CtlTest::Cbench | CtlTest::Rate) || (by_cluster && self.sweeps_clusters());
            if !sweepable {
                return Err(Conflict::new(if by_cluster {
                    "this test sweeps cluster sizes only (--sweep cluster=0,1,3,5)"
                } else {
                    "this test takes no sweep (cbench and rate do)"
                })
                .with("sweep", format!("'{sweep}'"))
                .with("test", self.test)
                .into());
            }
            if by_cluster {
                if self.test == CtlTest::DiscoverySize {
                    return Err(Conflict::new("this test grows the fabric itself; give one --cluster N")
                        .with("sweep", format!("'{sweep}'"))
                        .with("test", self.test)
                        .into());
                }
                if self.cluster > 0 || self.target.is_some() {
                    return Err(
                        Conflict::new("this sweeps sdnlab's cluster sizes: leave out --cluster and --target")
                            .with("sweep", format!("'{sweep}'"))
                            .into(),
                    );
                }
                let sizes = self.cluster_sizes()?;
                if self.test == CtlTest::Failover && sizes.contains(&1) {
                    return Err(Conflict::new(
                        "a cluster of 1 has no member to take over; give 0 (the active/standby pair) or 2 and more",
                    )
                    .with("sweep", format!("'{sweep}'"))
                    .with("test", self.test)
                    .into());
                }
            }
        }
        if let Some(k) = self.kill_after_loop {
            if self.test != CtlTest::Cbench || self.cluster < 2 || self.sweeps_clusters() {
                return Err(Conflict::new(
                    "it kills a member of a cluster during cbench's loops: add --cluster N (2 or more; sdnlab's or --peer faucet's), with the cbench test and no sweep of cluster sizes",
                )
                .with("kill-after-loop", k)
                .into());
            }
            if k == 0 || k as usize >= self.loops {
                return Err(Conflict::new(
                    "must be at least 1 and under the loops, so loops are measured before and after",
                )
                .with("kill-after-loop", k)
                .with("loops", self.loops)
                .into());
            }
        }
        if self.kill == Kill::NonMaster && (self.test != CtlTest::Failover || self.cluster < 2) {
            return Err(Conflict::new(
                "the control of a cluster's failover: add --test failover --cluster N (2 or more)",
            )
            .with("kill", "non-master")
            .into());
        }
        Ok(())
    }

    /// The topology tests' parameters, the fabrics, the northbound adapter, the scenarios and the apps.
    fn check_tests(&self) -> Result<(), LabError> {
        range("reprov-interval-us", self.reprov_interval_us, 100, 60_000_000)?;
        range("reprov-ms", self.reprov_ms, 500, 3_600_000)?;
        range("table-step", self.table_step, 1, u16::MAX)?;
        range("table-max", self.table_max, 1, u16::MAX)?;
        range("max-switches", self.max_switches, 4, 1_000_000)?;
        range("max-sessions", self.max_sessions, 1, 10_000_000)?;
        range("case-wait-ms", self.case_wait_ms, 100, 3_600_000)?;
        range("hello-wait-s", self.hello_wait_s, 1, 3600)?;
        for f in &self.fabrics {
            super::topology::parse_fabric(f)?;
        }
        if let Some(nb) = &self.northbound {
            ctlbench::northbound::Northbound::parse(nb)?;
        }
        super::scenarios(self)?;
        if self.test.on_a_fabric() {
            super::topology::check(self)?;
        }
        if self.target.is_none() && self.peers.is_empty() && self.peer.is_none() {
            controller::catalog::build(&self.app.split(',').collect::<Vec<_>>())?;
        }
        Ok(())
    }

    /// The OpenFlow version byte of `ofp`.
    pub fn version(&self) -> u8 {
        self.ofp.version()
    }

    /// The cluster sizes `sweep` names (`cluster=0,1,3,5`; 0 is
    /// standalone), for the tests that sweep nothing else (the topology
    /// tests, sessions); empty when it sweeps no cluster sizes.
    pub fn cluster_sizes(&self) -> Result<Vec<usize>, LabError> {
        if !self.sweeps_clusters() {
            return Ok(Vec::new());
        }
        // The sweep's one parser: the controller benchmark's scenarios,
        // each a cluster of that many members.
        Ok(super::scenarios(self)?.iter().map(|(_, c)| c.members.len()).collect())
    }

    /// Every peer the run names: `--peer`'s, and the one a trial starts.
    fn all_peers(&self) -> impl Iterator<Item = Name> + '_ {
        self.peers.iter().chain(&self.peer).copied()
    }

    /// The target's addresses as `--target` gives them: `A,B,C`.
    fn members_given(&self) -> String {
        let all: Vec<String> = self.target_members.iter().map(|a| a.to_string()).collect();
        all.join(",")
    }

    /// Whether `sweep` sweeps cluster sizes (`cluster=0,1,3,5`).
    pub fn sweeps_clusters(&self) -> bool {
        self.sweep
            .as_deref()
            .is_some_and(|s| s.trim_start().starts_with("cluster"))
    }

    /// Whether sdnlab starts its own controller in this process for each trial.
    pub fn embedded(&self) -> bool {
        self.target.is_none() && self.peer.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Experiment;

    #[test]
    fn the_defaults_are_valid_and_survive_a_file() {
        let c = CtlConfig::default();
        c.validate().unwrap();
        let e = Experiment::Ctl(c);
        let text = e.to_toml();
        assert_eq!(Experiment::parse(&text).unwrap(), e);
        // Every parameter is written out, resolved.
        for field in ["switches = 16", "macs = 1000", "trials = 10", "mode = \"throughput\""] {
            assert!(text.contains(field), "{field} missing:\n{text}");
        }
    }

    #[test]
    fn a_file_names_only_what_differs_and_gets_the_rest_by_default() {
        let e = Experiment::parse("experiment = \"ctl\"\nswitches = 4\nsweep = \"macs=2,4\"\n").unwrap();
        let Experiment::Ctl(c) = e else {
            panic!("a ctl file read as {e:?}")
        };
        assert_eq!(c.switches, 4);
        assert_eq!(c.sweep.as_deref(), Some("macs=2,4"));
        assert_eq!(c.trials, CtlConfig::default().trials);
    }

    #[test]
    fn a_misspelt_parameter_or_experiment_is_refused_in_one_line() {
        for (text, says) in [
            ("experiment = \"ctl\"\nswitchs = 4\n", "switchs"),
            ("experiment = \"ctrl\"\n", "ctrl"),
            ("switches = 4\n", "experiment"),
            ("experiment = \"ctl\"\nswitches = \"four\"\n", "line 2"),
            (
                "experiment = \"ctl\"\nmode = \"fast\"\n",
                "line 2: mode = 'fast': choose one of throughput, latency",
            ),
            (
                "experiment = \"ctl\"\nofp = \"1.4\"\n",
                "line 2: ofp = '1.4': did you mean '1.3'? choose one of 1.0, 1.3",
            ),
        ] {
            let e = Experiment::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    /// Every numeric parameter refuses a value out of its range with one
    /// line naming the flag and the range; none is silently clamped.
    #[test]
    fn every_numeric_parameter_out_of_range_is_named() {
        type Set = fn(&mut CtlConfig);
        let cases: Vec<(&str, Set)> = vec![
            ("--switches 0", |c| c.switches = 0),
            ("--macs 0", |c| c.macs = 0),
            ("--macs 1", |c| c.macs = 1),
            ("--macs 65536", |c| c.macs = 65536),
            ("--loops 0", |c| c.loops = 0),
            ("--loop-ms 0", |c| c.loop_ms = 0),
            ("--window 0", |c| c.window = 0),
            ("--ports 0", |c| c.ports = 0),
            ("--connect-rate -1", |c| c.connect_rate = -1.0),
            ("--connect-rate NaN", |c| c.connect_rate = f64::NAN),
            ("--malformed-percent 101", |c| c.malformed_percent = 101.0),
            ("--malformed-percent -1", |c| c.malformed_percent = -1.0),
            ("--trials 0", |c| c.trials = 0),
            ("--rate-tolerance 0", |c| c.rate_tolerance = 0.0),
            ("--attackers 0", |c| c.attackers = 0),
            ("--flood-pps -5", |c| c.flood_pps = -5.0),
            ("--flood-pps inf", |c| c.flood_pps = f64::INFINITY),
            ("--td-s 0", |c| c.td_s = 0),
            ("--host-macs 0", |c| c.host_macs = 0),
            ("--reprov-interval-us 0", |c| c.reprov_interval_us = 0),
            ("--reprov-ms 0", |c| c.reprov_ms = 0),
            ("--table-step 0", |c| c.table_step = 0),
            ("--table-max 0", |c| c.table_max = 0),
            ("--max-switches 0", |c| c.max_switches = 0),
            ("--max-sessions 0", |c| c.max_sessions = 0),
            ("--case-wait-ms 0", |c| c.case_wait_ms = 0),
            ("--hello-wait-s 0", |c| c.hello_wait_s = 0),
        ];
        for (says, set) in cases {
            let mut c = CtlConfig::default();
            set(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.is_usage());
            let text = e.to_string();
            assert!(text.starts_with(says), "{says}: {text}");
            assert!(text.contains("at least") && text.contains("at most"), "{text}");
            assert_eq!(text.lines().count(), 1);
        }
    }

    #[test]
    fn sweeps_and_choices_are_checked_before_anything_runs() {
        for (set, says) in [
            (
                (|c: &mut CtlConfig| c.sweep = Some("switches=1,0".into())) as fn(&mut CtlConfig),
                "switches 0 is out of range",
            ),
            (|c| c.sweep = Some("colour=1".into()), "cannot sweep 'colour'"),
            (|c| c.fabrics = vec!["ring,3".into()], "--fabric 'ring,3'"),
            (|c| c.quick = true, "--quick"),
            (
                |c| {
                    c.test = CtlTest::Discovery;
                    c.target = Some(([127, 0, 0, 1], 6653).into());
                },
                "needs --northbound",
            ),
        ] {
            let mut c = CtlConfig::default();
            set(&mut c);
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(says), "{says}: {e}");
        }
    }
}
