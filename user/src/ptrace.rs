//! ptrace(2) for the tests: the raw call, the requests, options, events and regset note types
//! with the values Linux's uapi headers give them (`include/uapi/linux/ptrace.h`,
//! `include/uapi/linux/elf.h`, `arch/arm64/include/uapi/asm/ptrace.h`), the iovec
//! GETREGSET/SETREGSET helpers, `user_pt_regs` and the `user_sve_header`/`user_za_header`
//! layouts. Written independently of the kernel's abi crate on purpose: the tests are the other
//! side of the interface.
//!
//! Every wait helper here is bounded, so a kernel that never reports a stop fails the test
//! instead of hanging the suite.

use alloc::string::String;
use alloc::vec::Vec;

use crate::sys::{self, Errno, Iovec, SysResult};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

pub const NR_PTRACE: usize = 117;
pub const NR_PROCESS_VM_READV: usize = 270;
pub const NR_PROCESS_VM_WRITEV: usize = 271;

// ---- requests ----
pub const PTRACE_TRACEME: usize = 0;
pub const PTRACE_PEEKTEXT: usize = 1;
pub const PTRACE_PEEKDATA: usize = 2;
pub const PTRACE_PEEKUSR: usize = 3;
pub const PTRACE_POKETEXT: usize = 4;
pub const PTRACE_POKEDATA: usize = 5;
pub const PTRACE_POKEUSR: usize = 6;
pub const PTRACE_CONT: usize = 7;
pub const PTRACE_KILL: usize = 8;
pub const PTRACE_SINGLESTEP: usize = 9;
pub const PTRACE_ATTACH: usize = 16;
pub const PTRACE_DETACH: usize = 17;
pub const PTRACE_SYSCALL: usize = 24;
pub const PTRACE_SETOPTIONS: usize = 0x4200;
pub const PTRACE_GETEVENTMSG: usize = 0x4201;
pub const PTRACE_GETSIGINFO: usize = 0x4202;
pub const PTRACE_SETSIGINFO: usize = 0x4203;
pub const PTRACE_GETREGSET: usize = 0x4204;
pub const PTRACE_SETREGSET: usize = 0x4205;
pub const PTRACE_SEIZE: usize = 0x4206;
pub const PTRACE_INTERRUPT: usize = 0x4207;
pub const PTRACE_LISTEN: usize = 0x4208;
pub const PTRACE_PEEKSIGINFO: usize = 0x4209;
pub const PTRACE_GETSIGMASK: usize = 0x420a;
pub const PTRACE_SETSIGMASK: usize = 0x420b;
pub const PTRACE_GET_SYSCALL_INFO: usize = 0x420e;

// ---- options (PTRACE_SETOPTIONS, PTRACE_SEIZE's data) ----
pub const PTRACE_O_TRACESYSGOOD: usize = 1;
pub const PTRACE_O_TRACEFORK: usize = 1 << 1;
pub const PTRACE_O_TRACEVFORK: usize = 1 << 2;
pub const PTRACE_O_TRACECLONE: usize = 1 << 3;
pub const PTRACE_O_TRACEEXEC: usize = 1 << 4;
pub const PTRACE_O_TRACEVFORKDONE: usize = 1 << 5;
pub const PTRACE_O_TRACEEXIT: usize = 1 << 6;
pub const PTRACE_O_TRACESECCOMP: usize = 1 << 7;
pub const PTRACE_O_EXITKILL: usize = 1 << 20;

// ---- events (status >> 16) ----
pub const PTRACE_EVENT_FORK: i32 = 1;
pub const PTRACE_EVENT_VFORK: i32 = 2;
pub const PTRACE_EVENT_CLONE: i32 = 3;
pub const PTRACE_EVENT_EXEC: i32 = 4;
pub const PTRACE_EVENT_VFORK_DONE: i32 = 5;
pub const PTRACE_EVENT_EXIT: i32 = 6;
pub const PTRACE_EVENT_SECCOMP: i32 = 7;
pub const PTRACE_EVENT_STOP: i32 = 128;

