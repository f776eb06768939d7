//! The worker's tester family: its hardware ports read, a receiver on one,
//! a generator's load sent, and what the receiver counted handed back.

use super::*;

/// Answers a call of this family (`run` routes each family here).
pub(super) async fn handle(call: TesterCall, made: &Mutex<Made>) -> Answer {
    match call {
        TesterCall::Ports { ifaces } => {
            let nl = netlab::kernel::Nl::here().map_err(|e| e.to_string())?;
            let mut ports = Vec::new();
            for i in &ifaces {
                let l = nl.link(i).await.map_err(|e| e.to_string())?;
                ports.push(netlab::kernel::port_info_of(i, &l));
            }
            if let Some(p) = ports.iter().find(|p| !p.up) {
                return Err(format!(
                    "interface {} is down: bring it up (ip link set {} up)",
                    p.name, p.name
                ));
            }
            Ok(Reply::TesterPorts { ports })
        }
        TesterCall::Listen {
            iface,
            method,
            clock_ahead_ns,
        } => {
            let mut m = made.lock().await;
            if m.testers.contains_key(&iface) {
                return Err(format!("{iface} is counting already"));
            }
            let opts = traffic::run::RecvOptions {
                method,
                clock_ahead_ns,
                ..traffic::run::RecvOptions::default()
            };
            let name = iface.clone();
            let r = tokio::task::block_in_place(|| traffic::run::Receiver::start_with(None, &name, opts))
                .map_err(|e| format!("receiver on {iface}: {e}"))?;
            m.testers.insert(iface, r);
            Ok(Reply::Done)
        }
        TesterCall::Send { mut spec } => {
            // This machine's namespace and scheduler, whatever the
            // coordinator's bed would use on its own.
            spec.netns = None;
            spec.core = None;
            let report = tokio::task::spawn_blocking(move || traffic::run::generate(&spec))
                .await
                .map_err(|e| format!("generator: {e}"))?
                .map_err(|e| format!("generator: {e}"))?;
            Ok(Reply::FlowSent { report })
        }
        TesterCall::Finish {
            iface,
            quiet_ms,
            at_most_ms,
        } => {
            let r = made
                .lock()
                .await
                .testers
                .remove(&iface)
                .ok_or_else(|| format!("nothing counts on {iface}: listen first"))?;
            let (quiet, at_most) = (
                Duration::from_millis(quiet_ms.into()),
                Duration::from_millis(at_most_ms.into()),
            );
            let report = tokio::task::spawn_blocking(move || r.finish_when_quiet(quiet, at_most))
                .await
                .map_err(|e| format!("receiver: {e}"))?;
            let (seen, blocks) = report.index();
            let (seen, blocks) = (
                crate::shard::pack_words(seen).map_err(|e| e.to_string())?,
                crate::shard::pack_words(blocks).map_err(|e| e.to_string())?,
            );
            Ok(Reply::TesterReceived {
                report: Box::new(report),
                seen,
                blocks,
            })
        }
    }
}
