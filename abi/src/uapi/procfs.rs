//! The texts of /proc as Linux formats them (fs/proc/array.c, base.c, task_mmu.c, meminfo.c,
//! proc_namespace.c): pure formatting over plain values. The kernel gathers what it knows into
//! these structures and writes them to a [`Sink`]; the layouts are tested here on the host.

use crate::uapi::sys::{Rlimit64, RLIM_INFINITY, RLIM_NLIMITS};
use core::fmt::{self, Write};

/// Where /proc text goes: formatted text and raw bytes (a task's name is bytes, not UTF-8).
pub trait Sink: Write {
    fn raw(&mut self, bytes: &[u8]);
}

/// `USER_HZ`: the clock ticks of /proc/PID/stat's times (and AT_CLKTCK).
pub const USER_HZ: u64 = 100;

/// Nanoseconds as clock ticks (`nsec_to_clock_t`).
pub const fn ns_to_clock_t(ns: u64) -> u64 {
    ns / (1_000_000_000 / USER_HZ)
}

/// `TASK_COMM_LEN`: a task's name with its NUL.
pub const TASK_COMM_LEN: usize = 16;

/// The name in a task's comm buffer (up to the first NUL).
pub fn comm_str(comm: &[u8; TASK_COMM_LEN]) -> &[u8] {
    let n = comm.iter().position(|&b| b == 0).unwrap_or(TASK_COMM_LEN);
    &comm[..n]
}

/// A comm buffer holding `name` cut to 15 bytes (and at a NUL), as `set_task_comm` stores it.
pub fn comm_from(name: &[u8]) -> [u8; TASK_COMM_LEN] {
    let mut c = [0u8; TASK_COMM_LEN];
    let n = name
        .iter()
        .take(TASK_COMM_LEN - 1)
        .position(|&b| b == 0)
        .unwrap_or(name.len().min(TASK_COMM_LEN - 1));
    c[..n].copy_from_slice(&name[..n]);
    c
}

/// The name exec gives a task: the last component of the path it was asked to run
/// (`kbasename` of the file name: "/bin/" gives "").
pub fn exec_comm(path: &[u8]) -> [u8; TASK_COMM_LEN] {
    let base = match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    };
    comm_from(base)
}

/// What a scheduling state shows as (`task_state_array`); the letter is the first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Running,
    Sleeping,
    DiskSleep,
    Stopped,
    TracingStop,
    Dead,
    Zombie,
    Idle,
}

impl TaskState {
    pub fn text(self) -> &'static str {
        match self {
            TaskState::Running => "R (running)",
            TaskState::Sleeping => "S (sleeping)",
            TaskState::DiskSleep => "D (disk sleep)",
            TaskState::Stopped => "T (stopped)",
            TaskState::TracingStop => "t (tracing stop)",
            TaskState::Dead => "X (dead)",
            TaskState::Zombie => "Z (zombie)",
            TaskState::Idle => "I (idle)",
        }
    }
    pub fn letter(self) -> char {
        self.text().as_bytes()[0] as char
    }
}

/// The 52 fields of /proc/PID/stat and /proc/PID/task/TID/stat, in Linux's order
/// (`do_task_stat`). Fields Linux hides from readers that may not trace the task are the
/// caller's to zero.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskStat<'a> {
    pub pid: u32,
    pub comm: &'a [u8],
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    pub tty_nr: i32,
    pub tpgid: i32,
    pub flags: u32,
    pub minflt: u64,
    pub cminflt: u64,
    pub majflt: u64,
    pub cmajflt: u64,
    /// Clock ticks.
    pub utime: u64,
    pub stime: u64,
    pub cutime: i64,
    pub cstime: i64,
    pub priority: i64,
    pub nice: i64,
    pub num_threads: i64,
    /// Clock ticks since boot.
    pub starttime: u64,
    /// Bytes.
    pub vsize: u64,
    /// Pages.
    pub rss: u64,
    pub rsslim: u64,
    pub startcode: u64,
    pub endcode: u64,
    pub startstack: u64,
    pub kstkesp: u64,
    pub kstkeip: u64,
    /// The first 31 signals of the pending, blocked, ignored and caught sets.
    pub signal: u64,
    pub blocked: u64,
    pub sigignore: u64,
    pub sigcatch: u64,
    pub wchan: u64,
    pub exit_signal: i32,
    pub processor: i32,
    pub rt_priority: u32,
    pub policy: u32,
    pub delayacct_blkio_ticks: u64,
    pub guest_time: u64,
    pub cguest_time: i64,
    pub start_data: u64,
    pub end_data: u64,
    pub start_brk: u64,
    pub arg_start: u64,
    pub arg_end: u64,
    pub env_start: u64,
    pub env_end: u64,
    pub exit_code: i32,
}

