//! /proc/PID/stat and /proc/PID/status (Linux's fs/proc/array.c): a task's state, ids,
//! signals and memory figures, a zombie's too, in Linux's layouts (`svelt_abi::uapi::procfs`).

#![forbid(unsafe_code)]

use super::base::Target;
use super::task_mmu::{MmFigures, PAGE};
use crate::fs::generic::Text;
use crate::process::{self, cputime, Process, Thread};
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::SysResult;
use svelt_abi::uapi::procfs::{self, StatusMem, TaskStat, TaskState, TaskStatus};

/// The state a task shows: stops first, then what the scheduler says.
fn task_state(p: &Process, t: &Thread) -> TaskState {
    if t.traced.load(Ordering::Relaxed) && t.ptrace.lock().stop.is_some() {
        TaskState::TracingStop
    } else if p.stopped.load(Ordering::Relaxed) {
        TaskState::Stopped
    } else {
        match t.state() {
            process::State::Running | process::State::Runnable => TaskState::Running,
            process::State::Sleeping => TaskState::Sleeping,
            // Waiting for a core dump to finish, as Linux's uninterruptible wait shows.
            process::State::Parked => TaskState::DiskSleep,
            process::State::Dead => TaskState::Zombie,
        }
    }
}

/// The signals a thread's handlers ignore and catch.
fn sig_dispositions(t: &Thread) -> (u64, u64) {
    let h = t.sighand();
    let h = h.lock();
    let (mut ign, mut catch) = (0u64, 0u64);
    for signo in 1..=svelt_abi::uapi::signal::NSIG {
        match h.get(signo).sa_handler {
            svelt_abi::uapi::signal::SIG_DFL => {}
            svelt_abi::uapi::signal::SIG_IGN => ign |= 1 << (signo - 1),
            _ => catch |= 1 << (signo - 1),
        }
    }
    (ign, catch)
}

pub(super) fn stat(t: Target, out: &mut Text) -> SysResult<()> {
    let p = t.process()?;
    let Some(th) = t.task_or_zombie()? else {
        return zombie_stat(&p, out);
    };
    let comm = th.comm();
    let state = task_state(&p, &th);
    let mm = th.mm().map(|m| MmFigures::of(&m, false));
    let (pending, blocked) = {
        let s = th.sig.lock();
        (s.pending_mask(), s.blocked)
    };
    let (ign, catch) = sig_dispositions(&th);
    let threads = p.live_threads().len();
    let leader = th.tid == p.pid;
    let exit_signal = if leader {
        p.exit_signal.load(Ordering::Relaxed) as i32
    } else {
        -1
    };
    let m = mm.as_ref();
    let info = m.map(|m| m.info).unwrap_or_default();
    // A thread's own time under task/, the whole process's (exited threads too) otherwise;
    // its waited-for children's either way (Linux's do_task_stat).
    let used = if t.tid.is_some() {
        cputime::task_times(th.core())
    } else {
        cputime::process_times(&p)
    };
    let children = cputime::children_times(&p);
    let s = TaskStat {
        pid: t.tid.unwrap_or(p.pid),
        comm: procfs::comm_str(&comm),
        state: state.letter(),
        ppid: p.ppid() as i32,
        pgrp: p.pgid.load(Ordering::Relaxed) as i32,
        session: p.sid.load(Ordering::Relaxed) as i32,
        tty_nr: 0,
        tpgid: -1,
        priority: 20 + i64::from(th.nice.load(Ordering::Relaxed)),
        nice: i64::from(th.nice.load(Ordering::Relaxed)),
        num_threads: threads as i64,
        utime: procfs::ns_to_clock_t(used.user_ns),
        stime: procfs::ns_to_clock_t(used.system_ns),
        cutime: procfs::ns_to_clock_t(children.user_ns) as i64,
        cstime: procfs::ns_to_clock_t(children.system_ns) as i64,
        starttime: procfs::ns_to_clock_t(th.start_ns),
        vsize: m.map_or(0, |m| m.total as u64),
        rss: m.map_or(0, |m| m.rss_pages() as u64),
        rsslim: p.rlimit(svelt_abi::uapi::sys::RLIMIT_RSS),
        startcode: info.start_code as u64,
        endcode: info.end_code as u64,
        startstack: info.start_stack as u64,
        signal: pending,
        blocked,
        sigignore: ign,
        sigcatch: catch,
        wchan: u64::from(state == TaskState::Sleeping && (t.tid.is_some() || threads < 2)),
        exit_signal,
        processor: th.cpu.load(Ordering::Relaxed) as i32,
        start_data: info.start_data as u64,
        end_data: info.end_data as u64,
        start_brk: m.map_or(0, |m| m.brk_start as u64),
        arg_start: m.map_or(0, |m| m.arg_start as u64),
        arg_end: m.map_or(0, |m| m.arg_end as u64),
        env_start: info.env_start as u64,
        env_end: info.env_end as u64,
        ..Default::default()
    };
    let _ = s.write(out);
    Ok(())
}

