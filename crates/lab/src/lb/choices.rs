//! `bench lb`'s choices: the policies, the switch, the loads, the clients
//! and the counter the `load` policy reads, each one name on the command
//! line, in a file and in reports (`check::choice!`).

crate::check::choice! {
    /// A balancing policy of the `lb` app, by the name its configuration
    /// gives it (`lb::config::POLICIES`; a unit test keeps the two lists one).
    pub enum LbPolicy {
        RoundRobin = "round-robin",
        Random = "random",
        TxBytes = "txbytes",
        CpuqLoad = "cpuq-load",
        Load = "load",
        LoadPrevDelta = "load-prev-delta",
        LeastConnections = "least-connections",
        PowerOfTwo = "power-of-two",
        Weighted = "weighted",
        Maglev = "maglev",
        LoadPrevAdaptive = "load-prev-adaptive",
    }
}

impl LbPolicy {
    /// Whether it asks every replica's agent before each choice.
    pub(super) fn asks_servers(self) -> bool {
        ::lb::policy::Kind::from_name(self.name()).is_some_and(|k| k.asks_servers())
    }
}

crate::check::choice! {
    /// The OpenFlow switch between the clients and the replicas.
    pub enum LbSwitch {
        Sdnlab = "sdnlab",
        Ovs = "ovs",
    }
}

impl LbSwitch {
    /// The emulation's switch kind it is.
    pub(super) fn kind(self) -> netlab::run::SwitchKind {
        match self {
            LbSwitch::Sdnlab => netlab::run::SwitchKind::Sdnlab,
            LbSwitch::Ovs => netlab::run::SwitchKind::Ovs,
        }
    }
}

crate::check::choice! {
    /// What the clients ask for.
    pub enum LbLoad {
        /// Every request the same 100 KB file.
        Homogeneous = "homogeneous",
        /// Video chunks of many sizes.
        Heterogeneous = "heterogeneous",
    }
}

crate::check::choice! {
    /// The HTTP client that offers the load.
    pub enum LbClient {
        /// Ours: latency from each request's intended start.
        OpenLoop = "open-loop",
        /// httperf.
        Httperf = "httperf",
    }
}

crate::check::choice! {
    /// Which port counter the `load` policy reads.
    pub enum LoadCounter {
        /// Responses: the servers' work.
        Rx = "rx",
        /// Requests (the paper's formula).
        Tx = "tx",
        /// Each as a variant of its own.
        Both = "both",
    }
}
