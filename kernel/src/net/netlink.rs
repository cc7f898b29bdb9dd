//! AF_NETLINK, NETLINK_ROUTE: what `ip link` and `ip addr` ask of Linux's rtnetlink. Link and
//! address dumps (RTM_GETLINK, RTM_GETADDR with NLM_F_DUMP, or one link by index or name),
//! RTM_NEWLINK/RTM_SETLINK on lo's flags, errors and acknowledgements as netlink_rcv_skb
//! gives them. A request is answered as it is sent: the replies wait in the socket's queue,
//! one datagram per request.

#![forbid(unsafe_code)]

use crate::fs::{epoll, new_ino, Caller, File, FileOps};
use crate::mm::uaccess::UserSlice;
use crate::net::inet::{lo_flags, set_lo_flags};
use crate::net::IovCursor;
use crate::process::Thread;
use crate::task::wait::WaitQueue;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::any::Any;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use svelt_abi::uapi::net::{AF_INET, AF_INET6, AF_NETLINK, AF_UNSPEC, MSG_PEEK};
use svelt_abi::uapi::netlink::*;

/// A dump's replies fit here (Linux's first dump buffer is a page or more; lo needs far less).
const REPLY_ROOM: usize = 16384;

#[derive(Default)]
struct State {
    /// The port id (nl_pid); 0 until bound.
    pid: u32,
    groups: u32,
    rx: VecDeque<Vec<u8>>,
}

pub struct NlSocket {
    pub ty: u32,
    pub ino: u64,
    st: Mutex<State>,
}

static WQ: WaitQueue = WaitQueue::new();
/// Port ids in use.
static PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

pub struct NlRecv {
    pub n: usize,
    pub full: usize,
}

impl NlSocket {
    pub fn new(ty: u32) -> Arc<NlSocket> {
        Arc::new(NlSocket {
            ty,
            ino: new_ino(),
            st: Mutex::new(State::default()),
        })
    }

    /// netlink_autobind: the caller's thread-group id first, then -4096, -4097...
    fn autobind(cur: &Thread, st: &mut State) {
        if st.pid != 0 {
            return;
        }
        let mut pids = PIDS.lock();
        let mut cand = cur.pid();
        let mut next: i32 = -4096;
        while pids.contains(&cand) {
            cand = next as u32;
            next -= 1;
        }
        pids.push(cand);
        st.pid = cand;
    }

    pub fn bind(&self, cur: &Thread, addr: &[u8]) -> SysResult<()> {
        if addr.len() < SOCKADDR_NL_SIZE
            || u16::from_ne_bytes([addr[0], addr[1]]) as u32 != AF_NETLINK
        {
            return Err(Errno::EINVAL);
        }
        let pid = u32::from_ne_bytes(addr[4..8].try_into().unwrap());
        let groups = u32::from_ne_bytes(addr[8..12].try_into().unwrap());
        let mut st = self.st.lock();
        if st.pid != 0 {
            if pid != 0 && pid != st.pid {
                return Err(Errno::EINVAL);
            }
        } else if pid == 0 {
            Self::autobind(cur, &mut st);
        } else {
            let mut pids = PIDS.lock();
            if pids.contains(&pid) {
                return Err(Errno::EADDRINUSE);
            }
            pids.push(pid);
            st.pid = pid;
        }
        st.groups = groups;
        Ok(())
    }

    pub fn connect(&self, cur: &Thread, addr: &[u8]) -> SysResult<()> {
        if addr.len() < 2 {
            return Err(Errno::EINVAL);
        }
        let fam = u16::from_ne_bytes([addr[0], addr[1]]) as u32;
        if fam == AF_UNSPEC {
            return Ok(());
        }
        if addr.len() < SOCKADDR_NL_SIZE || fam != AF_NETLINK {
            return Err(Errno::EINVAL);
        }
        Self::autobind(cur, &mut self.st.lock());
        Ok(())
    }

    pub fn name(&self) -> [u8; SOCKADDR_NL_SIZE] {
        let st = self.st.lock();
        sockaddr_nl(st.pid, st.groups)
    }

    /// Sends `cur`'s requests to the kernel: each is answered into the queue.
    pub fn send(&self, cur: &Thread, data: &mut IovCursor) -> SysResult<usize> {
        let len = data.len();
        let mut buf = vec![0u8; len];
        data.copy_in(&mut buf).map_err(|p| p.err)?;
        let pid = {
            let mut st = self.st.lock();
            Self::autobind(cur, &mut st);
            st.pid
        };
        let euid = cur.process.euid.load(core::sync::atomic::Ordering::Relaxed);
        let mut out = vec![0u8; REPLY_ROOM];
        for (h, payload) in messages(&buf) {
            let mut w = NlWriter::new(&mut out);
            answer(&mut w, &h, payload, pid, euid);
            let n = w.len();
            if n > 0 {
                self.st.lock().rx.push_back(out[..n].to_vec());
            }
        }
        WQ.wake_all();
        epoll::notify();
        Ok(len)
    }

    pub fn recv(&self, data: &mut IovCursor, flags: u32, nonblock: bool) -> SysResult<NlRecv> {
        let want = data.len();
        let msg = WQ
            .wait(|| {
                let mut st = self.st.lock();
                if flags & MSG_PEEK != 0 {
                    if let Some(m) = st.rx.front() {
                        return Some(Ok(m.clone()));
                    }
                } else if let Some(m) = st.rx.pop_front() {
                    return Some(Ok(m));
                }
                nonblock.then_some(Err(Errno::EAGAIN))
            })
            .map_err(|_| Errno::ERESTARTSYS)??;
        let n = msg.len().min(want);
        data.copy_out(&msg[..n]).map_err(|p| p.err)?;
        Ok(NlRecv { n, full: msg.len() })
    }

