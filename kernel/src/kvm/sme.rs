//! SME for guests (the vCPU feature KVM_ARM_VCPU_SME of Mark Brown's series "KVM: arm64:
//! Implement support for SME", v12; docs/kvm-sme.md): the streaming vector lengths a VMM
//! chooses before it finalizes the vCPU, the SME system registers (SVCR, SMCR_EL1, SMPRI_EL1,
//! TPIDR2_EL0), ZA's rows and ZT0 by ONE_REG, the streaming Z/P/FFR view while SVCR.SM is 1,
//! and the VM's SME ID registers. The rules are `svelt_abi::uapi::kvm_sme`'s.
//!
//! A vCPU with SME keeps, from finalize: its streaming Z, P and FFR at its largest SVL in the
//! signal frame's payload layout (as `sve::GuestSve` does for the non-streaming ones), and ZA
//! (SVL_bytes rows of SVL_bytes) followed by ZT0 (64 bytes) when the host has SME2, whatever
//! the VM's ID registers say, so that ID writes and finalize need no order.

use super::sve;
use super::vcpu::VcpuState;
use super::vm::Vm;
use crate::arch::fpsimd::sve as hwsve;
use crate::arch::guest;
use crate::mm::uaccess::UserPtr;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::fp::vl::VlSet;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::KvmOneReg;
use svelt_abi::uapi::kvm_sme as m;
use svelt_abi::uapi::kvm_sve as s;

/// A vCPU's SME: its largest streaming vq, its saved streaming state and ZA/ZT0 (allocated at
/// finalize), and its SME system registers.
pub struct GuestSme {
    pub max_vq: u32,
    /// Streaming Z, P and FFR at `max_vq`; empty before finalize.
    streaming: Vec<u8>,
    /// ZA at `max_vq`, then ZT0 if the host has SME2; empty before finalize.
    za: Vec<u8>,
    pub svcr: u64,
    pub smcr_el1: u64,
    pub tpidr2: u64,
    /// SMCR_EL2 as the host had it while the guest holds the registers.
    host_smcr: u64,
    /// FA64 and ZT0 as the VM had them when the registers were loaded (what `put` saves).
    fa64: bool,
    zt0: bool,
}

/// The host's SME lengths (every CPU has them; SMCR_EL2.LEN caps a guest at one of them).
fn host_vls() -> VlSet {
    crate::cpufeature::sme_vls()
}

fn host_max_vq() -> u32 {
    host_vls().max_bytes().map_or(0, |b| b / 16)
}

/// The host implements SME2 (ZT0): ID_AA64PFR1_EL1.SME at least 2.
fn host_sme2() -> bool {
    (guest::read_id_reg(4, 1) & m::PFR1_SME) >> m::PFR1_SME_SHIFT >= 2
}

/// Whether vCPUs may ask for SME (KVM_CAP_ARM_SME): the host offers it to its own tasks, with
/// a length every CPU has.
pub fn offered() -> bool {
    crate::task::fpstate::has_sme() && host_max_vq() > 0
}

/// The VM shows FA64 (ID_AA64SMFR0_EL1.FA64): FFR exists in streaming mode, and the guest
/// runs with SMCR_EL2.FA64.
pub fn vm_fa64(vm: &Vm) -> bool {
    vm.id_reg(4, 5) & m::SMFR0_FA64 != 0
}

/// The VM shows SME2 (ID_AA64PFR1_EL1.SME 2): ZT0 exists, and the guest runs with
/// SMCR_EL2.EZT0.
pub fn vm_sme2(vm: &Vm) -> bool {
    (vm.id_reg(4, 1) & m::PFR1_SME) >> m::PFR1_SME_SHIFT >= 2
}

impl GuestSme {
    /// KVM_ARM_VCPU_INIT with the feature, the first time: every host length.
    pub fn new() -> GuestSme {
        GuestSme {
            max_vq: host_max_vq(),
            streaming: Vec::new(),
            za: Vec::new(),
            svcr: 0,
            smcr_el1: 0,
            tpidr2: 0,
            host_smcr: 0,
            fa64: false,
            zt0: false,
        }
    }

    pub fn finalized(&self) -> bool {
        !self.za.is_empty()
    }

