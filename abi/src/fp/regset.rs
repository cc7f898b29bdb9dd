//! Register sets as ptrace (PTRACE_GETREGSET/SETREGSET) and core-file notes lay them out: the
//! note types, each regset's unit and maximum size, the SVE/SSVE/ZA headers and payloads, and
//! the rules that decide what a read shows and what a write does (Linux 7.3's
//! arch/arm64/kernel/ptrace.c). The kernel reads and writes the task's state; everything that
//! can be decided on plain bytes is decided here and tested on the host.
//!
//! A write receives `data`: the first min(iov_len, max) bytes the tracer supplied (a multiple
//! of the unit). Like Linux's `user_regset_copyin`, each field takes whatever part of it `data`
//! covers, and a short write leaves the rest of the field as it was.

use crate::fp::sigframe::{FpsimdState, UserRegs};
use crate::uapi::errno::Errno;
use crate::uapi::sys::{PR_SVE_SET_VL_ONEXEC, PR_SVE_VL_INHERIT};
use crate::util::bytes::{get_u32, get_u64, put_u32, put_u64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// ---- note types (elf.h) ----

pub use crate::format::elf::{
    NT_ARM_FPMR, NT_ARM_GCS, NT_ARM_HW_BREAK, NT_ARM_HW_WATCH, NT_ARM_PACA_KEYS, NT_ARM_PACG_KEYS,
    NT_ARM_PAC_ENABLED_KEYS, NT_ARM_PAC_MASK, NT_ARM_POE, NT_ARM_SSVE, NT_ARM_SVE,
    NT_ARM_SYSTEM_CALL, NT_ARM_TAGGED_ADDR_CTRL, NT_ARM_TLS, NT_ARM_ZA, NT_ARM_ZT, NT_PRFPREG,
    NT_PRSTATUS,
};

// ---- sizes ----

/// user_pt_regs: x0-x30, sp, pc, pstate.
pub const USER_PT_REGS_SIZE: usize = 34 * 8;
/// user_fpsimd_state: vregs[32], fpsr, fpcr, two reserved words.
pub const USER_FPSIMD_SIZE: usize = 528;
/// user_hwdebug_state: dbg_info, pad, then 16 (addr, ctrl, pad) slots.
pub const USER_HWDEBUG_SIZE: usize = 8 + 16 * ARM_MAX_BRP;
/// user_pac_mask: data_mask, insn_mask.
pub const USER_PAC_MASK_SIZE: usize = 16;
/// ZT0: 512 bits.
pub const ZT_REG_BYTES: usize = 64;
/// The most breakpoint / watchpoint slots the regset can describe (ARM_MAX_BRP/WRP).
pub const ARM_MAX_BRP: usize = 16;
/// Linux's ARCH_SVE_VQ_MAX and SME_VQ_MAX: the regsets are sized for VQ 16.
pub const VQ_MAX: u32 = 16;
/// Quadword size (__SVE_VQ_BYTES).
pub const VQ_BYTES: u32 = 16;

// ---- user_sve_header / user_za_header ----

pub const SVE_PT_REGS_MASK: u16 = 1;
pub const SVE_PT_REGS_FPSIMD: u16 = 0;
pub const SVE_PT_REGS_SVE: u16 = 1;
/// PR_SVE_VL_INHERIT and PR_SVE_SET_VL_ONEXEC moved down by 16 bits.
pub const SVE_PT_VL_INHERIT: u16 = (PR_SVE_VL_INHERIT >> 16) as u16;
pub const SVE_PT_VL_ONEXEC: u16 = (PR_SVE_SET_VL_ONEXEC >> 16) as u16;
pub const ZA_PT_VL_INHERIT: u16 = SVE_PT_VL_INHERIT;
pub const ZA_PT_VL_ONEXEC: u16 = SVE_PT_VL_ONEXEC;

/// Both headers' size, and where the registers start.
pub const HEADER_SIZE: usize = 16;

/// user_sve_header and user_za_header (same layout). Written with `as_bytes`; read from the
/// start of a regset write with `VecHeader::read_from_prefix`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct VecHeader {
    /// Meaningful bytes, header included.
    pub size: u32,
    pub max_size: u32,
    pub vl: u16,
    pub max_vl: u16,
    pub flags: u16,
    pub reserved: u16,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<VecHeader>() == HEADER_SIZE);
    assert!(offset_of!(VecHeader, vl) == 8);
    assert!(offset_of!(VecHeader, flags) == 12);
};

