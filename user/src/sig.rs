//! Signals: numbers, `rt_sigaction` with the SA_RESTORER trampoline, masks, alternate stacks,
//! and read access to what a handler receives (siginfo, ucontext, the sigframe records in
//! `uc_mcontext.__reserved`).

use alloc::string::String;
use alloc::vec::Vec;

use crate::sys::{self, nr, SysResult};

pub const SIGHUP: i32 = 1;
pub const SIGINT: i32 = 2;
pub const SIGQUIT: i32 = 3;
pub const SIGILL: i32 = 4;
pub const SIGTRAP: i32 = 5;
pub const SIGABRT: i32 = 6;
pub const SIGBUS: i32 = 7;
pub const SIGFPE: i32 = 8;
pub const SIGKILL: i32 = 9;
pub const SIGUSR1: i32 = 10;
pub const SIGSEGV: i32 = 11;
pub const SIGUSR2: i32 = 12;
pub const SIGPIPE: i32 = 13;
pub const SIGALRM: i32 = 14;
pub const SIGTERM: i32 = 15;
pub const SIGCHLD: i32 = 17;
pub const SIGCONT: i32 = 18;
pub const SIGSTOP: i32 = 19;
pub const SIGTSTP: i32 = 20;
pub const SIGTTIN: i32 = 21;
pub const SIGTTOU: i32 = 22;
pub const SIGURG: i32 = 23;
pub const SIGWINCH: i32 = 28;
pub const SIGSYS: i32 = 31;
pub const SIGRTMIN: i32 = 32;

pub const SA_NOCLDSTOP: u64 = 1;
pub const SA_NOCLDWAIT: u64 = 2;
pub const SA_SIGINFO: u64 = 4;
pub const SA_RESTORER: u64 = 0x0400_0000;
pub const SA_ONSTACK: u64 = 0x0800_0000;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;

pub const SIG_DFL: usize = 0;
pub const SIG_IGN: usize = 1;

pub const SIG_BLOCK: u32 = 0;
pub const SIG_UNBLOCK: u32 = 1;
pub const SIG_SETMASK: u32 = 2;

pub const SS_ONSTACK: i32 = 1;
pub const SS_DISABLE: i32 = 2;

// si_code values
pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_TKILL: i32 = -6;
pub const SEGV_MAPERR: i32 = 1;
pub const SEGV_ACCERR: i32 = 2;
pub const BUS_ADRALN: i32 = 1;
pub const BUS_ADRERR: i32 = 2;
pub const ILL_ILLOPC: i32 = 1;
pub const TRAP_BRKPT: i32 = 1;
pub const CLD_EXITED: i32 = 1;
pub const CLD_KILLED: i32 = 2;
pub const CLD_DUMPED: i32 = 3;
pub const CLD_STOPPED: i32 = 5;
pub const CLD_CONTINUED: i32 = 6;

pub const fn bit(sig: i32) -> u64 {
    1 << (sig - 1)
}

/// The kernel's `struct sigaction` for arm64 (no sa_restorer reordering, 64-bit mask).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KSigaction {
    pub handler: usize,
    pub flags: u64,
    pub restorer: usize,
    pub mask: u64,
}

core::arch::global_asm!(
    ".text",
    ".global svelt_sigreturn_trampoline",
    ".type svelt_sigreturn_trampoline, %function",
    "svelt_sigreturn_trampoline:",
    "    mov x8, #139", // rt_sigreturn
    "    svc #0",
    "    udf #0",
    ".size svelt_sigreturn_trampoline, . - svelt_sigreturn_trampoline",
);

extern "C" {
    fn svelt_sigreturn_trampoline();
}

/// The SA_RESTORER trampoline's address.
pub fn restorer() -> usize {
    svelt_sigreturn_trampoline as *const () as usize
}

pub type Handler = extern "C" fn(i32, *mut SigInfo, *mut u8);

pub fn sigaction_raw(sig: i32, act: Option<&KSigaction>) -> SysResult<KSigaction> {
    let mut old = KSigaction::default();
    let a = act.map_or(0, |a| a as *const KSigaction as usize);
    sys::syscall(
        nr::RT_SIGACTION,
        &[sig as usize, a, &mut old as *mut KSigaction as usize, 8],
    )
    .map(|_| old)
}

