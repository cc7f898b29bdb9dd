//! What a guest's synchronous exception to EL2 becomes: a stage-2 fault resolved or turned into
//! an MMIO exit, a PSCI or SMCCC call answered, a WFI slept, a trapped register emulated, or an
//! exception injected back into the guest (Linux's arch/arm64/kvm/handle_exit.c, mmu.c,
//! mmio.c, psci.c and inject_fault.c decide the same cases).

use super::inject;
use super::vcpu::{PendingMmio, Vcpu, VcpuState};
use super::vm::{Fault, Vm};
use crate::arch::fpsimd::fpsimd;
use crate::arch::guest::{self, hcr, mdcr};
use crate::mm::aspace::AddrSpace;
use crate::task;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use spin::Mutex;
use svelt_abi::isa::esr::Esr;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, Call, SmcccAction};
use svelt_abi::uapi::kvm_services as sv;
use svelt_abi::uapi::kvm_stats::vcpu as stat;

/// HCR_EL2 while a guest runs: stage 2 on; physical IRQs, FIQs and SErrors to EL2; set/way
/// invalidation as clean-and-invalidate, broadcast TLB and barrier operations; WFI, the ID
/// registers, SMC, set/way cache operations and ACTLR_EL1 trapped; EL1 is AArch64; E2H stays
/// on.
pub const GUEST_HCR: u64 = hcr::VM
    | hcr::SWIO
    | hcr::FMO
    | hcr::IMO
    | hcr::AMO
    | hcr::FB
    | hcr::BSU_IS
    | hcr::TWI
    | hcr::TID1
    | hcr::TID2
    | hcr::TID3
    | hcr::TID5
    | hcr::TSC
    | hcr::TSW
    | hcr::TACR
    | hcr::RW
    | hcr::E2H;

/// MDCR_EL2 traps while a guest runs: its debug, OS lock, debug ROM and PMU registers are
/// emulated (they are the host's own hardware).
pub const GUEST_MDCR_TRAPS: u64 = mdcr::TDA | mdcr::TDOSA | mdcr::TDRA | mdcr::TPM | mdcr::TPMCR;

/// What the run loop does after an exit.
pub enum Next {
    /// Back into the guest.
    Enter,
    /// KVM_RUN returns 0 with `kvm_run` filled in.
    ToVmm,
    /// Back into the guest, once the run loop has looked again at what its entries need (a
    /// guest that turned its own debugging on: kvm::debug).
    Reconfigure,
}

const EC_WFX: u8 = 0x01;
const EC_FP: u8 = 0x07;
const EC_HVC64: u8 = 0x16;
const EC_SMC64: u8 = 0x17;
const EC_SYS64: u8 = 0x18;
const EC_SVE: u8 = 0x19;
const EC_SME: u8 = 0x1d;
const EC_IABT_LOW: u8 = 0x20;
const EC_DABT_LOW: u8 = 0x24;

