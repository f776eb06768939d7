//! The driver's own ceiling: the same load (switches, MACs, mode, version,
//! window) against the reference null responder (crate `ofref`, the least
//! any controller can do) on this machine, just before the target is
//! measured. Here so that every driver takes it the same way: a run on one
//! machine (`lab`) and each worker of a spread one (`fleet`). In cluster
//! mode each switch opens as many sessions to the responder as the cluster
//! has members, and every one answers: the driver's ceiling at that
//! fan-out.

use crate::{Answers, Config};

/// The driver against the reference responder.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ceiling {
    /// cbench's figure (every FLOW_MOD or PACKET_OUT), per second.
    pub responses_per_s: f64,
    /// Answers matched to a request, per second.
    pub matched_per_s: f64,
    pub rtt_us_p50: f64,
}

/// Why the ceiling was not taken.
#[derive(Debug, thiserror::Error)]
pub enum CeilingError {
    #[error("the reference responder did not start: {0}")]
    Responder(#[from] ofref::Error),
    #[error("the driver against the reference responder: {0} session(s) lost")]
    SessionsLost(u64),
}

/// Measures the ceiling for `cfg` (its target replaced by a reference
/// responder started here) as long as one of its trials: the same warm-up
/// and measured loops (a shorter run read the same load from 57 k to
/// 187 k responses/s within minutes). None when the answers are not matched by buffer (the
/// responder answers by buffer only); an error when the responder cannot
/// start or the driver lost sessions to it.
pub async fn measure(cfg: &Config) -> Result<Option<Ceiling>, CeilingError> {
    if cfg.answers != Answers::Buffer {
        return Ok(None);
    }
    // One event loop: on a machine of two cores it measured as fast as two
    // against the driver and leaves the driver a core of its own.
    let responder = ofref::Responder::start(1)?;
    let probe = Config {
        target: responder.addr(),
        // A cluster's fan-out: as many sessions per switch, all to the
        // responder, each answering every request (the most the driver
        // can be asked to read back).
        members: cfg.members.iter().map(|_| responder.addr()).collect(),
        malformed_per_mille: 0,
        offered_rate: 0.0,
        ..cfg.clone()
    };
    let r = crate::run(probe, |_| {}).await;
    drop(responder);
    if r.loops.is_empty() || r.sessions_lost > 0 {
        return Err(CeilingError::SessionsLost(r.sessions_lost));
    }
    let n = r.loops.len() as f64;
    Ok(Some(Ceiling {
        responses_per_s: r.loops.iter().map(|l| l.responses_per_s).sum::<f64>() / n,
        matched_per_s: r.loops.iter().map(|l| l.matched_per_s).sum::<f64>() / n,
        rtt_us_p50: r.rtt_us_p50,
    }))
}
