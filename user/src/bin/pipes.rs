//! File descriptors and waiting: pipe2, dup/dup3, fcntl (flags, O_NONBLOCK, FD_CLOEXEC,
//! F_DUPFD_CLOEXEC), close-on-exec across execve, ioctl TCGETS, EPIPE/SIGPIPE, epoll and ppoll.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

fn pipe_read_write() -> TestResult {
    let [r, w] = t!(sys::pipe2(0));
    check!(r >= 3 && w >= 3 && r != w);
    check_eq!(sys::write(w, b"hello"), Ok(5));
    let mut n = 0i32;
    t!(sys::ioctl(r, FIONREAD, &mut n as *mut i32 as usize));
    check_eq!(n, 5, "FIONREAD");
    let mut buf = [0u8; 16];
    check_eq!(sys::read(r, &mut buf[..3]), Ok(3));
    check_eq!(
        sys::read(r, &mut buf),
        Ok(2),
        "the rest, without waiting for more"
    );
    check_eq!(sys::write(r, b"x"), Err(EBADF), "read end is read-only");
    check_eq!(sys::read(w, &mut buf), Err(EBADF));
    t!(sys::close(w));
    check_eq!(sys::read(r, &mut buf), Ok(0), "EOF once writers are gone");
    t!(sys::close(r));
    // Across fork: the child writes, the parent reads.
    let [r, w] = t!(sys::pipe2(0));
    let pid = t!(spawn(|| {
        let _ = sys::close(r);
        i32::from(sys::write_all(w, b"from the child").is_err())
    }));
    t!(sys::close(w));
    let mut got = Vec::new();
    loop {
        let n = t!(sys::read(r, &mut buf));
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    check_eq!(&got[..], b"from the child");
    let (_, st) = t!(sys::waitpid(pid, 0));
    check_eq!(st, 0);
    t!(sys::close(r));
    check_eq!(sys::pipe2(0x1).map(|_| ()), Err(EINVAL), "bad flags");
    Ok(())
}

fn dup_and_dup3() -> TestResult {
    let [r, w] = t!(sys::pipe2(0));
    let d = t!(sys::dup(w));
    check!(d > w, "lowest free fd");
    check_eq!(sys::fcntl(d, F_GETFD, 0), Ok(0), "dup clears FD_CLOEXEC");
    t!(sys::write(d, b"a"));
    check_eq!(sys::dup3(w, 50, 0), Ok(50));
    t!(sys::write(50, b"b"));
    check_eq!(sys::dup3(w, 51, O_CLOEXEC), Ok(51));
    check_eq!(sys::fcntl(51, F_GETFD, 0), Ok(FD_CLOEXEC));
    check_eq!(sys::dup3(w, w, 0), Err(EINVAL), "dup3 onto itself");
    check_eq!(sys::dup3(w, 52, 1), Err(EINVAL), "bad flags");
    check_eq!(sys::dup3(99, 52, 0), Err(EBADF));
    check_eq!(sys::dup(99), Err(EBADF));
    // dup3 onto an open fd closes it first.
    check_eq!(sys::dup3(r, 50, 0), Ok(50));
    let mut buf = [0u8; 4];
    check_eq!(sys::read(50, &mut buf), Ok(2));
    check_eq!(&buf[..2], b"ab");
    for fd in [r, w, d, 50, 51] {
        t!(sys::close(fd));
    }
    Ok(())
}

fn fcntl_flags_and_nonblock() -> TestResult {
    let [r, w] = t!(sys::pipe2(O_CLOEXEC));
    check_eq!(sys::fcntl(r, F_GETFD, 0), Ok(FD_CLOEXEC));
    check_eq!(
        sys::fcntl(r, F_GETFL, 0).map(|f| f as u32 & O_ACCMODE),
        Ok(O_RDONLY)
    );
    check_eq!(
        sys::fcntl(w, F_GETFL, 0).map(|f| f as u32 & O_ACCMODE),
        Ok(O_WRONLY)
    );
    t!(sys::fcntl(r, F_SETFD, 0));
    check_eq!(sys::fcntl(r, F_GETFD, 0), Ok(0));
    let fl = t!(sys::fcntl(r, F_GETFL, 0));
    t!(sys::fcntl(r, F_SETFL, fl | O_NONBLOCK as usize));
    check!(t!(sys::fcntl(r, F_GETFL, 0)) & O_NONBLOCK as usize != 0);
    let mut buf = [0u8; 4];
    check_eq!(
        sys::read(r, &mut buf),
        Err(EAGAIN),
        "empty non-blocking pipe"
    );
    let d = t!(sys::fcntl(r, F_DUPFD_CLOEXEC, 20)) as i32;
    check!(d >= 20, "F_DUPFD_CLOEXEC gave {d}");
    check_eq!(sys::fcntl(d, F_GETFD, 0), Ok(FD_CLOEXEC));
    check!(
        t!(sys::fcntl(d, F_GETFL, 0)) & O_NONBLOCK as usize != 0,
        "file status flags are shared"
    );
    let d2 = t!(sys::fcntl(r, F_DUPFD, 20)) as i32;
    check!(d2 > d);
    check_eq!(sys::fcntl(d2, F_GETFD, 0), Ok(0));
    check_eq!(sys::fcntl(99, F_GETFD, 0), Err(EBADF));
    check_eq!(sys::fcntl(r, 9999, 0), Err(EINVAL));
    // A full non-blocking pipe: EAGAIN on write.
    t!(sys::fcntl(w, F_SETFL, O_NONBLOCK as usize));
    let chunk = [0u8; 4096];
    let mut total = 0;
    loop {
        match sys::write(w, &chunk) {
            Ok(n) => total += n,
            Err(EAGAIN) => break,
            Err(e) => return Err(format!("write: {e:?}")),
        }
        check!(total <= 1 << 20, "pipe never filled");
    }
    check!(total >= 4096, "pipe capacity {total}");
    for fd in [r, w, d, d2] {
        t!(sys::close(fd));
    }
    Ok(())
}

fn cloexec_across_execve() -> TestResult {
    let [r, w] = t!(sys::pipe2(0));
    let keep = t!(sys::dup3(w, 40, 0));
    let gone = t!(sys::dup3(w, 41, O_CLOEXEC));
    let st = t!(in_child(|| {
        let e = sys::execve("/bin/tests/pipes", &["pipes", "--check-fds"], &[]);
        eprintln!("# execve: {e:?}");
        99
    }));
    check_eq!(
        describe(st),
        "exited 0",
        "fd 40 open, fd 41 closed after execve"
    );
    for fd in [r, w, keep, gone] {
        t!(sys::close(fd));
    }
    Ok(())
}

fn ioctl_tcgets() -> TestResult {
    let mut termios = [0u8; 64];
    let fd = t!(sys::open("/dev/console", O_RDWR | O_NOCTTY));
    check_eq!(sys::ioctl(fd, TCGETS, termios.as_mut_ptr() as usize), Ok(0));
    t!(sys::close(fd));
    let [r, w] = t!(sys::pipe2(0));
    check_eq!(
        sys::ioctl(r, TCGETS, termios.as_mut_ptr() as usize),
        Err(ENOTTY)
    );
    let n = t!(sys::open("/dev/null", O_RDWR));
    check_eq!(
        sys::ioctl(n, TCGETS, termios.as_mut_ptr() as usize),
        Err(ENOTTY)
    );
    check_eq!(
        sys::ioctl(99, TCGETS, termios.as_mut_ptr() as usize),
        Err(EBADF)
    );
    for fd in [r, w, n] {
        t!(sys::close(fd));
    }
    Ok(())
}

fn epipe_and_sigpipe() -> TestResult {
    let [r, w] = t!(sys::pipe2(0));
    t!(sys::close(r));
    let st = t!(in_child(|| {
        let _ = sys::write(w, b"x");
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGPIPE,
        "{}",
        describe(st)
    );
    t!(set_disposition(SIGPIPE, SIG_IGN));
    check_eq!(sys::write(w, b"x"), Err(EPIPE));
    t!(set_disposition(SIGPIPE, SIG_DFL));
    t!(sys::close(w));
    Ok(())
}

fn epoll_on_pipes() -> TestResult {
    let ep = t!(sys::syscall(nr::EPOLL_CREATE1, &[EPOLL_CLOEXEC as usize])) as i32;
    check_eq!(sys::fcntl(ep, F_GETFD, 0), Ok(FD_CLOEXEC));
    let [r, w] = t!(sys::pipe2(0));
    let [r2, w2] = t!(sys::pipe2(0));
    let ev = EpollEvent {
        events: EPOLLIN,
        data: 0x1111,
    };
    t!(epoll_ctl(ep, EPOLL_CTL_ADD, r, Some(&ev)));
    let ev2 = EpollEvent {
        events: EPOLLIN,
        data: 0x2222,
    };
    t!(epoll_ctl(ep, EPOLL_CTL_ADD, r2, Some(&ev2)));
    check_eq!(epoll_ctl(ep, EPOLL_CTL_ADD, r, Some(&ev)), Err(EEXIST));
    check_eq!(
        epoll_ctl(ep, EPOLL_CTL_ADD, ep, Some(&ev)),
        Err(EINVAL),
        "itself"
    );
    check_eq!(epoll_ctl(ep, EPOLL_CTL_MOD, w, Some(&ev)), Err(ENOENT));
    let mut evs = [EpollEvent::default(); 4];
    check_eq!(epoll_wait(ep, &mut evs, 0), Ok(0), "nothing ready");
    let t0 = sys::now_ns();
    check_eq!(epoll_wait(ep, &mut evs, 30), Ok(0), "timeout");
    check!(
        sys::now_ns() - t0 >= 30_000_000,
        "epoll_pwait timed out early"
    );
    t!(sys::write(w2, b"x"));
    check_eq!(epoll_wait(ep, &mut evs, 1000), Ok(1));
    check_eq!((evs[0].events, evs[0].data), (EPOLLIN, 0x2222));
    // Level-triggered: still ready until read.
    check_eq!(epoll_wait(ep, &mut evs, 0), Ok(1));
    let mut buf = [0u8; 4];
    t!(sys::read(r2, &mut buf));
    check_eq!(epoll_wait(ep, &mut evs, 0), Ok(0));
    // A writer in another process wakes a blocked epoll_pwait.
    let pid = t!(spawn(|| {
        sys::sleep_ns(30_000_000);
        i32::from(sys::write(w, b"y").is_err())
    }));
    check_eq!(epoll_wait(ep, &mut evs, 5000), Ok(1));
    check_eq!(evs[0].data, 0x1111);
    t!(sys::waitpid(pid, 0));
    t!(sys::read(r, &mut buf));
    // Writers gone: EPOLLHUP.
    t!(sys::close(w2));
    check_eq!(epoll_wait(ep, &mut evs, 0), Ok(1));
    check_eq!((evs[0].events & EPOLLHUP, evs[0].data), (EPOLLHUP, 0x2222));
    t!(epoll_ctl(ep, EPOLL_CTL_DEL, r2, None));
    check_eq!(epoll_wait(ep, &mut evs, 0), Ok(0));
    check_eq!(epoll_wait(ep, &mut evs[..0], 0), Err(EINVAL), "maxevents 0");
    check_eq!(epoll_wait(r, &mut evs, 0), Err(EINVAL), "not an epoll fd");
    for fd in [ep, r, w, r2] {
        t!(sys::close(fd));
    }
    Ok(())
}

fn ppoll_on_pipes() -> TestResult {
    let [r, w] = t!(sys::pipe2(0));
    let mut fds = [
        Pollfd {
            fd: r,
            events: POLLIN,
            revents: 0,
        },
        Pollfd {
            fd: w,
            events: POLLOUT,
            revents: 0,
        },
        Pollfd {
            fd: -1,
            events: POLLIN,
            revents: 0,
        },
    ];
    let zero = Timespec::default();
    check_eq!(
        sys::ppoll(&mut fds, Some(&zero)),
        Ok(1),
        "only the write end is ready"
    );
    check_eq!(
        (fds[0].revents, fds[1].revents, fds[2].revents),
        (0, POLLOUT, 0)
    );
    let t0 = sys::now_ns();
    check_eq!(
        sys::ppoll(&mut fds[..1], Some(&Timespec::from_ns(30_000_000))),
        Ok(0)
    );
    check!(sys::now_ns() - t0 >= 30_000_000, "ppoll timed out early");
    t!(sys::write(w, b"z"));
    check_eq!(sys::ppoll(&mut fds[..1], None), Ok(1));
    check_eq!(fds[0].revents, POLLIN);
    t!(sys::close(w));
    let mut buf = [0u8; 2];
    t!(sys::read(r, &mut buf));
    check_eq!(sys::ppoll(&mut fds[..1], Some(&zero)), Ok(1));
    check_eq!(fds[0].revents, POLLHUP, "writers gone");
    let mut bad = [Pollfd {
        fd: 99,
        events: POLLIN,
        revents: 0,
    }];
    check_eq!(sys::ppoll(&mut bad, Some(&zero)), Ok(1));
    check_eq!(bad[0].revents, POLLNVAL);
    t!(sys::close(r));
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--check-fds") {
        let open40 = sys::fcntl(40, F_GETFD, 0).is_ok();
        let closed41 = sys::fcntl(41, F_GETFD, 0) == Err(EBADF);
        return i32::from(!open40) | (i32::from(!closed41) << 1);
    }
    ktap::run(&[
        ("pipe2_read_write", pipe_read_write),
        ("dup_dup3", dup_and_dup3),
        ("fcntl_flags_nonblock_dupfd", fcntl_flags_and_nonblock),
        ("cloexec_across_execve", cloexec_across_execve),
        ("ioctl_tcgets", ioctl_tcgets),
        ("epipe_and_sigpipe", epipe_and_sigpipe),
        ("epoll_on_pipes", epoll_on_pipes),
        ("ppoll_on_pipes", ppoll_on_pipes),
    ])
}

entry!(main);
