//! Process and thread syscalls.

#![forbid(unsafe_code)]

use super::NoReturn;
use crate::arch::exception::TrapFrame;
use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::process::exit::{self, Which};
use crate::process::{self, CurrentTask};
use core::sync::atomic::Ordering;
use svelt_abi::uapi::cpumask;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::sched::{self as s, wstatus, CloneArgs};
use svelt_abi::uapi::sys;

pub fn clone(
    cur: &CurrentTask,
    flags: u64,
    newsp: usize,
    parent_tid: usize,
    tls: u64,
    child_tid: usize,
    tf: &TrapFrame,
) -> SysResult<usize> {
    let args = CloneArgs::from_legacy(
        flags,
        newsp as u64,
        parent_tid as u64,
        tls,
        child_tid as u64,
    );
    let tid = process::fork::do_clone(cur, &args, tf, true)?;
    pidfd_for(cur, &args, args.parent_tid, tid)?;
    Ok(tid as usize)
}

/// clone3: the argument block (at most a page, E2BIG past it; EINVAL below the first
/// version's 64 bytes) decoded as Linux's copy_clone_args_from_user and clone3_args_valid do.
/// A PID namespace to choose the child's pid in (set_tid) is not modelled: EINVAL.
pub fn clone3(cur: &CurrentTask, uargs: usize, size: usize, tf: &TrapFrame) -> SysResult<usize> {
    if size > crate::arch::mmu::PAGE_SIZE {
        return Err(Errno::E2BIG);
    }
    if size < s::CLONE_ARGS_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = alloc::vec![0u8; size];
    UserSlice::new(uargs, size)
        .copy_in(&mut bytes)
        .map_err(|p| p.err)?;
    let args = CloneArgs::from_clone3(&bytes)?;
    if args.set_tid != 0 {
        return Err(Errno::EINVAL);
    }
    let tid = process::fork::do_clone(cur, &args, tf, false)?;
    pidfd_for(cur, &args, args.pidfd, tid)?;
    Ok(tid as usize)
}

/// CLONE_PIDFD: a pidfd for the new process, its number stored at `at` (clone's parent_tid,
/// clone3's pidfd field).
fn pidfd_for(cur: &CurrentTask, args: &CloneArgs, at: u64, tid: u32) -> SysResult<()> {
    if args.flags & s::CLONE_PIDFD == 0 {
        return Ok(());
    }
    // Close-on-exec, as Linux makes it.
    let fd = super::file::pidfd_open(cur, tid as i32, 0)?;
    UserPtr::new(at as usize).write(&(fd as i32))
}

