//! AF_INET and AF_INET6: socket addresses (`struct sockaddr_in`, `struct sockaddr_in6`) as
//! Linux's inet_bind, inet6_bind and the connect paths read them, the option numbers the socket
//! layer accepts, and the ephemeral port range.

use super::errno::{Errno, SysResult};
use super::net::{AF_INET, AF_INET6, AF_UNSPEC};

pub const IPPROTO_IP: u32 = 0;
pub const IPPROTO_TCP: u32 = 6;
pub const IPPROTO_UDP: u32 = 17;
pub const IPPROTO_IPV6: u32 = 41;

pub const SO_REUSEADDR: u32 = 2;
pub const SO_KEEPALIVE: u32 = 9;
pub const SO_REUSEPORT: u32 = 15;
pub const SO_LINGER: u32 = 13;
pub const TCP_NODELAY: u32 = 1;
pub const IPV6_V6ONLY: u32 = 26;

/// sizeof(struct sockaddr_in).
pub const SOCKADDR_IN_SIZE: usize = 16;
/// sizeof(struct sockaddr_in6).
pub const SOCKADDR_IN6_SIZE: usize = 28;
/// SIN6_LEN_RFC2133: the shortest sockaddr_in6 Linux takes (no sin6_scope_id).
pub const SIN6_LEN_RFC2133: usize = 24;

/// /proc/sys/net/ipv4/ip_local_port_range's default.
pub const EPHEMERAL_LOW: u16 = 32768;
pub const EPHEMERAL_HIGH: u16 = 60999;

/// An IPv4 or IPv6 address and port (host byte order for the port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InetAddr {
    V4 { addr: [u8; 4], port: u16 },
    V6 { addr: [u8; 16], port: u16 },
}

impl InetAddr {
    pub fn port(&self) -> u16 {
        match *self {
            InetAddr::V4 { port, .. } | InetAddr::V6 { port, .. } => port,
        }
    }

    pub fn with_port(self, port: u16) -> InetAddr {
        match self {
            InetAddr::V4 { addr, .. } => InetAddr::V4 { addr, port },
            InetAddr::V6 { addr, .. } => InetAddr::V6 { addr, port },
        }
    }

    /// INADDR_ANY or in6addr_any.
    pub fn is_any(&self) -> bool {
        match self {
            InetAddr::V4 { addr, .. } => *addr == [0; 4],
            InetAddr::V6 { addr, .. } => *addr == [0; 16],
        }
    }

    /// The wildcard address of a family, port 0.
    pub fn any(family: u32) -> InetAddr {
        if family == AF_INET6 {
            InetAddr::V6 {
                addr: [0; 16],
                port: 0,
            }
        } else {
            InetAddr::V4 {
                addr: [0; 4],
                port: 0,
            }
        }
    }

    /// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) back to IPv4; anything else unchanged.
    pub fn unmapped(self) -> InetAddr {
        match self {
            InetAddr::V6 { addr, port } if addr[..12] == V4_MAPPED_PREFIX => InetAddr::V4 {
                addr: [addr[12], addr[13], addr[14], addr[15]],
                port,
            },
            a => a,
        }
    }

    /// The address as a socket of `family` names it: an IPv4 peer of an AF_INET6 socket is
    /// shown IPv4-mapped.
    pub fn for_family(self, family: u32) -> InetAddr {
        match self {
            InetAddr::V4 { addr, port } if family == AF_INET6 => {
                let mut a = [0u8; 16];
                a[..12].copy_from_slice(&V4_MAPPED_PREFIX);
                a[12..].copy_from_slice(&addr);
                InetAddr::V6 { addr: a, port }
            }
            a => a,
        }
    }

    /// The sockaddr_in or sockaddr_in6 bytes (`buf` at least 28 bytes); returns the length.
    pub fn write(&self, buf: &mut [u8]) -> usize {
        match self {
            InetAddr::V4 { addr, port } => {
                buf[..SOCKADDR_IN_SIZE].fill(0);
                buf[..2].copy_from_slice(&(AF_INET as u16).to_ne_bytes());
                buf[2..4].copy_from_slice(&port.to_be_bytes());
                buf[4..8].copy_from_slice(addr);
                SOCKADDR_IN_SIZE
            }
            InetAddr::V6 { addr, port } => {
                buf[..SOCKADDR_IN6_SIZE].fill(0);
                buf[..2].copy_from_slice(&(AF_INET6 as u16).to_ne_bytes());
                buf[2..4].copy_from_slice(&port.to_be_bytes());
                buf[8..24].copy_from_slice(addr);
                SOCKADDR_IN6_SIZE
            }
        }
    }
}

