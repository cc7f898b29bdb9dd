//! AF_INET and AF_INET6 sockets on the loopback interface: TCP (SOCK_STREAM) and UDP
//! (SOCK_DGRAM), as Linux's net/ipv4 and net/ipv6 behave to a program. smoltcp carries the
//! segments and datagrams (`stack`); this file is Linux's socket layer over it: binding and
//! ephemeral ports, listen and accept (a pool of listening smoltcp sockets stands for the
//! accept queue), connect (blocking, or EINPROGRESS and SO_ERROR), send and receive with their
//! blocking rules, shutdown, poll readiness and the errors.

#![forbid(unsafe_code)]

mod file;
mod iface;
mod io;
pub mod stack;

pub use file::{of, InetFile};
pub use iface::{ifreq_ioctl, lo_flags, set_lo_flags};

use crate::fs::{new_ino, Caller, File, FileOps};
use crate::mm::uaccess::UserSlice;
use crate::net::IovCursor;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use smoltcp::iface::SocketHandle;
use smoltcp::socket::{tcp, udp};
use smoltcp::wire::{IpListenEndpoint, Ipv4Address, Ipv6Address};
use spin::Mutex;
use stack::{endpoint, inet_addr, Stack};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use svelt_abi::uapi::inet::{InetAddr, IPPROTO_TCP, IPPROTO_UDP};
use svelt_abi::uapi::net::*;
use svelt_abi::uapi::netlink::{IFF_LOOPBACK, IFF_LOWER_UP, IFF_RUNNING, IFF_UP};

const POLLRDHUP: u32 = 0x2000;
const RCV_SHUTDOWN: u8 = 1;
const SEND_SHUTDOWN: u8 = 2;
/// The most a datagram can carry (65535 less the IPv4 and UDP headers).
const UDP_MAX: usize = 65507;
/// The most pending connections a listener keeps (its listening smoltcp sockets).
const MAX_BACKLOG: usize = 16;

enum Kind {
    /// A TCP socket neither connecting nor listening yet.
    Fresh,
    /// A TCP connection (connecting, connected or closing).
    Conn(SocketHandle),
    /// A TCP listener: each smoltcp socket in the pool takes one connection.
    Listen {
        pool: Vec<SocketHandle>,
    },
    Udp(SocketHandle),
}

struct State {
    kind: Kind,
    local: Option<InetAddr>,
    /// UDP's default destination (connect).
    peer: Option<InetAddr>,
    reuse: bool,
    shutdown: u8,
    /// SO_ERROR, taken by getsockopt (and reported by the next call).
    err: Option<Errno>,
    /// A non-blocking connect in progress: a second connect waits or says EALREADY.
    connecting: bool,
    /// A connection was ever established (for ENOTCONN versus end of file).
    connected: bool,
    /// The peer's RST was noted (its ECONNRESET or EPIPE put in `err`).
    reset: bool,
    /// The peer's FIN came (Linux's SOCK_DONE): reads end at once, and an RST after it is
    /// EPIPE rather than ECONNRESET.
    peer_fin: bool,
    /// SO_LINGER: on, and the time in seconds.
    linger: (bool, i32),
    /// IPV6_V6ONLY (an AF_INET6 socket that takes no IPv4 traffic).
    v6only: bool,
}

impl State {
    fn new(kind: Kind, connected: bool) -> State {
        State {
            kind,
            local: None,
            peer: None,
            reuse: false,
            shutdown: 0,
            err: None,
            connecting: false,
            connected,
            reset: false,
            peer_fin: false,
            linger: (false, 0),
            v6only: false,
        }
    }

    /// Where smoltcp listens for this socket bound to `a`: a V6ONLY wildcard is lo's only
    /// IPv6 address, so IPv4 traffic to the port passes it by.
    fn listen_endpoint(&self, a: &InetAddr) -> IpListenEndpoint {
        if self.v6only && a.is_any() && matches!(a, InetAddr::V6 { .. }) {
            return listen_endpoint(&InetAddr::V6 {
                addr: Ipv6Address::LOCALHOST.octets(),
                port: a.port(),
            });
        }
        listen_endpoint(a)
    }
}

pub struct InetSocket {
    pub family: u32,
    pub ty: u32,
    pub ino: u64,
    /// TCP_NODELAY as set (lo never delays segments either way).
    pub nodelay: AtomicBool,
    st: Mutex<State>,
}

