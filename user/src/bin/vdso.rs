//! The vDSO: AT_SYSINFO_EHDR, the image's dynamic symbols and their version (LINUX_2.6.39),
//! the [vvar] and [vdso] lines of /proc/self/maps, time through the vDSO agreeing with the
//! syscalls (monotonic never back, on each CPU in turn; realtime following clock_settime),
//! clock_getres, the syscall's answer for clocks the vDSO does not serve, the mapping kept
//! across fork and replaced at exec, and `__kernel_rt_sigreturn` as the return address of a
//! handler installed without SA_RESTORER.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicUsize, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::vdso::Image;
use svelt_user::*;

const SYMS: [&str; 4] = [
    "__kernel_clock_gettime",
    "__kernel_gettimeofday",
    "__kernel_clock_getres",
    "__kernel_rt_sigreturn",
];

fn image() -> Result<Image, String> {
    Image::find().ok_or_else(|| String::from("no vDSO (AT_SYSINFO_EHDR) or an unreadable one"))
}

fn auxv_and_symbols() -> TestResult {
    let img = image()?;
    check!(img.base % 4096 == 0, "AT_SYSINFO_EHDR {:#x}", img.base);
    check_eq!(img.soname, Some(&b"linux-vdso.so.1"[..]));
    for name in SYMS {
        let s = img.sym(name);
        check!(s.is_some(), "{name} missing");
        check_eq!(
            s.and_then(|s| s.version),
            Some(&b"LINUX_2.6.39"[..]),
            "{name}'s version"
        );
    }
    Ok(())
}

/// The /proc/self/maps lines naming `what`.
fn maps_lines(what: &str) -> Result<Vec<String>, String> {
    let maps = match io::read_file("/proc/self/maps") {
        // Started as the first process (--init): no /proc yet.
        Err(ENOENT) => {
            let _ = sys::mkdirat(AT_FDCWD, "/proc", 0o755);
            t!(sys::mount("proc", "/proc", "proc", 0));
            t!(io::read_file("/proc/self/maps"))
        }
        r => t!(r),
    };
    let text = String::from_utf8_lossy(&maps).into_owned();
    Ok(text
        .lines()
        .filter(|l| l.ends_with(what))
        .map(String::from)
        .collect())
}

fn range(line: &str) -> (usize, usize) {
    let r = line.split(' ').next().unwrap_or("");
    let (a, b) = r.split_once('-').unwrap_or(("", ""));
    (
        usize::from_str_radix(a, 16).unwrap_or(0),
        usize::from_str_radix(b, 16).unwrap_or(0),
    )
}

fn maps_lines_as_linux() -> TestResult {
    let img = image()?;
    let vdso = maps_lines("[vdso]")?;
    let vvar = maps_lines("[vvar]")?;
    for l in vvar.iter().chain(vdso.iter()) {
        println!("# {l}");
    }
    check_eq!(vdso.len(), 1, "[vdso] lines");
    check_eq!(vvar.len(), 1, "[vvar] lines");
    let (vs, _) = range(&vdso[0]);
    let (_, ve) = range(&vvar[0]);
    check_eq!(vs, img.base, "[vdso] starts at AT_SYSINFO_EHDR");
    check_eq!(ve, vs, "[vvar] ends where [vdso] starts");
    check!(vdso[0].contains(" r-xp 00000000 00:00 0 "), "{}", vdso[0]);
    check!(vvar[0].contains(" r--p 00000000 00:00 0 "), "{}", vvar[0]);
    Ok(())
}

fn vdso_gettime(f: svelt_user::vdso::ClockGettime, clock: i32) -> Result<Timespec, i32> {
    let mut ts = Timespec::default();
    // SAFETY: the vDSO's clock_gettime writes one timespec.
    match unsafe { f(clock, &mut ts) } {
        0 => Ok(ts),
        e => Err(e),
    }
}

fn raw_gettime(clock: i32) -> Result<Timespec, i32> {
    let mut ts = Timespec::default();
    match raw6(
        nr::CLOCK_GETTIME,
        clock as usize,
        &mut ts as *mut _ as usize,
        0,
        0,
        0,
        0,
    ) {
        0 => Ok(ts),
        e => Err(e as i32),
    }
}

