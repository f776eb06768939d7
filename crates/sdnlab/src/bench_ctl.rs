//! `sdnlab bench ctl`: the controller benchmark's command line. It only
//! parses: the flags map onto `lab::ctl::CtlConfig` (whose defaults they
//! show), and `lab` runs the experiment.

use clap::Args;
use lab::ctl::CtlConfig;
use std::path::PathBuf;

#[derive(Args, Clone)]
#[command(allow_negative_numbers = true)]
pub struct CtlArgs {
    /// Real controllers to compare, installed (when missing), started and stopped by sdnlab:
    /// sdnlab, ovs-testcontroller, os-ken, ryu, faucet (OpenFlow 1.3; cbench, rate and dos tests)
    /// (repeatable; one run each, then one comparison).
    #[arg(long = "peer", value_name = "PEER", value_parser = lab::peers::NAMES, conflicts_with = "target")]
    pub peers: Vec<String>,
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
    #[arg(long, default_value = "cbench", value_parser = ["cbench", "security", "sessions", "rate", "dos",
        "discovery", "discovery-size", "reactive-paths", "proactive-paths", "change-detection",
        "reprovisioning", "table-capacity", "table-capacity-proactive", "failover"])]
    pub test: String,
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
    #[arg(long = "failure", value_parser = ["link", "switch"])]
    pub failures: Vec<String>,
    /// failover with --cluster: kill the master of the switch the traffic needs, or a
    /// non-master (the control: the traffic should not notice).
    #[arg(long, value_parser = ["master", "non-master"], default_value = "master")]
    pub kill: String,
    /// cbench against a cluster (--cluster N, sdnlab's or --peer faucet's instances): kill
    /// (SIGKILL) the first member after this many measured loops; the loops after it show
    /// what the others answer alone.
    #[arg(long, value_name = "K")]
    pub kill_after_loop: Option<u32>,
    /// sdnlab's cluster: its slaves ask for every PACKET_IN (all: they know the network at a
    /// takeover) or none (each PACKET_IN handled by its master alone).
    #[arg(long, value_parser = ["all", "none"], default_value = "all")]
    pub slave_packet_ins: String,
    /// sdnlab's cluster: the members of its etcd (1, 3 or 5), started for each trial.
    #[arg(long, default_value_t = CtlConfig::default().etcd_members)]
    pub etcd_members: usize,
    /// reprovisioning and failover: one frame (each way) every this many microseconds, for --reprov-ms.
    #[arg(long, default_value_t = CtlConfig::default().reprov_interval_us)]
    pub reprov_interval_us: u64,
    #[arg(long, default_value_t = CtlConfig::default().reprov_ms)]
    pub reprov_ms: u64,
    /// table-capacity(-proactive): destinations added per step, and at most (up to 65535).
    #[arg(long, default_value_t = CtlConfig::default().table_step)]
    pub table_step: u16,
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
    /// Controller to measure; default: sdnlab's own, started in this process for each trial.
    /// A cluster at addresses: HOST:PORT,HOST:PORT,... (RFC 8456's cluster mode: every
    /// emulated switch connects to each member).
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT...]", value_delimiter = ',', value_parser = crate::hostport::parse)]
    pub target: Vec<std::net::SocketAddr>,
    /// App of the embedded controller (l2-learning, hub, null, ...).
    #[arg(long, default_value = "l2-learning")]
    pub app: String,
    /// Emulated switches.
    #[arg(long, default_value_t = CtlConfig::default().switches)]
    pub switches: usize,
    /// Host MAC addresses per switch.
    #[arg(long, default_value_t = CtlConfig::default().macs)]
    pub macs: usize,
    #[arg(long, default_value = "throughput", value_parser = ["throughput", "latency"])]
    pub mode: String,
    #[arg(long, default_value = "1.0", value_parser = ["1.0", "1.3"])]
    pub ofp: String,
    /// Measured loops per trial.
    #[arg(long, default_value_t = CtlConfig::default().loops)]
    pub loops: usize,
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
    /// Ports each emulated switch reports.
    #[arg(long, default_value_t = CtlConfig::default().ports)]
    pub ports: u32,
    /// Datapath id of the first emulated switch (the others follow).
    #[arg(long, default_value_t = CtlConfig::default().first_dpid)]
    pub first_dpid: u64,
    /// Tag the emulated switches' PACKET_IN frames with this 802.1Q VLAN id (1-4094). With
    /// --peer faucet they carry its ports' native VLAN, 100, unless this says otherwise.
    #[arg(long, value_name = "VID")]
    pub vlan: Option<u16>,
    /// How answers are matched to PACKET_INs: buffer (cbench's: a FLOW_MOD or PACKET_OUT with
    /// the PACKET_IN's buffer id) or new-source (OpenFlow 1.3: every PACKET_IN a source never
    /// sent before, answered by the first FLOW_MOD naming it, as Faucet learns). Default:
    /// new-source for --peer faucet, else buffer.
    #[arg(long, value_name = "HOW", value_parser = ["buffer", "new-source"])]
    pub match_by: Option<String>,
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
    /// Where the run's results go (default results/ctl-<time>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run the emulated switches on the workers of this inventory (needs --target: the
    /// controller they reach, or --cluster N: sdnlab's members and their etcd started on the
    /// workers; docs/manual/workers.md).
    #[arg(long, value_name = "FILE")]
    pub workers: Option<PathBuf>,
    /// Print cbench's own lines (per loop, and its RESULT line per scenario).
    #[arg(long)]
    pub cbench_output: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run a whole methodology: rfc8456 (every test the target supports, one report).
    #[arg(long, value_parser = ["rfc8456"])]
    pub suite: Option<String>,
    /// Print the experiment file these options describe (every parameter resolved) and exit:
    /// `sdnlab run FILE` runs it.
    #[arg(long)]
    pub print_config: bool,
    /// With --suite: small fabrics and at most 3 trials (a smoke run).
    #[arg(long, requires = "suite")]
    pub quick: bool,
}