pub fn handle_sync(
    vcpu: &Vcpu,
    vm: &Arc<Vm>,
    mm: &Mutex<AddrSpace>,
    st: &mut VcpuState,
    cur: &task::CurrentTask,
    esr: Esr,
) -> SysResult<Next> {
    // A 32-bit vCPU's own exits first (kvm::aarch32).
    let esr = match super::aarch32::pre_sync(vcpu, vm, st, esr) {
        Ok(esr) => esr,
        Err(next) => return Ok(next),
    };
    match esr.ec_raw() {
        EC_WFX => {
            st.regs.pc += 4;
            if esr.iss() & 1 == 0 {
                vcpu.stats.inc(stat::WFI_EXIT_STAT);
                wfi(vcpu, vm, st)?;
            } else {
                vcpu.stats.inc(stat::WFE_EXIT_STAT);
            }
            Ok(Next::Enter)
        }
        // The guest's first FP/SIMD, SVE or SME access since its registers went back to memory.
        // (A trap with them loaded is one the vCPU's CPTR_EL2 should not have let through:
        // reloading would lose the live values, so it falls to UNDEF below. A vCPU without SVE
        // gets UNDEF for SVE, and one without SME for SME, the same way.)
        EC_FP | EC_SVE | EC_SME
            if !st.fp_live
                && (esr.ec_raw() == EC_FP
                    || st.sme.is_some()
                    || (esr.ec_raw() == EC_SVE && st.sve.is_some())) =>
        {
            load_fp(vm, st, cur);
            Ok(Next::Enter)
        }
        EC_HVC64 | EC_SMC64 => {
            if esr.ec_raw() == EC_SMC64 {
                // An SMC's return address is the SMC itself. One with a nonzero immediate is
                // no SMCCC call (handle_smc): all ones in x0.
                st.regs.pc += 4;
                if esr.iss() & 0xffff != 0 {
                    st.regs.x[0] = !0;
                    return Ok(Next::Enter);
                }
            } else {
                vcpu.stats.inc(stat::HVC_EXIT_STAT);
            }
            // The VMM's filter comes first (kvm_smccc_get_action).
            let func = st.regs.x[0] as u32;
            let offered = |f| sv::smccc_offered(f, &vm.fw_bmaps.lock());
            match vm.smccc_filter.action(func) {
                SmcccAction::Handle if offered(func) => hypercall(vcpu, vm, st, cur),
                SmcccAction::Handle => {
                    // A service the VMM turned off (kvm_smccc_get_action's DENY).
                    set_retval(st, [k::SMCCC_RET_NOT_SUPPORTED as u64, 0, 0, 0]);
                    Ok(Next::Enter)
                }
                SmcccAction::Deny => {
                    set_retval(st, [k::SMCCC_RET_NOT_SUPPORTED as u64, 0, 0, 0]);
                    Ok(Next::Enter)
                }
                SmcccAction::FwdToUser => {
                    super::smccc::forward(vcpu, func, esr.0);
                    Ok(Next::ToVmm)
                }
            }
        }
        EC_SYS64 => {
            sysreg(vcpu.id, vm, st, esr);
            Ok(super::debug::after_sysreg(st))
        }
        EC_IABT_LOW | EC_DABT_LOW => abort(vcpu, vm, mm, st, esr),
        // A debugged vCPU's debug exceptions (MDCR_EL2.TDE): to the VMM (kvm::debug).
        ec if svelt_abi::uapi::kvm_debug::is_debug_ec(ec) && st.gdebug.is_some() => {
            Ok(super::debug::handle(vcpu, st, esr).unwrap_or(Next::Enter))
        }
        // SVE, SME, pointer authentication and anything else this guest was not given.
        _ => {
            inject::inject_undef(st);
            Ok(Next::Enter)
        }
    }
}

/// An SMCCC call's results in x0..x3 (`smccc_set_retval`).
fn set_retval(st: &mut VcpuState, v: [u64; 4]) {
    st.regs.x[..4].copy_from_slice(&v);
}

