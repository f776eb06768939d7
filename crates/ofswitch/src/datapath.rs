//! Datapath threads: each owns the receive side of some ports, pulls frames
//! in batches, forwards them with a per-thread exact-match cache of plans
//! in front of the pipeline (cleared when the pipeline's generation moves),
//! and sends what comes out in batches per port. The pipeline's read lock
//! is taken once per batch; the control thread's writes wait for the batch
//! to end, which is what makes a BARRIER_REPLY true.

use crate::actions::{Packet, VnetHdr};
use crate::pipeline::{Emitted, Pipeline, Step, ToController};
use crate::port::PortIo;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// Frames taken from one port per round.
const BATCH: usize = 64;
/// Cached plans per thread before the cache is emptied.
const CACHE_MAX: usize = 65_536;

/// Everything a datapath thread shares with the rest of the switch.
pub struct Shared {
    pub pipeline: Arc<RwLock<Pipeline>>,
    /// Port I/O by port number (index = port_no - 1).
    pub ports: Vec<Arc<dyn PortIo>>,
    /// OFPP_LOCAL, if the switch has one.
    pub local: Option<Arc<dyn PortIo>>,
    pub to_controller: tokio::sync::mpsc::Sender<ToController>,
    pub stop: AtomicBool,
    /// PACKET_INs dropped because the control thread was behind.
    pub packet_ins_dropped: std::sync::atomic::AtomicU64,
}

impl Shared {
    pub fn port(&self, port_no: u32) -> Option<&Arc<dyn PortIo>> {
        if port_no == ofwire::v13::port::LOCAL {
            return self.local.as_ref();
        }
        self.ports.get((port_no as usize).wrapping_sub(1))
    }

    /// Every port with its number (LOCAL last).
    pub fn all_ports(&self) -> impl Iterator<Item = (u32, &Arc<dyn PortIo>)> {
        self.ports
            .iter()
            .enumerate()
            .map(|(i, p)| (i as u32 + 1, p))
            .chain(self.local.iter().map(|p| (ofwire::v13::port::LOCAL, p)))
    }

    /// Sends frames the pipeline emitted, batched per port, and counts them;
    /// their buffers go back to `free` for reuse.
    pub fn transmit_recycling(&self, outputs: &mut Vec<(u32, Packet)>, free: &mut Vec<Vec<u8>>) {
        self.send_all(outputs);
        for (_, p) in outputs.drain(..) {
            if free.len() < 1024 {
                let mut d = p.data;
                d.clear();
                free.push(d);
            }
        }
    }

    /// Sends frames the pipeline emitted, batched per port, and counts them.
    pub fn transmit(&self, outputs: &mut Vec<(u32, Packet)>) {
        self.send_all(outputs);
        outputs.clear();
    }

    fn send_all(&self, outputs: &mut [(u32, Packet)]) {
        if outputs.is_empty() {
            return;
        }
        outputs.sort_by_key(|(p, _)| *p);
        let pipeline = self.pipeline.read().unwrap_or_else(|e| e.into_inner());
        let mut i = 0;
        while i < outputs.len() {
            let port_no = outputs[i].0;
            let j = i + outputs[i..].iter().take_while(|(p, _)| *p == port_no).count();
            if let Some(io) = self.port(port_no) {
                let frames: Vec<(&[u8], VnetHdr)> = outputs[i..j].iter().map(|(_, p)| (&p.data[..], p.vnet)).collect();
                let sent = io.send(&frames);
                if let Some(ps) = pipeline.ports.get(&port_no) {
                    let bytes: usize = frames[..sent].iter().map(|(d, _)| d.len()).sum();
                    ps.counters.tx.add_many(sent as u64, bytes as u64);
                    if sent < frames.len() {
                        ps.counters.tx_dropped.fetch_add((frames.len() - sent) as u64, Relaxed);
                    }
                }
            }
            i = j;
        }
    }
}

/// Packets and bytes per plan within one batch, for `count_bulk`.
#[derive(Default)]
struct Tally {
    entries: Vec<(Arc<Vec<Step>>, u64, u64)>,
}

impl Tally {
    fn add(&mut self, plan: Arc<Vec<Step>>, bytes: u64) {
        // The same plan is usually one of the last few (a batch holds few
        // flows); a plan found nowhere near gets its own entry, which
        // counts the same.
        let n = self.entries.len();
        if let Some(e) = self.entries[n.saturating_sub(8)..]
            .iter_mut()
            .rev()
            .find(|e| Arc::ptr_eq(&e.0, &plan))
        {
            e.1 += 1;
            e.2 += bytes;
            return;
        }
        self.entries.push((plan, 1, bytes));
    }
}