const fn round16(n: u32) -> u32 {
    n.div_ceil(VQ_BYTES) * VQ_BYTES
}

/// SVE_PT_SVE_ZREG_OFFSET.
pub const fn sve_pt_zreg_offset(vq: u32, n: u32) -> u32 {
    HEADER_SIZE as u32 + 16 * vq * n
}

/// SVE_PT_SVE_PREGS_OFFSET.
pub const fn sve_pt_pregs_offset(vq: u32) -> u32 {
    HEADER_SIZE as u32 + 512 * vq
}

/// SVE_PT_SVE_FFR_OFFSET.
pub const fn sve_pt_ffr_offset(vq: u32) -> u32 {
    HEADER_SIZE as u32 + 544 * vq
}

/// Z, P and FFR: the signal record's register block (SVE_SIG_REGS_SIZE).
pub const fn sve_regs_size(vq: u32) -> u32 {
    546 * vq
}

/// SVE_PT_SVE_FPSR_OFFSET: after FFR, 16-aligned.
pub const fn sve_pt_fpsr_offset(vq: u32) -> u32 {
    round16(sve_pt_ffr_offset(vq) + 2 * vq)
}

/// SVE_PT_SVE_FPCR_OFFSET.
pub const fn sve_pt_fpcr_offset(vq: u32) -> u32 {
    sve_pt_fpsr_offset(vq) + 4
}

/// SVE_PT_SIZE(vq, flags).
pub const fn sve_pt_size(vq: u32, flags: u16) -> u32 {
    if flags & SVE_PT_REGS_MASK == SVE_PT_REGS_SVE {
        HEADER_SIZE as u32 + round16(sve_pt_fpcr_offset(vq) + 4 - HEADER_SIZE as u32)
    } else {
        round16(HEADER_SIZE as u32 + USER_FPSIMD_SIZE as u32)
    }
}

/// ZA_PT_SIZE(vq): header, then SVL rows of SVL bytes.
pub const fn za_pt_size(vq: u32) -> u32 {
    HEADER_SIZE as u32 + 256 * vq * vq
}

// ---- which regsets exist ----

/// What the system offers that decides which regsets exist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    pub sve: bool,
    pub sme: bool,
    pub sme2: bool,
    /// Address authentication (HWCAP_PACA).
    pub pauth: bool,
    /// FPMR (HWCAP2_FPMR).
    pub fpmr: bool,
    /// Guarded control stacks (HWCAP_GCS).
    pub gcs: bool,
}

/// The size rules of every regset in arm64 Linux's table (arch/arm64/kernel/ptrace.c,
/// aarch64_regsets), whether or not the CPU has what it describes: the unit iov_len must be a
/// multiple of and the maximum size. PTRACE_GETREGSET/SETREGSET check these (EINVAL) and the
/// buffer's range (EFAULT) before they ask whether the regset exists here (`info`), as Linux's
/// ptrace_regset does before the regset's own get/set.
pub fn layout(nt: u32) -> Option<(usize, usize)> {
    let sve_max = sve_pt_size(VQ_MAX, SVE_PT_REGS_SVE) as usize;
    Some(match nt {
        NT_PRSTATUS => (8, USER_PT_REGS_SIZE),
        NT_PRFPREG => (4, USER_FPSIMD_SIZE),
        NT_ARM_TLS => (8, 16),
        NT_ARM_HW_BREAK | NT_ARM_HW_WATCH => (4, USER_HWDEBUG_SIZE),
        NT_ARM_SYSTEM_CALL => (4, 4),
        NT_ARM_SVE | NT_ARM_SSVE => (16, sve_max),
        NT_ARM_ZA => (16, za_pt_size(VQ_MAX) as usize),
        NT_ARM_ZT => (ZT_REG_BYTES, ZT_REG_BYTES),
        NT_ARM_PAC_MASK => (8, USER_PAC_MASK_SIZE),
        NT_ARM_PAC_ENABLED_KEYS => (8, 8),
        NT_ARM_PACA_KEYS => (8, 64),
        NT_ARM_PACG_KEYS => (8, 16),
        NT_ARM_TAGGED_ADDR_CTRL => (8, 8),
        NT_ARM_POE => (8, 8),
        NT_ARM_FPMR => (8, 8),
        NT_ARM_GCS => (8, 24),
        _ => return None,
    })
}