/// An SMCCC call by HVC or SMC: PSCI and the SMCCC discovery calls. Inlined into the run loop
/// (a hot path: every PSCI and SMCCC call of a guest).
#[inline(always)]
fn hypercall(
    vcpu: &Vcpu,
    vm: &Arc<Vm>,
    st: &mut VcpuState,
    cur: &task::CurrentTask,
) -> SysResult<Next> {
    let x = &st.regs.x;
    let psci = k::Psci {
        version: st.psci_version,
        system_suspend: vm.system_suspend.load(Ordering::Relaxed),
    };
    let call = k::smccc_call(x[0], [x[1], x[2], x[3]], psci);
    let ret = |v: i64| [v as u64, 0, 0, 0];
    match call {
        Call::Return(v) => set_retval(st, [v, 0, 0, 0]),
        Call::Words(v) => set_retval(st, v),
        Call::VendorFeatures => {
            let b = *vm.fw_bmaps.lock();
            set_retval(st, [b[2], 0, b[3], 0]);
        }
        Call::ArchFeaturesPvTime => {
            let on = vm.fw_bmaps.lock()[1] & 1 != 0;
            set_retval(st, ret(if on { 0 } else { k::SMCCC_RET_NOT_SUPPORTED }));
        }
        Call::PvTimeFeatures(f) => {
            let known = matches!(f as u32, sv::PV_TIME_FEATURES | sv::PV_TIME_ST);
            let on = known && st.steal.base.is_some();
            set_retval(st, ret(if on { 0 } else { k::SMCCC_RET_NOT_SUPPORTED }));
        }
        Call::PvTimeSt => {
            let r = super::pvtime::init(vm, st, cur.task()).unwrap_or(u64::MAX);
            set_retval(st, [r, 0, 0, 0]);
        }
        Call::TrngRnd { bits, size } => {
            let mut b = [0u8; 24];
            crate::fs::dev::fill_random(&mut b);
            let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
            set_retval(st, sv::trng_rnd(bits, size, [w(0), w(1), w(2)]));
        }
        Call::Ptp(counter) => {
            // The wall clock and the chosen counter, read together (kvm_ptp_get_time).
            let off = match counter {
                sv::KVM_PTP_VIRT_COUNTER => Some(vm.cntvoff.load(Ordering::Relaxed)),
                sv::KVM_PTP_PHYS_COUNTER => Some(vm.cntpoff.load(Ordering::Relaxed)),
                _ => None,
            };
            match off {
                Some(off) => {
                    let cycles = crate::arch::cpu::counter();
                    let ns = crate::time::realtime_ns();
                    set_retval(st, sv::ptp_words(ns, cycles.wrapping_sub(off)));
                }
                None => set_retval(st, ret(k::SMCCC_RET_NOT_SUPPORTED)),
            }
        }
        Call::CpuOff => {
            vcpu.power.lock().off = true;
        }
        Call::CpuOn {
            target,
            entry,
            context,
        } => {
            set_retval(st, ret(cpu_on(vm, target, entry, context)));
        }
        Call::AffinityInfo { target, level } => {
            let r = if level != 0 {
                k::PSCI_RET_INVALID_PARAMS
            } else {
                let vcpus = vm.vcpus.lock();
                match vcpus.iter().find(|v| mpidr_of(v) == target & MPIDR_HWID) {
                    Some(v) => i64::from(v.power.lock().off),
                    None => k::PSCI_RET_INVALID_PARAMS,
                }
            };
            set_retval(st, ret(r));
        }
        Call::CpuSuspend => {
            // A WFI that returns SUCCESS (kvm_psci_vcpu_suspend).
            set_retval(st, ret(0));
            wfi(vcpu, vm, st)?;
        }
        Call::SystemSuspend => {
            vcpu.run_write(
                k::run::SYSTEM_EVENT_TYPE,
                &k::KVM_SYSTEM_EVENT_SUSPEND.to_le_bytes(),
            );
            vcpu.run_write(k::run::SYSTEM_EVENT_NDATA, &0u32.to_le_bytes());
            vcpu.run_write(k::run::SYSTEM_EVENT_DATA, &0u64.to_le_bytes());
            vcpu.set_exit_reason(k::KVM_EXIT_SYSTEM_EVENT);
            return Ok(Next::ToVmm);
        }
        Call::SystemEvent {
            ty,
            flags,
            clear_x1_x3,
        } => {
            st.regs.x[0] = k::PSCI_RET_INTERNAL_FAILURE as u64;
            if clear_x1_x3 {
                st.regs.x[1..4].fill(0);
            }
            // Every vCPU stops; the VMM decides what happens next.
            for v in vm.vcpus.lock().iter() {
                v.power.lock().off = true;
                v.kick();
            }
            vcpu.kicked.store(false, Ordering::Relaxed);
            vcpu.run_write(k::run::SYSTEM_EVENT_TYPE, &ty.to_le_bytes());
            vcpu.run_write(k::run::SYSTEM_EVENT_NDATA, &1u32.to_le_bytes());
            vcpu.run_write(k::run::SYSTEM_EVENT_DATA, &flags.to_le_bytes());
            vcpu.set_exit_reason(k::KVM_EXIT_SYSTEM_EVENT);
            return Ok(Next::ToVmm);
        }
    }
    Ok(Next::Enter)
}