const V4_MAPPED_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// Reads the address a socket of `family` was given to bind, connect or send to: EINVAL when
/// shorter than the family's sockaddr (inet_bind, inet6_bind, tcp_v4_connect...),
/// EAFNOSUPPORT for another family. AF_UNSPEC with INADDR_ANY binds an AF_INET socket as
/// AF_INET (Linux keeps that for old programs).
pub fn parse_inet_addr(family: u32, b: &[u8]) -> SysResult<InetAddr> {
    if family == AF_INET6 {
        if b.len() < SIN6_LEN_RFC2133 {
            return Err(Errno::EINVAL);
        }
        if u16::from_ne_bytes([b[0], b[1]]) as u32 != AF_INET6 {
            return Err(Errno::EAFNOSUPPORT);
        }
        let mut addr = [0u8; 16];
        addr.copy_from_slice(&b[8..24]);
        return Ok(InetAddr::V6 {
            addr,
            port: u16::from_be_bytes([b[2], b[3]]),
        });
    }
    if b.len() < SOCKADDR_IN_SIZE {
        return Err(Errno::EINVAL);
    }
    let fam = u16::from_ne_bytes([b[0], b[1]]) as u32;
    let addr = [b[4], b[5], b[6], b[7]];
    if fam != AF_INET && !(fam == AF_UNSPEC && addr == [0; 4]) {
        return Err(Errno::EAFNOSUPPORT);
    }
    Ok(InetAddr::V4 {
        addr,
        port: u16::from_be_bytes([b[2], b[3]]),
    })
}

/// Whether two bound addresses on one port collide (inet_bind_conflict without the
/// SO_REUSEADDR exceptions): the same address, or a wildcard that covers the other. An
/// AF_INET6 wildcard covers IPv4 too (IPV6_V6ONLY is off by default).
pub fn bind_conflict(a: &InetAddr, b: &InetAddr) -> bool {
    if a.port() != b.port() {
        return false;
    }
    let (a, b) = (a.unmapped(), b.unmapped());
    let v6any = |x: &InetAddr| matches!(x, InetAddr::V6 { .. }) && x.is_any();
    match (&a, &b) {
        (InetAddr::V4 { .. }, InetAddr::V4 { .. }) | (InetAddr::V6 { .. }, InetAddr::V6 { .. }) => {
            a.is_any() || b.is_any() || a == b
        }
        _ => v6any(&a) || v6any(&b) || (a.is_any() && b.is_any()),
    }
}

/// bind_conflict for sockets that may be IPV6_V6ONLY (`a6`, `b6`): a V6ONLY socket shares its
/// port with IPv4 addresses, wildcard included.
pub fn bind_conflict_v6only(a: &InetAddr, a6: bool, b: &InetAddr, b6: bool) -> bool {
    let v4 = |x: &InetAddr| matches!(x.unmapped(), InetAddr::V4 { .. });
    let only6 = |x: &InetAddr, on: bool| on && matches!(x, InetAddr::V6 { .. }) && !v4(x);
    if (only6(a, a6) && v4(b)) || (only6(b, b6) && v4(a)) {
        return false;
    }
    bind_conflict(a, b)
}