/// unshare: what Linux's ksys_unshare does, for a kernel with no namespaces. The implied flags
/// first (CLONE_NEWUSER takes CLONE_THREAD and CLONE_FS, CLONE_VM takes CLONE_SIGHAND which
/// takes CLONE_THREAD, CLONE_NEWNS takes CLONE_FS); bits outside the known set, or
/// thread/handler/memory sharing to undo in a process that shares them, are EINVAL
/// (check_unshare_flags). A new user namespace is EINVAL (CONFIG_USER_NS off); the other
/// namespaces ask for CAP_SYS_ADMIN first (EPERM), then are EINVAL as with them configured out.
/// CLONE_FS and CLONE_FILES give the caller its own copy of the fs context and descriptor
/// table; CLONE_SYSVSEM has no semaphore undo list to drop.
pub fn unshare(cur: &CurrentTask, flags: u64) -> SysResult<usize> {
    let mut f = flags;
    if f & s::CLONE_NEWUSER != 0 {
        f |= s::CLONE_THREAD | s::CLONE_FS;
    }
    if f & s::CLONE_VM != 0 {
        f |= s::CLONE_SIGHAND;
    }
    if f & s::CLONE_SIGHAND != 0 {
        f |= s::CLONE_THREAD;
    }
    if f & s::CLONE_NEWNS != 0 {
        f |= s::CLONE_FS;
    }
    const NAMESPACES: u64 = s::CLONE_NEWNS
        | s::CLONE_NEWUTS
        | s::CLONE_NEWIPC
        | s::CLONE_NEWNET
        | s::CLONE_NEWPID
        | s::CLONE_NEWCGROUP
        | s::CLONE_NEWTIME;
    const KNOWN: u64 = s::CLONE_THREAD
        | s::CLONE_FS
        | s::CLONE_SIGHAND
        | s::CLONE_VM
        | s::CLONE_FILES
        | s::CLONE_SYSVSEM
        | s::CLONE_NEWUSER
        | NAMESPACES;
    if f & !KNOWN != 0 {
        return Err(Errno::EINVAL);
    }
    if f & (s::CLONE_THREAD | s::CLONE_SIGHAND | s::CLONE_VM) != 0
        && cur.process().live_threads().len() > 1
    {
        return Err(Errno::EINVAL);
    }
    // Handlers shared with another process (clone with CLONE_SIGHAND but not CLONE_THREAD).
    if f & (s::CLONE_SIGHAND | s::CLONE_VM) != 0
        && alloc::sync::Arc::strong_count(&cur.sighand.lock()) > 1
    {
        return Err(Errno::EINVAL);
    }
    if f & s::CLONE_NEWUSER != 0 {
        return Err(Errno::EINVAL);
    }
    if f & NAMESPACES != 0 {
        return Err(if super::cred::privileged(cur) {
            Errno::EINVAL
        } else {
            Errno::EPERM
        });
    }
    if f & s::CLONE_FS != 0 {
        let copy = cur.fs().lock().clone();
        *cur.fs.lock() = alloc::sync::Arc::new(spin::Mutex::new(copy));
    }
    if f & s::CLONE_FILES != 0 {
        let copy = cur.files().lock().clone();
        *cur.files.lock() = alloc::sync::Arc::new(spin::Mutex::new(copy));
    }
    Ok(0)
}

/// On success the registers are the new program's (x0 zero).
pub fn execve(
    cur: &CurrentTask,
    path: usize,
    argv: usize,
    envp: usize,
    tf: &mut TrapFrame,
) -> SysResult<NoReturn> {
    process::exec::do_execve(cur, path, argv, envp, tf)?;
    crate::process::ptrace::exec_done(cur, cur.tid);
    Ok(NoReturn)
}

pub fn exit(cur: &CurrentTask, code: i32) -> SysResult<usize> {
    crate::process::gcs::thread_exit(cur);
    exit::do_exit(cur, wstatus::exited(code))
}

pub fn exit_group(cur: &CurrentTask, code: i32) -> SysResult<usize> {
    exit::do_group_exit(cur, wstatus::exited(code))
}

fn which_from_wait4(cur: &CurrentTask, pid: i32) -> Which {
    match pid {
        -1 => Which::Any,
        0 => Which::Pgid(cur.process().pgid.load(Ordering::Relaxed)),
        p if p < -1 => Which::Pgid(p.unsigned_abs()),
        p => Which::Pid(p as u32),
    }
}

pub fn wait4(
    cur: &CurrentTask,
    pid: i32,
    status: usize,
    options: u32,
    rusage: usize,
) -> SysResult<usize> {
    let options = s::wait4_options(options)?;
    if pid == i32::MIN {
        return Err(Errno::ESRCH);
    }
    match exit::do_wait(cur, which_from_wait4(cur, pid), options | s::WEXITED)? {
        Some(exit::Reported {
            pid,
            status: st,
            usage,
            ..
        }) => {
            if status != 0 {
                UserPtr::new(status).write(&(st as u32))?;
            }
            if rusage != 0 {
                UserPtr::new(rusage).write(&usage.rusage())?;
            }
            Ok(pid as usize)
        }
        None => Ok(0),
    }
}

