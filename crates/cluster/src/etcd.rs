//! A private etcd for one run: 1, 3 or more members (Debian's
//! `etcd-server`) on ports of their own (loopback's, or one address's
//! when other machines use it: a cluster's members on workers), data and logs in a
//! directory the caller gives (a run directory, a test's scratch). The
//! members are stopped when this is dropped; one can be killed and started
//! again (quorum tests, failover).

use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("starting etcd: {0}")]
    Spawn(std::io::Error),
    #[error(transparent)]
    Install(#[from] netlab::install::InstallError),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("etcd member {name} {how}; its log: {log}, which ends: {last}")]
    Unhealthy {
        name: String,
        /// "ended at once" or "did not become healthy within N s".
        how: String,
        log: String,
        /// The log's last line (etcd says there why it stopped).
        last: String,
    },
}

struct Node {
    name: String,
    client: u16,
    peer: u16,
    child: Option<Child>,
}

/// A running private etcd cluster.
pub struct Etcd {
    dir: PathBuf,
    /// The address every member listens on.
    ip: Ipv4Addr,
    nodes: Vec<Node>,
    initial_cluster: String,
}

/// A port on `ip` free now: netlab's, below the ephemeral range, so no
/// other process takes it before etcd binds it.
fn free_port(ip: Ipv4Addr) -> Result<u16, EtcdError> {
    netlab::ports::free_port(ip.into()).map_err(|e| EtcdError::Io("finding a free port".into(), e))
}

impl Etcd {
    /// Starts `members` etcd members with their files under `dir` (made
    /// 0700 if missing) and waits until each one is healthy.
    pub fn start(dir: &Path, members: usize) -> Result<Etcd, EtcdError> {
        Etcd::start_on(dir, members, Ipv4Addr::LOCALHOST)
    }