impl CtlArgs {
    /// The experiment these flags describe (not yet validated).
    pub fn config(&self) -> CtlConfig {
        CtlConfig {
            test: self.test.clone(),
            suite: self.suite.clone(),
            quick: self.quick,
            target: self.target.first().copied(),
            target_members: if self.target.len() > 1 {
                self.target.clone()
            } else {
                Vec::new()
            },
            peers: self.peers.clone(),
            app: self.app.clone(),
            ofp: self.ofp.clone(),
            mode: self.mode.clone(),
            switches: self.switches,
            macs: self.macs,
            loops: self.loops,
            loop_ms: self.loop_ms,
            warmup: self.warmup,
            cooldown_ms: self.cooldown_ms,
            window: self.window,
            ports: self.ports,
            first_dpid: self.first_dpid,
            connect_rate: self.connect_rate,
            malformed_percent: self.malformed_percent,
            trials: self.trials,
            sweep: self.sweep.clone(),
            rate_tolerance: self.rate_tolerance,
            attackers: self.attackers,
            flood_pps: self.flood_pps,
            syn_flood_pps: self.syn_flood_pps,
            fabrics: self.fabrics.clone(),
            northbound: self.northbound.clone(),
            td_s: self.td_s,
            host_macs: self.host_macs,
            failures: self.failures.clone(),
            kill: self.kill.clone(),
            kill_after_loop: self.kill_after_loop,
            slave_packet_ins: self.slave_packet_ins.clone(),
            etcd_members: self.etcd_members,
            reprov_interval_us: self.reprov_interval_us,
            reprov_ms: self.reprov_ms,
            table_step: self.table_step,
            table_max: self.table_max,
            max_switches: self.max_switches,
            max_sessions: self.max_sessions,
            case_wait_ms: self.case_wait_ms,
            hello_wait_s: self.hello_wait_s,
            peer: None,
            vlan: self.vlan,
            match_by: self.match_by.clone(),
            driver_threads: self.driver_threads,
            cluster: self.cluster,
        }
    }
}

/// `sdnlab bench ctl`: the flags as an experiment, printed or run.
pub fn run(a: CtlArgs) -> std::process::ExitCode {
    let experiment = lab::Experiment::Ctl(a.config());
    let how = crate::run_cmd::Show {
        json: a.json,
        cbench_output: a.cbench_output,
        print_config: a.print_config,
    };
    crate::run_cmd::run_on(&experiment, a.out.clone(), a.workers.clone(), how)
}
