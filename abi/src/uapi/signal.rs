//! Signals: numbers and default actions, `Sigset`, the arm64 kernel `struct sigaction`,
//! `stack_t` with Linux's sigaltstack rules, and `siginfo_t` builders.

use crate::uapi::errno::{Errno, SysResult};
use crate::util::bytes::*;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const SIGHUP: u32 = 1;
pub const SIGINT: u32 = 2;
pub const SIGQUIT: u32 = 3;
pub const SIGILL: u32 = 4;
pub const SIGTRAP: u32 = 5;
pub const SIGABRT: u32 = 6;
pub const SIGIOT: u32 = SIGABRT;
pub const SIGBUS: u32 = 7;
pub const SIGFPE: u32 = 8;
pub const SIGKILL: u32 = 9;
pub const SIGUSR1: u32 = 10;
pub const SIGSEGV: u32 = 11;
pub const SIGUSR2: u32 = 12;
pub const SIGPIPE: u32 = 13;
pub const SIGALRM: u32 = 14;
pub const SIGTERM: u32 = 15;
pub const SIGSTKFLT: u32 = 16;
pub const SIGCHLD: u32 = 17;
pub const SIGCONT: u32 = 18;
pub const SIGSTOP: u32 = 19;
pub const SIGTSTP: u32 = 20;
pub const SIGTTIN: u32 = 21;
pub const SIGTTOU: u32 = 22;
pub const SIGURG: u32 = 23;
pub const SIGXCPU: u32 = 24;
pub const SIGXFSZ: u32 = 25;
pub const SIGVTALRM: u32 = 26;
pub const SIGPROF: u32 = 27;
pub const SIGWINCH: u32 = 28;
pub const SIGIO: u32 = 29;
pub const SIGPOLL: u32 = SIGIO;
pub const SIGPWR: u32 = 30;
pub const SIGSYS: u32 = 31;
pub const SIGRTMIN: u32 = 32;
pub const SIGRTMAX: u32 = 64;
/// Highest signal number (`_NSIG`); valid signals are 1..=NSIG.
pub const NSIG: u32 = 64;

/// `1..=64`: a real signal (0 is "check only" for kill and is not valid here).
pub const fn valid_signal(sig: u32) -> bool {
    sig >= 1 && sig <= NSIG
}

/// What happens to a signal whose handler is SIG_DFL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultAction {
    /// Kill the thread group.
    Term,
    /// Kill the thread group and (on Linux) dump core: wait status gets the 0x80 bit.
    Core,
    /// Stop the thread group.
    Stop,
    /// Continue if stopped (SIGCONT), otherwise nothing.
    Cont,
    Ign,
}

/// Linux's default action for each signal (real-time signals terminate).
pub const fn default_action(sig: u32) -> Option<DefaultAction> {
    use DefaultAction::*;
    Some(match sig {
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ
        | SIGSYS => Core,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => Stop,
        SIGCONT => Cont,
        SIGCHLD | SIGURG | SIGWINCH => Ign,
        1..=NSIG => Term,
        _ => return None,
    })
}

/// SIGKILL and SIGSTOP: cannot be caught, blocked or ignored.
pub const fn sig_kernel_only(sig: u32) -> bool {
    sig == SIGKILL || sig == SIGSTOP
}

/// The signal's name ("SIGSEGV"); real-time ones are "SIGRT".
pub const fn sig_name(sig: u32) -> Option<&'static str> {
    const NAMES: [&str; 32] = [
        "",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match sig {
        1..=31 => Some(NAMES[sig as usize]),
        SIGRTMIN..=SIGRTMAX => Some("SIGRT"),
        _ => None,
    }
}

// ---- sigset ----

/// The kernel's 64-bit `sigset_t`: bit `signo - 1`.
#[repr(transparent)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Sigset(pub u64);

/// Signals delivered before others when several are pending: the synchronous fault signals.
const SYNCHRONOUS_MASK: u64 = (1 << (SIGSEGV - 1))
    | (1 << (SIGBUS - 1))
    | (1 << (SIGILL - 1))
    | (1 << (SIGTRAP - 1))
    | (1 << (SIGFPE - 1))
    | (1 << (SIGSYS - 1));

impl Sigset {
    pub const EMPTY: Sigset = Sigset(0);
    pub const FULL: Sigset = Sigset(u64::MAX);
    /// SIGKILL | SIGSTOP.
    pub const UNBLOCKABLE: Sigset = Sigset((1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1)));
    /// Size user space passes as `sigsetsize` to rt_sig* calls; anything else is EINVAL.
    pub const SIZE: usize = 8;

    /// The set holding just `sig` (empty for an invalid number).
    pub const fn of(sig: u32) -> Sigset {
        if valid_signal(sig) {
            Sigset(1 << (sig - 1))
        } else {
            Sigset(0)
        }
    }
    pub const fn contains(self, sig: u32) -> bool {
        self.0 & Sigset::of(sig).0 != 0
    }
    pub fn add(&mut self, sig: u32) {
        self.0 |= Sigset::of(sig).0;
    }
    pub fn remove(&mut self, sig: u32) {
        self.0 &= !Sigset::of(sig).0;
    }
    pub const fn union(self, o: Sigset) -> Sigset {
        Sigset(self.0 | o.0)
    }
    pub const fn intersect(self, o: Sigset) -> Sigset {
        Sigset(self.0 & o.0)
    }
    pub const fn without(self, o: Sigset) -> Sigset {
        Sigset(self.0 & !o.0)
    }
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The set with SIGKILL and SIGSTOP removed: what any blocked mask is reduced to.
    pub const fn blockable(self) -> Sigset {
        self.without(Sigset::UNBLOCKABLE)
    }
    /// Which of these signals to deliver first: a synchronous fault signal (lowest number)
    /// if any, else the lowest number (Linux's `next_signal`).
    pub const fn next(self) -> Option<u32> {
        let sync = self.0 & SYNCHRONOUS_MASK;
        let pick = if sync != 0 { sync } else { self.0 };
        if pick == 0 {
            None
        } else {
            Some(pick.trailing_zeros() + 1)
        }
    }
    pub fn iter(self) -> impl Iterator<Item = u32> {
        (1..=NSIG).filter(move |&s| self.contains(s))
    }
}

