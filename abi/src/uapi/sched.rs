//! Process uapi: clone flags and `struct clone_args`, wait options and status words, rseq
//! sizes and scheduling policies. Futexes are in `futex`.

use crate::uapi::errno::{Errno, SysResult};
use crate::util::bytes::*;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// ---- clone flags (linux/sched.h) ----

/// The low byte of legacy clone flags: the signal sent to the parent when the child exits.
pub const CSIGNAL: u64 = 0x0000_00ff;
pub const CLONE_NEWTIME: u64 = 0x0000_0080;
pub const CLONE_VM: u64 = 0x0000_0100;
pub const CLONE_FS: u64 = 0x0000_0200;
pub const CLONE_FILES: u64 = 0x0000_0400;
pub const CLONE_SIGHAND: u64 = 0x0000_0800;
pub const CLONE_PIDFD: u64 = 0x0000_1000;
pub const CLONE_PTRACE: u64 = 0x0000_2000;
pub const CLONE_VFORK: u64 = 0x0000_4000;
pub const CLONE_PARENT: u64 = 0x0000_8000;
pub const CLONE_THREAD: u64 = 0x0001_0000;
pub const CLONE_NEWNS: u64 = 0x0002_0000;
pub const CLONE_SYSVSEM: u64 = 0x0004_0000;
pub const CLONE_SETTLS: u64 = 0x0008_0000;
pub const CLONE_PARENT_SETTID: u64 = 0x0010_0000;
pub const CLONE_CHILD_CLEARTID: u64 = 0x0020_0000;
pub const CLONE_DETACHED: u64 = 0x0040_0000;
pub const CLONE_UNTRACED: u64 = 0x0080_0000;
pub const CLONE_CHILD_SETTID: u64 = 0x0100_0000;
pub const CLONE_NEWCGROUP: u64 = 0x0200_0000;
pub const CLONE_NEWUTS: u64 = 0x0400_0000;
pub const CLONE_NEWIPC: u64 = 0x0800_0000;
pub const CLONE_NEWUSER: u64 = 0x1000_0000;
pub const CLONE_NEWPID: u64 = 0x2000_0000;
pub const CLONE_NEWNET: u64 = 0x4000_0000;
pub const CLONE_IO: u64 = 0x8000_0000;
/// clone3 only: reset the child's handlers to SIG_DFL.
pub const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;
/// clone3 only: place the child in the cgroup given by `cgroup`.
pub const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
/// Every flag the legacy clone syscall can carry (its argument is 32 bits wide).
pub const CLONE_LEGACY_FLAGS: u64 = 0xffff_ffff;

pub const CLONE_ARGS_SIZE_VER0: usize = 64;
pub const CLONE_ARGS_SIZE_VER1: usize = 80;
pub const CLONE_ARGS_SIZE_VER2: usize = 88;
/// Deepest PID-namespace nesting; bounds `set_tid_size`.
pub const MAX_PID_NS_LEVEL: u64 = 32;
/// Highest valid signal number (`_NSIG`).
const NSIG: u64 = 64;

/// `struct clone_args` (clone3), every field a u64, 88 bytes in its current version.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct CloneArgs {
    pub flags: u64,
    /// Where to store the pidfd (CLONE_PIDFD).
    pub pidfd: u64,
    pub child_tid: u64,
    pub parent_tid: u64,
    pub exit_signal: u64,
    /// Lowest address of the child's stack (clone3); the child's SP is stack + stack_size.
    pub stack: u64,
    pub stack_size: u64,
    pub tls: u64,
    pub set_tid: u64,
    pub set_tid_size: u64,
    pub cgroup: u64,
}

const _: () = {
    assert!(core::mem::size_of::<CloneArgs>() == CLONE_ARGS_SIZE_VER2);
    assert!(core::mem::offset_of!(CloneArgs, set_tid) == CLONE_ARGS_SIZE_VER0);
    assert!(core::mem::offset_of!(CloneArgs, cgroup) == CLONE_ARGS_SIZE_VER1);
};

