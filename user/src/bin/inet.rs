//! AF_INET and AF_INET6 on the loopback interface, and NETLINK_ROUTE: lo is up (brought up
//! with SIOCSIFFLAGS when the boot left it down, as Linux's initramfs does); TCP echo over
//! 127.0.0.1 and ::1 with names, EOF after shutdown and close; non-blocking connect and
//! accept (EINPROGRESS, EAGAIN, poll, SO_ERROR); ECONNREFUSED blocking and not; UDP with
//! addresses, connected sends and MSG_TRUNC; EADDRINUSE; the families' type and protocol
//! errors; ECONNRESET after the peer's RST (a close with unread data, SO_LINGER {1, 0});
//! IPV6_V6ONLY and the ports it shares; a connected UDP socket's ECONNREFUSED from lo's port
//! unreachable; an RTM_GETLINK dump that finds lo (index 1, UP|LOOPBACK) and an RTM_GETADDR dump
//! with 127.0.0.1; writes after the peer closed (the RST it answers with: EPIPE and SIGPIPE in
//! CLOSE_WAIT, ECONNRESET first when established), a refused connect tried again, and
//! shutdown(SHUT_WR) seen by the peer (end of file, POLLRDHUP).
#![no_std]
#![no_main]

use svelt_abi::uapi::inet::*;
use svelt_abi::uapi::net::*;
use svelt_abi::uapi::netlink::*;
use svelt_abi::uapi::nr;
use svelt_user::ktap::TestResult;
use svelt_user::sys::*;
use svelt_user::*;

fn sc(n: usize, a: &[usize]) -> SysResult {
    sys::syscall(n, a)
}

fn socket(fam: u32, ty: u32) -> SysResult<i32> {
    sc(nr::SOCKET, &[fam as usize, ty as usize, 0]).map(|v| v as i32)
}

fn lo(fam: u32, port: u16) -> InetAddr {
    if fam == AF_INET6 {
        let mut a = [0u8; 16];
        a[15] = 1;
        InetAddr::V6 { addr: a, port }
    } else {
        InetAddr::V4 {
            addr: [127, 0, 0, 1],
            port,
        }
    }
}

fn addr_call(n: usize, fd: i32, a: &InetAddr) -> SysResult {
    let mut b = [0u8; 28];
    let len = a.write(&mut b);
    sc(n, &[fd as usize, b.as_ptr() as usize, len])
}

fn name_of(n: usize, fd: i32) -> SysResult<InetAddr> {
    let mut b = [0u8; 128];
    let mut len = 128i32;
    sc(
        n,
        &[
            fd as usize,
            b.as_mut_ptr() as usize,
            &mut len as *mut i32 as usize,
        ],
    )?;
    let fam = u16::from_ne_bytes([b[0], b[1]]) as u32;
    let want = if fam == AF_INET6 { 28 } else { 16 };
    if len != want {
        return Err(Errno(1000 + len));
    }
    parse_inet_addr(fam, &b[..len as usize]).map_err(|e| Errno(e as i32))
}

fn send(fd: i32, b: &[u8], flags: u32) -> SysResult {
    sc(
        nr::SENDTO,
        &[
            fd as usize,
            b.as_ptr() as usize,
            b.len(),
            flags as usize,
            0,
            0,
        ],
    )
}

fn sendto(fd: i32, b: &[u8], to: &InetAddr) -> SysResult {
    let mut a = [0u8; 28];
    let len = to.write(&mut a);
    sc(
        nr::SENDTO,
        &[
            fd as usize,
            b.as_ptr() as usize,
            b.len(),
            0,
            a.as_ptr() as usize,
            len,
        ],
    )
}

fn recv(fd: i32, b: &mut [u8], flags: u32) -> SysResult {
    sc(
        nr::RECVFROM,
        &[
            fd as usize,
            b.as_mut_ptr() as usize,
            b.len(),
            flags as usize,
            0,
            0,
        ],
    )
}

fn recvfrom(fd: i32, b: &mut [u8], flags: u32) -> SysResult<(usize, InetAddr)> {
    let mut a = [0u8; 128];
    let mut len = 128i32;
    let n = sc(
        nr::RECVFROM,
        &[
            fd as usize,
            b.as_mut_ptr() as usize,
            b.len(),
            flags as usize,
            a.as_mut_ptr() as usize,
            &mut len as *mut i32 as usize,
        ],
    )?;
    let fam = u16::from_ne_bytes([a[0], a[1]]) as u32;
    let from = parse_inet_addr(fam, &a[..len as usize]).map_err(|e| Errno(e as i32))?;
    Ok((n, from))
}

fn accept(fd: i32, flags: u32) -> SysResult<i32> {
    sc(nr::ACCEPT4, &[fd as usize, 0, 0, flags as usize]).map(|v| v as i32)
}

fn sockopt_int(fd: i32, level: u32, name: u32) -> SysResult<i32> {
    let mut v = -1i32;
    let mut len = 4i32;
    sc(
        nr::GETSOCKOPT,
        &[
            fd as usize,
            level as usize,
            name as usize,
            &mut v as *mut i32 as usize,
            &mut len as *mut i32 as usize,
        ],
    )?;
    Ok(v)
}