/// The part of a signal set the stat line shows (decimal, for Linux 2.0's tools).
pub const fn stat_sigs(set: u64) -> u64 {
    set & 0x7fff_ffff
}

impl TaskStat<'_> {
    pub fn write(&self, out: &mut impl Sink) -> fmt::Result {
        write!(out, "{} (", self.pid)?;
        out.raw(self.comm);
        write!(
            out,
            ") {} {} {} {} {} {} {} {} {} {} {} ",
            self.state,
            self.ppid,
            self.pgrp,
            self.session,
            self.tty_nr,
            self.tpgid,
            self.flags,
            self.minflt,
            self.cminflt,
            self.majflt,
            self.cmajflt
        )?;
        write!(
            out,
            "{} {} {} {} {} {} {} 0 {} {} {} {} ",
            self.utime,
            self.stime,
            self.cutime,
            self.cstime,
            self.priority,
            self.nice,
            self.num_threads,
            self.starttime,
            self.vsize,
            self.rss,
            self.rsslim
        )?;
        write!(
            out,
            "{} {} {} {} {} {} {} {} {} {} 0 0 {} {} {} {} {} {} {} ",
            self.startcode,
            self.endcode,
            self.startstack,
            self.kstkesp,
            self.kstkeip,
            stat_sigs(self.signal),
            stat_sigs(self.blocked),
            stat_sigs(self.sigignore),
            stat_sigs(self.sigcatch),
            self.wchan,
            self.exit_signal,
            self.processor,
            self.rt_priority,
            self.policy,
            self.delayacct_blkio_ticks,
            self.guest_time,
            self.cguest_time
        )?;
        writeln!(
            out,
            "{} {} {} {} {} {} {} {}",
            self.start_data,
            self.end_data,
            self.start_brk,
            self.arg_start,
            self.arg_end,
            self.env_start,
            self.env_end,
            self.exit_code
        )
    }
}

/// A 64-signal set as /proc/PID/status shows it: 16 hex digits, signal 64 first.
pub fn write_sigset(out: &mut impl Write, header: &str, set: u64) -> fmt::Result {
    writeln!(out, "{header}:\t{set:016x}")
}

/// The memory lines of /proc/PID/status (`task_mem`), in kB.
#[derive(Clone, Copy, Debug, Default)]
pub struct StatusMem {
    pub peak: u64,
    pub size: u64,
    pub lck: u64,
    pub pin: u64,
    pub hwm: u64,
    pub rss: u64,
    pub rss_anon: u64,
    pub rss_file: u64,
    pub rss_shmem: u64,
    pub data: u64,
    pub stk: u64,
    pub exe: u64,
    pub lib: u64,
    pub pte: u64,
    pub swap: u64,
}

/// What /proc/PID/status shows, as far as it is not text of its own.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskStatus<'a> {
    pub comm: &'a [u8],
    pub umask: u32,
    pub state: Option<TaskState>,
    pub tgid: u32,
    pub pid: u32,
    pub ppid: u32,
    pub tracer_pid: u32,
    pub uid: [u32; 4],
    pub gid: [u32; 4],
    pub fd_size: u32,
    pub pgid: u32,
    pub sid: u32,
    /// None for a task without an address space (then no memory lines).
    pub mem: Option<StatusMem>,
    pub core_dumping: bool,
    pub threads: u32,
    pub sigq: (u64, u64),
    pub sig_pending: u64,
    pub shared_pending: u64,
    pub blocked: u64,
    pub ignored: u64,
    pub caught: u64,
    pub cap_inh: u64,
    pub cap_prm: u64,
    pub cap_eff: u64,
    pub cap_bnd: u64,
    pub cap_amb: u64,
    pub no_new_privs: bool,
    pub seccomp: u32,
    pub seccomp_filters: u32,
    /// CPUs allowed (one bit each) and how many CPU ids there are.
    pub cpus_allowed: crate::uapi::cpumask::CpuMask,
    pub nr_cpu_ids: u32,
    pub voluntary_ctxt_switches: u64,
    pub nonvoluntary_ctxt_switches: u64,
}

/// A task name with `\` and newline escaped, as /proc/PID/status shows it.
fn write_escaped_comm(out: &mut impl Sink, comm: &[u8]) {
    let mut start = 0;
    for (i, &b) in comm.iter().enumerate() {
        let esc: &[u8] = match b {
            b'\n' => b"\\n",
            b'\\' => b"\\\\",
            _ => continue,
        };
        out.raw(&comm[start..i]);
        out.raw(esc);
        start = i + 1;
    }
    out.raw(&comm[start..]);
}

fn kb_line(out: &mut impl Write, name: &str, kb: u64) -> fmt::Result {
    writeln!(out, "{name}:\t{kb:8} kB")
}

