//! RFC 8456 Asynchronous Message Processing Rate, as a loss-free search:
//! a first unpaced round finds what the controller answers at most; each
//! next round offers exactly what the previous one got answered, until two
//! rounds agree (the answered rate within `tolerance` of the offered one,
//! i.e. nothing lost). The result is that loss-free rate.

use crate::{run, Config, Mode};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Round {
    /// PACKET_INs per second offered (0: unpaced, the first round).
    pub offered_per_s: f64,
    pub sent_per_s: f64,
    pub answered_per_s: f64,
    /// 1 - answered / sent.
    pub loss: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RateResult {
    pub rounds: Vec<Round>,
    /// The loss-free rate found (the last round's answered rate when the
    /// search did not converge).
    pub loss_free_per_s: f64,
    pub converged: bool,
    pub sessions_lost: u64,
}

/// Runs the search; `cfg` gives switches, MACs, version and the round
/// length (`loops` x `loop_ms` after `warmup`).
pub async fn search(
    mut cfg: Config,
    max_rounds: usize,
    tolerance: f64,
    mut on_round: impl FnMut(&Round),
) -> RateResult {
    cfg.mode = Mode::Throughput;
    cfg.offered_rate = 0.0;
    let mut rounds = Vec::new();
    let mut lost = 0;
    let mut converged = false;
    for _ in 0..max_rounds.max(2) {
        let offered = cfg.offered_rate;
        let r = run(cfg.clone(), |_| {}).await;
        lost += r.sessions_lost;
        let n = r.loops.len().max(1) as f64;
        let sent = r.loops.iter().map(|l| l.requests_per_s).sum::<f64>() / n;
        let answered = r.loops.iter().map(|l| l.matched_per_s).sum::<f64>() / n;
        let round = Round {
            offered_per_s: offered,
            sent_per_s: sent,
            answered_per_s: answered,
            loss: if sent > 0.0 {
                (1.0 - answered / sent).max(0.0)
            } else {
                1.0
            },
        };
        on_round(&round);
        rounds.push(round);
        if answered <= 0.0 || r.sessions_lost > 0 {
            break;
        }
        // Agreement: what was offered came back (within tolerance), and the
        // driver managed to send it.
        if offered > 0.0 && (answered - offered).abs() <= tolerance * offered && sent >= offered * (1.0 - tolerance) {
            converged = true;
            break;
        }
        cfg.offered_rate = answered;
    }
    let last = rounds.last().map_or(0.0, |r| r.answered_per_s);
    RateResult {
        loss_free_per_s: last,
        converged,
        sessions_lost: lost,
        rounds,
    }
}
