//! A run directory on disk: dated metadata, the samples written as they
//! come (`RunWriter`), events added afterwards, and a run read back.

use super::*;

/// A Unix time in ISO 8601, UTC, to the second: 2026-11-25T13:22:54Z.
pub fn iso8601(unix: f64) -> String {
    let secs = if unix.is_finite() && unix > 0.0 { unix as u64 } else { 0 };
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// `meta` with its times also in ISO 8601, as written to meta.json.
pub(super) fn dated(meta: &Meta) -> Meta {
    Meta {
        schema: SCHEMA_VERSION,
        started: iso8601(meta.started_unix),
        finished: meta.finished_unix.map(iso8601),
        ..meta.clone()
    }
}

pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A run being written.
pub struct RunWriter {
    pub dir: PathBuf,
    pub(super) samples: std::fs::File,
}

pub(super) fn ctx(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

pub(super) fn write_json(path: &Path, v: &impl Serialize) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(v).map_err(io::Error::other)?;
    std::fs::write(path, bytes).map_err(|e| ctx(path, e))
}

impl RunWriter {
    /// Creates `dir` (it must not hold a run already) and writes `meta.json`.
    pub fn create(dir: &Path, meta: &Meta) -> io::Result<RunWriter> {
        if dir.join("samples.jsonl").exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already holds a run: choose another --out", dir.display()),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| ctx(dir, e))?;
        write_json(&dir.join("meta.json"), &dated(meta))?;
        let path = dir.join("samples.jsonl");
        let samples = std::fs::File::create(&path).map_err(|e| ctx(&path, e))?;
        Ok(RunWriter {
            dir: dir.to_path_buf(),
            samples,
        })
    }

    /// Appends a sample and flushes it to the file.
    pub fn append(&mut self, s: &Sample) -> io::Result<()> {
        let line = serde_json::to_string(s).map_err(io::Error::other)?;
        writeln!(self.samples, "{line}")?;
        self.samples.flush()
    }

    /// Writes the final `meta.json`, then summaries and the HTML report from
    /// what is on disk.
    pub fn finish(self, meta: &Meta) -> io::Result<Summary> {
        write_json(&self.dir.join("meta.json"), &dated(meta))?;
        let run = load(&self.dir)?;
        write_outputs(&self.dir, &[run])
    }
}

/// Adds `event` to the run in `dir` (once) and writes its outputs again:
/// what happened after the run wrote its end (it was interrupted) shows
/// in meta.json and the report.
pub fn add_event(dir: &Path, event: &str) -> io::Result<Summary> {
    let mut run = load(dir)?;
    if !run.meta.events.iter().any(|e| e == event) {
        run.meta.events.push(event.to_string());
        write_json(&dir.join("meta.json"), &dated(&run.meta))?;
    }
    write_outputs(dir, &[run])
}

/// A run read back.
#[derive(Clone, Debug)]
pub struct Run {
    pub dir: PathBuf,
    pub meta: Meta,
    pub samples: Vec<Sample>,
}

/// Reads a run directory (a truncated last line, from a run that was
/// killed, is skipped).
pub fn load(dir: &Path) -> io::Result<Run> {
    let meta_path = dir.join("meta.json");
    let text = std::fs::read_to_string(&meta_path).map_err(|e| ctx(&meta_path, e))?;
    let meta: Meta = serde_json::from_str(&text)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", meta_path.display())))?;
    let path = dir.join("samples.jsonl");
    let f = std::fs::File::open(&path).map_err(|e| ctx(&path, e))?;
    let mut samples = Vec::new();
    for line in io::BufReader::new(f).lines() {
        if let Ok(s) = serde_json::from_str::<Sample>(&line?) {
            samples.push(s);
        }
    }
    Ok(Run {
        dir: dir.to_path_buf(),
        meta,
        samples,
    })
}
