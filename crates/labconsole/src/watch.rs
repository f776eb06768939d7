//! `watch S`: a switch's port counters, redrawn once a second in place
//! (packets and bits per second each way, drops and errors), until a key
//! is pressed, Ctrl-C, or the given seconds are over. The counters are the
//! kernel's, of the switch's root-namespace interfaces, read through
//! netlink: the same numbers for every switch kind, and reading them costs
//! the switch nothing. Without a terminal it prints a few plain blocks.

use crate::ConsoleError;
use crossterm::{cursor, event, terminal, QueueableCommand};
use netlab::kernel::{counters_of, Counters, Nl};
use netlab::run::Port;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

async fn read(ports: &[Port]) -> Result<Vec<Counters>, ConsoleError> {
    let nl = Nl::here().map_err(ConsoleError::io("netlink"))?;
    let mut out = Vec::new();
    for p in ports {
        let l = nl
            .link(&p.interface)
            .await
            .map_err(ConsoleError::io(p.interface.clone()))?;
        out.push(counters_of(&l));
    }
    Ok(out)
}

fn rate(now: u64, then: u64, secs: f64) -> f64 {
    now.saturating_sub(then) as f64 / secs
}

fn block(switch: &str, ports: &[Port], now: &[Counters], then: &[Counters], secs: f64, live: bool) -> Vec<String> {
    let mut lines = vec![
        format!("{switch}: port counters{}", if live { " (any key stops)" } else { "" }),
        format!(
            "{:>4} {:<10} {:>10} {:>10} {:>11} {:>11} {:>9} {:>9}",
            "port", "peer", "rx pkt/s", "tx pkt/s", "rx Mbit/s", "tx Mbit/s", "rx drops", "tx drops"
        ),
    ];
    for ((p, n), t) in ports.iter().zip(now).zip(then) {
        lines.push(format!(
            "{:>4} {:<10} {:>10.0} {:>10.0} {:>11.2} {:>11.2} {:>9} {:>9}",
            p.no,
            p.peer,
            rate(n.rx_packets, t.rx_packets, secs),
            rate(n.tx_packets, t.tx_packets, secs),
            rate(n.rx_bytes, t.rx_bytes, secs) * 8.0 / 1e6,
            rate(n.tx_bytes, t.tx_bytes, secs) * 8.0 / 1e6,
            n.rx_dropped,
            n.tx_dropped,
        ));
    }
    lines
}

/// Restores the terminal however `run` ends.
struct Raw;
impl Drop for Raw {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

pub fn run(
    rt: &tokio::runtime::Handle,
    switch: &str,
    ports: &[Port],
    seconds: Option<u32>,
    interrupted: &AtomicBool,
) -> Result<(), ConsoleError> {
    let live = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let until =
        Instant::now() + Duration::from_secs(seconds.map(u64::from).unwrap_or(if live { u64::MAX / 4 } else { 3 }));
    let mut then = rt.block_on(read(ports))?;
    let mut t_then = Instant::now();
    let _raw = if live {
        terminal::enable_raw_mode().map_err(ConsoleError::io("terminal"))?;
        Some(Raw)
    } else {
        None
    };
    let mut out = std::io::stdout();
    let mut drawn = 0u16;
    loop {
        let pressed = if live {
            let mut pressed = false;
            let step = Instant::now() + Duration::from_secs(1);
            while Instant::now() < step {
                if event::poll(Duration::from_millis(100)).unwrap_or(false) {
                    if let Ok(event::Event::Key(k)) = event::read() {
                        if k.kind == event::KeyEventKind::Press {
                            pressed = true;
                            break;
                        }
                    }
                }
            }
            pressed
        } else {
            std::thread::sleep(Duration::from_secs(1));
            false
        };
        if pressed || interrupted.load(Ordering::Relaxed) {
            break;
        }
        let now = rt.block_on(read(ports))?;
        let secs = t_then.elapsed().as_secs_f64();
        t_then = Instant::now();
        let lines = block(switch, ports, &now, &then, secs, live);
        then = now;
        if live {
            if drawn > 0 {
                let _ = out.queue(cursor::MoveUp(drawn));
            }
            let _ = out.queue(cursor::MoveToColumn(0));
            let _ = out.queue(terminal::Clear(terminal::ClearType::FromCursorDown));
            for l in &lines {
                let _ = write!(out, "{l}\r\n");
            }
            drawn = lines.len() as u16;
        } else {
            for l in &lines {
                let _ = writeln!(out, "{l}");
            }
        }
        let _ = out.flush();
        if Instant::now() >= until {
            break;
        }
    }
    Ok(())
}