impl TaskStatus<'_> {
    pub fn write(&self, out: &mut impl Sink) -> fmt::Result {
        out.write_str("Name:\t")?;
        write_escaped_comm(out, self.comm);
        writeln!(out, "\nUmask:\t{:04o}", self.umask)?;
        let state = self.state.unwrap_or(TaskState::Running);
        write!(
            out,
            "State:\t{}\nTgid:\t{}\nNgid:\t0\nPid:\t{}\nPPid:\t{}\nTracerPid:\t{}\n",
            state.text(),
            self.tgid,
            self.pid,
            self.ppid,
            self.tracer_pid
        )?;
        let [u0, u1, u2, u3] = self.uid;
        let [g0, g1, g2, g3] = self.gid;
        write!(
            out,
            "Uid:\t{u0}\t{u1}\t{u2}\t{u3}\nGid:\t{g0}\t{g1}\t{g2}\t{g3}\nFDSize:\t{}\nGroups:\t \n",
            self.fd_size
        )?;
        write!(
            out,
            "NStgid:\t{}\nNSpid:\t{}\nNSpgid:\t{}\nNSsid:\t{}\nKthread:\t0\n",
            self.tgid, self.pid, self.pgid, self.sid
        )?;
        if let Some(m) = self.mem {
            for (name, kb) in [
                ("VmPeak", m.peak),
                ("VmSize", m.size),
                ("VmLck", m.lck),
                ("VmPin", m.pin),
                ("VmHWM", m.hwm),
                ("VmRSS", m.rss),
                ("RssAnon", m.rss_anon),
                ("RssFile", m.rss_file),
                ("RssShmem", m.rss_shmem),
                ("VmData", m.data),
                ("VmStk", m.stk),
                ("VmExe", m.exe),
                ("VmLib", m.lib),
                ("VmPTE", m.pte),
                ("VmSwap", m.swap),
            ] {
                kb_line(out, name, kb)?;
            }
            kb_line(out, "HugetlbPages", 0)?;
            writeln!(out, "CoreDumping:\t{}", u8::from(self.core_dumping))?;
            out.write_str("THP_enabled:\t0\nuntag_mask:\t0xffffffffffffffff\n")?;
        }
        writeln!(
            out,
            "Threads:\t{}\nSigQ:\t{}/{}",
            self.threads, self.sigq.0, self.sigq.1
        )?;
        write_sigset(out, "SigPnd", self.sig_pending)?;
        write_sigset(out, "ShdPnd", self.shared_pending)?;
        write_sigset(out, "SigBlk", self.blocked)?;
        write_sigset(out, "SigIgn", self.ignored)?;
        write_sigset(out, "SigCgt", self.caught)?;
        for (name, caps) in [
            ("CapInh", self.cap_inh),
            ("CapPrm", self.cap_prm),
            ("CapEff", self.cap_eff),
            ("CapBnd", self.cap_bnd),
            ("CapAmb", self.cap_amb),
        ] {
            writeln!(out, "{name}:\t{caps:016x}")?;
        }
        write!(
            out,
            "NoNewPrivs:\t{}\nSeccomp:\t{}\nSeccomp_filters:\t{}\n",
            u8::from(self.no_new_privs),
            self.seccomp,
            self.seccomp_filters
        )?;
        out.write_str("Speculation_Store_Bypass:\tunknown\nSpeculationIndirectBranch:\tunknown\n")?;
        out.write_str("Cpus_allowed:\t")?;
        write_cpu_mask(out, &self.cpus_allowed, self.nr_cpu_ids as usize)?;
        out.write_str("\nCpus_allowed_list:\t")?;
        let nr = crate::uapi::cpumask::CpuMask::first(self.nr_cpu_ids as usize);
        write_cpu_list(out, &self.cpus_allowed.and(&nr))?;
        // One memory node (node 0).
        out.write_str("\nMems_allowed:\t1\nMems_allowed_list:\t0\n")?;
        writeln!(
            out,
            "voluntary_ctxt_switches:\t{}\nnonvoluntary_ctxt_switches:\t{}",
            self.voluntary_ctxt_switches, self.nonvoluntary_ctxt_switches
        )
    }
}

pub use crate::uapi::cpumask::{write_cpu_list, write_cpu_mask};

/// One line of /proc/PID/maps, up to the name (`show_vma_header_prefix`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapsLine {
    pub start: u64,
    pub end: u64,
    pub read: bool,
    pub write: bool,
    pub exec: bool,
    pub shared: bool,
    /// The file offset in bytes (0 for anonymous memory).
    pub offset: u64,
    pub major: u32,
    pub minor: u32,
    pub ino: u64,
}

/// The column names start at: the header is padded to this width, then one space.
const MAPS_NAME_COLUMN: usize = 25 + 8 * 6 - 1;

