//! `sdnlab bench ref`: the reference pair's command line (crate `ofref`):
//! the minimal C load generator and null responder the controller
//! benchmark is held to. It only parses, calls `ofref` and prints.

use clap::{Args, Subcommand};
use std::net::SocketAddr;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum RefCommand {
    /// Answer every PACKET_IN with a FLOW_MOD carrying its buffer id, until interrupted.
    Respond(RespondArgs),
    /// Load a controller as cbench does, from emulated switches on per-thread event loops.
    Generate(GenerateArgs),
}

#[derive(Args)]
pub struct RespondArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:6653")]
    pub listen: SocketAddr,
    /// Event loops (threads).
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
}

#[derive(Args)]
pub struct GenerateArgs {
    /// The controller (HOST:PORT; a name resolves to its first IPv4 address).
    #[arg(long, value_name = "HOST:PORT", value_parser = lab::hostport::parse)]
    pub target: SocketAddr,
    #[arg(long, default_value_t = 16)]
    pub switches: u32,
    /// Source MACs per switch.
    #[arg(long, default_value_t = 1000)]
    pub macs: u32,
    /// throughput or latency (one PACKET_IN outstanding per switch).
    #[arg(long, default_value_t = lab::ctl::CbenchMode::Throughput)]
    pub mode: lab::ctl::CbenchMode,
    /// The OpenFlow version the switches speak.
    #[arg(long, default_value_t = lab::ctl::Ofp::V10)]
    pub ofp: lab::ctl::Ofp,
    /// PACKET_INs outstanding per switch in throughput mode.
    #[arg(long, default_value_t = 256)]
    pub window: u32,
    #[arg(long, default_value_t = 4)]
    pub ports: u32,
    #[arg(long, default_value_t = 5)]
    pub loops: u32,
    #[arg(long, default_value_t = 1000)]
    pub loop_ms: u32,
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Event loops (threads); the switches are dealt among them.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("sdnlab bench ref: {msg}");
    ExitCode::from(2)
}

pub fn run(c: RefCommand) -> ExitCode {
    match c {
        RefCommand::Respond(a) => respond(a),
        RefCommand::Generate(a) => generate(a),
    }
}

fn respond(a: RespondArgs) -> ExitCode {
    if !(1..=64).contains(&a.threads) {
        return fail(format!("--threads {}: must be 1 to 64", a.threads));
    }
    let r = match ofref::Responder::start_on(a.listen, a.threads) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    println!("sdnlab bench ref: null responder listening on {}", r.addr());
    // Until the process is ended (SIGINT/SIGTERM end it as usual).
    loop {
        std::thread::park();
    }
}

fn generate(a: GenerateArgs) -> ExitCode {
    let version = a.ofp.version();
    let latency = a.mode == lab::ctl::CbenchMode::Latency;
    for (name, v, lo, hi) in [
        ("switches", a.switches, 1, 100_000),
        ("macs", a.macs, 1, 65_536),
        ("window", a.window, 1, 65_536),
        ("ports", a.ports, 1, 4096),
        ("loops", a.loops, 1, 100_000),
        ("loop-ms", a.loop_ms, 10, 3_600_000),
        ("warmup", a.warmup, 0, 1000),
        ("threads", a.threads, 1, 64),
    ] {
        if !(lo..=hi).contains(&v) {
            return fail(format!("--{name} {v}: must be {lo} to {hi}"));
        }
    }
    let cfg = ofref::GenConfig {
        target: a.target,
        version,
        latency,
        switches: a.switches,
        macs: a.macs,
        window: a.window,
        ports: a.ports,
        first_dpid: 1,
        warmup: a.warmup,
        loops: a.loops,
        loop_ms: a.loop_ms,
        threads: a.threads,
    };
    // A controller started a moment ago (`respond ... &` and then this,
    // pasted together) is given 5 s to listen; after that, its absence is
    // the error.
    let t = std::time::Instant::now();
    while let Err(e) = std::net::TcpStream::connect_timeout(&a.target, std::time::Duration::from_secs(1)) {
        if t.elapsed() > std::time::Duration::from_secs(5) {
            return fail(format!("nothing listens at {} ({e}) after 5 s", a.target));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let r = match ofref::generate(&cfg) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let rates: Vec<f64> = r.loops.iter().map(|l| l.responses_per_s()).collect();
    if a.json {
        let loops: Vec<_> = r
            .loops
            .iter()
            .map(|l| serde_json::json!({"seconds": l.seconds, "responses_per_s": l.responses_per_s(), "per_switch": l.per_switch}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"established": r.established, "switches": a.switches, "loops": loops})
        );
    } else {
        // As cbench prints them; printed once the run is over, so the
        // clock on each line is when it was printed.
        use labconsole::live::{cbench_loop_line, cbench_result_line, clock};
        let n = a.switches as usize;
        for (l, rate) in r.loops.iter().zip(&rates) {
            println!("{}", cbench_loop_line(&clock(), n, &l.per_switch, *rate, version));
        }
        println!("{}", cbench_result_line(n, &rates));
    }
    if r.established < a.switches {
        eprintln!(
            "sdnlab bench ref: only {} of {} switches finished their handshake",
            r.established, a.switches
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
