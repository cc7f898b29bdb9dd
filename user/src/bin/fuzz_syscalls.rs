//! Bad input never takes the kernel down: children make thousands of syscalls with random
//! numbers and junk arguments (wild pointers, kernel addresses, huge sizes, bad flags,
//! half-valid buffers), then more with random signal frames. Every child must end (it may die of
//! a signal it brought on itself); the kernel, and this parent, must still be there afterwards.
//!
//! A few calls are never made because they would reach beyond the child on any kernel (killing
//! other processes, rebooting, changing the clock, scheduling priorities or affinities, process
//! groups, loading kernels or modules, swap, the modes, owners, names and mounts of files other
//! programs use) or only multiply processes; everything else is fair game. After each child the
//! parent checks that "/" and "/tmp" kept their mode and owner: a child that changed them would
//! make later programs fail their permission checks far from the cause.
#![no_std]
#![no_main]

use svelt_abi::uapi::nr;
use svelt_user::fuzz::{Random, Rng};
use svelt_user::ktap::TestResult;
use svelt_user::proc::{spawn, wifexited, wifsignaled};
use svelt_user::sys::AT_FDCWD;
use svelt_user::{check, check_eq, entry, format, ktap, println, rt, sys, t};

/// Syscalls the children never make (see the module comment).
const DENY: &[usize] = &[
    nr::KILL,
    nr::TKILL,
    nr::TGKILL,
    nr::RT_SIGQUEUEINFO,
    nr::RT_TGSIGQUEUEINFO,
    nr::PIDFD_SEND_SIGNAL,
    nr::REBOOT,
    nr::SETTIMEOFDAY,
    nr::CLOCK_SETTIME,
    nr::ADJTIMEX,
    nr::CLOCK_ADJTIME,
    nr::SCHED_SETSCHEDULER,
    nr::SCHED_SETPARAM,
    nr::SCHED_SETATTR,
    nr::SETPRIORITY,
    nr::SCHED_SETAFFINITY,
    nr::SETPGID,
    nr::IOPRIO_SET,
    nr::KEXEC_LOAD,
    nr::KEXEC_FILE_LOAD,
    nr::INIT_MODULE,
    nr::FINIT_MODULE,
    nr::DELETE_MODULE,
    nr::SWAPON,
    nr::SWAPOFF,
    nr::CLONE,
    nr::CLONE3,
    nr::EXIT,
    nr::EXIT_GROUP,
    nr::VHANGUP,
    nr::ACCT,
    nr::SETHOSTNAME,
    nr::SETDOMAINNAME,
    nr::SYSLOG,
    nr::PERSONALITY,
    nr::UNSHARE,
    nr::SETNS,
    nr::PIVOT_ROOT,
    nr::CHROOT,
    nr::MOUNT,
    nr::UMOUNT2,
    nr::OPEN_TREE,
    nr::OPEN_TREE_ATTR,
    nr::MOVE_MOUNT,
    nr::FSOPEN,
    nr::FSCONFIG,
    nr::FSMOUNT,
    nr::FSPICK,
    nr::MOUNT_SETATTR,
    nr::UNLINKAT,
    nr::RENAMEAT,
    nr::RENAMEAT2,
    nr::FCHMODAT,
    nr::FCHMODAT2,
    nr::FCHMOD,
    nr::FCHOWNAT,
    nr::FCHOWN,
    nr::TRUNCATE,
    nr::FTRUNCATE,
    nr::SETRLIMIT,
    nr::PRLIMIT64,
    nr::PTRACE,
    nr::PROCESS_VM_WRITEV,
    nr::PROCESS_MADVISE,
    nr::PRCTL,
    nr::SECCOMP,
    nr::BPF,
    nr::PERF_EVENT_OPEN,
    nr::MEMFD_SECRET,
    nr::IO_URING_SETUP,
    nr::IO_URING_ENTER,
    nr::IO_URING_REGISTER,
];

/// An argument: mostly "interesting" values, sometimes pure noise.
fn arg(r: &mut Rng, buf: usize) -> usize {
    match r.below(16) {
        0 => 0,
        1 => 1,
        2 => usize::MAX,
        3 => r.below(64) as usize,
        4 => 0x1,
        5 => 0xffff_0000_0000_0000,
        6 => 0xffff_ff80_0000_0000,
        7 => 0x0000_ffff_ffff_f000,
        8 => buf,
        9 => buf + r.below(4096) as usize,
        10 => buf + 4090,
        11 => 1 << r.below(63),
        12 => (r.below(2048) as usize) * 16,
        13 => -(r.below(128) as isize) as usize,
        14 => 0x40_0000 + (r.below(0x10000) as usize),
        _ => r.next() as usize,
    }
}

/// One child: `count` random syscalls with junk arguments.
fn storm(seed: u64, count: u32) -> i32 {
    let mut r = Rng(seed | 1);
    // Random writes to fds 0-2 would flood the console (megabytes of whatever memory they point
    // at): send them to /dev/null.
    if let Ok(null) = sys::open("/dev/null", 2 /* O_RDWR */) {
        for fd in 0..3 {
            let _ = sys::dup3(null, fd, 0);
        }
    }
    // A scratch buffer some arguments point into (its last bytes run into a guard page).
    let buf = match sys::mmap(0, 8192, 3, 0x22, -1, 0) {
        Ok(p) => p,
        Err(_) => return 2,
    };
    let _ = sys::syscall(nr::MPROTECT, &[buf + 4096, 4096, 0]);
    for _ in 0..count {
        let n = match r.below(8) {
            0 => r.below(0x10000) as usize,
            _ => r.below(470) as usize,
        };
        if DENY.contains(&n) {
            continue;
        }
        let a: [usize; 6] = core::array::from_fn(|_| arg(&mut r, buf));
        let _ = sys::syscall(n, &a);
    }
    0
}