/// Installs `handler` with SA_SIGINFO | SA_RESTORER plus `flags`, blocking `mask` during it.
pub fn set_handler(sig: i32, handler: Handler, flags: u64, mask: u64) -> SysResult<KSigaction> {
    let act = KSigaction {
        handler: handler as *const () as usize,
        flags: flags | SA_SIGINFO | SA_RESTORER,
        restorer: restorer(),
        mask,
    };
    sigaction_raw(sig, Some(&act))
}

/// SIG_DFL or SIG_IGN.
pub fn set_disposition(sig: i32, disp: usize) -> SysResult<KSigaction> {
    let act = KSigaction {
        handler: disp,
        ..KSigaction::default()
    };
    sigaction_raw(sig, Some(&act))
}

pub fn sigprocmask(how: u32, set: Option<u64>) -> SysResult<u64> {
    let mut old = 0u64;
    let s = set.as_ref().map_or(0, |s| s as *const u64 as usize);
    sys::syscall(
        nr::RT_SIGPROCMASK,
        &[how as usize, s, &mut old as *mut u64 as usize, 8],
    )
    .map(|_| old)
}

pub fn sigpending() -> SysResult<u64> {
    let mut set = 0u64;
    sys::syscall(nr::RT_SIGPENDING, &[&mut set as *mut u64 as usize, 8]).map(|_| set)
}

pub fn sigsuspend(mask: u64) -> SysResult {
    sys::syscall(nr::RT_SIGSUSPEND, &[&mask as *const u64 as usize, 8])
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct StackT {
    pub sp: usize,
    pub flags: i32,
    pub _pad: i32,
    pub size: usize,
}

pub fn sigaltstack(new: Option<&StackT>) -> SysResult<StackT> {
    let mut old = StackT::default();
    let n = new.map_or(0, |s| s as *const StackT as usize);
    sys::syscall(nr::SIGALTSTACK, &[n, &mut old as *mut StackT as usize]).map(|_| old)
}

/// `siginfo_t`, 128 bytes; the union fields are read by offset.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SigInfo {
    pub signo: i32,
    pub errno: i32,
    pub code: i32,
    pub _pad: i32,
    pub fields: [u64; 14],
}
const _: () = assert!(core::mem::size_of::<SigInfo>() == 128);

impl SigInfo {
    pub const fn zeroed() -> SigInfo {
        SigInfo {
            signo: 0,
            errno: 0,
            code: 0,
            _pad: 0,
            fields: [0; 14],
        }
    }
    /// si_addr (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE).
    pub fn addr(&self) -> u64 {
        self.fields[0]
    }
    /// si_pid (kill, SIGCHLD).
    pub fn pid(&self) -> i32 {
        self.fields[0] as u32 as i32
    }
    /// si_uid (kill, SIGCHLD).
    pub fn uid(&self) -> u32 {
        (self.fields[0] >> 32) as u32
    }
    /// si_status (SIGCHLD, waitid).
    pub fn status(&self) -> i32 {
        self.fields[1] as u32 as i32
    }
}

impl core::fmt::Debug for SigInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        write!(
            f,
            "siginfo{{signo {} errno {} code {} f0 {:#x} f1 {:#x}}}",
            self.signo, self.errno, self.code, self.fields[0], self.fields[1]
        )
    }
}

/// Offsets into `struct ucontext` (arm64), from Linux's uapi asm/ucontext.h and asm/sigcontext.h.
pub mod uc {
    pub const STACK_SP: usize = 16;
    pub const STACK_FLAGS: usize = 24;
    pub const STACK_SIZE: usize = 32;
    pub const SIGMASK: usize = 40;
    pub const MCONTEXT: usize = 176;
    pub const FAULT_ADDRESS: usize = MCONTEXT;
    pub const REGS: usize = MCONTEXT + 8;
    pub const SP: usize = MCONTEXT + 256;
    pub const PC: usize = MCONTEXT + 264;
    pub const PSTATE: usize = MCONTEXT + 272;
    pub const RESERVED: usize = MCONTEXT + 288;
    pub const RESERVED_SIZE: usize = 4096;
}

/// A handler's view of its `ucontext_t *` (the third argument with SA_SIGINFO).
#[derive(Clone, Copy)]
pub struct Ucontext(pub *mut u8);

