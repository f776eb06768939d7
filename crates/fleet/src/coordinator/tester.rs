//! The coordinator's tester family: a data-path trial between hardware
//! ports on the workers (`bench dp --workers`).

use super::*;

impl Fleet {
    /// Interfaces `ifaces` on worker `w`, as they are there; an error
    /// names one missing or down.
    pub async fn tester_ports(&self, w: usize, ifaces: &[String]) -> Result<Vec<netlab::kernel::PortInfo>, FleetError> {
        let call = self.workers[w].call(Call::Tester(TesterCall::Ports {
            ifaces: ifaces.to_vec(),
        }));
        match self.unless_lost(call).await? {
            Reply::TesterPorts { ports } => Ok(ports),
            other => Err(FleetError::Partition(format!("tester-ports answered {other:?}"))),
        }
    }

    /// One trial of test frames between two workers' interfaces (the ports
    /// of a switch under test between their machines): `rcv`'s interface
    /// counts, `spec` is sent from `gen`'s (its `ifname`), then the count
    /// ends once `quiet` has passed without a frame (at most `at_most`).
    /// The receiver takes the two clocks' offset off every latency; also
    /// returned: how well that offset is known, µs (0 on one worker).
    pub async fn tester_trial(
        &self,
        gen: usize,
        rcv: (usize, &str),
        method: traffic::run::RecvMethod,
        spec: &traffic::run::GenSpec,
        quiet: Duration,
        at_most: Duration,
    ) -> Result<(traffic::run::GenReport, traffic::run::RecvReport, f64), FleetError> {
        let (rw, iface) = rcv;
        let (ahead_ns, uncertainty_us) = if gen == rw {
            (0, 0.0)
        } else {
            match (self.workers[gen].clock, self.workers[rw].clock) {
                (Some(g), Some(r)) => (
                    ((r.offset_us - g.offset_us) * 1e3) as i64,
                    g.uncertainty_us + r.uncertainty_us,
                ),
                _ => (0, f64::INFINITY),
            }
        };
        let (sender, receiver) = (&self.workers[gen], &self.workers[rw]);
        let run = async {
            receiver
                .call(Call::Tester(TesterCall::Listen {
                    iface: iface.to_string(),
                    method,
                    clock_ahead_ns: ahead_ns,
                }))
                .await?;
            let sent = sender.call(Call::Tester(TesterCall::Send { spec: spec.clone() })).await;
            // The count ends even when the sender failed (nothing is left counting).
            let received = receiver
                .call(Call::Tester(TesterCall::Finish {
                    iface: iface.to_string(),
                    quiet_ms: quiet.as_millis() as u32,
                    at_most_ms: at_most.as_millis() as u32,
                }))
                .await?;
            let Reply::FlowSent { report: sent } = sent? else {
                return Err(FleetError::Partition("tester-send answered out of turn".into()));
            };
            let Reply::TesterReceived {
                report: mut received,
                seen,
                blocks,
            } = received
            else {
                return Err(FleetError::Partition("tester-finish answered out of turn".into()));
            };
            let unpack = |t: &str| {
                crate::shard::unpack_words(t).map_err(|source| FleetError::Unpack {
                    worker: receiver.name.clone(),
                    source,
                })
            };
            received.set_index(unpack(&seen)?, unpack(&blocks)?);
            Ok((sent, *received, uncertainty_us))
        };
        self.unless_lost(run).await
    }
}