    /// The largest SVL in bytes.
    pub fn svl(&self) -> usize {
        16 * self.max_vq as usize
    }

    /// A re-init of a finalized vCPU: everything back to zero, streaming mode and ZA off.
    pub fn reset(&mut self) {
        self.streaming.fill(0);
        self.za.fill(0);
        self.svcr = 0;
        self.smcr_el1 = 0;
        self.tpidr2 = 0;
    }

    pub fn streaming(&self) -> bool {
        self.svcr & m::SVCR_SM != 0
    }

    fn za_on(&self) -> bool {
        self.svcr & m::SVCR_ZA != 0
    }
}

/// KVM_ARM_VCPU_FINALIZE (`kvm_arm_vcpu_finalize` with the series' KVM_ARM_VCPU_VEC): for a
/// vCPU with SME, both sets are fixed at once; EINVAL for another argument, EPERM the second
/// time. A vCPU without SME is SVE's business.
pub fn finalize(st: &mut VcpuState, what: i32) -> SysResult<usize> {
    let Some(g) = &st.sme else {
        return sve::finalize(st, what);
    };
    if what != m::KVM_ARM_VCPU_VEC {
        return Err(Errno::EINVAL);
    }
    if g.finalized() {
        return Err(Errno::EPERM);
    }
    if st.sve.is_some() {
        sve::finalize(st, what)?;
    }
    let zt0 = if host_sme2() { m::ZT0_BYTES } else { 0 };
    let g = st.sme.as_mut().ok_or(Errno::EINVAL)?;
    let svl = g.svl();
    g.streaming = vec![0; hwsve::state_size(g.max_vq as usize)];
    g.za = vec![0; svl * svl + zt0];
    Ok(0)
}

/// Whether the vCPU may run or list its registers: finalized if it has SVE or SME.
pub fn check_finalized(st: &VcpuState) -> SysResult<()> {
    sve::check_finalized(st)?;
    match &st.sme {
        Some(g) if !g.finalized() => Err(Errno::EPERM),
        _ => Ok(()),
    }
}

/// KVM_ARM_VCPU_INIT's feature check with the SME bit, which lies past Linux 7.3's valid
/// features (a kernel without SME for guests answers it ENOENT, as `k::check_init` does).
pub fn check_init(init: &svelt_abi::uapi::kvm::KvmVcpuInit, offered: u32) -> SysResult<u32> {
    let bit = 1 << m::KVM_ARM_VCPU_SME;
    if offered & bit == 0 {
        return svelt_abi::uapi::kvm::check_init(init, offered);
    }
    let mut rest = *init;
    rest.features[0] &= !bit;
    Ok(svelt_abi::uapi::kvm::check_init(&rest, offered & !bit)? | (init.features[0] & bit))
}

/// KVM_ARM_VCPU_INIT: the vCPU's SME as its features say (a finalized one back to zero).
pub fn init(st: &mut VcpuState, with_sme: bool) {
    match (&mut st.sme, with_sme) {
        (Some(g), true) if g.finalized() => g.reset(),
        (g, true) => *g = Some(GuestSme::new()),
        (g, false) => *g = None,
    }
}

/// The core V registers are not reachable: the vCPU has SVE (its Z registers hold them), or
/// it is in streaming mode.
pub fn v_hidden(st: &VcpuState) -> bool {
    st.sve.is_some() || st.sme.as_ref().is_some_and(GuestSme::streaming)
}

/// Whether an SVE-group ID (other than SVE_VLS) goes to the streaming registers.
pub fn streaming_view(st: &VcpuState, id: u64) -> bool {
    id != s::KVM_REG_ARM64_SVE_VLS && st.sme.as_ref().is_some_and(GuestSme::streaming)
}

/// A streaming Z/P/FFR ID's place: the SVE rules at the SVL; FFR ENOENT without FA64.
fn streaming_region(vm: &Vm, g: &GuestSme, id: u64) -> SysResult<s::Region> {
    let reg = s::region(id, g.max_vq as usize)?;
    if id & !0x1f == s::ffr(0) && !vm_fa64(vm) {
        return Err(Errno::ENOENT);
    }
    if !g.finalized() {
        return Err(Errno::EPERM);
    }
    Ok(reg)
}