fn set_int(fd: i32, level: u32, name: u32, v: i32) -> SysResult {
    sc(
        nr::SETSOCKOPT,
        &[
            fd as usize,
            level as usize,
            name as usize,
            &v as *const i32 as usize,
            4,
        ],
    )
}

fn poll1(fd: i32, events: i16, ms: u64) -> SysResult<i16> {
    let mut p = [Pollfd {
        fd,
        events,
        revents: 0,
    }];
    let t = Timespec::from_ns(ms * 1_000_000);
    ppoll(&mut p, Some(&t))?;
    Ok(p[0].revents)
}

const POLLIN: i16 = 1;
const POLLOUT: i16 = 4;
const POLLERR: i16 = 8;
const SIOCGIFFLAGS: usize = 0x8913;
const SIOCSIFFLAGS: usize = 0x8914;

/// lo's flags by SIOCGIFFLAGS.
fn lo_flags(fd: i32) -> SysResult<u32> {
    let mut ifr = [0u8; 40];
    ifr[..2].copy_from_slice(b"lo");
    ioctl(fd, SIOCGIFFLAGS, ifr.as_mut_ptr() as usize)?;
    Ok(u16::from_ne_bytes([ifr[16], ifr[17]]) as u32)
}

fn lo_is_up() -> TestResult {
    let fd = t!(socket(AF_INET, SOCK_DGRAM));
    let f = t!(lo_flags(fd));
    check!(f & IFF_LOOPBACK != 0);
    if f & IFF_UP == 0 {
        // Linux boots lo down (userland brings it up): do what ifup would.
        let mut ifr = [0u8; 40];
        ifr[..2].copy_from_slice(b"lo");
        ifr[16..18].copy_from_slice(&((f | IFF_UP) as u16).to_ne_bytes());
        t!(ioctl(fd, SIOCSIFFLAGS, ifr.as_mut_ptr() as usize));
    }
    let f = t!(lo_flags(fd));
    check_eq!(
        f & (IFF_UP | IFF_LOOPBACK | IFF_RUNNING),
        IFF_UP | IFF_LOOPBACK | IFF_RUNNING
    );
    // SIOCGIFINDEX and SIOCGIFMTU: lo is index 1 with a 64 KiB MTU.
    for (req, want) in [(0x8933usize, 1u32), (0x8921, 65536)] {
        let mut ifr = [0u8; 40];
        ifr[..2].copy_from_slice(b"lo");
        t!(ioctl(fd, req, ifr.as_mut_ptr() as usize));
        check_eq!(u32::from_ne_bytes(ifr[16..20].try_into().unwrap()), want);
    }
    let mut ifr = [0u8; 40];
    ifr[..4].copy_from_slice(b"nope");
    check_eq!(
        ioctl(fd, SIOCGIFFLAGS, ifr.as_mut_ptr() as usize),
        Err(ENODEV)
    );
    t!(close(fd));
    Ok(())
}

/// A listener on lo's address of `fam` at an ephemeral port, and that address.
fn listener(fam: u32, flags: u32) -> SysResult<(i32, InetAddr)> {
    let l = socket(fam, SOCK_STREAM | flags)?;
    addr_call(nr::BIND, l, &lo(fam, 0))?;
    sc(nr::LISTEN, &[l as usize, 8])?;
    let a = name_of(nr::GETSOCKNAME, l)?;
    Ok((l, a))
}

fn tcp_echo(fam: u32) -> TestResult {
    let (l, la) = t!(listener(fam, 0));
    check!(la.port() != 0);
    check_eq!(la.with_port(0), lo(fam, 0));
    check_eq!(sockopt_int(l, SOL_SOCKET, SO_ACCEPTCONN), Ok(1));
    let c = t!(socket(fam, SOCK_STREAM));
    t!(set_int(c, IPPROTO_TCP, TCP_NODELAY, 1));
    check_eq!(sockopt_int(c, IPPROTO_TCP, TCP_NODELAY), Ok(1));
    check_eq!(name_of(nr::GETPEERNAME, c), Err(ENOTCONN));
    t!(addr_call(nr::CONNECT, c, &la));
    check_eq!(addr_call(nr::CONNECT, c, &la), Err(EISCONN));
    let s = t!(accept(l, 0));
    let cname = t!(name_of(nr::GETSOCKNAME, c));
    check!(cname.port() >= EPHEMERAL_LOW && cname.port() <= EPHEMERAL_HIGH);
    check_eq!(t!(name_of(nr::GETPEERNAME, c)), la);
    check_eq!(t!(name_of(nr::GETPEERNAME, s)), cname);
    check_eq!(t!(name_of(nr::GETSOCKNAME, s)), la);
    check_eq!(sockopt_int(s, SOL_SOCKET, SO_DOMAIN), Ok(fam as i32));
    check_eq!(
        sockopt_int(s, SOL_SOCKET, SO_PROTOCOL),
        Ok(IPPROTO_TCP as i32)
    );

    // Echo: the server sends back what it got.
    check_eq!(send(c, b"hello, lo", 0), Ok(9));
    let mut buf = [0u8; 64];
    let n = t!(recv(s, &mut buf, 0));
    check_eq!(&buf[..n], b"hello, lo");
    check_eq!(write(s, &buf[..n]), Ok(9));
    let mut back = [0u8; 64];
    check_eq!(read(c, &mut back), Ok(9));
    check_eq!(&back[..9], b"hello, lo");

    // A bigger transfer than one window, in both halves of a fork-free loop.
    let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut got = Vec::new();
    let mut off = 0;
    while got.len() < big.len() {
        if off < big.len() {
            let n = t!(
                send(c, &big[off..], MSG_DONTWAIT).or_else(|e| if e == EAGAIN {
                    Ok(0)
                } else {
                    Err(e)
                })
            );
            off += n;
        }
        let mut chunk = [0u8; 8192];
        match recv(s, &mut chunk, MSG_DONTWAIT) {
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e == EAGAIN => {}
            Err(e) => return Err(format!("recv: {e:?}")),
        }
    }
    check!(got == big);

    // End of file after shutdown, then after close.
    t!(sc(nr::SHUTDOWN, &[c as usize, SHUT_WR as usize]));
    check_eq!(recv(s, &mut buf, 0), Ok(0));
    check_eq!(send(c, b"x", MSG_NOSIGNAL), Err(EPIPE));
    check_eq!(send(s, b"bye", 0), Ok(3));
    check_eq!(recv(c, &mut buf, 0), Ok(3));
    t!(close(s));
    check_eq!(recv(c, &mut buf, 0), Ok(0));
    t!(close(c));
    t!(close(l));
    Ok(())
}