/// syscall, vDSO, syscall, vDSO...: each read at or after the one before, on every CPU in
/// turn (the counter is the same on all).
fn monotonic_agrees_on_each_cpu() -> TestResult {
    let img = image()?;
    let gettime = img.clock_gettime().ok_or("no __kernel_clock_gettime")?;
    let cpus = t!(sys::sched_getaffinity(0));
    let mut last = 0u64;
    for cpu in (0..64).filter(|c| cpus & (1 << c) != 0) {
        t!(sys::sched_setaffinity(0, 1 << cpu));
        for clock in [CLOCK_MONOTONIC, CLOCK_BOOTTIME, 4 /* MONOTONIC_RAW */] {
            let mut prev = 0u64;
            for i in 0..200 {
                let ts = if i % 2 == 0 {
                    raw_gettime(clock as i32)
                } else {
                    vdso_gettime(gettime, clock as i32)
                };
                let ts = ts.map_err(|e| format!("clock {clock}: {e}"))?;
                check!(ts.tv_nsec >= 0 && ts.tv_nsec < 1_000_000_000, "{ts:?}");
                check!(
                    ts.ns() >= prev,
                    "clock {clock} went back on CPU {cpu} (read {i}, vDSO: {}): {prev} -> {}",
                    i % 2 == 1,
                    ts.ns()
                );
                prev = ts.ns();
            }
            if clock == CLOCK_MONOTONIC {
                check!(prev >= last, "monotonic went back moving to CPU {cpu}");
                last = prev;
            }
        }
    }
    t!(sys::sched_setaffinity(0, cpus));
    Ok(())
}

fn settime(clock: u32, ts: &Timespec) -> SysResult {
    sys::syscall(
        nr::CLOCK_SETTIME,
        &[clock as usize, ts as *const Timespec as usize],
    )
}

const SEC: u64 = 1_000_000_000;

/// clock_settime moves CLOCK_REALTIME for the vDSO's readers at once (and gettimeofday's);
/// then it is set back.
fn realtime_follows_clock_settime() -> TestResult {
    let img = image()?;
    let gettime = img.clock_gettime().ok_or("no __kernel_clock_gettime")?;
    let gtod = img.gettimeofday().ok_or("no __kernel_gettimeofday")?;
    let step = 1_000_000 * SEC;
    let before = t!(sys::clock_gettime(CLOCK_REALTIME)).ns();
    if before < 365 * 86400 * SEC {
        // Realtime counts from boot (no RTC, or none read): setting it forward and back
        // would ask for a time before boot, which Linux refuses too (EINVAL).
        return ktap::skip("no wall clock: realtime is the time since boot");
    }
    let v = vdso_gettime(gettime, CLOCK_REALTIME as i32).map_err(|e| format!("{e}"))?;
    check!(
        v.ns() >= before && v.ns() - before < 5 * SEC,
        "{before} then {v:?}"
    );
    t!(settime(CLOCK_REALTIME, &Timespec::from_ns(before + step)));
    let v = vdso_gettime(gettime, CLOCK_REALTIME as i32).map_err(|e| format!("{e}"))?;
    let s = t!(sys::clock_gettime(CLOCK_REALTIME)).ns();
    let mut tv = [0i64; 2];
    let mut tz = [-1i32; 2];
    // SAFETY: the vDSO's gettimeofday writes one timeval and one timezone.
    check_eq!(unsafe { gtod(&mut tv, &mut tz) }, 0);
    let tv_ns = tv[0] as u64 * SEC + tv[1] as u64 * 1000;
    // Set back before judging.
    let now = t!(sys::clock_gettime(CLOCK_REALTIME)).ns();
    t!(settime(CLOCK_REALTIME, &Timespec::from_ns(now - step)));
    check!(
        v.ns() >= before + step && v.ns() - before - step < 5 * SEC,
        "vDSO realtime after setting {}: {v:?}",
        before + step
    );
    check!(s >= v.ns(), "syscall after vDSO went back: {v:?} -> {s}");
    check!(
        tv_ns / 1000 >= s / 1000 && tv_ns - s < 5 * SEC,
        "gettimeofday {tv:?} after {s}"
    );
    check_eq!(tz, [0, 0], "struct timezone");
    let after = vdso_gettime(gettime, CLOCK_REALTIME as i32).map_err(|e| format!("{e}"))?;
    check!(
        after.ns() >= before && after.ns() - before < 5 * SEC,
        "set back: {before} then {after:?}"
    );
    // TAI and REALTIME_COARSE follow too.
    for clock in [11, 5] {
        let t = vdso_gettime(gettime, clock).map_err(|e| format!("clock {clock}: {e}"))?;
        check!(
            t.ns() + 5 * SEC > after.ns() && t.ns() < after.ns() + 5 * SEC,
            "clock {clock}: {t:?}"
        );
    }
    Ok(())
}