/// KVM_GET_ONE_REG of a Z/P/FFR ID in streaming mode.
pub fn get_streaming(vm: &Vm, st: &VcpuState, r: &KvmOneReg) -> SysResult<usize> {
    let g = st.sme.as_ref().ok_or(Errno::ENOENT)?;
    let reg = streaming_region(vm, g, r.id)?;
    let mut b = [0u8; s::ZREG_SLICE];
    b[..reg.len].copy_from_slice(&g.streaming[reg.offset..reg.offset + reg.len]);
    UserPtr::<u8>::new(r.addr as usize)
        .write_slice(&b[..reg.slice])
        .map(|_| 0)
}

/// KVM_SET_ONE_REG of a Z/P/FFR ID in streaming mode (bytes past the SVL are not read).
pub fn set_streaming(vm: &Vm, st: &mut VcpuState, r: &KvmOneReg) -> SysResult<usize> {
    let g = st.sme.as_mut().ok_or(Errno::ENOENT)?;
    let reg = streaming_region(vm, g, r.id)?;
    UserPtr::<u8>::new(r.addr as usize)
        .read_slice(&mut g.streaming[reg.offset..reg.offset + reg.len])?;
    Ok(0)
}

/// Where an SME-group ID's bytes lie in `za`, in the series' order: ENOENT (no SME, a later
/// slice, ZT0 without SME2), EINVAL (no such register), EBUSY (SVCR.ZA 0), EPERM (before
/// finalize). `None` for SME_VLS.
fn za_region(vm: &Vm, st: &VcpuState, id: u64) -> SysResult<Option<(usize, usize, usize)>> {
    let g = st.sme.as_ref().ok_or(Errno::ENOENT)?;
    let svl = g.svl();
    let (off, len, slice) = match m::decode(id, svl)? {
        m::SmeReg::Vls => return Ok(None),
        m::SmeReg::Zt0 if !vm_sme2(vm) || !host_sme2() => return Err(Errno::ENOENT),
        m::SmeReg::Zt0 => (svl * svl, m::ZT0_BYTES, m::ZT0_BYTES),
        m::SmeReg::ZaRow(n) => (n * svl, svl, m::ZA_SLICE),
    };
    if !g.za_on() {
        return Err(Errno::EBUSY);
    }
    if !g.finalized() {
        return Err(Errno::EPERM);
    }
    Ok(Some((off, len, slice)))
}

fn read_vls(inp: UserPtr<u8>) -> SysResult<[u64; s::VLS_WORDS]> {
    let mut b = [0u8; 8 * s::VLS_WORDS];
    inp.read_slice(&mut b)?;
    let mut w = [0u64; s::VLS_WORDS];
    for (v, c) in w.iter_mut().zip(b.chunks_exact(8)) {
        *v = u64::from_le_bytes(c.try_into().unwrap_or_default());
    }
    Ok(w)
}

/// KVM_GET_ONE_REG of an SME-group ID.
pub fn get(vm: &Vm, st: &VcpuState, r: &KvmOneReg) -> SysResult<usize> {
    let out = UserPtr::<u8>::new(r.addr as usize);
    let Some((off, len, slice)) = za_region(vm, st, r.id)? else {
        let g = st.sme.as_ref().ok_or(Errno::ENOENT)?;
        let w = s::vls_get(host_vls(), g.max_vq);
        let mut b = [0u8; 8 * s::VLS_WORDS];
        for (c, v) in b.chunks_exact_mut(8).zip(w) {
            c.copy_from_slice(&v.to_le_bytes());
        }
        return out.write_slice(&b).map(|_| 0);
    };
    let g = st.sme.as_ref().ok_or(Errno::ENOENT)?;
    let mut b = [0u8; m::ZA_SLICE];
    b[..len].copy_from_slice(&g.za[off..off + len]);
    out.write_slice(&b[..slice]).map(|_| 0)
}