impl MapsLine {
    /// The line with its newline. Without a name it ends with the space after the inode, as
    /// Linux's does.
    pub fn write(&self, out: &mut impl Sink, name: &[u8]) -> fmt::Result {
        let mut head = Counted { out, n: 0 };
        write!(
            head,
            "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
            self.start,
            self.end,
            if self.read { 'r' } else { '-' },
            if self.write { 'w' } else { '-' },
            if self.exec { 'x' } else { '-' },
            if self.shared { 's' } else { 'p' },
            self.offset,
            self.major,
            self.minor,
            self.ino
        )?;
        let n = head.n;
        if !name.is_empty() {
            for _ in n..MAPS_NAME_COLUMN {
                out.write_char(' ')?;
            }
            out.write_char(' ')?;
            out.raw(name);
        }
        out.write_char('\n')
    }
}

/// Counts what passes through to the sink.
struct Counted<'a, S> {
    out: &'a mut S,
    n: usize,
}

impl<S: Write> Write for Counted<'_, S> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.n += s.len();
        self.out.write_str(s)
    }
}

/// The per-mapping figures of /proc/PID/smaps, in kB.
#[derive(Clone, Copy, Debug, Default)]
pub struct SmapsFields {
    pub size: u64,
    pub rss: u64,
    pub shared_clean: u64,
    pub shared_dirty: u64,
    pub private_clean: u64,
    pub private_dirty: u64,
    pub anonymous: u64,
    pub locked: u64,
}

/// A VMA's `VmFlags:` mnemonics from its rights and kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct VmFlags {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
    pub shared: bool,
    /// The rights it may be given by mprotect (mr mw me: always, for private mappings).
    pub may_write: bool,
    pub stack: bool,
    pub locked: bool,
}

fn smaps_kb(out: &mut impl Write, name: &str, kb: u64) -> fmt::Result {
    writeln!(out, "{:<16}{kb:8} kB", Label(name))
}

/// A label and its colon ("Size" shows as "Size:"), padded to the field's width.
struct Label<'a>(&'a str);

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = f.width().unwrap_or(0);
        f.write_str(self.0)?;
        f.write_str(":")?;
        for _ in self.0.len() + 1..width {
            f.write_str(" ")?;
        }
        Ok(())
    }
}

impl SmapsFields {
    /// The lines after a mapping's maps line (`show_smap`), ending with VmFlags.
    pub fn write(&self, out: &mut impl Write, flags: VmFlags) -> fmt::Result {
        smaps_kb(out, "Size", self.size)?;
        smaps_kb(out, "KernelPageSize", 4)?;
        smaps_kb(out, "MMUPageSize", 4)?;
        smaps_kb(out, "Rss", self.rss)?;
        // Pss: Svelt does not count sharers; a page is counted whole.
        smaps_kb(out, "Pss", self.rss)?;
        smaps_kb(out, "Pss_Dirty", self.shared_dirty + self.private_dirty)?;
        smaps_kb(out, "Shared_Clean", self.shared_clean)?;
        smaps_kb(out, "Shared_Dirty", self.shared_dirty)?;
        smaps_kb(out, "Private_Clean", self.private_clean)?;
        smaps_kb(out, "Private_Dirty", self.private_dirty)?;
        smaps_kb(out, "Referenced", self.rss)?;
        smaps_kb(out, "Anonymous", self.anonymous)?;
        for name in [
            "KSM",
            "LazyFree",
            "AnonHugePages",
            "ShmemPmdMapped",
            "FilePmdMapped",
            "Shared_Hugetlb",
            "Private_Hugetlb",
            "Swap",
            "SwapPss",
        ] {
            smaps_kb(out, name, 0)?;
        }
        smaps_kb(out, "Locked", self.locked)?;
        writeln!(out, "{:<16}{:8}", Label("THPeligible"), 0)?;
        out.write_str("VmFlags:")?;
        for (on, mn) in [
            (flags.read, "rd"),
            (flags.write, "wr"),
            (flags.exec, "ex"),
            (flags.shared, "sh"),
            (true, "mr"),
            (flags.may_write, "mw"),
            (true, "me"),
            (flags.shared, "ms"),
            (flags.stack, "gd"),
            (flags.locked, "lo"),
            (!flags.shared && flags.write, "ac"),
        ] {
            if on {
                write!(out, " {mn}")?;
            }
        }
        out.write_str(" \n")
    }
}

const LIMIT_NAMES: [(&str, &str); RLIM_NLIMITS as usize] = [
    ("Max cpu time", "seconds"),
    ("Max file size", "bytes"),
    ("Max data size", "bytes"),
    ("Max stack size", "bytes"),
    ("Max core file size", "bytes"),
    ("Max resident set", "bytes"),
    ("Max processes", "processes"),
    ("Max open files", "files"),
    ("Max locked memory", "bytes"),
    ("Max address space", "bytes"),
    ("Max file locks", "locks"),
    ("Max pending signals", "signals"),
    ("Max msgqueue size", "bytes"),
    ("Max nice priority", ""),
    ("Max realtime priority", ""),
    ("Max realtime timeout", "us"),
];