/// One child: rt_sigreturn on stacks of junk (every one must kill only the caller).
fn bad_frames(seed: u64) -> i32 {
    let mut r = Rng(seed | 1);
    let frame = match sys::mmap(0, 16384, 3, 0x22, -1, 0) {
        Ok(p) => p,
        Err(_) => return 2,
    };
    // SAFETY: the mapping is 16 KiB of writable memory this child owns.
    let bytes = unsafe { core::slice::from_raw_parts_mut(frame as *mut u8, 16384) };
    for b in bytes.iter_mut() {
        *b = r.next() as u8;
    }
    // Sprinkle plausible record headers so the parser goes deeper than the first check.
    for off in (592..4640).step_by(16) {
        if r.below(4) == 0 {
            let magic: u32 = [
                0x4650_8001,
                0x5356_4501,
                0x5450_4902,
                0x5436_6345,
                0x4558_5401,
                0,
            ][r.below(6) as usize];
            let size: u32 = [0, 16, 528, 32, 576, r.below(70000) as u32][r.below(6) as usize];
            bytes[off..off + 4].copy_from_slice(&magic.to_le_bytes());
            bytes[off + 4..off + 8].copy_from_slice(&size.to_le_bytes());
        }
    }
    let sp = frame + (r.below(64) as usize) * 16;
    // SAFETY: rt_sigreturn with SP at our junk; it does not return normally (the kernel either
    // kills us or "returns" into whatever the junk says, which then faults).
    unsafe {
        core::arch::asm!("mov sp, {sp}", "mov x8, #139", "svc #0", "brk #0", sp = in(reg) sp, options(noreturn))
    }
}

/// The directories every program walks through, with the mode and owner they must keep.
const SHARED_DIRS: [&str; 2] = ["/", "/tmp"];

/// The mode and owner of each of SHARED_DIRS.
fn shared_dirs() -> Result<[(u32, u32, u32); 2], sys::Errno> {
    let mut out = [(0, 0, 0); 2];
    for (o, d) in out.iter_mut().zip(SHARED_DIRS) {
        let st = sys::stat(d)?;
        *o = (st.st_mode, st.st_uid, st.st_gid);
    }
    Ok(out)
}

/// Runs `children` children, each doing `f(seed)`, waiting for each with a deadline.
fn run_children(name: &str, children: u64, f: fn(u64) -> i32) -> TestResult {
    let base = sys::now_ns() | 1;
    println!("# {name}: seeds from {base:#x}");
    let mut seedr = Rng(base);
    let (mut exited, mut signaled) = (0, 0);
    let dirs = t!(shared_dirs());
    for _ in 0..children {
        let seed = seedr.next();
        let pid = t!(spawn(|| f(seed)));
        let t0 = sys::now_ns();
        let st = loop {
            let (p, st) = t!(sys::waitpid(pid, 1 /* WNOHANG */));
            if p == pid {
                break st;
            }
            if sys::now_ns() - t0 > 3_000_000_000 {
                // A child that blocks (a random futex, pause, read...) is stopped here.
                let _ = sys::kill(pid, 9);
                let (_, st) = t!(sys::waitpid(pid, 0));
                break st;
            }
            let _ = sys::syscall(nr::SCHED_YIELD, &[]);
        };
        if wifexited(st) {
            exited += 1;
        } else if wifsignaled(st) {
            signaled += 1;
        } else {
            check!(
                false,
                "{name}: seed {seed:#x}: child neither exited nor was killed: {st:#x}"
            );
        }
        let now = t!(shared_dirs());
        if now != dirs {
            // Put them back before failing, so that the programs after this one are not hit.
            for (d, (mode, uid, gid)) in SHARED_DIRS.iter().zip(dirs) {
                let _ = sys::fchownat(AT_FDCWD, d, uid, gid, 0);
                let _ = sys::fchmodat(AT_FDCWD, d, mode & 0o7777);
            }
            let show = |v: [(u32, u32, u32); 2]| {
                v.map(|(mode, uid, gid)| format!("mode {mode:o} uid {uid} gid {gid}"))
            };
            check!(
                false,
                "{name}: seed {seed:#x}: the child changed {SHARED_DIRS:?} from {:?} to {:?}",
                show(dirs),
                show(now)
            );
        }
    }
    println!("# {name}: {children} children, {exited} exited, {signaled} killed by signals");
    Ok(())
}

fn random_syscalls() -> TestResult {
    run_children("syscalls", 40, |seed| storm(seed, 300))
}

fn random_sigreturn_frames() -> TestResult {
    run_children("sigreturn", 40, bad_frames)
}

fn still_alive() -> TestResult {
    // The kernel still answers, and so do pipes, fork and wait.
    let [r, w] = t!(sys::pipe2(0));
    let pid = t!(spawn(move || if sys::write(w, b"ok").is_ok() {
        0
    } else {
        1
    }));
    let mut b = [0u8; 2];
    check_eq!(t!(sys::read(r, &mut b)), 2);
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(wifexited(st), "the last child exited");
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("random_syscalls_kill_only_their_caller", random_syscalls),
        (
            "random_sigreturn_frames_kill_only_their_caller",
            random_sigreturn_frames,
        ),
        ("kernel_still_alive", still_alive),
    ])
}

entry!(main);
