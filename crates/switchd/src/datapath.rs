//! Datapath threads: each owns the receive side of some ports, pulls frames
//! in batches, forwards them with a per-thread exact-match cache of plans
//! in front of the pipeline (cleared when the pipeline's generation moves),
//! and sends what comes out in batches per port. The pipeline's read lock
//! is taken once per batch; the control thread's writes wait for the batch
//! to end, which is what makes a BARRIER_REPLY true.

use ofswitch::actions::{Packet, VnetHdr};
use ofswitch::pipeline::{Emitted, Pipeline, Step, ToController};
use packetio::fastpath::{FastPath, FlowKey};
use packetio::port::PortIo;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// Frames taken from one port per round.
const BATCH: usize = 64;
/// Cached plans per thread before the cache is emptied.
const CACHE_MAX: usize = 65_536;

/// The ports' I/O by number. Replaced whole when a port is added or
/// removed (by a manager such as OVSDB); readers take the current table
/// without a lock, and a port taken away is closed when the last reader
/// lets go of it.
#[derive(Default, Clone)]
pub struct PortTable {
    /// index = port_no - 1; None: a number not in use.
    pub by_no: Vec<Option<Arc<dyn PortIo>>>,
    /// OFPP_LOCAL, if the switch has one.
    pub local: Option<Arc<dyn PortIo>>,
}

impl PortTable {
    pub fn get(&self, port_no: u32) -> Option<&Arc<dyn PortIo>> {
        if port_no == ofwire::v13::port::LOCAL {
            return self.local.as_ref();
        }
        self.by_no.get((port_no as usize).wrapping_sub(1))?.as_ref()
    }

    /// Every port with its number (LOCAL last).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Arc<dyn PortIo>)> {
        self.by_no
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((i as u32 + 1, p.as_ref()?)))
            .chain(self.local.iter().map(|p| (ofwire::v13::port::LOCAL, p)))
    }

    /// The ports datapath thread `thread` of `threads` reads: a port stays
    /// with one thread for its life (by number), LOCAL with the first.
    pub fn of_thread(&self, thread: usize, threads: usize) -> Vec<u32> {
        self.iter()
            .map(|(p, _)| p)
            .filter(|&p| match p {
                ofwire::v13::port::LOCAL => thread == 0,
                p => (p as usize - 1) % threads.max(1) == thread,
            })
            .collect()
    }
}

/// Everything a datapath thread shares with the rest of the switch.
pub struct Shared {
    pub pipeline: Arc<RwLock<Pipeline>>,
    pub ports: arc_swap::ArcSwap<PortTable>,
    pub to_controller: tokio::sync::mpsc::Sender<ToController>,
    pub stop: AtomicBool,
    /// PACKET_INs dropped because the control thread was behind.
    pub packet_ins_dropped: std::sync::atomic::AtomicU64,
    /// The AF_XDP ports' in-kernel fast path (see `packetio::fastpath`), and
    /// which ports it covers (index = port_no - 1).
    pub fast_path: Option<Arc<FastPath>>,
    pub fast_ports: Vec<bool>,
    /// The pipeline generation the fast path was last invalidated for.
    pub fast_generation: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// Invalidates the fast path's flows if the tables changed since the
    /// last call; the control thread calls it before sending anything.
    pub fn sync_fast_path(&self) {
        if let Some(fp) = &self.fast_path {
            let g = self.pipeline.read().unwrap_or_else(|e| e.into_inner()).generation;
            if self.fast_generation.swap(g, std::sync::atomic::Ordering::AcqRel) != g {
                if let Err(e) = fp.invalidate() {
                    // Try again at the next call rather than leave stale flows.
                    self.fast_generation
                        .store(u64::MAX, std::sync::atomic::Ordering::Release);
                    tracing::warn!("sdnlab switch: cannot invalidate the fast path: {e}");
                }
            }
        }
    }

    fn is_fast(&self, port_no: u32) -> bool {
        self.fast_ports
            .get((port_no as usize).wrapping_sub(1))
            .copied()
            .unwrap_or(false)
    }

