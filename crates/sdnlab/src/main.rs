//! The `sdnlab` command line: parses arguments and dispatches to the
//! library crates. Every user error is one line on stderr, never a backtrace.

mod bench_ctl;
mod bench_dp;
mod bench_fidelity;
mod bench_gen;
mod bench_lb;
mod bench_ref;
mod bench_switch;
mod hostport;
mod net_cmd;
mod run_cmd;
mod worker_cmd;

use clap::{Args, Parser, Subcommand};
use ofwire::capture::{self as ofp_decode, CaptureDecoder, Record};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sdnlab",
    version,
    about = "Evaluate SDN controllers, switches and applications (OpenFlow 1.0/1.3)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Plain progress lines instead of the live view, even on a terminal
    /// (a non-terminal always gets plain lines).
    #[arg(long, global = true)]
    no_live: bool,
    #[command(flatten)]
    log: logging::LogArgs,
}

#[derive(Subcommand)]
enum Command {
    /// OpenFlow wire tools.
    Ofp {
        #[command(subcommand)]
        command: OfpCommand,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Run the sdnlab OpenFlow 1.0/1.3 controller until Ctrl-C.
    #[command(after_help = "Examples:
  sdnlab controller --app l2-learning                      # OpenFlow on 0.0.0.0:6653
  sdnlab controller --app paths --rest 127.0.0.1:8080      # with its REST API
  sdnlab controller --app l2-learning --cluster http://127.0.0.1:2379 --member c1")]
    Controller(Box<ControllerArgs>),
    /// Run the sdnlab userspace OpenFlow 1.3 switch on Linux interfaces until Ctrl-C.
    #[command(after_help = "Examples:
  sdnlab switch --port veth1 --port veth2 --controller tcp:127.0.0.1:6653
  sdnlab switch --ovsdb unix:/var/run/openvswitch/db.sock  # managed with ovs-vsctl")]
    Switch(Box<switchd::SwitchArgs>),
    /// Answer the lb app's questions about this replica (NIC bytes, CPU of its service, open
    /// connections) over UDP on the management network; run it in the replica's namespace.
    Agent(AgentArgs),
    /// Emulated networks in Linux network namespaces.
    Net {
        #[command(subcommand)]
        command: NetCommand,
    },
    /// Run the experiment or suite an experiment file describes (`experiment = "ctl"`, ...;
    /// every run directory keeps its own resolved experiment.toml, so this repeats a run).
    #[command(after_help = "Examples:
  sdnlab bench ctl --mode latency --print-config > latency.toml && sdnlab run latency.toml
  sdnlab run results/<run>/experiment.toml                 # repeat a run exactly
  sdnlab run examples/experiments/rfc8456-quick.toml --out results/suite")]
    Run {
        /// The experiment file (TOML).
        file: PathBuf,
        /// Where the run's results go (default results/<kind>-<time>).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Print the summary as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Print the experiment, every parameter resolved, and exit.
        #[arg(long)]
        print_config: bool,
        /// Spread the run over the workers of this inventory (TOML: credentials, workers or
        /// discover; docs/manual/workers.md).
        #[arg(long, value_name = "FILE")]
        workers: Option<PathBuf>,
    },
    /// Serve a coordinator (`sdnlab run --workers`) on this machine, as root: bring up its part
    /// of a topology, VXLAN tunnels to the other workers, run what it asks, tear down when told,
    /// when it goes or after its lease.
    Worker(worker_cmd::WorkerArgs),
    /// Make a lab's credentials in DIR: a CA, the workers' certificate and the coordinator's.
    Credentials {
        /// Where they go (must not hold a CA yet).
        dir: PathBuf,
    },
    /// Rebuild the report of one run (or suite), show several side by side, or
    /// `sdnlab report compare BASE OTHER...`: each run's change against the first per
    /// metric, with its significance (Mann-Whitney U, Holm-corrected).
    #[command(after_help = "Examples:
  sdnlab report results/<run>                              # rebuild its report.html
  sdnlab report results/<run-a> results/<run-b>            # side by side
  sdnlab report compare results/<before> results/<after>   # each metric's change, with p")]
    Report {
        /// Run directories (results/...).
        #[arg(required = true)]
        runs: Vec<std::path::PathBuf>,
        /// Where the combined report goes (default: the run's own directory
        /// for one run, results/compare-<time> for several).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Controller benchmark (cbench modes, responses matched to requests, trials and sweeps, report).
    #[command(after_help = "Examples:
  sdnlab bench ctl                                         # sdnlab's controller, cbench's throughput mode
  sdnlab bench ctl --mode latency --peer sdnlab --peer os-ken
  sdnlab bench ctl --target 127.0.0.1:6653 --ofp 1.3       # any controller at an address
  sdnlab bench ctl --test discovery --fabric leaf-spine,2,4,1 --cluster 3
  sdnlab bench ctl --suite rfc8456 --quick --peer sdnlab --peer os-ken")]
    Ctl(Box<bench_ctl::CtlArgs>),
    /// Switch forwarding side by side: sdnlab's switch, Open vSwitch (system and afxdp ports),
    /// the Linux bridge and a direct veth pair; zero-loss rate, TCP, a million rules, FLOW_MOD rate.
    #[command(after_help = "Examples:
  sdnlab bench switch --quick
  sdnlab bench switch --dut sdnlab-fastpath,ovs-afxdp,xdp-patch,veth --rules 0,1000000")]
    Switch(Box<bench_switch::SwitchBenchArgs>),
    /// Traffic generators flat out into a veth, side by side: sdnlab's XDP and AF_PACKET
    /// generators, trafgen and tcpreplay.
    #[command(after_help = "Examples:
  sdnlab bench gen --seconds 5 --rounds 3")]
    Gen(Box<bench_gen::GenBenchArgs>),
    /// sdnlab's emulation against Mininet's on the same experiment: linear topologies,
    /// TCP and UDP throughput (iperf3), loss as the UDP rate rises, ping RTT, each trial
    /// watched for a saturated host and given its operational bound.
    #[command(after_help = "Examples:
  sdnlab bench fidelity --quick")]
    Fidelity(Box<bench_fidelity::FidelityBenchArgs>),
    /// Switches by RFC 2544 / RFC 9004, frame size by frame size: throughput (confirmed at full
    /// duration), latency of every frame at that rate, frame loss rate.
    #[command(after_help = "Examples:
  sdnlab bench dp --quick --dut sdnlab,ovs,bridge
  sdnlab bench dp --dut sdnlab --frames 64,1518 --tests throughput,latency")]
    Dp(Box<bench_dp::DpBenchArgs>),
    /// Load balancing for a virtual IP: the lb app's policies compared under HTTP load
    /// (four nginx replicas, httperf and an open-loop client), as the load-balancing paper measured them (docs/manual/lb.md).
    #[command(after_help = "Examples:
  sdnlab bench lb --quick
  sdnlab bench lb --policy round-robin,load --concurrency 60,120")]
    Lb(Box<bench_lb::LbBenchArgs>),
    /// The reference pair the controller benchmark is held to: a minimal load generator and
    /// null responder in C (crates/ofref).
    Ref {
        #[command(subcommand)]
        command: bench_ref::RefCommand,
    },
}

#[derive(Args)]
struct ControllerArgs {
    /// Address to listen on (repeatable). Default: [::]:6653 and [::]:6633 (IPv4 too).
    #[arg(long = "listen", value_name = "ADDR:PORT")]
    listen: Vec<std::net::SocketAddr>,
    /// Application to run (repeatable, in order): l2-learning, hub, topology, paths, paths-proactive,
    /// null, lb (needs --lb-config; l2-learning is added after it when not named).
    #[arg(long = "app", value_name = "APP")]
    apps: Vec<String>,
    /// The lb app's configuration (TOML: [vip], [[replica]], policy; docs/manual/lb.md).
    #[arg(long, value_name = "FILE")]
    lb_config: Option<std::path::PathBuf>,
    /// Address of the REST API (JSON over HTTP).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    rest: std::net::SocketAddr,
    /// Do not serve the REST API.
    #[arg(long, conflicts_with = "rest")]
    no_rest: bool,
    /// The REST API's token, on the first line of this file (at least 16 characters);
    /// without it a token is made and printed at start. Writes need `Authorization: Bearer
    /// TOKEN`.
    #[arg(long, value_name = "FILE")]
    rest_token_file: Option<std::path::PathBuf>,
    /// Reads need the token too (by default they are open).
    #[arg(long)]
    rest_closed_reads: bool,
    /// A name the REST API may be reached by (the Host header; repeatable). Its address,
    /// IP literals and, on loopback, localhost are always accepted.
    #[arg(long = "rest-host", value_name = "NAME")]
    rest_hosts: Vec<String>,
    /// An origin a browser may call the REST API from (CORS; repeatable). None by default.
    #[arg(long = "rest-cors", value_name = "ORIGIN")]
    rest_cors: Vec<String>,
    /// Serve the REST API over HTTPS with this certificate chain (PEM); needs --rest-tls-key.
    #[arg(long, value_name = "FILE", requires = "rest_tls_key")]
    rest_tls_cert: Option<std::path::PathBuf>,
    /// The REST API's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "rest_tls_cert")]
    rest_tls_key: Option<std::path::PathBuf>,
    /// Address where switches connect over TLS (repeatable; OVS `ssl:`). Needs --tls-cert and --tls-key.
    #[arg(long = "tls-listen", value_name = "ADDR:PORT", requires_all = ["tls_cert", "tls_key"])]
    tls_listen: Vec<std::net::SocketAddr>,
    /// The controller's certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_listen")]
    tls_cert: Option<std::path::PathBuf>,
    /// The controller's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_listen")]
    tls_key: Option<std::path::PathBuf>,
    /// Require switch certificates signed by this CA (PEM); without it any switch may connect.
    #[arg(long, value_name = "FILE", requires = "tls_listen")]
    tls_ca: Option<std::path::PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    workers: Option<u16>,
    /// Of those, how many take switches that connect from this machine (a loopback address or
    /// the one they connected to), whose emulation shares its cores (default: half the workers,
    /// at least one; switches from other machines go to every worker).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    local_workers: Option<u16>,
    /// Switch connections held at once (default: the open-file limit, raised to its hard
    /// value, less an eighth of it, at most 128); a newcomer over the limit takes the place of the oldest connection
    /// still in its handshake, or is refused.
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Of those, how many from one address (default: all of them: an emulated network's
    /// switches come from one address).
    #[arg(long, value_name = "N")]
    max_per_address: Option<usize>,
    /// OpenFlow versions to offer.
    #[arg(long, value_delimiter = ',', default_value = "1.0,1.3", value_parser = ["1.0", "1.3"])]
    ofp: Vec<String>,
    /// Log sessions and malformed messages.
    #[arg(long, short)]
    verbose: bool,
    /// Run as the standby of the active controller whose REST API is at this address: a SLAVE
    /// (OpenFlow 1.3 roles) that learns what the active one sees and takes over as MASTER when
    /// that address stops accepting connections.
    #[arg(long, value_name = "HOST:PORT", value_parser = hostport::parse)]
    standby_for: Option<std::net::SocketAddr>,
    /// Run as a member of a cluster coordinated through etcd at these client URLs (comma
    /// separated, e.g. http://127.0.0.1:2379): every switch connects to every member, each
    /// switch's master is elected in etcd (OpenFlow 1.3 roles), the others are SLAVEs.
    #[arg(
        long,
        value_name = "URLS",
        value_delimiter = ',',
        requires = "member",
        conflicts_with = "standby_for"
    )]
    cluster: Vec<String>,
    /// This member's name, unique in the cluster (with --cluster).
    #[arg(long, value_name = "NAME", requires = "cluster")]
    member: Option<String>,
    /// The cluster's name: clusters sharing one etcd keep apart by it (with --cluster).
    #[arg(long, value_name = "NAME", default_value = "default", requires = "cluster")]
    cluster_name: String,
    /// As a SLAVE, ask the switches for every PACKET_IN (all: the apps know the network
    /// at a takeover; none: OpenFlow's default, the cluster not paying every PACKET_IN once
    /// per member) (with --cluster).
    #[arg(long, value_parser = ["all", "none"], default_value = "all", requires = "cluster")]
    slave_packet_ins: String,
}

#[derive(Subcommand)]
enum NetCommand {
    /// Bring a network up and keep it up until Ctrl-C, SIGTERM or `net down`.
    #[command(after_help = "Examples:
  sdnlab net up linear,4                                    # Linux bridges, until Ctrl-C
  sdnlab net up tree,2,3 --switch ovs --app l2-learning --detach && sdnlab net pingall
  sdnlab net up tree,2,3 --cli                              # as Mininet: OVS, a controller, a prompt
  sdnlab net up linear,4 --switch ovs --app paths --cluster 3")]
    Up {
        /// single,N | linear,N | tree,DEPTH,FANOUT | leaf-spine,SPINES,LEAVES,HOSTS_PER_LEAF | FILE.toml
        spec: String,
        /// Switch kind: bridge (Linux bridge), ovs (Open vSwitch, userspace datapath) or sdnlab.
        /// Default: bridge; with --cli, as Mininet: ovs, with sdnlab's l2-learning controller
        /// unless --controller or --app names one.
        #[arg(long = "switch", value_parser = parse_kind)]
        kind: Option<netlab::run::SwitchKind>,
        /// Controller for the OpenFlow switches: HOST:PORT, tcp:HOST:PORT or ssl:HOST:PORT; several, comma separated, for a cluster (every switch connects to each)
        #[arg(long, conflicts_with = "app")]
        controller: Option<String>,
        /// For an ssl: controller: the switches' private key, certificate and CA certificate (PEM).
        #[arg(long, value_names = ["KEY", "CERT", "CACERT"], num_args = 3)]
        ssl: Option<Vec<std::path::PathBuf>>,
        /// Start sdnlab's built-in controller with this app.
        #[arg(long)]
        app: Option<String>,
        /// With --app: run it as a cluster of N members (c1..cN) on an etcd of the run's own;
        /// every switch connects to each, one master per switch (GET /cluster on any member).
        #[arg(long, value_name = "N", requires = "app")]
        cluster: Option<usize>,
        /// With --cluster: as a SLAVE, ask the switches for every PACKET_IN (all) or for none
        /// (each switch's master alone handles them; refused with apps that discover links).
        #[arg(long, value_parser = ["all", "none"], default_value = "all", requires = "cluster")]
        slave_packet_ins: String,
        /// Keep redundant switch links up (for controllers that handle loops).
        #[arg(long)]
        keep_loops: bool,
        /// Open the sdnlab> prompt once the network is up (`help` lists its
        /// commands); leaving it takes the network down.
        #[arg(long)]
        cli: bool,
        /// With --cli: leave the network up when the prompt ends.
        #[arg(long, requires = "cli")]
        keep: bool,
        /// Return once the network is up, leaving it running in the background (as `&` would,
        /// but the next command finds it up): `sdnlab net up tree,2,3 --switch ovs --detach &&
        /// sdnlab net pingall`; `sdnlab net down` takes it down.
        #[arg(long, conflicts_with = "cli")]
        detach: bool,
        /// With --switch sdnlab: one switch process runs every switch, managed through the
        /// run's own ovsdb-server with ovs-vsctl, as Open vSwitch is (`ovs-vsctl
        /// --db=unix:/run/sdnlab/net/ID/ovs/db.sock show`).
        #[arg(long)]
        ovsdb: bool,
    },
    /// Open the sdnlab> prompt on a network already up (the only one, or --id);
    /// leaving it takes the network down unless --keep.
    Cli {
        /// The network (its id, from `sdnlab net show`); needed only when several are up.
        #[arg(long)]
        id: Option<String>,
        /// Leave the network up when the prompt ends.
        #[arg(long)]
        keep: bool,
        /// The controller's REST API for `controller` (HOST:PORT), when the
        /// run did not start its own with --app.
        #[arg(long)]
        rest: Option<String>,
        /// A file holding the token of that REST API, if its reads are closed.
        #[arg(long, requires = "rest")]
        rest_token_file: Option<std::path::PathBuf>,
    },
    /// Tear a network down (the only one, or --id).
    Down {
        /// The network (its id, from `sdnlab net show`); needed only when several are up.
        #[arg(long)]
        id: Option<String>,
    },
    /// Run a command inside a host: `sdnlab net exec h1 -- ping 10.0.0.2`.
    Exec {
        /// The network (its id, from `sdnlab net show`); needed only when several are up.
        #[arg(long)]
        id: Option<String>,
        host: String,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Ping every ordered pair of hosts; exit 0 only if every pair answered.
    Pingall {
        /// The network (its id, from `sdnlab net show`); needed only when several are up.
        #[arg(long)]
        id: Option<String>,
        /// Pings per pair.
        #[arg(long, default_value_t = 3)]
        count: u32,
        /// Every pair's RTTs and losses as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// TCP throughput from host A to host B with iperf3.
    Iperf {
        /// The network (its id, from `sdnlab net show`); needed only when several are up.
        #[arg(long)]
        id: Option<String>,
        a: String,
        b: String,
        #[arg(long, default_value_t = 5)]
        seconds: u32,
        /// One JSON object: iperf3's figures and what the host did (per-core
        /// load, the path's processes, whether the host was the bottleneck).
        #[arg(long)]
        json: bool,
    },
    /// Bring the link between two nodes down or up: `sdnlab net link s1 s2 down`.
    Link {
        /// The network (its id, from `sdnlab net show`); needed only when several are up.
        #[arg(long)]
        id: Option<String>,
        a: String,
        b: String,
        #[arg(value_parser = ["up", "down"])]
        state: String,
    },
    /// What is up.
    Show,
    /// Remove leftovers of any earlier run (found by the sdnlab prefix).
    Clean,
}

fn parse_kind(s: &str) -> Result<netlab::run::SwitchKind, String> {
    s.parse().map_err(|e: netlab::run::UnknownSwitchKind| e.to_string())
}

#[derive(Subcommand)]
enum OfpCommand {
    /// Decode OpenFlow messages from hex, stdin (`-`, one hex stream per line) or a capture.
    Decode(DecodeArgs),
}

#[derive(Args)]
struct DecodeArgs {
    /// Hex strings, each holding one or more whole messages; `-` reads stdin line by line.
    hex: Vec<String>,
    /// Read a pcap or pcapng capture instead.
    #[arg(long, value_name = "FILE", conflicts_with = "hex")]
    pcap: Option<PathBuf>,
    /// TCP ports carrying OpenFlow in the capture (default 6653 and 6633).
    #[arg(long = "port", value_name = "PORT")]
    ports: Vec<u16>,
    /// One JSON object per message instead of text.
    #[arg(long)]
    json: bool,
}

/// Whether a command only prints (a decoder, a report, a listing): it may
/// end quietly when the reader of its output goes away (`| head`), as
/// command-line tools do. Every other command keeps SIGPIPE ignored (Rust's
/// default): a write to a closed socket or pipe is an error where it
/// happens, so no peer (a REST client that resets, a coordinator that
/// vanishes, a child that exits early) can kill a daemon or stop a
/// benchmark before it has removed what it made.
fn only_prints(c: &Command) -> bool {
    matches!(
        c,
        Command::Ofp { .. }
            | Command::Report { .. }
            | Command::Net {
                command: NetCommand::Show
            }
    )
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    if only_prints(&cli.command) {
        // SAFETY: setting a signal's disposition at start-up, before any
        // thread exists (clap starts none).
        unsafe {
            let _ = nix::sys::signal::signal(nix::sys::signal::Signal::SIGPIPE, nix::sys::signal::SigHandler::SigDfl);
        }
    }
    run_cmd::NO_LIVE.store(cli.no_live, std::sync::atomic::Ordering::Relaxed);
    if let Err(e) = logging::init(&cli.log) {
        eprintln!("sdnlab: {e}");
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Ofp {
            command: OfpCommand::Decode(args),
        } => ofp_decode_cmd(args),
        Command::Controller(args) => controller_cmd(*args),
        Command::Switch(args) => switchd::run(*args),
        Command::Agent(args) => agent_cmd(args),
        Command::Bench {
            command: BenchCommand::Ctl(args),
        } => bench_ctl::run(*args),
        Command::Bench {
            command: BenchCommand::Switch(args),
        } => bench_switch::run(*args),
        Command::Bench {
            command: BenchCommand::Gen(args),
        } => bench_gen::run(*args),
        Command::Bench {
            command: BenchCommand::Fidelity(args),
        } => bench_fidelity::run(*args),
        Command::Bench {
            command: BenchCommand::Lb(args),
        } => bench_lb::run(*args),
        Command::Bench {
            command: BenchCommand::Dp(args),
        } => bench_dp::run(*args),
        Command::Bench {
            command: BenchCommand::Ref { command },
        } => bench_ref::run(command),
        Command::Report { runs, out } => report_cmd(&runs, out),
        Command::Run {
            file,
            out,
            json,
            print_config,
            workers,
        } => run_cmd::run_file(
            &file,
            out,
            workers,
            run_cmd::Show {
                json,
                print_config,
                ..Default::default()
            },
        ),
        Command::Worker(args) => worker_cmd::run(args),
        Command::Credentials { dir } => worker_cmd::credentials(&dir),
        Command::Net { command } => {
            let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return net_cmd::fail(format!("cannot start the runtime: {e}")),
            };
            rt.block_on(net(command))
        }
    }
}

use lab::rundir::time_tag;

/// A command line clap refused: its first line (what is wrong), and where
/// to read how to fix it; help and version are printed as clap prints them.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit()
    }
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad command line");
    let mut first = first.strip_prefix("error: ").unwrap_or(first).to_string();
    // "the following required arguments were not provided:" names them on the next line.
    if first.ends_with(':') {
        if let Some(next) = lines.next() {
            first = format!("{first} {next}");
        }
    }
    eprintln!("sdnlab: {first}{} (see --help)", usage_hint(&e));
    ExitCode::from(2)
}

