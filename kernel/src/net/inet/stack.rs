//! The loopback interface `lo` (127.0.0.1/8 and ::1) and the TCP/IP machinery behind it:
//! smoltcp's interface over its loopback device, the set of its sockets, and the table of
//! bound ports. Everything sits behind one lock; every change is followed by `pump`, which
//! runs the interface until the packets in flight have all been delivered, and wakes the
//! sockets' waiters.

use crate::fs::epoll;
use crate::task::wait::WaitQueue;
use alloc::vec;
use alloc::vec::Vec;
use smoltcp::iface::{Config, Interface, PollResult, SocketHandle, SocketSet};
use smoltcp::phy::{Loopback, Medium};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr, IpEndpoint, Ipv4Address, Ipv6Address};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::inet::{
    bind_conflict_v6only, next_ephemeral, InetAddr, EPHEMERAL_HIGH, EPHEMERAL_LOW,
};

/// Per-socket buffers: TCP's window each way, UDP's queued payload.
const TCP_BUF: usize = 64 * 1024;
const UDP_BUF: usize = 128 * 1024;
const UDP_SLOTS: usize = 64;
/// lo's MTU.
pub const LO_MTU: u32 = 65536;

/// A bound port: whose (the socket's inode number), which protocol, which address.
struct Binding {
    owner: u64,
    proto: u32,
    addr: InetAddr,
    reuse: bool,
    listening: bool,
    v6only: bool,
}

pub struct Stack {
    iface: Interface,
    dev: Loopback,
    pub sockets: SocketSet<'static>,
    bindings: Vec<Binding>,
    next_port: u16,
    /// Closed TCP sockets finishing their goodbye; dropped once closed.
    closing: Vec<SocketHandle>,
}

static STACK: Mutex<Option<Stack>> = Mutex::new(None);
/// All waits on inet sockets (progress wakes them all; each re-checks its condition).
pub static WQ: WaitQueue = WaitQueue::new();

fn now() -> Instant {
    Instant::from_micros((crate::time::now_ns() / 1000) as i64)
}

impl Stack {
    fn new() -> Stack {
        let mut dev = Loopback::new(Medium::Ip);
        let mut cfg = Config::new(HardwareAddress::Ip);
        cfg.random_seed = crate::arch::cpu::counter();
        let mut iface = Interface::new(cfg, &mut dev, now());
        iface.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(IpAddress::v4(127, 0, 0, 1), 8));
            let _ = a.push(IpCidr::new(IpAddress::Ipv6(Ipv6Address::LOCALHOST), 128));
        });
        Stack {
            iface,
            dev,
            sockets: SocketSet::new(vec![]),
            bindings: Vec::new(),
            next_port: EPHEMERAL_LOW + (crate::arch::cpu::counter() % 1000) as u16,
            closing: Vec::new(),
        }
    }

    /// Runs the interface until nothing moves (a packet sent on lo is received by the next
    /// round), then lets go of sockets that finished closing. Says whether anything moved.
    pub fn pump(&mut self) -> bool {
        let mut moved = false;
        for _ in 0..4 {
            let mut quiet = 0;
            for _ in 0..10_000 {
                match self.iface.poll(now(), &mut self.dev, &mut self.sockets) {
                    PollResult::None => quiet += 1,
                    PollResult::SocketStateChanged => {
                        quiet = 0;
                        moved = true;
                    }
                }
                if quiet == 3 {
                    break;
                }
            }
            // Data for a connection whose file is gone: nobody will read it, so the peer is
            // reset (Linux's tcp_rcv_state_process for a socket shut for reading), and the
            // interface runs again to send the RST.
            let mut aborted = false;
            for &h in &self.closing {
                let s = self.sockets.get_mut::<tcp::Socket>(h);
                if s.recv_queue() > 0 && s.state() != tcp::State::Closed {
                    s.abort();
                    aborted = true;
                }
            }
            if !aborted {
                break;
            }
        }
        let sockets = &mut self.sockets;
        self.closing.retain(|&h| {
            let s = sockets.get::<tcp::Socket>(h);
            if matches!(s.state(), tcp::State::Closed | tcp::State::TimeWait) {
                sockets.remove(h);
                false
            } else {
                true
            }
        });
        moved
    }

    /// When the interface next wants to run (a retransmission, a timer), as a counter value.
    pub fn deadline(&mut self) -> Option<u64> {
        let d = self.iface.poll_delay(now(), &self.sockets)?;
        Some(crate::time::deadline_after_ns(
            d.total_micros().max(1000) * 1000,
        ))
    }

    pub fn new_tcp(&mut self) -> SocketHandle {
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; TCP_BUF]),
            tcp::SocketBuffer::new(vec![0; TCP_BUF]),
        );
        // lo answers at once: no delayed ACKs, and TCP_NODELAY's behaviour throughout.
        s.set_ack_delay(None);
        s.set_nagle_enabled(false);
        self.sockets.add(s)
    }

    pub fn new_udp(&mut self) -> SocketHandle {
        let s = udp::Socket::new(
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; UDP_SLOTS],
                vec![0; UDP_BUF],
            ),
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; UDP_SLOTS],
                vec![0; UDP_BUF],
            ),
        );
        self.sockets.add(s)
    }

    pub fn tcp(&mut self, h: SocketHandle) -> &mut tcp::Socket<'static> {
        self.sockets.get_mut::<tcp::Socket>(h)
    }

    pub fn udp(&mut self, h: SocketHandle) -> &mut udp::Socket<'static> {
        self.sockets.get_mut::<udp::Socket>(h)
    }

    /// Starts a TCP handshake from `local` to `remote`.
    pub fn connect(
        &mut self,
        h: SocketHandle,
        remote: IpEndpoint,
        local: smoltcp::wire::IpListenEndpoint,
    ) -> Result<(), tcp::ConnectError> {
        let cx = self.iface.context();
        self.sockets
            .get_mut::<tcp::Socket>(h)
            .connect(cx, remote, local)
    }

    /// A TCP socket the file let go of: it says goodbye (FIN, or RST when `abort`) and goes
    /// once closed.
    pub fn close_tcp(&mut self, h: SocketHandle, abort: bool) {
        let s = self.tcp(h);
        if abort {
            s.abort();
        } else {
            s.close();
        }
        self.closing.push(h);
    }

    /// Binds `addr` (port 0: an ephemeral one) for `owner`; returns the address bound.
    pub fn bind(
        &mut self,
        owner: u64,
        proto: u32,
        addr: InetAddr,
        reuse: bool,
        v6only: bool,
    ) -> SysResult<InetAddr> {
        let free = |bs: &[Binding], a: &InetAddr| {
            !bs.iter().any(|b| {
                b.proto == proto
                    && bind_conflict_v6only(&b.addr, b.v6only, a, v6only)
                    && !(reuse && b.reuse && !b.listening)
            })
        };
        let addr = if addr.port() == 0 {
            let mut p = self.next_port;
            let mut found = None;
            for _ in 0..=(EPHEMERAL_HIGH - EPHEMERAL_LOW) {
                p = next_ephemeral(p);
                // An ephemeral port is one nobody holds, whatever the address.
                let cand = addr.with_port(p);
                if !self
                    .bindings
                    .iter()
                    .any(|b| b.proto == proto && b.addr.port() == p)
                    && free(&self.bindings, &cand)
                {
                    found = Some(cand);
                    break;
                }
            }
            self.next_port = p;
            found.ok_or(Errno::EADDRINUSE)?
        } else {
            if !free(&self.bindings, &addr) {
                return Err(Errno::EADDRINUSE);
            }
            addr
        };
        self.bindings.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.bindings.push(Binding {
            owner,
            proto,
            addr,
            reuse,
            listening: false,
            v6only,
        });
        Ok(addr)
    }

    /// Whether a UDP socket is bound where a datagram to `to` would arrive.
    pub fn udp_bound(&self, to: &InetAddr) -> bool {
        let to = to.unmapped();
        self.bindings.iter().any(|b| {
            b.proto == svelt_abi::uapi::inet::IPPROTO_UDP
                && bind_conflict_v6only(&b.addr, b.v6only, &to, false)
        })
    }

    pub fn set_listening(&mut self, owner: u64) {
        for b in self.bindings.iter_mut().filter(|b| b.owner == owner) {
            b.listening = true;
        }
    }

    pub fn unbind(&mut self, owner: u64) {
        self.bindings.retain(|b| b.owner != owner);
    }
}

