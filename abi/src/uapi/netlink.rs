//! AF_NETLINK, NETLINK_ROUTE: the message layouts (`struct nlmsghdr`, `struct nlmsgerr`,
//! `struct ifinfomsg`, `struct ifaddrmsg`, `struct rtattr`, `struct sockaddr_nl`) and the
//! replies Linux's rtnetlink gives a link or address dump (rtnl_fill_ifinfo,
//! inet_fill_ifaddr, inet6_fill_ifaddr), written into a caller's buffer.

use super::errno::Errno;
use super::net::AF_NETLINK;

pub const NETLINK_ROUTE: u32 = 0;

pub const NLMSG_NOOP: u16 = 1;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;

pub const NLM_F_REQUEST: u16 = 0x1;
pub const NLM_F_MULTI: u16 = 0x2;
pub const NLM_F_ACK: u16 = 0x4;
pub const NLM_F_ROOT: u16 = 0x100;
pub const NLM_F_MATCH: u16 = 0x200;
pub const NLM_F_DUMP: u16 = NLM_F_ROOT | NLM_F_MATCH;

pub const RTM_NEWLINK: u16 = 16;
pub const RTM_GETLINK: u16 = 18;
pub const RTM_SETLINK: u16 = 19;
pub const RTM_NEWADDR: u16 = 20;
pub const RTM_GETADDR: u16 = 22;

pub const NLMSG_HDRLEN: usize = 16;
pub const IFINFOMSG_SIZE: usize = 16;
pub const IFADDRMSG_SIZE: usize = 8;
pub const SOCKADDR_NL_SIZE: usize = 12;

pub const IFLA_ADDRESS: u16 = 1;
pub const IFLA_BROADCAST: u16 = 2;
pub const IFLA_IFNAME: u16 = 3;
pub const IFLA_MTU: u16 = 4;
pub const IFLA_QDISC: u16 = 6;
pub const IFLA_TXQLEN: u16 = 13;
pub const IFLA_OPERSTATE: u16 = 16;
pub const IFLA_LINKMODE: u16 = 17;
pub const IFLA_GROUP: u16 = 27;
pub const IFLA_PROMISCUITY: u16 = 30;
pub const IFLA_NUM_TX_QUEUES: u16 = 31;
pub const IFLA_NUM_RX_QUEUES: u16 = 32;
pub const IFLA_CARRIER: u16 = 33;
pub const IFLA_MIN_MTU: u16 = 50;
pub const IFLA_MAX_MTU: u16 = 51;

pub const IFA_ADDRESS: u16 = 1;
pub const IFA_LOCAL: u16 = 2;
pub const IFA_LABEL: u16 = 3;
pub const IFA_CACHEINFO: u16 = 6;
pub const IFA_FLAGS: u16 = 8;
pub const IFA_PROTO: u16 = 11;
/// IFA_PROTO's value for the address the kernel gives loopback itself (IPv6's ::1).
pub const IFAPROT_KERNEL_LO: u8 = 1;

pub const IFF_UP: u32 = 0x1;
pub const IFF_LOOPBACK: u32 = 0x8;
pub const IFF_RUNNING: u32 = 0x40;
pub const IFF_LOWER_UP: u32 = 0x10000;
pub const ARPHRD_LOOPBACK: u16 = 772;
/// IF_OPER_UNKNOWN: what lo reports (it has no carrier to speak of).
pub const IF_OPER_UNKNOWN: u8 = 0;
pub const IFA_F_PERMANENT: u32 = 0x80;
pub const RT_SCOPE_HOST: u8 = 254;

/// NLMSG_ALIGN / RTA_ALIGN.
pub const fn nl_align(n: usize) -> usize {
    (n + 3) & !3
}

/// A message header read from a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NlMsgHdr {
    pub len: u32,
    pub ty: u16,
    pub flags: u16,
    pub seq: u32,
    pub pid: u32,
}