/// What clap knows beside its first line, on the same line: the likely
/// meaning of a misspelt flag, subcommand or value, and the values an
/// option takes ("; did you mean 'os-ken'? (one of: ...)").
fn usage_hint(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let strings = |k: ContextKind| match e.get(k) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        _ => Vec::new(),
    };
    let mut hint = String::new();
    let meant: Vec<String> = [
        ContextKind::SuggestedArg,
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedValue,
    ]
    .into_iter()
    .flat_map(strings)
    .collect();
    if !meant.is_empty() {
        hint.push_str(&format!(
            "; did you mean {}?",
            meant.iter().map(|m| format!("'{m}'")).collect::<Vec<_>>().join(" or ")
        ));
    }
    let valid = strings(ContextKind::ValidValue);
    if !valid.is_empty() {
        hint.push_str(&format!(" (one of: {})", valid.join(", ")));
    }
    hint
}

/// The runs of a directory that holds one run per peer (`bench ctl --peer
/// A --peer B`), in the experiment's order (by name when it does not say);
/// None when it holds none.
fn peer_runs(dir: &std::path::Path) -> Option<Vec<std::path::PathBuf>> {
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("meta.json").is_file())
        .collect();
    if found.is_empty() {
        return None;
    }
    found.sort();
    if let Ok(lab::Experiment::Ctl(c)) = lab::Experiment::load(&dir.join("experiment.toml")) {
        let at = |p: &std::path::PathBuf| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            c.peers.iter().position(|x| *x == name).unwrap_or(usize::MAX)
        };
        found.sort_by_key(at);
    }
    Some(found)
}