pub const SIG_BLOCK: u32 = 0;
pub const SIG_UNBLOCK: u32 = 1;
pub const SIG_SETMASK: u32 = 2;

/// rt_sigprocmask: the new blocked mask from the old one, `how` and `set` (EINVAL for an
/// unknown `how`). SIGKILL/SIGSTOP are silently never blocked.
pub fn sigprocmask(old: Sigset, how: u32, set: Sigset) -> SysResult<Sigset> {
    let new = match how {
        SIG_BLOCK => old.union(set),
        SIG_UNBLOCK => old.without(set),
        SIG_SETMASK => set,
        _ => return Err(Errno::EINVAL),
    };
    Ok(new.blockable())
}

// ---- sigaction ----

pub const SA_NOCLDSTOP: u64 = 0x0000_0001;
pub const SA_NOCLDWAIT: u64 = 0x0000_0002;
pub const SA_SIGINFO: u64 = 0x0000_0004;
/// Never supported: lets user space probe that unknown flags are cleared.
pub const SA_UNSUPPORTED: u64 = 0x0000_0400;
/// arm64: deliver fault addresses with their tag bits (si_addr bits 63:56).
pub const SA_EXPOSE_TAGBITS: u64 = 0x0000_0800;
pub const SA_RESTORER: u64 = 0x0400_0000;
pub const SA_ONSTACK: u64 = 0x0800_0000;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;
pub const SA_NOMASK: u64 = SA_NODEFER;
pub const SA_ONESHOT: u64 = SA_RESETHAND;
/// The flags the kernel keeps; others are cleared on the way in and out (`UAPI_SA_FLAGS`).
pub const UAPI_SA_FLAGS: u64 = SA_NOCLDSTOP
    | SA_NOCLDWAIT
    | SA_SIGINFO
    | SA_ONSTACK
    | SA_RESTART
    | SA_NODEFER
    | SA_RESETHAND
    | SA_EXPOSE_TAGBITS
    | SA_RESTORER;

pub const SIG_DFL: u64 = 0;
pub const SIG_IGN: u64 = 1;
pub const SIG_ERR: u64 = u64::MAX;

/// The arm64 kernel `struct sigaction` rt_sigaction copies: handler, flags, restorer, mask
/// (32 bytes; glibc's user struct differs and is translated by libc).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Sigaction {
    pub sa_handler: u64,
    pub sa_flags: u64,
    pub sa_restorer: u64,
    pub sa_mask: Sigset,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Sigaction>() == 32);
    assert!(offset_of!(Sigaction, sa_flags) == 8);
    assert!(offset_of!(Sigaction, sa_restorer) == 16);
    assert!(offset_of!(Sigaction, sa_mask) == 24);
};

impl Sigaction {
    pub const SIZE: usize = 32;

    /// Is the disposition "ignore", explicitly or by default?
    pub fn ignores(&self, sig: u32) -> bool {
        self.sa_handler == SIG_IGN
            || (self.sa_handler == SIG_DFL && default_action(sig) == Some(DefaultAction::Ign))
    }

    /// The mask to block while the handler runs: current | sa_mask | the signal itself unless
    /// SA_NODEFER.
    pub fn handler_mask(&self, sig: u32, current: Sigset) -> Sigset {
        let mut m = current.union(self.sa_mask);
        if self.sa_flags & SA_NODEFER == 0 {
            m.add(sig);
        }
        m.blockable()
    }
}

/// rt_sigaction's checks before anything changes: sigsetsize must be 8, the signal valid, and
/// SIGKILL/SIGSTOP may be queried but not changed (all EINVAL). Returns the action to store,
/// with unknown flag bits cleared and SIGKILL/SIGSTOP removed from its mask.
pub fn sigaction_check(
    sig: u32,
    new: Option<Sigaction>,
    sigsetsize: usize,
) -> SysResult<Option<Sigaction>> {
    if sigsetsize != Sigset::SIZE || !valid_signal(sig) {
        return Err(Errno::EINVAL);
    }
    match new {
        Some(_) if sig_kernel_only(sig) => Err(Errno::EINVAL),
        Some(mut a) => {
            a.sa_flags &= UAPI_SA_FLAGS;
            a.sa_mask = a.sa_mask.blockable();
            Ok(Some(a))
        }
        None => Ok(None),
    }
}

/// What rt_sigaction reports as the old action: the stored one with non-uapi flags cleared.
pub fn sigaction_report(stored: &Sigaction) -> Sigaction {
    Sigaction {
        sa_flags: stored.sa_flags & UAPI_SA_FLAGS,
        ..*stored
    }
}

// ---- stack_t / sigaltstack ----

pub const SS_ONSTACK: i32 = 1;
pub const SS_DISABLE: i32 = 2;
pub const SS_AUTODISARM: i32 = 1 << 31;
/// Mode modifiers sigaltstack accepts besides the mode.
pub const SS_FLAG_BITS: i32 = SS_AUTODISARM;
/// arm64 uapi: the smallest alternate stack sigaltstack accepts (ENOMEM below). The real need
/// with SVE/SME is AT_MINSIGSTKSZ (Linux's Documentation/arch/arm64/elf_hwcaps.rst and sve.rst); Linux does not enforce it on arm64.
pub const MINSIGSTKSZ: u64 = 5120;
pub const SIGSTKSZ: u64 = 16384;