/// Lends the CPU's registers to the guest: what this CPU holds of a host task goes to memory
/// first (the VMM thread's own state, or another task's that ran here while the vCPU was put
/// away), then the guest's comes in, all of it: with SME its whole vector state as SVCR says
/// (kvm::sme), with SVE its Z/P/FFR, otherwise its V registers.
pub(super) fn load_fp(vm: &Vm, st: &mut VcpuState, cur: &task::CurrentTask) {
    crate::task::fpstate::lend_to_guest(cur);
    if st.sme.is_some() {
        super::sme::load(vm, st);
    } else {
        match &mut st.sve {
            Some(g) => g.load(&st.fp),
            None => {
                fpsimd::load(&st.fp);
                super::GUEST_FP.count(false, true, super::vcpu::FPSIMD_BYTES);
            }
        }
    }
    super::fpmr::load(st);
    st.fp_live = true;
    super::GUEST_FP_LOADS.fetch_add(1, Ordering::Relaxed);
}

/// A WFI: the vCPU sleeps until an interrupt it can take is pending in its vGIC, one of its
/// timers fires, a kick (CPU_ON, MP state, an SGI, KVM_IRQ_LINE) or a signal to the VMM
/// thread. Its FP registers go back to memory before it sleeps.
pub(super) fn wfi(vcpu: &Vcpu, vm: &Vm, st: &mut VcpuState) -> SysResult<()> {
    let (now, deadline) = super::vgic::wfi_wake(vm, vcpu.id, st);
    if now || vcpu.irq_line_raised() {
        return Ok(());
    }
    st.put_fp();
    super::WFI_SLEEPS.fetch_add(1, Ordering::Relaxed);
    vcpu.stats.set(stat::BLOCKING, 1);
    let start = crate::time::now_ns();
    let vmcr = st.gic.vmcr;
    let r = vcpu.wait_for_kick_until(
        || vcpu.irq_line_raised() || super::vgic::pending(vm, vcpu.id, vmcr),
        deadline,
    );
    vcpu.stats.set(stat::BLOCKING, 0);
    vcpu.stats
        .halted(crate::time::now_ns().saturating_sub(start), r.is_ok());
    r
}

/// The affinity fields of an MPIDR.
const MPIDR_HWID: u64 = 0xff_00ff_ffff;

/// A vCPU's affinity as KVM gives it (a VMM may change MPIDR before the first run; that copy
/// is behind a lock the vCPU's own KVM_RUN holds, so the default is used here).
fn mpidr_of(v: &Vcpu) -> u64 {
    super::vcpu::mpidr_for(v.id) & MPIDR_HWID
}

/// PSCI CPU_ON for the vCPU with affinity `target`.
fn cpu_on(vm: &Vm, target: u64, entry: u64, context: u64) -> i64 {
    let vcpus = vm.vcpus.lock();
    let Some(t) = vcpus.iter().find(|v| mpidr_of(v) == target & MPIDR_HWID) else {
        return k::PSCI_RET_INVALID_PARAMS;
    };
    let mut p = t.power.lock();
    if p.on.is_some() {
        return -5; // ON_PENDING
    }
    if !p.off {
        return k::PSCI_RET_ALREADY_ON;
    }
    p.off = false;
    p.suspended = false;
    p.on = Some((entry, context));
    drop(p);
    t.kick();
    k::PSCI_RET_SUCCESS
}