/// Runs `f` on the stack, then the interface, then wakes waiters.
pub fn with<R>(f: impl FnOnce(&mut Stack) -> R) -> R {
    let r = {
        let mut g = STACK.lock();
        let s = g.get_or_insert_with(Stack::new);
        let r = f(s);
        s.pump();
        r
    };
    WQ.wake_all();
    epoll::notify();
    r
}

/// Looks at the stack without running it or waking anyone (poll, the names): a look must
/// not wake the poll and epoll waiters that made it, or they would never sleep.
pub fn peek<R>(f: impl FnOnce(&mut Stack) -> R) -> R {
    let mut g = STACK.lock();
    f(g.get_or_insert_with(Stack::new))
}

/// Waits until `cond` (run on the stack) gives an answer: a signal ends the wait with
/// ERESTARTSYS. The interface runs before each look, and the sleep ends when it next wants to
/// run (a timer of its own), so nothing it owes is left undone while callers sleep.
pub fn wait<R>(mut cond: impl FnMut(&mut Stack) -> Option<R>) -> SysResult<R> {
    loop {
        let (r, deadline, moved) = {
            let mut g = STACK.lock();
            let s = g.get_or_insert_with(Stack::new);
            let moved = s.pump();
            let r = cond(s);
            (r, s.deadline(), moved)
        };
        if moved && r.is_none() {
            // A timer of the interface's made progress others may wait for.
            WQ.wake_all();
            epoll::notify();
        }
        let r = match r {
            Some(r) => Some(r),
            None => WQ
                .wait_deadline(
                    || {
                        let mut g = STACK.lock();
                        cond(g.get_or_insert_with(Stack::new))
                    },
                    deadline,
                )
                .map_err(|_| Errno::ERESTARTSYS)?,
        };
        if let Some(r) = r {
            WQ.wake_all();
            epoll::notify();
            return Ok(r);
        }
    }
}

/// An address as smoltcp names it.
pub fn endpoint(a: &InetAddr) -> IpEndpoint {
    match a.unmapped() {
        InetAddr::V4 { addr, port } => {
            IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::from(addr)), port)
        }
        InetAddr::V6 { addr, port } => {
            IpEndpoint::new(IpAddress::Ipv6(Ipv6Address::from(addr)), port)
        }
    }
}

/// smoltcp's endpoint as a socket of `family` names it.
pub fn inet_addr(e: &IpEndpoint, family: u32) -> InetAddr {
    let a = match e.addr {
        IpAddress::Ipv4(a) => InetAddr::V4 {
            addr: a.octets(),
            port: e.port,
        },
        IpAddress::Ipv6(a) => InetAddr::V6 {
            addr: a.octets(),
            port: e.port,
        },
    };
    a.for_family(family)
}