/// KVM_SET_ONE_REG of an SME-group ID.
pub fn set(vm: &Vm, st: &mut VcpuState, r: &KvmOneReg) -> SysResult<usize> {
    let inp = UserPtr::<u8>::new(r.addr as usize);
    let Some((off, len, _)) = za_region(vm, st, r.id)? else {
        let g = st.sme.as_mut().ok_or(Errno::ENOENT)?;
        if g.finalized() {
            return Err(Errno::EPERM);
        }
        g.max_vq = m::vls_set(host_vls(), &read_vls(inp)?)?;
        return Ok(0);
    };
    let g = st.sme.as_mut().ok_or(Errno::ENOENT)?;
    inp.read_slice(&mut g.za[off..off + len])?;
    Ok(0)
}

/// An ID of the SME system registers: its value, ENOENT on a vCPU without SME.
pub fn sysreg_value(st: &VcpuState, id: u64) -> Option<SysResult<u64>> {
    if !m::SYSREGS.contains(&id) {
        return None;
    }
    let Some(g) = &st.sme else {
        return Some(Err(Errno::ENOENT));
    };
    Some(Ok(match id {
        m::SVCR => g.svcr,
        m::SMCR_EL1 => g.smcr_el1,
        m::TPIDR2_EL0 => g.tpidr2,
        m::SMIDR_EL1 => m::guest_smidr(guest::smidr()),
        _ => 0, // SMPRI_EL1: no priorities for guests
    }))
}

/// A VMM's write of an SME system register (after `sysreg_value` said it exists).
pub fn sysreg_set(st: &mut VcpuState, id: u64, v: u64) -> SysResult<()> {
    let g = st.sme.as_mut().ok_or(Errno::ENOENT)?;
    match id {
        m::SVCR => {
            let c = m::svcr_write(g.svcr, v)?;
            g.svcr = v;
            if c.zero_za {
                g.za.fill(0);
            }
            if c.flush_vectors {
                g.streaming.fill(0);
                if let Some(sv) = &mut st.sve {
                    sv.zero();
                }
                st.fp.vregs = [0; 32];
                st.fp.fpsr = m::FPSR_AFTER_SM_CHANGE as u32;
                st.fpmr = 0;
            }
        }
        m::SMCR_EL1 => g.smcr_el1 = v,
        m::TPIDR2_EL0 => g.tpidr2 = v,
        // The series lets a VMM change it only with KVM_CAP_ARM_WRITABLE_IMP_ID_REGS, which
        // Svelt lacks: its own value back, as for MIDR_EL1 (docs/kvm-sme.md).
        m::SMIDR_EL1 if v != m::guest_smidr(guest::smidr()) => return Err(Errno::EINVAL),
        m::SMIDR_EL1 => {}
        _ if v != 0 => return Err(Errno::EINVAL),
        _ => {}
    }
    Ok(())
}

/// The SVE-group IDs a vCPU lists: SVE_VLS with SVE; Z, P and FFR with SVE or in streaming
/// mode (FFR in streaming mode only with FA64).
pub fn sve_ids(vm: &Vm, st: &VcpuState) -> Vec<u64> {
    let streaming = st.sme.as_ref().is_some_and(GuestSme::streaming);
    let mut v = Vec::new();
    if st.sve.is_some() {
        v.push(s::KVM_REG_ARM64_SVE_VLS);
    }
    if st.sve.is_some() || streaming {
        v.extend((0..32).map(|n| s::zreg(n, 0)));
        v.extend((0..16).map(|n| s::preg(n, 0)));
        if !streaming || vm_fa64(vm) {
            v.push(s::ffr(0));
        }
    }
    v
}

/// The SME-group IDs a vCPU lists (none without SME).
pub fn sme_ids(vm: &Vm, st: &VcpuState) -> Vec<u64> {
    match &st.sme {
        Some(g) => m::reg_ids(g.svl(), g.za_on(), vm_sme2(vm) && host_sme2()).collect(),
        None => Vec::new(),
    }
}

/// The SME system registers a vCPU lists.
pub fn sys_ids(st: &VcpuState) -> &'static [u64] {
    if st.sme.is_some() {
        &m::SYSREGS
    } else {
        &[]
    }
}

/// ID_AA64PFR1_EL1 (CRm 4, op2 1), ID_AA64ZFR0_EL1 (4, 4) and ID_AA64SMFR0_EL1 (4, 5).
const PFR1: usize = 25;
const ZFR0: usize = 28;
const SMFR0: usize = 29;