/// Runs one datapath thread over `my_ports` (port numbers) until `stop`.
pub fn run(shared: Arc<Shared>, my_ports: Vec<u32>, core: Option<usize>) {
    if let Some(c) = core {
        pin_to_core(c);
    }
    let mut cache: FxHashMap<crate::key::Key, (Arc<Vec<Step>>, bool)> = FxHashMap::default();
    let mut tally = Tally::default();
    let mut cache_generation = u64::MAX;
    let mut batch: Vec<Packet> = Vec::with_capacity(BATCH);
    let mut emitted = Emitted::default();
    let mut free: Vec<Vec<u8>> = Vec::with_capacity(1024);
    let mut pollfds: Vec<libc::pollfd> = my_ports
        .iter()
        .filter_map(|p| shared.port(*p))
        .flat_map(|io| io.poll_fds())
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut idle_rounds = 0u32;
    while !shared.stop.load(Relaxed) {
        let mut got = 0;
        for &port_no in &my_ports {
            let Some(io) = shared.port(port_no) else { continue };
            batch.clear();
            let r = io.recv(BATCH, &mut |data, vnet| {
                let mut buf = free.pop().unwrap_or_default();
                buf.extend_from_slice(data);
                batch.push(Packet::with_vnet(buf, port_no, vnet));
            });
            if r.is_err() || batch.is_empty() {
                continue;
            }
            got += batch.len();
            let now = Instant::now();
            {
                let pipeline = shared.pipeline.read().unwrap_or_else(|e| e.into_inner());
                if pipeline.generation != cache_generation || cache.len() > CACHE_MAX {
                    cache.clear();
                    cache_generation = pipeline.generation;
                }
                let now_ms = pipeline.now_ms(now);
                if let Some(ps) = pipeline.ports.get(&port_no) {
                    let bytes: usize = batch.iter().map(|p| p.data.len()).sum();
                    ps.counters.rx.add_many(batch.len() as u64, bytes as u64);
                }
                // Counters are shared atomics: a batch adds to each once
                // per plan, not once per packet.
                for mut pkt in batch.drain(..) {
                    let (plan, bulk) = cache
                        .entry(pkt.key)
                        .or_insert_with(|| {
                            let plan = pipeline.plan(&pkt.key);
                            let bulk = Pipeline::counts_in_bulk(&plan);
                            (Arc::new(plan), bulk)
                        })
                        .clone();
                    let bytes = pkt.data.len() as u64;
                    if bulk {
                        Pipeline::execute_counting(&plan, &mut pkt, now_ms, now, &mut emitted, false);
                        tally.add(plan, bytes);
                    } else {
                        pipeline.count_lookups(&plan, bytes as usize);
                        Pipeline::execute(&plan, &mut pkt, now_ms, now, &mut emitted);
                    }
                }
                for (plan, packets, bytes) in tally.entries.drain(..) {
                    pipeline.count_bulk(&plan, packets, bytes, now_ms);
                }
            }
            shared.transmit_recycling(&mut emitted.outputs, &mut free);
            for tc in emitted.to_controller.drain(..) {
                if shared.to_controller.try_send(tc).is_err() {
                    shared.packet_ins_dropped.fetch_add(1, Relaxed);
                }
            }
        }
        if got == 0 {
            idle_rounds += 1;
            // Yield while spinning: kernel work queued on this core (the
            // softirq that delivers what we just sent, when it has moved to
            // ksoftirqd) runs now rather than when our time slice ends.
            // SAFETY: plain syscall.
            unsafe { libc::sched_yield() };
            // Spin briefly (a burst's next frames are close), then sleep in
            // poll so an idle switch costs next to nothing; the timeout is
            // short because not every port type wakes poll reliably.
            if idle_rounds > 64 {
                for p in pollfds.iter_mut() {
                    p.revents = 0;
                }
                // SAFETY: pollfds is a valid array of the given length.
                unsafe { libc::poll(pollfds.as_mut_ptr(), pollfds.len() as libc::nfds_t, 1) };
            }
        } else {
            idle_rounds = 0;
        }
    }
}

fn pin_to_core(core: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