fn settimeofday(tv: Option<&[i64; 2]>, tz: Option<&[i32; 2]>) -> SysResult {
    sys::syscall(
        nr::SETTIMEOFDAY,
        &[
            tv.map_or(0, |t| t as *const _ as usize),
            tz.map_or(0, |t| t as *const _ as usize),
        ],
    )
}

/// settimeofday's time zone reaches the vDSO's gettimeofday (and the syscall's); the time is
/// given too, or Linux would warp the clock by the zone on this first call; the errors.
fn settimeofday_zone_and_errors() -> TestResult {
    let img = image()?;
    let gtod = img.gettimeofday().ok_or("no __kernel_gettimeofday")?;
    let now = |tz: &mut [i32; 2]| -> [i64; 2] {
        let mut tv = [0i64; 2];
        // SAFETY: the vDSO's gettimeofday writes one timeval and one timezone.
        unsafe { gtod(&mut tv, tz) };
        tv
    };
    let mut tz = [0i32; 2];
    let tv = now(&mut tz);
    if (tv[0] as u64) < 365 * 86400 {
        // Realtime counts from boot: setting it to what was just read is a time before the
        // boot clock has now reached, which Linux refuses too (EINVAL).
        return ktap::skip("no wall clock: realtime is the time since boot");
    }
    t!(settimeofday(Some(&tv), Some(&[-60, 0])));
    let mut seen = [7i32; 2];
    now(&mut seen);
    let mut sys_tz = [7i32; 2];
    let mut tv2 = [0i64; 2];
    let r = sys::syscall(
        nr::GETTIMEOFDAY,
        &[&mut tv2 as *mut _ as usize, &mut sys_tz as *mut _ as usize],
    );
    let tv = now(&mut tz);
    t!(settimeofday(Some(&tv), Some(&[0, 0])));
    t!(r);
    check_eq!(seen, [-60, 0], "the vDSO's time zone");
    check_eq!(sys_tz, [-60, 0], "the syscall's time zone");
    check_eq!(settimeofday(None, Some(&[15 * 60 + 1, 0])), Err(EINVAL));
    check_eq!(settimeofday(Some(&[0, 1_000_000]), None), Err(EINVAL));
    check_eq!(settimeofday(Some(&[-1, 0]), None), Err(EINVAL));
    check_eq!(
        settime(CLOCK_MONOTONIC, &Timespec::from_ns(SEC)),
        Err(EINVAL)
    );
    check_eq!(settime(99, &Timespec::from_ns(SEC)), Err(EINVAL));
    check_eq!(
        settime(CLOCK_PROCESS_CPUTIME_ID, &Timespec::from_ns(SEC)),
        Err(EINVAL)
    );
    check_eq!(
        sys::syscall(nr::CLOCK_SETTIME, &[CLOCK_MONOTONIC as usize, 8]),
        Err(EINVAL),
        "an unsettable clock before a bad pointer"
    );
    check_eq!(
        sys::syscall(nr::CLOCK_SETTIME, &[CLOCK_REALTIME as usize, 8]),
        Err(EFAULT)
    );
    let st = t!(in_child(|| {
        if sys::setuid(1000).is_err() {
            return 2;
        }
        let now = sys::clock_gettime(CLOCK_REALTIME).unwrap_or_default();
        match (settime(CLOCK_REALTIME, &now), settimeofday(None, None)) {
            (Err(EPERM), Err(EPERM)) => 0,
            _ => 1,
        }
    }));
    check_eq!(st, 0, "unprivileged: {} (1: not EPERM)", describe(st));
    Ok(())
}