impl Ucontext {
    pub fn read_u64(&self, off: usize) -> u64 {
        // SAFETY: the kernel built a complete ucontext at self.0; off is within it.
        unsafe { core::ptr::read_unaligned(self.0.add(off) as *const u64) }
    }
    pub fn write_u64(&self, off: usize, v: u64) {
        // SAFETY: as above; the frame is writable user stack memory.
        unsafe { core::ptr::write_unaligned(self.0.add(off) as *mut u64, v) }
    }
    pub fn read_u32(&self, off: usize) -> u32 {
        // SAFETY: as in read_u64.
        unsafe { core::ptr::read_unaligned(self.0.add(off) as *const u32) }
    }
    pub fn write_u32(&self, off: usize, v: u32) {
        // SAFETY: as in write_u64.
        unsafe { core::ptr::write_unaligned(self.0.add(off) as *mut u32, v) }
    }
    pub fn read_u16(&self, off: usize) -> u16 {
        // SAFETY: as in read_u64.
        unsafe { core::ptr::read_unaligned(self.0.add(off) as *const u16) }
    }
    pub fn write_u16(&self, off: usize, v: u16) {
        // SAFETY: as in write_u64.
        unsafe { core::ptr::write_unaligned(self.0.add(off) as *mut u16, v) }
    }
    /// `len` bytes of the frame at `off` (records in the extra space included: the frame is
    /// one block of user stack).
    pub fn read_bytes(&self, off: usize, len: usize) -> Vec<u8> {
        // SAFETY: as in read_u64; the caller stays within the frame.
        unsafe { core::slice::from_raw_parts(self.0.add(off), len) }.to_vec()
    }
    pub fn write_bytes(&self, off: usize, b: &[u8]) {
        // SAFETY: as in write_u64; the caller stays within the frame.
        unsafe { core::ptr::copy_nonoverlapping(b.as_ptr(), self.0.add(off), b.len()) }
    }
    pub fn pc(&self) -> u64 {
        self.read_u64(uc::PC)
    }
    pub fn set_pc(&self, pc: u64) {
        self.write_u64(uc::PC, pc)
    }
    pub fn sp(&self) -> u64 {
        self.read_u64(uc::SP)
    }
    pub fn reg(&self, n: usize) -> u64 {
        self.read_u64(uc::REGS + 8 * n)
    }
    pub fn fault_address(&self) -> u64 {
        self.read_u64(uc::FAULT_ADDRESS)
    }
    pub fn sigmask(&self) -> u64 {
        self.read_u64(uc::SIGMASK)
    }
    pub fn stack_flags(&self) -> i32 {
        self.read_u32(uc::STACK_FLAGS) as i32
    }
}

pub const FPSIMD_MAGIC: u32 = 0x4650_8001;
pub const ESR_MAGIC: u32 = 0x4553_5201;
pub const EXTRA_MAGIC: u32 = 0x4558_5401;
pub const SVE_MAGIC: u32 = 0x5356_4501;
pub const TPIDR2_MAGIC: u32 = 0x5450_4902;
pub const ZA_MAGIC: u32 = 0x5436_6345;
pub const ZT_MAGIC: u32 = 0x5a54_4e01;
pub const FPMR_MAGIC: u32 = 0x4650_4d52;
pub const POE_MAGIC: u32 = 0x504f_4530;
pub const GCS_MAGIC: u32 = 0x4743_5300;

/// What the records of one signal frame said, as far as these tests care.
#[derive(Clone, Copy, Debug, Default)]
pub struct Records {
    /// Offset of fpsimd_context within `__reserved` and its size.
    pub fpsimd: Option<(usize, u32)>,
    pub fpsr: u32,
    pub fpcr: u32,
    pub esr: Option<u64>,
    pub sve: bool,
    pub za: bool,
    pub tpidr2: bool,
    pub extra: bool,
    pub terminated: bool,
    pub count: usize,
    /// A record the tests do not know (magic), or a malformed one.
    pub unknown: Option<u32>,
}

