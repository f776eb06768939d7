//! The HTTP clients of `bench lb`: our own open-loop generator (every
//! request a new connection, started on a fixed schedule whatever the
//! answers; its latency counted from that intended start, so a slow
//! server cannot hide its queue: no coordinated omission) and httperf, the
//! paper's tool, for its error counters. Both run inside the client's
//! network namespace. Also the paper's two loads as lists of URIs.

use crate::LbError;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The heterogeneous load: 588 chunk sizes from `min` to 2.3 x `min`
/// (both ends present), shuffled, and ~`sessions` video sessions, each a
/// run of consecutive chunks; the requests interleave the sessions. Same
/// seed, same load.
pub struct Videos {
    pub chunk_bytes: Vec<usize>,
    /// Chunk indices in request order.
    pub requests: Vec<usize>,
}

pub const CHUNK_SIZES: usize = 588;

impl Videos {
    pub fn new(seed: u64, min_bytes: usize, sessions: usize) -> Videos {
        let mut rng = SmallRng::seed_from_u64(seed);
        let max = (min_bytes as f64 * 2.3) as usize;
        let mut chunk_bytes: Vec<usize> = (0..CHUNK_SIZES).map(|_| rng.gen_range(min_bytes..=max)).collect();
        chunk_bytes[0] = min_bytes;
        chunk_bytes[1] = max;
        // Shuffle so a session's neighbouring chunks differ in size.
        for i in (1..chunk_bytes.len()).rev() {
            chunk_bytes.swap(i, rng.gen_range(0..=i));
        }
        let runs: Vec<Vec<usize>> = (0..sessions.max(1))
            .map(|_| {
                let start = rng.gen_range(0..CHUNK_SIZES);
                let len = rng.gen_range(10..=40);
                (0..len).map(|k| (start + k) % CHUNK_SIZES).collect()
            })
            .collect();
        let longest = runs.iter().map(Vec::len).max().unwrap_or(0);
        let requests = (0..longest)
            .flat_map(|k| runs.iter().filter_map(move |r| r.get(k).copied()))
            .collect();
        Videos { chunk_bytes, requests }
    }
}

/// How long a request may take before it counts as an error "timeout".
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// One request as the open-loop client saw it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Request {
    /// Intended start, microseconds after the run began.
    pub intended_us: u64,
    /// From the intended start to the last byte of the answer.
    pub latency_us: u64,
    pub bytes: u64,
    /// The `X-Replica` header of the answer.
    pub replica: Option<String>,
    pub error: Option<&'static str>,
}

/// A `Request` as read back (from another machine): its error any string.
#[derive(serde::Deserialize)]
struct RequestRead {
    intended_us: u64,
    latency_us: u64,
    bytes: u64,
    replica: Option<String>,
    error: Option<String>,
}

/// The error read back as one of `ERRORS`; a name this build does not
/// know is "other". (Written out: a derived impl would borrow the error
/// from the input for 'static.)
impl<'de> serde::Deserialize<'de> for Request {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Request, D::Error> {
        let r = RequestRead::deserialize(d)?;
        Ok(Request {
            intended_us: r.intended_us,
            latency_us: r.latency_us,
            bytes: r.bytes,
            replica: r.replica,
            error: r
                .error
                .map(|e| ERRORS.iter().find(|k| **k == e).copied().unwrap_or("other")),
        })
    }
}

/// What went wrong with a request, as `fetch` and [`Load`] name it.
pub const ERRORS: [&str; 9] = [
    "client-limit",
    "connrefused",
    "connreset",
    "connect-other",
    "closed-early",
    "bad-reply",
    "bad-status",
    "short-body",
    "timeout",
];

/// An open-loop HTTP load: requests for `uris` (cycled) to `host:port` at
/// `rate` per second for `seconds`, each on a new connection, at the time
/// the schedule says whatever came before (no coordinated omission); at
/// most `max_open` at once (a request that finds none free is an error
/// "client-limit"); each given `timeout`.
#[derive(Clone, Debug)]
pub struct Load {
    pub host: std::net::Ipv4Addr,
    pub port: u16,
    pub uris: Vec<String>,
    pub rate: f64,
    pub seconds: f64,
    pub timeout: Duration,
    pub max_open: usize,
}

