//! OpenFlow 1.3 controller roles for a switch connected to several
//! controllers (OpenFlow 1.3.5 section 6.3.7), I/O-free; used by sdnlab's
//! switch and by ctlbench's emulated ones:
//!
//! - every connection starts EQUAL; ROLE_REQUEST sets MASTER, SLAVE or
//!   EQUAL (NOCHANGE only asks), and a new MASTER turns the previous one
//!   into a SLAVE;
//! - MASTER and SLAVE requests carry a generation id: one older than the
//!   newest seen (compared as a wrapping signed difference) is refused with
//!   ROLE_REQUEST_FAILED/STALE;
//! - a SLAVE may not change the switch: FLOW_MOD, GROUP_MOD, PORT_MOD,
//!   TABLE_MOD, METER_MOD and PACKET_OUT get BAD_REQUEST/IS_SLAVE;
//! - which asynchronous messages each connection gets follows its role
//!   and its SET_ASYNC configuration (defaults: MASTER/EQUAL get every
//!   PACKET_IN, PORT_STATUS and FLOW_REMOVED; SLAVE only PORT_STATUS).

use ofwire::error::{BadRequestCode, RoleRequestFailedCode};
use ofwire::v13::{self, AsyncConfig, ControllerRole, Role};
use ofwire::{Body, Message};
use ofwire::{ErrorCode, ErrorMsg};

/// What to do with a message from a controller.
#[derive(Debug)]
pub enum Verdict {
    /// Answer it with this (to the same connection); the switch does nothing else.
    Answer(Message),
    /// Taken here, with no answer (SET_ASYNC).
    Taken,
    /// Not a role matter: the switch handles it.
    Pass,
}

/// Kinds of asynchronous message, for routing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Async {
    PacketIn { reason: u8 },
    PortStatus { reason: u8 },
    FlowRemoved { reason: u8 },
}

#[derive(Clone, Debug)]
struct Connection {
    role: ControllerRole,
    config: AsyncConfig,
    open: bool,
}

/// The OpenFlow 1.3 default: element 0 for MASTER/EQUAL, 1 for SLAVE.
fn default_async() -> AsyncConfig {
    AsyncConfig {
        packet_in_mask: [0b111, 0],
        port_status_mask: [0b111, 0b111],
        flow_removed_mask: [0b1111, 0],
    }
}

/// The roles of one switch's controller connections.
#[derive(Clone, Debug)]
pub struct Roles {
    connections: Vec<Connection>,
    generation: Option<u64>,
}

fn reply(request: &Message, body: v13::Body) -> Message {
    Message {
        version: request.version,
        xid: request.xid,
        body: Body::V13(body),
    }
}

fn error(request: &Message, code: ErrorCode) -> Message {
    let mut data = request.to_bytes().unwrap_or_default();
    data.truncate(64);
    reply(
        request,
        v13::Body::Error(ErrorMsg {
            code,
            data: ofwire::Bytes(data),
        }),
    )
}

impl Roles {
    pub fn new(connections: usize) -> Roles {
        Roles {
            connections: vec![
                Connection {
                    role: ControllerRole::Equal,
                    config: default_async(),
                    open: true,
                };
                connections
            ],
            generation: None,
        }
    }

    /// A new connection (EQUAL, default asynchronous configuration); its index.
    pub fn add_connection(&mut self) -> usize {
        self.connections.push(Connection {
            role: ControllerRole::Equal,
            config: default_async(),
            open: true,
        });
        self.connections.len() - 1
    }

    /// Number of connections ever added (indices stay valid after close).
    pub fn connection_count(&self) -> usize {
        self.connections.len()
    }

    pub fn role(&self, conn: usize) -> ControllerRole {
        self.connections[conn].role
    }

    pub fn is_open(&self, conn: usize) -> bool {
        self.connections[conn].open
    }

    /// The connection closed: it gets nothing more.
    pub fn close(&mut self, conn: usize) {
        self.connections[conn].open = false;
    }

    /// Whether any connection is still open.
    pub fn any_open(&self) -> bool {
        self.connections.iter().any(|c| c.open)
    }

    /// Role requests, asynchronous configuration and a slave's attempts to
    /// change the switch are answered here; everything else passes.
    pub fn on_message(&mut self, conn: usize, m: &Message) -> Verdict {
        let Body::V13(body) = &m.body else {
            return Verdict::Pass;
        };
        match body {
            v13::Body::RoleRequest(r) => Verdict::Answer(self.role_request(conn, m, r)),
            v13::Body::SetAsync(cfg) => {
                self.connections[conn].config = cfg.clone();
                Verdict::Taken
            }
            v13::Body::GetAsyncRequest => Verdict::Answer(reply(
                m,
                v13::Body::GetAsyncReply(self.connections[conn].config.clone()),
            )),
            v13::Body::FlowMod(_)
            | v13::Body::GroupMod(_)
            | v13::Body::PortMod(_)
            | v13::Body::TableMod(_)
            | v13::Body::MeterMod(_)
            | v13::Body::PacketOut(_)
                if self.connections[conn].role == ControllerRole::Slave =>
            {
                Verdict::Answer(error(m, ErrorCode::BadRequest(BadRequestCode::IsSlave)))
            }
            _ => Verdict::Pass,
        }
    }