/// How many of a SETREGSET's `n` bytes Linux reads before it checks any of them: the
/// regsets with a header (SVE, SSVE, ZA) check it before their payload, the debug registers
/// are read and checked one slot at a time, every other regset is read whole first. A
/// buffer that faults before this many bytes is EFAULT whatever they hold.
pub fn read_before_check(nt: u32, n: usize) -> usize {
    match nt {
        NT_ARM_SVE | NT_ARM_SSVE | NT_ARM_ZA => n.min(HEADER_SIZE),
        NT_ARM_HW_BREAK | NT_ARM_HW_WATCH => 0,
        _ => n,
    }
}

/// A regset's unit (iov_len must be a multiple of it) and its maximum size in bytes, as in
/// `layout`; None when the note type is unknown or the system lacks what it describes (both
/// EINVAL). NT_ARM_SVE exists with SME alone: a VL-0 FPSIMD write is how a tracer leaves
/// streaming mode there. The PAC key regsets and NT_ARM_POE are not implemented.
pub fn info(nt: u32, caps: Caps) -> Option<(usize, usize)> {
    let here = match nt {
        NT_PRSTATUS
        | NT_PRFPREG
        | NT_ARM_TLS
        | NT_ARM_HW_BREAK
        | NT_ARM_HW_WATCH
        | NT_ARM_SYSTEM_CALL
        | NT_ARM_TAGGED_ADDR_CTRL => true,
        NT_ARM_SVE => caps.sve || caps.sme,
        NT_ARM_PAC_MASK => caps.pauth,
        NT_ARM_SSVE | NT_ARM_ZA => caps.sme,
        NT_ARM_ZT => caps.sme2,
        NT_ARM_FPMR => caps.fpmr,
        NT_ARM_GCS => caps.gcs,
        _ => false,
    };
    layout(nt).filter(|_| here)
}

/// Linux's `user_regset_copyin` for one field: the part of `field` (which sits at `start` in
/// the regset) that `data` covers is overwritten; the rest keeps its value.
pub fn copyin(field: &mut [u8], data: &[u8], start: usize) {
    if start >= data.len() {
        return;
    }
    let n = field.len().min(data.len() - start);
    field[..n].copy_from_slice(&data[start..start + n]);
}

// ---- NT_PRSTATUS ----

/// PSTATE.SS: a ptrace write sets it exactly when the task is single-stepped.
pub const DBG_SPSR_SS: u64 = 1 << 21;

pub fn gpr_encode(r: &UserRegs) -> [u8; USER_PT_REGS_SIZE] {
    let mut b = [0u8; USER_PT_REGS_SIZE];
    for (i, x) in r.regs.iter().enumerate() {
        put_u64(&mut b, 8 * i, *x);
    }
    put_u64(&mut b, 248, r.sp);
    put_u64(&mut b, 256, r.pc);
    put_u64(&mut b, 264, r.pstate);
    b
}

pub fn gpr_decode(b: &[u8; USER_PT_REGS_SIZE]) -> UserRegs {
    let mut r = UserRegs::default();
    for (i, x) in r.regs.iter_mut().enumerate() {
        *x = get_u64(b, 8 * i);
    }
    r.sp = get_u64(b, 248);
    r.pc = get_u64(b, 256);
    r.pstate = get_u64(b, 264);
    r
}

/// `gpr_set`: the current registers overlaid with `data`, then PSTATE checked by the very rule
/// sigreturn uses (`valid_user_pstate`: EL0t, AArch64, DAIF clear; RES0 bits dropped), with SS
/// following `single_step` as Linux's `user_regs_reset_single_step` makes it. EINVAL leaves
/// the task's registers untouched.
pub fn gpr_set(cur: &UserRegs, data: &[u8], single_step: bool) -> Result<UserRegs, Errno> {
    let mut b = gpr_encode(cur);
    copyin(&mut b, data, 0);
    let mut r = gpr_decode(&b);
    let p = if single_step {
        r.pstate | DBG_SPSR_SS
    } else {
        r.pstate & !DBG_SPSR_SS
    };
    r.pstate = crate::fp::sigframe::valid_user_pstate(p).ok_or(Errno::EINVAL)?;
    Ok(r)
}

// ---- NT_PRFPREG and the FPSIMD part of NT_ARM_SVE ----

