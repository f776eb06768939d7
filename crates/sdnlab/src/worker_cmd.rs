//! `sdnlab worker` and `sdnlab credentials`: the command line of crate
//! `fleet`'s worker (arguments onto its config, signals onto its stop) and
//! of the lab's credentials.

use clap::Args;
use fleet::creds::{Credentials, Role};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct WorkerArgs {
    /// Address to listen on for the coordinator.
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:7700")]
    listen: SocketAddr,
    /// The lab's credentials (`sdnlab credentials DIR`): ca.pem, worker.pem, worker-key.pem.
    #[arg(long, value_name = "DIR")]
    credentials: PathBuf,
    /// Run in this network namespace (under /run/netns) instead of the machine's own: several
    /// workers on one machine, each a "machine" of its own.
    #[arg(long, value_name = "NAME")]
    netns: Option<String>,
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("sdnlab: {e}");
    ExitCode::from(1)
}

pub fn run(a: WorkerArgs) -> ExitCode {
    // Before any thread: every thread and process started later is there too.
    if let Some(ns) = &a.netns {
        if let Err(e) = fleet::worker::enter_netns(ns) {
            return fail(e);
        }
    }
    // As many connections as the hard limit allows (the listener's
    // admission keeps a reserve of it for everything else).
    let _ = controller::runtime::raise_fd_limit();
    let tls = match fleet::creds::worker_config(&Credentials::in_dir(&a.credentials, Role::Worker)) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the runtime: {e}")),
    };
    rt.block_on(async {
        let listener = match tokio::net::TcpListener::bind(a.listen).await {
            Ok(l) => l,
            Err(e) => return fail(format!("cannot listen on {}: {e}", a.listen)),
        };
        for run in fleet::worker::clean_stale().await {
            eprintln!("sdnlab worker: removed netlab run {run}, left by a worker that died");
        }
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(e) => return fail(format!("cannot watch SIGTERM: {e}")),
        };
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {},
                _ = term.recv() => {},
            }
            let _ = stop_tx.send(true);
        });
        eprintln!(
            "sdnlab worker: listening on {}{}",
            listener.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            a.netns
                .as_ref()
                .map(|n| format!(" in namespace {n}"))
                .unwrap_or_default()
        );
        fleet::worker::serve(listener, tls, stop).await;
        eprintln!("sdnlab worker: stopped");
        ExitCode::SUCCESS
    })
}

pub fn credentials(dir: &std::path::Path) -> ExitCode {
    match fleet::creds::generate(dir) {
        Ok(()) => {
            println!(
                "lab credentials in {}: ca.pem, worker.pem and worker-key.pem for every worker, coordinator.pem and coordinator-key.pem for the coordinator",
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