fn tcp_echo_ipv4() -> TestResult {
    tcp_echo(AF_INET)
}

fn tcp_echo_ipv6() -> TestResult {
    tcp_echo(AF_INET6)
}

/// Another process connects and sends later, in two pieces: accept and recv (MSG_WAITALL)
/// sleep until then.
fn blocking_accept_and_recv_across_processes() -> TestResult {
    let (l, la) = t!(listener(AF_INET6, 0));
    let pid = t!(fork());
    if pid == 0 {
        sleep_ns(30_000_000);
        let ok = (|| -> SysResult<bool> {
            let c = socket(AF_INET6, SOCK_STREAM)?;
            addr_call(nr::CONNECT, c, &la)?;
            sleep_ns(30_000_000);
            send(c, b"la", 0)?;
            sleep_ns(20_000_000);
            send(c, b"te", 0)?;
            let mut b = [0u8; 8];
            let n = recv(c, &mut b, 0)?;
            Ok(&b[..n] == b"reply")
        })();
        exit(if ok == Ok(true) { 0 } else { 1 });
    }
    let s = t!(accept(l, 0));
    let mut buf = [0u8; 8];
    // MSG_WAITALL waits for both pieces.
    check_eq!(recv(s, &mut buf[..4], MSG_WAITALL), Ok(4));
    check_eq!(&buf[..4], b"late");
    check_eq!(send(s, b"reply", 0), Ok(5));
    let (_, status) = t!(waitpid(pid, 0));
    check_eq!(status, 0);
    t!(close(s));
    t!(close(l));
    Ok(())
}

fn nonblocking_connect_and_accept() -> TestResult {
    let (l, la) = t!(listener(AF_INET, SOCK_NONBLOCK));
    check_eq!(accept(l, 0), Err(EAGAIN));
    check_eq!(t!(poll1(l, POLLIN, 0)), 0);
    let c = t!(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK));
    match addr_call(nr::CONNECT, c, &la) {
        Err(e) if e == EINPROGRESS => {}
        Ok(_) => {}
        Err(e) => return Err(format!("connect: {e:?}")),
    }
    check_eq!(t!(poll1(c, POLLOUT, 2000)) & (POLLOUT | POLLERR), POLLOUT);
    check_eq!(sockopt_int(c, SOL_SOCKET, SO_ERROR), Ok(0));
    check_eq!(t!(poll1(l, POLLIN, 2000)) & POLLIN, POLLIN);
    let s = t!(accept(l, SOCK_NONBLOCK | SOCK_CLOEXEC));
    let mut buf = [0u8; 8];
    check_eq!(recv(s, &mut buf, 0), Err(EAGAIN));
    check_eq!(t!(poll1(s, POLLIN | POLLOUT, 0)), POLLOUT);
    check_eq!(send(c, b"ping", 0), Ok(4));
    check_eq!(t!(poll1(s, POLLIN, 2000)) & POLLIN, POLLIN);
    check_eq!(recv(s, &mut buf, 0), Ok(4));
    check_eq!(accept(l, 0), Err(EAGAIN));
    t!(close(s));
    t!(close(c));
    t!(close(l));
    Ok(())
}

