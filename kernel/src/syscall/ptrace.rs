//! ptrace(cur, 2), process_vm_readv/writev, and the permission rule they and /proc/PID/mem share.

#![forbid(unsafe_code)]

use crate::mm::uaccess::{Partial, UserPtr, UserSlice};
use crate::process::ptrace::{self, may_access, regset, Frozen, StopKind};
use crate::process::signal::{self, SigInfo};
use crate::process::{self, CurrentTask, Held, Process, Thread};
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::ptrace::*;
use svelt_abi::uapi::signal as sig;

pub fn ptrace(
    cur: &CurrentTask,
    request: u64,
    pid: i32,
    addr: usize,
    data: usize,
) -> SysResult<usize> {
    let me = cur.process();
    // Linux finds the tracee (ESRCH) before it looks at the arguments, and for requests on a
    // tracee also waits to see it stopped: a bad argument is reported only after those.
    let req = PtraceRequest::decode(request, addr, data);
    if req == Ok(PtraceRequest::TraceMe) {
        return traceme(cur, &me);
    }
    let t = find(pid)?;
    match req {
        Ok(PtraceRequest::Attach) => return attach(cur, &me, t, None),
        Ok(PtraceRequest::Seize { options }) => return attach(cur, &me, t, Some(options)),
        Err(e) if request == PTRACE_SEIZE => return Err(e),
        _ => {}
    }
    if !ptrace::is_tracer_of(&me, &t) {
        return Err(Errno::ESRCH);
    }
    match req {
        Ok(PtraceRequest::Kill) => {
            signal::send_to_task(&t, sig::SIGKILL, SigInfo::kernel(sig::SIGKILL));
            return Ok(0);
        }
        Ok(PtraceRequest::Interrupt) => {
            if !t.ptrace.lock().seized {
                return Err(Errno::EIO);
            }
            if ptrace::trap_notify(&t) {
                return Ok(0);
            }
            // Recorded even while the tracee is still in a stop it has been told to leave
            // (a PTRACE_CONT just before): it stops again on its way out, as Linux's
            // JOBCTL_TRAP_STOP does; entering any stop clears the request (ptrace::stop).
            t.ptrace.lock().interrupt = true;
            signal::kick(&t);
            return Ok(0);
        }
        _ => {}
    }
    let f = Frozen::new(t, &me).ok_or(Errno::ESRCH)?;
    match req? {
        PtraceRequest::Peek { addr, out } => {
            let mut b = [0u8; 8];
            remote_access(&f.task, addr, &mut b, false).map_err(|_| Errno::EIO)?;
            UserPtr::new(out).write(&b)?;
            Ok(0)
        }
        PtraceRequest::Poke { addr, word } => {
            let mut b = word.to_le_bytes();
            remote_access(&f.task, addr, &mut b, true).map_err(|_| Errno::EIO)?;
            Ok(0)
        }
        PtraceRequest::Resume { how, signal } => {
            let trace = how == Resume::Syscall;
            f.task.syscall_trace.store(trace, Ordering::Release);
            f.task.work.put(crate::task::work::SYSCALL_TRACE, trace);
            resume(f, signal, how == Resume::SingleStep);
            Ok(0)
        }
        PtraceRequest::Detach { signal } => {
            let t = f.task.clone();
            drop(f);
            ptrace::unlink(&t, signal);
            Ok(0)
        }
        PtraceRequest::Listen => {
            let mut l = f.task.ptrace.lock();
            let group = l.stop.is_some_and(|s| s.kind == StopKind::Group);
            if !l.seized || !group {
                return Err(Errno::EIO);
            }
            l.listening = true;
            l.resume = Some(0);
            Ok(0)
        }
        PtraceRequest::SetOptions { options } => {
            f.task.ptrace.lock().options = options;
            Ok(0)
        }
        PtraceRequest::GetEventMsg { out } => {
            let m = f.task.ptrace.lock().event_msg;
            UserPtr::new(out).write(&m)?;
            Ok(0)
        }
        PtraceRequest::GetSigInfo { out } => {
            let i = f.task.ptrace.lock().siginfo.ok_or(Errno::EINVAL)?;
            UserPtr::new(out).write(&i.0)?;
            Ok(0)
        }
        PtraceRequest::SetSigInfo { from } => {
            let b = UserPtr::<[u8; SigInfo::SIZE]>::new(from).read()?;
            let mut l = f.task.ptrace.lock();
            if l.siginfo.is_none() {
                return Err(Errno::EINVAL);
            }
            l.siginfo = Some(SigInfo(b));
            Ok(0)
        }
        PtraceRequest::GetSigMask { out } => {
            let m = f.task.sig.lock().blocked;
            UserPtr::new(out).write(&m)?;
            Ok(0)
        }
        PtraceRequest::SetSigMask { from } => {
            let m = UserPtr::<u64>::new(from).read()?;
            f.task.sig.lock().blocked = m & !signal::unblockable();
            signal::hint(&f.task);
            Ok(0)
        }
        PtraceRequest::RegSet { set, note, iov } => regset_request(&f.held(), set, note, iov),
        PtraceRequest::GetSyscallInfo {
            size: addr,
            out: data,
        } => {
            let h = f.held();
            let tf = h.trap_frame();
            let nr = h.local().in_syscall.get() as u64;
            let args = [tf.x[0], tf.x[1], tf.x[2], tf.x[3], tf.x[4], tf.x[5]];
            // The number and arguments as they are now (the tracer may have changed them).
            let stop = match f.task.ptrace.lock().syscall_stop {
                SyscallStop::Entry { .. } => SyscallStop::Entry { nr, args },
                SyscallStop::Exit { .. } => SyscallStop::Exit {
                    rval: tf.x[0] as i64,
                },
                SyscallStop::Seccomp { ret_data, .. } => {
                    SyscallStop::Seccomp { nr, args, ret_data }
                }
                SyscallStop::None => SyscallStop::None,
            };
            let (bytes, len) = syscall_info(stop, tf.elr, tf.sp_el0);
            UserSlice::new(data, addr).copy_out(&bytes[..addr.min(len)])?;
            Ok(len)
        }
        // Carried out above, without stopping the tracee.
        PtraceRequest::TraceMe
        | PtraceRequest::Attach
        | PtraceRequest::Seize { .. }
        | PtraceRequest::Kill
        | PtraceRequest::Interrupt => Err(Errno::EIO),
    }
}