/// What a receive got.
pub struct Recv {
    pub n: usize,
    /// The whole datagram's length (MSG_TRUNC).
    pub full: usize,
    pub from: Option<InetAddr>,
}

fn loopback_for(a: InetAddr) -> InetAddr {
    // Linux sends to INADDR_ANY and in6addr_any as to the local host.
    if !a.is_any() {
        return a;
    }
    match a {
        InetAddr::V4 { port, .. } => InetAddr::V4 {
            addr: Ipv4Address::new(127, 0, 0, 1).octets(),
            port,
        },
        InetAddr::V6 { port, .. } => InetAddr::V6 {
            addr: Ipv6Address::LOCALHOST.octets(),
            port,
        },
    }
}

/// Whether an address is this host's (lo's): 127.0.0.0/8, ::1, or a wildcard.
fn is_local(a: &InetAddr) -> bool {
    match a.unmapped() {
        InetAddr::V4 { addr, .. } => addr[0] == 127 || addr == [0; 4],
        InetAddr::V6 { addr, .. } => addr == [0; 16] || addr == Ipv6Address::LOCALHOST.octets(),
    }
}

fn listen_endpoint(a: &InetAddr) -> IpListenEndpoint {
    if a.is_any() {
        IpListenEndpoint {
            addr: None,
            port: a.port(),
        }
    } else {
        let e = endpoint(a);
        IpListenEndpoint {
            addr: Some(e.addr),
            port: e.port,
        }
    }
}

impl InetSocket {
    pub fn new(family: u32, ty: u32) -> Arc<InetSocket> {
        let kind = if ty == SOCK_DGRAM {
            Kind::Udp(stack::with(|s| s.new_udp()))
        } else {
            Kind::Fresh
        };
        Arc::new(InetSocket {
            family,
            ty,
            ino: new_ino(),
            nodelay: AtomicBool::new(false),
            st: Mutex::new(State::new(kind, false)),
        })
    }

    fn proto(&self) -> u32 {
        if self.ty == SOCK_STREAM {
            IPPROTO_TCP
        } else {
            IPPROTO_UDP
        }
    }

    pub fn protocol(&self) -> u32 {
        self.proto()
    }

    fn parse(&self, addr: &[u8]) -> SysResult<InetAddr> {
        svelt_abi::uapi::inet::parse_inet_addr(self.family, addr)
    }

    pub fn set_reuse(&self, on: bool) {
        self.st.lock().reuse = on;
    }

    pub fn reuse(&self) -> bool {
        self.st.lock().reuse
    }

    pub fn set_linger(&self, on: bool, secs: i32) {
        let mut st = self.st.lock();
        // Turning it off keeps the time (sock_setsockopt).
        st.linger = if on {
            (true, secs)
        } else {
            (false, st.linger.1)
        };
    }

    pub fn linger(&self) -> (bool, i32) {
        self.st.lock().linger
    }

    /// IPV6_V6ONLY: only before the socket has a port (EINVAL after).
    pub fn set_v6only(&self, on: bool) -> SysResult<()> {
        let mut st = self.st.lock();
        if st.local.is_some() {
            return Err(Errno::EINVAL);
        }
        st.v6only = on;
        Ok(())
    }

    pub fn v6only(&self) -> bool {
        self.st.lock().v6only
    }

    /// SO_ERROR: the pending error, taken (what the stack did since is noted first).
    pub fn take_error(&self) -> i32 {
        stack::peek(|s| {
            let mut st = self.st.lock();
            self.settle(s, &mut st);
            st.err.take().map_or(0, |e| e as i32)
        })
    }

    pub fn listening(&self) -> bool {
        matches!(self.st.lock().kind, Kind::Listen { .. })
    }

    /// Binds on the stack (the caller holds it and this socket's state).
    fn bind_locked(&self, s: &mut Stack, st: &mut State, addr: InetAddr) -> SysResult<InetAddr> {
        let a = s.bind(self.ino, self.proto(), addr, st.reuse, st.v6only)?;
        if let Kind::Udp(h) = st.kind {
            let le = st.listen_endpoint(&a);
            s.udp(h).bind(le).map_err(|_| Errno::EINVAL)?;
        }
        st.local = Some(a);
        Ok(a)
    }