impl CloneArgs {
    /// The legacy clone syscall on arm64 (`CLONE_BACKWARDS` argument order):
    /// `clone(flags, newsp, parent_tidptr, tls, child_tidptr)`. The low byte of `flags` is the
    /// exit signal and only the low 32 bits count. `newsp` is the child's SP itself (0 = share
    /// the parent's SP value), so it is returned in `stack` with `stack_size` 0.
    pub fn from_legacy(flags: u64, newsp: u64, parent_tid: u64, tls: u64, child_tid: u64) -> Self {
        let low = flags & 0xffff_ffff;
        CloneArgs {
            flags: low & !CSIGNAL,
            pidfd: parent_tid,
            child_tid,
            parent_tid,
            exit_signal: low & CSIGNAL,
            stack: newsp,
            tls,
            ..CloneArgs::default()
        }
    }

    /// Decode clone3's argument block as `copy_clone_args_from_user` does. `bytes` is the
    /// `size` bytes the caller copied from user space (the caller rejects size > page size with
    /// E2BIG before copying). Sizes below VER0 (64) ⇒ EINVAL. Any other size is a version of
    /// the struct, taken as `copy_struct_from_user` takes it: a shorter one (VER0 = 64,
    /// VER1 = 80, or any size between) is zero-extended, keeping the bytes of a field it
    /// covers in part; bytes past the known 88 must be zero ⇒ else E2BIG. Then clone3's own
    /// rules (`clone3_args_valid`) ⇒ EINVAL.
    pub fn from_clone3(bytes: &[u8]) -> SysResult<CloneArgs> {
        if bytes.len() < CLONE_ARGS_SIZE_VER0 {
            return Err(Errno::EINVAL);
        }
        let known = struct_from_user::<CLONE_ARGS_SIZE_VER2>(bytes)?;
        let a: CloneArgs = zerocopy::transmute!(known);
        if a.set_tid_size > MAX_PID_NS_LEVEL
            || (a.set_tid == 0 && a.set_tid_size != 0)
            || (a.set_tid != 0 && a.set_tid_size == 0)
        {
            return Err(Errno::EINVAL);
        }
        if a.exit_signal & !CSIGNAL != 0 || a.exit_signal > NSIG {
            return Err(Errno::EINVAL);
        }
        if a.flags & CLONE_INTO_CGROUP != 0
            && (a.cgroup > i32::MAX as u64 || bytes.len() < CLONE_ARGS_SIZE_VER2)
        {
            return Err(Errno::EINVAL);
        }
        if a.flags & !(CLONE_LEGACY_FLAGS | CLONE_CLEAR_SIGHAND | CLONE_INTO_CGROUP) != 0 {
            return Err(Errno::EINVAL);
        }
        // clone3 keeps these bits of the legacy flags for later use: the exit signal has its
        // own field, and CLONE_DETACHED has long been ignored.
        if a.flags & (CLONE_DETACHED | (CSIGNAL & !CLONE_NEWTIME)) != 0 {
            return Err(Errno::EINVAL);
        }
        if a.flags & (CLONE_SIGHAND | CLONE_CLEAR_SIGHAND) == CLONE_SIGHAND | CLONE_CLEAR_SIGHAND {
            return Err(Errno::EINVAL);
        }
        if a.flags & (CLONE_THREAD | CLONE_PARENT) != 0 && a.exit_signal != 0 {
            return Err(Errno::EINVAL);
        }
        if (a.stack == 0) != (a.stack_size == 0) {
            return Err(Errno::EINVAL);
        }
        Ok(a)
    }

    /// The child's initial SP: for clone3 the top of [stack, stack+size), for legacy clone
    /// `newsp`; None means "same SP as the parent".
    pub fn child_sp(&self) -> Option<u64> {
        match (self.stack, self.stack_size) {
            (0, _) => None,
            (s, 0) => Some(s),
            (s, n) => Some(s.wrapping_add(n)),
        }
    }