impl NlMsgHdr {
    pub fn read(b: &[u8]) -> Option<NlMsgHdr> {
        if b.len() < NLMSG_HDRLEN {
            return None;
        }
        let u32at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some(NlMsgHdr {
            len: u32at(0),
            ty: u16::from_ne_bytes([b[4], b[5]]),
            flags: u16::from_ne_bytes([b[6], b[7]]),
            seq: u32at(8),
            pid: u32at(12),
        })
    }

    pub fn bytes(&self) -> [u8; NLMSG_HDRLEN] {
        let mut o = [0u8; NLMSG_HDRLEN];
        o[0..4].copy_from_slice(&self.len.to_ne_bytes());
        o[4..6].copy_from_slice(&self.ty.to_ne_bytes());
        o[6..8].copy_from_slice(&self.flags.to_ne_bytes());
        o[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        o[12..16].copy_from_slice(&self.pid.to_ne_bytes());
        o
    }
}

/// The messages of a request datagram, each with its payload, as netlink_rcv_skb walks them:
/// it stops at a header whose length is short or runs past the datagram.
pub fn messages(mut b: &[u8]) -> impl Iterator<Item = (NlMsgHdr, &[u8])> {
    core::iter::from_fn(move || {
        let h = NlMsgHdr::read(b)?;
        let len = h.len as usize;
        if len < NLMSG_HDRLEN || len > b.len() {
            return None;
        }
        let payload = &b[NLMSG_HDRLEN..len];
        b = &b[nl_align(len).min(b.len())..];
        Some((h, payload))
    })
}

/// `struct sockaddr_nl` for a port id (and multicast groups).
pub fn sockaddr_nl(pid: u32, groups: u32) -> [u8; SOCKADDR_NL_SIZE] {
    let mut o = [0u8; SOCKADDR_NL_SIZE];
    o[0..2].copy_from_slice(&(AF_NETLINK as u16).to_ne_bytes());
    o[4..8].copy_from_slice(&pid.to_ne_bytes());
    o[8..12].copy_from_slice(&groups.to_ne_bytes());
    o
}

/// Messages written one after another into a buffer; `None` once it is full.
pub struct NlWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
    start: usize,
}