/// The SME fields a VM may show at most (its ID limits).
pub fn widen_limits(limits: &mut [u64], host_pfr1: u64, host_zfr0: u64, host_smfr0: u64) {
    if offered() {
        limits[PFR1] |= host_pfr1 & m::PFR1_SME;
        limits[ZFR0] = host_zfr0;
        limits[SMFR0] = host_smfr0;
    }
}

fn vm_has_sme(vm: &Vm) -> bool {
    vm.vcpu_features
        .lock()
        .is_some_and(|f| f & (1 << m::KVM_ARM_VCPU_SME) != 0)
}

/// SMIDR_EL1 as a guest of this VM reads it: the CPU's, without priority support, for a VM
/// whose vCPUs have SME; None (the register is absent) otherwise.
pub fn guest_smidr(vm: &Vm) -> Option<u64> {
    vm_has_sme(vm).then(|| m::guest_smidr(guest::smidr()))
}

/// ID register `i`'s limit for this VM: the SME fields only for a VM whose vCPUs have SME,
/// ZFR0 for one with SVE or SME.
pub fn id_limit(vm: &Vm, i: usize) -> u64 {
    let sme = vm_has_sme(vm);
    match i {
        PFR1 if !sme => vm.id_limits[i] & !m::PFR1_SME,
        SMFR0 if !sme => 0,
        ZFR0 if sme => vm.id_limits[i],
        _ => sve::id_limit(vm, i),
    }
}

/// A VMM's write of ID_AA64PFR1_EL1 or ID_AA64SMFR0_EL1 on a VM with SME, whose SME fields
/// Linux 7.3's writable masks do not cover: the SME fields are checked here (EINVAL), and the
/// value the general rule should check instead (the SME fields as the limit's) is returned.
/// `None`: the general rule alone decides.
pub fn id_check_value(vm: &Vm, i: usize, v: u64) -> SysResult<Option<u64>> {
    if !(i == PFR1 || i == SMFR0) || !vm_has_sme(vm) {
        return Ok(None);
    }
    let limit = id_limit(vm, i);
    if i == SMFR0 {
        if !m::smfr0_write_ok(limit, v) {
            return Err(Errno::EINVAL);
        }
        return Ok(Some(limit));
    }
    if !m::pfr1_sme_ok(limit, v) {
        return Err(Errno::EINVAL);
    }
    Ok(Some((v & !m::PFR1_SME) | (limit & m::PFR1_SME)))
}

/// The VM's ID registers at its first vCPU's init (after `sve::init_id_regs`): SME shown or not.
pub fn init_id_regs(vm: &Vm, with_sme: bool) {
    if vm.ran.load(Ordering::Relaxed) {
        return;
    }
    let mut regs = vm.id_regs.lock();
    if with_sme {
        regs[PFR1] = (regs[PFR1] & !m::PFR1_SME) | (vm.id_limits[PFR1] & m::PFR1_SME);
        regs[SMFR0] = vm.id_limits[SMFR0];
        regs[ZFR0] = vm.id_limits[ZFR0];
    } else {
        regs[PFR1] &= !m::PFR1_SME;
        regs[SMFR0] = 0;
    }
}

// ---- the world switch ----

/// Guest SME saves and restores (a save or restore with streaming Z/P, ZA or ZT0), apart from
/// the host's own (/proc/svelt/fpstat's `guest_sme_` lines).
pub static SME_SAVES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
pub static SME_RESTORES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// SMCR_EL2 (SMCR_EL1's encoding at EL2 with E2H) and the guest's SMCR_EL1 (SMCR_EL12).
fn read_smcr_el2() -> u64 {
    let v;
    // SAFETY: reading a system register has no side effects.
    unsafe { core::arch::asm!("mrs {}, S3_0_C1_C2_6", out(reg) v, options(nomem, nostack)) };
    v
}

fn write_smcr_el2(v: u64) {
    // SAFETY: the streaming VL and SME enables of EL2/host EL0; the host task's state is not
    // live while a guest holds the registers, and the host's value is put back in `put`.
    unsafe { core::arch::asm!("msr S3_0_C1_C2_6, {}", "isb", in(reg) v, options(nomem, nostack)) };
}

