//! The address of something to connect to, as people write it: an IP
//! address and port (`127.0.0.1:6653`, `[::1]:6653`) or a host name and
//! port (`localhost:6653`, as ovs-vsctl's and Ryu's users write), the name
//! resolved once, IPv4 first (the emulated switches and the lab's
//! namespaces speak IPv4).

use std::net::{SocketAddr, ToSocketAddrs};

/// An address written wrongly, or a name that does not resolve; the text
/// says how to write it.
#[derive(Debug, thiserror::Error)]
pub enum HostPortError {
    #[error("'{0}' has no port: write HOST:PORT, such as {0}:6653")]
    NoPort(String),
    #[error("'{0}': write HOST:PORT, such as localhost:6653 or 127.0.0.1:6653")]
    Malformed(String),
    #[error("cannot resolve '{host}': {source}")]
    Unresolved {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("'{0}' resolves to no address")]
    NoAddress(String),
}

/// HOST:PORT as an address (clap's value parser for such flags, and the
/// experiment files' reader).
pub fn parse(s: &str) -> Result<SocketAddr, HostPortError> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(HostPortError::NoPort(s.to_string()));
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(HostPortError::Malformed(s.to_string()));
    }
    let found: Vec<SocketAddr> = s
        .to_socket_addrs()
        .map_err(|source| HostPortError::Unresolved {
            host: host.to_string(),
            source,
        })?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| HostPortError::NoAddress(host.to_string()))
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_and_mistakes_say_how_to_write_it() {
        assert_eq!(parse("127.0.0.1:6653").unwrap(), "127.0.0.1:6653".parse().unwrap());
        assert_eq!(parse("[::1]:6653").unwrap(), "[::1]:6653".parse().unwrap());
        assert_eq!(parse("localhost:6653").unwrap(), "127.0.0.1:6653".parse().unwrap());
        assert!(parse("localhost").unwrap_err().to_string().contains("no port"));
        assert!(parse("localhost:x").unwrap_err().to_string().contains("HOST:PORT"));
        assert!(parse("no-such-host.invalid:6653")
            .unwrap_err()
            .to_string()
            .contains("cannot resolve"));
    }
}