struct Limit(u64);

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == RLIM_INFINITY {
            f.pad("unlimited")
        } else {
            fmt::Display::fmt(&self.0, f)
        }
    }
}

/// /proc/PID/limits: Linux's table, one line per resource.
pub fn write_limits(
    out: &mut impl Write,
    limits: &[Rlimit64; RLIM_NLIMITS as usize],
) -> fmt::Result {
    writeln!(
        out,
        "{:<25} {:<20} {:<20} {:<10}",
        "Limit", "Soft Limit", "Hard Limit", "Units"
    )?;
    for ((name, unit), l) in LIMIT_NAMES.iter().zip(limits) {
        write!(
            out,
            "{:<25} {:<20} {:<20} ",
            name,
            Limit(l.rlim_cur),
            Limit(l.rlim_max)
        )?;
        if !unit.is_empty() {
            write!(out, "{unit:<10}")?;
        }
        out.write_char('\n')?;
    }
    Ok(())
}

/// One /proc/meminfo line: the label and colon in 16 columns, the value in 8, then " kB".
pub fn write_meminfo_line(out: &mut impl Write, name: &str, kb: u64) -> fmt::Result {
    writeln!(out, "{:<16}{kb:8} kB", Label(name))
}

/// What one row of /proc/interrupts counts.
pub enum IrqKind<'a> {
    /// An interrupt from the GIC: its INTID, whether it is level-triggered, its handler's name.
    Gic {
        intid: u32,
        level: bool,
        name: &'a str,
    },
    /// Inter-processor interrupt `n` and what it asks.
    Ipi { n: u32, name: &'a str },
}

/// One row of /proc/interrupts: what it counts and the count on each CPU shown.
pub struct IrqRow<'a> {
    pub kind: IrqKind<'a>,
    pub counts: &'a [u64],
}

/// /proc/interrupts laid out as Linux 7.3's show_interrupts does (the label column 3 wide, the
/// counts 10 wide each followed by a space; IPIs are interrupts like any other, labelled IPIn
/// and followed by their name alone): a header of CPU columns,
/// then the device interrupts (numbered here by INTID: Svelt has no virtual IRQ numbers) with
/// the chip, INTID, trigger and handler, then the IPIs.
pub fn write_interrupts(out: &mut impl Write, cpus: &[usize], rows: &[IrqRow]) -> fmt::Result {
    const PREC: usize = 3;
    write!(out, "{:w$}", "", w = PREC + 8)?;
    for c in cpus {
        write!(out, "CPU{c:<8}")?;
    }
    out.write_char('\n')?;
    for r in rows {
        match r.kind {
            IrqKind::Gic { intid, .. } => write!(out, "{intid:>w$}: ", w = PREC)?,
            IrqKind::Ipi { n, .. } => write!(out, "{:>w$}{n}:", "IPI", w = PREC - 1)?,
        }
        for n in r.counts {
            write!(out, "{n:>10} ")?;
        }
        match r.kind {
            IrqKind::Gic { intid, level, name } => {
                let trigger = if level { "Level" } else { "Edge" };
                writeln!(
                    out,
                    " {:>8} {intid:>w$} {trigger:<8}  {name}",
                    "GICv3",
                    w = PREC
                )?
            }
            IrqKind::Ipi { name, .. } => writeln!(out, " {name}")?,
        }
    }
    Ok(())
}

/// /proc/uptime: seconds since boot and seconds the CPUs spent idle, to hundredths.
pub fn write_uptime(out: &mut impl Write, up_ns: u64, idle_ns: u64) -> fmt::Result {
    let cs = |ns: u64| (ns / 1_000_000_000, ns / 10_000_000 % 100);
    let (us, uc) = cs(up_ns);
    let (is, ic) = cs(idle_ns);
    writeln!(out, "{us}.{uc:02} {is}.{ic:02}")
}

/// /proc/loadavg with the three averages in hundredths (Svelt keeps none: 0), the runnable
/// and total scheduling entities and the last PID handed out.
pub fn write_loadavg(
    out: &mut impl Write,
    avg: [u64; 3],
    running: u64,
    total: u64,
    last_pid: u32,
) -> fmt::Result {
    for a in avg {
        write!(out, "{}.{:02} ", a / 100, a % 100)?;
    }
    writeln!(out, "{running}/{total} {last_pid}")
}