pub fn fpsimd_encode(f: &FpsimdState) -> [u8; USER_FPSIMD_SIZE] {
    let mut b = [0u8; USER_FPSIMD_SIZE];
    for (i, v) in f.vregs.iter().enumerate() {
        b[16 * i..16 * i + 16].copy_from_slice(&v.to_le_bytes());
    }
    put_u32(&mut b, 512, f.fpsr);
    put_u32(&mut b, 516, f.fpcr);
    b
}

pub fn fpsimd_decode(b: &[u8; USER_FPSIMD_SIZE]) -> FpsimdState {
    let mut f = FpsimdState::default();
    for (i, v) in f.vregs.iter_mut().enumerate() {
        *v = u128::from_le_bytes(b[16 * i..16 * i + 16].try_into().unwrap());
    }
    f.fpsr = get_u32(b, 512);
    f.fpcr = get_u32(b, 516);
    f
}

/// `__fpr_set`: `cur` overlaid with the user_fpsimd_state found at `start` in `data`.
pub fn fpsimd_set(cur: &FpsimdState, data: &[u8], start: usize) -> FpsimdState {
    let mut b = fpsimd_encode(cur);
    copyin(&mut b, data, start);
    fpsimd_decode(&b)
}

// ---- NT_ARM_TLS, NT_ARM_SYSTEM_CALL, NT_ARM_PAC_MASK ----

/// TPIDR_EL0, then TPIDR2_EL0 (zero without SME).
pub fn tls_encode(tpidr: u64, tpidr2: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    put_u64(&mut b, 0, tpidr);
    put_u64(&mut b, 8, tpidr2);
    b
}

/// `tls_set`: the registers the write covers (TPIDR2 only if `sme`).
pub fn tls_set(tpidr: u64, tpidr2: u64, data: &[u8], sme: bool) -> (u64, u64) {
    let mut b = tls_encode(tpidr, tpidr2);
    copyin(&mut b, data, 0);
    (get_u64(&b, 0), if sme { get_u64(&b, 8) } else { tpidr2 })
}

/// `system_call_set`: the new syscall number (an int), or `cur` for an empty write.
pub fn syscall_set(cur: i32, data: &[u8]) -> i32 {
    let mut b = cur.to_le_bytes();
    copyin(&mut b, data, 0);
    i32::from_le_bytes(b)
}

/// `ptrauth_user_pac_mask`: bits 54..va_bits carry the PAC in a user pointer (TBI0 on).
pub const fn pac_mask(va_bits: u32) -> u64 {
    (u64::MAX >> (63 - 54)) & !((1u64 << va_bits) - 1)
}

pub fn pac_mask_encode(va_bits: u32) -> [u8; USER_PAC_MASK_SIZE] {
    let mut b = [0u8; USER_PAC_MASK_SIZE];
    put_u64(&mut b, 0, pac_mask(va_bits));
    put_u64(&mut b, 8, pac_mask(va_bits));
    b
}

// ---- NT_ARM_SVE / NT_ARM_SSVE ----

/// Which of the two SVE regsets: non-streaming (NT_ARM_SVE) or streaming (NT_ARM_SSVE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VecMode {
    Sve,
    Streaming,
}

/// What the task's saved state looks like, for a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VecTask {
    /// PSTATE.SM.
    pub streaming: bool,
    /// The saved registers are in SVE layout (non-streaming SVE, or streaming): Linux's
    /// `fp_type == FP_STATE_SVE`.
    pub sve_format: bool,
    /// The requested mode's current VL, and the system's largest for it.
    pub vl: u32,
    pub max_vl: u32,
    /// The requested mode's VL-inherit flag.
    pub inherit: bool,
}

/// What a read of NT_ARM_SVE / NT_ARM_SSVE returns after the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvePayload {
    /// The mode is not the active one: the header only (6.16+).
    None,
    /// user_fpsimd_state at +16.
    Fpsimd,
    /// Z/P/FFR, a gap, FPSR and FPCR at the header's VL.
    Sve,
}