fn report_cmd(dirs: &[std::path::PathBuf], out: Option<std::path::PathBuf>) -> ExitCode {
    // `sdnlab report compare BASE OTHER...`: the change of each run against the first.
    if dirs.first().is_some_and(|d| d.as_os_str() == "compare" && !d.exists()) {
        return compare_cmd(&dirs[1..], out);
    }
    // A suite's report is rebuilt in place from its suite.json and runs.
    if let ([dir], None) = (dirs, &out) {
        if report::suite::is_suite(dir) {
            return match report::suite::rebuild(dir) {
                Ok(_) => {
                    eprintln!("sdnlab report: {}", dir.join("report.html").display());
                    ExitCode::SUCCESS
                }
                Err(e) => net_cmd::fail(e),
            };
        }
    }
    // A run against several peers: its own runs, one directory each, in
    // the order the experiment named them; the report rebuilt in place.
    if let ([dir], None) = (dirs, &out) {
        if !dir.join("meta.json").exists() {
            if let Some(parts) = peer_runs(dir) {
                let mut runs = Vec::new();
                for d in &parts {
                    match report::load(d) {
                        Ok(r) => runs.push(r),
                        Err(e) => return net_cmd::fail(e),
                    }
                }
                return match report::write_outputs(dir, &runs) {
                    Ok(summary) => {
                        print!("{}", report::terminal_table(&summary, &report::metrics(&runs)));
                        eprintln!("sdnlab report: {}", dir.join("report.html").display());
                        ExitCode::SUCCESS
                    }
                    Err(e) => net_cmd::fail(e),
                };
            }
        }
    }
    let mut runs = Vec::new();
    for d in dirs {
        match report::load(d) {
            Ok(r) => runs.push(r),
            Err(e) => return net_cmd::fail(format!("{e} (is it a run directory made by sdnlab bench?)")),
        }
    }
    let out = out.unwrap_or_else(|| {
        if runs.len() == 1 {
            dirs[0].clone()
        } else {
            std::path::PathBuf::from("results").join(format!("compare-{}", time_tag()))
        }
    });
    if let Err(e) = std::fs::create_dir_all(&out) {
        return net_cmd::fail(format!("{}: {e}", out.display()));
    }
    match report::write_outputs(&out, &runs) {
        Ok(summary) => {
            print!("{}", report::terminal_table(&summary, &report::metrics(&runs)));
            eprintln!("sdnlab report: {}", out.join("report.html").display());
            ExitCode::SUCCESS
        }
        Err(e) => net_cmd::fail(e),
    }
}