fn traceme(cur: &CurrentTask, me: &Arc<Process>) -> SysResult<usize> {
    let t = cur.to_arc();
    let parent = me.parent().ok_or(Errno::EPERM)?;
    if t.traced.load(Ordering::Acquire) {
        return Err(Errno::EPERM);
    }
    ptrace::link(&t, &parent, 0, false);
    Ok(0)
}

/// PTRACE_ATTACH (`seize` None) or PTRACE_SEIZE with its options.
fn attach(
    cur: &CurrentTask,
    me: &Arc<Process>,
    t: Arc<Thread>,
    seize: Option<u32>,
) -> SysResult<usize> {
    let p = t.process();
    if Arc::ptr_eq(&p, me) || t.kstack.is_none() {
        return Err(Errno::EPERM);
    }
    if !may_access(&cur.process, &p) {
        return Err(Errno::EPERM);
    }
    if t.traced.load(Ordering::Acquire) || p.exiting.load(Ordering::Acquire) {
        return Err(Errno::EPERM);
    }
    ptrace::link(&t, me, seize.unwrap_or(0), seize.is_some());
    if seize.is_none() {
        let uid = me.uid.load(Ordering::Relaxed);
        signal::send_to_task(
            &t,
            sig::SIGSTOP,
            SigInfo::kill(sig::SIGSTOP, me.pid as i32, uid),
        );
    } else if p.stopped.load(Ordering::Acquire) {
        // Already group-stopped: the new tracer hears of it as a stop.
        t.ptrace.lock().group_gen = p.stop_gen.load(Ordering::Acquire).wrapping_sub(1);
        signal::kick(&t);
    }
    Ok(0)
}

fn find(pid: i32) -> SysResult<Arc<Thread>> {
    if pid <= 0 {
        return Err(Errno::ESRCH);
    }
    process::find_task(pid as u32).ok_or(Errno::ESRCH)
}

fn resume(f: Frozen, signo: u32, step: bool) {
    {
        let mut l = f.task.ptrace.lock();
        l.resume = Some(signo);
        l.singlestep = step;
        l.listening = false;
    }
    drop(f);
}