/// Walks `uc_mcontext.__reserved`: every record 16-aligned, sizes sane, ending with a
/// terminator (magic 0, size 0). Records the tests do not inspect are skipped.
pub fn parse_records(ucx: Ucontext) -> Records {
    let mut r = Records::default();
    let mut off = 0usize;
    while off + 8 <= uc::RESERVED_SIZE {
        let magic = ucx.read_u32(uc::RESERVED + off);
        let size = ucx.read_u32(uc::RESERVED + off + 4);
        if magic == 0 {
            r.terminated = size == 0;
            return r;
        }
        if size < 8 || off + size as usize > uc::RESERVED_SIZE {
            r.unknown = Some(magic);
            return r;
        }
        r.count += 1;
        match magic {
            FPSIMD_MAGIC => {
                r.fpsimd = Some((off, size));
                r.fpsr = ucx.read_u32(uc::RESERVED + off + 8);
                r.fpcr = ucx.read_u32(uc::RESERVED + off + 12);
            }
            ESR_MAGIC => r.esr = Some(ucx.read_u64(uc::RESERVED + off + 8)),
            SVE_MAGIC => r.sve = true,
            ZA_MAGIC => r.za = true,
            TPIDR2_MAGIC => r.tpidr2 = true,
            EXTRA_MAGIC => r.extra = true,
            ZT_MAGIC | FPMR_MAGIC | POE_MAGIC | GCS_MAGIC => {}
            m => r.unknown = Some(m),
        }
        off += size as usize;
        if !off.is_multiple_of(16) {
            r.unknown = Some(magic);
            return r;
        }
    }
    r
}

/// Reads V register `n` (128 bits) saved in the fpsimd_context record.
pub fn frame_vreg(ucx: Ucontext, rec: &Records, n: usize) -> Option<u128> {
    let (off, _) = rec.fpsimd?;
    let base = uc::RESERVED + off + 16 + 16 * n;
    let lo = ucx.read_u64(base) as u128;
    let hi = ucx.read_u64(base + 8) as u128;
    Some(lo | (hi << 64))
}

/// What a fault handler saw, copied out of a child by [`fault_in_child`].
#[derive(Clone, Copy, Debug)]
pub struct Fault {
    pub info: SigInfo,
    pub pc: u64,
    pub sp: u64,
    pub fault_address: u64,
    pub records: Records,
    pub handled: bool,
}

static FAULT_OUT: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

extern "C" fn record_fault(_sig: i32, info: *mut SigInfo, ucp: *mut u8) {
    let ucx = Ucontext(ucp);
    let f = Fault {
        // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo pointer.
        info: unsafe { *info },
        pc: ucx.pc(),
        sp: ucx.sp(),
        fault_address: ucx.fault_address(),
        records: parse_records(ucx),
        handled: true,
    };
    let out = FAULT_OUT.load(core::sync::atomic::Ordering::Relaxed) as *mut Fault;
    // SAFETY: FAULT_OUT is the shared page set up by fault_in_child before the fork.
    unsafe { out.write_volatile(f) };
    sys::exit_group(0);
}

/// Runs `f` in a child with SIGSEGV, SIGBUS, SIGILL, SIGTRAP and SIGFPE caught (on an
/// alternate stack, so that a bad SP still reaches the handler); the handler records what it
/// saw and exits. Returns the child's wait status and the record (`handled` false if the
/// handler never ran).
pub fn fault_in_child(f: impl FnOnce()) -> SysResult<(i32, Fault)> {
    let shared = crate::proc::Shared::new(Fault {
        info: SigInfo::zeroed(),
        pc: 0,
        sp: 0,
        fault_address: 0,
        records: Records::default(),
        handled: false,
    });
    FAULT_OUT.store(shared.addr(), core::sync::atomic::Ordering::Relaxed);
    let st = crate::proc::in_child(|| {
        let stack = sys::mmap_anon(64 * 1024).expect("altstack");
        let ss = StackT {
            sp: stack,
            flags: 0,
            _pad: 0,
            size: 64 * 1024,
        };
        sigaltstack(Some(&ss)).expect("sigaltstack");
        for s in [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE] {
            set_handler(s, record_fault, SA_ONSTACK, 0).expect("sigaction");
        }
        f();
        100
    })?;
    Ok((st, shared.get()))
}

/// What `__reserved` may hold before Linux needs an extra_context: 4096 less the terminator (16)
/// and the extra_context (32) it keeps in reserve (Linux's signal.c, sigframe_alloc_end).
pub const RESERVED_BUDGET: usize = uc::RESERVED_SIZE - 16 - 32;