impl<'a> NlWriter<'a> {
    pub fn new(buf: &'a mut [u8]) -> NlWriter<'a> {
        NlWriter {
            buf,
            len: 0,
            start: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn put(&mut self, b: &[u8]) -> Option<()> {
        let end = self.len.checked_add(b.len())?;
        let padded = nl_align(end);
        if padded > self.buf.len() {
            return None;
        }
        self.buf[self.len..end].copy_from_slice(b);
        self.buf[end..padded].fill(0);
        self.len = padded;
        Some(())
    }

    /// Starts a message; `finish` writes its length.
    pub fn begin(&mut self, ty: u16, flags: u16, seq: u32, pid: u32) -> Option<()> {
        self.start = self.len;
        let h = NlMsgHdr {
            len: 0,
            ty,
            flags,
            seq,
            pid,
        };
        self.put(&h.bytes())
    }

    pub fn body(&mut self, b: &[u8]) -> Option<()> {
        self.put(b)
    }

    pub fn attr(&mut self, ty: u16, data: &[u8]) -> Option<()> {
        let len = u16::try_from(4 + data.len()).ok()?;
        let mut h = [0u8; 4];
        h[0..2].copy_from_slice(&len.to_ne_bytes());
        h[2..4].copy_from_slice(&ty.to_ne_bytes());
        self.put(&h)?;
        self.put(data)
    }

    pub fn finish(&mut self) {
        let len = (self.len - self.start) as u32;
        self.buf[self.start..self.start + 4].copy_from_slice(&len.to_ne_bytes());
    }

    /// NLMSG_DONE of a dump: its payload is the int 0.
    pub fn done(&mut self, seq: u32, pid: u32) -> Option<()> {
        self.begin(NLMSG_DONE, NLM_F_MULTI, seq, pid)?;
        self.body(&0i32.to_ne_bytes())?;
        self.finish();
        Some(())
    }

    /// NLMSG_ERROR: `err` (0 is an acknowledgement) and the request's header; a failed
    /// request's payload follows its header, as without NETLINK_CAP_ACK.
    pub fn error(
        &mut self,
        req: &NlMsgHdr,
        req_payload: &[u8],
        err: Option<Errno>,
        pid: u32,
    ) -> Option<()> {
        self.begin(
            NLMSG_ERROR,
            if err.is_some() { 0 } else { 0x100 },
            req.seq,
            pid,
        )?;
        let e = err.map_or(0, |e| -(e as i32));
        self.body(&e.to_ne_bytes())?;
        let mut h = req.bytes();
        if err.is_none() {
            h[0..4].copy_from_slice(&(NLMSG_HDRLEN as u32).to_ne_bytes());
            self.body(&h)?;
        } else {
            self.body(&h)?;
            self.body(req_payload)?;
        }
        self.finish();
        Some(())
    }
}

/// What a link dump tells of one interface.
pub struct LinkInfo<'a> {
    pub index: i32,
    pub name: &'a str,
    pub ty: u16,
    pub flags: u32,
    pub mtu: u32,
    pub operstate: u8,
    pub txqlen: u32,
    pub hwaddr: &'a [u8],
}

/// RTM_NEWLINK for `l` (rtnl_fill_ifinfo's common attributes).
pub fn write_link(w: &mut NlWriter, l: &LinkInfo, flags: u16, seq: u32, pid: u32) -> Option<()> {
    w.begin(RTM_NEWLINK, flags, seq, pid)?;
    let mut ifi = [0u8; IFINFOMSG_SIZE];
    ifi[2..4].copy_from_slice(&l.ty.to_ne_bytes());
    ifi[4..8].copy_from_slice(&l.index.to_ne_bytes());
    ifi[8..12].copy_from_slice(&l.flags.to_ne_bytes());
    w.body(&ifi)?;
    let mut name = [0u8; 16];
    let n = l.name.len().min(15);
    name[..n].copy_from_slice(&l.name.as_bytes()[..n]);
    w.attr(IFLA_IFNAME, &name[..n + 1])?;
    w.attr(IFLA_TXQLEN, &l.txqlen.to_ne_bytes())?;
    w.attr(IFLA_OPERSTATE, &[l.operstate])?;
    w.attr(IFLA_LINKMODE, &[0])?;
    w.attr(IFLA_MTU, &l.mtu.to_ne_bytes())?;
    w.attr(IFLA_MIN_MTU, &0u32.to_ne_bytes())?;
    w.attr(IFLA_MAX_MTU, &0u32.to_ne_bytes())?;
    w.attr(IFLA_GROUP, &0u32.to_ne_bytes())?;
    w.attr(IFLA_PROMISCUITY, &0u32.to_ne_bytes())?;
    w.attr(IFLA_NUM_TX_QUEUES, &1u32.to_ne_bytes())?;
    w.attr(IFLA_NUM_RX_QUEUES, &1u32.to_ne_bytes())?;
    w.attr(IFLA_CARRIER, &[1])?;
    w.attr(IFLA_QDISC, b"noqueue\0")?;
    w.attr(IFLA_ADDRESS, l.hwaddr)?;
    w.attr(IFLA_BROADCAST, l.hwaddr)?;
    w.finish();
    Some(())
}

/// What an address dump tells of one address.
pub struct AddrInfo<'a> {
    pub family: u8,
    pub prefixlen: u8,
    pub scope: u8,
    pub flags: u32,
    pub index: u32,
    pub addr: &'a [u8],
    pub label: &'a str,
    /// Who made it (IFA_PROTO, left out when 0): Linux marks only IPv6's ::1 on lo, which
    /// addrconf adds itself (init_loopback), with IFAPROT_KERNEL_LO.
    pub proto: u8,
}

/// RTM_NEWADDR for `a`: IPv4 gives IFA_ADDRESS, IFA_LOCAL and IFA_LABEL (inet_fill_ifaddr),
/// IPv6 IFA_ADDRESS alone (inet6_fill_ifaddr); both end with IFA_CACHEINFO (lifetimes
/// "forever", as for a permanent address), IFA_FLAGS and, when set, IFA_PROTO.
pub fn write_addr(w: &mut NlWriter, a: &AddrInfo, flags: u16, seq: u32, pid: u32) -> Option<()> {
    w.begin(RTM_NEWADDR, flags, seq, pid)?;
    let mut ifa = [0u8; IFADDRMSG_SIZE];
    ifa[0] = a.family;
    ifa[1] = a.prefixlen;
    ifa[2] = a.flags as u8;
    ifa[3] = a.scope;
    ifa[4..8].copy_from_slice(&a.index.to_ne_bytes());
    w.body(&ifa)?;
    w.attr(IFA_ADDRESS, a.addr)?;
    if a.family as u32 == super::net::AF_INET {
        w.attr(IFA_LOCAL, a.addr)?;
        let mut label = [0u8; 16];
        let n = a.label.len().min(15);
        label[..n].copy_from_slice(&a.label.as_bytes()[..n]);
        w.attr(IFA_LABEL, &label[..n + 1])?;
    }
    // struct ifa_cacheinfo: ifa_prefered, ifa_valid, cstamp, tstamp.
    let mut ci = [0u8; 16];
    ci[..8].fill(0xff);
    w.attr(IFA_CACHEINFO, &ci)?;
    w.attr(IFA_FLAGS, &a.flags.to_ne_bytes())?;
    if a.proto != 0 {
        w.attr(IFA_PROTO, &[a.proto])?;
    }
    w.finish();
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uapi::net::AF_INET;

    /// The attributes of one message body, as (type, payload).
    fn attrs(mut b: &[u8]) -> std::vec::Vec<(u16, std::vec::Vec<u8>)> {
        let mut v = std::vec::Vec::new();
        while b.len() >= 4 {
            let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
            let ty = u16::from_ne_bytes([b[2], b[3]]);
            v.push((ty, b[4..len].to_vec()));
            b = &b[nl_align(len).min(b.len())..];
        }
        v
    }

    #[test]
    fn a_link_dump_is_ifinfomsg_then_aligned_attributes() {
        let mut buf = [0u8; 512];
        let mut w = NlWriter::new(&mut buf);
        let lo = LinkInfo {
            index: 1,
            name: "lo",
            ty: ARPHRD_LOOPBACK,
            flags: IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP,
            mtu: 65536,
            operstate: IF_OPER_UNKNOWN,
            txqlen: 1000,
            hwaddr: &[0; 6],
        };
        write_link(&mut w, &lo, NLM_F_MULTI, 7, 42).unwrap();
        w.done(7, 42).unwrap();
        let n = w.len();
        let msgs: std::vec::Vec<_> = messages(&buf[..n]).collect();
        assert_eq!(msgs.len(), 2);
        let (h, body) = msgs[0];
        assert_eq!(
            (h.ty, h.flags, h.seq, h.pid),
            (RTM_NEWLINK, NLM_F_MULTI, 7, 42)
        );
        assert_eq!(h.len as usize % 4, 0);
        assert_eq!(u16::from_ne_bytes([body[2], body[3]]), 772);
        assert_eq!(i32::from_ne_bytes(body[4..8].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(body[8..12].try_into().unwrap()), 0x10049);
        let a = attrs(&body[IFINFOMSG_SIZE..]);
        assert_eq!(a[0], (IFLA_IFNAME, b"lo\0".to_vec()));
        assert!(a.contains(&(IFLA_MTU, 65536u32.to_ne_bytes().to_vec())));
        assert!(a.contains(&(IFLA_OPERSTATE, std::vec![0])));
        assert!(a.contains(&(IFLA_ADDRESS, std::vec![0; 6])));
        let (d, dbody) = msgs[1];
        assert_eq!((d.ty, d.len), (NLMSG_DONE, 20));
        assert_eq!(dbody, &[0, 0, 0, 0]);
    }

    #[test]
    fn ipv4_addresses_carry_local_and_label_ipv6_do_not() {
        let mut buf = [0u8; 256];
        let mut w = NlWriter::new(&mut buf);
        let a = AddrInfo {
            family: AF_INET as u8,
            prefixlen: 8,
            scope: RT_SCOPE_HOST,
            flags: IFA_F_PERMANENT,
            index: 1,
            addr: &[127, 0, 0, 1],
            label: "lo",
            proto: 0,
        };
        write_addr(&mut w, &a, NLM_F_MULTI, 1, 2).unwrap();
        let six = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let b = AddrInfo {
            family: 10,
            prefixlen: 128,
            addr: &six,
            proto: IFAPROT_KERNEL_LO,
            ..a
        };
        write_addr(&mut w, &b, NLM_F_MULTI, 1, 2).unwrap();
        let n = w.len();
        let msgs: std::vec::Vec<_> = messages(&buf[..n]).collect();
        let (_, v4) = msgs[0];
        assert_eq!(&v4[..8], &[2, 8, 0x80, 254, 1, 0, 0, 0]);
        let t: std::vec::Vec<u16> = attrs(&v4[8..]).iter().map(|x| x.0).collect();
        assert_eq!(
            t,
            [IFA_ADDRESS, IFA_LOCAL, IFA_LABEL, IFA_CACHEINFO, IFA_FLAGS]
        );
        let (_, v6) = msgs[1];
        let t: std::vec::Vec<u16> = attrs(&v6[8..]).iter().map(|x| x.0).collect();
        assert_eq!(t, [IFA_ADDRESS, IFA_CACHEINFO, IFA_FLAGS, IFA_PROTO]);
    }

    #[test]
    fn errors_echo_the_request_and_acks_only_its_header() {
        let req = NlMsgHdr {
            len: 20,
            ty: RTM_SETLINK,
            flags: NLM_F_REQUEST | NLM_F_ACK,
            seq: 9,
            pid: 0,
        };
        let mut buf = [0u8; 128];
        let mut w = NlWriter::new(&mut buf);
        w.error(&req, &[1, 2, 3, 4], None, 5).unwrap();
        w.error(&req, &[1, 2, 3, 4], Some(Errno::EOPNOTSUPP), 5)
            .unwrap();
        let n = w.len();
        let msgs: std::vec::Vec<_> = messages(&buf[..n]).collect();
        assert_eq!(msgs[0].0.len, 36);
        assert_eq!(&msgs[0].1[..4], &0i32.to_ne_bytes());
        assert_eq!(msgs[1].0.len, 40);
        assert_eq!(&msgs[1].1[..4], &(-95i32).to_ne_bytes());
        assert_eq!(&msgs[1].1[20..], &[1, 2, 3, 4]);
    }

    #[test]
    fn a_full_buffer_stops_the_writer_and_bad_lengths_stop_the_reader() {
        let mut buf = [0u8; 16];
        let mut w = NlWriter::new(&mut buf);
        assert!(w.done(1, 1).is_none());
        let mut bad = [0u8; 20];
        bad[0] = 8;
        assert_eq!(messages(&bad).count(), 0);
        bad[0] = 40;
        assert_eq!(messages(&bad).count(), 0);
        assert_eq!(sockaddr_nl(5, 0)[..8], [16, 0, 0, 0, 5, 0, 0, 0]);
    }
}