    pub fn poll(&self) -> u32 {
        let mut ev = (POLLOUT | POLLWRNORM) as u32;
        if !self.st.lock().rx.is_empty() {
            ev |= (POLLIN | POLLRDNORM) as u32;
        }
        ev
    }
}

fn lo_link(flags: u32) -> LinkInfo<'static> {
    LinkInfo {
        index: 1,
        name: "lo",
        ty: ARPHRD_LOOPBACK,
        flags,
        mtu: crate::net::inet::stack::LO_MTU,
        operstate: IF_OPER_UNKNOWN,
        txqlen: 1000,
        hwaddr: &[0; 6],
    }
}

/// The link a request names (ifi_index, or IFLA_IFNAME when the index is 0): lo or ENODEV.
fn wanted_link(payload: &[u8]) -> SysResult<()> {
    if payload.len() < IFINFOMSG_SIZE {
        return Err(Errno::EINVAL);
    }
    let index = i32::from_ne_bytes(payload[4..8].try_into().unwrap());
    if index == 1 {
        return Ok(());
    }
    if index != 0 {
        return Err(Errno::ENODEV);
    }
    let mut a = &payload[IFINFOMSG_SIZE..];
    while a.len() >= 4 {
        let len = u16::from_ne_bytes([a[0], a[1]]) as usize;
        let ty = u16::from_ne_bytes([a[2], a[3]]);
        if len < 4 || len > a.len() {
            break;
        }
        if ty == IFLA_IFNAME {
            let name = &a[4..len];
            let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
            return if name == b"lo" {
                Ok(())
            } else {
                Err(Errno::ENODEV)
            };
        }
        a = &a[nl_align(len).min(a.len())..];
    }
    Err(Errno::EINVAL)
}

/// Answers a request of a sender whose effective uid is `euid`.
fn answer(w: &mut NlWriter, h: &NlMsgHdr, payload: &[u8], pid: u32, euid: u32) {
    let dump = h.flags & NLM_F_DUMP == NLM_F_DUMP;
    let r: SysResult<()> = if h.flags & NLM_F_REQUEST == 0 || h.ty < 0x10 {
        Ok(())
    } else {
        match h.ty {
            RTM_GETLINK if dump => {
                let _ = write_link(w, &lo_link(lo_flags()), NLM_F_MULTI, h.seq, pid);
                let _ = w.done(h.seq, pid);
                return;
            }
            RTM_GETLINK => wanted_link(payload).map(|()| {
                let _ = write_link(w, &lo_link(lo_flags()), 0, h.seq, pid);
            }),
            RTM_GETADDR if dump => {
                let fam = payload.first().copied().unwrap_or(0) as u32;
                let v4 = AddrInfo {
                    family: AF_INET as u8,
                    prefixlen: 8,
                    scope: RT_SCOPE_HOST,
                    flags: IFA_F_PERMANENT,
                    index: 1,
                    addr: &[127, 0, 0, 1],
                    label: "lo",
                    proto: 0,
                };
                if fam == AF_UNSPEC || fam == AF_INET {
                    let _ = write_addr(w, &v4, NLM_F_MULTI, h.seq, pid);
                }
                if fam == AF_UNSPEC || fam == AF_INET6 {
                    let v6 = AddrInfo {
                        family: AF_INET6 as u8,
                        prefixlen: 128,
                        addr: &IPV6_LO,
                        proto: IFAPROT_KERNEL_LO,
                        ..v4
                    };
                    let _ = write_addr(w, &v6, NLM_F_MULTI, h.seq, pid);
                }
                let _ = w.done(h.seq, pid);
                return;
            }
            RTM_NEWLINK | RTM_SETLINK => wanted_link(payload).and_then(|()| {
                if euid != 0 {
                    return Err(Errno::EPERM);
                }
                let flags = u32::from_ne_bytes(payload[8..12].try_into().unwrap());
                let mut change = u32::from_ne_bytes(payload[12..16].try_into().unwrap());
                if change == 0 {
                    change = u32::MAX;
                }
                set_lo_flags(flags, change);
                Ok(())
            }),
            _ => Err(Errno::EOPNOTSUPP),
        }
    };
    match r {
        Err(e) => {
            let _ = w.error(h, payload, Some(e), pid);
        }
        Ok(()) if h.flags & NLM_F_ACK != 0 => {
            let _ = w.error(h, payload, None, pid);
        }
        Ok(()) => {}
    }
}

const IPV6_LO: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

/// An open netlink socket. Its last close frees its port id.
pub struct NlFile(pub Arc<NlSocket>);

impl Drop for NlFile {
    fn drop(&mut self) {
        let pid = self.0.st.lock().pid;
        if pid != 0 {
            PIDS.lock().retain(|&p| p != pid);
        }
    }
}

pub fn of(file: &File) -> Option<&Arc<NlSocket>> {
    file.ops.as_any().downcast_ref::<NlFile>().map(|s| &s.0)
}

impl FileOps for NlFile {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn read_to_user(
        &self,
        _cur: &dyn Caller,
        file: &File,
        dst: UserSlice,
    ) -> Option<SysResult<usize>> {
        let mut c = IovCursor::new(alloc::vec![dst]);
        Some(self.0.recv(&mut c, 0, file.nonblocking()).map(|r| r.n))
    }

    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn poll(&self, _cur: &dyn Caller) -> u32 {
        self.0.poll()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
