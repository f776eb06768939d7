//! A controller inside another program (the benchmarks, `sdnlab net
//! --app`, tests): the apps named, on a loopback port of its own, with its
//! REST API when asked.

use crate::runtime::{self, Config, Handle};
use std::net::SocketAddr;

/// Starts a controller running app `app` (or several, comma-separated) on
/// a loopback port of its own, for use inside another program (benchmarks,
/// `sdnlab net --app`, tests).
pub fn start_local(app: &str, workers: usize) -> Result<Handle, String> {
    let set = crate::catalog::build(&app.split(',').collect::<Vec<_>>())?;
    runtime::start(Config {
        listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
        workers,
        apps: set.factories,
        ..Default::default()
    })
    .map_err(|e| format!("starting the built-in controller: {e}"))
}

/// Like `start_local`, with the REST API on a loopback port of its own too;
/// returns the controller, the API's address and the token its writes need.
pub fn start_local_with_rest(app: &str, workers: usize) -> Result<(Handle, SocketAddr, String), String> {
    start_member_with_rest(app, workers, None)
}

/// Like `start_local_with_rest`, as a member of the cluster `cluster`
/// says (its `listen` is set here: loopback, a port of its own).
pub fn start_member_with_rest(
    app: &str,
    workers: usize,
    cluster: Option<cluster::Config>,
) -> Result<(Handle, SocketAddr, String), String> {
    let set = crate::catalog::build(&app.split(',').collect::<Vec<_>>())?;
    let h = runtime::start(Config {
        listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
        workers,
        apps: set.factories.clone(),
        cluster: cluster.map(|mut c| {
            c.listen = SocketAddr::from(([127, 0, 0, 1], 0));
            c
        }),
        ..Default::default()
    })
    .map_err(|e| format!("starting the built-in controller: {e}"))?;
    let token = crate::rest::new_token().map_err(|e| format!("a token for the built-in REST API: {e}"))?;
    let access = crate::rest::Access::with_token(token.clone());
    let rest = crate::rest::serve(SocketAddr::from(([127, 0, 0, 1], 0)), h.clone(), set, access)
        .map_err(|e| format!("starting the built-in REST API: {e}"))?;
    Ok((h, rest, token))
}