/// `sve_init_header_from_task` and the payload `sve_get_common` appends.
pub fn sve_header(mode: VecMode, t: &VecTask) -> (VecHeader, SvePayload) {
    let active = t.streaming == (mode == VecMode::Streaming);
    let mut flags = if active && t.sve_format {
        SVE_PT_REGS_SVE
    } else {
        SVE_PT_REGS_FPSIMD
    };
    if t.inherit {
        flags |= SVE_PT_VL_INHERIT;
    }
    let vq = t.vl / VQ_BYTES;
    let h = VecHeader {
        size: if active {
            sve_pt_size(vq, flags)
        } else {
            HEADER_SIZE as u32
        },
        max_size: sve_pt_size(t.max_vl / VQ_BYTES, SVE_PT_REGS_SVE),
        vl: t.vl as u16,
        max_vl: t.max_vl as u16,
        flags,
        reserved: 0,
    };
    let payload = match (active, flags & SVE_PT_REGS_MASK) {
        (false, _) => SvePayload::None,
        (true, SVE_PT_REGS_SVE) => SvePayload::Sve,
        _ => SvePayload::Fpsimd,
    };
    (h, payload)
}

/// Fills an SVE-format regset of `out.len()` bytes (the header's size) after its header:
/// `regs` (Z/P/FFR, signal layout) at +16, zeros up to FPSR, FPSR, FPCR, zeros to the end.
pub fn sve_payload_encode(out: &mut [u8], vq: u32, regs: &[u8], fpsr: u32, fpcr: u32) {
    let n = sve_regs_size(vq) as usize;
    out[HEADER_SIZE..].fill(0);
    out[HEADER_SIZE..HEADER_SIZE + n].copy_from_slice(&regs[..n]);
    put_u32(out, sve_pt_fpsr_offset(vq) as usize, fpsr);
    put_u32(out, sve_pt_fpcr_offset(vq) as usize, fpcr);
}

/// A parsed NT_ARM_SVE / NT_ARM_SSVE write, before the VL is changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SveSet {
    pub header: VecHeader,
    /// The PR_*_SET_VL argument the header asks for (`vl | flags << 16`, REGS bit removed);
    /// None for the VL-0 write that only leaves streaming mode on a system without SVE.
    pub vl_arg: Option<u64>,
    /// The payload is user_fpsimd_state (else SVE layout, or none).
    pub fpsimd: bool,
}

/// `sve_set_common` up to the VL change: EINVAL for a short header, for FPSIMD-format data in
/// streaming mode, and for a VL of 0 unless the system lacks SVE and the write is a bare
/// FPSIMD one to NT_ARM_SVE (or a VL given for NT_ARM_SVE without SVE).
pub fn sve_set_parse(mode: VecMode, data: &[u8], has_sve: bool) -> Result<SveSet, Errno> {
    let (header, _) = VecHeader::read_from_prefix(data).map_err(|_| Errno::EINVAL)?;
    let fpsimd = header.flags & SVE_PT_REGS_MASK == SVE_PT_REGS_FPSIMD;
    if fpsimd && mode == VecMode::Streaming {
        return Err(Errno::EINVAL);
    }
    let vl_arg = if header.vl != 0 {
        if !has_sve && mode == VecMode::Sve {
            return Err(Errno::EINVAL);
        }
        let flags = u64::from(header.flags & !SVE_PT_REGS_MASK);
        Some(u64::from(header.vl) | flags << 16)
    } else {
        if has_sve || header.flags != SVE_PT_REGS_FPSIMD {
            return Err(Errno::EINVAL);
        }
        None
    };
    Ok(SveSet {
        header,
        vl_arg,
        fpsimd,
    })
}

/// After the VL change: register data laid out for a VL other than the one now in force is
/// refused (EIO); the VL change itself stands.
pub fn payload_vl_check(data: &[u8], header_vl: u16, vq_now: u32) -> Result<(), Errno> {
    if data.len() > HEADER_SIZE && vq_now != u32::from(header_vl) / VQ_BYTES {
        return Err(Errno::EIO);
    }
    Ok(())
}

/// An SVE-format write's registers: `regs` (Z/P/FFR at `vq`, already zeroed by the caller)
/// and FPSR/FPCR take what `data` covers; the gap between FFR and FPSR is ignored.
pub fn sve_payload_decode(data: &[u8], vq: u32, regs: &mut [u8], fpsr: &mut u32, fpcr: &mut u32) {
    let n = sve_regs_size(vq) as usize;
    copyin(&mut regs[..n], data, HEADER_SIZE);
    let mut ctl = [0u8; 8];
    put_u32(&mut ctl, 0, *fpsr);
    put_u32(&mut ctl, 4, *fpcr);
    copyin(&mut ctl, data, sve_pt_fpsr_offset(vq) as usize);
    *fpsr = get_u32(&ctl, 0);
    *fpcr = get_u32(&ctl, 4);
}