pub fn waitid(
    cur: &CurrentTask,
    idtype: u32,
    id: i32,
    infop: usize,
    options: u32,
    rusage: usize,
) -> SysResult<usize> {
    let options = s::waitid_options(options)?;
    let which = match idtype {
        s::P_ALL => Which::Any,
        s::P_PID if id > 0 => Which::Pid(id as u32),
        s::P_PGID if id >= 0 => Which::Pgid(if id == 0 {
            cur.process().pgid.load(Ordering::Relaxed)
        } else {
            id as u32
        }),
        _ => return Err(Errno::EINVAL),
    };
    // waitid reports stops with WSTOPPED (same bit as WUNTRACED).
    let r = exit::do_wait(cur, which, options)?;
    if infop != 0 {
        let info = match r {
            Some(r) if r.trapped => {
                crate::process::signal::SigInfo::chld(
                    svelt_abi::uapi::signal::CLD_TRAPPED,
                    r.pid as i32,
                    0,
                    (r.status >> 8) & 0xffff,
                    0,
                    0,
                )
                .0
            }
            Some(r) => crate::process::signal::child_info(r.pid, r.status).0,
            None => [0u8; 128],
        };
        UserPtr::new(infop).write(&info)?;
    }
    if rusage != 0 {
        let usage = r.map(|r| r.usage).unwrap_or_default();
        UserPtr::new(rusage).write(&usage.rusage())?;
    }
    Ok(0)
}

pub fn getres(a: usize, b: usize, c: usize) -> SysResult<usize> {
    for p in [a, b, c] {
        UserPtr::new(p).write(&0u32)?;
    }
    Ok(0)
}

pub fn setpgid(cur: &CurrentTask, pid: i32, pgid: i32) -> SysResult<usize> {
    if pgid < 0 {
        return Err(Errno::EINVAL);
    }
    let me = cur.process();
    let target = if pid == 0 || pid as u32 == me.pid {
        me.clone()
    } else {
        let t = process::find_process(pid as u32).ok_or(Errno::ESRCH)?;
        if t.parent().is_none_or(|p| p.pid != me.pid) {
            return Err(Errno::ESRCH);
        }
        t
    };
    let g = if pgid == 0 { target.pid } else { pgid as u32 };
    target.pgid.store(g, Ordering::Relaxed);
    Ok(0)
}

pub fn getpgid(cur: &CurrentTask, pid: i32) -> SysResult<usize> {
    let p = if pid == 0 {
        cur.process()
    } else {
        process::find_pid(pid as u32).ok_or(Errno::ESRCH)?
    };
    Ok(p.pgid.load(Ordering::Relaxed) as usize)
}

pub fn getsid(cur: &CurrentTask, pid: i32) -> SysResult<usize> {
    let p = if pid == 0 {
        cur.process()
    } else {
        process::find_pid(pid as u32).ok_or(Errno::ESRCH)?
    };
    Ok(p.sid.load(Ordering::Relaxed) as usize)
}

pub fn setsid(cur: &CurrentTask) -> SysResult<usize> {
    let p = cur.process();
    if p.pgid.load(Ordering::Relaxed) == p.pid {
        return Err(Errno::EPERM);
    }
    p.sid.store(p.pid, Ordering::Relaxed);
    p.pgid.store(p.pid, Ordering::Relaxed);
    // A new session starts without a controlling terminal.
    p.ctty.store(0, Ordering::Relaxed);
    Ok(p.pid as usize)
}

pub fn set_tid_address(t: &CurrentTask, addr: usize) -> SysResult<usize> {
    t.clear_child_tid.store(addr, Ordering::Relaxed);
    Ok(t.tid as usize)
}

pub fn set_robust_list(cur: &CurrentTask, head: usize, len: usize) -> SysResult<usize> {
    if len != 24 {
        return Err(Errno::EINVAL);
    }
    cur.robust_list.store(head, Ordering::Relaxed);
    Ok(0)
}