fn compare_cmd(dirs: &[std::path::PathBuf], out: Option<std::path::PathBuf>) -> ExitCode {
    if dirs.len() < 2 {
        return net_cmd::fail(
            "report compare takes a baseline run and at least one other: sdnlab report compare BASE OTHER...",
        );
    }
    let mut runs = Vec::new();
    for d in dirs {
        match report::load(d) {
            Ok(r) => runs.push(r),
            Err(e) => return net_cmd::fail(format!("{e} (is it a run directory made by sdnlab bench?)")),
        }
    }
    let out = out.unwrap_or_else(|| std::path::PathBuf::from("results").join(format!("compare-{}", time_tag())));
    if let Err(e) = std::fs::create_dir_all(&out) {
        return net_cmd::fail(format!("{}: {e}", out.display()));
    }
    match report::compare::write(&out, &runs) {
        Ok(changes) => {
            print!("{}", report::compare::terminal(&changes));
            eprintln!("sdnlab report compare: {}", out.join("report.html").display());
            ExitCode::SUCCESS
        }
        Err(e) => net_cmd::fail(e),
    }
}

#[derive(Args)]
struct AgentArgs {
    /// The replica's data interface, whose transmitted bytes are reported.
    #[arg(long, default_value = "eth0")]
    interface: String,
    /// The service's TCP port: established connections on it are counted.
    #[arg(long, default_value_t = 80)]
    service_port: u16,
    /// UDP address to answer on.
    #[arg(long, default_value = "0.0.0.0:9109")]
    listen: std::net::SocketAddr,
    /// How often the service's CPU use is sampled, milliseconds.
    #[arg(long, default_value_t = 100)]
    cpu_period_ms: u64,
    /// Write the agent's pid here.
    #[arg(long, value_name = "FILE")]
    pidfile: Option<std::path::PathBuf>,
}

