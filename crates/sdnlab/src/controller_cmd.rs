//! `sdnlab controller`: its arguments, the apps it loads, and the controller
//! run until a stop signal (standalone or as a cluster member).

use super::*;

#[derive(Args)]
pub(super) struct ControllerArgs {
    /// Address to listen on (repeatable). Default: [::]:6653 and [::]:6633 (IPv4 too).
    #[arg(long = "listen", value_name = "ADDR:PORT")]
    pub(super) listen: Vec<std::net::SocketAddr>,
    /// Application to run (repeatable, in order): l2-learning, hub, topology, paths, paths-proactive,
    /// null, lb (needs --lb-config; l2-learning is added after it when not named).
    #[arg(long = "app", value_name = "APP")]
    pub(super) apps: Vec<String>,
    /// The lb app's configuration (TOML: [vip], [[replica]], policy; docs/manual/lb.md).
    #[arg(long, value_name = "FILE")]
    pub(super) lb_config: Option<std::path::PathBuf>,
    /// Address of the REST API (JSON over HTTP).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub(super) rest: std::net::SocketAddr,
    /// Do not serve the REST API.
    #[arg(long, conflicts_with = "rest")]
    pub(super) no_rest: bool,
    /// The REST API's token, on the first line of this file (at least 16 characters);
    /// without it a token is made and printed at start. Writes need `Authorization: Bearer
    /// TOKEN`.
    #[arg(long, value_name = "FILE")]
    pub(super) rest_token_file: Option<std::path::PathBuf>,
    /// Reads need the token too (by default they are open).
    #[arg(long)]
    pub(super) rest_closed_reads: bool,
    /// A name the REST API may be reached by (the Host header; repeatable). Its address,
    /// IP literals and, on loopback, localhost are always accepted.
    #[arg(long = "rest-host", value_name = "NAME")]
    pub(super) rest_hosts: Vec<String>,
    /// An origin a browser may call the REST API from (CORS; repeatable). None by default.
    #[arg(long = "rest-cors", value_name = "ORIGIN")]
    pub(super) rest_cors: Vec<String>,
    /// Serve the REST API over HTTPS with this certificate chain (PEM); needs --rest-tls-key.
    #[arg(long, value_name = "FILE", requires = "rest_tls_key")]
    pub(super) rest_tls_cert: Option<std::path::PathBuf>,
    /// The REST API's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "rest_tls_cert")]
    pub(super) rest_tls_key: Option<std::path::PathBuf>,
    /// Address where switches connect over TLS (repeatable; OVS `ssl:`). Needs --tls-cert and --tls-key.
    #[arg(long = "tls-listen", value_name = "ADDR:PORT", requires_all = ["tls_cert", "tls_key"])]
    pub(super) tls_listen: Vec<std::net::SocketAddr>,
    /// The controller's certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_listen")]
    pub(super) tls_cert: Option<std::path::PathBuf>,
    /// The controller's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_listen")]
    pub(super) tls_key: Option<std::path::PathBuf>,
    /// Require switch certificates signed by this CA (PEM); without it any switch may connect.
    #[arg(long, value_name = "FILE", requires = "tls_listen")]
    pub(super) tls_ca: Option<std::path::PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(super) workers: Option<u16>,
    /// Of those, how many take switches that connect from this machine (a loopback address or
    /// the one they connected to), whose emulation shares its cores (default: half the workers,
    /// at least one; switches from other machines go to every worker).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(super) local_workers: Option<u16>,
    /// Switch connections held at once (default: the open-file limit, raised to its hard
    /// value, less an eighth of it, at most 128); a newcomer over the limit takes the place of the oldest connection
    /// still in its handshake, or is refused.
    #[arg(long, value_name = "N")]
    pub(super) max_connections: Option<usize>,
    /// Of those, how many from one address (default: all of them: an emulated network's
    /// switches come from one address).
    #[arg(long, value_name = "N")]
    pub(super) max_per_address: Option<usize>,
    /// OpenFlow versions to offer.
    #[arg(long, value_delimiter = ',', default_value = "1.0,1.3", value_parser = ["1.0", "1.3"])]
    pub(super) ofp: Vec<String>,
    /// Log sessions and malformed messages.
    #[arg(long, short)]
    pub(super) verbose: bool,
    /// Run as the standby of the active controller whose REST API is at this address: a SLAVE
    /// (OpenFlow 1.3 roles) that learns what the active one sees and takes over as MASTER when
    /// that address stops accepting connections.
    #[arg(long, value_name = "HOST:PORT", value_parser = lab::hostport::parse)]
    pub(super) standby_for: Option<std::net::SocketAddr>,
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
    pub(super) cluster: Vec<String>,
    /// This member's name, unique in the cluster (with --cluster).
    #[arg(long, value_name = "NAME", requires = "cluster")]
    pub(super) member: Option<String>,
    /// The cluster's name: clusters sharing one etcd keep apart by it (with --cluster).
    #[arg(long, value_name = "NAME", default_value = "default", requires = "cluster")]
    pub(super) cluster_name: String,
    /// As a SLAVE, ask the switches for every PACKET_IN (all: the apps know the network
    /// at a takeover; none: OpenFlow's default, the cluster not paying every PACKET_IN once
    /// per member) (with --cluster).
    #[arg(long, value_parser = ["all", "none"], default_value = "all", requires = "cluster")]
    pub(super) slave_packet_ins: String,
}