    fn role_request(&mut self, conn: usize, m: &Message, r: &Role) -> Message {
        let role = r.role;
        if matches!(role, ControllerRole::Master | ControllerRole::Slave) {
            if let Some(g) = self.generation {
                if (r.generation_id.wrapping_sub(g) as i64) < 0 {
                    return error(m, ErrorCode::RoleRequestFailed(RoleRequestFailedCode::Stale));
                }
            }
            self.generation = Some(r.generation_id);
        }
        match role {
            ControllerRole::Master => {
                for (i, c) in self.connections.iter_mut().enumerate() {
                    if i != conn && c.role == ControllerRole::Master {
                        c.role = ControllerRole::Slave;
                    }
                }
                self.connections[conn].role = role;
            }
            ControllerRole::Slave | ControllerRole::Equal => self.connections[conn].role = role,
            _ => {}
        }
        reply(
            m,
            v13::Body::RoleReply(Role {
                role: self.connections[conn].role,
                generation_id: self.generation.unwrap_or(0),
            }),
        )
    }

    /// Whether connection `conn` gets this asynchronous message.
    pub fn wants(&self, conn: usize, kind: Async) -> bool {
        let c = &self.connections[conn];
        if !c.open {
            return false;
        }
        let i = usize::from(c.role == ControllerRole::Slave);
        let (mask, reason) = match kind {
            Async::PacketIn { reason } => (c.config.packet_in_mask[i], reason),
            Async::PortStatus { reason } => (c.config.port_status_mask[i], reason),
            Async::FlowRemoved { reason } => (c.config.flow_removed_mask[i], reason),
        };
        reason < 32 && mask & (1 << reason) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(body: v13::Body) -> Message {
        Message {
            version: ofwire::OFP13_VERSION,
            xid: 7,
            body: Body::V13(body),
        }
    }

    fn ask(roles: &mut Roles, conn: usize, role: ControllerRole, generation_id: u64) -> Message {
        match roles.on_message(conn, &msg(v13::Body::RoleRequest(Role { role, generation_id }))) {
            Verdict::Answer(m) => m,
            other => panic!("no answer: {other:?}"),
        }
    }

    fn error_code(m: &Message) -> Option<ErrorCode> {
        match &m.body {
            Body::V13(v13::Body::Error(e)) => Some(e.code),
            _ => None,
        }
    }

    #[test]
    fn a_new_master_demotes_the_old_one_and_stale_generations_are_refused() {
        let mut r = Roles::new(2);
        assert_eq!(r.role(0), ControllerRole::Equal);
        let m = ask(&mut r, 0, ControllerRole::Master, 5);
        assert!(
            matches!(&m.body, Body::V13(v13::Body::RoleReply(x)) if x.role == ControllerRole::Master && x.generation_id == 5)
        );
        assert_eq!(m.xid, 7);
        ask(&mut r, 1, ControllerRole::Slave, 5);
        assert_eq!(r.role(1), ControllerRole::Slave);
        ask(&mut r, 1, ControllerRole::Master, 6);
        assert_eq!((r.role(0), r.role(1)), (ControllerRole::Slave, ControllerRole::Master));
        let stale = ask(&mut r, 0, ControllerRole::Master, 5);
        assert_eq!(
            error_code(&stale),
            Some(ErrorCode::RoleRequestFailed(RoleRequestFailedCode::Stale))
        );
        assert_eq!(r.role(0), ControllerRole::Slave, "a stale request changes nothing");
        // Generations wrap: u64::MAX is older than 0... and 0 newer than u64::MAX.
        let mut w = Roles::new(1);
        ask(&mut w, 0, ControllerRole::Master, u64::MAX);
        assert!(error_code(&ask(&mut w, 0, ControllerRole::Master, 0)).is_none());
        // NOCHANGE reports without changing.
        let m = ask(&mut w, 0, ControllerRole::NoChange, 0);
        assert!(matches!(&m.body, Body::V13(v13::Body::RoleReply(x)) if x.role == ControllerRole::Master));
    }

    #[test]
    fn a_slave_cannot_change_the_switch_and_gets_only_what_it_asked_for() {
        let mut r = Roles::new(2);
        ask(&mut r, 1, ControllerRole::Slave, 1);
        let po = msg(v13::Body::PacketOut(v13::PacketOut {
            buffer_id: v13::NO_BUFFER,
            in_port: v13::port::CONTROLLER,
            actions: vec![],
            data: ofwire::Bytes(vec![]),
        }));
        match r.on_message(1, &po) {
            Verdict::Answer(m) => assert_eq!(error_code(&m), Some(ErrorCode::BadRequest(BadRequestCode::IsSlave))),
            other => panic!("{other:?}"),
        }
        assert!(matches!(r.on_message(0, &po), Verdict::Pass));
        let pi = Async::PacketIn { reason: 0 };
        let ps = Async::PortStatus { reason: 2 };
        assert!(r.wants(0, pi) && r.wants(0, ps));
        assert!(!r.wants(1, pi) && r.wants(1, ps));
        let cfg = AsyncConfig {
            packet_in_mask: [0b111, 0b1],
            port_status_mask: [0b111, 0b111],
            flow_removed_mask: [0, 0],
        };
        assert!(matches!(
            r.on_message(1, &msg(v13::Body::SetAsync(cfg.clone()))),
            Verdict::Taken
        ));
        assert!(r.wants(1, pi), "a slave asked for table-miss PACKET_INs");
        assert!(!r.wants(1, Async::PacketIn { reason: 1 }));
        match r.on_message(1, &msg(v13::Body::GetAsyncRequest)) {
            Verdict::Answer(m) => assert!(matches!(&m.body, Body::V13(v13::Body::GetAsyncReply(c)) if *c == cfg)),
            other => panic!("{other:?}"),
        }
        r.close(0);
        assert!(!r.wants(0, pi) && r.any_open());
        r.close(1);
        assert!(!r.any_open());
    }
}