fn agent_cmd(args: AgentArgs) -> ExitCode {
    let probe = match lb::agent::Probe::new(&args.interface, args.service_port) {
        Ok(p) => p,
        Err(e) => return net_cmd::fail(e),
    };
    let sock = match std::net::UdpSocket::bind(args.listen) {
        Ok(s) => s,
        Err(e) => return net_cmd::fail(format!("{}: {e} (choose another with --listen)", args.listen)),
    };
    if let Some(p) = &args.pidfile {
        if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
            return net_cmd::fail(format!("--pidfile {}: {e}", p.display()));
        }
    }
    probe.start_cpu_sampler(std::time::Duration::from_millis(args.cpu_period_ms.clamp(10, 60_000)));
    net_cmd::warn_plain_listeners(
        "sdnlab agent",
        &[("load reports (UDP)", args.listen)],
        "it runs inside a replica's namespace, where only that namespace's links reach it; --listen ADDR:PORT narrows it",
    );
    eprintln!(
        "sdnlab agent: answering on udp {} for {} (service port {})",
        args.listen, args.interface, args.service_port
    );
    match lb::agent::serve(&sock, &probe) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => net_cmd::fail(e),
    }
}

/// The controller's apps: the named ones, with `lb` built from its
/// configuration (and `l2-learning` after it for everything else).
fn controller_apps(
    apps: &[String],
    lb_config: Option<&std::path::Path>,
) -> Result<(controller::catalog::AppSet, Option<std::sync::Arc<lb::Lb>>), String> {
    let mut names = if apps.is_empty() {
        vec!["l2-learning".to_string()]
    } else {
        apps.to_vec()
    };
    let Some(at) = names.iter().position(|n| n == "lb") else {
        if lb_config.is_some() {
            return Err("--lb-config is given but not --app lb".into());
        }
        return Ok((controller::catalog::build(&names).map_err(|e| e.to_string())?, None));
    };
    let path = lb_config.ok_or("--app lb needs --lb-config FILE (the VIP, the replicas and the policy)")?;
    let lb = lb::Lb::new(lb::Config::load(path).map_err(|e| e.to_string())?);
    names.remove(at);
    if !names.iter().any(|n| n == "l2-learning") {
        names.insert(at, "l2-learning".into());
    }
    let mut set = controller::catalog::build(&names).map_err(|e| e.to_string())?;
    set.names.insert(at, "lb".into());
    set.factories.insert(at, lb.factory());
    lb.start_tcp_health();
    Ok((set, Some(lb)))
}

