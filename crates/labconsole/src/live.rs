//! How the command line shows a running experiment: `lab`'s events drawn
//! as an indicatif progress bar with messages above it on a terminal, and
//! as plain lines on stderr otherwise (a log file, CI). cbench's own lines
//! (`--cbench-output`) go to stdout as cbench prints them.

use indicatif::{ProgressBar, ProgressStyle};
use lab::{Event, Observer};
use std::io::IsTerminal;
use std::sync::Mutex;

pub struct Progress {
    bar: Mutex<Option<ProgressBar>>,
    terminal: bool,
    /// Print cbench's per-loop and RESULT lines on stdout.
    pub cbench_output: bool,
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            bar: Mutex::new(None),
            terminal: std::io::stderr().is_terminal(),
            cbench_output: false,
        }
    }

    /// Runs `f` with the bar (if one is drawn) out of the way.
    fn above(&self, f: impl FnOnce()) {
        match self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }
}

/// cbench's clock: 12:34:56.789 (UTC).
fn clock() -> String {
    let secs = report::now_unix();
    let day = secs % 86400.0;
    format!(
        "{:02}:{:02}:{:06.3}",
        (day / 3600.0) as u32,
        ((day % 3600.0) / 60.0) as u32,
        day % 60.0
    )
}

impl Observer for Progress {
    fn event(&self, e: Event<'_>) {
        match e {
            Event::Line(s) => self.above(|| eprintln!("{s}")),
            Event::Plan { steps } => {
                if self.terminal {
                    let b = ProgressBar::new(steps);
                    b.set_style(
                        ProgressStyle::with_template("{bar:30} {pos}/{len} trials, {elapsed} {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(b);
                }
            }
            Event::Step { status } => match self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                Some(b) => {
                    b.set_message(status.to_string());
                    b.inc(1);
                }
                None => eprintln!("  {status}"),
            },
            Event::Status(s) => {
                if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                    b.set_message(s.to_string());
                } else if self.terminal {
                    eprint!("\r  {s}   ");
                }
            }
            Event::PlanDone => {
                if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    b.finish_and_clear();
                }
            }
            Event::CbenchLoop {
                switches,
                responses_per_s,
            } if self.cbench_output => {
                let per = responses_per_s / switches as f64;
                let cols: Vec<String> = (0..switches.min(64)).map(|_| format!("{per:.2}")).collect();
                self.above(|| {
                    println!(
                        "{} {:<4} switches: flows/sec:  {}   total = {:.6} per ms",
                        clock(),
                        switches,
                        cols.join("  "),
                        responses_per_s / 1000.0
                    )
                });
            }
            Event::CbenchScenario { switches, rates } if self.cbench_output => {
                let s = stats::summary(rates);
                // cbench's stdev is the population one.
                let m = s.mean;
                let pop = (rates.iter().map(|x| (x - m).powi(2)).sum::<f64>() / rates.len() as f64).sqrt();
                self.above(|| {
                    println!(
                        "RESULT: {} switches {} tests min/max/avg/stdev = {:.2}/{:.2}/{:.2}/{:.2} responses/s",
                        switches,
                        rates.len(),
                        s.min,
                        s.max,
                        s.mean,
                        pop
                    )
                });
            }
            Event::CbenchLoop { .. } | Event::CbenchScenario { .. } => {}
        }
    }
}
