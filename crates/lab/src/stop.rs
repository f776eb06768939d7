//! SIGINT and SIGTERM for the benchmarks that build a testbed: instead of
//! dying with namespaces, veths and a switch process left behind, the run
//! notices at its next trial, unwinds (dropping the testbed tears it down)
//! and says what it measured so far.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Relaxed);
}

/// Installs the handlers (again is harmless).
pub fn catch_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installs a handler that only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// A stop signal has come.
pub fn stopping() -> bool {
    STOP.load(Relaxed)
}

/// Runs `f` on `rt` until it ends (Some) or a stop signal comes (None:
/// `f` is dropped, which cancels what it was doing; what it started is
/// dropped by its owners as the error goes up).
pub fn block_on_unless_stopped<F: std::future::Future>(rt: &tokio::runtime::Runtime, f: F) -> Option<F::Output> {
    if stopping() {
        return None;
    }
    rt.block_on(async {
        tokio::select! {
            r = f => Some(r),
            _ = async {
                while !stopping() {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            } => None,
        }
    })
}

/// What a trial returns once a stop signal has come.
#[derive(Debug, thiserror::Error)]
#[error("stopped by a signal; the testbed is removed, the samples so far are on disk")]
pub struct Stopped;

/// The error a trial returns once a stop signal has come.
pub fn check() -> Result<(), Stopped> {
    if stopping() {
        Err(Stopped)
    } else {
        Ok(())
    }
}