fn controller_cmd(args: ControllerArgs) -> ExitCode {
    if args.max_connections == Some(0) {
        return net_cmd::fail("--max-connections 0: give at least 1 (the default follows the open-file limit)");
    }
    if args.max_per_address == Some(0) {
        return net_cmd::fail("--max-per-address 0: give at least 1 (the default is --max-connections)");
    }
    let (set, lb) = match controller_apps(&args.apps, args.lb_config.as_deref()) {
        Ok(s) => s,
        Err(e) => return net_cmd::fail(e),
    };
    let names = set.names.clone();
    // Plain listeners by default only when no TLS listener was asked for.
    let listen = if args.listen.is_empty() && args.tls_listen.is_empty() {
        let dual = std::net::TcpListener::bind("[::]:0").is_ok();
        let host = if dual { "[::]" } else { "0.0.0.0" };
        vec![
            format!("{host}:6653").parse().expect("literal"),
            format!("{host}:6633").parse().expect("literal"),
        ]
    } else {
        args.listen.clone()
    };
    let versions = args
        .ofp
        .iter()
        .map(|v| {
            if v == "1.0" {
                ofwire::OFP10_VERSION
            } else {
                ofwire::OFP13_VERSION
            }
        })
        .collect();
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => match controller::tls::server_config(cert, key, args.tls_ca.as_deref()) {
            Ok(c) => Some(c),
            Err(e) => return net_cmd::fail(e),
        },
        _ => None,
    };
    // A cluster member's own socket (how the others notice its death)
    // listens where its first OpenFlow listener does.
    let member_ip = listen.first().map_or(std::net::Ipv4Addr::LOCALHOST.into(), |a| a.ip());
    let cfg = controller::runtime::Config {
        listen,
        workers: args
            .workers
            .map(usize::from)
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)),
        local_workers: args.local_workers.map(usize::from),
        apps: set.factories.clone(),
        session: ofconn::Config {
            versions,
            ..Default::default()
        },
        verbose: args.verbose,
        tls_listen: args.tls_listen.clone(),
        tls,
        standby_for: args.standby_for,
        cluster: args.member.as_ref().map(|member| {
            let mut c = cluster::Config::new(args.cluster.clone(), member.clone(), (member_ip, 0).into());
            c.cluster = args.cluster_name.clone();
            c.slave_packet_ins = args.slave_packet_ins == "all";
            c
        }),
        limits: (args.max_connections.is_some() || args.max_per_address.is_some()).then(|| {
            let total = args.max_connections.unwrap_or_else(|| {
                ofconn::admission::Limits::for_open_files(controller::runtime::raise_fd_limit()).total
            });
            ofconn::admission::Limits {
                total,
                per_source: args.max_per_address.unwrap_or(total).min(total),
            }
        }),
    };
    let workers = cfg.workers;
    if let Some(l) = cfg.local_workers.filter(|&l| l > workers) {
        return net_cmd::fail(format!(
            "--local-workers {l} is more than the {workers} workers: give at most {workers}, or more --workers"
        ));
    }
    let handle = match controller::runtime::start(cfg) {
        Ok(h) => h,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            return net_cmd::fail(format!("{e} (another controller on the port? use --listen)"))
        }
        Err(e) => return net_cmd::fail(e),
    };
    // In a cluster: the hosts learnt are shared through etcd (and, with the
    // REST API, what it installs).
    if let Err(e) = handle.share_state(&set) {
        return net_cmd::fail(format!("sharing the cluster's state: {e}"));
    }
    let mut addrs: Vec<String> = handle.local_addrs.iter().map(|a| a.to_string()).collect();
    addrs.extend(handle.tls_addrs.iter().map(|a| format!("tls:{a}")));
    let mut plain: Vec<(&str, std::net::SocketAddr)> = handle.local_addrs.iter().map(|a| ("OpenFlow", *a)).collect();
    if !args.no_rest && args.rest_tls_cert.is_none() {
        plain.push(("the REST API", args.rest));
    }
    net_cmd::warn_plain_listeners(
        "sdnlab controller",
        &plain,
        "switches on other machines can use --tls-listen; --listen 127.0.0.1:6653 and --rest 127.0.0.1:PORT keep it on this one",
    );
    if !args.no_rest {
        let (token, made) = match &args.rest_token_file {
            Some(f) => match controller::rest::token_from_file(f) {
                Ok(t) => (t, false),
                Err(e) => return net_cmd::fail(e),
            },
            None => match controller::rest::new_token() {
                Ok(t) => (t, true),
                Err(e) => return net_cmd::fail(format!("making a REST token: {e}")),
            },
        };
        let tls = match (&args.rest_tls_cert, &args.rest_tls_key) {
            (Some(cert), Some(key)) => match controller::tls::server_config(cert, key, None) {
                Ok(c) => Some(c),
                Err(e) => return net_cmd::fail(format!("--rest-tls-cert/--rest-tls-key: {e}")),
            },
            _ => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let access = controller::rest::Access {
            open_reads: !args.rest_closed_reads,
            hosts: args.rest_hosts.clone(),
            cors: args.rest_cors.clone(),
            tls,
            ..controller::rest::Access::with_token(token.clone())
        };
        match controller::rest::serve(args.rest, handle.clone(), set, access) {
            Ok(a) => eprintln!("sdnlab controller: REST API on {scheme}://{a}/ (see /switches, /topology, /stats)"),
            Err(e) => {
                // Out of the cluster at once (its lease revoked), not when
                // the lease expires: a member started again in its place
                // must not meet its ghost.
                handle.stop();
                return net_cmd::fail(format!("{e} (choose another with --rest, or --no-rest)"));
            }
        }
        if made {
            eprintln!("sdnlab controller: REST API token (writes need Authorization: Bearer TOKEN): {token}");
        }
    }
    eprintln!(
        "sdnlab controller: apps {} on {} ({workers} workers); Ctrl-C stops",
        names.join(","),
        addrs.join(" ")
    );
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return net_cmd::fail(e),
    };
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    });
    handle.stop();
    let s = &handle.stats;
    use std::sync::atomic::Ordering::Relaxed;
    eprintln!(
        "sdnlab controller: stopped; {} sessions, {} messages in, {} out, {} errors sent, {} refused",
        s.sessions_total.load(Relaxed),
        s.messages_in.load(Relaxed),
        s.messages_out.load(Relaxed),
        s.errors_sent.load(Relaxed),
        s.refused.load(Relaxed)
    );
    if let Some(lb) = lb {
        eprintln!(
            "sdnlab lb: {}",
            serde_json::to_string(&lb.snapshot()).unwrap_or_default()
        );
    }
    ExitCode::SUCCESS
}