// ---- PTRACE_GET_SYSCALL_INFO ops ----
pub const PTRACE_SYSCALL_INFO_NONE: u8 = 0;
pub const PTRACE_SYSCALL_INFO_ENTRY: u8 = 1;
pub const PTRACE_SYSCALL_INFO_EXIT: u8 = 2;
pub const PTRACE_SYSCALL_INFO_SECCOMP: u8 = 3;
/// AUDIT_ARCH_AARCH64: EM_AARCH64 (183) | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE.
pub const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;

/// `__WALL`: wait for every child, clone or not (threads of a tracee).
pub const WALL: u32 = 0x4000_0000;
pub const WNOTHREAD: u32 = 0x2000_0000;
pub const WCLONE: u32 = 0x8000_0000;

// ---- regset note types ----
pub const NT_PRSTATUS: usize = 1;
pub const NT_PRFPREG: usize = 2;
pub const NT_ARM_TLS: usize = 0x401;
pub const NT_ARM_HW_BREAK: usize = 0x402;
pub const NT_ARM_HW_WATCH: usize = 0x403;
pub const NT_ARM_SYSTEM_CALL: usize = 0x404;
pub const NT_ARM_SVE: usize = 0x405;
pub const NT_ARM_PAC_MASK: usize = 0x406;
pub const NT_ARM_TAGGED_ADDR_CTRL: usize = 0x409;
pub const NT_ARM_SSVE: usize = 0x40b;
pub const NT_ARM_ZA: usize = 0x40c;
pub const NT_ARM_ZT: usize = 0x40d;
pub const NT_ARM_FPMR: usize = 0x40e;

// ---- user_sve_header / user_za_header ----
pub const SVE_PT_REGS_MASK: u16 = 1;
pub const SVE_PT_REGS_FPSIMD: u16 = 0;
pub const SVE_PT_REGS_SVE: u16 = 1;
/// PR_SVE_VL_INHERIT >> 16.
pub const SVE_PT_VL_INHERIT: u16 = 1 << 1;
/// PR_SVE_SET_VL_ONEXEC >> 16.
pub const SVE_PT_VL_ONEXEC: u16 = 1 << 2;
pub const ZA_PT_VL_INHERIT: u16 = 1 << 1;
pub const ZA_PT_VL_ONEXEC: u16 = 1 << 2;
pub const HEADER_SIZE: usize = 16;
/// `SVE_PT_FPSIMD_SIZE`: a user_fpsimd_state.
pub const FPSIMD_SIZE: usize = 528;
/// sizeof(struct user_pt_regs): x0-x30, sp, pc, pstate.
pub const PT_REGS_SIZE: usize = 272;
/// The ZT0 register: 512 bits.
pub const ZT_SIZE: usize = 64;

// ---- pstate bits ----
pub const PSR_MODE_MASK: u64 = 0xf;
pub const PSR_MODE_EL1H: u64 = 0x5;
pub const PSR_MODE32_BIT: u64 = 0x10;
pub const PSR_F_BIT: u64 = 0x40;
pub const PSR_I_BIT: u64 = 0x80;
pub const PSR_A_BIT: u64 = 0x100;
pub const PSR_D_BIT: u64 = 0x200;
pub const PSR_NZCV: u64 = 0xf000_0000;

/// ptrace(req, pid, addr, data) as the raw system call.
pub fn ptrace(req: usize, pid: i32, addr: usize, data: usize) -> SysResult {
    sys::syscall(NR_PTRACE, &[req, pid as usize, addr, data])
}