// ---- NT_ARM_ZA / NT_ARM_ZT ----

/// `za_get`'s header: the payload (SVL × SVL bytes) follows only while PSTATE.ZA is set.
pub fn za_header(vl: u32, max_vl: u32, inherit: bool, za_on: bool) -> VecHeader {
    let vq = vl / VQ_BYTES;
    VecHeader {
        size: if za_on {
            za_pt_size(vq)
        } else {
            HEADER_SIZE as u32
        },
        max_size: za_pt_size(vq),
        vl: vl as u16,
        max_vl: max_vl as u16,
        flags: if inherit { ZA_PT_VL_INHERIT } else { 0 },
        reserved: 0,
    }
}

/// A ZA write's header and the PR_SME_SET_VL argument it asks for (all its flags go to the
/// VL rule, which rejects unknown ones); EINVAL for a short header.
pub fn za_set_parse(data: &[u8]) -> Result<(VecHeader, u64), Errno> {
    let (h, _) = VecHeader::read_from_prefix(data).map_err(|_| Errno::EINVAL)?;
    Ok((h, u64::from(h.vl) | u64::from(h.flags) << 16))
}

/// What a ZA write does once the VL is settled (`vq_now`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZaSet {
    /// Header only: PSTATE.ZA becomes 0.
    Disable,
    /// Copy the rows `data` covers (from +16) and set PSTATE.ZA.
    Load,
}

pub fn za_set_action(data: &[u8], header_vl: u16, vq_now: u32) -> Result<ZaSet, Errno> {
    if data.len() <= HEADER_SIZE {
        return Ok(ZaSet::Disable);
    }
    payload_vl_check(data, header_vl, vq_now)?;
    Ok(ZaSet::Load)
}

// ---- NT_ARM_HW_BREAK / NT_ARM_HW_WATCH ----

/// A perf breakpoint type (HW_BREAKPOINT_R/W/X).
pub const HW_BREAKPOINT_R: u8 = 1;
pub const HW_BREAKPOINT_W: u8 = 2;
pub const HW_BREAKPOINT_RW: u8 = 3;
pub const HW_BREAKPOINT_X: u8 = 4;

/// ctrl.type values (BAS-style: execute, load, store).
const ARM_BREAKPOINT_EXECUTE: u32 = 0;
const ARM_BREAKPOINT_LOAD: u32 = 1;
const ARM_BREAKPOINT_STORE: u32 = 2;
/// ctrl.privilege for EL0 and EL1.
const AARCH64_BREAKPOINT_EL1: u32 = 1;
const AARCH64_BREAKPOINT_EL0: u32 = 2;

/// Linux's arch_hw_breakpoint_ctrl.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HwCtrl {
    /// Byte-address-select mask (8 bits).
    pub len: u32,
    pub kind: u32,
    pub privilege: u32,
    pub enabled: bool,
}

impl HwCtrl {
    pub fn decode(reg: u32) -> HwCtrl {
        HwCtrl {
            enabled: reg & 1 != 0,
            privilege: (reg >> 1) & 3,
            kind: (reg >> 3) & 3,
            len: (reg >> 5) & 0xff,
        }
    }

    pub fn encode(&self) -> u32 {
        (self.len << 5) | (self.kind << 3) | (self.privilege << 1) | u32::from(self.enabled)
    }
}

/// The generic description of one slot (perf_event_attr's breakpoint fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwAttr {
    pub addr: u64,
    /// Length in bytes, 1..=8.
    pub len: u8,
    pub kind: u8,
    pub disabled: bool,
}

/// One allocated slot: its description and the register values built from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwSlot {
    pub attr: HwAttr,
    pub address: u64,
    pub ctrl: HwCtrl,
}

/// A task's ptrace breakpoints and watchpoints (Linux's thread.debug.hbp_break/hbp_watch); a
/// slot exists once the tracer wrote it. Cleared at fork and exec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HwDebug {
    pub brk: [Option<HwSlot>; ARM_MAX_BRP],
    pub wpt: [Option<HwSlot>; ARM_MAX_BRP],
}

/// The system's debug resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwDebugInfo {
    /// ID_AA64DFR0_EL1.DebugVer.
    pub debug_arch: u8,
    pub brps: u8,
    pub wrps: u8,
    /// First address above user space (TASK_SIZE).
    pub task_size: u64,
}

