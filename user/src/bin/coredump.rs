//! ELF core dumps with Linux's default core_pattern ("core" in the working directory): with
//! RLIMIT_CORE 0 a SIGSEGV or SIGABRT kills without a core (no core bit, no file); with it
//! unlimited the core bit is set and `core` is an ELF core whose notes and memory hold what the
//! child left: NT_PRSTATUS (signal, pid, x registers, pc), NT_SIGINFO, NT_AUXV, a PT_LOAD with a
//! pattern the child wrote, one NT_PRSTATUS per thread, and NT_ARM_SVE with the Z/P registers.
//! Each child runs in its own directory on a tmpfs.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, Ordering};
use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sve::{self, SveRegs};
use svelt_user::sys::*;
use svelt_user::*;

core::arch::global_asm!(
    ".text",
    ".global coredump_fault",
    "coredump_fault:",
    // x1 = 0: a store to address 0 (SIGSEGV, SEGV_MAPERR) with x0..x7 as the caller set them.
    "    str x0, [x1]",
    "    b coredump_fault",
);

extern "C" {
    fn coredump_fault(x0: u64, x1: u64, x2: u64, x3: u64, x4: u64, x5: u64, x6: u64, x7: u64) -> !;
}

const BASE: &str = "/coredump.d";
static MOUNTED: AtomicBool = AtomicBool::new(false);
const RLIMIT_CORE: u32 = 4;
const X: [u64; 8] = [
    0x0101_0000_dead_0000,
    0,
    0x0202_0000_dead_0002,
    0x0303_0000_dead_0003,
    0x0404_0000_dead_0004,
    0x0505_0000_dead_0005,
    0x0606_0000_dead_0006,
    0x0707_0000_dead_0007,
];
const NT_PRSTATUS: u32 = 1;
const NT_PRPSINFO: u32 = 3;
const NT_AUXV: u32 = 6;
const NT_SIGINFO: u32 = 0x5349_4749;
const NT_FILE: u32 = 0x4649_4c45;
const NT_ARM_SVE: u32 = 0x405;
const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const AT_PAGESZ: u64 = 6;

/// A fresh directory for one test's child, on a tmpfs mounted at BASE.
fn test_dir(name: &str) -> Result<String, String> {
    match sys::mkdirat(AT_FDCWD, BASE, 0o755) {
        Ok(_) | Err(EEXIST) => {}
        Err(e) => return Err(format!("mkdir {BASE}: {e:?}")),
    }
    // A tmpfs of its own (once per run): the root may not be one.
    if !MOUNTED.swap(true, Ordering::Relaxed) {
        t!(sys::mount("none", BASE, "tmpfs", 0));
    }
    let dir = format!("{BASE}/{name}");
    match sys::mkdirat(AT_FDCWD, &dir, 0o755) {
        Ok(_) | Err(EEXIST) => {}
        Err(e) => return Err(format!("mkdir {dir}: {e:?}")),
    }
    let _ = sys::unlinkat(AT_FDCWD, &format!("{dir}/core"), 0);
    Ok(dir)
}

/// In a child: the core limit, then the test directory as cwd.
fn child_setup(dir: &str, core: u64) {
    let lim = Rlimit {
        cur: core,
        max: RLIM_INFINITY,
    };
    if sys::setrlimit(RLIMIT_CORE, &lim).is_err() || sys::chdir(dir).is_err() {
        sys::exit_group(100);
    }
}

fn wait_child(pid: i32) -> Result<i32, String> {
    let (st, timed_out) = t!(wait_bounded(pid, 60_000_000_000));
    check!(!timed_out, "the child did not end within 60 s");
    Ok(st)
}