    /// An ephemeral port for a socket that sends or connects unbound (inet_autobind).
    fn autobind(&self, s: &mut Stack, st: &mut State) -> SysResult<InetAddr> {
        match st.local {
            Some(a) => Ok(a),
            None => self.bind_locked(s, st, InetAddr::any(self.family)),
        }
    }

    pub fn bind(&self, addr: &[u8]) -> SysResult<()> {
        let a = self.parse(addr)?;
        if !is_local(&a) {
            return Err(Errno::EADDRNOTAVAIL);
        }
        stack::with(|s| {
            let mut st = self.st.lock();
            if st.local.is_some() || !matches!(st.kind, Kind::Fresh | Kind::Udp(_)) {
                return Err(Errno::EINVAL);
            }
            self.bind_locked(s, &mut st, a).map(|_| ())
        })
    }

    pub fn listen(&self, backlog: i32) -> SysResult<()> {
        if self.ty != SOCK_STREAM {
            return Err(Errno::EOPNOTSUPP);
        }
        let want = (backlog.max(0) as usize + 1).min(MAX_BACKLOG);
        stack::with(|s| {
            let mut st = self.st.lock();
            let local = match st.kind {
                Kind::Fresh => self.autobind(s, &mut st)?,
                Kind::Listen { .. } => st.local.unwrap(),
                _ => return Err(Errno::EINVAL),
            };
            s.set_listening(self.ino);
            let mut pool = match core::mem::replace(&mut st.kind, Kind::Fresh) {
                Kind::Listen { pool, .. } => pool,
                _ => Vec::new(),
            };
            while pool.len() < want {
                let h = s.new_tcp();
                if s.tcp(h).listen(st.listen_endpoint(&local)).is_err() {
                    s.sockets.remove(h);
                    break;
                }
                pool.push(h);
            }
            st.kind = Kind::Listen { pool };
            Ok(())
        })
    }

    pub fn connect(&self, addr: &[u8], nonblock: bool) -> SysResult<()> {
        if addr.len() >= 2 && u16::from_ne_bytes([addr[0], addr[1]]) as u32 == AF_UNSPEC {
            // AF_UNSPEC dissolves a datagram socket's association.
            if self.ty == SOCK_DGRAM {
                self.st.lock().peer = None;
                return Ok(());
            }
        }
        let to = loopback_for(self.parse(addr)?);
        if self.ty == SOCK_DGRAM {
            return stack::with(|s| {
                let mut st = self.st.lock();
                self.autobind(s, &mut st)?;
                st.peer = Some(to);
                Ok(())
            });
        }
        let h = stack::with(|s| {
            let mut st = self.st.lock();
            self.settle(s, &mut st);
            match st.kind {
                Kind::Listen { .. } => return Err(Errno::EINVAL),
                Kind::Conn(h) if st.connecting => {
                    if nonblock {
                        return Err(Errno::EALREADY);
                    }
                    return Ok(h);
                }
                Kind::Conn(h) if !st.connected => {
                    // A non-blocking connect that failed: this call reports it (or
                    // ECONNABORTED once SO_ERROR took it) and the next one starts afresh
                    // (__inet_stream_connect's sock_error).
                    s.sockets.remove(h);
                    st.kind = Kind::Fresh;
                    return Err(st.err.take().unwrap_or(Errno::ECONNABORTED));
                }
                Kind::Conn(_) => {
                    if let Some(e) = st.err.take() {
                        return Err(e);
                    }
                    return Err(Errno::EISCONN);
                }
                Kind::Fresh | Kind::Udp(_) => {}
            }
            let local = self.autobind(s, &mut st)?;
            let h = s.new_tcp();
            let cx_remote = endpoint(&to);
            let le = st.listen_endpoint(&local);
            let r = s.connect(h, cx_remote, le);
            if r.is_err() {
                s.sockets.remove(h);
                return Err(Errno::ENETUNREACH);
            }
            st.kind = Kind::Conn(h);
            st.connecting = true;
            Ok(h)
        })?;
        if nonblock {
            // Even on lo the handshake is reported as under way (Linux's answer too).
            return Err(Errno::EINPROGRESS);
        }
        stack::wait(|s| {
            let mut st = self.st.lock();
            match s.tcp(h).state() {
                tcp::State::SynSent | tcp::State::SynReceived => None,
                tcp::State::Closed => {
                    // Refused: the socket may connect again.
                    st.connecting = false;
                    st.err = None;
                    s.sockets.remove(h);
                    st.kind = Kind::Fresh;
                    Some(Err(Errno::ECONNREFUSED))
                }
                _ => {
                    st.connecting = false;
                    st.connected = true;
                    Some(Ok(()))
                }
            }
        })?
    }

