//! The running switch as its owner sees it: its configuration, and the
//! handle that adds and removes ports, names its controllers and stops it.

use super::*;

pub struct Config {
    pub datapath_id: u64,
    pub ports: Vec<Arc<dyn PortIo>>,
    /// The OFPP_LOCAL port (a tap), if any.
    pub local: Option<Arc<dyn PortIo>>,
    /// Controllers to connect to (active connections).
    pub controllers: Vec<SocketAddr>,
    /// Addresses to listen on for controllers and tools (passive).
    pub listen: Vec<SocketAddr>,
    pub n_tables: usize,
    pub max_rules: usize,
    pub datapath_threads: usize,
    /// Cores to pin datapath threads to, in order (none: not pinned).
    pub cores: Vec<usize>,
    pub verbose: bool,
    /// Start with a table-miss rule that floods (a hub until a controller
    /// replaces it).
    pub flood_on_miss: bool,
    /// The AF_XDP ports' in-kernel fast path, and the ports (numbers) whose
    /// programs it has. The switch puts each in the DEVMAP while it can
    /// take redirected frames (`fast_egress`).
    pub fast_path: Option<Arc<packetio::fastpath::FastPath>>,
    pub fast_ports: Vec<u32>,
    /// How often the fast path's ports are checked again besides when the
    /// kernel announces a change (in case an announcement was missed).
    pub fast_egress_recheck: Duration,
    /// How long a connection may take to send its HELLO, and to finish a
    /// message once it has begun one, before it is closed.
    pub session_deadline: Duration,
    /// How many connections the listeners hold at once (None: from the
    /// open-file limit, `Limits::for_open_files`).
    pub limits: Option<Limits>,
    /// Open vSwitch's inactivity probe: a session from which nothing has
    /// been heard (and to which nothing could be written) for this long is
    /// sent an ECHO_REQUEST, and closed if still nothing is heard for as
    /// long again. None: never.
    pub inactivity_probe: Option<Duration>,
    /// The OpenFlow versions offered (of 1.0 and 1.3; empty: both).
    pub versions: Vec<u8>,
    /// Ports will be added and removed while the switch runs (a manager
    /// such as OVSDB): `datapath_threads` are started whatever the number
    /// of ports at the start.
    pub ports_may_change: bool,
    /// Also listen on this Unix socket (Open vSwitch's `BRIDGE.mgmt`, where
    /// `ovs-ofctl BRIDGE` looks); replaced if a stale one is there.
    pub listen_unix: Option<std::path::PathBuf>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            datapath_id: 1,
            ports: Vec::new(),
            local: None,
            controllers: Vec::new(),
            listen: Vec::new(),
            n_tables: 64,
            max_rules: 4_000_000,
            datapath_threads: 1,
            cores: Vec::new(),
            verbose: false,
            flood_on_miss: false,
            fast_path: None,
            fast_ports: Vec::new(),
            fast_egress_recheck: Duration::from_secs(1),
            session_deadline: Duration::from_secs(20),
            limits: None,
            inactivity_probe: Some(Duration::from_secs(5)),
            versions: Vec::new(),
            ports_may_change: false,
            listen_unix: None,
        }
    }
}

/// Controls a running switch; dropping it stops the switch.
pub struct Handle {
    pub shared: Arc<Shared>,
    pub agent: Arc<Mutex<Agent>>,
    /// The addresses actually listened on (port 0 resolved).
    pub listening: Vec<SocketAddr>,
    pub(super) threads: Vec<std::thread::JoinHandle<()>>,
    pub(super) control_stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The control thread's runtime, where controller connections run.
    pub(super) rt: tokio::runtime::Handle,
    pub(super) ctx: Ctx,
    /// The controllers connected to, each with its task and whether a
    /// session with it is up.
    pub(super) controllers: Mutex<Vec<Dialled>>,
    /// Held while the port table is replaced (one writer at a time).
    pub(super) port_writer: Mutex<()>,
    pub(super) listen_unix: Option<std::path::PathBuf>,
}

/// A controller dialled: its address, its task, whether a session is up.
pub(super) type Dialled = (SocketAddr, tokio::task::JoinHandle<()>, Arc<AtomicBool>);

/// Why a port could not be added.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("port {0} is taken")]
    NumberTaken(u32),
    #[error("a port named {0:?} is already on the switch")]
    NameTaken(String),
}

