//! OpenFlow messages out of hex text or a pcap/pcapng capture's bytes (TCP
//! reassembled per direction), one record per message (`sdnlab ofp
//! decode`). No I/O and no printing: the caller reads the file and
//! renders the records. Built with the `capture` feature.

use crate::{Framer, Message};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// Where a message came from.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Origin {
    /// Input line (hex) or frame number (capture) where the message ends.
    pub at: String,
    /// `src:port > dst:port` for captures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
}

/// One decoded message, or why it could not be decoded.
pub enum Record {
    Ok {
        origin: Origin,
        message: Message,
        raw_len: usize,
    },
    Err {
        origin: Origin,
        error: String,
    },
}

/// Splits a hex string holding one or more whole messages.
pub fn decode_hex(at: &str, hex: &str) -> Vec<Record> {
    let origin = || Origin {
        at: at.to_string(),
        flow: None,
    };
    let bytes = match crate::types::from_hex(hex) {
        Ok(b) => b,
        Err(e) => {
            return vec![Record::Err {
                origin: origin(),
                error: format!("not hex: {e}"),
            }]
        }
    };
    if bytes.is_empty() {
        return vec![Record::Err {
            origin: origin(),
            error: "no bytes".into(),
        }];
    }
    let mut framer = Framer::default();
    framer.push(&bytes);
    let mut out = Vec::new();
    loop {
        match framer.next_message() {
            Ok(Some(m)) => out.push(decode_one(origin(), m)),
            Ok(None) => break,
            Err(e) => {
                out.push(Record::Err {
                    origin: origin(),
                    error: e.to_string(),
                });
                return out;
            }
        }
    }
    if framer.pending() > 0 {
        let rest = &bytes[bytes.len() - framer.pending()..];
        let error = match crate::Header::peek(rest) {
            Some(h) => format!(
                "{} (version {:#04x}) header says {} bytes but only {} follow: truncated input",
                crate::msg_type_name(h.version, h.msg_type),
                h.version,
                h.length,
                rest.len()
            ),
            None => format!("{} trailing bytes are shorter than an OpenFlow header", rest.len()),
        };
        out.push(Record::Err {
            origin: origin(),
            error,
        });
    }
    out
}

fn decode_one(origin: Origin, raw: &[u8]) -> Record {
    match crate::decode(raw) {
        Ok(message) => Record::Ok {
            origin,
            message,
            raw_len: raw.len(),
        },
        Err(e) => Record::Err {
            origin,
            error: format!("{e} (bytes: {})", crate::types::to_hex(&raw[..raw.len().min(64)])),
        },
    }
}

/// One direction of a TCP connection being reassembled.
struct Stream {
    next_seq: Option<u32>,
    /// Segments that arrived ahead of `next_seq`.
    ahead: BTreeMap<u32, Vec<u8>>,
    framer: Framer,
    broken: bool,
}

/// Reassembles OpenFlow streams from captured frames and decodes them.
pub struct CaptureDecoder {
    ports: Vec<u16>,
    streams: HashMap<(IpAddr, u16, IpAddr, u16), Stream>,
    pub frames: usize,
    pub records: Vec<Record>,
}

impl CaptureDecoder {
    pub fn new(ports: Vec<u16>) -> Self {
        CaptureDecoder {
            ports,
            streams: HashMap::new(),
            frames: 0,
            records: Vec::new(),
        }
    }

    /// Feeds one captured frame of the given link type.
    pub fn frame(&mut self, linktype: u32, data: &[u8]) {
        self.frames += 1;
        let sliced = match linktype {
            1 => etherparse::SlicedPacket::from_ethernet(data),
            113 => etherparse::SlicedPacket::from_linux_sll(data),
            101 | 228 | 229 => etherparse::SlicedPacket::from_ip(data),
            0 if data.len() >= 4 => etherparse::SlicedPacket::from_ip(&data[4..]), // BSD loopback
            _ => return,
        };
        let Ok(p) = sliced else { return };
        let (src, dst) = match &p.net {
            Some(etherparse::NetSlice::Ipv4(v4)) => (
                IpAddr::V4(v4.header().source_addr()),
                IpAddr::V4(v4.header().destination_addr()),
            ),
            Some(etherparse::NetSlice::Ipv6(v6)) => (
                IpAddr::V6(v6.header().source_addr()),
                IpAddr::V6(v6.header().destination_addr()),
            ),
            _ => return,
        };
        let Some(etherparse::TransportSlice::Tcp(tcp)) = &p.transport else {
            return;
        };
        let (sport, dport) = (tcp.source_port(), tcp.destination_port());
        if !self.ports.contains(&sport) && !self.ports.contains(&dport) {
            return;
        }
        let key = (src, sport, dst, dport);
        let stream = self.streams.entry(key).or_insert_with(|| Stream {
            next_seq: None,
            ahead: BTreeMap::new(),
            framer: Framer::default(),
            broken: false,
        });
        let mut seq = tcp.sequence_number();
        if tcp.syn() {
            seq = seq.wrapping_add(1);
            stream.next_seq = Some(seq);
        }
        let payload = tcp.payload();
        if payload.is_empty() || stream.broken {
            return;
        }
        let expected = *stream.next_seq.get_or_insert(seq);
        let offset = seq.wrapping_sub(expected) as i32;
        if offset > 0 {
            stream.ahead.insert(seq, payload.to_vec());
            return;
        }
        // A retransmission overlapping what we already have: keep only the new tail.
        let skip = (-offset) as usize;
        if skip >= payload.len() {
            return;
        }
        stream.framer.push(&payload[skip..]);
        let mut next = expected.wrapping_add((payload.len() - skip) as u32);
        while let Some((&s, _)) = stream.ahead.first_key_value() {
            let off = s.wrapping_sub(next) as i32;
            if off > 0 {
                break;
            }
            let seg = stream.ahead.remove(&s).expect("key just seen");
            let skip = (-off) as usize;
            if skip < seg.len() {
                stream.framer.push(&seg[skip..]);
                next = next.wrapping_add((seg.len() - skip) as u32);
            }
        }
        stream.next_seq = Some(next);
        let flow = fmt_flow(&key);
        loop {
            let origin = Origin {
                at: format!("frame {}", self.frames),
                flow: Some(flow.clone()),
            };
            match stream.framer.next_message() {
                Ok(Some(m)) => self.records.push(decode_one(origin, m)),
                Ok(None) => break,
                Err(e) => {
                    stream.broken = true;
                    self.records.push(Record::Err {
                        origin,
                        error: format!("{e}; rest of this TCP stream skipped"),
                    });
                    break;
                }
            }
        }
    }