/// `stack_t`: ss_sp @0, ss_flags (int) @8, ss_size @16; 24 bytes. The C struct's implicit
/// hole after `ss_flags` is the explicit `__pad` here (zero when written; ignored when read).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct StackT {
    pub ss_sp: u64,
    pub ss_flags: i32,
    pub __pad: u32,
    pub ss_size: u64,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<StackT>() == 24);
    assert!(offset_of!(StackT, ss_flags) == 8);
    assert!(offset_of!(StackT, ss_size) == 16);
};

impl StackT {
    pub const SIZE: usize = 24;

    pub const fn new(ss_sp: u64, ss_flags: i32, ss_size: u64) -> StackT {
        StackT {
            ss_sp,
            ss_flags,
            __pad: 0,
            ss_size,
        }
    }
}

/// A thread's alternate signal stack (`sas_ss_sp`, `sas_ss_size`, `sas_ss_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AltStack {
    pub sp: u64,
    pub size: u64,
    pub flags: i32,
}

impl AltStack {
    /// Is `sp` inside the alternate stack? Never, with SS_AUTODISARM (Linux's reasoning: the
    /// stack is disarmed while in use, so being on it means user space re-armed it itself).
    pub fn on_stack(&self, sp: u64) -> bool {
        if self.flags & SS_AUTODISARM != 0 {
            return false;
        }
        sp > self.sp && sp - self.sp <= self.size
    }

    /// SS_DISABLE without a stack, SS_ONSTACK while on it, else 0 (`sas_ss_flags`).
    pub fn mode_for(&self, sp: u64) -> i32 {
        if self.size == 0 {
            SS_DISABLE
        } else if self.on_stack(sp) {
            SS_ONSTACK
        } else {
            0
        }
    }

    /// The `old` value sigaltstack reports for user SP `sp`.
    pub fn report(&self, sp: u64) -> StackT {
        StackT::new(
            self.sp,
            self.mode_for(sp) | (self.flags & SS_FLAG_BITS),
            self.size,
        )
    }

    /// sigaltstack(new) at user SP `sp`, as `do_sigaltstack` checks it: EPERM while running on
    /// the current alternate stack; EINVAL for a mode other than 0, SS_ONSTACK or SS_DISABLE
    /// (after SS_AUTODISARM is taken out); ENOMEM if smaller than `min_size` (MINSIGSTKSZ).
    /// SS_DISABLE clears sp and size.
    pub fn set(&mut self, new: StackT, sp: u64, min_size: u64) -> SysResult<()> {
        if self.on_stack(sp) {
            return Err(Errno::EPERM);
        }
        let mode = new.ss_flags & !SS_FLAG_BITS;
        if mode != SS_DISABLE && mode != SS_ONSTACK && mode != 0 {
            return Err(Errno::EINVAL);
        }
        if mode == SS_DISABLE {
            *self = AltStack {
                sp: 0,
                size: 0,
                flags: new.ss_flags,
            };
            return Ok(());
        }
        if new.ss_size < min_size {
            return Err(Errno::ENOMEM);
        }
        *self = AltStack {
            sp: new.ss_sp,
            size: new.ss_size,
            flags: new.ss_flags,
        };
        Ok(())
    }

    /// Where a signal frame goes: the top of the alternate stack when the handler has
    /// SA_ONSTACK and a stack is set up that we are not already on, else `sp` (`sigsp`).
    pub fn frame_top(&self, sp: u64, sa_flags: u64) -> u64 {
        if sa_flags & SA_ONSTACK != 0 && self.mode_for(sp) == 0 {
            self.sp.wrapping_add(self.size)
        } else {
            sp
        }
    }

    /// The `uc_stack` a signal frame records (`__save_altstack`): the stored values as they
    /// are. Call `disarm_after_save` next.
    pub fn saved(&self) -> StackT {
        StackT::new(self.sp, self.flags, self.size)
    }

    /// After the frame is written: SS_AUTODISARM resets the alternate stack to none.
    pub fn disarm_after_save(&mut self) {
        if self.flags & SS_AUTODISARM != 0 {
            *self = AltStack::default();
        }
    }
}

// ---- siginfo_t ----

pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_QUEUE: i32 = -1;
pub const SI_TIMER: i32 = -2;
pub const SI_MESGQ: i32 = -3;
pub const SI_ASYNCIO: i32 = -4;
pub const SI_SIGIO: i32 = -5;
pub const SI_TKILL: i32 = -6;
pub const SI_DETHREAD: i32 = -7;
pub const SI_ASYNCNL: i32 = -60;

pub const ILL_ILLOPC: i32 = 1;
pub const ILL_ILLOPN: i32 = 2;
pub const ILL_ILLADR: i32 = 3;
pub const ILL_ILLTRP: i32 = 4;
pub const ILL_PRVOPC: i32 = 5;
pub const ILL_PRVREG: i32 = 6;
pub const ILL_COPROC: i32 = 7;
pub const ILL_BADSTK: i32 = 8;
pub const ILL_BADIADDR: i32 = 9;

pub const FPE_INTDIV: i32 = 1;
pub const FPE_INTOVF: i32 = 2;
pub const FPE_FLTDIV: i32 = 3;
pub const FPE_FLTOVF: i32 = 4;
pub const FPE_FLTUND: i32 = 5;
pub const FPE_FLTRES: i32 = 6;
pub const FPE_FLTINV: i32 = 7;
pub const FPE_FLTSUB: i32 = 8;
pub const FPE_FLTUNK: i32 = 14;
pub const FPE_CONDTRAP: i32 = 15;

pub const SEGV_MAPERR: i32 = 1;
pub const SEGV_ACCERR: i32 = 2;
pub const SEGV_BNDERR: i32 = 3;
pub const SEGV_PKUERR: i32 = 4;
pub const SEGV_MTEAERR: i32 = 8;
pub const SEGV_MTESERR: i32 = 9;
pub const SEGV_CPERR: i32 = 10;

