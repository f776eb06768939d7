//! The worker's controller-load family: the driver's ceiling, its shard of
//! cbench's load and of the session test, and an etcd and controller
//! members of a cluster spread over the workers.

use super::*;

/// Answers a call of this family (`run` routes each family here).
pub(super) async fn handle(
    call: CtlCall,
    made: &Mutex<Made>,
    local: Option<SocketAddr>,
    partial: &(dyn Fn(Reply) + Sync),
) -> Answer {
    match call {
        CtlCall::Ceiling { config } => {
            raise_fd_limit();
            Ok(Reply::Ceiling {
                ceiling: ctlbench::ceiling::measure(&config).await.map_err(|e| e.to_string())?,
            })
        }
        CtlCall::Shard { config, start_unix_ns } => {
            raise_fd_limit();
            let wait = until(start_unix_ns)?;
            tokio::time::sleep(wait).await;
            let report = ctlbench::run(config, |l| partial(Reply::CtlLoop { result: l.clone() })).await;
            let rtt_histogram =
                crate::shard::encode_histogram(report.rtt_histogram.as_ref()).map_err(|e| e.to_string())?;
            Ok(Reply::Ctl {
                report: Box::new(report),
                rtt_histogram,
            })
        }
        CtlCall::Sessions { config } => {
            raise_fd_limit();
            // (A stop that came first, from a shard that ended at once, holds.)
            let (stop, release) = made.lock().await.sessions();
            let held = ctlbench::capacity::open(
                config,
                |held, seconds| partial(Reply::SessionsProgress { held, seconds }),
                stop.subscribe(),
            )
            .await;
            partial(Reply::SessionsEnded {
                result: Box::new(held.result.clone()),
            });
            release.notified().await;
            drop(held);
            made.lock().await.sessions = None;
            Ok(Reply::Done)
        }
        CtlCall::SessionsStop { release } => {
            let (stop, done) = made.lock().await.sessions();
            if release {
                // (A permit kept if the shard is not waiting yet.)
                done.notify_one();
            } else {
                stop.send_replace(true);
            }
            Ok(Reply::Done)
        }
        CtlCall::EtcdUp { members } => {
            let ip = match local.map(|a| a.ip()) {
                Some(std::net::IpAddr::V4(ip)) => ip,
                _ => return Err("etcd here needs the session's own IPv4 address".into()),
            };
            if made.lock().await.etcd.is_some() {
                return Err("an etcd runs here already: stop the cluster first".into());
            }
            let (etcd, dir) = tokio::task::spawn_blocking(move || {
                let dir = netlab::private::temp_dir("sdnlab-worker-etcd-")
                    .map_err(|e| format!("a directory for etcd: {e}"))?;
                let etcd = cluster::etcd::Etcd::start_on(dir.path(), members, ip).map_err(|e| e.to_string())?;
                Ok::<_, String>((etcd, dir))
            })
            .await
            .map_err(|e| e.to_string())??;
            let reply = Reply::EtcdUp {
                endpoints: etcd.endpoint_list(),
                version: cluster::etcd::Etcd::version().unwrap_or_else(|| "etcd".into()),
            };
            made.lock().await.etcd = Some((etcd, dir));
            Ok(reply)
        }
        CtlCall::MemberUp {
            endpoints,
            cluster,
            member,
            app,
            slave_packet_ins,
        } => {
            let ip = local.map(|a| a.ip()).ok_or("the session's own address is unknown")?;
            let mut c = cluster::Config::new(endpoints, member, SocketAddr::new(ip, 0));
            c.cluster = cluster;
            c.slave_packet_ins = slave_packet_ins;
            let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
            let (h, rest, _token) = tokio::task::spawn_blocking(move || {
                controller::embedded::start_member_on(ip, &app, workers, Some(c)).map_err(|e| e.to_string())
            })
            .await
            .map_err(|e| e.to_string())??;
            let openflow = *h.local_addrs.first().ok_or("the member listens nowhere")?;
            made.lock().await.members.push(h);
            Ok(Reply::MemberUp { openflow, rest })
        }
        CtlCall::ClusterDown => {
            made.lock().await.cluster_down().await;
            Ok(Reply::Done)
        }
    }
}