/// A trapped system register access (ISS: Op0, Op2, Op1, CRn, Rt, CRm, direction): the ID
/// registers read as the VM has them (`Vm::id_regs`); a write to OSLAR_EL1 sets OSLSR_EL1's
/// lock bit; the debug,
/// OS lock and PMU registers read back what the guest wrote (MDSCR_EL1 is its own, loaded on
/// entry), ACTLR_EL1 reads as 0, set/way cache operations do nothing (the host's caches are
/// coherent for the guest's memory). The instruction is skipped.
fn sysreg(vcpu_id: u32, vm: &Vm, st: &mut VcpuState, esr: Esr) {
    let iss = esr.iss();
    let op0 = (iss >> 20) & 3;
    let op2 = (iss >> 17) & 7;
    let op1 = (iss >> 14) & 7;
    let crn = (iss >> 10) & 0xf;
    let rt = ((iss >> 5) & 0x1f) as usize;
    let crm = (iss >> 1) & 0xf;
    let read = iss & 1 != 0;
    if op0 == 3 && op1 == 0 && crn == 0 && (1..=7).contains(&crm) {
        // The ID registers (TID3): the VM's (the host's, less what guests are not given and
        // what the VMM lowered); read-only.
        if !read {
            inject::inject_undef(st);
            return;
        }
        let v = vm.id_reg(crm, op2);
        if rt != 31 {
            st.regs.x[rt] = v;
        }
        st.regs.pc += 4;
        return;
    }
    // A TLBI of a feature the VMM hid (trapped by HFGITR_EL2): UNDEFINED, as Linux's
    // triage_sysreg_trap for its fine-grained-undef bits.
    if k::hfgitr_tlbi_bit(op0, op1, crn, crm, op2)
        .is_some_and(|b| vm.hfgitr.load(Ordering::Relaxed) & b != 0)
    {
        inject::inject_undef(st);
        return;
    }
    let key = (op0 << 14) | (op1 << 11) | (crn << 7) | (crm << 3) | op2;
    // The GIC CPU interface: CRn 12, and ICC_PMR_EL1 at CRn 4, CRm 6.
    if op0 == 3 && op1 == 0 && (crn == 12 || (crn, crm, op2) == (4, 6, 0)) {
        gic_sysreg(vcpu_id, vm, st, crm, op2, rt, read);
        return;
    }
    if op0 == 3 && crn == 0 && crm == 0 && op1 <= 3 && key != MPIDR_KEY {
        identification(vm, st, esr, key, rt, read);
        return;
    }
    // The GCS registers (GCSCR_EL1, GCSPR_EL1, GCSCRE0_EL1, GCSPR_EL0: CRn 2, CRm 5), which
    // trap through HFGRTR_EL2/HFGWTR_EL2's nGCS bits (cleared while a guest runs where the CPU
    // has GCS): guests are not given GCS, so they are UNDEFINED, as on a CPU without it
    // (Linux's hwcap test reads GCSPR_EL0 and expects SIGILL). FPMR traps only for a VM that
    // hides it (kvm::fpmr): UNDEFINED too.
    // TCR2_EL1, PIR_EL1, PIRE0_EL1, POR_EL1 and POR_EL0 trap only for a VM that hides them
    // (kvm::poe): UNDEFINED as well.
    if (op0 == 3 && crn == 2 && crm == 5)
        || super::fpmr::is_fpmr(key)
        || super::poe::is_trapped_reg(key)
    {
        inject::inject_undef(st);
        return;
    }
    // The PMU registers of a vCPU with a PMU (kvm::pmu); one without keeps plain storage.
    if super::pmu::trap(vm, vcpu_id, st, key, rt, read) {
        return;
    }
    const MDSCR: u32 = (2 << 14) | (2 << 3) | 2;
    // OSLAR_EL1 is S2_0_C1_C0_4; OSDLR_EL1 (S2_0_C1_C3_4) is RAZ/WI, the double lock never
    // set (sys_regs.c's trap_raz_wi).
    const OSLAR: u32 = (2 << 14) | (1 << 7) | 4;
    const OSDLR: u32 = (2 << 14) | (1 << 7) | (3 << 3) | 4;
    let value = |st: &VcpuState| match key {
        MDSCR => st.el1.mdscr,
        OSDLR => 0,
        _ if op0 == 1 => 0,
        _ => st.shadow.get(&key).copied().unwrap_or(0),
    };
    if read {
        let v = value(st);
        if rt != 31 {
            st.regs.x[rt] = v;
        }
    } else {
        let v = if rt == 31 { 0 } else { st.regs.x[rt] };
        match key {
            MDSCR => st.el1.mdscr = v,
            OSLAR => {
                let k = super::regs::shadow_key(super::regs::OSLSR_EL1);
                let lsr = st.shadow.get(&k).copied().unwrap_or(0) & !0b10;
                let _ = st.shadow.insert(k, lsr | (v & 1) << 1);
            }
            // Cache maintenance by set/way and other system instructions: nothing to keep.
            _ if op0 == 1 || key == OSDLR => {}
            _ => {
                let _ = st.shadow.insert(key, v);
            }
        }
    }
    st.regs.pc += 4;
}

