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
pub async fn search(cfg: Config, max_rounds: usize, tolerance: f64, on_round: impl FnMut(&Round)) -> RateResult {
    let one = |c: Config| async move { Ok::<_, std::convert::Infallible>(run(c, |_| {}).await) };
    match search_with(cfg, max_rounds, tolerance, on_round, one).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// The search with each round run by `run_round` (the load spread over
/// several machines, say); its error ends the search.
pub async fn search_with<E, F: std::future::Future<Output = Result<crate::Report, E>>>(
    mut cfg: Config,
    max_rounds: usize,
    tolerance: f64,
    mut on_round: impl FnMut(&Round),
    mut run_round: impl FnMut(Config) -> F,
) -> Result<RateResult, E> {
    cfg.mode = Mode::Throughput;
    let mut search = crate::method::LossFreeRate::new(max_rounds, tolerance);
    let mut rounds = Vec::new();
    while let Some(offered) = search.next_offer() {
        cfg.offered_rate = offered;
        let r = run_round(cfg.clone()).await?;
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
        search.record(crate::method::RoundSeen {
            sent_per_s: sent,
            answered_per_s: answered,
            sessions_lost: r.sessions_lost,
        });
    }
    Ok(RateResult {
        loss_free_per_s: search.rate(),
        converged: search.converged(),
        sessions_lost: search.sessions_lost(),
        rounds,
    })
}