pub fn traceme() -> SysResult {
    ptrace(PTRACE_TRACEME, 0, 0, 0)
}
pub fn attach(pid: i32) -> SysResult {
    ptrace(PTRACE_ATTACH, pid, 0, 0)
}
pub fn seize(pid: i32, options: usize) -> SysResult {
    ptrace(PTRACE_SEIZE, pid, 0, options)
}
pub fn interrupt(pid: i32) -> SysResult {
    ptrace(PTRACE_INTERRUPT, pid, 0, 0)
}
pub fn listen(pid: i32) -> SysResult {
    ptrace(PTRACE_LISTEN, pid, 0, 0)
}
/// PTRACE_CONT, delivering `sig` (0: none).
pub fn cont(pid: i32, sig: i32) -> SysResult {
    ptrace(PTRACE_CONT, pid, 0, sig as usize)
}
/// PTRACE_SYSCALL: resume to the next syscall entry or exit.
pub fn cont_syscall(pid: i32, sig: i32) -> SysResult {
    ptrace(PTRACE_SYSCALL, pid, 0, sig as usize)
}
pub fn detach(pid: i32, sig: i32) -> SysResult {
    ptrace(PTRACE_DETACH, pid, 0, sig as usize)
}
pub fn kill(pid: i32) -> SysResult {
    ptrace(PTRACE_KILL, pid, 0, 0)
}
pub fn setoptions(pid: i32, options: usize) -> SysResult {
    ptrace(PTRACE_SETOPTIONS, pid, 0, options)
}
pub fn geteventmsg(pid: i32) -> SysResult<u64> {
    let mut m = 0u64;
    ptrace(PTRACE_GETEVENTMSG, pid, 0, &mut m as *mut u64 as usize).map(|_| m)
}
/// PTRACE_PEEKDATA through the raw system call: the word goes to *data, the call returns 0
/// (the -1/errno dance is glibc's wrapper, not the kernel's ABI).
pub fn peekdata(pid: i32, addr: usize) -> SysResult<u64> {
    let mut w = 0u64;
    let r = ptrace(PTRACE_PEEKDATA, pid, addr, &mut w as *mut u64 as usize)?;
    if r != 0 {
        return Err(Errno(-1000 - r as i32));
    }
    Ok(w)
}
pub fn pokedata(pid: i32, addr: usize, word: u64) -> SysResult {
    ptrace(PTRACE_POKEDATA, pid, addr, word as usize)
}
pub fn getsiginfo(pid: i32) -> SysResult<crate::sig::SigInfo> {
    let mut si = crate::sig::SigInfo::zeroed();
    ptrace(
        PTRACE_GETSIGINFO,
        pid,
        0,
        &mut si as *mut crate::sig::SigInfo as usize,
    )
    .map(|_| si)
}
pub fn setsiginfo(pid: i32, si: &crate::sig::SigInfo) -> SysResult {
    ptrace(
        PTRACE_SETSIGINFO,
        pid,
        0,
        si as *const crate::sig::SigInfo as usize,
    )
}
/// PTRACE_GETSIGMASK with the mask size `size` (8 is the only one Linux accepts).
pub fn getsigmask(pid: i32, size: usize) -> SysResult<u64> {
    let mut m = 0u64;
    ptrace(PTRACE_GETSIGMASK, pid, size, &mut m as *mut u64 as usize).map(|_| m)
}
pub fn setsigmask(pid: i32, size: usize, mask: u64) -> SysResult {
    ptrace(PTRACE_SETSIGMASK, pid, size, &mask as *const u64 as usize)
}

/// GETREGSET of note `nt` into `buf`; returns the iov_len the kernel wrote back.
pub fn getregset(pid: i32, nt: usize, buf: &mut [u8]) -> SysResult<usize> {
    let mut iov = Iovec {
        base: buf.as_mut_ptr() as usize,
        len: buf.len(),
    };
    ptrace(PTRACE_GETREGSET, pid, nt, &mut iov as *mut Iovec as usize).map(|_| iov.len)
}
/// SETREGSET of note `nt` from `buf`; returns the iov_len the kernel wrote back.
pub fn setregset(pid: i32, nt: usize, buf: &[u8]) -> SysResult<usize> {
    let mut iov = Iovec {
        base: buf.as_ptr() as usize,
        len: buf.len(),
    };
    ptrace(PTRACE_SETREGSET, pid, nt, &mut iov as *mut Iovec as usize).map(|_| iov.len)
}
/// GETREGSET into a buffer of `max` bytes, truncated to what the kernel returned.
pub fn getregset_vec(pid: i32, nt: usize, max: usize) -> SysResult<Vec<u8>> {
    let mut v = alloc::vec![0u8; max];
    let n = getregset(pid, nt, &mut v)?;
    v.truncate(n);
    Ok(v)
}