    /// The port table as it is now.
    pub fn port_table(&self) -> Arc<PortTable> {
        self.ports.load_full()
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
        let table = self.ports.load();
        let pipeline = self.pipeline.read().unwrap_or_else(|e| e.into_inner());
        let mut i = 0;
        while i < outputs.len() {
            let port_no = outputs[i].0;
            let j = i + outputs[i..].iter().take_while(|(p, _)| *p == port_no).count();
            if let Some(io) = table.get(port_no) {
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

/// How often a datapath thread folds the fast path's counters into the
/// rules, tables and ports (and so how stale their statistics and idle
/// times may be for flows forwarded in the kernel).
const FOLD_EVERY: std::time::Duration = std::time::Duration::from_millis(100);
/// A fast-path flow that forwarded nothing for this long is removed.
const FAST_IDLE: std::time::Duration = std::time::Duration::from_secs(10);

/// A flow this thread put in the fast path.
struct Offloaded {
    plan: Arc<Vec<Step>>,
    in_port: u32,
    out_port: u32,
    /// The fast path's generation when it was inserted.
    generation: u32,
    /// Packets and bytes of it already counted.
    counted: (u64, u64),
    last_active: Instant,
}

/// The flows one datapath thread put in the fast path: their counters are
/// folded into the pipeline's by this thread, as if it had forwarded them.
/// The kernel's counters are read (and entries removed) outside the
/// pipeline's lock, so a fold of many flows does not hold FLOW_MODs back.
#[derive(Default)]
struct FastFlows {
    flows: FxHashMap<FlowKey, Offloaded>,
    /// Flows planned under tables since changed: counted and removed at
    /// the next fold, unless offered again first.
    retired: FxHashMap<FlowKey, Offloaded>,
    last_fold: Option<Instant>,
    /// Scratch for a fold: counters read, keys to remove.
    read_index: FxHashMap<FlowKey, (u64, u64)>,
    gone: Vec<FlowKey>,
}

impl FastFlows {
    /// Puts `key`'s flow in the fast path unless it is there under the
    /// current generation.
    #[allow(clippy::too_many_arguments)]
    fn offer(
        &mut self,
        fp: &FastPath,
        pipeline: &Pipeline,
        key: FlowKey,
        plan: &Arc<Vec<Step>>,
        in_port: u32,
        out_port: u32,
        now: Instant,
        now_ms: u64,
    ) {
        let generation = fp.generation();
        if self.flows.get(&key).is_some_and(|o| o.generation == generation) {
            return;
        }
        // Invalidated, or retired with the old tables: count what it
        // forwarded before its entry (and counters) are replaced.
        if let Some(o) = self.flows.remove(&key).or_else(|| self.retired.remove(&key)) {
            if let Ok(Some(c)) = fp.counts(&key) {
                o.count(pipeline, c, now_ms);
            }
        }
        // A full map keeps the flow on the slow path.
        if fp.insert(&key, out_port).is_ok() {
            self.flows.insert(
                key,
                Offloaded {
                    plan: plan.clone(),
                    in_port,
                    out_port,
                    generation,
                    counted: (0, 0),
                    last_active: now,
                },
            );
        }
    }

    /// The tables changed: every flow's plan is stale. Cheap, for under
    /// the pipeline's lock; the next fold counts and removes them.
    fn retire_all(&mut self) {
        if self.retired.is_empty() {
            std::mem::swap(&mut self.flows, &mut self.retired);
        } else {
            self.retired.extend(self.flows.drain());
        }
    }

    fn is_empty(&self) -> bool {
        self.flows.is_empty() && self.retired.is_empty()
    }

    /// Due every `FOLD_EVERY`, and at once with flows retired.
    fn fold_due(&self, now: Instant) -> bool {
        !self.retired.is_empty() || self.last_fold.is_none_or(|t| now.duration_since(t) >= FOLD_EVERY)
    }

    /// Adds what the kernel forwarded since the last fold to the rules',
    /// tables' and ports' counters; removes retired flows and flows idle
    /// for `FAST_IDLE`. Takes the pipeline's read lock only to count.
    fn fold(&mut self, fp: &FastPath, lock: &RwLock<Pipeline>, now: Instant) {
        self.last_fold = Some(now);
        self.read_index.clear();
        // This thread's flows only: each a read of the table's memory (no
        // system call), so no batch read of every thread's flows.
        for key in self.flows.keys().chain(self.retired.keys()) {
            match fp.counts(key) {
                Ok(Some(c)) => {
                    self.read_index.insert(*key, c);
                }
                Ok(None) => {}
                // Counted at the next fold; nothing is removed unread.
                Err(_) => return,
            }
        }
        let counts = &self.read_index;
        self.gone.clear();
        {
            let pipeline = lock.read().unwrap_or_else(|e| e.into_inner());
            let now_ms = pipeline.now_ms(now);
            let gone = &mut self.gone;
            self.flows.retain(|key, o| {
                let c = counts.get(key).copied();
                if let Some(c) = c {
                    if c.0 > o.counted.0 {
                        o.last_active = now;
                    }
                    o.count(&pipeline, c, now_ms);
                    o.counted = c;
                }
                let keep = c.is_some() && now.duration_since(o.last_active) < FAST_IDLE;
                if !keep && c.is_some() {
                    gone.push(*key);
                }
                keep
            });
            for (key, o) in self.retired.drain() {
                if let Some(&c) = counts.get(&key) {
                    o.count(&pipeline, c, now_ms);
                    gone.push(key);
                }
            }
        }
        let _ = fp.remove_many(&self.gone);
    }
}

impl Offloaded {
    /// Counts the packets and bytes in `total` beyond those already counted.
    fn count(&self, pipeline: &Pipeline, total: (u64, u64), now_ms: u64) {
        let packets = total.0.saturating_sub(self.counted.0);
        let bytes = total.1.saturating_sub(self.counted.1);
        if packets == 0 {
            return;
        }
        pipeline.count_bulk(&self.plan, packets, bytes, now_ms);
        if let Some(ps) = pipeline.ports.get(&self.in_port) {
            ps.counters.rx.add_many(packets, bytes);
        }
        if let Some(ps) = pipeline.ports.get(&self.out_port) {
            ps.counters.tx.add_many(packets, bytes);
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

/// A key's plan, whether it counts in bulk, and the port the fast path can
/// send it out of in the kernel.
type Cached = (Arc<Vec<Step>>, bool, Option<u32>);

/// Runs datapath thread `thread` of `threads` until `stop`, over the ports
/// `PortTable::of_thread` gives it (taken again when the table changes).
pub fn run(shared: Arc<Shared>, thread: usize, threads: usize, core: Option<usize>) {
    if let Some(c) = core {
        pin_to_core(c);
    }
    let mut cache: FxHashMap<ofswitch::key::Key, Cached> = FxHashMap::default();
    let mut fast = FastFlows::default();
    let mut tally = Tally::default();
    let mut cache_generation = u64::MAX;
    let mut batch: Vec<Packet> = Vec::with_capacity(BATCH);
    let mut emitted = Emitted::default();
    let mut free: Vec<Vec<u8>> = Vec::with_capacity(1024);
    let mut table = shared.port_table();
    let mut my_ports = table.of_thread(thread, threads);
    let mut pollfds = poll_fds(&table, &my_ports);
    let mut idle_rounds = 0u32;
    while !shared.stop.load(Relaxed) {
        // A port added or removed: this thread's share is taken again
        // (the old table, and the ports only it holds, go here).
        if !Arc::ptr_eq(&table, &shared.ports.load()) {
            table = shared.port_table();
            my_ports = table.of_thread(thread, threads);
            pollfds = poll_fds(&table, &my_ports);
        }
        if let Some(fp) = shared.fast_path.as_ref().filter(|_| !fast.is_empty()) {
            let now = Instant::now();
            if fast.fold_due(now) {
                fast.fold(fp, &shared.pipeline, now);
            }
        }
        let mut got = 0;
        for &port_no in &my_ports {
            let Some(io) = table.get(port_no) else { continue };
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
                let now_ms = pipeline.now_ms(now);
                let tables_changed = pipeline.generation != cache_generation;
                if tables_changed {
                    fast.retire_all();
                }
                if tables_changed || cache.len() > CACHE_MAX {
                    cache.clear();
                    cache_generation = pipeline.generation;
                }
                if let Some(ps) = pipeline.ports.get(&port_no) {
                    let bytes: usize = batch.iter().map(|p| p.data.len()).sum();
                    ps.counters.rx.add_many(batch.len() as u64, bytes as u64);
                }
                // Counters are shared atomics: a batch adds to each once
                // per plan, not once per packet.
                for mut pkt in batch.drain(..) {
                    let (plan, bulk, fast_out) = cache
                        .entry(pkt.key)
                        .or_insert_with(|| {
                            let plan = pipeline.plan(&pkt.key);
                            let bulk = Pipeline::counts_in_bulk(&plan);
                            let fast_out = Pipeline::sole_output(&plan, port_no)
                                .filter(|&o| shared.is_fast(port_no) && shared.is_fast(o));
                            (Arc::new(plan), bulk, fast_out)
                        })
                        .clone();
                    // A frame from a stack that left its checksum to
                    // offload must be finished on the way out, which the
                    // kernel's redirect would not do: such flows stay here.
                    if let (Some(out), Some(fp)) = (fast_out, &shared.fast_path) {
                        if pkt.vnet == VnetHdr::default() {
                            if let Some(k) = FlowKey::of(port_no, &pkt.data) {
                                fast.offer(fp, &pipeline, k, &plan, port_no, out, now, now_ms);
                            }
                        }
                    }
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

/// What `poll` waits on for `ports`.
fn poll_fds(table: &PortTable, ports: &[u32]) -> Vec<libc::pollfd> {
    ports
        .iter()
        .filter_map(|p| table.get(*p))
        .flat_map(|io| io.poll_fds())
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect()
}

fn pin_to_core(core: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