/// A zombie's stat: its name, state Z, its family and exit signal; no memory, no signals.
fn zombie_stat(p: &Process, out: &mut Text) -> SysResult<()> {
    let comm = *p.zombie_comm.lock();
    let used = cputime::process_times(p);
    let children = cputime::children_times(p);
    let s = TaskStat {
        pid: p.pid,
        utime: procfs::ns_to_clock_t(used.user_ns),
        stime: procfs::ns_to_clock_t(used.system_ns),
        cutime: procfs::ns_to_clock_t(children.user_ns) as i64,
        cstime: procfs::ns_to_clock_t(children.system_ns) as i64,
        comm: procfs::comm_str(&comm),
        state: TaskState::Zombie.letter(),
        ppid: p.ppid() as i32,
        pgrp: p.pgid.load(Ordering::Relaxed) as i32,
        session: p.sid.load(Ordering::Relaxed) as i32,
        tty_nr: 0,
        tpgid: -1,
        priority: 20,
        num_threads: 1,
        rsslim: p.rlimit(svelt_abi::uapi::sys::RLIMIT_RSS),
        exit_signal: p.exit_signal.load(Ordering::Relaxed) as i32,
        ..Default::default()
    };
    let _ = s.write(out);
    Ok(())
}

/// All capabilities of Linux 7.3 (CAP_LAST_CAP 40): what uid 0 holds.
const CAP_FULL: u64 = (1 << 41) - 1;

pub(super) fn status(t: Target, out: &mut Text) -> SysResult<()> {
    let p = t.process()?;
    let Some(th) = t.task_or_zombie()? else {
        return zombie_status(&p, out);
    };
    let comm = th.comm();
    let threads = p.live_threads();
    let (blocked, pending) = {
        let s = th.sig.lock();
        (s.blocked, s.pending_mask())
    };
    let shared = p.shared_sig.lock().pending_mask();
    let (ign, catch) = sig_dispositions(&th);
    let kb = |b: usize| (b / 1024) as u64;
    let mem = th.mm().map(|m| {
        let f = MmFigures::of(&m, true);
        let (text, lib) = f.text_lib();
        let rss = kb(f.rss_pages() * PAGE);
        StatusMem {
            peak: kb(f.total),
            size: kb(f.total),
            lck: kb(f.locked),
            hwm: rss,
            rss,
            rss_anon: kb(f.rss_anon * PAGE),
            rss_file: kb(f.rss_file * PAGE),
            rss_shmem: kb(f.rss_shmem * PAGE),
            data: kb(f.data),
            stk: kb(f.stack),
            exe: kb(text),
            lib: kb(lib),
            ..Default::default()
        }
    });
    let euid = p.euid.load(Ordering::Relaxed);
    let caps = if euid == 0 { CAP_FULL } else { 0 };
    let sc = &th.seccomp;
    let files = th.files();
    let fd_size = files.lock().capacity() as u32;
    // The thread's own switches (Linux's task_context_switch_counts).
    let switches = cputime::task_times(th.core());
    let s = TaskStatus {
        comm: procfs::comm_str(&comm),
        umask: th.fs().lock().umask,
        state: Some(task_state(&p, &th)),
        tgid: p.pid,
        pid: th.tid,
        ppid: p.ppid(),
        tracer_pid: crate::process::ptrace::tracer_pid(&th),
        uid: [
            p.uid.load(Ordering::Relaxed),
            euid,
            p.suid.load(Ordering::Relaxed),
            euid,
        ],
        gid: [0; 4],
        fd_size,
        pgid: p.pgid.load(Ordering::Relaxed),
        sid: p.sid.load(Ordering::Relaxed),
        mem,
        core_dumping: p.core_state.lock().is_some(),
        threads: threads.len() as u32,
        sigq: (
            u64::from((pending | shared).count_ones()),
            p.rlimit(svelt_abi::uapi::sys::RLIMIT_SIGPENDING),
        ),
        sig_pending: pending,
        shared_pending: shared,
        blocked,
        ignored: ign,
        caught: catch,
        cap_prm: caps,
        cap_eff: caps,
        cap_bnd: CAP_FULL,
        no_new_privs: sc.no_new_privs.load(Ordering::Relaxed),
        seccomp: u32::from(sc.mode.load(Ordering::Relaxed).min(2)),
        seccomp_filters: sc.filter_count() as u32,
        cpus_allowed: th.affinity.load(),
        voluntary_ctxt_switches: switches.nvcsw,
        nonvoluntary_ctxt_switches: switches.nivcsw,
        nr_cpu_ids: crate::percpu::possible() as u32,
        ..Default::default()
    };
    let _ = s.write(out);
    Ok(())
}

/// A zombie's status: name, state, ids and limits; no memory, files or signal lines' sources.
fn zombie_status(p: &Process, out: &mut Text) -> SysResult<()> {
    let comm = *p.zombie_comm.lock();
    let euid = p.euid.load(Ordering::Relaxed);
    let s = TaskStatus {
        comm: procfs::comm_str(&comm),
        state: Some(TaskState::Zombie),
        tgid: p.pid,
        pid: p.pid,
        ppid: p.ppid(),
        uid: [
            p.uid.load(Ordering::Relaxed),
            euid,
            p.suid.load(Ordering::Relaxed),
            euid,
        ],
        pgid: p.pgid.load(Ordering::Relaxed),
        sid: p.sid.load(Ordering::Relaxed),
        threads: 1,
        sigq: (0, p.rlimit(svelt_abi::uapi::sys::RLIMIT_SIGPENDING)),
        cap_bnd: CAP_FULL,
        nr_cpu_ids: crate::percpu::possible() as u32,
        ..Default::default()
    };
    let _ = s.write(out);
    Ok(())
}