async fn net(command: NetCommand) -> ExitCode {
    if !matches!(command, NetCommand::Show) && !nix::unistd::Uid::effective().is_root() {
        return net_cmd::fail("`sdnlab net` creates namespaces and interfaces: run it as root");
    }
    if matches!(command, NetCommand::Up { detach: true, .. }) {
        return net_cmd::detach().await;
    }
    match command {
        NetCommand::Up {
            detach: _,
            spec,
            kind,
            controller,
            app,
            keep_loops,
            ssl,
            cli,
            keep,
            ovsdb,
            cluster,
            slave_packet_ins,
        } => {
            let ssl = ssl.map(|f| netlab::run::SslFiles {
                private_key: f[0].clone(),
                certificate: f[1].clone(),
                ca_certificate: f[2].clone(),
            });
            let prompt = cli.then_some(net_cmd::Prompt { keep });
            let (kind, app) = net_cmd::default_switch(kind, cli, controller.is_some(), app);
            let options = netlab::run::UpOptions {
                kind,
                controller,
                keep_loops,
                ssl,
                ovsdb,
                part: None,
            };
            let cluster = cluster.map(|n| (n, slave_packet_ins == "all"));
            net_cmd::up(&spec, options, app, cluster, prompt).await
        }
        NetCommand::Cli {
            id,
            keep,
            rest,
            rest_token_file,
        } => net_cmd::cli(id.as_deref(), keep, rest.as_deref(), rest_token_file.as_deref()).await,
        NetCommand::Down { id } => net_cmd::down(id.as_deref()).await,
        NetCommand::Exec { id, host, command } => net_cmd::exec(id.as_deref(), &host, &command),
        NetCommand::Pingall { id, count, json } => net_cmd::pingall(id.as_deref(), count.max(1), json).await,
        NetCommand::Iperf {
            id,
            a,
            b,
            seconds,
            json,
        } => net_cmd::iperf(id.as_deref(), &a, &b, seconds.max(1), json).await,
        NetCommand::Link { id, a, b, state } => net_cmd::link(id.as_deref(), &a, &b, state == "up").await,
        NetCommand::Show => net_cmd::show(),
        NetCommand::Clean => net_cmd::clean().await,
    }
}