impl Load {
    /// `rate` requests a second for `seconds`, with the default timeout
    /// ([`REQUEST_TIMEOUT`]) and at most 8192 open.
    pub fn new(host: std::net::Ipv4Addr, port: u16, uris: Vec<String>, rate: f64, seconds: f64) -> Load {
        Load {
            host,
            port,
            uris,
            rate,
            seconds,
            timeout: REQUEST_TIMEOUT,
            max_open: 8192,
        }
    }

    /// Runs the load on the calling thread, in its network namespace:
    /// every request, in the order they were sent.
    pub fn run(&self) -> std::io::Result<Vec<Request>> {
        self.run_with(|_| {})
    }

    /// As `run`, `on_done` seeing each request as it ends (in the order
    /// they end).
    pub fn run_with(&self, mut on_done: impl FnMut(&Request)) -> std::io::Result<Vec<Request>> {
        let Load {
            host,
            port,
            rate,
            seconds,
            timeout,
            max_open,
            ..
        } = *self;
        let uris = &self.uris;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async {
            let count = (rate * seconds).round().max(1.0) as u64;
            let start = tokio::time::Instant::now();
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let open = std::sync::Arc::new(tokio::sync::Semaphore::new(max_open));
            // Requests leave on schedule while those done are taken in.
            let schedule = async move {
                for n in 0..count {
                    let intended = Duration::from_secs_f64(n as f64 / rate);
                    tokio::time::sleep_until(start + intended).await;
                    let uri = uris[(n as usize) % uris.len()].clone();
                    let Ok(permit) = open.clone().try_acquire_owned() else {
                        let _ = tx.send(Request {
                            intended_us: intended.as_micros() as u64,
                            latency_us: 0,
                            bytes: 0,
                            replica: None,
                            error: Some("client-limit"),
                        });
                        continue;
                    };
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let r = tokio::time::timeout(timeout, fetch(host, port, &uri)).await;
                        let done = start.elapsed();
                        let (bytes, replica, error) = match r {
                            Ok(Ok((b, rep))) => (b, rep, None),
                            Ok(Err(kind)) => (0, None, Some(kind)),
                            Err(_) => (0, None, Some("timeout")),
                        };
                        let _ = tx.send(Request {
                            intended_us: intended.as_micros() as u64,
                            latency_us: done.saturating_sub(intended).as_micros() as u64,
                            bytes,
                            replica,
                            error,
                        });
                        drop(permit);
                    });
                }
            };
            let mut out = Vec::with_capacity(count as usize);
            let take = async {
                while let Some(r) = rx.recv().await {
                    on_done(&r);
                    out.push(r);
                }
            };
            tokio::join!(schedule, take);
            out.sort_by_key(|r| r.intended_us);
            Ok(out)
        })
    }

    /// `run_with` from network namespace `netns` (on a thread of its own,
    /// which joins it).
    pub fn run_in(self, netns: &str, on_done: impl FnMut(&Request) + Send + 'static) -> Result<Vec<Request>, LbError> {
        nsexec::on_thread(Some(netns), move || self.run_with(on_done)).map_err(LbError::io("the HTTP client"))
    }

    /// `run_in`, the requests handed to `on_batch` on the calling thread,
    /// those done in each `every` as they end (a batch may be empty), the
    /// last ones once the load is over.
    pub fn run_batched(
        self,
        netns: &str,
        every: Duration,
        mut on_batch: impl FnMut(Vec<Request>),
    ) -> Result<(), LbError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let ns = netns.to_string();
        let load = std::thread::spawn(move || {
            self.run_in(&ns, move |r| {
                let _ = tx.send(r.clone());
            })
        });
        let mut batch = Vec::new();
        let mut next = Instant::now() + every;
        loop {
            match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(r) => batch.push(r),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    on_batch(std::mem::take(&mut batch));
                    next += every;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        on_batch(batch);
        load.join().map_err(|_| LbError::Panicked("the HTTP client"))?.map(drop)
    }
}

