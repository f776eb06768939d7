//! What the driver's tests against sdnlab's controller in this process
//! share: the controller, and a small load.
#![allow(dead_code)]

/// sdnlab's controller with `app`, one worker, on an ephemeral port.
pub fn controller(app: &str) -> controller::runtime::Handle {
    controller::runtime::start(controller::runtime::Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 1,
        apps: vec![controller::catalog::by_name(app).unwrap()],
        session: ofconn::Config::default(),
        verbose: false,
        ..Default::default()
    })
    .unwrap()
}

/// Four switches of 50 MACs, two loops of 200 ms after one of warm-up.
pub fn cfg(target: std::net::SocketAddr, mode: ctlbench::Mode, version: u8) -> ctlbench::Config {
    ctlbench::Config {
        switches: 4,
        macs: 50,
        mode,
        version,
        loops: 2,
        loop_ms: 200,
        window: 32,
        ..ctlbench::Config::new(target)
    }
}
