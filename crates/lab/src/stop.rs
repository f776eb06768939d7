//! How a run is stopped early: a token the caller hands in with the run's
//! `Place`, that the run checks between trials. The command line stops it
//! on SIGINT and SIGTERM (it owns the process's signals; a library does
//! not); a test or an embedding program calls [`Stop::stop`]. Instead of
//! dying with namespaces, veths and a switch process left behind, the run
//! notices at its next trial, unwinds (dropping the testbed tears it down)
//! and says what it measured so far.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// A run's stop token: clones share it.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A token nobody has stopped.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks every holder to stop (at its next check).
    pub fn stop(&self) {
        self.0.store(true, Relaxed);
    }

    /// Whether it was asked to stop.
    pub fn stopping(&self) -> bool {
        self.0.load(Relaxed)
    }

    /// The flag itself, for a signal handler to set (`signal_hook::flag`).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }

    /// The error a trial returns once stopped.
    pub fn check(&self) -> Result<(), Stopped> {
        if self.stopping() {
            Err(Stopped)
        } else {
            Ok(())
        }
    }

    /// Runs `f` on `rt` until it ends (Some) or the token is stopped (None:
    /// `f` is dropped, which cancels what it was doing; what it started is
    /// dropped by its owners as the error goes up).
    pub fn block_on_unless_stopped<F: std::future::Future>(
        &self,
        rt: &tokio::runtime::Runtime,
        f: F,
    ) -> Option<F::Output> {
        if self.stopping() {
            return None;
        }
        rt.block_on(async {
            tokio::select! {
                r = f => Some(r),
                _ = async {
                    while !self.stopping() {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                } => None,
            }
        })
    }
}

/// What a trial returns once its run was stopped.
#[derive(Debug, thiserror::Error)]
#[error("stopped by a signal; the testbed is removed, the samples so far are on disk")]
pub struct Stopped;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_reaches_every_clone_and_cuts_a_wait_short() {
        let s = Stop::new();
        let held = s.clone();
        assert!(held.check().is_ok());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        assert_eq!(held.block_on_unless_stopped(&rt, async { 3 }), Some(3));
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            s.stop();
        });
        let t0 = std::time::Instant::now();
        let r = held.block_on_unless_stopped(&rt, async {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await
        });
        assert!(r.is_none());
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        assert!(held.check().is_err());
        t.join().unwrap();
    }
}