/// `struct user_pt_regs` (its bytes: zerocopy's `as_bytes` / `as_mut_bytes`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct UserPtRegs {
    pub regs: [u64; 31],
    pub sp: u64,
    pub pc: u64,
    pub pstate: u64,
}
const _: () = assert!(core::mem::size_of::<UserPtRegs>() == PT_REGS_SIZE);

impl UserPtRegs {
    pub const fn zeroed() -> UserPtRegs {
        UserPtRegs {
            regs: [0; 31],
            sp: 0,
            pc: 0,
            pstate: 0,
        }
    }
}

/// NT_PRSTATUS of a stopped tracee.
pub fn get_regs(pid: i32) -> SysResult<UserPtRegs> {
    let mut r = UserPtRegs::zeroed();
    let n = getregset(pid, NT_PRSTATUS, r.as_mut_bytes())?;
    if n != PT_REGS_SIZE {
        return Err(Errno(-2000 - n as i32));
    }
    Ok(r)
}
pub fn set_regs(pid: i32, r: &UserPtRegs) -> SysResult {
    setregset(pid, NT_PRSTATUS, r.as_bytes()).map(|_| 0)
}
/// Moves the tracee's pc by `delta` bytes (over a `brk`/`udf` it stopped at).
pub fn advance_pc(pid: i32, delta: u64) -> SysResult {
    let mut r = get_regs(pid)?;
    r.pc = r.pc.wrapping_add(delta);
    set_regs(pid, &r)
}

/// `struct user_fpsimd_state`: V0-V31, FPSR, FPCR, 8 bytes of padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct UserFpsimd {
    pub vregs: [u128; 32],
    pub fpsr: u32,
    pub fpcr: u32,
    pub reserved: [u32; 2],
}
const _: () = assert!(core::mem::size_of::<UserFpsimd>() == FPSIMD_SIZE);

impl UserFpsimd {
    /// The state whose first bytes are `b` (a shorter `b` leaves the rest zero).
    pub fn from_bytes(b: &[u8]) -> UserFpsimd {
        let mut f = UserFpsimd::new_zeroed();
        let n = b.len().min(FPSIMD_SIZE);
        f.as_mut_bytes()[..n].copy_from_slice(&b[..n]);
        f
    }
}

/// `struct user_sve_header` (NT_ARM_SVE, NT_ARM_SSVE) and `struct user_za_header` (NT_ARM_ZA):
/// the same 16-byte layout.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct VecHeader {
    pub size: u32,
    pub max_size: u32,
    pub vl: u16,
    pub max_vl: u16,
    pub flags: u16,
    pub reserved: u16,
}

const _: () = assert!(core::mem::size_of::<VecHeader>() == HEADER_SIZE);

impl VecHeader {
    /// The header at the start of `b` (None if `b` is shorter than 16 bytes).
    pub fn parse(b: &[u8]) -> Option<VecHeader> {
        VecHeader::read_from_prefix(b).ok().map(|(h, _)| h)
    }
    /// A header for a write: size, vl and flags (max_size and max_vl are ignored by SET).
    pub fn new(size: usize, vl: usize, flags: u16) -> VecHeader {
        VecHeader {
            size: size as u32,
            vl: vl as u16,
            flags,
            ..VecHeader::default()
        }
    }
}

// ---- SVE_PT_* / ZA_PT_* layout (vq = vl / 16) ----

