//! Signal syscalls.

#![forbid(unsafe_code)]

use super::NoReturn;
use crate::arch::exception::TrapFrame;
use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::process::signal::{self, SigInfo};
use crate::process::{self, CurrentTask};
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::signal::{self as sig, Sigaction, Sigset, StackT};

pub fn rt_sigaction(
    t: &CurrentTask,
    signo: i32,
    act: usize,
    oact: usize,
    size: usize,
) -> SysResult<usize> {
    let signo = u32::try_from(signo).map_err(|_| Errno::EINVAL)?;
    let new = if act != 0 {
        Some(UserPtr::<Sigaction>::new(act).read()?)
    } else {
        None
    };
    let new = sig::sigaction_check(signo, new, size)?;
    let h = t.sighand();
    let old = h.lock().get(signo);
    if oact != 0 {
        UserPtr::new(oact).write(&sig::sigaction_report(&old))?;
    }
    if let Some(a) = new {
        h.lock().set(signo, a);
        // A signal that is now ignored is discarded from every pending set.
        if a.ignores(signo) {
            let p = t.process();
            p.shared_sig.lock().discard(signo);
            for th in p.live_threads() {
                th.sig.lock().pending.discard(signo);
            }
        }
    }
    Ok(0)
}

pub fn rt_sigprocmask(
    t: &CurrentTask,
    how: u32,
    set: usize,
    oset: usize,
    size: usize,
) -> SysResult<usize> {
    if size != Sigset::SIZE {
        return Err(Errno::EINVAL);
    }
    let old = t.sig.lock().blocked;
    let new = if set != 0 {
        let m = UserPtr::<u64>::new(set).read()?;
        Some(sig::sigprocmask(Sigset(old), how, Sigset(m))?)
    } else {
        None
    };
    if oset != 0 {
        UserPtr::new(oset).write(&old)?;
    }
    if let Some(n) = new {
        t.sig.lock().blocked = n.0;
        signal::hint(t);
    }
    Ok(0)
}

pub fn rt_sigpending(t: &CurrentTask, set: usize, size: usize) -> SysResult<usize> {
    if size > Sigset::SIZE {
        return Err(Errno::EINVAL);
    }
    let (blocked, mine) = {
        let s = t.sig.lock();
        (s.blocked, s.pending_mask())
    };
    let shared = t.process().shared_sig.lock().pending_mask();
    let v = (mine | shared) & blocked;
    UserSlice::new(set, size).copy_out(&v.to_le_bytes()[..size])?;
    Ok(0)
}

pub fn rt_sigsuspend(cur: &CurrentTask, set: usize, size: usize) -> SysResult<usize> {
    if size != Sigset::SIZE {
        return Err(Errno::EINVAL);
    }
    let m = UserPtr::<u64>::new(set).read()?;
    signal::set_temp_mask(cur, m);
    let me = cur.to_arc();
    let _ = crate::process::sigwait::sleep_forever_interruptible(&me);
    Err(Errno::ERESTARTNOHAND)
}

pub fn rt_sigtimedwait(
    cur: &CurrentTask,
    set: usize,
    info: usize,
    timeout: usize,
    size: usize,
) -> SysResult<usize> {
    if size != Sigset::SIZE {
        return Err(Errno::EINVAL);
    }
    let want = UserPtr::<u64>::new(set).read()? & !signal::unblockable();
    let deadline = if timeout != 0 {
        // None: an invalid timespec (EINVAL); a huge one saturates instead of wrapping.
        let ns = UserPtr::<svelt_abi::uapi::time::Timespec>::new(timeout)
            .read()?
            .to_nanos()
            .ok_or(Errno::EINVAL)?;
        Some(crate::time::deadline_after_ns(ns))
    } else {
        None
    };
    let me = cur.to_arc();
    let r = crate::process::sigwait::wait_for_signal(&me, want, deadline)?;
    match r {
        Some(i) => {
            if info != 0 {
                UserPtr::new(info).write(&i.0)?;
            }
            Ok(i.signo() as usize)
        }
        None => Err(Errno::EAGAIN),
    }
}

pub fn rt_sigreturn(cur: &CurrentTask, tf: &mut TrapFrame) -> SysResult<NoReturn> {
    signal::frame::sys_rt_sigreturn(cur, tf);
    Ok(NoReturn)
}

pub fn sigaltstack(t: &CurrentTask, ss: usize, old: usize, tf: &TrapFrame) -> SysResult<usize> {
    let sp = tf.sp_el0;
    let stack = t.sig.lock().altstack;
    if old != 0 {
        UserPtr::new(old).write(&stack.report(sp))?;
    }
    if ss != 0 {
        let new = UserPtr::<StackT>::new(ss).read()?;
        let mut a = stack;
        a.set(new, sp, sig::MINSIGSTKSZ)?;
        t.sig.lock().altstack = a;
    }
    Ok(0)
}

fn me_info(cur: &CurrentTask, signo: u32, code: i32) -> SigInfo {
    let pid = cur.pid() as i32;
    if code == sig::SI_TKILL {
        SigInfo::tkill(signo, pid, 0)
    } else {
        SigInfo::kill(signo, pid, 0)
    }
}