/// One GET on a new connection: the body's length and the replica, or
/// what went wrong.
async fn fetch(host: std::net::Ipv4Addr, port: u16, uri: &str) -> Result<(u64, Option<String>), &'static str> {
    let mut s = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connrefused",
            std::io::ErrorKind::ConnectionReset => "connreset",
            _ => "connect-other",
        })?;
    let _ = s.set_nodelay(true);
    let req = format!("GET {uri} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.map_err(|_| "connreset")?;
    let mut head = Vec::with_capacity(512);
    let mut buf = vec![0u8; 64 * 1024];
    let body_at = loop {
        let n = s.read(&mut buf).await.map_err(|_| "connreset")?;
        if n == 0 {
            return Err("closed-early");
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > 16 * 1024 {
            return Err("bad-reply");
        }
    };
    let text = String::from_utf8_lossy(&head[..body_at]).into_owned();
    if !text.starts_with("HTTP/1.1 200") && !text.starts_with("HTTP/1.0 200") {
        return Err("bad-status");
    }
    let header = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    let length: Option<u64> = header("content-length").and_then(|v| v.parse().ok());
    let mut got = (head.len() - body_at) as u64;
    loop {
        let n = s.read(&mut buf).await.map_err(|_| "connreset")?;
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    if length.is_some_and(|l| got < l) {
        return Err("short-body");
    }
    Ok((got, header("x-replica")))
}

/// What httperf reported.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Httperf {
    pub connections: u64,
    pub replies: u64,
    pub duration_s: f64,
    pub connection_ms_avg: f64,
    pub connection_ms_median: f64,
    pub reply_rate: f64,
    pub net_kbyte_s: f64,
    pub errors: std::collections::BTreeMap<String, u64>,
}

/// Reads httperf's summary (the lines it prints on exit).
pub fn parse_httperf(out: &str) -> Result<Httperf, LbError> {
    let mut h = Httperf::default();
    let nums = |line: &str, key: &str| -> Option<f64> {
        let mut it = line.split_whitespace();
        it.position(|w| w == key)?;
        it.next()?.parse().ok()
    };
    let mut seen_total = false;
    for l in out.lines() {
        if l.starts_with("Total: connections") {
            seen_total = true;
            h.connections = nums(l, "connections").unwrap_or(0.0) as u64;
            h.replies = nums(l, "replies").unwrap_or(0.0) as u64;
            h.duration_s = nums(l, "test-duration").unwrap_or(0.0);
        } else if l.starts_with("Connection time [ms]: min") {
            h.connection_ms_avg = nums(l, "avg").unwrap_or(f64::NAN);
            h.connection_ms_median = nums(l, "median").unwrap_or(f64::NAN);
        } else if l.starts_with("Reply rate [replies/s]") {
            h.reply_rate = nums(l, "avg").unwrap_or(f64::NAN);
        } else if l.starts_with("Net I/O:") {
            h.net_kbyte_s = nums(l, "I/O:").unwrap_or(f64::NAN);
        } else if let Some(rest) = l.strip_prefix("Errors: ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            for pair in words.chunks(2) {
                if let [k, v] = pair {
                    if let Ok(v) = v.parse() {
                        h.errors.insert(k.to_string(), v);
                    }
                }
            }
        }
    }
    if !seen_total {
        return Err(LbError::NoSummary(
            out.lines().last().unwrap_or("(nothing)").to_string(),
        ));
    }
    // httperf's reply rate needs 5 s of samples; the replies over the test do not.
    if !h.reply_rate.is_finite() || h.reply_rate == 0.0 {
        h.reply_rate = h.replies as f64 / h.duration_s.max(1e-9);
    }
    Ok(h)
}

