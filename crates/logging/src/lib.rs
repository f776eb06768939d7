//! How sdnlab's programs log. Every library logs through `tracing`, its
//! target its module path (`controller::runtime`, `switchd::switch`, ...),
//! so a component is turned up or down by name (`RUST_LOG=controller=debug`
//! or `--log-level info,controller=debug`). A program (`sdnlab`,
//! `sdnlab-switch`) installs one subscriber here at start-up: by default
//! the lines people read (the message alone, on stderr, as before
//! `tracing`), or JSON objects, one a line, for machines
//! (`--log-format json`: time, level, target and the message's fields).

use std::fmt;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// How a log line looks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The message alone (what sdnlab has always printed).
    #[default]
    Text,
    /// A JSON object a line: timestamp, level, target, fields.
    Json,
}

/// The command line's logging options (flattened into a program's own).
#[derive(clap::Args, Clone, Debug)]
pub struct LogArgs {
    /// What is logged: a level (error, warn, info, debug, trace) or filter
    /// directives such as `info,controller=debug` (targets are module paths:
    /// controller, switchd, netlab, lab, fleet, ...); RUST_LOG, when set, wins.
    #[arg(long, global = true, default_value = "info", value_name = "FILTER")]
    pub log_level: String,
    /// Log lines as text (the message alone) or as JSON objects, one a line.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text, value_name = "FORMAT")]
    pub log_format: Format,
}

impl Default for LogArgs {
    fn default() -> LogArgs {
        LogArgs {
            log_level: "info".into(),
            log_format: Format::Text,
        }
    }
}

/// A filter that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("--log-level '{given}' is not a level or filter ({source}): give error, warn, info, debug or trace, or directives such as info,controller=debug")]
    Level {
        given: String,
        source: tracing_subscriber::filter::ParseError,
    },
    #[error(
        "RUST_LOG '{given}' is not a filter ({source}): unset it, or give directives such as info,controller=debug"
    )]
    Env {
        given: String,
        source: tracing_subscriber::filter::ParseError,
    },
}

/// The filter `args` ask for: RUST_LOG when set, else `--log-level`.
/// Directives are a default level and `target=level` pairs (a target is
/// a module path's start); `Targets` parses them without the regular
/// expressions `EnvFilter` compiles in, which kept the switch-only build
/// for routers within its size budget.
pub fn filter(args: &LogArgs) -> Result<Targets, LogError> {
    match std::env::var("RUST_LOG") {
        Ok(env) if !env.trim().is_empty() => env
            .trim()
            .parse()
            .map_err(|source| LogError::Env { given: env, source }),
        _ => args.log_level.trim().parse().map_err(|source| LogError::Level {
            given: args.log_level.clone(),
            source,
        }),
    }
}

/// Installs the program's subscriber (on stderr). A second call does
/// nothing: the first subscriber stays.
pub fn init(args: &LogArgs) -> Result<(), LogError> {
    let filter = filter(args)?;
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let registry = tracing_subscriber::registry().with(filter);
    let _ = match args.log_format {
        Format::Text => registry.with(layer.event_format(MessageOnly)).try_init(),
        Format::Json => registry.with(layer.json()).try_init(),
    };
    Ok(())
}

/// The text format: the event's fields, the message first, nothing else
/// (no time, level or target: the message says what speaks).
struct MessageOnly;

impl<S, N> FormatEvent<S, N> for MessageOnly
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_filter_is_one_line_naming_the_flag() {
        let bad = LogArgs {
            log_level: "controller=loud".into(),
            ..LogArgs::default()
        };
        if std::env::var_os("RUST_LOG").is_none() {
            let e = filter(&bad).unwrap_err().to_string();
            assert!(
                e.starts_with("--log-level 'controller=loud' is not a level or filter"),
                "{e}"
            );
            assert!(!e.contains('\n'));
            assert!(filter(&LogArgs::default()).is_ok());
        }
    }
}