fn connection_refused() -> TestResult {
    // A port that is bound but not listened on refuses (RST) connections.
    let b = t!(socket(AF_INET, SOCK_STREAM));
    t!(addr_call(nr::BIND, b, &lo(AF_INET, 0)));
    let ba = t!(name_of(nr::GETSOCKNAME, b));
    let c = t!(socket(AF_INET, SOCK_STREAM));
    check_eq!(addr_call(nr::CONNECT, c, &ba), Err(ECONNREFUSED));
    t!(close(c));
    let c = t!(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK));
    match addr_call(nr::CONNECT, c, &ba) {
        Err(e) if e == EINPROGRESS => {
            check_eq!(t!(poll1(c, POLLOUT, 2000)) & POLLERR, POLLERR);
            check_eq!(sockopt_int(c, SOL_SOCKET, SO_ERROR), Ok(ECONNREFUSED.0));
        }
        Err(e) if e == ECONNREFUSED => {}
        r => return Err(format!("non-blocking connect: {r:?}")),
    }
    t!(close(c));
    let c = t!(socket(AF_INET6, SOCK_STREAM));
    check_eq!(
        addr_call(nr::CONNECT, c, &lo(AF_INET6, ba.port())),
        Err(ECONNREFUSED)
    );
    t!(close(c));
    t!(close(b));
    Ok(())
}

fn udp(fam: u32) -> TestResult {
    let a = t!(socket(fam, SOCK_DGRAM));
    let b = t!(socket(fam, SOCK_DGRAM));
    t!(addr_call(nr::BIND, b, &lo(fam, 0)));
    let bn = t!(name_of(nr::GETSOCKNAME, b));
    check!(bn.port() != 0);
    check_eq!(send(a, b"x", 0), Err(EDESTADDRREQ));
    check_eq!(sendto(a, b"first", &bn), Ok(5));
    // The send bound `a` to an ephemeral port.
    let an = t!(name_of(nr::GETSOCKNAME, a));
    check!(an.port() >= EPHEMERAL_LOW && an.port() <= EPHEMERAL_HIGH);
    let mut buf = [0u8; 64];
    let (n, from) = t!(recvfrom(b, &mut buf, 0));
    check_eq!(&buf[..n], b"first");
    check_eq!(from, lo(fam, an.port()));
    // Boundaries are kept; a short buffer truncates (MSG_TRUNC: the whole length).
    check_eq!(sendto(a, b"0123456789", &bn), Ok(10));
    check_eq!(sendto(a, b"ab", &bn), Ok(2));
    let mut small = [0u8; 4];
    check_eq!(recv(b, &mut small, MSG_TRUNC), Ok(10));
    check_eq!(&small, b"0123");
    check_eq!(recv(b, &mut buf, 0), Ok(2));
    check_eq!(recv(b, &mut buf, MSG_DONTWAIT), Err(EAGAIN));
    check_eq!(t!(poll1(b, POLLIN | POLLOUT, 0)), POLLOUT);
    // Connected both ways: send and recv without addresses, and getpeername.
    t!(addr_call(nr::CONNECT, a, &bn));
    t!(addr_call(nr::CONNECT, b, &lo(fam, an.port())));
    check_eq!(t!(name_of(nr::GETPEERNAME, a)), bn);
    check_eq!(write(a, b"conn"), Ok(4));
    check_eq!(t!(poll1(b, POLLIN, 1000)) & POLLIN, POLLIN);
    check_eq!(read(b, &mut buf), Ok(4));
    check_eq!(send(b, b"back", 0), Ok(4));
    check_eq!(recv(a, &mut buf, 0), Ok(4));
    check_eq!(&buf[..4], b"back");
    t!(close(a));
    t!(close(b));
    Ok(())
}

fn udp_ipv4() -> TestResult {
    udp(AF_INET)
}

fn udp_ipv6() -> TestResult {
    udp(AF_INET6)
}

fn addresses_in_use_and_errors() -> TestResult {
    let (l, la) = t!(listener(AF_INET, 0));
    let x = t!(socket(AF_INET, SOCK_STREAM));
    check_eq!(addr_call(nr::BIND, x, &la), Err(EADDRINUSE));
    // SO_REUSEADDR does not share a port with a listener.
    t!(set_int(x, SOL_SOCKET, SO_REUSEADDR, 1));
    check_eq!(sockopt_int(x, SOL_SOCKET, SO_REUSEADDR), Ok(1));
    check_eq!(addr_call(nr::BIND, x, &la), Err(EADDRINUSE));
    // The wildcard covers 127.0.0.1.
    check_eq!(
        addr_call(nr::BIND, x, &InetAddr::any(AF_INET).with_port(la.port())),
        Err(EADDRINUSE)
    );
    // An unbound socket's name is the wildcard, port 0.
    check_eq!(t!(name_of(nr::GETSOCKNAME, x)), InetAddr::any(AF_INET));
    // Not this host's address; a short address; another family's.
    check_eq!(
        addr_call(
            nr::BIND,
            x,
            &InetAddr::V4 {
                addr: [10, 1, 2, 3],
                port: 0
            }
        ),
        Err(EADDRNOTAVAIL)
    );
    let b = [2u8, 0, 0, 0, 127, 0, 0, 1];
    check_eq!(
        sc(nr::BIND, &[x as usize, b.as_ptr() as usize, 8]),
        Err(EINVAL)
    );
    check_eq!(addr_call(nr::BIND, x, &lo(AF_INET6, 0)), Err(EAFNOSUPPORT));
    t!(close(x));
    let u1 = t!(socket(AF_INET, SOCK_DGRAM));
    let u2 = t!(socket(AF_INET, SOCK_DGRAM));
    t!(addr_call(nr::BIND, u1, &lo(AF_INET, 0)));
    let un = t!(name_of(nr::GETSOCKNAME, u1));
    check_eq!(addr_call(nr::BIND, u2, &un), Err(EADDRINUSE));
    check_eq!(addr_call(nr::BIND, u1, &lo(AF_INET, 0)), Err(EINVAL));
    t!(close(u1));
    // Freed by the close.
    t!(addr_call(nr::BIND, u2, &un));
    t!(close(u2));
    t!(close(l));
    check_eq!(
        sc(
            nr::SOCKET,
            &[AF_INET as usize, SOCK_STREAM as usize, IPPROTO_UDP as usize]
        ),
        Err(EPROTONOSUPPORT)
    );
    check_eq!(
        sc(
            nr::SOCKET,
            &[AF_INET6 as usize, SOCK_DGRAM as usize, IPPROTO_TCP as usize]
        ),
        Err(EPROTONOSUPPORT)
    );
    Ok(())
}