/// The next ephemeral port to try after `prev` (wrapping within the range).
pub fn next_ephemeral(prev: u16) -> u16 {
    if !(EPHEMERAL_LOW..EPHEMERAL_HIGH).contains(&prev) {
        EPHEMERAL_LOW
    } else {
        prev + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sin(port: u16, a: [u8; 4]) -> [u8; 16] {
        let mut b = [0u8; 16];
        InetAddr::V4 { addr: a, port }.write(&mut b);
        b
    }

    #[test]
    fn sockaddr_in_round_trips_with_port_in_network_order() {
        let b = sin(8080, [127, 0, 0, 1]);
        assert_eq!(&b[..8], &[2, 0, 0x1f, 0x90, 127, 0, 0, 1]);
        assert_eq!(
            parse_inet_addr(AF_INET, &b),
            Ok(InetAddr::V4 {
                addr: [127, 0, 0, 1],
                port: 8080
            })
        );
    }

    #[test]
    fn short_or_foreign_addresses_are_refused_as_linux_does() {
        let b = sin(1, [127, 0, 0, 1]);
        assert_eq!(parse_inet_addr(AF_INET, &b[..15]), Err(Errno::EINVAL));
        let mut u = b;
        u[0] = AF_INET6 as u8;
        assert_eq!(parse_inet_addr(AF_INET, &u), Err(Errno::EAFNOSUPPORT));
        // AF_UNSPEC is taken for INADDR_ANY only.
        let mut any = sin(5, [0; 4]);
        any[0] = 0;
        assert!(parse_inet_addr(AF_INET, &any).is_ok());
        u[0] = 0;
        assert_eq!(parse_inet_addr(AF_INET, &u), Err(Errno::EAFNOSUPPORT));
        let mut s6 = [0u8; 28];
        let lo = InetAddr::V6 {
            addr: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            port: 7,
        };
        assert_eq!(lo.write(&mut s6), 28);
        assert_eq!(parse_inet_addr(AF_INET6, &s6[..24]), Ok(lo));
        assert_eq!(parse_inet_addr(AF_INET6, &s6[..23]), Err(Errno::EINVAL));
        assert_eq!(parse_inet_addr(AF_INET6, &b), Err(Errno::EINVAL));
    }

    #[test]
    fn v4_peers_of_v6_sockets_are_mapped() {
        let a = InetAddr::V4 {
            addr: [127, 0, 0, 1],
            port: 9,
        };
        let m = a.for_family(AF_INET6);
        let mut b = [0u8; 28];
        m.write(&mut b);
        assert_eq!(
            &b[8..24],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 127, 0, 0, 1]
        );
        assert_eq!(m.unmapped(), a);
        assert_eq!(a.for_family(AF_INET), a);
    }

    #[test]
    fn bind_conflicts_follow_wildcards() {
        let v4 = |a: [u8; 4]| InetAddr::V4 { addr: a, port: 80 };
        let v6any = InetAddr::any(AF_INET6).with_port(80);
        let mut l6 = [0u8; 16];
        l6[15] = 1;
        let v6lo = InetAddr::V6 { addr: l6, port: 80 };
        assert!(bind_conflict(&v4([127, 0, 0, 1]), &v4([127, 0, 0, 1])));
        assert!(bind_conflict(&v4([0; 4]), &v4([127, 0, 0, 1])));
        assert!(!bind_conflict(&v4([127, 0, 0, 1]), &v4([127, 0, 0, 2])));
        assert!(!bind_conflict(
            &v4([127, 0, 0, 1]),
            &v4([127, 0, 0, 1]).with_port(81)
        ));
        assert!(bind_conflict(&v6any, &v4([127, 0, 0, 1])));
        assert!(bind_conflict(&v4([0; 4]), &v6any));
        assert!(!bind_conflict(&v4([0; 4]), &v6lo));
        assert!(!bind_conflict(&v4([127, 0, 0, 1]), &v6lo));
        assert!(bind_conflict(&v6lo, &v6any));
        // IPV6_V6ONLY leaves IPv4 to others, not IPv6.
        assert!(bind_conflict_v6only(&v6any, false, &v4([0; 4]), false));
        assert!(!bind_conflict_v6only(&v6any, true, &v4([0; 4]), false));
        assert!(!bind_conflict_v6only(
            &v4([127, 0, 0, 1]),
            false,
            &v6any,
            true
        ));
        assert!(bind_conflict_v6only(&v6lo, false, &v6any, true));
    }

    #[test]
    fn ephemeral_ports_wrap_inside_the_range() {
        assert_eq!(next_ephemeral(0), EPHEMERAL_LOW);
        assert_eq!(next_ephemeral(40000), 40001);
        assert_eq!(next_ephemeral(EPHEMERAL_HIGH), EPHEMERAL_LOW);
    }
}
