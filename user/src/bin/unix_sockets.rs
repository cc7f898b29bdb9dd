//! AF_UNIX sockets: socketpair of each type, read/write/send/recv and their msg forms (iovecs,
//! MSG_PEEK, MSG_DONTWAIT, MSG_TRUNC), EOF and EPIPE/SIGPIPE after close, shutdown, poll
//! readiness, the socket options and names, fstat and /proc/PID/fd; bind (paths and the
//! abstract namespace), listen, connect, accept4; SCM_RIGHTS and SCM_CREDENTIALS; other
//! families' EAFNOSUPPORT.
#![no_std]
#![no_main]

use svelt_abi::uapi::net::*;
use svelt_abi::uapi::nr;
use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

fn sc(n: usize, a: &[usize]) -> SysResult {
    sys::syscall(n, a)
}

fn pair(ty: u32) -> SysResult<[i32; 2]> {
    let mut sv = [-1i32; 2];
    sc(
        nr::SOCKETPAIR,
        &[AF_UNIX as usize, ty as usize, 0, sv.as_mut_ptr() as usize],
    )?;
    Ok(sv)
}

fn socket(ty: u32) -> SysResult<i32> {
    sc(nr::SOCKET, &[AF_UNIX as usize, ty as usize, 0]).map(|v| v as i32)
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

fn sun(path: &[u8]) -> ([u8; 110], u32) {
    let mut a = [0u8; 110];
    a[..2].copy_from_slice(&(AF_UNIX as u16).to_ne_bytes());
    a[2..2 + path.len()].copy_from_slice(path);
    (a, 2 + path.len() as u32)
}

fn addr_call(n: usize, fd: i32, path: &[u8]) -> SysResult {
    let (a, len) = sun(path);
    sc(n, &[fd as usize, a.as_ptr() as usize, len as usize])
}

fn name_of(n: usize, fd: i32) -> SysResult<([u8; 110], usize)> {
    let mut a = [0u8; 110];
    let mut len = 110i32;
    sc(
        n,
        &[
            fd as usize,
            a.as_mut_ptr() as usize,
            &mut len as *mut i32 as usize,
        ],
    )?;
    Ok((a, len as usize))
}

fn getsockopt_int(fd: i32, name: u32) -> SysResult<i32> {
    let mut v = 0i32;
    let mut len = 4i32;
    sc(
        nr::GETSOCKOPT,
        &[
            fd as usize,
            SOL_SOCKET as usize,
            name as usize,
            &mut v as *mut i32 as usize,
            &mut len as *mut i32 as usize,
        ],
    )?;
    Ok(v)
}

fn setsockopt_int(fd: i32, name: u32, v: i32) -> SysResult {
    sc(
        nr::SETSOCKOPT,
        &[
            fd as usize,
            SOL_SOCKET as usize,
            name as usize,
            &v as *const i32 as usize,
            4,
        ],
    )
}

fn poll1(fd: i32, events: i16) -> i16 {
    let mut p = [Pollfd {
        fd,
        events,
        revents: 0,
    }];
    let zero = Timespec::from_ns(0);
    let _ = sys::ppoll(&mut p, Some(&zero));
    p[0].revents
}

fn stream_pair_basics() -> TestResult {
    let [a, b] = t!(pair(SOCK_STREAM));
    check_eq!(sys::write(a, b"hello"), Ok(5));
    check_eq!(send(a, b" world", 0), Ok(6));
    let mut buf = [0u8; 32];
    check_eq!(
        recv(b, &mut buf, MSG_PEEK),
        Ok(11),
        "a stream peeks across writes"
    );
    check_eq!(sys::read(b, &mut buf[..3]), Ok(3));
    check_eq!(&buf[..3], b"hel");
    check_eq!(sys::read(b, &mut buf), Ok(8));
    check_eq!(&buf[..8], b"lo world");
    check_eq!(recv(b, &mut buf, MSG_DONTWAIT), Err(EAGAIN));
    // Vectored both ways.
    let iov = [
        Iovec {
            base: b"ab".as_ptr() as usize,
            len: 2,
        },
        Iovec {
            base: b"cde".as_ptr() as usize,
            len: 3,
        },
    ];
    check_eq!(sys::writev(b, &iov), Ok(5));
    let (mut x, mut y) = ([0u8; 1], [0u8; 8]);
    let riov = [
        Iovec {
            base: x.as_mut_ptr() as usize,
            len: 1,
        },
        Iovec {
            base: y.as_mut_ptr() as usize,
            len: 8,
        },
    ];
    check_eq!(sys::readv(a, &riov), Ok(5));
    check_eq!((&x[..], &y[..4]), (&b"a"[..], &b"bcde"[..]));
    let mut n = 0i32;
    t!(sys::write(a, b"xyz"));
    t!(sys::ioctl(b, FIONREAD, &mut n as *mut i32 as usize));
    check_eq!(n, 3, "FIONREAD");
    // The peer's close: what was sent stays readable, then EOF.
    t!(sys::close(a));
    check_eq!(sys::read(b, &mut buf), Ok(3));
    check_eq!(sys::read(b, &mut buf), Ok(0), "EOF");
    check_eq!(send(b, b"x", MSG_NOSIGNAL), Err(EPIPE));
    let st = t!(in_child(|| {
        let _ = sys::write(b, b"x");
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGPIPE,
        "{}",
        describe(st)
    );
    t!(sys::close(b));
    Ok(())
}

fn dgram_and_seqpacket_keep_boundaries() -> TestResult {
    for ty in [SOCK_DGRAM, SOCK_SEQPACKET] {
        let [a, b] = t!(pair(ty));
        t!(sys::write(a, b"first"));
        t!(sys::write(a, b"second!"));
        let mut buf = [0u8; 32];
        check_eq!(recv(b, &mut buf[..3], MSG_PEEK), Ok(3));
        check_eq!(
            recv(b, &mut buf[..3], MSG_PEEK | MSG_TRUNC),
            Ok(5),
            "MSG_TRUNC: the real length"
        );
        check_eq!(sys::read(b, &mut buf), Ok(5), "one message per read");
        // recvmsg reports MSG_TRUNC in msg_flags; the rest of the message is gone.
        let iov = [Iovec {
            base: buf.as_mut_ptr() as usize,
            len: 2,
        }];
        let mut m = Msghdr {
            msg_iov: iov.as_ptr() as u64,
            msg_iovlen: 1,
            ..Default::default()
        };
        check_eq!(
            sc(
                nr::RECVMSG,
                &[b as usize, &mut m as *mut Msghdr as usize, 0]
            ),
            Ok(2)
        );
        check_eq!(m.msg_flags & MSG_TRUNC, MSG_TRUNC);
        check_eq!(recv(b, &mut buf, MSG_DONTWAIT), Err(EAGAIN));
        // A gathered write is one message.
        let iov = [
            Iovec {
                base: b"ab".as_ptr() as usize,
                len: 2,
            },
            Iovec {
                base: b"cd".as_ptr() as usize,
                len: 2,
            },
        ];
        check_eq!(sys::writev(a, &iov), Ok(4));
        check_eq!(sys::read(b, &mut buf), Ok(4));
        check_eq!(send(a, b"", 0), Ok(0), "an empty datagram");
        check_eq!(recv(b, &mut buf, 0), Ok(0));
        check_eq!(getsockopt_int(a, SO_TYPE), Ok(ty as i32));
        t!(sys::close(a));
        if ty == SOCK_SEQPACKET {
            check_eq!(sys::read(b, &mut buf), Ok(0), "seqpacket EOF");
            check_eq!(send(b, b"x", MSG_NOSIGNAL), Err(EPIPE));
        } else {
            check_eq!(
                recv(b, &mut buf, MSG_DONTWAIT),
                Err(EAGAIN),
                "no EOF on a datagram pair"
            );
            check_eq!(send(b, b"x", 0), Err(ECONNREFUSED));
        }
        t!(sys::close(b));
    }
    Ok(())
}

fn shutdown_and_poll() -> TestResult {
    let [a, b] = t!(pair(SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC));
    check_eq!(sys::fcntl(a, F_GETFD, 0), Ok(1), "SOCK_CLOEXEC");
    check_eq!(
        sys::fcntl(a, F_GETFL, 0).map(|f| f & 0o4000),
        Ok(0o4000),
        "SOCK_NONBLOCK"
    );
    check_eq!(poll1(a, POLLIN | POLLOUT), POLLOUT);
    let mut buf = [0u8; 8];
    check_eq!(sys::read(a, &mut buf), Err(EAGAIN));
    t!(sys::write(b, b"z"));
    check_eq!(poll1(a, POLLIN | POLLOUT), POLLIN | POLLOUT);
    t!(sc(nr::SHUTDOWN, &[b as usize, SHUT_WR as usize]));
    check_eq!(sys::read(a, &mut buf), Ok(1));
    check_eq!(
        sys::read(a, &mut buf),
        Ok(0),
        "EOF after the peer's SHUT_WR"
    );
    check_eq!(send(b, b"x", MSG_NOSIGNAL), Err(EPIPE));
    check_eq!(sys::write(a, b"back"), Ok(4), "the other way still works");
    check_eq!(sys::read(b, &mut buf), Ok(4));
    check_eq!(sc(nr::SHUTDOWN, &[a as usize, 7]), Err(EINVAL));
    t!(sys::close(b));
    check_eq!(
        poll1(a, POLLIN | POLLOUT) & (POLLIN | POLLHUP),
        POLLIN | POLLHUP
    );
    t!(sys::close(a));
    // Filling a stream: EAGAIN when non-blocking, POLLOUT gone.
    let [a, b] = t!(pair(SOCK_STREAM | SOCK_NONBLOCK));
    let chunk = [7u8; 4096];
    let mut total = 0;
    loop {
        match sys::write(a, &chunk) {
            Ok(n) => total += n,
            Err(e) => {
                check_eq!(e, EAGAIN);
                break;
            }
        }
        check!(total < 4 << 20, "never blocks");
    }
    check!(total >= 64 * 1024, "{total}");
    check_eq!(poll1(a, POLLOUT), 0);
    t!(sys::close(a));
    t!(sys::close(b));
    Ok(())
}

fn options_names_and_stat() -> TestResult {
    let [a, b] = t!(pair(SOCK_STREAM));
    check_eq!(getsockopt_int(a, SO_DOMAIN), Ok(AF_UNIX as i32));
    check_eq!(getsockopt_int(a, SO_ERROR), Ok(0));
    check_eq!(getsockopt_int(a, SO_SNDBUF), Ok(212992));
    check_eq!(getsockopt_int(a, SO_RCVBUF), Ok(212992));
    t!(setsockopt_int(a, SO_SNDBUF, 10000));
    check_eq!(getsockopt_int(a, SO_SNDBUF), Ok(20000), "doubled");
    let mut cred = Ucred::default();
    let mut len = 12i32;
    t!(sc(
        nr::GETSOCKOPT,
        &[
            a as usize,
            SOL_SOCKET as usize,
            SO_PEERCRED as usize,
            &mut cred as *mut Ucred as usize,
            &mut len as *mut i32 as usize
        ]
    ));
    check_eq!(
        (cred.pid, cred.uid, len),
        (sys::getpid(), sys::getuid(), 12)
    );
    check_eq!(getsockopt_int(a, 9999), Err(ENOPROTOOPT));
    let (n, len) = t!(name_of(nr::GETSOCKNAME, a));
    check_eq!((len, &n[..2]), (2, &(AF_UNIX as u16).to_ne_bytes()[..]));
    let (_, len) = t!(name_of(nr::GETPEERNAME, b));
    check_eq!(len, 2);
    let st = t!(sys::fstat(a));
    check_eq!(st.st_mode, 0o140777);
    let mut link = [0u8; 64];
    let path = format!("/proc/self/fd/{a}");
    // /proc may be unmounted when this runs as init on Linux.
    if let Ok(n) = sys::readlinkat(AT_FDCWD, &path, &mut link) {
        let want = format!("socket:[{}]", st.st_ino);
        check_eq!(core::str::from_utf8(&link[..n]).unwrap(), want.as_str());
    }
    check_eq!(sys::lseek(a, 0, 0), Err(ESPIPE));
    t!(sys::close(a));
    t!(sys::close(b));
    check_eq!(sc(nr::GETSOCKNAME, &[999, 0, 0]), Err(EBADF));
    let [r, w] = t!(sys::pipe2(0));
    check_eq!(send(w, b"x", 0), Err(ENOTSOCK));
    t!(sys::close(r));
    t!(sys::close(w));
    Ok(())
}

fn other_families_and_types() -> TestResult {
    // (AF_INET, AF_INET6 and AF_NETLINK have their own program: inet.)
    for fam in [AF_MAX, 200] {
        check_eq!(
            sc(nr::SOCKET, &[fam as usize, SOCK_STREAM as usize, 0]),
            Err(EAFNOSUPPORT),
            "family {fam}"
        );
    }
    check_eq!(
        sc(nr::SOCKET, &[AF_UNIX as usize, 4, 0]),
        Err(ESOCKTNOSUPPORT)
    );
    check_eq!(
        sc(nr::SOCKET, &[AF_UNIX as usize, SOCK_STREAM as usize, 7]),
        Err(EPROTONOSUPPORT)
    );
    check_eq!(
        sc(
            nr::SOCKETPAIR,
            &[AF_UNIX as usize, SOCK_STREAM as usize, 0, 8]
        ),
        Err(EFAULT)
    );
    Ok(())
}

fn bind_listen_connect_accept() -> TestResult {
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/us.sock", 0);
    let l = t!(socket(SOCK_STREAM));
    check_eq!(
        sc(nr::LISTEN, &[l as usize, 5]),
        Err(EINVAL),
        "listen needs a name"
    );
    t!(addr_call(nr::BIND, l, b"/tmp/us.sock\0"));
    let st = t!(sys::stat("/tmp/us.sock"));
    check_eq!(st.st_mode & 0o170000, 0o140000, "S_IFSOCK");
    check_eq!(
        addr_call(nr::BIND, l, b"/tmp/us2.sock"),
        Err(EINVAL),
        "bound already"
    );
    let l2 = t!(socket(SOCK_STREAM));
    check_eq!(addr_call(nr::BIND, l2, b"/tmp/us.sock"), Err(EADDRINUSE));
    t!(sys::close(l2));
    let c = t!(socket(SOCK_STREAM));
    check_eq!(
        addr_call(nr::CONNECT, c, b"/tmp/us.sock"),
        Err(ECONNREFUSED),
        "not listening"
    );
    check_eq!(addr_call(nr::CONNECT, c, b"/tmp/nothing"), Err(ENOENT));
    t!(sc(nr::LISTEN, &[l as usize, 5]));
    check_eq!(getsockopt_int(l, SO_ACCEPTCONN), Ok(1));
    check_eq!(poll1(l, POLLIN), 0);
    t!(addr_call(nr::CONNECT, c, b"/tmp/us.sock"));
    check_eq!(poll1(l, POLLIN), POLLIN);
    check_eq!(sys::write(c, b"early"), Ok(5), "before accept");
    let mut a = [0u8; 110];
    let mut alen = 110i32;
    let s = t!(sc(
        nr::ACCEPT4,
        &[
            l as usize,
            a.as_mut_ptr() as usize,
            &mut alen as *mut i32 as usize,
            SOCK_CLOEXEC as usize
        ]
    )) as i32;
    check_eq!(alen, 2, "the client is unnamed");
    check_eq!(sys::fcntl(s, F_GETFD, 0), Ok(1));
    let mut buf = [0u8; 16];
    check_eq!(sys::read(s, &mut buf), Ok(5));
    let (n, len) = t!(name_of(nr::GETPEERNAME, c));
    check_eq!(&n[2..len], b"/tmp/us.sock\0");
    let (n, len) = t!(name_of(nr::GETSOCKNAME, s));
    check_eq!(&n[2..len], b"/tmp/us.sock\0");
    t!(sys::fcntl(l, F_SETFL, 0o4000));
    check_eq!(
        sc(nr::ACCEPT4, &[l as usize, 0, 0, 0]),
        Err(EAGAIN),
        "nothing queued"
    );
    t!(sys::close(s));
    t!(sys::close(c));
    t!(sys::close(l));
    t!(sys::unlinkat(AT_FDCWD, "/tmp/us.sock", 0));
    // The abstract namespace and autobind.
    let l = t!(socket(SOCK_SEQPACKET));
    t!(addr_call(nr::BIND, l, b"\0svelt-test"));
    let l2 = t!(socket(SOCK_SEQPACKET));
    check_eq!(addr_call(nr::BIND, l2, b"\0svelt-test"), Err(EADDRINUSE));
    t!(addr_call(nr::BIND, l2, b""));
    let (n, len) = t!(name_of(nr::GETSOCKNAME, l2));
    check_eq!((len, n[2]), (8, 0), "autobind: NUL and five hex digits");
    t!(sc(nr::LISTEN, &[l as usize, 1]));
    let c = t!(socket(SOCK_SEQPACKET));
    t!(addr_call(nr::CONNECT, c, b"\0svelt-test"));
    let s = t!(sc(nr::ACCEPT, &[l as usize, 0, 0])) as i32;
    t!(sys::write(s, b"one"));
    t!(sys::write(s, b"two"));
    check_eq!(sys::read(c, &mut buf), Ok(3));
    t!(sys::close(s));
    check_eq!(sys::read(c, &mut buf), Ok(3));
    check_eq!(sys::read(c, &mut buf), Ok(0));
    let d = t!(socket(SOCK_STREAM));
    check_eq!(
        addr_call(nr::CONNECT, d, b"\0svelt-test"),
        Err(ECONNREFUSED),
        "another type's name"
    );
    for fd in [l, l2, c, d] {
        t!(sys::close(fd));
    }
    // Datagrams to a bound name, with the sender's name.
    let r = t!(socket(SOCK_DGRAM));
    t!(addr_call(nr::BIND, r, b"\0svelt-dgram"));
    let w = t!(socket(SOCK_DGRAM));
    t!(addr_call(nr::BIND, w, b"\0svelt-sender"));
    let (to, tolen) = sun(b"\0svelt-dgram");
    check_eq!(
        sc(
            nr::SENDTO,
            &[
                w as usize,
                b"hi".as_ptr() as usize,
                2,
                0,
                to.as_ptr() as usize,
                tolen as usize
            ]
        ),
        Ok(2)
    );
    let mut from = [0u8; 110];
    let mut flen = 110i32;
    check_eq!(
        sc(
            nr::RECVFROM,
            &[
                r as usize,
                buf.as_mut_ptr() as usize,
                16,
                0,
                from.as_mut_ptr() as usize,
                &mut flen as *mut i32 as usize
            ]
        ),
        Ok(2)
    );
    check_eq!(&from[2..flen as usize], b"\0svelt-sender");
    check_eq!(send(w, b"x", 0), Err(ENOTCONN));
    t!(sys::close(r));
    t!(sys::close(w));
    Ok(())
}

fn scm_rights_and_credentials() -> TestResult {
    let [a, b] = t!(pair(SOCK_STREAM));
    // Before the send: Linux records the sender's credentials only when SO_PASSCRED is on then.
    t!(setsockopt_int(b, SO_PASSCRED, 1));
    let [r, w] = t!(sys::pipe2(0));
    let mut ctl = [0u64; 8];
    let fds = [r, w];
    let hdr = Cmsghdr {
        cmsg_len: cmsg_len(8) as u64,
        cmsg_level: SOL_SOCKET,
        cmsg_type: SCM_RIGHTS,
    };
    let cb = ctl.as_mut_ptr() as *mut u8;
    // SAFETY: ctl has 64 bytes, room for a header and two descriptors.
    unsafe {
        core::ptr::copy_nonoverlapping(&hdr as *const Cmsghdr as *const u8, cb, 16);
        core::ptr::copy_nonoverlapping(fds.as_ptr() as *const u8, cb.add(16), 8);
    }
    let iov = [Iovec {
        base: b"F".as_ptr() as usize,
        len: 1,
    }];
    let m = Msghdr {
        msg_iov: iov.as_ptr() as u64,
        msg_iovlen: 1,
        msg_control: ctl.as_ptr() as u64,
        msg_controllen: cmsg_space(8) as u64,
        ..Default::default()
    };
    check_eq!(
        sc(nr::SENDMSG, &[a as usize, &m as *const Msghdr as usize, 0]),
        Ok(1)
    );
    t!(sys::close(r));
    let mut rctl = [0u64; 16];
    let mut buf = [0u8; 4];
    let riov = [Iovec {
        base: buf.as_mut_ptr() as usize,
        len: 4,
    }];
    let mut rm = Msghdr {
        msg_iov: riov.as_ptr() as u64,
        msg_iovlen: 1,
        msg_control: rctl.as_mut_ptr() as u64,
        msg_controllen: 128,
        ..Default::default()
    };
    check_eq!(
        sc(
            nr::RECVMSG,
            &[
                b as usize,
                &mut rm as *mut Msghdr as usize,
                MSG_CMSG_CLOEXEC as usize
            ]
        ),
        Ok(1)
    );
    check_eq!(rm.msg_flags, MSG_CMSG_CLOEXEC, "passed back");
    check_eq!(rm.msg_controllen as usize, cmsg_space(12) + cmsg_space(8));
    let words: &[u32] = &[
        rctl[0] as u32,
        (rctl[1] & 0xffff_ffff) as u32,
        (rctl[1] >> 32) as u32,
    ];
    check_eq!(words, &[28, SOL_SOCKET, SCM_CREDENTIALS][..]);
    let cred_pid = rctl[2] as u32 as i32;
    check_eq!(cred_pid, sys::getpid());
    let h2 = &rctl[4..];
    check_eq!((h2[0], (h2[1] >> 32) as u32), (24, SCM_RIGHTS));
    let (nr_, nw) = (h2[2] as u32 as i32, (h2[2] >> 32) as u32 as i32);
    check_eq!(sys::fcntl(nr_, F_GETFD, 0), Ok(1), "MSG_CMSG_CLOEXEC");
    t!(sys::write(w, b"via"));
    check_eq!(
        sys::read(nr_, &mut buf),
        Ok(3),
        "the passed read end is the pipe's"
    );
    t!(sys::close(nw));
    t!(sys::close(w));
    check_eq!(sys::read(nr_, &mut buf), Ok(0));
    t!(sys::close(nr_));
    // A bad descriptor in SCM_RIGHTS.
    let bad = [999i32, 999];
    // SAFETY: as above.
    unsafe { core::ptr::copy_nonoverlapping(bad.as_ptr() as *const u8, cb.add(16), 8) };
    check_eq!(
        sc(nr::SENDMSG, &[a as usize, &m as *const Msghdr as usize, 0]),
        Err(EBADF)
    );
    t!(sys::close(a));
    t!(sys::close(b));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("stream_pair_basics", stream_pair_basics),
        (
            "dgram_and_seqpacket_keep_boundaries",
            dgram_and_seqpacket_keep_boundaries,
        ),
        ("shutdown_and_poll", shutdown_and_poll),
        ("options_names_and_stat", options_names_and_stat),
        ("other_families_and_types", other_families_and_types),
        ("bind_listen_connect_accept", bind_listen_connect_accept),
        ("scm_rights_and_credentials", scm_rights_and_credentials),
    ])
}

entry!(main);