pub fn kill(cur: &CurrentTask, pid: i32, signo: i32) -> SysResult<usize> {
    let s = if signo == 0 {
        0
    } else {
        signal::valid_signo(signo)?
    };
    let me = cur.process();
    let g = match pid {
        0 => me.pgid.load(Ordering::Relaxed),
        p => p.unsigned_abs(),
    };
    let chosen = |p: &process::Process| match pid {
        p1 if p1 > 0 => p.pid == p1 as u32,
        -1 => p.pid > 1 && p.pid != me.pid,
        _ => p.pgid.load(Ordering::Relaxed) == g,
    };
    // Every process counts as found until it is reaped (a dying one, a zombie: as on Linux),
    // but a signal to a zombie goes nowhere.
    let mut targets = match pid {
        p if p > 0 => crate::mm::try_collect(process::find_pid(p as u32))?,
        _ => process::processes()?,
    };
    targets.retain(|p| p.pid != 0 && chosen(p));
    if targets.is_empty() {
        return Err(Errno::ESRCH);
    }
    if s != 0 {
        for p in &targets {
            if !matches!(*p.state.lock(), process::ProcState::Zombie(_)) {
                signal::send_to_process(p, s, me_info(cur, s, sig::SI_USER));
            }
        }
    }
    Ok(0)
}

pub fn tgkill(cur: &CurrentTask, tgid: i32, tid: i32, signo: i32) -> SysResult<usize> {
    if tid <= 0 || (tgid != -1 && tgid <= 0) {
        return Err(Errno::EINVAL);
    }
    let s = if signo == 0 {
        0
    } else {
        signal::valid_signo(signo)?
    };
    let t = process::find_task(tid as u32).ok_or(Errno::ESRCH)?;
    if tgid != -1 && t.pid() != tgid as u32 {
        return Err(Errno::ESRCH);
    }
    if s != 0 {
        signal::send_to_task(&t, s, me_info(cur, s, sig::SI_TKILL));
    }
    Ok(0)
}

/// The siginfo rt_sigqueueinfo and rt_tgsigqueueinfo send: read from the user (EFAULT), its
/// si_signo made `signo`; a kernel or kill code (si_code >= 0, SI_TKILL) only to the caller
/// itself (EPERM), as Linux's do_rt_sigqueueinfo says.
fn user_siginfo(
    cur: &CurrentTask,
    signo: i32,
    uinfo: UserPtr<[u8; SigInfo::SIZE]>,
    target: i32,
) -> SysResult<SigInfo> {
    let info = SigInfo(uinfo.read()?).with_signo(signo as u32);
    sig::sigqueueinfo_check(&info, cur.tid as i32 == target)?;
    Ok(info)
}

/// rt_sigqueueinfo(pid, sig, info): `info` to process `pid` (sigqueue(3)). The siginfo is
/// read and checked first, then the process found (ESRCH), then the signal (EINVAL; 0 only
/// checks).
pub fn rt_sigqueueinfo(
    cur: &CurrentTask,
    pid: i32,
    signo: i32,
    uinfo: UserPtr<[u8; SigInfo::SIZE]>,
) -> SysResult<usize> {
    let info = user_siginfo(cur, signo, uinfo, pid)?;
    let p = u32::try_from(pid)
        .ok()
        .filter(|&p| p > 0)
        .and_then(process::find_pid)
        .ok_or(Errno::ESRCH)?;
    if signo != 0 {
        let s = signal::valid_signo(signo)?;
        if !matches!(*p.state.lock(), process::ProcState::Zombie(_)) {
            signal::send_to_process(&p, s, info);
        }
    }
    Ok(0)
}

/// rt_tgsigqueueinfo(tgid, tid, sig, info): `info` to thread `tid` of `tgid` (EINVAL for
/// either not positive, ESRCH when no such thread is in that group).
pub fn rt_tgsigqueueinfo(
    cur: &CurrentTask,
    tgid: i32,
    tid: i32,
    signo: i32,
    uinfo: UserPtr<[u8; SigInfo::SIZE]>,
) -> SysResult<usize> {
    let info = SigInfo(uinfo.read()?).with_signo(signo as u32);
    if tgid <= 0 || tid <= 0 {
        return Err(Errno::EINVAL);
    }
    sig::sigqueueinfo_check(&info, cur.tid as i32 == tid)?;
    let t = process::find_task(tid as u32)
        .filter(|t| t.pid() == tgid as u32)
        .ok_or(Errno::ESRCH)?;
    if signo != 0 {
        let s = signal::valid_signo(signo)?;
        signal::send_to_task(&t, s, info);
    }
    Ok(0)
}

/// signalfd4(fd, mask, sizemask, flags): with fd -1 a new signalfd (process/signal/
/// signalfd.rs), `anon_inode:[signalfd]`, read-only for write(2); otherwise fd's mask is
/// replaced. Linux's order: the size (EINVAL, 8 only), the mask (EFAULT), the flags (EINVAL),
/// then the descriptor (EBADF, EINVAL for one that is not a signalfd). SIGKILL and SIGSTOP
/// leave the mask silently.
pub fn signalfd4(
    cur: &CurrentTask,
    fd: i32,
    mask: UserPtr<u64>,
    sizemask: usize,
    flags: u32,
) -> SysResult<usize> {
    use crate::fs::File;
    use crate::process::signal::signalfd::SignalFd;
    use svelt_abi::uapi::fs::O_RDWR;
    if sizemask != 8 {
        return Err(Errno::EINVAL);
    }
    let m = mask.read()?;
    if flags & !(sig::SFD_CLOEXEC | sig::SFD_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    if fd == -1 {
        let f = File::new(
            None,
            alloc::sync::Arc::new(SignalFd::new(m)),
            O_RDWR | (flags & sig::SFD_NONBLOCK),
            alloc::string::String::from("anon_inode:[signalfd]"),
        );
        return super::file::install(cur, f, flags & sig::SFD_CLOEXEC != 0);
    }
    let f = super::file::file(cur, fd)?;
    let s = f
        .ops
        .as_any()
        .downcast_ref::<SignalFd>()
        .ok_or(Errno::EINVAL)?;
    s.set_mask(m);
    Ok(fd as usize)
}