    /// Notes how a non-blocking connect ended (for SO_ERROR and poll).
    fn settle(&self, s: &mut Stack, st: &mut State) {
        // An established connection that went to CLOSED without our FIN was reset by the
        // peer: its error is ECONNRESET, or EPIPE after the peer's FIN, once (tcp_reset), and
        // both directions are shut.
        if let Kind::Conn(h) = st.kind {
            let state = s.tcp(h).state();
            if st.connected
                && matches!(
                    state,
                    tcp::State::CloseWait
                        | tcp::State::LastAck
                        | tcp::State::Closing
                        | tcp::State::TimeWait
                )
            {
                st.peer_fin = true;
            }
            if st.connected
                && !st.reset
                && st.shutdown & SEND_SHUTDOWN == 0
                && state == tcp::State::Closed
            {
                st.reset = true;
                st.err = Some(if st.peer_fin {
                    Errno::EPIPE
                } else {
                    Errno::ECONNRESET
                });
            }
        }
        if let (Kind::Conn(h), true) = (&st.kind, st.connecting) {
            match s.tcp(*h).state() {
                tcp::State::SynSent | tcp::State::SynReceived => {}
                tcp::State::Closed => {
                    st.connecting = false;
                    st.err = Some(Errno::ECONNREFUSED);
                }
                _ => {
                    st.connecting = false;
                    st.connected = true;
                }
            }
        }
    }

    pub fn accept(&self, nonblock: bool) -> SysResult<Arc<InetSocket>> {
        if self.ty != SOCK_STREAM {
            return Err(Errno::EOPNOTSUPP);
        }
        let (h, local) = stack::wait(|s| {
            let mut st = self.st.lock();
            let local = st.local;
            let le = local.map(|a| st.listen_endpoint(&a));
            let Kind::Listen { pool, .. } = &mut st.kind else {
                return Some(Err(Errno::EINVAL));
            };
            let ready = pool.iter().position(|&h| {
                !matches!(
                    s.tcp(h).state(),
                    tcp::State::Listen | tcp::State::SynReceived
                )
            });
            match ready {
                Some(i) => {
                    let h = pool.remove(i);
                    // A fresh listener takes the place of the one that became a connection.
                    let n = s.new_tcp();
                    if s.tcp(n).listen(le.unwrap()).is_ok() {
                        pool.push(n);
                    } else {
                        s.sockets.remove(n);
                    }
                    Some(Ok((h, local)))
                }
                None if nonblock => Some(Err(Errno::EAGAIN)),
                None => None,
            }
        })??;
        let _ = local;
        Ok(Arc::new(InetSocket {
            family: self.family,
            ty: SOCK_STREAM,
            ino: new_ino(),
            nodelay: AtomicBool::new(false),
            st: Mutex::new(State::new(Kind::Conn(h), true)),
        }))
    }

    /// getsockname's address.
    pub fn name(&self) -> InetAddr {
        stack::peek(|s| {
            let st = self.st.lock();
            if let Kind::Conn(h) = st.kind {
                if let Some(e) = s.tcp(h).local_endpoint() {
                    return inet_addr(&e, self.family);
                }
            }
            st.local
                .map(|a| a.for_family(self.family))
                .unwrap_or(InetAddr::any(self.family))
        })
    }

    /// getpeername's: ENOTCONN without a peer.
    pub fn peer_name(&self) -> SysResult<InetAddr> {
        stack::peek(|s| {
            let mut st = self.st.lock();
            self.settle(s, &mut st);
            match st.kind {
                Kind::Conn(h) if st.connected && !st.connecting => s
                    .tcp(h)
                    .remote_endpoint()
                    .map(|e| inet_addr(&e, self.family))
                    .ok_or(Errno::ENOTCONN),
                Kind::Udp(_) => st
                    .peer
                    .map(|a| a.for_family(self.family))
                    .ok_or(Errno::ENOTCONN),
                _ => Err(Errno::ENOTCONN),
            }
        })
    }