/// `SVE_PT_SVE_ZREG_OFFSET(vq, n)`.
pub const fn sve_pt_zreg_offset(vq: usize, n: usize) -> usize {
    HEADER_SIZE + 16 * vq * n
}
/// `SVE_PT_SVE_PREG_OFFSET(vq, n)`.
pub const fn sve_pt_preg_offset(vq: usize, n: usize) -> usize {
    HEADER_SIZE + 512 * vq + 2 * vq * n
}
/// `SVE_PT_SVE_FFR_OFFSET(vq)`.
pub const fn sve_pt_ffr_offset(vq: usize) -> usize {
    HEADER_SIZE + 544 * vq
}
/// `SVE_PT_SVE_FPSR_OFFSET(vq)`: after Z/P/FFR, rounded up to 16.
pub const fn sve_pt_fpsr_offset(vq: usize) -> usize {
    (HEADER_SIZE + 546 * vq).next_multiple_of(16)
}
pub const fn sve_pt_fpcr_offset(vq: usize) -> usize {
    sve_pt_fpsr_offset(vq) + 4
}
/// `SVE_PT_SIZE(vq, flags)`.
pub const fn sve_pt_size(vq: usize, flags: u16) -> usize {
    if flags & SVE_PT_REGS_MASK == SVE_PT_REGS_SVE {
        HEADER_SIZE + (sve_pt_fpcr_offset(vq) + 4 - HEADER_SIZE).next_multiple_of(16)
    } else {
        HEADER_SIZE + FPSIMD_SIZE
    }
}
/// `ZA_PT_SIZE(vq)`: the header and SVL rows of SVL bytes.
pub const fn za_pt_size(vq: usize) -> usize {
    HEADER_SIZE + 256 * vq * vq
}
/// The largest NT_ARM_SVE/NT_ARM_SSVE a 256-byte VL needs.
pub const SVE_PT_MAX: usize = sve_pt_size(16, SVE_PT_REGS_SVE);
/// The largest NT_ARM_ZA.
pub const ZA_PT_MAX: usize = za_pt_size(16);

/// An NT_ARM_SVE/NT_ARM_SSVE payload in SVE format at `vl`: the header, the Z/P/FFR image
/// (the sve_context layout, 546·vq bytes, as `SveRegs` holds it), FPSR and FPCR.
pub fn build_sve(vl: usize, flags: u16, zpf: &[u8], fpsr: u32, fpcr: u32) -> Vec<u8> {
    let vq = vl / 16;
    let size = sve_pt_size(vq, SVE_PT_REGS_SVE);
    let mut b = alloc::vec![0u8; size];
    b[..HEADER_SIZE].copy_from_slice(VecHeader::new(size, vl, flags | SVE_PT_REGS_SVE).as_bytes());
    let n = zpf.len().min(546 * vq);
    b[HEADER_SIZE..HEADER_SIZE + n].copy_from_slice(&zpf[..n]);
    let o = sve_pt_fpsr_offset(vq);
    b[o..o + 4].copy_from_slice(&fpsr.to_le_bytes());
    b[o + 4..o + 8].copy_from_slice(&fpcr.to_le_bytes());
    b
}

/// An NT_ARM_SVE payload in FPSIMD format: the header and a user_fpsimd_state.
pub fn build_fpsimd(vl: usize, flags: u16, f: &UserFpsimd) -> Vec<u8> {
    let size = sve_pt_size(0, SVE_PT_REGS_FPSIMD);
    let mut b = alloc::vec![0u8; size];
    b[..HEADER_SIZE].copy_from_slice(
        VecHeader::new(size, vl, (flags & !SVE_PT_REGS_MASK) | SVE_PT_REGS_FPSIMD).as_bytes(),
    );
    b[HEADER_SIZE..].copy_from_slice(f.as_bytes());
    b
}

/// An NT_ARM_ZA payload: the header and SVL rows of `za` (svl·svl bytes).
pub fn build_za(svl: usize, flags: u16, za: &[u8]) -> Vec<u8> {
    let size = za_pt_size(svl / 16);
    let mut b = alloc::vec![0u8; size];
    b[..HEADER_SIZE].copy_from_slice(VecHeader::new(size, svl, flags).as_bytes());
    let n = za.len().min(svl * svl);
    b[HEADER_SIZE..HEADER_SIZE + n].copy_from_slice(&za[..n]);
    b
}

/// The Z/P/FFR image (546·vq bytes) of an SVE-format NT_ARM_SVE/SSVE read.
pub fn sve_zpf(b: &[u8], vl: usize) -> Option<&[u8]> {
    b.get(HEADER_SIZE..HEADER_SIZE + 546 * (vl / 16))
}
/// (FPSR, FPCR) of an SVE-format read.
pub fn sve_fpsr_fpcr(b: &[u8], vl: usize) -> Option<(u32, u32)> {
    let o = sve_pt_fpsr_offset(vl / 16);
    let w = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    Some((w(o)?, w(o + 4)?))
}