fn expect_killed(st: i32, sig: i32, core: bool) -> TestResult {
    check!(
        wifsignaled(st) && wtermsig(st) == sig && wcoredump(st) == core,
        "status: {}, want killed by {sig}{}",
        describe(st),
        if core {
            " with a core"
        } else {
            " without a core"
        }
    );
    Ok(())
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

struct Note {
    name: String,
    ty: u32,
    desc: Vec<u8>,
}

struct Load {
    vaddr: u64,
    memsz: u64,
    off: u64,
    filesz: u64,
}

/// A core file read back: its notes in order, its PT_LOADs, the open file for memory reads.
struct Core {
    fd: i32,
    notes: Vec<Note>,
    loads: Vec<Load>,
}

impl Drop for Core {
    fn drop(&mut self) {
        let _ = sys::close(self.fd);
    }
}

fn pread_exact(fd: i32, buf: &mut [u8], off: u64) -> Result<(), String> {
    let mut done = 0;
    while done < buf.len() {
        let n = t!(sys::pread(fd, &mut buf[done..], off + done as u64));
        check!(
            n > 0,
            "core file ends at {} (wanted {} bytes at {off})",
            off + done as u64,
            buf.len()
        );
        done += n as usize;
    }
    Ok(())
}

fn read_core(path: &str) -> Result<Core, String> {
    let fd = match sys::open(path, O_RDONLY | O_CLOEXEC) {
        Ok(fd) => fd,
        Err(e) => return Err(format!("open {path}: {e:?}")),
    };
    let mut core = Core {
        fd,
        notes: Vec::new(),
        loads: Vec::new(),
    };
    let mut eh = [0u8; 64];
    pread_exact(fd, &mut eh, 0)?;
    check_eq!(&eh[..7], &[0x7f, b'E', b'L', b'F', 2, 1, 1][..], "e_ident");
    check_eq!(u16_at(&eh, 16), 4, "e_type (ET_CORE)");
    check_eq!(u16_at(&eh, 18), 183, "e_machine (EM_AARCH64)");
    check_eq!(u16_at(&eh, 54), 56, "e_phentsize");
    let phoff = u64_at(&eh, 32);
    let phnum = u16_at(&eh, 56) as usize;
    check!((2..10_000).contains(&phnum), "e_phnum {phnum}");
    let mut ph = vec![0u8; 56 * phnum];
    pread_exact(fd, &mut ph, phoff)?;
    let mut note_seg = None;
    for (i, p) in ph.chunks(56).enumerate() {
        match u32_at(p, 0) {
            PT_NOTE => {
                check_eq!(i, 0, "PT_NOTE comes first");
                note_seg = Some((u64_at(p, 8), u64_at(p, 32)));
            }
            PT_LOAD => core.loads.push(Load {
                vaddr: u64_at(p, 16),
                memsz: u64_at(p, 40),
                off: u64_at(p, 8),
                filesz: u64_at(p, 32),
            }),
            t => return Err(format!("program header {i} of type {t:#x}")),
        }
    }
    let Some((noff, nlen)) = note_seg else {
        return Err("no PT_NOTE".into());
    };
    check!(nlen < 16 << 20, "PT_NOTE of {nlen} bytes");
    let mut nb = vec![0u8; nlen as usize];
    pread_exact(fd, &mut nb, noff)?;
    let mut o = 0;
    while o + 12 <= nb.len() {
        let (namesz, descsz, ty) = (
            u32_at(&nb, o) as usize,
            u32_at(&nb, o + 4) as usize,
            u32_at(&nb, o + 8),
        );
        let name_at = o + 12;
        let desc_at = name_at + namesz.next_multiple_of(4);
        let end = desc_at + descsz.next_multiple_of(4);
        check!(
            end <= nb.len() && namesz > 0,
            "note at {o} runs past the segment"
        );
        let name = String::from_utf8_lossy(&nb[name_at..name_at + namesz - 1]).into_owned();
        core.notes.push(Note {
            name,
            ty,
            desc: nb[desc_at..desc_at + descsz].to_vec(),
        });
        o = end;
    }
    check_eq!(o, nb.len(), "notes fill PT_NOTE exactly");
    Ok(core)
}

impl Core {
    fn note(&self, ty: u32) -> Option<&Note> {
        self.notes.iter().find(|n| n.ty == ty)
    }
    fn prstatus(&self) -> Vec<&Note> {
        self.notes.iter().filter(|n| n.ty == NT_PRSTATUS).collect()
    }
    /// `len` bytes of memory at `va` as the core holds them.
    fn memory(&self, va: u64, len: usize) -> Result<Vec<u8>, String> {
        let Some(l) = self
            .loads
            .iter()
            .find(|l| l.vaddr <= va && va < l.vaddr + l.memsz)
        else {
            return Err(format!("no PT_LOAD covers {va:#x}"));
        };
        check!(
            va + len as u64 <= l.vaddr + l.filesz,
            "the PT_LOAD at {:#x} holds {:#x} bytes of {:#x}: not the {len} bytes at {va:#x}",
            l.vaddr,
            l.filesz,
            l.memsz
        );
        let mut b = vec![0u8; len];
        pread_exact(self.fd, &mut b, l.off + (va - l.vaddr))?;
        Ok(b)
    }
}

/// Checks the process-wide notes: the first notes in Linux's order, NT_SIGINFO, NT_AUXV,
/// NT_PRPSINFO.
fn check_common(c: &Core, pid: i32, sig: i32) -> TestResult {
    check!(c.notes.len() >= 5, "{} notes", c.notes.len());
    let order: Vec<u32> = c.notes.iter().take(5).map(|n| n.ty).collect();
    check_eq!(
        order,
        [NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV, NT_FILE],
        "first notes"
    );
    for n in &c.notes[..5] {
        check_eq!(n.name.as_str(), "CORE", "name of note {:#x}", n.ty);
    }
    let ps = &c.notes[0].desc;
    check_eq!(ps.len(), 392, "NT_PRSTATUS size");
    check_eq!(u32_at(ps, 0) as i32, sig, "pr_info.si_signo");
    check_eq!(u16_at(ps, 12) as i32, sig, "pr_cursig");
    check_eq!(u32_at(ps, 32) as i32, pid, "pr_pid");
    check_eq!(u32_at(ps, 36) as i32, sys::getpid(), "pr_ppid");
    let psinfo = &c.notes[1].desc;
    check_eq!(psinfo.len(), 136, "NT_PRPSINFO size");
    check_eq!(u32_at(psinfo, 24) as i32, pid, "NT_PRPSINFO pr_pid");
    check_eq!(&psinfo[40..48], b"coredump", "pr_fname");
    let si = &c.notes[2].desc;
    check_eq!(si.len(), 128, "NT_SIGINFO size");
    check_eq!(u32_at(si, 0) as i32, sig, "NT_SIGINFO si_signo");
    let auxv = &c.notes[3].desc;
    check!(
        auxv.len() >= 32 && auxv.len().is_multiple_of(16),
        "NT_AUXV of {} bytes",
        auxv.len()
    );
    check_eq!(
        u64_at(auxv, auxv.len() - 16),
        0,
        "NT_AUXV ends with AT_NULL"
    );
    let pagesz = auxv
        .chunks(16)
        .find(|p| u64_at(p, 0) == AT_PAGESZ)
        .map(|p| u64_at(p, 8));
    check_eq!(pagesz, Some(4096), "AT_PAGESZ in NT_AUXV");
    Ok(())
}

fn no_core(name: &str, sig: i32) -> TestResult {
    let dir = test_dir(name)?;
    let pid = t!(spawn(|| {
        child_setup(&dir, 0);
        if sig == SIGSEGV {
            // SAFETY: never returns: the store faults.
            unsafe { coredump_fault(X[0], 0, X[2], X[3], X[4], X[5], X[6], X[7]) }
        }
        let _ = sys::kill(sys::getpid(), sig);
        101
    }));
    expect_killed(wait_child(pid)?, sig, false)?;
    check_eq!(
        sys::open(&format!("{dir}/core"), O_RDONLY),
        Err(ENOENT),
        "core file"
    );
    Ok(())
}

fn no_core_segv() -> TestResult {
    no_core("nocore-segv", SIGSEGV)
}

fn no_core_abort() -> TestResult {
    no_core("nocore-abrt", SIGABRT)
}

/// RLIMIT_CORE below a page: no core at all. Of two pages: the core is cut short at the first
/// write past the limit, but counts as dumped (core bit), as on Linux, and what was written
/// stays.
fn small_limits() -> TestResult {
    for (limit, dumped) in [(4095u64, false), (8192, true)] {
        let dir = test_dir(&format!("limit-{limit}"))?;
        let pid = t!(spawn(|| {
            child_setup(&dir, limit);
            let Ok(m) = sys::mmap_anon(PATTERN_LEN) else {
                return 102;
            };
            for i in (0..PATTERN_LEN).step_by(4096) {
                // SAFETY: inside the fresh read/write mapping.
                unsafe { ((m + i) as *mut u8).write_volatile(1) };
            }
            // SAFETY: never returns: the store faults.
            unsafe { coredump_fault(X[0], 0, X[2], X[3], X[4], X[5], X[6], X[7]) }
        }));
        let st = wait_child(pid)?;
        let path = format!("{dir}/core");
        let size = sys::stat(&path).map(|s| s.st_size);
        check!(
            wifsignaled(st) && wtermsig(st) == SIGSEGV && wcoredump(st) == dumped,
            "RLIMIT_CORE {limit}: status {}, want SIGSEGV {} a core (core file: {size:?})",
            describe(st),
            if dumped { "with" } else { "without" }
        );
        if !dumped {
            check_eq!(
                size.map(|_| ()),
                Err(ENOENT),
                "RLIMIT_CORE {limit}: core file"
            );
            continue;
        }
        let fd = t!(sys::open(&path, O_RDONLY | O_CLOEXEC));
        let mut eh = [0u8; 4];
        let n = sys::pread(fd, &mut eh, 0);
        let _ = sys::close(fd);
        check_eq!(n, Ok(4), "cut core's first bytes");
        check_eq!(&eh, b"\x7fELF", "cut core's magic");
        // The anonymous mapping alone holds three written pages: not all of them fit.
        let size = t!(size) as u64;
        check!(
            size < limit + PATTERN_LEN as u64,
            "RLIMIT_CORE {limit}: a core of {size} bytes"
        );
        t!(sys::unlinkat(AT_FDCWD, &path, 0));
    }
    Ok(())
}

const PATTERN_LEN: usize = 3 * 4096;

fn pattern(i: usize) -> u8 {
    (i as u8).wrapping_mul(7) ^ (i >> 8) as u8 ^ 0xa5
}

fn segv_core() -> TestResult {
    let dir = test_dir("segv")?;
    let addr = Shared::new(0usize);
    let pid = t!(spawn(|| {
        child_setup(&dir, RLIM_INFINITY);
        let Ok(m) = sys::mmap_anon(PATTERN_LEN) else {
            return 102;
        };
        for i in 0..PATTERN_LEN {
            // SAFETY: inside the fresh read/write mapping.
            unsafe { ((m + i) as *mut u8).write_volatile(pattern(i)) };
        }
        addr.set(m);
        // SAFETY: never returns: the store faults.
        unsafe { coredump_fault(X[0], 0, X[2], X[3], X[4], X[5], X[6], X[7]) }
    }));
    expect_killed(wait_child(pid)?, SIGSEGV, true)?;
    let c = read_core(&format!("{dir}/core"))?;
    check_common(&c, pid, SIGSEGV)?;
    let ps = &c.notes[0].desc;
    for (i, want) in X.iter().enumerate() {
        check_eq!(u64_at(ps, 112 + 8 * i), *want, "x{i} in NT_PRSTATUS");
    }
    check_eq!(
        u64_at(ps, 112 + 32 * 8),
        coredump_fault as *const () as u64,
        "pc in NT_PRSTATUS"
    );
    let si = &c.notes[2].desc;
    check_eq!(u32_at(si, 8) as i32, SEGV_MAPERR, "NT_SIGINFO si_code");
    check_eq!(u64_at(si, 16), 0, "NT_SIGINFO si_addr");
    check_eq!(c.prstatus().len(), 1, "one thread");
    let mem = c.memory(addr.get() as u64, PATTERN_LEN)?;
    let bad = (0..PATTERN_LEN).find(|&i| mem[i] != pattern(i));
    check!(bad.is_none(), "memory differs at byte {:?}", bad);
    drop(c);
    t!(sys::unlinkat(AT_FDCWD, &format!("{dir}/core"), 0));
    Ok(())
}

fn abort_core() -> TestResult {
    let dir = test_dir("abrt")?;
    let pid = t!(spawn(|| {
        child_setup(&dir, RLIM_INFINITY);
        let _ = sys::kill(sys::getpid(), SIGABRT);
        101
    }));
    expect_killed(wait_child(pid)?, SIGABRT, true)?;
    let c = read_core(&format!("{dir}/core"))?;
    check_common(&c, pid, SIGABRT)?;
    let si = &c.notes[2].desc;
    check_eq!(u32_at(si, 8) as i32, SI_USER, "NT_SIGINFO si_code");
    check_eq!(u32_at(si, 16) as i32, pid, "NT_SIGINFO si_pid");
    drop(c);
    t!(sys::unlinkat(AT_FDCWD, &format!("{dir}/core"), 0));
    Ok(())
}

static mut TIDS: [i32; 2] = [0; 2];

extern "C" fn sleeper(slot: usize) -> i32 {
    // SAFETY: each thread writes its own slot; the main thread only reads them.
    unsafe { core::ptr::addr_of_mut!(TIDS[slot]).write_volatile(sys::gettid()) };
    loop {
        sys::sleep_ns(1_000_000);
    }
}

/// Two `sleeper` threads in this process: their thread IDs once both run (a 10 s bound), or
/// `None` if one could not be made.
fn start_sleepers() -> Option<[i32; 2]> {
    for slot in 0..2 {
        proc::spawn_thread(sleeper, slot, 0).ok()?;
    }
    // SAFETY: the threads write the slots; volatile reads see them.
    let read = |i: usize| unsafe { core::ptr::addr_of!(TIDS[i]).read_volatile() };
    let t0 = sys::now_ns();
    while (read(0) == 0 || read(1) == 0) && sys::now_ns() - t0 < 10_000_000_000 {
        sys::sleep_ns(1_000_000);
    }
    Some([read(0), read(1)])
}

fn threads_core() -> TestResult {
    let dir = test_dir("threads")?;
    let tids = Shared::new([0i32; 2]);
    let pid = t!(spawn(|| {
        child_setup(&dir, RLIM_INFINITY);
        match start_sleepers() {
            Some(t) => tids.set(t),
            None => return 103,
        }
        // SAFETY: never returns: the store faults.
        unsafe { coredump_fault(X[0], 0, X[2], X[3], X[4], X[5], X[6], X[7]) }
    }));
    expect_killed(wait_child(pid)?, SIGSEGV, true)?;
    let c = read_core(&format!("{dir}/core"))?;
    check_common(&c, pid, SIGSEGV)?;
    let ps = c.prstatus();
    check_eq!(ps.len(), 3, "NT_PRSTATUS notes");
    let mut got: Vec<i32> = ps.iter().map(|n| u32_at(&n.desc, 32) as i32).collect();
    check_eq!(got[0], pid, "the dumping thread's NT_PRSTATUS comes first");
    for n in &ps {
        check_eq!(
            u16_at(&n.desc, 12) as i32,
            SIGSEGV,
            "pr_cursig of every thread"
        );
    }
    got.sort_unstable();
    let mut want = vec![pid, tids.get()[0], tids.get()[1]];
    want.sort_unstable();
    check_eq!(got, want, "thread IDs");
    drop(c);
    t!(sys::unlinkat(AT_FDCWD, &format!("{dir}/core"), 0));
    Ok(())
}

extern "C" fn ignore_usr1(_: i32, _: *mut SigInfo, _: *mut u8) {}

/// A process whose other threads wait for its core dump keeps being sent SIGUSR1 (caught and
/// blocked) at each of those threads in turn by another process the whole time: the sends
/// succeed (a dying process discards them, as on Linux), every dump completes with one
/// NT_PRSTATUS per thread, and the kernel survives. Four rounds.
fn threads_core_under_signals() -> TestResult {
    let dir = test_dir("signalled")?;
    for round in 0..4 {
        let tids = Shared::new([0i32; 2]);
        let pid = t!(spawn(|| {
            child_setup(&dir, RLIM_INFINITY);
            if set_handler(SIGUSR1, ignore_usr1, 0, 0).is_err()
                || sigprocmask(SIG_BLOCK, Some(1 << (SIGUSR1 - 1))).is_err()
            {
                return 104;
            }
            match start_sleepers() {
                Some(t) => tids.set(t),
                None => return 103,
            }
            sys::sleep_ns(5_000_000);
            // SAFETY: never returns: the store faults.
            unsafe { coredump_fault(X[0], 0, X[2], X[3], X[4], X[5], X[6], X[7]) }
        }));
        let stop = Shared::new(0u32);
        let flooder = t!(spawn(|| {
            let t0 = sys::now_ns();
            while tids.get()[1] == 0 && sys::now_ns() - t0 < 10_000_000_000 {
                sys::sleep_ns(1_000_000);
            }
            // Each thread in turn: a signal to a thread wakes that thread.
            let mut i = 0;
            while stop.get() == 0 && sys::now_ns() - t0 < 30_000_000_000 {
                if sys::tgkill(pid, tids.get()[i % 2], SIGUSR1).is_err() {
                    break;
                }
                i += 1;
            }
            0
        }));
        let st = wait_child(pid);
        stop.set(1);
        let _ = wait_child(flooder);
        expect_killed(st?, SIGSEGV, true)?;
        let c = read_core(&format!("{dir}/core"))?;
        check_common(&c, pid, SIGSEGV)?;
        check_eq!(c.prstatus().len(), 3, "NT_PRSTATUS notes in round {round}");
        drop(c);
        t!(sys::unlinkat(AT_FDCWD, &format!("{dir}/core"), 0));
    }
    Ok(())
}

/// NT_ARM_SVE of a thread killed (SIGILL, udf) with patterned Z/P/FFR live.
fn sve_core() -> TestResult {
    if !sme::has_sve() {
        return skip("no SVE");
    }
    let dir = test_dir("sve")?;
    let vl = sve::rdvl();
    let regs = SveRegs::pattern(vl, 0xc0de);
    let pid = t!(spawn(|| {
        child_setup(&dir, RLIM_INFINITY);
        // No SIGILL handler: the udf kills the child with a core.
        let _ = sve::load_udf_store(&regs);
        104
    }));
    expect_killed(wait_child(pid)?, SIGILL, true)?;
    let c = read_core(&format!("{dir}/core"))?;
    check_common(&c, pid, SIGILL)?;
    let Some(n) = c.note(NT_ARM_SVE) else {
        let types: Vec<String> = c.notes.iter().map(|n| format!("{:#x}", n.ty)).collect();
        return Err(format!("no NT_ARM_SVE note (notes: {})", types.join(" ")));
    };
    check_eq!(n.name.as_str(), "LINUX", "NT_ARM_SVE name");
    let d = &n.desc;
    let vq = vl / 16;
    // SVE_PT_SIZE(vq, SVE): header, Z, P, FFR, then FPSR/FPCR 16-aligned.
    let fpsr_off = (16 + 546 * vq).next_multiple_of(16);
    let size = 16 + (fpsr_off + 8 - 16).next_multiple_of(16);
    check!(d.len() >= 16, "NT_ARM_SVE of {} bytes", d.len());
    check_eq!(u32_at(d, 0) as usize, size, "user_sve_header.size");
    check_eq!(u16_at(d, 8) as usize, vl, "user_sve_header.vl");
    check_eq!(
        u16_at(d, 12) & 1,
        1,
        "user_sve_header.flags: SVE_PT_REGS_SVE"
    );
    check_eq!(d.len(), size, "NT_ARM_SVE size");
    for z in 0..32 {
        check!(
            &d[16 + vl * z..16 + vl * (z + 1)] == regs.z(z),
            "Z{z} differs"
        );
    }
    let p0 = 16 + 32 * vl;
    for p in 0..16 {
        check!(
            &d[p0 + vl / 8 * p..p0 + vl / 8 * (p + 1)] == regs.p(p),
            "P{p} differs"
        );
    }
    check!(
        &d[p0 + 2 * vl..p0 + 2 * vl + vl / 8] == regs.ffr(),
        "FFR differs"
    );
    drop(c);
    t!(sys::unlinkat(AT_FDCWD, &format!("{dir}/core"), 0));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("no_core_rlimit_zero_segv", no_core_segv),
        ("no_core_rlimit_zero_abort", no_core_abort),
        ("small_rlimit_core_skips_or_cuts", small_limits),
        ("segv_core_registers_and_memory", segv_core),
        ("abort_core_siginfo", abort_core),
        ("threads_one_prstatus_each", threads_core),
        ("threads_parked_while_signalled", threads_core_under_signals),
        ("sve_note_holds_z_p_ffr", sve_core),
    ])
}

entry!(main);