    /// The flag-combination rules every clone variant shares (`copy_process`, `kernel_clone`),
    /// all EINVAL. `legacy` is true for the clone syscall (pidfd goes to parent_tid there).
    pub fn check_flags(&self, legacy: bool) -> SysResult<()> {
        let f = self.flags;
        let both = |a: u64, b: u64| f & (a | b) == a | b;
        if both(CLONE_NEWNS, CLONE_FS) || both(CLONE_NEWUSER, CLONE_FS) {
            return Err(Errno::EINVAL);
        }
        if f & CLONE_THREAD != 0 && f & CLONE_SIGHAND == 0 {
            return Err(Errno::EINVAL);
        }
        if f & CLONE_SIGHAND != 0 && f & CLONE_VM == 0 {
            return Err(Errno::EINVAL);
        }
        if f & CLONE_THREAD != 0 && f & (CLONE_NEWUSER | CLONE_NEWPID) != 0 {
            return Err(Errno::EINVAL);
        }
        if f & CLONE_PIDFD != 0 && f & CLONE_DETACHED != 0 {
            return Err(Errno::EINVAL);
        }
        if legacy && both(CLONE_PIDFD, CLONE_PARENT_SETTID) {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }
}

// ---- wait ----

pub const WNOHANG: u32 = 0x0000_0001;
pub const WUNTRACED: u32 = 0x0000_0002;
pub const WSTOPPED: u32 = WUNTRACED;
pub const WEXITED: u32 = 0x0000_0004;
pub const WCONTINUED: u32 = 0x0000_0008;
pub const WNOWAIT: u32 = 0x0100_0000;
pub const __WNOTHREAD: u32 = 0x2000_0000;
pub const __WALL: u32 = 0x4000_0000;
pub const __WCLONE: u32 = 0x8000_0000;

/// waitid idtype.
pub const P_ALL: u32 = 0;
pub const P_PID: u32 = 1;
pub const P_PGID: u32 = 2;
pub const P_PIDFD: u32 = 3;

/// wait4's option check; returns the options with WEXITED added, as Linux does internally.
pub fn wait4_options(options: u32) -> SysResult<u32> {
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | __WNOTHREAD | __WCLONE | __WALL) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(options | WEXITED)
}

/// waitid's option check: only known bits, and at least one of WEXITED/WSTOPPED/WCONTINUED.
pub fn waitid_options(options: u32) -> SysResult<u32> {
    let known =
        WNOHANG | WNOWAIT | WEXITED | WSTOPPED | WCONTINUED | __WNOTHREAD | __WCLONE | __WALL;
    if options & !known != 0 || options & (WEXITED | WSTOPPED | WCONTINUED) == 0 {
        return Err(Errno::EINVAL);
    }
    Ok(options)
}

/// The status word wait4 stores (`int *wstatus`).
pub mod wstatus {
    /// exit(code) / exit_group(code): only the low 8 bits survive.
    pub const fn exited(code: i32) -> i32 {
        (code & 0xff) << 8
    }
    /// Killed by `sig`; `core` sets the 0x80 "core dumped" bit.
    pub const fn signaled(sig: u32, core: bool) -> i32 {
        (sig as i32 & 0x7f) | if core { 0x80 } else { 0 }
    }
    /// Stopped by `sig` (group stop or ptrace signal stop).
    pub const fn stopped(sig: u32) -> i32 {
        ((sig as i32 & 0xff) << 8) | 0x7f
    }
    /// A ptrace event stop: SIGTRAP | event << 8 in the stop-signal byte and above.
    pub const fn ptrace_event(sig: u32, event: u32) -> i32 {
        ((event as i32) << 16) | stopped(sig)
    }
    /// Resumed by SIGCONT (WCONTINUED).
    pub const fn continued() -> i32 {
        0xffff
    }

    pub const fn wifexited(s: i32) -> bool {
        s & 0x7f == 0
    }
    pub const fn wexitstatus(s: i32) -> i32 {
        (s >> 8) & 0xff
    }
    pub const fn wifsignaled(s: i32) -> bool {
        ((s & 0x7f) + 1) as i8 >= 2
    }
    pub const fn wtermsig(s: i32) -> i32 {
        s & 0x7f
    }
    pub const fn wcoredump(s: i32) -> bool {
        s & 0x80 != 0
    }
    pub const fn wifstopped(s: i32) -> bool {
        s & 0xff == 0x7f
    }
    pub const fn wstopsig(s: i32) -> i32 {
        (s >> 8) & 0xff
    }
    pub const fn wifcontinued(s: i32) -> bool {
        s == 0xffff
    }
}

// ---- rseq ----

/// The original (and minimum) `struct rseq` size, and its required alignment.
pub const ORIG_RSEQ_SIZE: u32 = 32;
pub const RSEQ_ALIGN: u32 = 32;
/// rseq flag: unregister.
pub const RSEQ_FLAG_UNREGISTER: u32 = 1;
/// `offsetof(struct rseq, end)` on 6.3+: cpu_id_start, cpu_id, rseq_cs, flags, node_id, mm_cid.
pub const RSEQ_FEATURE_SIZE: u32 = 28;

