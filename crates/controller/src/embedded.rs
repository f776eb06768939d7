//! A controller inside another program (the benchmarks, `sdnlab net
//! --app`, tests): the apps named, on a loopback port of its own, with its
//! REST API when asked.

use crate::runtime::{self, Config, Handle};
use std::net::SocketAddr;

/// Why a controller inside another program did not start.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// An app name the catalog does not know (the catalog's own words).
    #[error(transparent)]
    Apps(#[from] crate::catalog::AppError),
    #[error("starting the built-in controller: {0}")]
    Start(std::io::Error),
    #[error("a token for the built-in REST API: {0}")]
    Token(std::io::Error),
    #[error("starting the built-in REST API: {0}")]
    Rest(std::io::Error),
}

/// Starts a controller running app `app` (or several, comma-separated) on
/// a loopback port of its own, for use inside another program (benchmarks,
/// `sdnlab net --app`, tests).
pub fn start_local(app: &str, workers: usize) -> Result<Handle, EmbeddedError> {
    let set = crate::catalog::build(&app.split(',').collect::<Vec<_>>()).map_err(EmbeddedError::Apps)?;
    runtime::start(Config {
        listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
        workers,
        apps: set.factories,
        ..Default::default()
    })
    .map_err(EmbeddedError::Start)
}

/// Like `start_local`, with the REST API on a loopback port of its own too;
/// returns the controller, the API's address and the token its writes need.
pub fn start_local_with_rest(app: &str, workers: usize) -> Result<(Handle, SocketAddr, String), EmbeddedError> {
    start_member_with_rest(app, workers, None)
}

/// Like `start_local_with_rest`, as a member of the cluster `cluster`
/// says (its `listen` is set here: loopback, a port of its own).
pub fn start_member_with_rest(
    app: &str,
    workers: usize,
    cluster: Option<cluster::Config>,
) -> Result<(Handle, SocketAddr, String), EmbeddedError> {
    start_member_on(std::net::Ipv4Addr::LOCALHOST.into(), app, workers, cluster)
}

/// `start_member_with_rest` with the OpenFlow port, the REST API and the
/// member's own socket on `ip` (ports of their own): an address other
/// machines reach, for a cluster's member on a worker.
pub fn start_member_on(
    ip: std::net::IpAddr,
    app: &str,
    workers: usize,
    cluster: Option<cluster::Config>,
) -> Result<(Handle, SocketAddr, String), EmbeddedError> {
    start_with_rest(Options {
        ip,
        cluster,
        ..Options::new(app, workers)
    })
}

/// What a controller inside another program is started with: its apps
/// and workers, and where and as what it runs.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// The app, or several comma-separated.
    pub app: &'a str,
    pub workers: usize,
    /// Where the OpenFlow port, the REST API and a member's own socket
    /// listen, each on a port of its own: loopback unless said.
    pub ip: std::net::IpAddr,
    /// A member of this cluster (its `listen` is set here).
    pub cluster: Option<cluster::Config>,
    /// A standby for the controller at this address: silent until that
    /// one stops answering.
    pub standby_for: Option<SocketAddr>,
    /// The REST API's token: a new random one unless said.
    pub token: Option<String>,
}

impl<'a> Options<'a> {
    /// `app` with `workers` on loopback, alone, with a new token.
    pub fn new(app: &'a str, workers: usize) -> Options<'a> {
        Options {
            app,
            workers,
            ip: std::net::Ipv4Addr::LOCALHOST.into(),
            cluster: None,
            standby_for: None,
            token: None,
        }
    }
}

/// Starts a controller as `o` says, with its REST API; returns the
/// controller, the API's address and the token its writes need.
pub fn start_with_rest(o: Options) -> Result<(Handle, SocketAddr, String), EmbeddedError> {
    let ip = o.ip;
    let set = crate::catalog::build(&o.app.split(',').collect::<Vec<_>>()).map_err(EmbeddedError::Apps)?;
    let h = runtime::start(Config {
        listen: vec![SocketAddr::new(ip, 0)],
        workers: o.workers,
        apps: set.factories.clone(),
        cluster: o.cluster.map(|mut c| {
            c.listen = SocketAddr::new(ip, 0);
            c
        }),
        standby_for: o.standby_for,
        ..Default::default()
    })
    .map_err(EmbeddedError::Start)?;
    // A controller whose REST API did not start is stopped again (its
    // listeners and workers, and in a cluster its membership).
    let token = match o.token {
        Some(t) => Ok(t),
        None => crate::rest::new_token().map_err(EmbeddedError::Token),
    };
    let rest = token.and_then(|token| {
        let access = crate::rest::Access::with_token(token.clone());
        let rest = crate::rest::serve(SocketAddr::new(ip, 0), h.clone(), set, access).map_err(EmbeddedError::Rest)?;
        Ok((rest, token))
    });
    match rest {
        Ok((rest, token)) => Ok((h, rest, token)),
        Err(e) => {
            h.stop();
            Err(e)
        }
    }
}
