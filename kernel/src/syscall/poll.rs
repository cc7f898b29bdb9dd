//! Waiting on many files: epoll, ppoll and pselect6.

#![forbid(unsafe_code)]

use super::file::{file, install};
use crate::fs::epoll::{self, Epoll};
use crate::fs::{self, File, Kind};
use crate::mm::try_vec;
use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::process::CurrentTask;
use alloc::string::String;
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{
    EpollEvent, PollFd, EPOLL_CLOEXEC, EPOLL_CTL_DEL, O_RDWR, POLLERR, POLLHUP, POLLIN, POLLNVAL,
    POLLOUT,
};

pub fn epoll_create1(cur: &CurrentTask, flags: u32) -> SysResult<usize> {
    if flags & !EPOLL_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    let file = File::new(
        None,
        Epoll::new(),
        O_RDWR,
        String::from("anon_inode:[eventpoll]"),
    );
    install(cur, file, flags & EPOLL_CLOEXEC != 0)
}

fn as_epoll(file: &File) -> SysResult<&Epoll> {
    file.ops
        .as_any()
        .downcast_ref::<Epoll>()
        .ok_or(Errno::EINVAL)
}

pub fn epoll_ctl(cur: &CurrentTask, epfd: i32, op: u32, fd: i32, event: usize) -> SysResult<usize> {
    let ep_file = file(cur, epfd)?;
    let target = file(cur, fd)?;
    let ep = as_epoll(&ep_file)?;
    if epfd == fd {
        return Err(Errno::EINVAL);
    }
    if target
        .node
        .as_ref()
        .is_some_and(|n| matches!(n.kind(), Kind::File | Kind::Dir))
    {
        return Err(Errno::EPERM);
    }
    let ev = if op == EPOLL_CTL_DEL {
        EpollEvent::default()
    } else {
        UserPtr::<EpollEvent>::new(event).read()?
    };
    ep.ctl(op, fd, &target, ev)?;
    Ok(0)
}

/// Converts a poll timeout in ms (negative: forever) into a deadline.
fn ms_deadline(ms: i32) -> Option<u64> {
    (ms >= 0).then(|| crate::time::deadline_after_ns(ms as u64 * 1_000_000))
}

pub fn epoll_pwait(
    cur: &CurrentTask,
    epfd: i32,
    events: usize,
    max: i32,
    timeout: i32,
    sigmask: usize,
    sigsetsize: usize,
) -> SysResult<usize> {
    if max <= 0 || max as usize > (i32::MAX as usize) / EpollEvent::SIZE {
        return Err(Errno::EINVAL);
    }
    let ep_file = file(cur, epfd)?;
    let ep = as_epoll(&ep_file)?;
    UserSlice::new(events, max as usize * EpollEvent::SIZE).check()?;
    let _mask = crate::process::signal::TempMask::from_user(cur, sigmask, sigsetsize)?;
    let ready = epoll::wait_ready(
        || {
            let v = ep.collect(cur, max as usize);
            (!v.is_empty()).then_some(v)
        },
        if timeout == 0 {
            Some(0)
        } else {
            ms_deadline(timeout)
        },
    )
    .map_err(|_| Errno::EINTR)?
    .unwrap_or_default();
    UserPtr::new(events).write_slice(&ready)?;
    Ok(ready.len())
}

fn read_timeout(ts: usize) -> SysResult<Option<u64>> {
    if ts == 0 {
        return Ok(None);
    }
    let t = UserPtr::<svelt_abi::uapi::time::Timespec>::new(ts)
        .read()?
        .validate()?;
    let ns = (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64);
    Ok(Some(crate::time::deadline_after_ns(ns)))
}