fn ofp_decode_cmd(args: DecodeArgs) -> ExitCode {
    let records = if let Some(path) = &args.pcap {
        let ports = if args.ports.is_empty() {
            vec![6653, 6633]
        } else {
            args.ports.clone()
        };
        let mut dec = CaptureDecoder::new(ports);
        let read = std::fs::read(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
            .and_then(|data| ofp_decode::read_capture(path, &data, &mut dec));
        if let Err(e) = read {
            eprintln!("sdnlab: {e}");
            return ExitCode::from(2);
        }
        if dec.records.is_empty() {
            eprintln!(
                "sdnlab: no OpenFlow messages in {} frames of {} (TCP ports {:?}; use --port to choose others)",
                dec.frames,
                path.display(),
                dec_ports(&args)
            );
            return ExitCode::from(1);
        }
        dec.records
    } else if args.hex.is_empty() {
        eprintln!("sdnlab: give hex messages, `-` to read hex lines from stdin, or --pcap FILE (see `sdnlab ofp decode --help`)");
        return ExitCode::from(2);
    } else {
        let mut recs = Vec::new();
        for (i, h) in args.hex.iter().enumerate() {
            if h == "-" {
                for (n, line) in std::io::stdin().lock().lines().enumerate() {
                    let line = match line {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("sdnlab: reading stdin: {e}");
                            return ExitCode::from(2);
                        }
                    };
                    let t = line.trim();
                    if t.is_empty() || t.starts_with('#') {
                        continue;
                    }
                    recs.extend(ofp_decode::decode_hex(&format!("line {}", n + 1), t));
                }
            } else {
                recs.extend(ofp_decode::decode_hex(&format!("argument {}", i + 1), h));
            }
        }
        recs
    };
    let mut failed = 0;
    let mut out = std::io::stdout().lock();
    for r in &records {
        match r {
            Record::Ok {
                origin,
                message,
                raw_len,
            } => {
                let written = if args.json {
                    let v = serde_json::json!({
                        "at": origin.at,
                        "flow": origin.flow,
                        "version": message.version,
                        "type": message.type_name(),
                        "xid": message.xid,
                        "length": raw_len,
                        "body": message.body,
                    });
                    writeln!(out, "{v}")
                } else {
                    match &origin.flow {
                        Some(f) => writeln!(out, "[{}] {f} {message}", origin.at),
                        None => writeln!(out, "{message}"),
                    }
                };
                if written.is_err() {
                    // The reader went away (e.g. `| head`): stop quietly.
                    return ExitCode::SUCCESS;
                }
            }
            Record::Err { origin, error } => {
                failed += 1;
                match &origin.flow {
                    Some(f) => eprintln!("sdnlab: {} {f}: {error}", origin.at),
                    None => eprintln!("sdnlab: {}: {error}", origin.at),
                }
            }
        }
    }
    if failed > 0 {
        eprintln!("sdnlab: {failed} of {} inputs failed to decode", records.len());
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn dec_ports(args: &DecodeArgs) -> Vec<u16> {
    if args.ports.is_empty() {
        vec![6653, 6633]
    } else {
        args.ports.clone()
    }
}