pub fn get_robust_list(cur: &CurrentTask, pid: i32, head: usize, len: usize) -> SysResult<usize> {
    let found = affinity_target(pid)?;
    let t: &process::Thread = found.as_deref().unwrap_or(cur);
    let h = t.robust_list.load(Ordering::Relaxed);
    UserPtr::new(head).write(&(h as u64))?;
    UserPtr::new(len).write(&24u64)?;
    Ok(0)
}

/// The task `pid` names; `None` for 0, the caller itself.
fn affinity_target(pid: i32) -> SysResult<Option<alloc::sync::Arc<process::Thread>>> {
    if pid == 0 {
        Ok(None)
    } else {
        process::find_task(pid as u32).ok_or(Errno::ESRCH).map(Some)
    }
}

pub fn sched_getaffinity(cur: &CurrentTask, pid: i32, len: usize, mask: usize) -> SysResult<usize> {
    let found = affinity_target(pid)?;
    let t: &process::Thread = found.as_deref().unwrap_or(cur);
    let n = cpumask::getaffinity_len(len, crate::percpu::possible())?;
    let m = t.affinity.load().and(&crate::percpu::online_mask());
    let mut bytes = [0u8; cpumask::NR_CPUS / 8];
    m.write_le_bytes(&mut bytes[..n]);
    UserSlice::new(mask, n).copy_out(&bytes[..n])?;
    Ok(n)
}

pub fn sched_setaffinity(cur: &CurrentTask, pid: i32, len: usize, mask: usize) -> SysResult<usize> {
    let found = affinity_target(pid)?;
    let t: &process::Thread = found.as_deref().unwrap_or(cur);
    let mut b = [0u8; cpumask::NR_CPUS / 8];
    let n = cpumask::setaffinity_len(len, crate::percpu::possible());
    UserSlice::new(mask, n).copy_in(&mut b[..n])?;
    let m = cpumask::CpuMask::from_le_bytes(&b[..n]).and(&crate::percpu::online_mask());
    if m.is_empty() {
        return Err(Errno::EINVAL);
    }
    t.affinity.store(m);
    // Leave a CPU the task may no longer use at the next chance.
    if found.is_none() && !m.contains(crate::percpu::cpu_id()) {
        process::sched::set_need_resched();
    }
    Ok(0)
}

pub fn prlimit64(
    cur: &CurrentTask,
    pid: i32,
    resource: u32,
    new: usize,
    old: usize,
) -> SysResult<usize> {
    let p = if pid == 0 {
        cur.process()
    } else {
        process::find_process(pid as u32).ok_or(Errno::ESRCH)?
    };
    if resource >= sys::RLIM_NLIMITS {
        return Err(Errno::EINVAL);
    }
    let new = if new != 0 {
        Some(UserPtr::<sys::Rlimit64>::new(new).read()?.validate()?)
    } else {
        None
    };
    let mut limits = p.rlimits.lock();
    let cur = limits[resource as usize];
    if let Some(n) = new {
        // Everyone is root here, but the open-file limit still has its hard ceiling.
        if resource == sys::RLIMIT_NOFILE && n.rlim_max > crate::fs::NR_OPEN as u64 {
            return Err(Errno::EPERM);
        }
        limits[resource as usize] = n;
    }
    drop(limits);
    if old != 0 {
        UserPtr::new(old).write(&cur)?;
    }
    Ok(0)
}

/// getrusage: the process's use (its live and exited threads), its waited-for children's, or
/// the calling thread's; ru_maxrss is the process's largest resident size seen.
pub fn getrusage(cur: &CurrentTask, who: i32, buf: usize) -> SysResult<usize> {
    use crate::process::cputime;
    let p = cur.process();
    let times = match who {
        sys::RUSAGE_SELF => {
            let rss = cputime::sample_rss(&p, cur);
            let mut t = cputime::process_times(&p);
            t.maxrss_kb = rss;
            t
        }
        sys::RUSAGE_CHILDREN => cputime::children_times(&p),
        sys::RUSAGE_THREAD => {
            let mut t = cputime::task_times(cur.core());
            t.maxrss_kb = cputime::sample_rss(&p, cur);
            t
        }
        _ => return Err(Errno::EINVAL),
    };
    UserPtr::new(buf).write(&times.rusage())?;
    Ok(0)
}