pub const BUS_ADRALN: i32 = 1;
pub const BUS_ADRERR: i32 = 2;
pub const BUS_OBJERR: i32 = 3;
pub const BUS_MCEERR_AR: i32 = 4;
pub const BUS_MCEERR_AO: i32 = 5;

pub const TRAP_BRKPT: i32 = 1;
pub const TRAP_TRACE: i32 = 2;
pub const TRAP_BRANCH: i32 = 3;
pub const TRAP_HWBKPT: i32 = 4;
pub const TRAP_UNK: i32 = 5;
pub const TRAP_PERF: i32 = 6;

pub const CLD_EXITED: i32 = 1;
pub const CLD_KILLED: i32 = 2;
pub const CLD_DUMPED: i32 = 3;
pub const CLD_TRAPPED: i32 = 4;
pub const CLD_STOPPED: i32 = 5;
pub const CLD_CONTINUED: i32 = 6;

pub const POLL_IN: i32 = 1;
pub const POLL_OUT: i32 = 2;
pub const POLL_MSG: i32 = 3;
pub const POLL_ERR: i32 = 4;
pub const POLL_PRI: i32 = 5;
pub const POLL_HUP: i32 = 6;

pub const SYS_SECCOMP: i32 = 1;

/// `siginfo_t`, 128 bytes: si_signo @0, si_errno @4, si_code @8, then a union at 16 whose
/// members Svelt fills are:
///
/// ```text
/// kill/tkill/queue: si_pid i32 @16, si_uid u32 @20, si_value u64 @24 (queue only)
/// POSIX timer     : si_tid i32 @16, si_overrun i32 @20, si_value u64 @24
/// SIGCHLD         : si_pid @16, si_uid @20, si_status i32 @24, si_utime i64 @32, si_stime i64 @40
/// fault           : si_addr u64 @16
/// SIGSYS (seccomp): si_call_addr u64 @16, si_syscall i32 @24, si_arch u32 @28
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Siginfo(pub [u8; 128]);

impl core::fmt::Debug for Siginfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Siginfo {{ signo: {}, code: {}, u: {:#x} {:#x} {:#x} }}",
            self.signo(),
            self.code(),
            get_u64(&self.0, 16),
            get_u64(&self.0, 24),
            get_u64(&self.0, 32)
        )
    }
}

impl Siginfo {
    pub const SIZE: usize = 128;

    fn head(signo: u32, code: i32) -> Siginfo {
        let mut b = [0u8; 128];
        put_u32(&mut b, 0, signo);
        put_i32(&mut b, 8, code);
        Siginfo(b)
    }

    /// kill(2): SI_USER with the sender's tgid and uid.
    pub fn kill(signo: u32, pid: i32, uid: u32) -> Siginfo {
        let mut s = Self::head(signo, SI_USER);
        put_i32(&mut s.0, 16, pid);
        put_u32(&mut s.0, 20, uid);
        s
    }

    /// tkill/tgkill: SI_TKILL with the sender's tgid and uid.
    pub fn tkill(signo: u32, pid: i32, uid: u32) -> Siginfo {
        let mut s = Self::kill(signo, pid, uid);
        put_i32(&mut s.0, 8, SI_TKILL);
        s
    }

    /// A signal the kernel sends on its own behalf (Linux's SEND_SIG_PRIV): SI_KERNEL, pid and
    /// uid 0. This is what setitimer(ITIMER_REAL)/alarm() expiry sends as SIGALRM
    /// (`it_real_fn` → `kill_pid_info(SIGALRM, SEND_SIG_PRIV, …)`), and what ITIMER_VIRTUAL/PROF,
    /// RLIMIT_CPU and a kernel-forced SIGKILL/SIGSEGV send.
    pub fn kernel(signo: u32) -> Siginfo {
        Self::head(signo, SI_KERNEL)
    }

    /// A POSIX timer (timer_create) expiry: SI_TIMER, timer id, overrun count, sigev_value.
    pub fn timer(signo: u32, tid: i32, overrun: i32, value: u64) -> Siginfo {
        let mut s = Self::head(signo, SI_TIMER);
        put_i32(&mut s.0, 16, tid);
        put_i32(&mut s.0, 20, overrun);
        put_u64(&mut s.0, 24, value);
        s
    }

    /// sigqueue-style: `code` (SI_QUEUE or another negative code), pid, uid, value.
    pub fn queue(signo: u32, code: i32, pid: i32, uid: u32, value: u64) -> Siginfo {
        let mut s = Self::kill(signo, pid, uid);
        put_i32(&mut s.0, 8, code);
        put_u64(&mut s.0, 24, value);
        s
    }

    /// A synchronous fault (SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP) with its si_code and address.
    pub fn fault(signo: u32, code: i32, addr: u64) -> Siginfo {
        let mut s = Self::head(signo, code);
        put_u64(&mut s.0, 16, addr);
        s
    }

    /// seccomp's SECCOMP_RET_TRAP (and its kill actions): SYS_SECCOMP, the action's data in
    /// si_errno, the address after the `svc`, the syscall number and the audit arch.
    pub fn sigsys(call_addr: u64, syscall: i32, arch: u32, data: i32) -> Siginfo {
        let mut s = Self::head(SIGSYS, SYS_SECCOMP);
        put_i32(&mut s.0, 4, data);
        put_u64(&mut s.0, 16, call_addr);
        put_i32(&mut s.0, 24, syscall);
        put_u32(&mut s.0, 28, arch);
        s
    }

    /// SIGCHLD to a parent: `code` is CLD_*, `status` the exit code (CLD_EXITED) or the signal
    /// (the others); times in clock ticks (USER_HZ).
    pub fn chld(code: i32, pid: i32, uid: u32, status: i32, utime: i64, stime: i64) -> Siginfo {
        let mut s = Self::kill(SIGCHLD, pid, uid);
        put_i32(&mut s.0, 8, code);
        put_i32(&mut s.0, 24, status);
        put_i64(&mut s.0, 32, utime);
        put_i64(&mut s.0, 40, stime);
        s
    }

