//! The address of something to connect to, as people write it: an IP
//! address and port (`127.0.0.1:6653`, `[::1]:6653`) or a host name and
//! port (`localhost:6653`, as ovs-vsctl's and Ryu's users write), the name
//! resolved once, IPv4 first (the emulated switches and the lab's
//! namespaces speak IPv4).

use std::net::{SocketAddr, ToSocketAddrs};

/// clap's value parser for HOST:PORT.
pub fn parse(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!("'{s}' has no port: write HOST:PORT, such as {s}:6653"));
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(format!(
            "'{s}': write HOST:PORT, such as localhost:6653 or 127.0.0.1:6653"
        ));
    }
    let found: Vec<SocketAddr> = s
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve '{host}': {e}"))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| format!("'{host}' resolves to no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_and_mistakes_say_how_to_write_it() {
        assert_eq!(parse("127.0.0.1:6653").unwrap(), "127.0.0.1:6653".parse().unwrap());
        assert_eq!(parse("[::1]:6653").unwrap(), "[::1]:6653".parse().unwrap());
        assert_eq!(parse("localhost:6653").unwrap(), "127.0.0.1:6653".parse().unwrap());
        assert!(parse("localhost").unwrap_err().contains("no port"));
        assert!(parse("localhost:x").unwrap_err().contains("HOST:PORT"));
        assert!(parse("no-such-host.invalid:6653")
            .unwrap_err()
            .contains("cannot resolve"));
    }
}