/// The highest number a port may have (above are OpenFlow's reserved ones).
pub(super) const MAX_PORT_NO: u32 = 0xffff_ff00;

impl Handle {
    pub fn pipeline(&self) -> &Arc<RwLock<Pipeline>> {
        &self.shared.pipeline
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    /// Adds a port while the switch runs, numbered `want` if given and
    /// free, else the lowest free number; the controllers hear
    /// PORT_STATUS ADD. Frames it receives are forwarded from the next
    /// round of the datapath thread its number falls to.
    pub fn add_port(&self, io: Arc<dyn PortIo>, want: Option<u32>) -> Result<u32, PortError> {
        let _w = self.port_writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut table = (*self.shared.port_table()).clone();
        if table.iter().any(|(_, p)| p.name() == io.name()) {
            return Err(PortError::NameTaken(io.name().to_string()));
        }
        let free = |n: u32| table.get(n).is_none();
        let port_no = match want.filter(|n| (1..=MAX_PORT_NO).contains(n)) {
            Some(n) if free(n) => n,
            Some(n) => return Err(PortError::NumberTaken(n)),
            None => (1..=MAX_PORT_NO).find(|&n| free(n)).unwrap_or(MAX_PORT_NO),
        };
        let idx = port_no as usize - 1;
        if table.by_no.len() <= idx {
            table.by_no.resize(idx + 1, None);
        }
        table.by_no[idx] = Some(io.clone());
        self.shared.ports.store(Arc::new(table));
        let mut fx = Effects::default();
        self.agent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add_port(port_state(port_no, &io), &mut fx);
        self.ctx.dispatch(fx);
        Ok(port_no)
    }

    /// Takes a port away while the switch runs (PORT_STATUS DELETE); its
    /// socket closes once the datapath thread reading it lets go. False if
    /// there was no such port.
    pub fn remove_port(&self, port_no: u32) -> bool {
        let _w = self.port_writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut fx = Effects::default();
        let known = self
            .agent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove_port(port_no, &mut fx);
        self.ctx.dispatch(fx);
        let mut table = (*self.shared.port_table()).clone();
        let slot = match port_no {
            ofwire::v13::port::LOCAL => &mut table.local,
            n => match table.by_no.get_mut((n as usize).wrapping_sub(1)) {
                Some(s) => s,
                None => return known,
            },
        };
        let had = slot.take().is_some();
        while table.by_no.last().is_some_and(Option::is_none) {
            table.by_no.pop();
        }
        self.shared.ports.store(Arc::new(table));
        known || had
    }

    /// The ports now on the switch: number and I/O.
    pub fn ports(&self) -> Vec<(u32, Arc<dyn PortIo>)> {
        self.shared.port_table().iter().map(|(n, p)| (n, p.clone())).collect()
    }

    /// A port's counters (None: no such port).
    pub fn port_counters(&self, port_no: u32) -> Option<ofwire::PortCounters> {
        let p = self.shared.pipeline.read().unwrap_or_else(|e| e.into_inner());
        p.ports.get(&port_no).map(|ps| ps.counters.snapshot())
    }

    /// Connects to exactly these controllers from now on: new ones are
    /// dialled (reconnecting with back-off), sessions with ones no longer
    /// named are closed.
    pub fn set_controllers(&self, addrs: &[SocketAddr]) {
        let mut held = self.controllers.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|(a, task, _)| {
            let keep = addrs.contains(a);
            if !keep {
                task.abort();
            }
            keep
        });
        for a in addrs {
            if held.iter().any(|(h, _, _)| h == a) {
                continue;
            }
            let up = Arc::new(AtomicBool::new(false));
            let task = self.rt.spawn(dial(self.ctx.clone(), *a, up.clone()));
            held.push((*a, task, up));
        }
    }

    /// Each controller dialled and whether a session with it is up.
    pub fn controllers(&self) -> Vec<(SocketAddr, bool)> {
        let held = self.controllers.lock().unwrap_or_else(|e| e.into_inner());
        held.iter().map(|(a, _, up)| (*a, up.load(Relaxed))).collect()
    }

    pub(super) fn shutdown(&mut self) {
        self.shared.stop.store(true, Relaxed);
        for (_, task, _) in self.controllers.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            task.abort();
        }
        if let Some(p) = self.listen_unix.take() {
            let _ = std::fs::remove_file(p);
        }
        if let Some(s) = self.control_stop.take() {
            let _ = s.send(());
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