fn read_smcr_el12() -> u64 {
    let v;
    // SAFETY: as in read_smcr_el2.
    unsafe { core::arch::asm!("mrs {}, S3_5_C1_C2_6", out(reg) v, options(nomem, nostack)) };
    v
}

fn write_smcr_el12(v: u64) {
    // SAFETY: the guest's own SMCR_EL1, which nothing on the host uses.
    unsafe { core::arch::asm!("msr S3_5_C1_C2_6, {}", in(reg) v, options(nomem, nostack)) };
}

/// SMCR_EL2 while the VM's vCPU runs: LEN its largest SVL, FA64 and EZT0 as its ID registers
/// say.
fn guest_smcr_el2(vm: &Vm, g: &GuestSme) -> u64 {
    (g.max_vq as u64 - 1)
        | if vm_fa64(vm) { 1 << 31 } else { 0 }
        | if vm_sme2(vm) && host_sme2() {
            1 << 30
        } else {
            0
        }
}

/// CPTR_EL2's SMEN for a vCPU with SME whose registers are loaded.
pub fn cptr(st: &VcpuState) -> u64 {
    if st.sme.is_some() && st.fp_live {
        3 << 24
    } else {
        0
    }
}

/// What `enter` changed, for `exit` to put back.
#[derive(Clone, Copy, Default)]
pub struct Entered {
    tpidr2: u64,
    fgt: Option<(u64, u64)>,
}

/// HFGRTR_EL2/HFGWTR_EL2's nTPIDR2_EL0: set, the guest's TPIDR2_EL0 accesses are not trapped.
const FGT_NTPIDR2: u64 = 1 << 55;

/// The CPU has fine-grained traps (ID_AA64MMFR0_EL1.FGT), whose TPIDR2_EL0 trap is on unless
/// its bit is set.
fn has_fgt() -> bool {
    (guest::read_id_reg(7, 0) >> 56) & 0xf != 0
}

/// Before an entry of a vCPU with SME: its TPIDR2_EL0 goes in, untrapped (the host's comes
/// back in `exit`); a vCPU without SME keeps the trap (TPIDR2_EL0 UNDEFINED, as its ID
/// registers say).
pub fn enter(st: &VcpuState) -> Entered {
    let Some(g) = &st.sme else {
        return Entered::default();
    };
    let tpidr2 = crate::arch::fpsimd::sme::read_tpidr2();
    crate::arch::fpsimd::sme::write_tpidr2(g.tpidr2);
    let fgt = has_fgt().then(|| {
        let (r, w): (u64, u64);
        // SAFETY: HFGRTR_EL2 and HFGWTR_EL2 only trap a guest's accesses (they do not apply
        // to the host under TGE); `exit` puts the values read here back.
        unsafe {
            core::arch::asm!("mrs {}, S3_4_C1_C1_4", "mrs {}, S3_4_C1_C1_5", out(reg) r, out(reg) w,
                options(nomem, nostack));
            core::arch::asm!("msr S3_4_C1_C1_4, {}", "msr S3_4_C1_C1_5, {}",
                in(reg) r | FGT_NTPIDR2, in(reg) w | FGT_NTPIDR2, options(nomem, nostack));
        }
        (r, w)
    });
    Entered { tpidr2, fgt }
}

pub fn exit(st: &mut VcpuState, e: Entered) {
    let Some(g) = &mut st.sme else { return };
    g.tpidr2 = crate::arch::fpsimd::sme::read_tpidr2();
    crate::arch::fpsimd::sme::write_tpidr2(e.tpidr2);
    if let Some((r, w)) = e.fgt {
        // SAFETY: as in `enter`.
        unsafe {
            core::arch::asm!("msr S3_4_C1_C1_4, {}", "msr S3_4_C1_C1_5, {}", in(reg) r, in(reg) w,
                options(nomem, nostack));
        }
    }
}