/// A connected TCP pair on lo of `fam`: (client, server side).
fn tcp_pair(fam: u32) -> SysResult<(i32, i32)> {
    let (l, la) = listener(fam, 0)?;
    let c = socket(fam, SOCK_STREAM)?;
    addr_call(nr::CONNECT, c, &la)?;
    let s = accept(l, 0)?;
    close(l)?;
    Ok((c, s))
}

fn set_linger(fd: i32, on: i32, secs: i32) -> SysResult {
    let v = [on, secs];
    sc(
        nr::SETSOCKOPT,
        &[
            fd as usize,
            SOL_SOCKET as usize,
            SO_LINGER as usize,
            v.as_ptr() as usize,
            8,
        ],
    )
}

fn linger(fd: i32) -> SysResult<([i32; 2], i32)> {
    let mut v = [-1i32; 2];
    let mut len = 8i32;
    sc(
        nr::GETSOCKOPT,
        &[
            fd as usize,
            SOL_SOCKET as usize,
            SO_LINGER as usize,
            v.as_mut_ptr() as usize,
            &mut len as *mut i32 as usize,
        ],
    )?;
    Ok((v, len))
}

/// After the peer's RST: the first read fails ECONNRESET, the next says end of file, a send
/// EPIPE (tcp_reset, then SEND_SHUTDOWN).
fn check_reset(c: i32) -> TestResult {
    let mut buf = [0u8; 16];
    check_eq!(
        t!(poll1(c, POLLIN, 1000)) & (POLLIN | POLLERR),
        POLLIN | POLLERR
    );
    check_eq!(recv(c, &mut buf, 0), Err(ECONNRESET));
    check_eq!(recv(c, &mut buf, 0), Ok(0));
    check_eq!(send(c, b"x", MSG_NOSIGNAL), Err(EPIPE));
    check_eq!(sockopt_int(c, SOL_SOCKET, SO_ERROR), Ok(0));
    Ok(())
}

fn reset_by_close_with_unread_data() -> TestResult {
    let (c, s) = t!(tcp_pair(AF_INET));
    check_eq!(send(c, b"unread", 0), Ok(6));
    // Let it arrive before the close.
    check_eq!(t!(poll1(s, POLLIN, 1000)) & POLLIN, POLLIN);
    t!(close(s));
    check_reset(c)?;
    t!(close(c));
    Ok(())
}

fn reset_by_so_linger_zero() -> TestResult {
    let (c, s) = t!(tcp_pair(AF_INET6));
    check_eq!(linger(s), Ok(([0, 0], 8)));
    t!(set_linger(s, 1, 0));
    check_eq!(linger(s), Ok(([1, 0], 8)));
    t!(set_linger(s, 5, 7));
    check_eq!(linger(s), Ok(([1, 7], 8)));
    // l_onoff 0 keeps the time.
    t!(set_linger(s, 0, 3));
    check_eq!(linger(s), Ok(([0, 7], 8)));
    check_eq!(
        sc(
            nr::SETSOCKOPT,
            &[
                s as usize,
                SOL_SOCKET as usize,
                SO_LINGER as usize,
                [1i32, 0].as_ptr() as usize,
                4
            ]
        ),
        Err(EINVAL)
    );
    t!(set_linger(s, 1, 0));
    t!(close(s));
    check_reset(c)?;
    t!(close(c));
    Ok(())
}