/// One line of /proc/PID/mountinfo (`show_mountinfo`): the per-mount options are the mount
/// flags, the per-superblock options `super_opts`.
#[derive(Clone, Copy, Debug)]
pub struct MountInfo<'a> {
    pub id: u32,
    pub parent: u32,
    pub major: u32,
    pub minor: u32,
    pub root: &'a str,
    pub mount_point: &'a str,
    pub mount_opts: &'a str,
    pub fstype: &'a str,
    pub source: &'a str,
    pub super_opts: &'a str,
}

/// Spaces, tabs, newlines and backslashes in paths are written as octal escapes (`mangle`).
fn write_mangled(out: &mut impl Write, s: &str) -> fmt::Result {
    for c in s.chars() {
        match c {
            ' ' | '\t' | '\n' | '\\' => write!(out, "\\{:03o}", c as u32)?,
            c => out.write_char(c)?,
        }
    }
    Ok(())
}

impl MountInfo<'_> {
    pub fn write(&self, out: &mut impl Write) -> fmt::Result {
        write!(
            out,
            "{} {} {}:{} ",
            self.id, self.parent, self.major, self.minor
        )?;
        write_mangled(out, self.root)?;
        out.write_char(' ')?;
        write_mangled(out, self.mount_point)?;
        write!(out, " {} - {} ", self.mount_opts, self.fstype)?;
        write_mangled(out, self.source)?;
        writeln!(out, " {}", self.super_opts)
    }
}

/// How many bytes of the argument area /proc/PID/cmdline shows (`get_mm_cmdline`). `area`
/// holds [arg_start, env_end) when the environment directly follows the arguments, else
/// [arg_start, arg_end); `arg_len` is arg_end - arg_start. A program that overwrote the NUL
/// ending its last argument (setproctitle) gets everything up to the first NUL, which may lie
/// in the environment; otherwise the arguments are shown as they are.
pub fn cmdline_len(area: &[u8], arg_len: usize) -> usize {
    let arg_len = arg_len.min(area.len());
    if arg_len == 0 {
        return 0;
    }
    if area[arg_len - 1] == 0 {
        return arg_len;
    }
    area.iter().position(|&b| b == 0).unwrap_or(area.len())
}