/// The guest's first FP, SVE or SME access of an entry sequence (the caller lent the VMM
/// thread's registers away): SMCR_EL2 takes the VM's cap, then the non-streaming state, SVCR,
/// the streaming Z/P/FFR and ZA/ZT0 as SVCR says.
pub fn load(vm: &Vm, st: &mut VcpuState) {
    use crate::arch::fpsimd::fpsimd;
    use crate::arch::fpsimd::sme as hw;
    let Some(g) = &mut st.sme else { return };
    g.host_smcr = read_smcr_el2();
    g.fa64 = vm_fa64(vm);
    g.zt0 = vm_sme2(vm) && host_sme2();
    write_smcr_el2(guest_smcr_el2(vm, g));
    write_smcr_el12(g.smcr_el1 & m::SMCR_LOADED);
    match &mut st.sve {
        Some(sv) => sv.load(&st.fp),
        None => {
            fpsimd::load(&st.fp);
            super::GUEST_FP.count(false, true, super::vcpu::FPSIMD_BYTES);
        }
    }
    let svcr = svelt_abi::fp::fpstate::Svcr {
        sm: g.svcr & m::SVCR_SM != 0,
        za: g.svcr & m::SVCR_ZA != 0,
    };
    if !svcr.sm && !svcr.za {
        return;
    }
    hw::write_svcr(svcr);
    let svl = g.svl();
    let mut bytes = 0;
    if svcr.sm {
        if hwsve::load(&g.streaming, g.max_vq as usize, g.fa64).is_err() {
            panic!("kvm: guest streaming load at an SVL the CPU does not give");
        }
        fpsimd::load_control(&st.fp);
        bytes += g.streaming.len();
    }
    if svcr.za {
        if hw::load_za(&g.za[..svl * svl], svl).is_err() {
            panic!("kvm: guest ZA load at an SVL the CPU does not give");
        }
        bytes += svl * svl;
        if g.zt0 {
            let zt: &[u8; 64] = g.za[svl * svl..].try_into().unwrap_or(&[0; 64]);
            hw::load_zt0(zt);
            bytes += 64;
        }
    }
    SME_RESTORES.fetch_add(1, Ordering::Relaxed);
    super::GUEST_FP.count(true, true, bytes);
}

/// Puts live registers back in memory at the vCPU's widths (the caller knows they are live),
/// leaves streaming mode and ZA off, and gives SMCR_EL2 back to the host.
pub fn put(st: &mut VcpuState) {
    use crate::arch::fpsimd::fpsimd;
    use crate::arch::fpsimd::sme as hw;
    let Some(g) = &mut st.sme else { return };
    let svcr = hw::read_svcr();
    g.svcr = svcr.sm as u64 | (svcr.za as u64) << 1;
    g.smcr_el1 = read_smcr_el12();
    let svl = g.svl();
    let mut bytes = 0;
    if svcr.za {
        if hw::save_za(&mut g.za[..svl * svl], svl).is_err() {
            panic!("kvm: guest ZA save at an SVL the CPU does not give");
        }
        bytes += svl * svl;
        if g.zt0 {
            let mut zt = [0u8; 64];
            hw::save_zt0(&mut zt);
            g.za[svl * svl..svl * svl + 64].copy_from_slice(&zt);
            bytes += 64;
        }
    }
    if svcr.sm {
        if hwsve::save(&mut g.streaming, g.max_vq as usize, g.fa64).is_err() {
            panic!("kvm: guest streaming save at an SVL the CPU does not give");
        }
        fpsimd::save_control(&mut st.fp);
        bytes += g.streaming.len();
        // The non-streaming registers were zeroed when the guest entered streaming mode.
        if let Some(sv) = &mut st.sve {
            sv.forget_live();
        }
        st.fp.vregs = [0; 32];
    } else {
        match &mut st.sve {
            Some(sv) => sv.put(&mut st.fp),
            None => {
                fpsimd::save(&mut st.fp);
                super::GUEST_FP.count(false, false, super::vcpu::FPSIMD_BYTES);
            }
        }
    }
    if svcr.sm || svcr.za {
        hw::write_svcr(svelt_abi::fp::fpstate::Svcr::default());
        SME_SAVES.fetch_add(1, Ordering::Relaxed);
        super::GUEST_FP.count(true, false, bytes);
    }
    write_smcr_el2(g.host_smcr);
}
