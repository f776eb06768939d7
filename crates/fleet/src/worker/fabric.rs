//! The worker's fabric family: its part of an emulated OpenFlow fabric, on
//! a UDP socket shared with the other parts; its counts, port and switch
//! failures, and its stop.

use super::*;

/// Answers a call of this family (`run` routes each family here).
pub(super) async fn handle(call: FabricCall, made: &Mutex<Made>, local: Option<SocketAddr>) -> Answer {
    match call {
        FabricCall::Bind => {
            let ip = local.map(|a| a.ip()).ok_or("the session's own address is unknown")?;
            let socket = tokio::net::UdpSocket::bind((ip, 0))
                .await
                .map_err(|e| format!("fabric socket on {ip}: {e}"))?;
            // Room for a burst of the controller's probes (thousands of
            // small datagrams at once): the kernel's default receive
            // buffer drops most of one. Forced past the sysctl limits
            // (the worker runs as root); the defaults stand if refused.
            {
                use nix::sys::socket::{setsockopt, sockopt};
                let _ = setsockopt(&socket, sockopt::RcvBufForce, &FABRIC_RCVBUF);
                let _ = setsockopt(&socket, sockopt::SndBufForce, &FABRIC_SNDBUF);
            }
            let port = socket.local_addr().map_err(|e| e.to_string())?.port();
            made.lock().await.fabric_socket = Some(Arc::new(socket));
            Ok(Reply::FabricBound { port })
        }
        FabricCall::Start {
            spec,
            here,
            elsewhere,
            targets,
            version,
            timeout_ms,
            malformed_per_mille,
        } => {
            raise_fd_limit();
            let socket = {
                let m = made.lock().await;
                if m.fabric.is_some() {
                    return Err("a fabric part runs here already: stop it first".into());
                }
                m.fabric_socket.clone().ok_or("no fabric socket: bind one first")?
            };
            let opts = ctlbench::fabric::Options {
                targets,
                version,
                timeout: Duration::from_millis(timeout_ms),
                malformed_per_mille,
                shard: Some(ctlbench::fabric::Shard {
                    here,
                    socket,
                    elsewhere: elsewhere.into_iter().collect(),
                }),
                reconnect: None,
            };
            let f = ctlbench::fabric::Fabric::start_with(spec, opts).await;
            let reply = fabric_up(&f);
            made.lock().await.fabric = Some(f);
            Ok(reply)
        }
        FabricCall::Count => {
            let m = made.lock().await;
            Ok(fabric_up(m.fabric.as_ref().ok_or("no fabric part runs here")?))
        }
        FabricCall::Port { at, up } => {
            let m = made.lock().await;
            m.fabric.as_ref().ok_or("no fabric part runs here")?.set_port(at, up);
            Ok(Reply::Done)
        }
        FabricCall::SwitchOff { dpid } => {
            let m = made.lock().await;
            m.fabric.as_ref().ok_or("no fabric part runs here")?.disconnect(dpid);
            Ok(Reply::Done)
        }
        FabricCall::Stop => {
            let f = made.lock().await.fabric.take().ok_or("no fabric part runs here")?;
            // The switches first; what other parts sent until they stopped
            // too is still taken in and counted before the reading.
            f.stop_switches();
            tokio::time::sleep(Duration::from_millis(200)).await;
            let reply = fabric_up(&f);
            f.stop();
            Ok(reply)
        }
    }
}
