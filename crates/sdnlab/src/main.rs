//! The `sdnlab` command line: parses arguments and dispatches to the
//! library crates. Every user error is one line on stderr, never a backtrace.

mod bench_ctl;
mod bench_dp;
mod bench_fidelity;
mod bench_gen;
mod bench_lb;
mod bench_ref;
mod bench_switch;
mod net_cmd;
mod run_cmd;
mod worker_cmd;

use clap::{Args, Parser, Subcommand};
use ofwire::capture::{self as ofp_decode, CaptureDecoder, Record};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

mod agent_cmd;
mod controller_cmd;
mod ofp_cmd;
mod report_cmd;
use agent_cmd::*;
use controller_cmd::*;
use ofp_cmd::*;
use report_cmd::*;

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