/// `struct ptrace_syscall_info`, read by offset (the union differs per op).
#[derive(Clone, Copy, Debug)]
pub struct SyscallInfo {
    pub op: u8,
    pub arch: u32,
    pub instruction_pointer: u64,
    pub stack_pointer: u64,
    /// entry: nr, args[6]; exit: rval, is_error (low byte of word 1).
    pub words: [u64; 7],
    /// What the call returned: the number of bytes the kernel filled.
    pub len: usize,
}

pub fn get_syscall_info(pid: i32) -> SysResult<SyscallInfo> {
    let mut b = [0u64; 16];
    let n = ptrace(
        PTRACE_GET_SYSCALL_INFO,
        pid,
        core::mem::size_of_val(&b),
        b.as_mut_ptr() as usize,
    )?;
    let mut words = [0u64; 7];
    words.copy_from_slice(&b[3..10]);
    Ok(SyscallInfo {
        op: b[0] as u8,
        arch: (b[0] >> 32) as u32,
        instruction_pointer: b[1],
        stack_pointer: b[2],
        words,
        len: n,
    })
}

/// process_vm_readv of one range of `pid` into `buf`.
pub fn process_vm_readv(pid: i32, remote: usize, buf: &mut [u8]) -> SysResult {
    let l = Iovec {
        base: buf.as_mut_ptr() as usize,
        len: buf.len(),
    };
    let r = Iovec {
        base: remote,
        len: buf.len(),
    };
    sys::syscall(
        NR_PROCESS_VM_READV,
        &[
            pid as usize,
            &l as *const Iovec as usize,
            1,
            &r as *const Iovec as usize,
            1,
            0,
        ],
    )
}
/// process_vm_writev of `buf` to one range of `pid`.
pub fn process_vm_writev(pid: i32, remote: usize, buf: &[u8]) -> SysResult {
    let l = Iovec {
        base: buf.as_ptr() as usize,
        len: buf.len(),
    };
    let r = Iovec {
        base: remote,
        len: buf.len(),
    };
    sys::syscall(
        NR_PROCESS_VM_WRITEV,
        &[
            pid as usize,
            &l as *const Iovec as usize,
            1,
            &r as *const Iovec as usize,
            1,
            0,
        ],
    )
}

// ---- wait statuses of traced children ----

/// The PTRACE_EVENT_* of a stop status (0 for a plain stop).
pub fn event(st: i32) -> i32 {
    (st >> 16) & 0xffff
}
/// `status >> 8` of an event stop: SIGTRAP | event << 8.
pub fn event_status(ev: i32) -> i32 {
    crate::sig::SIGTRAP | (ev << 8)
}

/// Waits at most `timeout_ns` for a state change of `pid` (-1: any child) with `options`
/// (WNOHANG is added). Returns (pid, status); an error message on timeout or a wait error.
/// Never kills: the caller decides.
pub fn wait_for(pid: i32, options: u32, timeout_ns: u64) -> Result<(i32, i32), String> {
    let deadline = sys::now_ns() + timeout_ns;
    let mut tries = 0u32;
    loop {
        match sys::waitpid(pid, options | sys::WNOHANG) {
            Ok((0, _)) => {}
            Ok(r) => return Ok(r),
            Err(e) => return Err(alloc::format!("waitpid({pid}): {e:?}")),
        }
        if sys::now_ns() >= deadline {
            return Err(alloc::format!(
                "waitpid({pid}): no state change within {} ms",
                timeout_ns / 1_000_000
            ));
        }
        tries += 1;
        if tries < 50 {
            let _ = sys::sched_yield();
        } else {
            sys::sleep_ns(1_000_000);
        }
    }
}

/// The default bound on one wait: generous for a loaded 2-CPU machine, short enough that a
/// missing stop fails the test quickly.
pub const WAIT_NS: u64 = 5_000_000_000;