impl HwDebugInfo {
    /// From ID_AA64DFR0_EL1: DebugVer [3:0], BRPs [15:12] and WRPs [23:20] (each one less
    /// than the number of slots).
    pub fn from_dfr0(dfr0: u64, va_bits: u32) -> HwDebugInfo {
        HwDebugInfo {
            debug_arch: (dfr0 & 0xf) as u8,
            brps: ((dfr0 >> 12) & 0xf) as u8 + 1,
            wrps: ((dfr0 >> 20) & 0xf) as u8 + 1,
            task_size: 1 << va_bits,
        }
    }

    /// dbg_info: debug architecture << 8 | number of slots.
    pub fn dbg_info(&self, nt: u32) -> u32 {
        let n = if nt == NT_ARM_HW_BREAK {
            self.brps
        } else {
            self.wrps
        };
        u32::from(self.debug_arch) << 8 | u32::from(n)
    }
}

/// Byte-select mask for a length (ARM_BREAKPOINT_LEN_n), and back (`get_hbp_len`, 0 for a
/// mask that is not a plain length).
fn len_mask(len: u8) -> u32 {
    (1u32 << len) - 1
}

fn mask_len(mask: u32) -> u64 {
    match mask {
        0x1 | 0x3 | 0x7 | 0xf | 0x1f | 0x3f | 0x7f | 0xff => u64::from(mask.count_ones()),
        _ => 0,
    }
}

/// `hw_breakpoint_arch_parse` plus the generic check that a ptrace breakpoint stays in user
/// space: the register values for `attr`, or EINVAL.
fn hw_parse(attr: &HwAttr, info: &HwDebugInfo) -> Result<(u64, HwCtrl), Errno> {
    let kind = match attr.kind {
        HW_BREAKPOINT_X => ARM_BREAKPOINT_EXECUTE,
        HW_BREAKPOINT_R => ARM_BREAKPOINT_LOAD,
        HW_BREAKPOINT_W => ARM_BREAKPOINT_STORE,
        HW_BREAKPOINT_RW => ARM_BREAKPOINT_LOAD | ARM_BREAKPOINT_STORE,
        _ => return Err(Errno::EINVAL),
    };
    if !(1..=8).contains(&attr.len) {
        return Err(Errno::EINVAL);
    }
    // AArch64 instructions are 4 bytes: any other breakpoint length is quietly made 4.
    let len = if kind == ARM_BREAKPOINT_EXECUTE {
        len_mask(4)
    } else {
        len_mask(attr.len)
    };
    let mut ctrl = HwCtrl {
        len,
        kind,
        privilege: AARCH64_BREAKPOINT_EL0,
        enabled: !attr.disabled,
    };
    let in_kernel = |address: u64, c: &HwCtrl| {
        let end = address.wrapping_add(mask_len(c.len)).wrapping_sub(1);
        address >= info.task_size && end >= info.task_size
    };
    if in_kernel(attr.addr, &ctrl) {
        ctrl.privilege = AARCH64_BREAKPOINT_EL1;
    }
    // An unaligned address is aligned down and the byte select shifted up to match.
    let align = if kind == ARM_BREAKPOINT_EXECUTE { 3 } else { 7 };
    let offset = attr.addr & align;
    let address = attr.addr & !align;
    ctrl.len = (ctrl.len << offset) & 0xff;
    if ctrl.privilege == AARCH64_BREAKPOINT_EL1 || in_kernel(address, &ctrl) {
        return Err(Errno::EINVAL);
    }
    Ok((address, ctrl))
}

impl HwDebug {
    fn slots(&mut self, nt: u32) -> &mut [Option<HwSlot>; ARM_MAX_BRP] {
        if nt == NT_ARM_HW_BREAK {
            &mut self.brk
        } else {
            &mut self.wpt
        }
    }

    /// `hw_break_get`: dbg_info, pad, then (address, ctrl, pad) for every slot (zeros where
    /// none was written).
    pub fn encode(&self, nt: u32, info: &HwDebugInfo) -> [u8; USER_HWDEBUG_SIZE] {
        let mut b = [0u8; USER_HWDEBUG_SIZE];
        put_u32(&mut b, 0, info.dbg_info(nt));
        let slots = if nt == NT_ARM_HW_BREAK {
            &self.brk
        } else {
            &self.wpt
        };
        for (i, s) in slots.iter().enumerate() {
            if let Some(s) = s {
                put_u64(&mut b, 8 + 16 * i, s.address);
                put_u32(&mut b, 16 + 16 * i, s.ctrl.encode());
            }
        }
        b
    }