    pub fn signo(&self) -> u32 {
        get_u32(&self.0, 0)
    }
    pub fn errno(&self) -> i32 {
        get_i32(&self.0, 4)
    }
    pub fn code(&self) -> i32 {
        get_i32(&self.0, 8)
    }
    pub fn pid(&self) -> i32 {
        get_i32(&self.0, 16)
    }
    pub fn uid(&self) -> u32 {
        get_u32(&self.0, 20)
    }
    pub fn addr(&self) -> u64 {
        get_u64(&self.0, 16)
    }

    /// The siginfo a handler without SA_EXPOSE_TAGBITS is given (Linux's
    /// hide_si_addr_tag_bits with arm64's arch_untagged_si_addr): a kernel-generated fault's
    /// si_addr loses its top-byte tag, except a breakpoint's (TRAP_BRKPT), whose address bits
    /// are all reported, as they always were.
    pub fn tag_bits_hidden(mut self) -> Siginfo {
        if self.hides_tag_bits() {
            let a = crate::uapi::sys::untagged_addr(self.addr() as usize) as u64;
            put_u64(&mut self.0, 16, a);
        }
        self
    }
    /// Whether `tag_bits_hidden` may change this record (a kernel-generated fault other than a
    /// breakpoint): delivery copies the record only then.
    pub fn hides_tag_bits(&self) -> bool {
        let signo = self.signo();
        let fault = matches!(signo, SIGSEGV | SIGBUS | SIGILL | SIGFPE | SIGTRAP);
        fault
            && (1..SI_KERNEL).contains(&self.code())
            && !(signo == SIGTRAP && self.code() == TRAP_BRKPT)
    }
    pub fn value(&self) -> u64 {
        get_u64(&self.0, 24)
    }
    /// A POSIX timer signal's timer id (si_timerid).
    pub fn timer_id(&self) -> i32 {
        get_i32(&self.0, 16)
    }
    /// A POSIX timer signal's overrun count (si_overrun).
    pub fn timer_overrun(&self) -> i32 {
        get_i32(&self.0, 20)
    }
    pub fn set_timer_overrun(&mut self, n: i32) {
        put_i32(&mut self.0, 20, n);
    }
    pub fn status(&self) -> i32 {
        get_i32(&self.0, 24)
    }

    /// The same record with another signal number (rt_sigqueueinfo stores the syscall's `sig`).
    pub fn with_signo(mut self, signo: u32) -> Siginfo {
        put_u32(&mut self.0, 0, signo);
        self
    }
}

