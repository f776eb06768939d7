//! `sdnlab ofp decode`: OpenFlow messages from hex, stdin or a capture,
//! printed one a line (or as JSON).

use super::*;

#[derive(Subcommand)]
pub(super) enum OfpCommand {
    /// Decode OpenFlow messages from hex, stdin (`-`, one hex stream per line) or a capture.
    Decode(DecodeArgs),
}

#[derive(Args)]
pub(super) struct DecodeArgs {
    /// Hex strings, each holding one or more whole messages; `-` reads stdin line by line.
    pub(super) hex: Vec<String>,
    /// Read a pcap or pcapng capture instead.
    #[arg(long, value_name = "FILE", conflicts_with = "hex")]
    pub(super) pcap: Option<PathBuf>,
    /// TCP ports carrying OpenFlow in the capture (default 6653 and 6633).
    #[arg(long = "port", value_name = "PORT")]
    pub(super) ports: Vec<u16>,
    /// One JSON object per message instead of text.
    #[arg(long)]
    pub(super) json: bool,
}

pub(super) fn ofp_decode_cmd(args: DecodeArgs) -> ExitCode {
    let records = if let Some(path) = &args.pcap {
        let ports = if args.ports.is_empty() {
            vec![6653, 6633]
        } else {
            args.ports.clone()
        };
        let mut dec = CaptureDecoder::new(ports);
        let read = std::fs::read(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
            .and_then(|data| ofp_decode::read_capture(path, &data, &mut dec));
        if let Err(e) = read {
            eprintln!("sdnlab: {e}");
            return ExitCode::from(2);
        }
        if dec.records.is_empty() {
            eprintln!(
                "sdnlab: no OpenFlow messages in {} frames of {} (TCP ports {:?}; use --port to choose others)",
                dec.frames,
                path.display(),
                dec_ports(&args)
            );
            return ExitCode::from(1);
        }
        dec.records
    } else if args.hex.is_empty() {
        eprintln!("sdnlab: give hex messages, `-` to read hex lines from stdin, or --pcap FILE (see `sdnlab ofp decode --help`)");
        return ExitCode::from(2);
    } else {
        let mut recs = Vec::new();
        for (i, h) in args.hex.iter().enumerate() {
            if h == "-" {
                for (n, line) in std::io::stdin().lock().lines().enumerate() {
                    let line = match line {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("sdnlab: reading stdin: {e}");
                            return ExitCode::from(2);
                        }
                    };
                    let t = line.trim();
                    if t.is_empty() || t.starts_with('#') {
                        continue;
                    }
                    recs.extend(ofp_decode::decode_hex(&format!("line {}", n + 1), t));
                }
            } else {
                recs.extend(ofp_decode::decode_hex(&format!("argument {}", i + 1), h));
            }
        }
        recs
    };
    let mut failed = 0;
    let mut out = std::io::stdout().lock();
    for r in &records {
        match r {
            Record::Ok {
                origin,
                message,
                raw_len,
            } => {
                let written = if args.json {
                    let v = serde_json::json!({
                        "at": origin.at,
                        "flow": origin.flow,
                        "version": message.version,
                        "type": message.type_name(),
                        "xid": message.xid,
                        "length": raw_len,
                        "body": message.body,
                    });
                    writeln!(out, "{v}")
                } else {
                    match &origin.flow {
                        Some(f) => writeln!(out, "[{}] {f} {message}", origin.at),
                        None => writeln!(out, "{message}"),
                    }
                };
                if written.is_err() {
                    // The reader went away (e.g. `| head`): stop quietly.
                    return ExitCode::SUCCESS;
                }
            }
            Record::Err { origin, error } => {
                failed += 1;
                match &origin.flow {
                    Some(f) => eprintln!("sdnlab: {} {f}: {error}", origin.at),
                    None => eprintln!("sdnlab: {}: {error}", origin.at),
                }
            }
        }
    }
    if failed > 0 {
        eprintln!("sdnlab: {failed} of {} inputs failed to decode", records.len());
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

pub(super) fn dec_ports(args: &DecodeArgs) -> Vec<u16> {
    if args.ports.is_empty() {
        vec![6653, 6633]
    } else {
        args.ports.clone()
    }
}