pub fn prctl(
    cur: &CurrentTask,
    option: u32,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
) -> SysResult<usize> {
    use crate::process::seccomp;
    use svelt_abi::uapi::prctl::PrctlCmd;
    match PrctlCmd::decode(option, [a2, a3, a4, a5])? {
        PrctlCmd::GetSeccomp => seccomp::prctl_get_seccomp(cur),
        PrctlCmd::SetSeccomp { mode, filter } => {
            seccomp::prctl_set_seccomp(cur, mode, filter, super::cred::privileged(cur))
        }
        PrctlCmd::SetNoNewPrivs => seccomp::set_no_new_privs(cur),
        PrctlCmd::GetNoNewPrivs => seccomp::get_no_new_privs(cur),
        // The tagged address ABI, as arm64 Linux without MTE.
        PrctlCmd::SetTaggedAddr { enable } => {
            process::sched::set_current_tagged_addr(cur.core(), enable);
            Ok(0)
        }
        PrctlCmd::GetTaggedAddr => Ok(usize::from(cur.tagged_addr.load(Ordering::Relaxed))),
        PrctlCmd::SetName { name } => {
            // As strncpy_from_user of 15 bytes: a NUL ends it early, none is needed.
            let mut buf = [0u8; svelt_abi::uapi::procfs::TASK_COMM_LEN - 1];
            for (i, b) in buf.iter_mut().enumerate() {
                *b = UserPtr::<u8>::new(name.wrapping_add(i)).read()?;
                if *b == 0 {
                    break;
                }
            }
            cur.set_comm(&buf);
            Ok(0)
        }
        PrctlCmd::SetDumpable { .. } | PrctlCmd::SetPdeathsig { .. } => Ok(0),
        PrctlCmd::GetDumpable => Ok(1),
        PrctlCmd::GetName { buf } => {
            UserPtr::new(buf).write(&cur.comm())?;
            Ok(0)
        }
        PrctlCmd::SetVl { kind, arg } => {
            crate::task::fpstate::vec_set_current_vl(cur.core(), kind, arg)
        }
        PrctlCmd::GetVl { kind } => crate::task::fpstate::vec_get_current_vl(cur.core(), kind),
        PrctlCmd::GetShadowStack { ptr } => crate::process::gcs::prctl_get(cur, ptr),
        PrctlCmd::SetShadowStack { arg } => crate::process::gcs::prctl_set(cur, arg),
        PrctlCmd::LockShadowStack { arg } => crate::process::gcs::prctl_lock(cur, arg),
        // Every task holds the full bounding set (there is no PR_CAPBSET_DROP).
        PrctlCmd::CapbsetRead { .. } => Ok(1),
        PrctlCmd::SetTimerSlack { ns } => {
            let ns = if ns == 0 {
                cur.default_timer_slack_ns.load(Ordering::Relaxed)
            } else {
                ns as u64
            };
            cur.timer_slack_ns.store(ns, Ordering::Relaxed);
            Ok(0)
        }
        PrctlCmd::GetTimerSlack => Ok(cur.timer_slack_ns.load(Ordering::Relaxed) as usize),
        PrctlCmd::SetMceKill { policy } => {
            cur.mce_kill.store(policy, Ordering::Relaxed);
            Ok(0)
        }
        PrctlCmd::GetMceKill => Ok(cur.mce_kill.load(Ordering::Relaxed) as usize),
    }
}

/// personality: returns the previous persona; PERSONALITY_QUERY only asks.
pub fn personality(cur: &CurrentTask, persona: u32) -> SysResult<usize> {
    let p = cur.process();
    let old = if persona == svelt_abi::uapi::sys::PERSONALITY_QUERY {
        p.personality.load(Ordering::Relaxed)
    } else {
        p.personality.swap(persona, Ordering::Relaxed)
    };
    Ok(old as usize)
}