/// Clocks the vDSO leaves to the kernel answer as the syscall does: CPU time (a value), bad
/// ids (the syscall's -EINVAL); clock_getres agrees with the syscall.
fn fallback_and_getres() -> TestResult {
    let img = image()?;
    let gettime = img.clock_gettime().ok_or("no __kernel_clock_gettime")?;
    let getres = img.clock_getres().ok_or("no __kernel_clock_getres")?;
    for clock in [CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID] {
        let v = vdso_gettime(gettime, clock as i32).map_err(|e| format!("clock {clock}: {e}"))?;
        check!(
            v.ns() > 0 && v.tv_nsec < 1_000_000_000,
            "clock {clock}: {v:?}"
        );
    }
    for bad in [99, 16, 31, -1000, i32::MAX] {
        check_eq!(
            vdso_gettime(gettime, bad),
            raw_gettime(bad),
            "clock {}",
            bad
        );
        check_eq!(vdso_gettime(gettime, bad), Err(-22), "clock {}", bad);
    }
    for clock in [0, 1, 2, 4, 7, 11, 99] {
        let (mut a, mut b) = (Timespec::default(), Timespec::default());
        // SAFETY: clock_getres writes one timespec.
        let ra = unsafe { getres(clock, &mut a) };
        let rb = raw6(
            nr::CLOCK_GETRES,
            clock as usize,
            &mut b as *mut _ as usize,
            0,
            0,
            0,
            0,
        );
        check_eq!(ra as isize, rb, "clock_getres({}) result", clock);
        check_eq!(a, b, "clock_getres({})", clock);
        // SAFETY: a null pointer is allowed (only the result).
        check_eq!(unsafe { getres(clock, core::ptr::null_mut()) } as isize, rb);
    }
    Ok(())
}

/// A forked child has the vDSO where its parent had it; an exec'd program has one of its own.
fn kept_across_fork_replaced_at_exec() -> TestResult {
    let img = image()?;
    let base = img.base;
    let st = t!(in_child(|| {
        let ok = Image::find().is_some_and(|i| i.base == base && i.clock_gettime().is_some())
            && maps_lines("[vdso]").is_ok_and(|l| l.len() == 1 && range(&l[0]).0 == base);
        if ok {
            0
        } else {
            1
        }
    }));
    check_eq!(st, 0, "forked child: {}", describe(st));
    let st = t!(in_child(|| {
        let e = sys::execve("/bin/tests/vdso", &["vdso", "exec-child"], &[]);
        100 + e.0
    }));
    check_eq!(st, 0, "exec'd child: {}", describe(st));
    Ok(())
}

/// The exec'd program's side: its own vDSO, listed and working.
fn exec_child() -> i32 {
    let Some(img) = Image::find() else {
        return 2;
    };
    let listed = maps_lines("[vdso]").is_ok_and(|l| l.len() == 1 && range(&l[0]).0 == img.base);
    let works = img
        .clock_gettime()
        .is_some_and(|f| vdso_gettime(f, CLOCK_MONOTONIC as i32).is_ok());
    if listed && works {
        0
    } else {
        3
    }
}

static HANDLER_RUNS: AtomicUsize = AtomicUsize::new(0);
/// What the handler saw: x30, x29, the two words at x29 (the frame record), and the
/// interrupted x29, x30 and sp from its ucontext.
static SEEN: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];

core::arch::global_asm!(
    ".text",
    ".global vdso_test_handler",
    ".type vdso_test_handler, %function",
    "vdso_test_handler:",
    "    adrp x9, {seen}",
    "    add x9, x9, :lo12:{seen}",
    "    stp x30, x29, [x9]",
    "    ldp x10, x11, [x29]",
    "    stp x10, x11, [x9, #16]",
    "    ldr x10, [x2, #{r29}]",
    "    ldr x11, [x2, #{r30}]",
    "    stp x10, x11, [x9, #32]",
    "    ldr x10, [x2, #{sp}]",
    "    str x10, [x9, #48]",
    "    adrp x9, {runs}",
    "    ldr x10, [x9, :lo12:{runs}]",
    "    add x10, x10, #1",
    "    str x10, [x9, :lo12:{runs}]",
    "    ret",
    ".size vdso_test_handler, . - vdso_test_handler",
    seen = sym SEEN,
    runs = sym HANDLER_RUNS,
    r29 = const uc::REGS + 29 * 8,
    r30 = const uc::REGS + 30 * 8,
    sp = const uc::SP,
);