/// A trapped GIC CPU interface register (op0 3, op1 0, CRn 12, and ICC_PMR_EL1). Without a vGIC, every one
/// is UNDEFINED (ICH_HCR_EL2 traps them all). With one, only the SGI registers trap
/// (HCR_EL2.IMO): ICC_SGI1R_EL1 (CRm 11, op2 5) sends Group 1 SGIs, ICC_ASGI1R_EL1 and
/// ICC_SGI0R_EL1 (op2 6, 7) Group 0 ones; they are write-only. ICC_DIR_EL1 (CRm 11, op2 1)
/// traps while active interrupts are left out of the list registers. ICC_SRE_EL1 (CRm 12, op2 5)
/// reads as system registers enabled, bypasses disabled, and ignores writes.
fn gic_sysreg(id: u32, vm: &Vm, st: &mut VcpuState, crm: u32, op2: u32, rt: usize, read: bool) {
    let has_vgic = vm.vgic.lock().is_some();
    let val = if rt == 31 { 0 } else { st.regs.x[rt] };
    match (has_vgic, crm, op2, read) {
        (true, 11, 5..=7, false) => super::vgic::sgi(vm, id, val, op2 == 5),
        (true, 11, 1, false) => super::vgic::dir(vm, id, val),
        (true, 12, 5, true) => {
            if rt != 31 {
                st.regs.x[rt] = 0b111;
            }
        }
        (true, 12, 5, false) => {}
        _ => {
            inject::inject_undef(st);
            return;
        }
    }
    st.regs.pc += 4;
}

const fn sysreg_key(op0: u32, op1: u32, crn: u32, crm: u32, op2: u32) -> u32 {
    (op0 << 14) | (op1 << 11) | (crn << 7) | (crm << 3) | op2
}
const MPIDR_KEY: u32 = sysreg_key(3, 0, 0, 0, 5);
const MIDR_KEY: u32 = sysreg_key(3, 0, 0, 0, 0);
const REVIDR_KEY: u32 = sysreg_key(3, 0, 0, 0, 6);
const CCSIDR_KEY: u32 = sysreg_key(3, 1, 0, 0, 0);
const CLIDR_KEY: u32 = sysreg_key(3, 1, 0, 0, 1);
const CCSIDR2_KEY: u32 = sysreg_key(3, 1, 0, 0, 2);
const SMIDR_KEY: u32 = sysreg_key(3, 1, 0, 0, 6);
const AIDR_KEY: u32 = sysreg_key(3, 1, 0, 0, 7);
const CSSELR_KEY: u32 = sysreg_key(3, 2, 0, 0, 0);
const CTR_KEY: u32 = sysreg_key(3, 3, 0, 0, 1);