/// rt_sigqueueinfo/rt_tgsigqueueinfo: a process may only forge SI_USER/kernel codes
/// (si_code ≥ 0) or SI_TKILL when signalling itself; otherwise EPERM.
pub fn sigqueueinfo_check(info: &Siginfo, to_self: bool) -> SysResult<()> {
    if (info.code() >= 0 || info.code() == SI_TKILL) && !to_self {
        Err(Errno::EPERM)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_bits_hidden_only_where_it_says() {
        let tagged = 0x5a00_0000_1234_5678;
        let cases = [
            (Siginfo::fault(SIGSEGV, SEGV_MAPERR, tagged), true),
            (Siginfo::fault(SIGTRAP, TRAP_BRKPT, tagged), false),
            (Siginfo::fault(SIGSEGV, SI_KERNEL, tagged), false),
            (Siginfo::tkill(SIGUSR1, 5, 0), false),
        ];
        for (info, hides) in cases {
            assert_eq!(info.hides_tag_bits(), hides, "{info:?}");
            // A record it does not hide comes back as it was.
            assert_eq!(info.tag_bits_hidden() != info, hides, "{info:?}");
        }
        assert_eq!(
            Siginfo::fault(SIGSEGV, SEGV_MAPERR, tagged)
                .tag_bits_hidden()
                .addr(),
            0x1234_5678
        );
    }

    #[test]
    fn defaults() {
        use DefaultAction::*;
        assert_eq!(default_action(SIGHUP), Some(Term));
        assert_eq!(default_action(SIGSEGV), Some(Core));
        assert_eq!(default_action(SIGXFSZ), Some(Core));
        assert_eq!(default_action(SIGSYS), Some(Core));
        assert_eq!(default_action(SIGSTKFLT), Some(Term));
        assert_eq!(default_action(SIGPWR), Some(Term));
        assert_eq!(default_action(SIGTTOU), Some(Stop));
        assert_eq!(default_action(SIGCONT), Some(Cont));
        assert_eq!(default_action(SIGCHLD), Some(Ign));
        assert_eq!(default_action(SIGWINCH), Some(Ign));
        assert_eq!(default_action(SIGURG), Some(Ign));
        assert_eq!(default_action(SIGRTMIN + 3), Some(Term));
        assert_eq!(default_action(0), None);
        assert_eq!(default_action(65), None);
        assert_eq!(sig_name(SIGSEGV), Some("SIGSEGV"));
        assert_eq!(sig_name(40), Some("SIGRT"));
    }

    #[test]
    fn sigsets() {
        let mut s = Sigset::EMPTY;
        s.add(SIGINT);
        s.add(SIGRTMAX);
        assert_eq!(s.0, (1 << 1) | (1 << 63));
        assert!(s.contains(SIGINT) && !s.contains(SIGHUP));
        s.remove(SIGINT);
        assert_eq!(s, Sigset::of(64));
        assert_eq!(Sigset::of(0), Sigset::EMPTY);
        assert_eq!(Sigset::FULL.blockable().0, !((1 << 8) | (1 << 18)));
        let pending = Sigset::of(SIGHUP).union(Sigset::of(SIGSEGV));
        assert_eq!(pending.next(), Some(SIGSEGV));
        assert_eq!(
            Sigset::of(SIGUSR1).union(Sigset::of(40)).next(),
            Some(SIGUSR1)
        );
        assert_eq!(Sigset::EMPTY.next(), None);
        let old = Sigset::of(SIGUSR1);
        assert_eq!(
            sigprocmask(
                old,
                SIG_BLOCK,
                Sigset::of(SIGKILL).union(Sigset::of(SIGUSR2))
            ),
            Ok(Sigset::of(SIGUSR1).union(Sigset::of(SIGUSR2)))
        );
        assert_eq!(sigprocmask(old, SIG_UNBLOCK, old), Ok(Sigset::EMPTY));
        assert_eq!(sigprocmask(old, 3, old), Err(Errno::EINVAL));
        assert_eq!(Sigset::read_from_bytes(s.as_bytes()).ok(), Some(s));
        assert_eq!(Sigset(0b101).iter().collect::<std::vec::Vec<_>>(), [1, 3]);
    }

    #[test]
    fn sigaction_rules() {
        let a = Sigaction {
            sa_handler: 0x1234,
            sa_flags: SA_SIGINFO | SA_RESTORER | SA_UNSUPPORTED | 0x0080_0000,
            sa_restorer: 0x5678,
            sa_mask: Sigset::FULL,
        };
        let b = a.as_bytes();
        assert_eq!(get_u64(b, 0), 0x1234);
        assert_eq!(get_u64(b, 16), 0x5678);
        assert_eq!(Sigaction::read_from_bytes(b).ok(), Some(a));
        let stored = sigaction_check(SIGUSR1, Some(a), 8).unwrap().unwrap();
        assert_eq!(stored.sa_flags, SA_SIGINFO | SA_RESTORER);
        assert_eq!(stored.sa_mask, Sigset::FULL.blockable());
        assert_eq!(sigaction_check(SIGKILL, Some(a), 8), Err(Errno::EINVAL));
        assert_eq!(sigaction_check(SIGSTOP, None, 8), Ok(None));
        assert_eq!(sigaction_check(SIGUSR1, None, 16), Err(Errno::EINVAL));
        assert_eq!(sigaction_check(65, None, 8), Err(Errno::EINVAL));
        assert_eq!(sigaction_check(0, None, 8), Err(Errno::EINVAL));
        let m = stored.handler_mask(SIGUSR1, Sigset::EMPTY);
        assert!(m.contains(SIGUSR1) && !m.contains(SIGKILL));
        let nodefer = Sigaction {
            sa_flags: SA_NODEFER,
            ..Sigaction::default()
        };
        assert!(!nodefer
            .handler_mask(SIGUSR1, Sigset::EMPTY)
            .contains(SIGUSR1));
        assert!(Sigaction::default().ignores(SIGCHLD));
        assert!(!Sigaction::default().ignores(SIGTERM));
    }

    #[test]
    fn sigaltstack_rules() {
        let mut a = AltStack::default();
        assert_eq!(a.report(0x1000).ss_flags, SS_DISABLE);
        let st = StackT::new(0x10000, 0, 0x4000);
        let b = st.as_bytes();
        assert_eq!(get_i32(b, 8), 0);
        assert_eq!(get_u64(b, 16), 0x4000);
        assert_eq!(StackT::read_from_bytes(b).ok(), Some(st));
        let small = StackT {
            ss_size: MINSIGSTKSZ - 1,
            ..st
        };
        assert_eq!(a.set(small, 0x9000_0000, MINSIGSTKSZ), Err(Errno::ENOMEM));
        let bad = StackT { ss_flags: 4, ..st };
        assert_eq!(a.set(bad, 0x9000_0000, MINSIGSTKSZ), Err(Errno::EINVAL));
        a.set(st, 0x9000_0000, MINSIGSTKSZ).unwrap();
        // On the stack: (sp, sp+size] counts, the base does not.
        assert!(a.on_stack(0x14000) && a.on_stack(0x10001) && !a.on_stack(0x10000));
        assert_eq!(a.report(0x12000).ss_flags, SS_ONSTACK);
        assert_eq!(a.report(0x9000_0000).ss_flags, 0);
        assert_eq!(a.set(st, 0x12000, MINSIGSTKSZ), Err(Errno::EPERM));
        assert_eq!(a.frame_top(0x9000_0000, SA_ONSTACK), 0x14000);
        assert_eq!(a.frame_top(0x9000_0000, 0), 0x9000_0000);
        assert_eq!(a.frame_top(0x12000, SA_ONSTACK), 0x12000);
        let dis = StackT::new(0x777, SS_DISABLE, 1);
        a.set(dis, 0x9000_0000, MINSIGSTKSZ).unwrap();
        assert_eq!((a.sp, a.size), (0, 0));
        assert_eq!(a.report(0).ss_flags, SS_DISABLE);
        // SS_AUTODISARM: never "on" the stack; saved raw, then disarmed.
        let auto = StackT {
            ss_flags: SS_AUTODISARM,
            ..st
        };
        a.set(auto, 0x9000_0000, MINSIGSTKSZ).unwrap();
        assert!(!a.on_stack(0x12000));
        assert_eq!(a.report(0x12000).ss_flags, SS_AUTODISARM);
        assert_eq!(a.saved().ss_flags, SS_AUTODISARM);
        a.disarm_after_save();
        assert_eq!(a, AltStack::default());
    }

    #[test]
    fn siginfo_images() {
        let k = Siginfo::kill(SIGTERM, 42, 0);
        assert_eq!(&k.0[..12], &[15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!((k.pid(), k.uid()), (42, 0));
        let t = Siginfo::tkill(SIGUSR1, 7, 1000);
        assert_eq!((t.code(), t.pid(), t.uid()), (SI_TKILL, 7, 1000));
        let f = Siginfo::fault(SIGSEGV, SEGV_MAPERR, 0xdead_beef);
        assert_eq!(get_u64(&f.0, 16), 0xdead_beef);
        assert_eq!(f.code(), 1);
        let c = Siginfo::chld(CLD_EXITED, 5, 0, 3, 10, 20);
        assert_eq!(c.signo(), SIGCHLD);
        assert_eq!(c.status(), 3);
        assert_eq!(get_i64(&c.0, 32), 10);
        assert_eq!(get_i64(&c.0, 40), 20);
        let a = Siginfo::kernel(SIGALRM);
        assert_eq!((a.signo(), a.code(), a.pid()), (SIGALRM, 0x80, 0));
        let p = Siginfo::timer(SIGRTMIN, 3, 2, 0xabc);
        assert_eq!(
            (p.code(), get_i32(&p.0, 16), get_i32(&p.0, 20), p.value()),
            (-2, 3, 2, 0xabc)
        );
        let q = Siginfo::queue(SIGUSR2, SI_QUEUE, 9, 0, 77);
        assert_eq!(sigqueueinfo_check(&q, false), Ok(()));
        assert_eq!(sigqueueinfo_check(&k, false), Err(Errno::EPERM));
        assert_eq!(sigqueueinfo_check(&t, false), Err(Errno::EPERM));
        assert_eq!(sigqueueinfo_check(&k, true), Ok(()));
        assert_eq!(q.with_signo(SIGUSR1).signo(), SIGUSR1);
        let y = Siginfo::sigsys(0x40_1004, 172, 0xC000_00B7, 7);
        assert_eq!((y.signo(), y.errno(), y.code()), (SIGSYS, 7, SYS_SECCOMP));
        assert_eq!(y.addr(), 0x40_1004);
        assert_eq!((get_i32(&y.0, 24), get_u32(&y.0, 28)), (172, 0xC000_00B7));
    }
}

// ---- sigevent (timer_create) ----

pub const SIGEV_SIGNAL: i32 = 0;
pub const SIGEV_NONE: i32 = 1;
pub const SIGEV_THREAD: i32 = 2;
/// Or'ed with SIGEV_SIGNAL: to one thread, `tid`.
pub const SIGEV_THREAD_ID: i32 = 4;

/// `struct sigevent` (64 bytes): the value, the signal, how to notify, then a union whose
/// first int is the thread id of SIGEV_THREAD_ID.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Sigevent {
    pub value: u64,
    pub signo: i32,
    pub notify: i32,
    pub tid: i32,
    pub pad: [i32; 11],
}

const _: () = assert!(core::mem::size_of::<Sigevent>() == 64);

#[cfg(test)]
mod sigevent_tests {
    use super::*;

    #[test]
    fn timer_siginfo_fields() {
        let mut i = Siginfo::timer(SIGALRM, 3, 0, 0x1234);
        assert_eq!(
            (i.code(), i.timer_id(), i.timer_overrun()),
            (SI_TIMER, 3, 0)
        );
        i.set_timer_overrun(7);
        assert_eq!((i.timer_overrun(), i.value()), (7, 0x1234));
        let e = Sigevent::read_from_bytes(&[0u8; 64]).unwrap();
        assert_eq!((e.notify, e.signo), (SIGEV_SIGNAL, 0));
    }
}

// ---- signalfd -------------------------------------------------------------------------------

/// signalfd4's flags (O_CLOEXEC and O_NONBLOCK).
pub const SFD_CLOEXEC: u32 = 0o2000000;
pub const SFD_NONBLOCK: u32 = 0o4000;

/// Which members of a `siginfo_t` union a signal carries (Linux's `siginfo_layout`, reduced
/// to the cases signalfd tells apart; arm64 has no si_trapno).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiginfoLayout {
    Kill,
    Timer,
    Poll,
    Fault,
    FaultMceErr,
    Chld,
    Rt,
    Sys,
}

/// The layout of a signal `signo` with code `code`: kernel codes (0 < code < SI_KERNEL) of the
/// signals that define them up to their limit (NSIGILL 11, NSIGFPE 15, NSIGSEGV 10, NSIGBUS 5,
/// NSIGTRAP 6, NSIGCHLD 6, NSIGPOLL 6, NSIGSYS 2), another small code as SIGPOLL's; SI_TIMER,
/// SI_SIGIO and the other negative codes; SI_USER and SI_KERNEL are kill's.
pub fn siginfo_layout(signo: u32, code: i32) -> SiginfoLayout {
    use SiginfoLayout::*;
    if code > SI_USER && code < SI_KERNEL {
        let by_signal = match signo {
            SIGILL => Some((11, Fault)),
            SIGFPE => Some((15, Fault)),
            SIGSEGV => Some((10, Fault)),
            SIGBUS => Some((5, Fault)),
            SIGTRAP => Some((6, Fault)),
            SIGCHLD => Some((6, Chld)),
            SIGPOLL => Some((6, Poll)),
            SIGSYS => Some((2, Sys)),
            _ => None,
        };
        match by_signal {
            Some((limit, l)) if code <= limit => {
                if signo == SIGBUS && (BUS_MCEERR_AR..=BUS_MCEERR_AO).contains(&code) {
                    FaultMceErr
                } else {
                    l
                }
            }
            _ if code <= 6 => Poll,
            _ => Kill,
        }
    } else if code == SI_TIMER {
        Timer
    } else if code == SI_SIGIO {
        Poll
    } else if code < 0 {
        Rt
    } else {
        Kill
    }
}

/// `struct signalfd_siginfo`, 128 bytes, as a read of a signalfd returns it:
///
/// ```text
/// ssi_signo u32 @0, ssi_errno i32 @4, ssi_code i32 @8, ssi_pid u32 @12, ssi_uid u32 @16,
/// ssi_fd i32 @20, ssi_tid u32 @24, ssi_band u32 @28, ssi_overrun u32 @32, ssi_trapno u32 @36,
/// ssi_status i32 @40, ssi_int i32 @44, ssi_ptr u64 @48, ssi_utime u64 @56, ssi_stime u64 @64,
/// ssi_addr u64 @72, ssi_addr_lsb u16 @80, ssi_syscall i32 @84, ssi_call_addr u64 @88,
/// ssi_arch u32 @96, padding to 128
/// ```
pub const SIGNALFD_SIGINFO_SIZE: usize = 128;

/// The `signalfd_siginfo` for a dequeued `siginfo_t` (Linux's signalfd_copyinfo): the
/// members its layout carries, every other byte zero.
pub fn signalfd_siginfo(i: &Siginfo) -> [u8; SIGNALFD_SIGINFO_SIZE] {
    let mut b = [0u8; SIGNALFD_SIGINFO_SIZE];
    let s = &i.0;
    put_u32(&mut b, 0, i.signo());
    put_i32(&mut b, 4, i.errno());
    put_i32(&mut b, 8, i.code());
    let value = get_u64(s, 24);
    match siginfo_layout(i.signo(), i.code()) {
        SiginfoLayout::Kill => {
            put_u32(&mut b, 12, get_u32(s, 16));
            put_u32(&mut b, 16, get_u32(s, 20));
        }
        SiginfoLayout::Timer => {
            put_u32(&mut b, 24, get_u32(s, 16));
            put_u32(&mut b, 32, get_u32(s, 20));
            put_u64(&mut b, 48, value);
            put_i32(&mut b, 44, value as i32);
        }
        SiginfoLayout::Poll => {
            // si_band (long) @16, si_fd @24.
            put_u32(&mut b, 28, get_u64(s, 16) as u32);
            put_i32(&mut b, 20, get_i32(s, 24));
        }
        SiginfoLayout::Fault => put_u64(&mut b, 72, get_u64(s, 16)),
        SiginfoLayout::FaultMceErr => {
            put_u64(&mut b, 72, get_u64(s, 16));
            put_u16(&mut b, 80, get_u16(s, 24));
        }
        SiginfoLayout::Chld => {
            put_u32(&mut b, 12, get_u32(s, 16));
            put_u32(&mut b, 16, get_u32(s, 20));
            put_i32(&mut b, 40, get_i32(s, 24));
            put_u64(&mut b, 56, get_u64(s, 32));
            put_u64(&mut b, 64, get_u64(s, 40));
        }
        SiginfoLayout::Rt => {
            put_u32(&mut b, 12, get_u32(s, 16));
            put_u32(&mut b, 16, get_u32(s, 20));
            put_u64(&mut b, 48, value);
            put_i32(&mut b, 44, value as i32);
        }
        SiginfoLayout::Sys => {
            put_u64(&mut b, 88, get_u64(s, 16));
            put_i32(&mut b, 84, get_i32(s, 24));
            put_u32(&mut b, 96, get_u32(s, 28));
        }
    }
    b
}

#[cfg(test)]
mod signalfd_tests {
    use super::*;

    #[test]
    fn layouts() {
        use SiginfoLayout::*;
        assert_eq!(siginfo_layout(SIGUSR1, SI_USER), Kill);
        assert_eq!(siginfo_layout(SIGUSR1, SI_KERNEL), Kill);
        assert_eq!(siginfo_layout(SIGUSR1, SI_TKILL), Rt);
        assert_eq!(siginfo_layout(SIGRTMIN, SI_QUEUE), Rt);
        assert_eq!(siginfo_layout(SIGALRM, SI_TIMER), Timer);
        assert_eq!(siginfo_layout(SIGIO, SI_SIGIO), Poll);
        assert_eq!(siginfo_layout(SIGSEGV, SEGV_MAPERR), Fault);
        assert_eq!(siginfo_layout(SIGSEGV, 11), Kill);
        assert_eq!(siginfo_layout(SIGBUS, BUS_MCEERR_AR), FaultMceErr);
        assert_eq!(siginfo_layout(SIGCHLD, CLD_EXITED), Chld);
        assert_eq!(siginfo_layout(SIGSYS, SYS_SECCOMP), Sys);
        assert_eq!(siginfo_layout(SIGUSR1, 3), Poll);
    }

    #[test]
    fn copied_members() {
        let k = signalfd_siginfo(&Siginfo::kill(SIGUSR1, 42, 1000));
        assert_eq!((get_u32(&k, 0), get_i32(&k, 8)), (SIGUSR1, SI_USER));
        assert_eq!((get_u32(&k, 12), get_u32(&k, 16)), (42, 1000));
        assert!(k[20..].iter().all(|&x| x == 0));

        let q = signalfd_siginfo(&Siginfo::queue(SIGRTMIN, SI_QUEUE, 7, 0, 0x1_0000_0005));
        assert_eq!((get_u32(&q, 12), get_i32(&q, 44)), (7, 5));
        assert_eq!(get_u64(&q, 48), 0x1_0000_0005);

        let t = signalfd_siginfo(&Siginfo::timer(SIGALRM, 3, 2, 9));
        assert_eq!(
            (get_u32(&t, 24), get_u32(&t, 32), get_u64(&t, 48)),
            (3, 2, 9)
        );
        assert_eq!(get_u32(&t, 12), 0);

        let c = signalfd_siginfo(&Siginfo::chld(CLD_EXITED, 5, 0, 3, 11, 12));
        assert_eq!((get_u32(&c, 12), get_i32(&c, 40)), (5, 3));
        assert_eq!((get_u64(&c, 56), get_u64(&c, 64)), (11, 12));

        let f = signalfd_siginfo(&Siginfo::fault(SIGSEGV, SEGV_MAPERR, 0xdead));
        assert_eq!((get_u64(&f, 72), get_u32(&f, 12)), (0xdead, 0));

        let s = signalfd_siginfo(&Siginfo::sigsys(0x400, 99, 0xc00000b7, 1));
        assert_eq!((get_i32(&s, 4), get_u64(&s, 88)), (1, 0x400));
        assert_eq!((get_i32(&s, 84), get_u32(&s, 96)), (99, 0xc00000b7));
    }
}