// ---- scheduling policies ----

pub const SCHED_NORMAL: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;
pub const SCHED_BATCH: u32 = 3;
pub const SCHED_IDLE: u32 = 5;
pub const SCHED_DEADLINE: u32 = 6;
pub const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;

#[cfg(test)]
mod tests {
    use super::wstatus::*;
    use super::*;
    use std::vec;

    #[test]
    fn legacy_clone_decoding() {
        let flags = CLONE_VM | CLONE_VFORK | 17; // posix_spawn-style vfork with SIGCHLD
        let a = CloneArgs::from_legacy(flags | (1 << 40), 0x7000, 0x10, 0x20, 0x30);
        assert_eq!(a.flags, CLONE_VM | CLONE_VFORK);
        assert_eq!(a.exit_signal, 17);
        assert_eq!(a.child_sp(), Some(0x7000));
        assert_eq!((a.parent_tid, a.tls, a.child_tid), (0x10, 0x20, 0x30));
        assert_eq!(a.check_flags(true), Ok(()));
        assert_eq!(CloneArgs::from_legacy(17, 0, 0, 0, 0).child_sp(), None);
    }

    #[test]
    fn clone_flag_rules() {
        let chk = |f: u64| {
            CloneArgs {
                flags: f,
                ..CloneArgs::default()
            }
            .check_flags(false)
        };
        assert_eq!(chk(CLONE_THREAD | CLONE_VM), Err(Errno::EINVAL));
        assert_eq!(chk(CLONE_SIGHAND), Err(Errno::EINVAL));
        assert_eq!(chk(CLONE_NEWNS | CLONE_FS), Err(Errno::EINVAL));
        assert_eq!(chk(CLONE_PIDFD | CLONE_DETACHED), Err(Errno::EINVAL));
        let thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD;
        assert_eq!(chk(thread | CLONE_SYSVSEM | CLONE_SETTLS), Ok(()));
        assert_eq!(chk(thread | CLONE_NEWPID), Err(Errno::EINVAL));
        let legacy = CloneArgs {
            flags: CLONE_PIDFD | CLONE_PARENT_SETTID,
            ..CloneArgs::default()
        };
        assert_eq!(legacy.check_flags(true), Err(Errno::EINVAL));
        assert_eq!(legacy.check_flags(false), Ok(()));
    }

    fn clone3_bytes(fields: &[u64], extra: usize) -> std::vec::Vec<u8> {
        let mut b = vec![0u8; fields.len() * 8 + extra];
        for (i, f) in fields.iter().enumerate() {
            put_u64(&mut b, i * 8, *f);
        }
        b
    }