    /// `start`, every member listening on `ip` (an address other machines
    /// reach: the cluster's members on workers).
    pub fn start_on(dir: &Path, members: usize, ip: Ipv4Addr) -> Result<Etcd, EtcdError> {
        netlab::install::need(&[netlab::install::ETCD])?;
        std::fs::create_dir_all(dir).map_err(|e| EtcdError::Io(dir.display().to_string(), e))?;
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
        // A port taken between choosing it and etcd binding it (another
        // program's listener) ends that member at once: start afresh on
        // new ports, a few times.
        let mut last = None;
        for _ in 0..3 {
            match Etcd::start_once(dir, members, ip) {
                Ok(e) => return Ok(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("tried"))
    }

    fn start_once(dir: &Path, members: usize, ip: Ipv4Addr) -> Result<Etcd, EtcdError> {
        let mut nodes = Vec::new();
        for i in 1..=members.max(1) {
            nodes.push(Node {
                name: format!("etcd{i}"),
                client: free_port(ip)?,
                peer: free_port(ip)?,
                child: None,
            });
        }
        let initial_cluster = nodes
            .iter()
            .map(|n| format!("{}=http://{ip}:{}", n.name, n.peer))
            .collect::<Vec<_>>()
            .join(",");
        let mut e = Etcd {
            dir: dir.to_path_buf(),
            ip,
            nodes,
            initial_cluster,
        };
        for i in 0..e.nodes.len() {
            e.spawn(i)?;
        }
        for i in 0..e.nodes.len() {
            e.wait_healthy(i, Duration::from_secs(20))?;
        }
        Ok(e)
    }

    fn spawn(&mut self, i: usize) -> Result<(), EtcdError> {
        let n = &self.nodes[i];
        let log = self.dir.join(format!("{}.log", n.name));
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| EtcdError::Io(log.display().to_string(), e))?;
        let err = out
            .try_clone()
            .map_err(|e| EtcdError::Io(log.display().to_string(), e))?;
        let mut cmd = Command::new("etcd");
        cmd.args(["--name", &n.name])
            .arg("--data-dir")
            .arg(self.dir.join(&n.name))
            .args(["--listen-client-urls", &format!("http://{}:{}", self.ip, n.client)])
            .args(["--advertise-client-urls", &format!("http://{}:{}", self.ip, n.client)])
            .args(["--listen-peer-urls", &format!("http://{}:{}", self.ip, n.peer)])
            .args([
                "--initial-advertise-peer-urls",
                &format!("http://{}:{}", self.ip, n.peer),
            ])
            .args(["--initial-cluster", &self.initial_cluster])
            .args(["--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", &format!("sdnlab-{}", std::process::id())])
            // Quick elections on loopback: leader loss is noticed in about
            // half a second instead of a second.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            // A group of its own: a Ctrl-C at the terminal reaches the
            // program that started it, which stops it in order (its
            // members first), not etcd in the middle of a run.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        die_with_parent(&mut cmd);
        let child = cmd.spawn().map_err(EtcdError::Spawn)?;
        self.nodes[i].child = Some(child);
        Ok(())
    }

    /// Whether member `i` answers its /health with "true".
    pub fn healthy(&self, i: usize) -> bool {
        let addr = SocketAddr::from((self.ip, self.nodes[i].client));
        httpc::request_blocking(addr, httpc::Request::get("/health"), Duration::from_secs(2))
            .is_ok_and(|r| r.body.contains("\"health\":\"true\""))
    }

    fn wait_healthy(&mut self, i: usize, within: Duration) -> Result<(), EtcdError> {
        let t = Instant::now();
        while !self.healthy(i) {
            let exited = self.nodes[i]
                .child
                .as_mut()
                .is_none_or(|c| c.try_wait().ok().flatten().is_some());
            if t.elapsed() > within || exited {
                let log = self.dir.join(format!("{}.log", self.nodes[i].name));
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let mut last: String = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("(empty)")
                    .into();
                if last.len() > 400 {
                    let cut = (0..=400).rev().find(|&c| last.is_char_boundary(c)).unwrap_or(0);
                    last.truncate(cut);
                }
                return Err(EtcdError::Unhealthy {
                    name: self.nodes[i].name.clone(),
                    how: if exited {
                        "ended at once".into()
                    } else {
                        format!("did not become healthy within {} s", within.as_secs())
                    },
                    log: log.display().to_string(),
                    last,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Where its members' data and logs are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The members' client URLs, comma separated.
    pub fn endpoints(&self) -> String {
        self.endpoint_list().join(",")
    }

    pub fn endpoint_list(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("http://{}:{}", self.ip, n.client))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Kills member `i` (SIGKILL); its data stays for `restart`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts member `i` again on its data; it rejoins the cluster.
    pub fn restart(&mut self, i: usize) -> Result<(), EtcdError> {
        self.kill(i);
        self.spawn(i)
    }

    /// Waits until member `i` answers healthy (a member answers unhealthy
    /// while its cluster has no quorum).
    pub fn wait(&mut self, i: usize, within: Duration) -> Result<(), EtcdError> {
        self.wait_healthy(i, within)
    }

    /// etcd's version (`etcd --version`'s first line), for reports.
    pub fn version() -> Option<String> {
        let out = Command::new("etcd").arg("--version").output().ok()?;
        String::from_utf8_lossy(&out.stdout).lines().next().map(str::to_string)
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        for n in &self.nodes {
            let _ = std::fs::remove_dir_all(self.dir.join(&n.name));
        }
    }
}

/// Makes the child `cmd` starts get SIGTERM when the thread that starts it
/// ends, which from a program's main thread is when the program ends,
/// however it ends: a program killed outright (SIGKILL, no handler runs)
/// leaves no etcd or controller member of its own behind. Only from the
/// main thread: a thread that ends sooner would take its children with
/// it, so elsewhere this does nothing (the program's own stop handling
/// still applies). Also for the members and peers `lab` starts.
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: gettid and getpid have no preconditions.
    if unsafe { libc::gettid() != libc::getpid() } {
        return;
    }
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: between fork and exec only async-signal-safe calls: prctl
    // and getppid.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the request took: go now.
            if libc::getppid() != parent {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        });
    }
}