/// The identification and cache-geometry registers HCR_EL2.TID1, TID2 and TID5 trap: the VM's
/// MIDR, REVIDR, AIDR, CTR and CLIDR; CSSELR_EL1 the guest's own; CCSIDR_EL1 (and CCSIDR2_EL1
/// where the VM has FEAT_CCIDX) the CPU's for the guest's selection; SMIDR_EL1 where its vCPUs
/// have SME (sme::guest_smidr). Registers of features the VM does not have (SMIDR_EL1 without
/// SME, GMID_EL1, CCSIDR2_EL1 without CCIDX, the rest of the space) are
/// reported to the guest as the trapped access itself where the VM has FEAT_IDST (Linux hands
/// the same syndrome on), and as UNDEF otherwise. The instruction is skipped when emulated.
fn identification(vm: &Vm, st: &mut VcpuState, esr: Esr, key: u32, rt: usize, read: bool) {
    let mmfr2 = vm.id_reg(7, 2); // ID_AA64MMFR2_EL1
    let v = match (key, read) {
        (CSSELR_KEY, false) => {
            st.el1.csselr = if rt == 31 { 0 } else { st.regs.x[rt] };
            st.regs.pc += 4;
            return;
        }
        (CSSELR_KEY, true) => Some(st.el1.csselr),
        (MIDR_KEY, true) => Some(vm.impl_regs.lock()[0]),
        (REVIDR_KEY, true) => Some(vm.impl_regs.lock()[1]),
        (CLIDR_KEY, true) => Some(st.clidr),
        (AIDR_KEY, true) => Some(vm.impl_regs.lock()[3]),
        (CTR_KEY, true) => Some(vm.impl_regs.lock()[4]),
        (SMIDR_KEY, true) => super::sme::guest_smidr(vm),
        (CCSIDR_KEY, true) => Some(guest::ccsidr(st.el1.csselr, false)),
        (CCSIDR2_KEY, true) if (mmfr2 >> 20) & 0xf != 0 => Some(guest::ccsidr(st.el1.csselr, true)),
        _ => None,
    };
    match v {
        Some(v) => {
            if rt != 31 {
                st.regs.x[rt] = v;
            }
            st.regs.pc += 4;
        }
        // ID_AA64MMFR2_EL1.IDS: the trapped access's own syndrome (EC 0x18).
        None if (mmfr2 >> 36) & 0xf != 0 => inject::reflect(st, esr.0),
        None => inject::inject_undef(st),
    }
}

