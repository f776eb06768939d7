//! The worker's network family: its part of an emulated network brought
//! up, pings and iperf3 runs from its hosts, test-frame flows sent and
//! counted, HTTP servers and loads.

use super::*;

/// Answers a call of this family (`run` routes each family here).
pub(super) async fn handle(
    call: NetCall,
    made: &Mutex<Made>,
    partial: &(dyn Fn(Reply) + Sync),
    cancelled: &AtomicBool,
) -> Answer {
    match call {
        NetCall::Up {
            topology,
            part,
            kind,
            controller,
        } => {
            let mut m = made.lock().await;
            if m.net.is_some() {
                return Err("a network is already up here: bring it down first".into());
            }
            let net = Net::up(
                topology,
                UpOptions {
                    kind,
                    controller,
                    keep_loops: false,
                    ssl: None,
                    ovsdb: false,
                    part: Some(part),
                },
            )
            .await
            .map_err(|e| e.to_string())?;
            let reply = Reply::NetUp {
                run: net.state.id.clone(),
                namespaces: net.state.hosts.iter().map(|h| h.netns.clone()).collect(),
                interfaces: net
                    .state
                    .links
                    .iter()
                    .flat_map(|l| l.root_ends.iter().cloned())
                    .chain(net.state.switches.iter().map(|(_, s)| s.clone()))
                    .collect(),
            };
            m.net = Some(net);
            Ok(reply)
        }
        NetCall::Ping { targets, count } => {
            let state = up(made).await?;
            Ok(Reply::Ping {
                results: netlab::run::ping_from(&state, &targets, count, 1).await,
            })
        }
        NetCall::IperfServer { host } => {
            let state = up(made).await?;
            let child = netlab::run::iperf_server(&state, &host)
                .await
                .map_err(|e| e.to_string())?;
            made.lock().await.iperf.push(child);
            Ok(Reply::Done)
        }
        NetCall::Iperf {
            client,
            server_ip,
            seconds,
        } => {
            let state = up(made).await?;
            let result = netlab::run::iperf_client(&state, &client, server_ip, seconds, None, &|_, _| {})
                .await
                .map_err(|e| e.to_string())?;
            Ok(Reply::Iperf { result })
        }
        NetCall::FlowReceive {
            flow,
            clock_ahead_ns,
            until_unix_ns,
            interval_ms,
        } => {
            receive(
                made,
                flow,
                clock_ahead_ns,
                until_unix_ns,
                interval_ms,
                partial,
                cancelled,
            )
            .await
        }
        NetCall::FlowSend { flow, start_unix_ns } => {
            let state = up(made).await?;
            until(start_unix_ns)?; // (the sender waits for it itself)
            let ns = state.netns_of(&flow.from.host).map_err(|e| e.to_string())?.to_string();
            let report = tokio::task::spawn_blocking(move || traffic::flow::send(&ns, &flow, start_unix_ns))
                .await
                .map_err(|e| format!("sender: {e}"))?
                .map_err(|e| e.to_string())?;
            Ok(Reply::FlowSent { report })
        }
        NetCall::HttpServer { host } => {
            let (state, dir) = {
                let m = made.lock().await;
                let net = m.net.as_ref().ok_or("no network is up here: bring one up first")?;
                (net.state.clone(), net.dir.clone())
            };
            let ns = state.netns_of(&host).map_err(|e| e.to_string())?.to_string();
            let server = tokio::task::spawn_blocking(move || lb::replica::start_in(&ns, &dir, &host, 80))
                .await
                .map_err(|e| format!("nginx: {e}"))?
                .map_err(|e| e.to_string())?;
            made.lock().await.http.push(server);
            Ok(Reply::Done)
        }
        NetCall::HttpLoad {
            client,
            server_ip,
            rate,
            seconds,
            interval_ms,
        } => {
            let state = up(made).await?;
            let ns = state.netns_of(&client).map_err(|e| e.to_string())?.to_string();
            let uris = vec![lb::replica::homogeneous_uri()];
            let every = Duration::from_millis(interval_ms.max(10).into());
            // Requests handed on as they end, a batch each interval.
            tokio::task::block_in_place(|| {
                lb::load::Load::new(server_ip, 80, uris, rate, seconds)
                    .run_batched(&ns, every, |b| partial(Reply::HttpRequests { requests: b }))
            })
            .map_err(|e| e.to_string())?;
            Ok(Reply::Done)
        }
    }
}

/// Counts `flow`'s frames at its receiving host here until `until_unix_ns`,
/// handing each interval on as it comes, then the whole.
async fn receive(
    made: &Mutex<Made>,
    flow: traffic::flow::Flow,
    clock_ahead_ns: i64,
    until_unix_ns: u64,
    interval_ms: u32,
    partial: &(dyn Fn(Reply) + Sync),
    cancelled: &AtomicBool,
) -> Answer {
    let state = up(made).await?;
    let until = Duration::from_nanos(until_unix_ns.saturating_sub(crate::clock::unix_ns()));
    if until > MAX_START_WAIT + Duration::from_secs_f64(flow.seconds) {
        return Err(format!(
            "asked to count until {:.1} s from now: are the clocks far apart?",
            until.as_secs_f64()
        ));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let every = Duration::from_millis(interval_ms.max(10).into());
    let receiver = traffic::flow::receive(
        state.netns_of(&flow.to.host).map_err(|e| e.to_string())?,
        &flow,
        clock_ahead_ns,
        Some((every, tx)),
    )
    .map_err(|e| e.to_string())?;
    partial(Reply::FlowListening);
    let seconds = flow.seconds;
    // The receiver counts on its own thread; this one hands its
    // intervals on as they come and, past the time, stops it.
    let report = tokio::task::block_in_place(|| {
        let end = std::time::Instant::now() + until;
        // A teardown (the coordinator gone) ends it at once: a
        // blocking wait is not cancelled with its task.
        while std::time::Instant::now() < end && !cancelled.load(Ordering::Relaxed) {
            if let Ok(i) = rx.recv_timeout(Duration::from_millis(50)) {
                partial(Reply::FlowInterval { interval: i });
            }
        }
        let report = traffic::flow::finish(receiver, seconds + 5.0);
        while let Ok(i) = rx.try_recv() {
            partial(Reply::FlowInterval { interval: i });
        }
        report
    });
    Ok(Reply::FlowReceived {
        report: Box::new(report),
    })
}