    #[test]
    fn clone3_rules() {
        // VER0: flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls.
        let ok = clone3_bytes(&[CLONE_VM, 0, 0, 0, 17, 0x1000, 0x1000, 0], 0);
        let a = CloneArgs::from_clone3(&ok).unwrap();
        assert_eq!(a.exit_signal, 17);
        assert_eq!(a.child_sp(), Some(0x2000));
        assert_eq!(CloneArgs::from_clone3(&ok[..56]), Err(Errno::EINVAL));
        let mut big = clone3_bytes(&[0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0], 8);
        assert!(CloneArgs::from_clone3(&big).is_ok());
        big[95] = 1;
        assert_eq!(CloneArgs::from_clone3(&big), Err(Errno::E2BIG));
        let bad_sig = clone3_bytes(&[0, 0, 0, 0, 65, 0, 0, 0], 0);
        assert_eq!(CloneArgs::from_clone3(&bad_sig), Err(Errno::EINVAL));
        let thread_sig = clone3_bytes(
            &[
                CLONE_THREAD | CLONE_SIGHAND | CLONE_VM,
                0,
                0,
                0,
                17,
                0,
                0,
                0,
            ],
            0,
        );
        assert_eq!(CloneArgs::from_clone3(&thread_sig), Err(Errno::EINVAL));
        let half_stack = clone3_bytes(&[0, 0, 0, 0, 0, 0x1000, 0, 0], 0);
        assert_eq!(CloneArgs::from_clone3(&half_stack), Err(Errno::EINVAL));
        let both = clone3_bytes(
            &[
                CLONE_SIGHAND | CLONE_CLEAR_SIGHAND | CLONE_VM,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
            ],
            0,
        );
        assert_eq!(CloneArgs::from_clone3(&both), Err(Errno::EINVAL));
        let unknown = clone3_bytes(&[1 << 40, 0, 0, 0, 0, 0, 0, 0], 0);
        assert_eq!(CloneArgs::from_clone3(&unknown), Err(Errno::EINVAL));
        let set_tid = clone3_bytes(&[0, 0, 0, 0, 0, 0, 0, 0, 0x1000, 0], 0);
        assert_eq!(CloneArgs::from_clone3(&set_tid), Err(Errno::EINVAL));
        let cgroup_v1 = clone3_bytes(&[CLONE_INTO_CGROUP, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0);
        assert_eq!(CloneArgs::from_clone3(&cgroup_v1), Err(Errno::EINVAL));
        for legacy_only in [17, CLONE_DETACHED] {
            let b = clone3_bytes(&[legacy_only, 0, 0, 0, 0, 0, 0, 0], 0);
            assert_eq!(CloneArgs::from_clone3(&b), Err(Errno::EINVAL));
        }
    }

    /// Every struct size from VER0 up reads as Linux's copy_struct_from_user reads it.
    #[test]
    fn clone3_sizes() {
        let full = clone3_bytes(&[CLONE_VM, 0, 0, 0, 17, 0, 0, 0, 0x7000, 1, 3], 0);
        assert_eq!(full.len(), CLONE_ARGS_SIZE_VER2);
        let v1 = CloneArgs::from_clone3(&full[..CLONE_ARGS_SIZE_VER1]).unwrap();
        assert_eq!((v1.set_tid, v1.set_tid_size, v1.cgroup), (0x7000, 1, 0));
        let v2 = CloneArgs::from_clone3(&full).unwrap();
        assert_eq!(v2.cgroup, 3);
        // A field given in part keeps the bytes given: set_tid_size's low half.
        let a = CloneArgs::from_clone3(&full[..76]).unwrap();
        assert_eq!((a.set_tid, a.set_tid_size), (0x7000, 1));
        // set_tid's low half without any size: refused as Linux refuses it.
        assert_eq!(CloneArgs::from_clone3(&full[..68]), Err(Errno::EINVAL));
        // Larger than the kernel knows: zeros are fine, anything else is E2BIG.
        let mut big = clone3_bytes(&[CLONE_VM, 0, 0, 0, 17, 0, 0, 0, 0x7000, 1, 3], 4000);
        assert_eq!(CloneArgs::from_clone3(&big), Ok(v2));
        big[CLONE_ARGS_SIZE_VER2] = 1;
        assert_eq!(CloneArgs::from_clone3(&big), Err(Errno::E2BIG));
        assert_eq!(CloneArgs::from_clone3(&full[..63]), Err(Errno::EINVAL));
    }

    #[test]
    fn wait_words() {
        assert_eq!(exited(3), 0x300);
        assert_eq!(exited(256 + 5), 0x500);
        assert_eq!(signaled(9, false), 9);
        assert_eq!(signaled(11, true), 0x8b);
        assert_eq!(stopped(19), 0x137f);
        assert_eq!(ptrace_event(5, 3), 0x3057f);
        assert_eq!(continued(), 0xffff);
        assert!(wifexited(exited(0)) && wexitstatus(exited(42)) == 42);
        assert!(wifsignaled(signaled(15, false)) && !wifsignaled(exited(1)));
        assert!(!wifsignaled(stopped(19)) && !wifsignaled(continued()));
        assert!(wcoredump(signaled(6, true)) && wtermsig(signaled(6, true)) == 6);
        assert!(wifstopped(stopped(19)) && wstopsig(stopped(19)) == 19);
        assert!(wifcontinued(continued()));
        assert_eq!(wait4_options(WNOHANG), Ok(WNOHANG | WEXITED));
        assert_eq!(wait4_options(WNOWAIT), Err(Errno::EINVAL));
        assert_eq!(waitid_options(WNOHANG), Err(Errno::EINVAL));
        assert_eq!(waitid_options(WEXITED | WNOWAIT), Ok(WEXITED | WNOWAIT));
    }
}