/// The major:minor of an encoded device number (`new_encode_dev`'s layout, as st_dev).
pub const fn dev_split(dev: u64) -> (u32, u32) {
    (
        ((dev >> 8) & 0xfff) as u32,
        ((dev & 0xff) | ((dev >> 12) & 0xfff00)) as u32,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn interrupts_columns_line_up_as_linux_s() {
        let mut s = std::string::String::new();
        let rows = [
            IrqRow {
                kind: IrqKind::Gic {
                    intid: 27,
                    level: true,
                    name: "arch_timer",
                },
                counts: &[1234, 5],
            },
            IrqRow {
                kind: IrqKind::Ipi {
                    n: 0,
                    name: "Rescheduling interrupts",
                },
                counts: &[7, 0],
            },
        ];
        write_interrupts(&mut s, &[0, 1], &rows).unwrap();
        assert_eq!(
            s,
            "           CPU0       CPU1       \n \
              27:       1234          5     GICv3  27 Level     arch_timer\n\
             IPI0:         7          0  Rescheduling interrupts\n"
        );
    }
    use super::*;
    use std::string::{String, ToString};
    use std::vec::Vec;

    #[derive(Default)]
    struct Buf(Vec<u8>);
    impl Write for Buf {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.extend_from_slice(s.as_bytes());
            Ok(())
        }
    }
    impl Sink for Buf {
        fn raw(&mut self, b: &[u8]) {
            self.0.extend_from_slice(b);
        }
    }
    impl Buf {
        fn text(&self) -> String {
            String::from_utf8(self.0.clone()).unwrap()
        }
    }

    #[test]
    fn stat_has_52_fields_in_order() {
        let s = TaskStat {
            pid: 42,
            comm: b"my prog",
            state: 'S',
            ppid: 1,
            pgrp: 42,
            session: 7,
            tpgid: -1,
            num_threads: 3,
            starttime: 123,
            vsize: 4096,
            rss: 2,
            rsslim: u64::MAX,
            exit_signal: 17,
            arg_start: 100,
            arg_end: 110,
            env_start: 110,
            env_end: 120,
            ..Default::default()
        };
        let mut b = Buf::default();
        s.write(&mut b).unwrap();
        let t = b.text();
        assert!(t.ends_with('\n'));
        let (head, rest) = t.trim_end().split_once(") ").unwrap();
        assert_eq!(head, "42 (my prog");
        let f: Vec<&str> = rest.split(' ').collect();
        // pid and comm, then 50 more.
        assert_eq!(f.len() + 2, 52);
        let field = |n: usize| f[n - 3];
        assert_eq!(field(3), "S");
        assert_eq!(field(4), "1");
        assert_eq!(field(5), "42");
        assert_eq!(field(6), "7");
        assert_eq!(field(8), "-1");
        assert_eq!(field(20), "3");
        assert_eq!(field(21), "0");
        assert_eq!(field(22), "123");
        assert_eq!(field(23), "4096");
        assert_eq!(field(24), "2");
        assert_eq!(field(25), u64::MAX.to_string());
        assert_eq!(field(38), "17");
        assert_eq!(field(48), "100");
        assert_eq!(field(49), "110");
        assert_eq!(field(50), "110");
        assert_eq!(field(51), "120");
        assert_eq!(field(52), "0");
    }

    #[test]
    fn stat_shows_only_the_first_31_signals() {
        let s = TaskStat {
            comm: b"x",
            state: 'R',
            signal: u64::MAX,
            ..Default::default()
        };
        let mut b = Buf::default();
        s.write(&mut b).unwrap();
        let t = b.text();
        let f: Vec<&str> = t.split_once(") ").unwrap().1.split(' ').collect();
        assert_eq!(f[31 - 3], "2147483647");
    }

    #[test]
    fn comm_is_cut_to_15_bytes_and_at_nul() {
        assert_eq!(
            comm_str(&comm_from(b"0123456789abcdefgh")),
            b"0123456789abcde"
        );
        assert_eq!(comm_str(&comm_from(b"ab\0cd")), b"ab");
        assert_eq!(comm_str(&exec_comm(b"/bin/tests/procfs")), b"procfs");
        assert_eq!(comm_str(&exec_comm(b"procfs")), b"procfs");
        assert_eq!(comm_str(&exec_comm(b"/bin/")), b"");
    }

    fn status_text(s: &TaskStatus) -> String {
        let mut b = Buf::default();
        s.write(&mut b).unwrap();
        b.text()
    }

    #[test]
    fn status_lines_in_linux_order() {
        let s = TaskStatus {
            comm: b"a\nb\\",
            umask: 0o22,
            state: Some(TaskState::Sleeping),
            tgid: 5,
            pid: 6,
            ppid: 1,
            fd_size: 64,
            mem: Some(StatusMem {
                size: 1000,
                rss: 20,
                ..Default::default()
            }),
            threads: 2,
            sigq: (0, 7000),
            blocked: 1 << 9,
            cpus_allowed: crate::uapi::cpumask::CpuMask::FULL,
            nr_cpu_ids: 2,
            ..Default::default()
        };
        let t = status_text(&s);
        let names: Vec<&str> = t.lines().map(|l| l.split(':').next().unwrap()).collect();
        let want = [
            "Name",
            "Umask",
            "State",
            "Tgid",
            "Ngid",
            "Pid",
            "PPid",
            "TracerPid",
            "Uid",
            "Gid",
            "FDSize",
            "Groups",
            "NStgid",
            "NSpid",
            "NSpgid",
            "NSsid",
            "Kthread",
            "VmPeak",
            "VmSize",
            "VmLck",
            "VmPin",
            "VmHWM",
            "VmRSS",
            "RssAnon",
            "RssFile",
            "RssShmem",
            "VmData",
            "VmStk",
            "VmExe",
            "VmLib",
            "VmPTE",
            "VmSwap",
            "HugetlbPages",
            "CoreDumping",
            "THP_enabled",
            "untag_mask",
            "Threads",
            "SigQ",
            "SigPnd",
            "ShdPnd",
            "SigBlk",
            "SigIgn",
            "SigCgt",
            "CapInh",
            "CapPrm",
            "CapEff",
            "CapBnd",
            "CapAmb",
            "NoNewPrivs",
            "Seccomp",
            "Seccomp_filters",
            "Speculation_Store_Bypass",
            "SpeculationIndirectBranch",
            "Cpus_allowed",
            "Cpus_allowed_list",
            "Mems_allowed",
            "Mems_allowed_list",
            "voluntary_ctxt_switches",
            "nonvoluntary_ctxt_switches",
        ];
        assert_eq!(names, want);
        assert!(t.starts_with("Name:\ta\\nb\\\\\nUmask:\t0022\nState:\tS (sleeping)\n"));
        assert!(t.contains("\nVmSize:\t    1000 kB\n"));
        assert!(t.contains("\nVmRSS:\t      20 kB\n"));
        assert!(t.contains("\nGroups:\t \n"));
        assert!(t.contains("\nSigBlk:\t0000000000000200\n"));
        assert!(t.contains("\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n"));
        assert!(t.contains("\nSigQ:\t0/7000\n"));
        // Without an address space, no memory lines.
        let t = status_text(&TaskStatus { mem: None, ..s });
        assert!(!t.contains("VmSize") && !t.contains("CoreDumping"));
    }

    fn maps(l: MapsLine, name: &[u8]) -> String {
        let mut b = Buf::default();
        l.write(&mut b, name).unwrap();
        b.text()
    }

    #[test]
    fn maps_lines_as_linux_prints_them() {
        let l = MapsLine {
            start: 0x400000,
            end: 0x452000,
            read: true,
            exec: true,
            offset: 0,
            major: 0,
            minor: 1,
            ino: 1234,
            ..Default::default()
        };
        let t = maps(l, b"/bin/tests/procfs");
        assert_eq!(t.find("/bin").unwrap(), 73);
        assert!(t.starts_with("00400000-00452000 r-xp 00000000 00:01 1234 "));
        assert!(t.ends_with(" /bin/tests/procfs\n"));
        // No name: the line ends with a space after the inode.
        let anon = MapsLine {
            start: 0xffff_f7de_0000,
            end: 0xffff_f7e0_0000,
            read: true,
            write: true,
            ..Default::default()
        };
        assert_eq!(
            maps(anon, b""),
            "fffff7de0000-fffff7e00000 rw-p 00000000 00:00 0 \n"
        );
        assert_eq!(maps(anon, b"[stack]").len(), 73 + 7 + 1);
    }

    #[test]
    fn smaps_fields() {
        let mut s = String::new();
        SmapsFields {
            size: 132,
            rss: 8,
            private_dirty: 8,
            anonymous: 8,
            ..Default::default()
        }
        .write(
            &mut s,
            VmFlags {
                read: true,
                write: true,
                may_write: true,
                stack: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(s.starts_with("Size:                132 kB\nKernelPageSize:        4 kB\n"));
        assert!(s.contains("\nPrivate_Dirty:         8 kB\n"));
        assert!(s.contains("\nTHPeligible:           0\n"));
        assert!(s.ends_with("VmFlags: rd wr mr mw me gd ac \n"));
        for l in s.lines().filter(|l| l.ends_with(" kB")) {
            assert_eq!(l.len(), 27, "{l:?}");
        }
    }

    #[test]
    fn limits_table() {
        let mut l = [Rlimit64::INFINITY; RLIM_NLIMITS as usize];
        l[7] = Rlimit64 {
            rlim_cur: 1024,
            rlim_max: 4096,
        };
        let mut s = String::new();
        write_limits(&mut s, &l).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 17);
        assert_eq!(
            lines[0],
            "Limit                     Soft Limit           Hard Limit           Units     "
        );
        assert_eq!(
            lines[8],
            "Max open files            1024                 4096                 files     "
        );
        assert_eq!(
            lines[14],
            "Max nice priority         unlimited            unlimited            "
        );
    }

    #[test]
    fn meminfo_uptime_loadavg() {
        let mut s = String::new();
        write_meminfo_line(&mut s, "MemTotal", 1024).unwrap();
        write_meminfo_line(&mut s, "Active(anon)", 12).unwrap();
        assert_eq!(
            s,
            "MemTotal:           1024 kB\nActive(anon):         12 kB\n"
        );
        let mut s = String::new();
        write_uptime(&mut s, 12_345_678_901, 5_000_000).unwrap();
        assert_eq!(s, "12.34 0.00\n");
        let mut s = String::new();
        write_loadavg(&mut s, [0, 5, 123], 1, 40, 77).unwrap();
        assert_eq!(s, "0.00 0.05 1.23 1/40 77\n");
    }

    #[test]
    fn mountinfo_line() {
        let mut s = String::new();
        MountInfo {
            id: 22,
            parent: 1,
            major: 0,
            minor: 21,
            root: "/",
            mount_point: "/mnt/a b",
            mount_opts: "rw,relatime",
            fstype: "tmpfs",
            source: "tmpfs",
            super_opts: "rw",
        }
        .write(&mut s)
        .unwrap();
        assert_eq!(s, "22 1 0:21 / /mnt/a\\040b rw,relatime - tmpfs tmpfs rw\n");
    }

    #[test]
    fn cmdline_follows_setproctitle() {
        assert_eq!(cmdline_len(b"ab\0c\0E=1\0", 5), 5);
        // The last argument's NUL overwritten: up to the first NUL, into the environment.
        assert_eq!(cmdline_len(b"ab c dE=1\0", 5), 9);
        assert_eq!(cmdline_len(b"abcd", 4), 4);
        assert_eq!(cmdline_len(b"", 0), 0);
        assert_eq!(cmdline_len(b"x\0", 0), 0);
    }

    #[test]
    fn device_numbers() {
        assert_eq!(dev_split(1), (0, 1));
        assert_eq!(dev_split((5 << 8) | 1), (5, 1));
        assert_eq!(dev_split((259 << 8) | 0x12 | (0x345 << 20)), (259, 0x34512));
    }
}