pub fn ppoll(
    cur: &CurrentTask,
    fds: usize,
    nfds: usize,
    tmo: usize,
    sigmask: usize,
    sigsetsize: usize,
) -> SysResult<usize> {
    if nfds > fs::nofile_limit(cur) {
        return Err(Errno::EINVAL);
    }
    let mut pfds = try_vec(nfds, PollFd::default())?;
    let fds = UserPtr::new(fds);
    fds.read_slice(&mut pfds)?;
    let deadline = read_timeout(tmo)?;
    let _mask = crate::process::signal::TempMask::from_user(cur, sigmask, sigsetsize)?;
    let files = cur.files();
    let r = epoll::wait_ready(
        || {
            let t = files.lock();
            let mut n = 0;
            for p in pfds.iter_mut() {
                p.revents = 0;
                if p.fd < 0 {
                    continue;
                }
                let ev = match t.get(p.fd) {
                    Ok(file) => {
                        let ready = file.ops.poll(cur) as u16;
                        ready & (p.events as u16 | POLLERR | POLLHUP)
                    }
                    Err(_) => POLLNVAL,
                };
                if ev != 0 {
                    p.revents = ev as i16;
                    n += 1;
                }
            }
            (n > 0).then_some(n)
        },
        deadline,
    );
    let n = match r {
        Ok(v) => v.unwrap_or(0),
        Err(_) => return Err(Errno::ERESTARTNOHAND),
    };
    fds.write_slice(&pfds)?;
    Ok(n)
}

pub fn pselect6(
    cur: &CurrentTask,
    nfds: i32,
    rd: usize,
    wr: usize,
    ex: usize,
    tmo: usize,
    sig: usize,
) -> SysResult<usize> {
    if !(0..=fs::NR_OPEN as i32).contains(&nfds) {
        return Err(Errno::EINVAL);
    }
    let bytes = (nfds as usize).div_ceil(64) * 8;
    let read_set = |va: usize| -> SysResult<Vec<u8>> {
        let mut b = try_vec(bytes, 0u8)?;
        if va != 0 {
            UserSlice::new(va, bytes).copy_in(&mut b)?;
        }
        Ok(b)
    };
    let (rs, ws, xs) = (read_set(rd)?, read_set(wr)?, read_set(ex)?);
    let deadline = read_timeout(tmo)?;
    // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
    let sig = UserPtr::<u64>::new(sig);
    let _mask = if !sig.is_null() {
        let (p, len) = (sig.read()?, sig.add(1).read()?);
        crate::process::signal::TempMask::from_user(cur, p as usize, len as usize)?
    } else {
        crate::process::signal::TempMask::from_user(cur, 0, 8)?
    };
    let files = cur.files();
    let bit = |s: &[u8], i: usize| s[i / 8] & (1 << (i % 8)) != 0;
    let mut out = (
        try_vec(bytes, 0u8)?,
        try_vec(bytes, 0u8)?,
        try_vec(bytes, 0u8)?,
    );
    let r = epoll::wait_ready(
        || {
            let t = files.lock();
            let mut n = 0;
            for s in [&mut out.0, &mut out.1, &mut out.2] {
                s.fill(0);
            }
            for i in 0..nfds as usize {
                if !(bit(&rs, i) || bit(&ws, i) || bit(&xs, i)) {
                    continue;
                }
                let Ok(file) = t.get(i as i32) else {
                    return Some(Err(Errno::EBADF));
                };
                let ready = file.ops.poll(cur) as u16;
                if bit(&rs, i) && ready & (POLLIN | POLLHUP | POLLERR) != 0 {
                    out.0[i / 8] |= 1 << (i % 8);
                    n += 1;
                }
                if bit(&ws, i) && ready & (POLLOUT | POLLERR) != 0 {
                    out.1[i / 8] |= 1 << (i % 8);
                    n += 1;
                }
            }
            (n > 0).then_some(Ok(n))
        },
        deadline,
    );
    let n = match r {
        Ok(Some(r)) => r?,
        Ok(None) => 0,
        Err(_) => return Err(Errno::ERESTARTNOHAND),
    };
    for (va, s) in [(rd, &out.0), (wr, &out.1), (ex, &out.2)] {
        if va != 0 {
            UserSlice::new(va, bytes).copy_out(s)?;
        }
    }
    Ok(n)
}