/// Reads (`write` false) or writes `buf` at `addr` in a tracee's address space; a write goes
/// through read-only mappings (breakpoints in text), copying private pages first.
fn remote_access(t: &Thread, addr: usize, buf: &mut [u8], write: bool) -> SysResult<()> {
    let mm = t.mm().ok_or(Errno::EIO)?;
    let mut a = mm.lock();
    if write {
        a.write_kernel(addr, buf)?;
        crate::arch::cpu::sync_icache();
        Ok(())
    } else {
        a.read(addr, buf)
    }
}

fn regset_request(t: &Held, set: bool, nt: u32, iov: usize) -> SysResult<usize> {
    let iov = UserPtr::<u64>::new(iov);
    let base = iov.read()? as usize;
    let len = iov.add(1).read()? as usize;
    // Linux's ptrace_regset: the table's size rules, then (for a write) the buffer's range,
    // and only then whether this CPU has the regset (its get/set: EINVAL).
    let (unit, max) = regset::layout(nt).ok_or(Errno::EINVAL)?;
    if !len.is_multiple_of(unit) {
        return Err(Errno::EINVAL);
    }
    let n = len.min(max);
    if set {
        UserSlice::new(base, n).access_ok()?;
        if regset::info(nt).is_none() {
            return Err(Errno::EINVAL);
        }
        // Linux's regsets copy their payload in piece by piece and check each piece as it
        // arrives: a bad value before the first unreadable byte is reported (EINVAL), and
        // the fault only if nothing before it was wrong.
        let data = UserSlice::new(base, n).read_prefix()?;
        if data.len() < svelt_abi::fp::regset::read_before_check(nt, n) {
            return Err(Errno::EFAULT);
        }
        regset::set(t, nt, &data)?;
        if data.len() < n {
            return Err(Errno::EFAULT);
        }
    } else {
        // Only what the regset produced is copied (the rest of the buffer is untouched, as
        // Linux's copy_regset_to_user); iov_len still becomes min(iov_len, maximum).
        let data = regset::get(t, nt)?;
        UserSlice::new(base, len).copy_out(&data[..n.min(data.len())])?;
    }
    iov.add(1).write(&(n as u64))?;
    Ok(0)
}

/// process_vm_readv / process_vm_writev (pid, local iovecs and count, remote iovecs and count,
/// flags).
pub fn process_vm(c: &super::Syscall, write: bool) -> SysResult<usize> {
    let cur = c.cur;
    let (pid, local, liovcnt): (i32, usize, usize) = (c.arg(0), c.arg(1), c.arg(2));
    let (remote, riovcnt, flags): (usize, usize, u64) = (c.arg(3), c.arg(4), c.arg(5));
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let lv = super::file::read_iovecs(local, liovcnt)?;
    let rv = super::file::read_iovecs(remote, riovcnt)?;
    let base_len = |v: &svelt_abi::uapi::fs::Iovec| (v.iov_base as usize, v.iov_len as usize);
    let t = find(pid)?;
    let p = t.process();
    if !may_access(&cur.process, &p) {
        return Err(Errno::EPERM);
    }
    let mm = t.mm().ok_or(Errno::ESRCH)?;
    let mut buf = [0u8; 512];
    let mut done = 0usize;
    let (mut li, mut loff) = (0usize, 0usize);
    'remote: for (rb, rl) in rv.iter().map(base_len) {
        let mut roff = 0;
        while roff < rl {
            while li < lv.len() && loff == lv[li].iov_len as usize {
                li += 1;
                loff = 0;
            }
            if li == lv.len() {
                break 'remote;
            }
            let (lb, ll) = base_len(&lv[li]);
            let n = (rl - roff).min(ll - loff).min(buf.len());
            let chunk = &mut buf[..n];
            // The remote address space is locked only around its own copy: a local copy may
            // fault and take this process's lock, which may be the same one.
            let mut local = UserSlice::new(lb, ll).skip(loff);
            let r = if write {
                match local.copy_in(chunk) {
                    Ok(()) => mm.lock().write(rb + roff, chunk),
                    Err(p) => Err(p.err),
                }
            } else {
                let r = mm.lock().read(rb + roff, chunk);
                r.and_then(|()| Ok(local.copy_out(chunk)?))
            };
            if let Err(err) = r {
                return Partial { done, err }.short_count();
            }
            done += n;
            roff += n;
            loff += n;
        }
    }
    Ok(done)
}