/// A stage-2 fault: RAM of a slot, or an MMIO access, or something the guest is told about.
fn abort(
    vcpu: &Vcpu,
    vm: &Arc<Vm>,
    mm: &Mutex<AddrSpace>,
    st: &mut VcpuState,
    esr: Esr,
) -> SysResult<Next> {
    let iss = esr.iss();
    let iabt = esr.ec_raw() == EC_IABT_LOW;
    let fsc = iss & 0x3f;
    // Translation, access flag and permission faults at any level; anything else (an external
    // abort on the walk, a TLB conflict) is not the guest's doing.
    if !matches!(fsc & 0x3c, 0x04 | 0x08 | 0x0c) {
        return Err(Errno::EFAULT);
    }
    let s1ptw = iss & (1 << 7) != 0;
    let cm = !iabt && iss & (1 << 8) != 0;
    let write = s1ptw || (!iabt && !cm && iss & (1 << 6) != 0);
    let ipa = (((st.regs.hpfar >> 4) & ((1 << 40) - 1)) << 12) | (st.regs.far & 0xfff);
    let s1 = inject::s1ptw_ipa(st);
    let far = st.regs.far;
    // Beyond any VM's IPA size: an address size fault; beyond this VM's: an external abort
    // at the IPA (kvm_handle_guest_abort).
    if ipa >> super::max_ipa_bits() != 0 {
        inject::inject_size_fault(vm, st, iabt, far, s1);
        return Ok(Next::Enter);
    }
    if ipa >> vm.ipa_bits != 0 {
        inject::inject_sea(vm, st, iabt, ipa, s1);
        return Ok(Next::Enter);
    }
    match vm.fault(mm, ipa, write) {
        Fault::Mapped => return Ok(Next::Enter),
        Fault::Efault => return Err(Errno::EFAULT),
        Fault::Memory => {
            super::gmem::memory_fault_exit(vcpu, ipa);
            return Err(Errno::EFAULT);
        }
        Fault::Mmio => {}
    }
    // Not RAM: no instructions or page tables may come from there. An abort on a stage-1
    // walk is reported at the walk's level.
    if iabt || s1ptw {
        inject::inject_sea(vm, st, iabt, far, s1);
        return Ok(Next::Enter);
    }
    if cm {
        // Cache maintenance on a device: nothing to do.
        st.regs.pc += 4;
        return Ok(Next::Enter);
    }
    let Some(access) = k::mmio_access(iss) else {
        if !vm.nisv_to_user.load(Ordering::Relaxed) {
            return Err(Errno::ENOSYS);
        }
        // Only the syndrome's fault status, WnR and the instruction length are the VMM's.
        let sanitized = (esr.0 & 0xffff_ffff) & ((0x3f) | (1 << 6) | (1 << 25) | (0x3f << 26));
        vcpu.run_write(k::run::NISV_ESR_ISS, &sanitized.to_le_bytes());
        vcpu.run_write(k::run::NISV_FAULT_IPA, &ipa.to_le_bytes());
        vcpu.set_exit_reason(k::KVM_EXIT_ARM_NISV);
        return Ok(Next::ToVmm);
    };
    if super::vgic::mmio_access(vm, ipa, &access, st) {
        return Ok(Next::Enter);
    }
    // SCTLR_EL1.EE for EL1's accesses, E0E for EL0's (kvm_vcpu_is_be).
    let at_el1 = st.regs.pstate & 0x1f != 0;
    let big_endian = st.el1.sctlr & (1 << if at_el1 { 25 } else { 24 }) != 0;
    // AArch32: CPSR.E (kvm_vcpu_is_be).
    let big_endian = big_endian && !super::aarch32::is32(st)
        || super::aarch32::is32(st) && st.regs.pstate & (1 << 9) != 0;
    let mut data = [0u8; 8];
    if access.write {
        let reg = if access.reg == 31 {
            0
        } else {
            st.regs.x[access.reg as usize]
        };
        let mut v = access.store_value(reg);
        if big_endian {
            v = access.byte_swap(v);
        }
        data = v.to_le_bytes();
    }
    // A write an ioeventfd takes, or one in a coalesced zone with room in the ring, is done
    // here (kvm_io_bus_write).
    if access.write
        && (super::eventfd::mmio_write(vm, ipa, access.len, u64::from_le_bytes(data))
            || vm.coalesced.write(ipa, &data[..access.len as usize]))
    {
        vcpu.stats.inc(stat::MMIO_EXIT_KERNEL);
        st.regs.pc += 4;
        return Ok(Next::Enter);
    }
    super::MMIO_EXITS.fetch_add(1, Ordering::Relaxed);
    vcpu.stats.inc(stat::MMIO_EXIT_USER);
    vcpu.run_write(k::run::MMIO_PHYS_ADDR, &ipa.to_le_bytes());
    vcpu.run_write(k::run::MMIO_DATA, &data);
    vcpu.run_write(k::run::MMIO_LEN, &access.len.to_le_bytes());
    vcpu.run_write(k::run::MMIO_IS_WRITE, &[access.write as u8]);
    vcpu.set_exit_reason(k::KVM_EXIT_MMIO);
    st.mmio = Some(PendingMmio { access, big_endian });
    Ok(Next::ToVmm)
}

/// The VMM answered an MMIO exit: a load takes its data from `kvm_run`; either way the access
/// is done and the guest goes on after it (kvm_handle_mmio_return).
pub fn complete_mmio(vcpu: &Vcpu, st: &mut VcpuState, p: PendingMmio) {
    let a = p.access;
    if !a.write && a.reg != 31 {
        let mut data = u64::from_le_bytes(vcpu.run_read::<8>(k::run::MMIO_DATA));
        if p.big_endian {
            data = a.byte_swap(data & a.store_value(u64::MAX));
        }
        st.regs.x[a.reg as usize] = a.load_value(data);
    }
    st.regs.pc += 4;
}