fn ipv6_v6only() -> TestResult {
    let s6 = t!(socket(AF_INET6, SOCK_STREAM));
    check_eq!(sockopt_int(s6, IPPROTO_IPV6, IPV6_V6ONLY), Ok(0));
    t!(addr_call(nr::BIND, s6, &InetAddr::any(AF_INET6)));
    let p = t!(name_of(nr::GETSOCKNAME, s6)).port();
    // Too late once bound.
    check_eq!(set_int(s6, IPPROTO_IPV6, IPV6_V6ONLY, 1), Err(EINVAL));
    let s4 = t!(socket(AF_INET, SOCK_STREAM));
    check_eq!(
        addr_call(nr::BIND, s4, &InetAddr::any(AF_INET).with_port(p)),
        Err(EADDRINUSE)
    );
    t!(close(s6));
    // V6ONLY: [::]:P leaves 0.0.0.0:P free, and the other way round.
    let s6 = t!(socket(AF_INET6, SOCK_STREAM));
    t!(set_int(s6, IPPROTO_IPV6, IPV6_V6ONLY, 1));
    check_eq!(sockopt_int(s6, IPPROTO_IPV6, IPV6_V6ONLY), Ok(1));
    t!(addr_call(
        nr::BIND,
        s6,
        &InetAddr::any(AF_INET6).with_port(p)
    ));
    t!(addr_call(
        nr::BIND,
        s4,
        &InetAddr::any(AF_INET).with_port(p)
    ));
    // Each listens, and each family's connection reaches its own.
    t!(sc(nr::LISTEN, &[s6 as usize, 4]));
    t!(sc(nr::LISTEN, &[s4 as usize, 4]));
    for (fam, l) in [(AF_INET, s4), (AF_INET6, s6)] {
        let c = t!(socket(fam, SOCK_STREAM));
        t!(addr_call(nr::CONNECT, c, &lo(fam, p)));
        let a = t!(accept(l, SOCK_NONBLOCK));
        t!(close(a));
        t!(close(c));
    }
    t!(close(s4));
    t!(close(s6));
    let u = t!(socket(AF_INET, SOCK_DGRAM));
    check_eq!(set_int(u, IPPROTO_IPV6, IPV6_V6ONLY, 1), Err(ENOPROTOOPT));
    t!(close(u));
    Ok(())
}

fn udp_connection_refused() -> TestResult {
    // A port nobody holds: bind one, note it, free it.
    let x = t!(socket(AF_INET, SOCK_DGRAM));
    t!(addr_call(nr::BIND, x, &lo(AF_INET, 0)));
    let dead = t!(name_of(nr::GETSOCKNAME, x));
    t!(close(x));
    let u = t!(socket(AF_INET, SOCK_DGRAM));
    t!(addr_call(nr::CONNECT, u, &dead));
    check_eq!(send(u, b"anyone?", 0), Ok(7));
    // The port unreachable comes back as the socket's error: poll, then the next receive.
    check_eq!(t!(poll1(u, POLLIN, 1000)) & POLLERR, POLLERR);
    let mut buf = [0u8; 16];
    check_eq!(recv(u, &mut buf, 0), Err(ECONNREFUSED));
    check_eq!(recv(u, &mut buf, MSG_DONTWAIT), Err(EAGAIN));
    // Again: the next send reports it.
    check_eq!(send(u, b"again", 0), Ok(5));
    check_eq!(send(u, b"again", 0), Err(ECONNREFUSED));
    check_eq!(sockopt_int(u, SOL_SOCKET, SO_ERROR), Ok(0));
    t!(close(u));
    Ok(())
}

/// Sends a dump request of `ty` and collects every message up to NLMSG_DONE, as
/// (type, flags, seq, body).
/// A reply message: type, flags, sequence number, body.
type NlMsg = (u16, u16, u32, Vec<u8>);

fn dump(fd: i32, ty: u16, seq: u32, family: u8) -> SysResult<Vec<NlMsg>> {
    let mut req = [0u8; 32];
    let h = NlMsgHdr {
        len: 32,
        ty,
        flags: NLM_F_REQUEST | NLM_F_DUMP,
        seq,
        pid: 0,
    };
    req[..16].copy_from_slice(&h.bytes());
    req[16] = family;
    check_send(fd, &req)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 32768];
    loop {
        let n = recv(fd, &mut buf, 0)?;
        for (h, body) in messages(&buf[..n]) {
            if h.ty == NLMSG_DONE {
                return Ok(out);
            }
            out.push((h.ty, h.flags, h.seq, body.to_vec()));
        }
        if n == 0 {
            return Err(EIO);
        }
    }
}

fn check_send(fd: i32, req: &[u8]) -> SysResult<()> {
    let to = sockaddr_nl(0, 0);
    sc(
        nr::SENDTO,
        &[
            fd as usize,
            req.as_ptr() as usize,
            req.len(),
            0,
            to.as_ptr() as usize,
            12,
        ],
    )?;
    Ok(())
}

fn attr(mut b: &[u8], want: u16) -> Option<&[u8]> {
    while b.len() >= 4 {
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let ty = u16::from_ne_bytes([b[2], b[3]]);
        if len < 4 || len > b.len() {
            return None;
        }
        if ty & 0x3fff == want {
            return Some(&b[4..len]);
        }
        b = &b[nl_align(len).min(b.len())..];
    }
    None
}