    pub fn shutdown(&self, how: u32) -> SysResult<()> {
        let bits = match how {
            SHUT_RD => RCV_SHUTDOWN,
            SHUT_WR => SEND_SHUTDOWN,
            SHUT_RDWR => RCV_SHUTDOWN | SEND_SHUTDOWN,
            _ => return Err(Errno::EINVAL),
        };
        stack::with(|s| {
            let mut st = self.st.lock();
            self.settle(s, &mut st);
            match st.kind {
                Kind::Conn(h) if st.connected => {
                    if bits & SEND_SHUTDOWN != 0 {
                        s.tcp(h).close();
                    }
                }
                Kind::Listen { ref pool, .. } if bits & RCV_SHUTDOWN != 0 => {
                    // A listener shut for reading stops listening (tcp_disconnect).
                    for &h in pool {
                        s.tcp(h).abort();
                    }
                }
                Kind::Udp(_) if st.peer.is_some() => {}
                _ => return Err(Errno::ENOTCONN),
            }
            st.shutdown |= bits;
            Ok(())
        })
    }

    pub fn poll(&self) -> u32 {
        stack::peek(|s| {
            let mut st = self.st.lock();
            self.settle(s, &mut st);
            let mut ev = 0u32;
            if st.err.is_some() {
                ev |= POLLERR as u32;
            }
            let rd = (POLLIN | POLLRDNORM) as u32;
            let wr = (POLLOUT | POLLWRNORM) as u32;
            if st.shutdown & RCV_SHUTDOWN != 0 {
                ev |= rd | POLLRDHUP;
            }
            match st.kind {
                Kind::Fresh => ev |= wr | POLLHUP as u32,
                Kind::Listen { ref pool, .. } => {
                    if pool.iter().any(|&h| {
                        !matches!(
                            s.tcp(h).state(),
                            tcp::State::Listen | tcp::State::SynReceived
                        )
                    }) {
                        ev |= rd;
                    }
                }
                Kind::Conn(h) => {
                    let t = s.tcp(h);
                    if st.connecting {
                        // Nothing yet: the handshake is under way.
                    } else if !st.connected {
                        ev |= POLLHUP as u32 | wr | rd;
                    } else if t.state() == tcp::State::Closed {
                        // Both directions shut (tcp_done).
                        ev |= POLLHUP as u32 | wr | rd | POLLRDHUP;
                    } else {
                        // smoltcp may still receive after the FIN while data is unread;
                        // Linux's RCV_SHUTDOWN comes with the FIN.
                        let fin = !t.may_recv() || st.peer_fin;
                        if t.can_recv() || fin {
                            ev |= rd;
                        }
                        if fin {
                            ev |= POLLRDHUP;
                        }
                        if !t.may_send() && fin {
                            ev |= POLLHUP as u32;
                        }
                        // Shut for sending, it is writable: a writer gets EPIPE at once.
                        if st.shutdown & SEND_SHUTDOWN != 0
                            || t.may_send() && t.send_queue() < t.send_capacity()
                        {
                            ev |= wr;
                        }
                    }
                }
                Kind::Udp(h) => {
                    let u = s.udp(h);
                    if u.can_recv() {
                        ev |= rd;
                    }
                    if u.can_send() {
                        ev |= wr;
                    }
                }
            }
            ev
        })
    }

    /// The last close: a connection says goodbye (RST if it left data unread, as Linux's
    /// tcp_close), a listener refuses what it had not accepted, the port is freed.
    fn release(&self) {
        stack::with(|s| {
            let mut st = self.st.lock();
            match core::mem::replace(&mut st.kind, Kind::Fresh) {
                Kind::Conn(h) => {
                    // SO_LINGER on with no time resets too (tcp_close).
                    let abort = s.tcp(h).recv_queue() > 0 || st.linger == (true, 0);
                    s.close_tcp(h, abort);
                }
                Kind::Listen { pool, .. } => {
                    for h in pool {
                        s.close_tcp(h, true);
                    }
                }
                Kind::Udp(h) => {
                    s.sockets.remove(h);
                }
                Kind::Fresh => {}
            }
            s.unbind(self.ino);
        });
    }
}