    /// Streams that ended in the middle of a message.
    pub fn finish(&mut self) {
        let mut leftovers: Vec<_> = self
            .streams
            .iter()
            .filter(|(_, s)| !s.broken && (s.framer.pending() > 0 || !s.ahead.is_empty()))
            .map(|(k, s)| (fmt_flow(k), s.framer.pending(), s.ahead.len()))
            .collect();
        leftovers.sort();
        for (flow, pending, gaps) in leftovers {
            self.records.push(Record::Err {
                origin: Origin {
                    at: "end of capture".into(),
                    flow: Some(flow),
                },
                error: format!("{pending} bytes of an unfinished message, {gaps} segments after a gap in the capture"),
            });
        }
    }
}

fn fmt_flow(k: &(IpAddr, u16, IpAddr, u16)) -> String {
    let ep = |ip: &IpAddr, p: u16| match ip {
        IpAddr::V4(a) => format!("{a}:{p}"),
        IpAddr::V6(a) => format!("[{a}]:{p}"),
    };
    format!("{} > {}", ep(&k.0, k.1), ep(&k.2, k.3))
}

/// Feeds a pcap or pcapng file's bytes to the decoder; the error says
/// what is wrong with the file (after `path` as the caller names it).
// Text on purpose: the command line prints it as it is, after the path (`ofp decode --pcap`).
pub fn read_capture(path: &std::path::Path, data: &[u8], dec: &mut CaptureDecoder) -> Result<(), String> {
    if data.len() >= 4 && data[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        let mut reader = pcap_file::pcapng::PcapNgReader::new(data)
            .map_err(|e| format!("{}: not a readable pcapng file: {e}", path.display()))?;
        let mut linktypes: Vec<u32> = Vec::new();
        while let Some(block) = reader.next_block() {
            let block = block.map_err(|e| {
                format!(
                    "{}: damaged pcapng block after frame {}: {e}",
                    path.display(),
                    dec.frames
                )
            })?;
            match block {
                pcap_file::pcapng::Block::InterfaceDescription(idb) => linktypes.push(u32::from(idb.linktype)),
                pcap_file::pcapng::Block::EnhancedPacket(epb) => {
                    let lt = linktypes.get(epb.interface_id as usize).copied().unwrap_or(1);
                    dec.frame(lt, &epb.data);
                }
                pcap_file::pcapng::Block::SimplePacket(spb) => {
                    let lt = linktypes.first().copied().unwrap_or(1);
                    dec.frame(lt, &spb.data);
                }
                _ => {}
            }
        }
    } else {
        let mut reader = pcap_file::pcap::PcapReader::new(data)
            .map_err(|e| format!("{}: neither pcap nor pcapng: {e}", path.display()))?;
        let lt = u32::from(reader.header().datalink);
        while let Some(pkt) = reader.next_packet() {
            let pkt = pkt.map_err(|e| {
                format!(
                    "{}: damaged pcap record after frame {}: {e}",
                    path.display(),
                    dec.frames
                )
            })?;
            dec.frame(lt, &pkt.data);
        }
    }
    dec.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_with_several_messages_and_a_bad_one() {
        let hello = "0400000800000001";
        let echo = "040200 0c00000002deadbeef";
        let recs = decode_hex("arg 1", &format!("{hello}{echo}"));
        assert_eq!(recs.len(), 2);
        assert!(recs.iter().all(|r| matches!(r, Record::Ok { .. })));
        let recs = decode_hex("arg 2", "0405000900000001ff");
        match &recs[0] {
            Record::Err { error, .. } => assert!(error.contains("BAD_LEN"), "{error}"),
            _ => panic!("FEATURES_REQUEST with a body must fail"),
        }
        let recs = decode_hex("arg 3", "040000100000000100");
        assert!(
            matches!(&recs[0], Record::Err { error, .. } if error.contains("header says 16 bytes but only 9 follow")),
            "{}",
            match &recs[0] {
                Record::Err { error, .. } => error.clone(),
                _ => String::new(),
            }
        );
        let recs = decode_hex("arg 4", "zz");
        assert!(matches!(&recs[0], Record::Err { error, .. } if error.contains("not hex")));
    }
}