fn netlink_route_dumps() -> TestResult {
    let fd = t!(sc(
        nr::SOCKET,
        &[
            AF_NETLINK as usize,
            SOCK_RAW as usize,
            NETLINK_ROUTE as usize
        ]
    )) as i32;
    let a = sockaddr_nl(0, 0);
    t!(sc(nr::BIND, &[fd as usize, a.as_ptr() as usize, 12]));
    let mut n = [0u8; 16];
    let mut len = 16i32;
    t!(sc(
        nr::GETSOCKNAME,
        &[
            fd as usize,
            n.as_mut_ptr() as usize,
            &mut len as *mut i32 as usize
        ]
    ));
    check_eq!(len, 12);
    check_eq!(u16::from_ne_bytes([n[0], n[1]]) as u32, AF_NETLINK);
    let pid = u32::from_ne_bytes(n[4..8].try_into().unwrap());
    check!(pid != 0);

    let links = t!(dump(fd, RTM_GETLINK, 41, 0));
    let mut found = false;
    for (ty, flags, seq, body) in &links {
        check_eq!((*ty, *seq), (RTM_NEWLINK, 41));
        check!(flags & NLM_F_MULTI != 0);
        let index = i32::from_ne_bytes(body[4..8].try_into().unwrap());
        let f = u32::from_ne_bytes(body[8..12].try_into().unwrap());
        if attr(&body[IFINFOMSG_SIZE..], IFLA_IFNAME) == Some(b"lo\0") {
            check_eq!(index, 1);
            check_eq!(f & (IFF_UP | IFF_LOOPBACK), IFF_UP | IFF_LOOPBACK);
            check_eq!(u16::from_ne_bytes([body[2], body[3]]), ARPHRD_LOOPBACK);
            let mtu = attr(&body[IFINFOMSG_SIZE..], IFLA_MTU)
                .map(|m| u32::from_ne_bytes(m.try_into().unwrap()));
            check_eq!(mtu, Some(65536));
            found = true;
        }
    }
    check!(found);

    let addrs = t!(dump(fd, RTM_GETADDR, 42, AF_INET as u8));
    let mut found = false;
    for (ty, _, _, body) in &addrs {
        check_eq!(*ty, RTM_NEWADDR);
        check_eq!(body[0] as u32, AF_INET);
        if attr(&body[IFADDRMSG_SIZE..], IFA_LOCAL) == Some(&[127, 0, 0, 1][..]) {
            check_eq!(body[1], 8);
            check_eq!(u32::from_ne_bytes(body[4..8].try_into().unwrap()), 1);
            check_eq!(attr(&body[IFADDRMSG_SIZE..], IFA_LABEL), Some(&b"lo\0"[..]));
            found = true;
        }
    }
    check!(found);
    t!(close(fd));
    check_eq!(
        sc(nr::SOCKET, &[AF_NETLINK as usize, SOCK_STREAM as usize, 0]),
        Err(ESOCKTNOSUPPORT)
    );
    Ok(())
}

/// SIGPIPE blocked, whether one is pending now (taken off if so).
fn sigpipe_taken() -> bool {
    const BIT: u64 = 1 << (svelt_user::sig::SIGPIPE - 1);
    let pending = svelt_user::sig::sigpending().unwrap_or(0) & BIT != 0;
    if pending {
        // Ignoring a pending signal discards it.
        let old = svelt_user::sig::set_disposition(svelt_user::sig::SIGPIPE, 1);
        if let Ok(o) = old {
            let _ = svelt_user::sig::sigaction_raw(svelt_user::sig::SIGPIPE, Some(&o));
        }
    }
    pending
}

fn with_sigpipe_blocked(f: impl FnOnce() -> TestResult) -> TestResult {
    const BIT: u64 = 1 << (svelt_user::sig::SIGPIPE - 1);
    let old = t!(svelt_user::sig::sigprocmask(0, Some(BIT)));
    let r = f();
    let _ = sigpipe_taken();
    t!(svelt_user::sig::sigprocmask(2, Some(old)));
    r
}

fn settle() {
    sys::sleep_ns(100_000_000);
}

const POLLRDHUP: i16 = 0x2000;

/// A connection's events of interest to these cases, now.
fn events(fd: i32) -> SysResult<i16> {
    poll1(fd, POLLIN | POLLOUT | POLLRDHUP, 0)
}