extern "C" {
    fn vdso_test_handler();
}

/// A handler installed without SA_RESTORER returns to `__kernel_rt_sigreturn` (x30), and the
/// return works: the program goes on after the signal. x29 points at the frame record the
/// trampoline's unwind information names: the interrupted x29 and x30, just below the
/// interrupted sp.
fn sigreturn_trampoline() -> TestResult {
    let img = image()?;
    let tramp = img
        .sym("__kernel_rt_sigreturn")
        .ok_or("no __kernel_rt_sigreturn")?
        .addr;
    let act = KSigaction {
        handler: vdso_test_handler as *const () as usize,
        flags: SA_SIGINFO,
        restorer: 0,
        mask: 0,
    };
    let old = t!(sigaction_raw(SIGUSR1, Some(&act)));
    let r = sys::tgkill(sys::getpid(), sys::gettid(), SIGUSR1);
    t!(sigaction_raw(SIGUSR1, Some(&old)));
    t!(r);
    check_eq!(HANDLER_RUNS.load(Ordering::Relaxed), 1, "handler runs");
    let [lr, fp, rec29, rec30, uc29, uc30, uc_sp] =
        SEEN.each_ref().map(|a| a.load(Ordering::Relaxed));
    check_eq!(
        lr,
        tramp,
        "x30 in the handler (__kernel_rt_sigreturn at {:#x})",
        tramp
    );
    check_eq!(
        (rec29, rec30),
        (uc29, uc30),
        "the frame record at x29 = {:#x}",
        fp
    );
    check_eq!(
        uc_sp - fp,
        16,
        "interrupted sp {:#x}, frame record {:#x}",
        uc_sp,
        fp
    );
    Ok(())
}

/// After mremap moves [vdso] (as checkpoint/restore tools do), a handler without SA_RESTORER
/// returns to `__kernel_rt_sigreturn` where it now is.
fn sigreturn_after_mremap() -> TestResult {
    let img = image()?;
    let off = img
        .sym("__kernel_rt_sigreturn")
        .ok_or("no __kernel_rt_sigreturn")?
        .addr
        - img.base;
    let lines = maps_lines("[vdso]")?;
    check_eq!(lines.len(), 1);
    let (start, end) = range(&lines[0]);
    let len = end - start;
    let st = t!(in_child(|| {
        let Ok(new) = sys::mmap(0, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) else {
            return 2;
        };
        if sys::mremap(start, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, new) != Ok(new) {
            return 3;
        }
        let moved = maps_lines("[vdso]").is_ok_and(|l| l.len() == 1 && range(&l[0]).0 == new);
        let act = KSigaction {
            handler: vdso_test_handler as *const () as usize,
            flags: SA_SIGINFO,
            restorer: 0,
            mask: 0,
        };
        if sigaction_raw(SIGUSR1, Some(&act)).is_err()
            || sys::tgkill(sys::getpid(), sys::gettid(), SIGUSR1).is_err()
        {
            return 4;
        }
        match (moved, SEEN[0].load(Ordering::Relaxed) == new + off) {
            (false, _) => 5,
            (true, false) => 6,
            (true, true) => 0,
        }
    }));
    check_eq!(st, 0, "child: {} (5: [vdso] not listed at its new place, 6: x30 not the moved __kernel_rt_sigreturn)", describe(st));
    Ok(())
}

fn main(args: &rt::Args) -> i32 {
    if args.arg(1) == Some("exec-child") {
        return exec_child();
    }
    ktap::run(&[
        ("auxv_and_symbols", auxv_and_symbols),
        ("maps_lines_as_linux", maps_lines_as_linux),
        ("monotonic_agrees_on_each_cpu", monotonic_agrees_on_each_cpu),
        (
            "realtime_follows_clock_settime",
            realtime_follows_clock_settime,
        ),
        ("settimeofday_zone_and_errors", settimeofday_zone_and_errors),
        ("fallback_and_getres", fallback_and_getres),
        (
            "kept_across_fork_replaced_at_exec",
            kept_across_fork_replaced_at_exec,
        ),
        ("sigreturn_trampoline", sigreturn_trampoline),
        ("sigreturn_after_mremap", sigreturn_after_mremap),
    ])
}

entry!(main);