/// The controller's apps: the named ones, with `lb` built from its
/// configuration (and `l2-learning` after it for everything else).
pub(super) fn controller_apps(
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

pub(super) fn controller_cmd(args: ControllerArgs) -> ExitCode {
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
    let cfg = match runtime_config(&args, &set) {
        Ok(c) => c,
        Err(e) => return net_cmd::fail(e),
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
        if let Err(e) = serve_rest(&args, &handle, set) {
            return net_cmd::fail(e);
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

/// The controller's runtime as the arguments ask: its listeners (both
/// OpenFlow ports on every address by default), versions, TLS, cluster
/// membership and connection limits. The error is the line to print.
fn runtime_config(
    args: &ControllerArgs,
    set: &controller::catalog::AppSet,
) -> Result<controller::runtime::Config, String> {
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
            Err(e) => return Err(e.to_string()),
        },
        _ => None,
    };
    // A cluster member's own socket (how the others notice its death)
    // listens where its first OpenFlow listener does.
    let member_ip = listen.first().map_or(std::net::Ipv4Addr::LOCALHOST.into(), |a| a.ip());
    Ok(controller::runtime::Config {
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
    })
}

/// The REST API started beside the controller, with its token (made, or
/// read from --rest-token-file) and its access rules; a failure stops the
/// controller first (out of its cluster at once). The error is the line
/// to print.
fn serve_rest(
    args: &ControllerArgs,
    handle: &controller::runtime::Handle,
    set: controller::catalog::AppSet,
) -> Result<(), String> {
    let (token, made) = match &args.rest_token_file {
        Some(f) => match controller::rest::token_from_file(f) {
            Ok(t) => (t, false),
            Err(e) => return Err(e.to_string()),
        },
        None => match controller::rest::new_token() {
            Ok(t) => (t, true),
            Err(e) => return Err(format!("making a REST token: {e}")),
        },
    };
    let tls = match (&args.rest_tls_cert, &args.rest_tls_key) {
        (Some(cert), Some(key)) => match controller::tls::server_config(cert, key, None) {
            Ok(c) => Some(c),
            Err(e) => return Err(format!("--rest-tls-cert/--rest-tls-key: {e}")),
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
            return Err(format!("{e} (choose another with --rest, or --no-rest)"));
        }
    }
    if made {
        eprintln!("sdnlab controller: REST API token (writes need Authorization: Bearer TOKEN): {token}");
    }
    Ok(())
}