    /// The slot `idx`, created disabled (address 0, 4 bytes, the note's default type) on first
    /// use; ENOSPC past the hardware's slots.
    fn slot(&mut self, nt: u32, idx: usize, info: &HwDebugInfo) -> Result<HwSlot, Errno> {
        let n = usize::from(if nt == NT_ARM_HW_BREAK {
            info.brps
        } else {
            info.wrps
        });
        if let Some(s) = self.slots(nt)[idx] {
            return Ok(s);
        }
        if idx >= n {
            return Err(Errno::ENOSPC);
        }
        let attr = HwAttr {
            addr: 0,
            len: 4,
            kind: if nt == NT_ARM_HW_BREAK {
                HW_BREAKPOINT_X
            } else {
                HW_BREAKPOINT_RW
            },
            disabled: true,
        };
        let (address, ctrl) = hw_parse(&attr, info)?;
        let s = HwSlot {
            attr,
            address,
            ctrl,
        };
        self.slots(nt)[idx] = Some(s);
        Ok(s)
    }

    fn modify(
        &mut self,
        nt: u32,
        idx: usize,
        attr: HwAttr,
        info: &HwDebugInfo,
    ) -> Result<(), Errno> {
        let (address, ctrl) = hw_parse(&attr, info)?;
        self.slots(nt)[idx] = Some(HwSlot {
            attr,
            address,
            ctrl,
        });
        Ok(())
    }

    fn set_addr(
        &mut self,
        nt: u32,
        idx: usize,
        addr: u64,
        info: &HwDebugInfo,
    ) -> Result<(), Errno> {
        let mut attr = self.slot(nt, idx, info)?.attr;
        attr.addr = addr;
        self.modify(nt, idx, attr, info)
    }

    /// `ptrace_hbp_set_ctrl`: a disabled ctrl only disables; an enabled one must describe a
    /// type the note allows (execute for breakpoints, load/store for watchpoints) and a
    /// contiguous byte select, whose first set bit moves the address up.
    fn set_ctrl(&mut self, nt: u32, idx: usize, reg: u32, info: &HwDebugInfo) -> Result<(), Errno> {
        let mut attr = self.slot(nt, idx, info)?.attr;
        let c = HwCtrl::decode(reg);
        attr.disabled = !c.enabled;
        if c.enabled {
            let kind = match c.kind {
                ARM_BREAKPOINT_EXECUTE => HW_BREAKPOINT_X,
                ARM_BREAKPOINT_LOAD => HW_BREAKPOINT_R,
                ARM_BREAKPOINT_STORE => HW_BREAKPOINT_W,
                _ => HW_BREAKPOINT_RW,
            };
            if c.len == 0 {
                return Err(Errno::EINVAL);
            }
            let offset = c.len.trailing_zeros();
            let len = match c.len >> offset {
                m @ (0x1 | 0x3 | 0x7 | 0xf | 0x1f | 0x3f | 0x7f | 0xff) => m.count_ones() as u8,
                _ => return Err(Errno::EINVAL),
            };
            let allowed = if nt == NT_ARM_HW_BREAK {
                HW_BREAKPOINT_X
            } else {
                HW_BREAKPOINT_RW
            };
            if kind & allowed != kind {
                return Err(Errno::EINVAL);
            }
            attr.len = len;
            attr.kind = kind;
            attr.addr = attr.addr.wrapping_add(u64::from(offset));
        }
        self.modify(nt, idx, attr, info)
    }

    /// `hw_break_set`: dbg_info and its pad are ignored; then (address, ctrl, pad) per slot,
    /// slot by slot, stopping at the first error (earlier slots keep what was written). A
    /// write that ends inside an address is EINVAL.
    pub fn set(&mut self, nt: u32, data: &[u8], info: &HwDebugInfo) -> Result<(), Errno> {
        let mut off = 8;
        let mut idx = 0;
        while off < data.len() && off < USER_HWDEBUG_SIZE {
            let addr = crate::util::bytes::read_u64(data, off).ok_or(Errno::EINVAL)?;
            self.set_addr(nt, idx, addr, info)?;
            off += 8;
            let Some(ctrl) = crate::util::bytes::read_u32(data, off) else {
                break;
            };
            self.set_ctrl(nt, idx, ctrl, info)?;
            off += 8;
            idx += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