/// One record of a signal frame, as [`walk_frame`] found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Offset from the ucontext (`__reserved` starts at [`uc::RESERVED`]).
    pub off: usize,
    pub magic: u32,
    pub size: u32,
    /// In the space an extra_context points to, not in `__reserved`.
    pub in_extra: bool,
}

/// An extra_context record: where it is and what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extra {
    pub off: usize,
    pub datap: u64,
    pub size: u32,
}

/// Every record of one signal frame, in order.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    pub records: Vec<Record>,
    pub extra: Option<Extra>,
    /// Offset from the ucontext just past the final 16-byte terminator.
    pub end: usize,
}

impl Frame {
    pub fn find(&self, magic: u32) -> Option<Record> {
        self.records.iter().copied().find(|r| r.magic == magic)
    }
    pub fn count(&self, magic: u32) -> usize {
        self.records.iter().filter(|r| r.magic == magic).count()
    }
}

/// Walks the records of a delivered frame, following an extra_context, and checks the layout
/// Linux produces (Linux's signal.c, setup_sigframe_layout): records 16-aligned with sizes that are multiples
/// of 16 and fit; at most one extra_context, in `__reserved`, 32 bytes, followed by a null
/// terminator, its `datap` the address just after that terminator and its `size` reaching
/// exactly past the final terminator; fpsimd_context and esr_context in `__reserved`.
pub fn walk_frame(ucx: Ucontext) -> Result<Frame, String> {
    let base = ucx.0 as usize;
    let mut f = Frame::default();
    let mut off = uc::RESERVED;
    let mut limit = uc::RESERVED + uc::RESERVED_SIZE;
    let mut in_extra = false;
    loop {
        if !(off - uc::RESERVED).is_multiple_of(16) {
            return Err(alloc::format!("record at {off:#x} not 16-aligned"));
        }
        if off + 16 > limit {
            return Err(alloc::format!("no terminator before {limit:#x}"));
        }
        let magic = ucx.read_u32(off);
        let size = ucx.read_u32(off + 4);
        if magic == 0 {
            if size != 0 {
                return Err(alloc::format!("terminator at {off:#x} with size {size}"));
            }
            f.end = off + 16;
            if let Some(x) = f.extra {
                let datap_off = x.datap as usize - base;
                if f.end != datap_off + x.size as usize {
                    return Err(alloc::format!(
                        "extra_context size {} ends at {:#x}, the final terminator at {off:#x}",
                        x.size,
                        datap_off + x.size as usize
                    ));
                }
            }
            return Ok(f);
        }
        let sz = size as usize;
        if sz < 8 || !sz.is_multiple_of(16) || off + sz > limit {
            return Err(alloc::format!(
                "record {magic:#x} at {off:#x}: size {size} (limit {limit:#x})"
            ));
        }
        f.records.push(Record {
            off,
            magic,
            size,
            in_extra,
        });
        if in_extra && matches!(magic, FPSIMD_MAGIC | ESR_MAGIC | EXTRA_MAGIC) {
            return Err(alloc::format!("record {magic:#x} in the extra space"));
        }
        if magic != EXTRA_MAGIC {
            off += sz;
            continue;
        }
        if sz != 32 {
            return Err(alloc::format!("extra_context size {size}"));
        }
        let datap = ucx.read_u64(off + 8);
        let esize = ucx.read_u32(off + 16);
        f.extra = Some(Extra {
            off,
            datap,
            size: esize,
        });
        let (tm, ts) = (ucx.read_u32(off + 32), ucx.read_u32(off + 36));
        if tm != 0 || ts != 0 {
            return Err(alloc::format!(
                "extra_context not followed by a terminator: {tm:#x} {ts}"
            ));
        }
        let want = base + off + 48;
        if datap as usize != want {
            return Err(alloc::format!(
                "extra_context datap {datap:#x}, want {want:#x} (just after the terminator)"
            ));
        }
        if !esize.is_multiple_of(16) {
            return Err(alloc::format!(
                "extra_context size {esize} not a multiple of 16"
            ));
        }
        off += 48;
        limit = off + esize as usize;
        in_extra = true;
    }
}