/// Waits for `pid` (with __WALL) and returns its status, which must be a stop.
pub fn wait_stop(pid: i32) -> Result<i32, String> {
    let (_, st) = wait_for(pid, WALL, WAIT_NS)?;
    if !crate::proc::wifstopped(st) {
        return Err(alloc::format!(
            "pid {pid}: expected a stop, got {}",
            crate::proc::describe(st)
        ));
    }
    Ok(st)
}

/// Waits for a stop of `pid` with signal `sig` (status >> 8 == `sig`, no event bits).
pub fn wait_stop_sig(pid: i32, sig: i32) -> Result<(), String> {
    let st = wait_stop(pid)?;
    if st >> 8 != sig {
        return Err(alloc::format!(
            "pid {pid}: expected a stop with status>>8 {sig:#x}, got {st:#x} ({})",
            crate::proc::describe(st)
        ));
    }
    Ok(())
}

/// Waits for `pid` to end (with __WALL) and returns its status.
pub fn wait_end(pid: i32) -> Result<i32, String> {
    let (_, st) = wait_for(pid, WALL, WAIT_NS)?;
    if crate::proc::wifstopped(st) {
        return Err(alloc::format!(
            "pid {pid}: expected it to end, got a stop {st:#x} ({})",
            crate::proc::describe(st)
        ));
    }
    Ok(st)
}

/// `Err("ptrace: ENOSYS")` when the kernel has no ptrace: probes a request that needs no
/// tracee (PTRACE_GETEVENTMSG on ourselves, ESRCH on Linux since nobody traces us by us).
pub fn need_ptrace() -> Result<(), String> {
    match ptrace(PTRACE_GETEVENTMSG, sys::getpid(), 0, 0) {
        Err(crate::sys::ENOSYS) => Err("ptrace: ENOSYS".into()),
        _ => Ok(()),
    }
}

/// Waits for the tracee to end and requires exit status `code`.
pub fn expect_exit(pid: i32, code: i32) -> crate::ktap::TestResult {
    let st = wait_end(pid)?;
    crate::check_eq!(
        crate::proc::describe(st),
        alloc::format!("exited {code}"),
        "tracee {pid}"
    );
    Ok(())
}

/// Runs test `f` in its own process group, in a child, for at most `timeout_ns`; every process
/// it made is killed afterwards. The child's verdict (and message) comes back through a pipe.
pub fn isolated(f: fn() -> crate::ktap::TestResult, timeout_ns: u64) -> crate::ktap::TestResult {
    need_ptrace()?;
    let [r, w] =
        sys::pipe2(sys::O_NONBLOCK | sys::O_CLOEXEC).map_err(|e| alloc::format!("pipe2: {e:?}"))?;
    let pid = crate::proc::spawn(|| {
        let _ = sys::close(r);
        let _ = sys::setpgid(0, 0);
        match f() {
            Ok(()) => 0,
            Err(m) => {
                let _ = sys::write_all(w, m.as_bytes());
                1
            }
        }
    })
    .map_err(|e| alloc::format!("fork: {e:?}"))?;
    let _ = sys::close(w);
    let waited = crate::proc::wait_bounded(pid, timeout_ns);
    let _ = sys::kill(-pid, crate::sig::SIGKILL);
    let mut msg = Vec::new();
    let mut buf = [0u8; 512];
    while let Ok(n @ 1..) = sys::read(r, &mut buf) {
        msg.extend_from_slice(&buf[..n]);
    }
    let _ = sys::close(r);
    let msg = String::from_utf8_lossy(&msg).into_owned();
    match waited {
        Err(e) => Err(alloc::format!("waiting for the test process: {e:?}")),
        Ok((_, true)) => Err(alloc::format!(
            "timed out after {} ms (killed); {msg}",
            timeout_ns / 1_000_000
        )),
        Ok((0, false)) => Ok(()),
        Ok((st, false)) if msg.is_empty() => Err(alloc::format!(
            "test process: {}",
            crate::proc::describe(st)
        )),
        Ok(_) => Err(msg),
    }
}
