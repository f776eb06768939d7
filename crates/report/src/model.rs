//! The results model: the machine, the systems under test, the metrics,
//! a run's metadata and its samples, as every run directory holds them.

use super::*;

/// The machine and software a run measured on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Setup {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub hostname: String,
}

impl Setup {
    /// Reads /proc and /etc; fields it cannot read stay empty.
    pub fn detect() -> Setup {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        let os = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default();
        Setup {
            cpu_model,
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            memory_bytes,
            os,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        }
    }
}

/// A system under test.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Target {
    pub name: String,
    pub version: String,
    /// How it was started ("" when sdnlab did not start it).
    pub command: String,
    pub address: String,
}

impl Target {
    /// A system under test known by its name alone.
    pub fn named(name: impl Into<String>) -> Target {
        Target {
            name: name.into(),
            ..Target::default()
        }
    }
}

/// How a metric reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Metric {
    /// The identifier in samples and summaries (`discovery_s`).
    pub name: String,
    /// The unit, or what the number counts.
    pub unit: String,
    pub better: stats::Better,
    /// The metric in plain words for reports ("Topology discovery time");
    /// empty in runs written before titles (the name is shown then).
    #[serde(default)]
    pub title: String,
    /// How it is measured, in a sentence or two, with the section of the
    /// method it follows ("RFC 2544 section 26.1: ..."); empty when the
    /// experiment does not say.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub method: String,
}

impl Metric {
    pub fn new(name: &str, unit: &str, better: stats::Better) -> Metric {
        Metric {
            name: name.into(),
            unit: unit.into(),
            better,
            title: String::new(),
            method: String::new(),
        }
    }

    /// The same metric with how it is measured.
    pub fn measured(mut self, method: &str) -> Metric {
        self.method = method.into();
        self
    }

    /// The same metric with its name in plain words.
    pub fn titled(mut self, title: &str) -> Metric {
        self.title = title.into();
        self
    }

    /// How a report names it: the title, or the identifier made readable.
    pub fn display_name(&self) -> String {
        if self.title.is_empty() {
            self.name.replace('_', " ")
        } else {
            self.title.clone()
        }
    }
}

/// The version of the results model (docs/RESULTS.md) this crate writes;
/// runs written before it was versioned read as 0.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Meta {
    /// The results model's version (`SCHEMA_VERSION` when written).
    #[serde(default)]
    pub schema: u32,
    pub run_id: String,
    /// What was run: "bench ctl", ...
    pub benchmark: String,
    /// The command line.
    pub command: Vec<String>,
    pub sdnlab_version: String,
    pub started_unix: f64,
    pub finished_unix: Option<f64>,
    /// `started_unix` and `finished_unix` in ISO 8601 (UTC), written with the file.
    #[serde(default)]
    pub started: String,
    #[serde(default)]
    pub finished: Option<String>,
    pub setup: Setup,
    pub targets: Vec<Target>,
    pub parameters: serde_json::Value,
    pub metrics: Vec<Metric>,
    /// What happened that is not a number (a controller that died, refused...).
    #[serde(default)]
    pub events: Vec<String>,
}

/// The kind of a sample that records the instrument's own ceiling (the
/// load driver against a reference responder), never a measurement of the
/// target: the statistics leave it out.
pub const CEILING_KIND: &str = "ceiling";

/// One measurement. `kind` is "trial" for a trial's figures (what the
/// statistics use), `CEILING_KIND` for the instrument's own ceiling (left
/// out of them), and anything else (e.g. "loop") for finer samples.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sample {
    pub kind: String,
    pub scenario: String,
    pub trial: u32,
    #[serde(default)]
    pub index: u32,
    pub unix: f64,
    pub values: BTreeMap<String, f64>,
    /// Round-trip distribution as (microseconds, cumulative fraction).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rtt_cdf: Vec<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The system under test, when one run measures several side by side
    /// (the switch in `bench dp`, the policy in `bench lb`): its samples
    /// are compared with the other systems' in the same `condition`, and
    /// the report writes the verdicts (`verdict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// What is held equal when systems are compared ("64B", "5 extra
    /// rules"); the scenario is the system and the condition together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

impl Sample {
    /// A `trial` sample taken now: a trial's figures, what the statistics use.
    pub fn trial<K: Into<String>>(
        scenario: impl Into<String>,
        trial: u32,
        values: impl IntoIterator<Item = (K, f64)>,
    ) -> Sample {
        Sample::of("trial", scenario, trial, values)
    }

    /// A sample of `kind` (`loop`, `round`, `case`, ...) taken now.
    pub fn of<K: Into<String>>(
        kind: &str,
        scenario: impl Into<String>,
        trial: u32,
        values: impl IntoIterator<Item = (K, f64)>,
    ) -> Sample {
        Sample {
            kind: kind.into(),
            scenario: scenario.into(),
            trial,
            index: 0,
            unix: now_unix(),
            values: values.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            rtt_cdf: Vec::new(),
            note: None,
            system: None,
            condition: None,
        }
    }

    /// A sample of `system` (the system under test) in `condition`, to be
    /// compared with the other systems of the run in the same condition.
    pub fn under_test(mut self, system: impl Into<String>, condition: impl Into<String>) -> Sample {
        self.system = Some(system.into());
        self.condition = Some(condition.into());
        self
    }

    /// Its place within the trial.
    pub fn at(mut self, index: u32) -> Sample {
        self.index = index;
        self
    }

    /// What the numbers do not say.
    pub fn noted(mut self, note: Option<String>) -> Sample {
        self.note = note;
        self
    }

    /// With the round-trip distribution.
    pub fn with_cdf(mut self, cdf: Vec<(f64, f64)>) -> Sample {
        self.rtt_cdf = cdf;
        self
    }
}
