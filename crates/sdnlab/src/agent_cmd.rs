//! `sdnlab agent`: the load balancer's server agent, answering the
//! controller's questions about this server's load.

use super::*;

#[derive(Args)]
pub(super) struct AgentArgs {
    /// The replica's data interface, whose transmitted bytes are reported.
    #[arg(long, default_value = "eth0")]
    pub(super) interface: String,
    /// The service's TCP port: established connections on it are counted.
    #[arg(long, default_value_t = 80)]
    pub(super) service_port: u16,
    /// UDP address to answer on.
    #[arg(long, default_value = "0.0.0.0:9109")]
    pub(super) listen: std::net::SocketAddr,
    /// How often the service's CPU use is sampled, milliseconds.
    #[arg(long, default_value_t = 100)]
    pub(super) cpu_period_ms: u64,
    /// Write the agent's pid here.
    #[arg(long, value_name = "FILE")]
    pub(super) pidfile: Option<std::path::PathBuf>,
}

pub(super) fn agent_cmd(args: AgentArgs) -> ExitCode {
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