/// Runs httperf in namespace `netns`: `rate` new connections per second,
/// `count` in all, one request each, from `wlog` (a NUL-separated URI
/// list, cycled) or for `uri`.
pub fn httperf(
    netns: &str,
    host: std::net::Ipv4Addr,
    port: u16,
    uri_or_wlog: Result<&str, &std::path::Path>,
    rate: f64,
    count: u64,
    timeout_s: f64,
) -> Result<Httperf, LbError> {
    let mut c = nsexec::command(netns, "httperf").map_err(LbError::io("httperf"))?;
    c.args(["--hog", "--server"])
        .arg(host.to_string())
        .arg(format!("--port={port}"))
        .arg(format!("--rate={rate}"))
        .arg(format!("--num-conns={count}"))
        .arg(format!("--timeout={timeout_s}"));
    match uri_or_wlog {
        Ok(uri) => {
            c.arg(format!("--uri={uri}"));
        }
        Err(wlog) => {
            c.arg(format!("--wlog=y,{}", wlog.display()));
        }
    }
    let started = Instant::now();
    let o = c
        .output()
        .map_err(LbError::io("httperf (install it: scripts/install-deps.sh)"))?;
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    parse_httperf(&text).map_err(|e| match e {
        LbError::NoSummary(last) => LbError::NoSummary(format!(
            "{last} after {:.1} s; stderr: {}",
            started.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        e => e,
    })
}

/// Jain's fairness index of `xs`: 1 when all equal, 1/n when one has all.
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if sq == 0.0 {
        return f64::NAN;
    }
    sum * sum / (xs.len() as f64 * sq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_from_another_machine_with_its_error_kind() {
        let mut q = Request {
            intended_us: 5,
            latency_us: 700,
            bytes: 100,
            replica: Some("r1".into()),
            error: None,
        };
        let back = |q: &Request| serde_json::from_str::<Request>(&serde_json::to_string(q).unwrap()).unwrap();
        assert_eq!(back(&q), q);
        for kind in ERRORS {
            q.error = Some(kind);
            assert_eq!(back(&q).error, Some(kind));
        }
        let strange = r#"{"intended_us":1,"latency_us":2,"bytes":0,"replica":null,"error":"new-kind"}"#;
        assert_eq!(serde_json::from_str::<Request>(strange).unwrap().error, Some("other"));
    }

    #[test]
    fn the_heterogeneous_load_is_reproducible_and_as_described() {
        let v = Videos::new(7, 60_000, 100);
        let w = Videos::new(7, 60_000, 100);
        assert_eq!(v.requests, w.requests);
        assert_eq!(v.chunk_bytes.len(), 588);
        let (min, max) = (v.chunk_bytes.iter().min().unwrap(), v.chunk_bytes.iter().max().unwrap());
        assert_eq!((*min, *max), (60_000, 138_000), "the largest 2.3 x the smallest");
        assert!(v.requests.len() >= 100 * 10);
        assert_ne!(v.requests, Videos::new(8, 60_000, 100).requests);
    }

    #[test]
    fn httperf_summaries_are_read() {
        let out = "httperf --hog --timeout=5 --client=0/1 --server=10.0.0.100 --port=80 --uri=/ --rate=20 --send-buffer=4096 --recv-buffer=16384 --num-conns=40 --num-calls=1
Maximum connect burst length: 1

Total: connections 40 requests 38 replies 37 test-duration 1.954 s

Connection rate: 20.5 conn/s (48.8 ms/conn, <=3 concurrent connections)
Connection time [ms]: min 1.1 avg 2.4 max 9.0 median 1.5 stddev 1.6
Connection time [ms]: connect 0.1
Connection length [replies/conn]: 1.000

Request rate: 19.4 req/s (51.4 ms/req)
Request size [B]: 66.0

Reply rate [replies/s]: min 0.0 avg 0.0 max 0.0 stddev 0.0 (0 samples)
Reply time [ms]: response 0.8 transfer 1.4
Reply size [B]: header 250.0 content 102400.0 footer 0.0 (total 102650.0)
Reply status: 1xx=0 2xx=37 3xx=0 4xx=0 5xx=0

CPU time [s]: user 0.40 system 1.50 (user 20.6% system 76.8% total 97.4%)
Net I/O: 1944.5 KB/s (15.9*10^6 bps)

Errors: total 3 client-timo 1 socket-timo 0 connrefused 2 connreset 0
Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0
";
        let h = parse_httperf(out).unwrap();
        assert_eq!((h.connections, h.replies), (40, 37));
        assert_eq!((h.connection_ms_avg, h.connection_ms_median), (2.4, 1.5));
        assert!(
            (h.reply_rate - 37.0 / 1.954).abs() < 1e-9,
            "from the replies when httperf took no samples"
        );
        assert_eq!(h.net_kbyte_s, 1944.5);
        assert_eq!(h.errors["total"], 3);
        assert_eq!(h.errors["connrefused"], 2);
        assert_eq!(h.errors["client-timo"], 1);
        assert!(parse_httperf("httperf: bad option").is_err());
    }

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[5.0, 5.0, 5.0, 5.0]), 1.0);
        assert_eq!(jain(&[8.0, 0.0, 0.0, 0.0]), 0.25);
        assert!(jain(&[0.0, 0.0]).is_nan());
    }
}