/// The peer closed (FIN) with nothing unread: a first write still goes out; the peer, gone,
/// answers it with RST, which in CLOSE_WAIT is EPIPE (tcp_reset): the next write fails EPIPE
/// with SIGPIPE, and so does every one after; reads say end of file first (the FIN came), and
/// SO_ERROR shows the EPIPE once if asked before a write. An RST while established is
/// ECONNRESET for the first write (no SIGPIPE), then EPIPE with SIGPIPE.
fn write_after_peer_close() -> TestResult {
    with_sigpipe_blocked(|| {
        let all = POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDHUP;
        let mut buf = [0u8; 8];
        let (c, s) = t!(tcp_pair(AF_INET));
        t!(close(s));
        settle();
        check_eq!(t!(events(c)), POLLIN | POLLOUT | POLLRDHUP);
        check_eq!(send(c, b"x", 0), Ok(1));
        check!(!sigpipe_taken());
        settle();
        check_eq!(t!(events(c)), all);
        for _ in 0..2 {
            check_eq!(send(c, b"y", 0), Err(EPIPE));
            check!(sigpipe_taken());
        }
        check_eq!(recv(c, &mut buf, 0), Ok(0));
        check_eq!(sockopt_int(c, SOL_SOCKET, SO_ERROR), Ok(0));
        t!(close(c));

        let (c, s) = t!(tcp_pair(AF_INET));
        t!(close(s));
        settle();
        check_eq!(send(c, b"x", 0), Ok(1));
        settle();
        check_eq!(sockopt_int(c, SOL_SOCKET, SO_ERROR), Ok(EPIPE.0));
        check_eq!(sockopt_int(c, SOL_SOCKET, SO_ERROR), Ok(0));
        check_eq!(recv(c, &mut buf, 0), Ok(0));
        check_eq!(send(c, b"y", 0), Err(EPIPE));
        check!(sigpipe_taken());
        t!(close(c));

        let (c, s) = t!(tcp_pair(AF_INET6));
        t!(close(s));
        settle();
        check_eq!(send(c, b"x", 0), Ok(1));
        settle();
        check_eq!(recv(c, &mut buf, 0), Ok(0));
        check_eq!(recv(c, &mut buf, 0), Ok(0));
        check_eq!(send(c, b"y", 0), Err(EPIPE));
        check!(sigpipe_taken());
        t!(close(c));

        let (c, s) = t!(tcp_pair(AF_INET));
        check_eq!(send(c, b"unread", 0), Ok(6));
        check_eq!(t!(poll1(s, POLLIN, 1000)) & POLLIN, POLLIN);
        t!(close(s));
        settle();
        check_eq!(t!(events(c)), all);
        check_eq!(send(c, b"x", 0), Err(ECONNRESET));
        check!(!sigpipe_taken());
        check_eq!(send(c, b"y", 0), Err(EPIPE));
        check!(sigpipe_taken());
        check_eq!(recv(c, &mut buf, 0), Ok(0));
        t!(close(c));
        Ok(())
    })
}

/// A connect to a port nobody has is refused, and the socket may try again (refused again).
fn connect_closed_port() -> TestResult {
    let b = t!(socket(AF_INET, SOCK_STREAM));
    t!(addr_call(nr::BIND, b, &lo(AF_INET, 0)));
    let ba = t!(name_of(nr::GETSOCKNAME, b));
    t!(close(b));
    let c = t!(socket(AF_INET, SOCK_STREAM));
    check_eq!(addr_call(nr::CONNECT, c, &ba), Err(ECONNREFUSED));
    check_eq!(sockopt_int(c, SOL_SOCKET, SO_ERROR), Ok(0));
    // A second try is refused again.
    check_eq!(addr_call(nr::CONNECT, c, &ba), Err(ECONNREFUSED));
    t!(close(c));
    Ok(())
}

/// shutdown(SHUT_WR): the peer reads what was sent, then end of file (POLLRDHUP), and may
/// still send back; a write after it is EPIPE with SIGPIPE, and the socket polls writable.
fn shutdown_write_then_eof() -> TestResult {
    with_sigpipe_blocked(|| {
        let (c, s) = t!(tcp_pair(AF_INET6));
        check_eq!(send(c, b"last", 0), Ok(4));
        t!(sc(nr::SHUTDOWN, &[c as usize, SHUT_WR as usize]));
        check_eq!(t!(poll1(s, POLLIN | POLLRDHUP, 1000)), POLLIN | POLLRDHUP);
        let mut buf = [0u8; 16];
        check_eq!(recv(s, &mut buf, 0), Ok(4));
        check_eq!(recv(s, &mut buf, 0), Ok(0));
        check_eq!(recv(s, &mut buf, 0), Ok(0));
        check_eq!(send(c, b"x", 0), Err(EPIPE));
        check!(sigpipe_taken());
        check_eq!(t!(events(c)), POLLOUT);
        check_eq!(send(s, b"reply", 0), Ok(5));
        check_eq!(t!(poll1(c, POLLIN, 1000)) & POLLIN, POLLIN);
        check_eq!(recv(c, &mut buf, 0), Ok(5));
        t!(close(s));
        check_eq!(recv(c, &mut buf, 0), Ok(0));
        check_eq!(t!(events(c)), POLLIN | POLLOUT | POLLHUP | POLLRDHUP);
        t!(close(c));
        Ok(())
    })
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("lo_is_up", lo_is_up),
        ("tcp_echo_ipv4", tcp_echo_ipv4),
        ("tcp_echo_ipv6", tcp_echo_ipv6),
        (
            "blocking_accept_and_recv_across_processes",
            blocking_accept_and_recv_across_processes,
        ),
        (
            "nonblocking_connect_and_accept",
            nonblocking_connect_and_accept,
        ),
        ("connection_refused", connection_refused),
        ("udp_ipv4", udp_ipv4),
        ("udp_ipv6", udp_ipv6),
        ("addresses_in_use_and_errors", addresses_in_use_and_errors),
        (
            "reset_by_close_with_unread_data",
            reset_by_close_with_unread_data,
        ),
        ("reset_by_so_linger_zero", reset_by_so_linger_zero),
        ("ipv6_v6only", ipv6_v6only),
        ("udp_connection_refused", udp_connection_refused),
        ("netlink_route_dumps", netlink_route_dumps),
        ("write_after_peer_close", write_after_peer_close),
        ("connect_closed_port", connect_closed_port),
        ("shutdown_write_then_eof", shutdown_write_then_eof),
    ])
}

entry!(main);
