//! A PMUv3 for guests (KVM_ARM_VCPU_PMU_V3), as Linux 7.3's arch/arm64/kvm/pmu-emul.c and
//! sys_regs.c present it: the vCPU attributes (IRQ, INIT, FILTER, SET_PMU, SET_NR_COUNTERS),
//! the registers' KVM_GET/SET_ONE_REG rules, and the guest's trapped accesses
//! (MDCR_EL2.TPM/TPMCR stay set). Unlike Linux, which backs each counter with a host perf
//! event, the counters are the CPU's own: the host does not use its PMU, so a vCPU's values go
//! onto it just before the guest enters and come off right after it leaves
//! (arch::guest_pmu), counting only guest time. Overflows the guest enabled raise its PPI
//! through the vGIC at the next exit. A vCPU without the feature keeps the plain storage of
//! kvm::exit. See docs/kvm.md.

use super::inject;
use super::vcpu::VcpuState;
use super::vm::Vm;
use crate::arch::guest_pmu::{self as hw, PmuHw};
use crate::mm::uaccess::UserPtr;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, sysreg_id};
use svelt_abi::uapi::kvm_pmu::*;

/// The VM's PMU configuration (kvm->arch.nr_pmu_counters and pmu_filter).
#[derive(Default)]
pub struct VmPmu {
    /// The VM's vCPUs have a PMU.
    pub with: bool,
    pub nr_counters: u32,
    /// One bit per event the guest may count, once the VMM set a filter.
    pub filter: Option<Vec<u64>>,
    /// Each vCPU's interrupt once its VMM set one (pmu_irq_is_valid looks at them all).
    pub irqs: BTreeMap<u32, u32>,
}

/// A vCPU's PMU: its registers as the guest sees them.
#[derive(Default)]
pub struct GuestPmu {
    /// The counters, their types and the enables that go onto the CPU.
    pub hw: PmuHw,
    /// PMCR_EL0 without N.
    pub pmcr: u64,
    pub inten: u64,
    pub selr: u64,
    pub userenr: u64,
    pub swinc: u64,
    /// The PPI or SPI the VMM chose (KVM_ARM_VCPU_PMU_V3_IRQ).
    pub irq: Option<u32>,
    /// KVM_ARM_VCPU_PMU_V3_INIT was done.
    pub created: bool,
    /// The counters the CPU holds for it while it runs (the VM's N, fixed once it ran).
    pub n: u32,
    /// The interrupt line's level as last given to the vGIC.
    pub line: bool,
}

/// Whether guests can have a PMU: the CPU has a PMUv3.
pub fn offered() -> bool {
    crate::arch::el::vhe() && !matches!(hw::pmuver(), 0 | 0xf)
}

/// The PMU version guests are shown (kvm_arm_pmu_get_pmuver_limit: at most PMUv3p5).
fn pmuver_limit() -> u64 {
    hw::pmuver().min(6)
}

fn max_counters() -> u32 {
    hw::counters().min(MAX_EVENT_COUNTERS)
}

fn aa32_el0() -> bool {
    crate::arch::guest::read_id_reg(4, 0) & 0xf == 2
}

fn pmcr_reset() -> u64 {
    if aa32_el0() {
        0
    } else {
        PMCR_LC
    }
}

/// KVM_ARM_VCPU_INIT: a fresh PMU for a vCPU with the feature (the IRQ and INIT a VMM gave
/// survive a re-init, as Linux's), none otherwise. The VM's counter count is the CPU's until
/// the VMM chooses.
pub fn init(vm: &Vm, st: &mut VcpuState, with: bool, first_in_vm: bool) {
    if first_in_vm {
        vm.pmu.lock().with = with;
    }
    if !with {
        st.pmu = None;
        return;
    }
    let (irq, created) = st
        .pmu
        .as_ref()
        .map_or((None, false), |p| (p.irq, p.created));
    st.pmu = Some(Box::new(GuestPmu {
        pmcr: pmcr_reset(),
        irq,
        created,
        ..GuestPmu::default()
    }));
    if first_in_vm {
        vm.pmu.lock().nr_counters = max_counters();
        if !vm.ran.load(Ordering::Relaxed) {
            // ID_AA64DFR0_EL1.PMUVer and ID_DFR0_EL1.PerfMon (read_sanitised_id_aa64dfr0_el1,
            // pmuver_to_perfmon).
            let mut regs = vm.id_regs.lock();
            for i in [DFR0, ID_DFR0] {
                regs[i] = id_limit(vm, i, regs[i]);
            }
        }
    }
}

const DFR0: usize = 4 * 8; // ID_AA64DFR0_EL1 (CRm 5, op2 0)
const ID_DFR0: usize = 2; // ID_DFR0_EL1

/// The VM's limit for ID register `i` (what a VMM may write back): with a PMU,
/// ID_AA64DFR0_EL1.PMUVer and ID_DFR0_EL1.PerfMon show it (read_sanitised_id_aa64dfr0_el1,
/// read_sanitised_id_dfr0_el1, pmuver_to_perfmon).
pub fn id_limit(vm: &Vm, i: usize, limit: u64) -> u64 {
    if !vm.pmu.lock().with {
        return limit;
    }
    let v = pmuver_limit();
    match i {
        DFR0 => (limit & !(0xf << 8)) | (v << 8),
        ID_DFR0 => {
            let perfmon = if v == 1 { 3 } else { v };
            (limit & !(0xf << 24)) | (perfmon << 24)
        }
        _ => limit,
    }
}

fn nr(vm: &Vm) -> u32 {
    vm.pmu.lock().nr_counters
}

/// KVM_RUN: a vCPU with a PMU needs INIT done (kvm_arm_pmu_v3_enable), and an IRQ with the
/// in-kernel vGIC, none without. Caches N for the switches.
#[inline(always)]
pub fn check_run(vm: &Vm, id: u32, st: &mut VcpuState) -> SysResult<()> {
    if st.pmu.is_none() {
        return Ok(());
    }
    check_run_pmu(vm, id, st)
}

fn check_run_pmu(vm: &Vm, id: u32, st: &mut VcpuState) -> SysResult<()> {
    let Some(p) = st.pmu.as_mut() else {
        return Ok(());
    };
    let n = nr(vm);
    let has_vgic = vm.vgic.lock().is_some();
    if !p.created || (has_vgic && p.irq.is_none()) || (!has_vgic && p.irq.is_some()) {
        return Err(Errno::EINVAL);
    }
    p.n = n;
    // A VMM's writes to the overflow and enable registers show in the line from here.
    update_irq(vm, id, st);
    Ok(())
}

/// The vCPU attribute group KVM_ARM_VCPU_PMU_V3_CTRL (kvm_arm_pmu_v3_{set,get,has}_attr).
pub fn attr(
    vm: &Vm,
    id: u32,
    st: &mut VcpuState,
    cmd: u32,
    a: &k::KvmDeviceAttr,
) -> SysResult<usize> {
    let has_vgic = vm.vgic.lock().is_some();
    let known = a.attr <= KVM_ARM_VCPU_PMU_V3_SET_NR_COUNTERS;
    match cmd {
        k::KVM_HAS_DEVICE_ATTR => {
            if known && st.pmu.is_some() {
                Ok(0)
            } else {
                Err(Errno::ENXIO)
            }
        }
        k::KVM_GET_DEVICE_ATTR => {
            if a.attr != KVM_ARM_VCPU_PMU_V3_IRQ {
                return Err(Errno::ENXIO);
            }
            if !has_vgic {
                return Err(Errno::EINVAL);
            }
            let p = st.pmu.as_ref().ok_or(Errno::ENODEV)?;
            let irq = p.irq.ok_or(Errno::ENXIO)?;
            UserPtr::<u32>::new(a.addr as usize).write(&irq)?;
            Ok(0)
        }
        _ => set_attr(vm, id, st, a, has_vgic),
    }
}

fn set_attr(
    vm: &Vm,
    id: u32,
    st: &mut VcpuState,
    a: &k::KvmDeviceAttr,
    has_vgic: bool,
) -> SysResult<usize> {
    let p = st.pmu.as_mut().ok_or(Errno::ENODEV)?;
    if p.created {
        return Err(Errno::EBUSY);
    }
    match a.attr {
        KVM_ARM_VCPU_PMU_V3_IRQ => {
            if !has_vgic {
                return Err(Errno::EINVAL);
            }
            let irq = UserPtr::<u32>::new(a.addr as usize).read()?;
            // A PPI or an SPI (irq_is_ppi, irq_is_spi).
            if !(16..32).contains(&irq) && !(32..1020).contains(&irq) {
                return Err(Errno::EINVAL);
            }
            // Every vCPU of a VM has the same PPI, or SPIs of its own (pmu_irq_is_valid).
            let mut vp = vm.pmu.lock();
            for &o in vp.irqs.values() {
                if (irq < 32 && o != irq) || (irq >= 32 && o == irq) {
                    return Err(Errno::EINVAL);
                }
            }
            if p.irq.is_some() {
                return Err(Errno::EBUSY);
            }
            p.irq = Some(irq);
            let _ = vp.irqs.insert(id, irq);
            Ok(0)
        }
        KVM_ARM_VCPU_PMU_V3_FILTER => {
            let f = UserPtr::<KvmPmuEventFilter>::new(a.addr as usize).read()?;
            let nr_events: u32 = if pmuver_limit() == 1 { 0x400 } else { 0x10000 };
            if u32::from(f.base_event) + u32::from(f.nevents) > nr_events
                || (f.action != KVM_PMU_EVENT_ALLOW && f.action != KVM_PMU_EVENT_DENY)
            {
                return Err(Errno::EINVAL);
            }
            if vm.ran.load(Ordering::Relaxed) {
                return Err(Errno::EBUSY);
            }
            let mut vp = vm.pmu.lock();
            let words = (nr_events as usize).div_ceil(64);
            // The first filter decides what the rest is: an ALLOW starts from nothing.
            let bits = vp.filter.get_or_insert_with(|| {
                let fill = if f.action == KVM_PMU_EVENT_ALLOW {
                    0
                } else {
                    !0
                };
                vec![fill; words]
            });
            for e in f.base_event as usize..(f.base_event as usize + f.nevents as usize) {
                if f.action == KVM_PMU_EVENT_ALLOW {
                    bits[e / 64] |= 1 << (e % 64);
                } else {
                    bits[e / 64] &= !(1 << (e % 64));
                }
            }
            Ok(0)
        }
        KVM_ARM_VCPU_PMU_V3_SET_PMU => {
            // Svelt has no perf PMU types for a VMM to name (kvm_arm_pmu_v3_set_pmu finds none).
            let _id = UserPtr::<i32>::new(a.addr as usize).read()?;
            Err(Errno::ENXIO)
        }
        KVM_ARM_VCPU_PMU_V3_SET_NR_COUNTERS => {
            let n = UserPtr::<u32>::new(a.addr as usize).read()?;
            if n > max_counters() {
                return Err(Errno::EINVAL);
            }
            vm.pmu.lock().nr_counters = n;
            Ok(0)
        }
        KVM_ARM_VCPU_PMU_V3_INIT => {
            if has_vgic {
                if !vm.vgic.lock().as_ref().is_some_and(|v| v.cfg.initialized) {
                    return Err(Errno::ENODEV);
                }
                if p.irq.is_none() {
                    return Err(Errno::ENXIO);
                }
            }
            p.created = true;
            Ok(0)
        }
        _ => Err(Errno::ENXIO),
    }
}

// The registers, as KVM_GET_REG_LIST names them.
const PMINTENSET: u64 = sysreg_id(3, 0, 9, 14, 1);
const PMINTENCLR: u64 = sysreg_id(3, 0, 9, 14, 2);
const PMMIR: u64 = sysreg_id(3, 0, 9, 14, 6);
const PMCR: u64 = sysreg_id(3, 3, 9, 12, 0);
const PMCNTENSET: u64 = sysreg_id(3, 3, 9, 12, 1);
const PMCNTENCLR: u64 = sysreg_id(3, 3, 9, 12, 2);
const PMOVSCLR: u64 = sysreg_id(3, 3, 9, 12, 3);
const PMSWINC: u64 = sysreg_id(3, 3, 9, 12, 4);
const PMSELR: u64 = sysreg_id(3, 3, 9, 12, 5);
const PMCEID0: u64 = sysreg_id(3, 3, 9, 12, 6);
const PMCEID1: u64 = sysreg_id(3, 3, 9, 12, 7);
const PMCCNTR: u64 = sysreg_id(3, 3, 9, 13, 0);
const PMXEVTYPER: u64 = sysreg_id(3, 3, 9, 13, 1);
const PMXEVCNTR: u64 = sysreg_id(3, 3, 9, 13, 2);
const PMUSERENR: u64 = sysreg_id(3, 3, 9, 14, 0);
const PMOVSSET: u64 = sysreg_id(3, 3, 9, 14, 3);

/// PMEVCNTR<n>_EL0 (n < 31), PMEVTYPER<n>_EL0 (n = 31: PMCCFILTR_EL0).
fn evcntr_idx(id: u64) -> Option<u32> {
    let (op0, op1, crn, crm, op2) = k::sysreg_fields(id);
    ((op0, op1, crn) == (3, 3, 14) && (8..12).contains(&crm))
        .then_some((((crm & 3) << 3) | op2) as u32)
        .filter(|&i| i < 31)
}
fn evtyper_idx(id: u64) -> Option<u32> {
    let (op0, op1, crn, crm, op2) = k::sysreg_fields(id);
    ((op0, op1, crn) == (3, 3, 14) && (12..16).contains(&crm))
        .then_some((((crm & 3) << 3) | op2) as u32)
}

const LISTED: [u64; 12] = [
    PMINTENSET, PMINTENCLR, PMMIR, PMCR, PMCNTENSET, PMCNTENCLR, PMOVSCLR, PMSWINC, PMSELR,
    PMCCNTR, PMUSERENR, PMOVSSET,
];

/// The PMU registers KVM_GET_REG_LIST shows for a vCPU with a PMU (pmu_visibility).
pub fn ids(st: &VcpuState) -> Vec<u64> {
    if st.pmu.is_none() {
        return Vec::new();
    }
    let mut v: Vec<u64> = LISTED.to_vec();
    v.extend((0..31).map(|n| sysreg_id(3, 3, 14, 8 + n / 8, n % 8)));
    v.extend((0..32).map(|n| sysreg_id(3, 3, 14, 12 + n / 8, n % 8)));
    v
}

fn is_pmu_id(id: u64) -> bool {
    LISTED.contains(&id) || evcntr_idx(id).is_some() || evtyper_idx(id).is_some()
}

/// PMCR_EL0 with the VM's N (kvm_vcpu_read_pmcr).
fn read_pmcr(p: &GuestPmu, n: u32) -> u64 {
    (p.pmcr & !PMCR_N_MASK) | (u64::from(n) << PMCR_N_SHIFT)
}

/// A counter's value as the guest reads it: event counters are 32 bits below PMUv3p5
/// (kvm_pmu_get_counter_value).
fn counter(p: &GuestPmu, idx: u32) -> u64 {
    let v = p.hw.cntr[idx as usize];
    if idx != CYCLE_IDX && pmuver_limit() < 6 {
        v & 0xffff_ffff
    } else {
        v
    }
}

/// KVM_GET_ONE_REG of a PMU register: None if `id` is none.
pub fn sysreg_value(vm: &Vm, st: &VcpuState, id: u64) -> Option<SysResult<u64>> {
    if !is_pmu_id(id) {
        return None;
    }
    let Some(p) = st.pmu.as_ref() else {
        return Some(Err(Errno::ENOENT));
    };
    let n = nr(vm);
    let mask = counter_mask(n);
    let v = match id {
        PMCR => read_pmcr(p, n),
        PMCNTENSET | PMCNTENCLR => p.hw.cnten & mask,
        PMINTENSET | PMINTENCLR => p.inten & mask,
        PMOVSSET | PMOVSCLR => p.hw.ovs & mask,
        PMSWINC => p.swinc,
        PMSELR => p.selr,
        PMCCNTR => counter(p, CYCLE_IDX),
        PMUSERENR => p.userenr,
        PMMIR => 0,
        _ => match (evcntr_idx(id), evtyper_idx(id)) {
            (Some(i), _) => counter(p, i),
            (_, Some(i)) => p.hw.typer[i as usize],
            _ => 0,
        },
    };
    Some(Ok(v))
}

/// KVM_SET_ONE_REG of a PMU register (set_pmcr, set_pmreg, set_pmu_evcntr, set_pmmir).
pub fn sysreg_set(vm: &Vm, st: &mut VcpuState, id: u64, v: u64) -> SysResult<()> {
    let ran = vm.ran.load(Ordering::Relaxed);
    let p = st.pmu.as_mut().ok_or(Errno::ENOENT)?;
    if id == PMCR {
        let new_n = ((v & PMCR_N_MASK) >> PMCR_N_SHIFT) as u32;
        let mut vp = vm.pmu.lock();
        if !ran && new_n <= max_counters() {
            vp.nr_counters = new_n;
        }
        p.pmcr = (v & PMCR_MASK) | pmcr_reset();
        return Ok(());
    }
    let mask = counter_mask(nr(vm));
    match id {
        PMCNTENSET | PMCNTENCLR => p.hw.cnten = v & mask,
        PMINTENSET | PMINTENCLR => p.inten = v & mask,
        PMOVSSET | PMOVSCLR => p.hw.ovs = v & mask,
        PMSWINC => p.swinc = v,
        PMSELR => p.selr = v,
        PMCCNTR => p.hw.cntr[CYCLE_IDX as usize] = v,
        PMUSERENR => p.userenr = v,
        PMMIR => {
            let slots = v & 0xff;
            if v & !0xff != 0 {
                return Err(Errno::EINVAL);
            }
            if ran {
                return if slots == 0 {
                    Ok(())
                } else {
                    Err(Errno::EBUSY)
                };
            }
            if slots != 0 {
                return Err(Errno::EINVAL);
            }
        }
        _ => match (evcntr_idx(id), evtyper_idx(id)) {
            (Some(i), _) => p.hw.cntr[i as usize] = v,
            (_, Some(i)) => p.hw.typer[i as usize] = v,
            _ => return Err(Errno::ENOENT),
        },
    }
    Ok(())
}

/// The typer a guest's write leaves (kvm_pmu_set_counter_event_type): the VM's mask, without
/// the event number for the cycle counter's filter.
fn typer_mask(vm: &Vm, idx: u32) -> u64 {
    let has_el3 = (vm.id_reg(4, 0) >> 12) & 0xf != 0;
    let m = evtyper_mask(pmuver_limit(), has_el3);
    if idx == CYCLE_IDX {
        m & !0xffff
    } else {
        m
    }
}

/// A guest's trapped access to a PMU register of a vCPU with a PMU (sys_regs.c's access_pm*):
/// false if the vCPU has none or `key` (the ISS encoding) is no PMU register.
#[inline(always)]
pub fn trap(vm: &Vm, vcpu: u32, st: &mut VcpuState, key: u32, rt: usize, read: bool) -> bool {
    st.pmu.is_some() && trap_pmu(vm, vcpu, st, key, rt, read)
}

fn trap_pmu(vm: &Vm, vcpu: u32, st: &mut VcpuState, key: u32, rt: usize, read: bool) -> bool {
    let id = sysreg_id(
        u64::from(key >> 14),
        u64::from((key >> 11) & 7),
        u64::from((key >> 7) & 0xf),
        u64::from((key >> 3) & 0xf),
        u64::from(key & 7),
    );
    let ok = is_pmu_id(id) || matches!(id, PMCEID0 | PMCEID1 | PMXEVTYPER | PMXEVCNTR);
    if !ok {
        return false;
    }
    let el0 = st.regs.pstate & 0xf == 0;
    let val = if rt == 31 { 0 } else { st.regs.x[rt] };
    let n = nr(vm);
    let out = access(vm, st, id, el0, n, val, read);
    match out {
        Some(v) => {
            if read && rt != 31 {
                st.regs.x[rt] = v;
            }
            st.regs.pc += 4;
        }
        None => inject::inject_undef(st),
    }
    // A write may have raised or cleared an enabled overflow.
    update_irq(vm, vcpu, st);
    true
}

/// The access itself: Some(value read) or None for UNDEFINED.
fn access(
    vm: &Vm,
    st: &mut VcpuState,
    id: u64,
    el0: bool,
    n: u32,
    val: u64,
    read: bool,
) -> Option<u64> {
    let p = st.pmu.as_mut()?;
    // check_pmu_access_disabled: EL0 needs one of `flags` in PMUSERENR_EL0.
    let denied = |p: &GuestPmu, flags: u64| el0 && p.userenr & flags == 0;
    let mask = counter_mask(n);
    let valid = |idx: u32| idx < n || idx == CYCLE_IDX;
    match id {
        PMCR => {
            if denied(p, USERENR_EN) {
                return None;
            }
            if read {
                return Some(read_pmcr(p, n) & !(PMCR_P | PMCR_C));
            }
            let mut v = (read_pmcr(p, n) & !PMCR_MASK) | (val & PMCR_MASK);
            if !aa32_el0() {
                v |= PMCR_LC;
            }
            if pmuver_limit() < 6 {
                v &= !PMCR_LP;
            }
            // kvm_pmu_handle_pmcr: P resets the event counters, C the cycle counter.
            if v & PMCR_P != 0 {
                for c in p.hw.cntr[..31].iter_mut() {
                    *c = 0;
                }
            }
            if v & PMCR_C != 0 {
                p.hw.cntr[CYCLE_IDX as usize] = 0;
            }
            p.pmcr = v & !(PMCR_N_MASK | PMCR_P | PMCR_C);
            Some(0)
        }
        PMSELR => {
            if denied(p, USERENR_ER | USERENR_EN) {
                return None;
            }
            if read {
                return Some(p.selr & PMSELR_SEL_MASK);
            }
            p.selr = val;
            Some(0)
        }
        PMCEID0 | PMCEID1 => {
            if read && !denied(p, USERENR_EN) {
                // Without the CHAIN event (compute_pmceid0).
                let v = hw::pmceid(id == PMCEID1);
                Some(if id == PMCEID0 { v & !(1 << 30) } else { v })
            } else {
                None
            }
        }
        PMCCNTR | PMXEVCNTR => {
            let (flags, idx) = if id == PMCCNTR {
                (USERENR_CR | USERENR_EN, CYCLE_IDX)
            } else {
                (USERENR_ER | USERENR_EN, (p.selr & PMSELR_SEL_MASK) as u32)
            };
            counter_access(p, el0, flags, idx, valid(idx), val, read)
        }
        PMXEVTYPER => {
            let idx = (p.selr & PMSELR_SEL_MASK) as u32;
            typer_access(vm, p, el0, idx, valid(idx), val, read)
        }
        PMCNTENSET | PMCNTENCLR => {
            if denied(p, USERENR_EN) {
                return None;
            }
            if !read {
                if id == PMCNTENSET {
                    p.hw.cnten |= val & mask;
                } else {
                    p.hw.cnten &= !(val & mask);
                }
            }
            Some(p.hw.cnten)
        }
        PMINTENSET | PMINTENCLR => {
            if el0 {
                return None;
            }
            if !read {
                if id == PMINTENSET {
                    p.inten |= val & mask;
                } else {
                    p.inten &= !(val & mask);
                }
            }
            Some(p.inten)
        }
        PMOVSSET | PMOVSCLR => {
            if denied(p, USERENR_EN) {
                return None;
            }
            if !read {
                if id == PMOVSSET {
                    p.hw.ovs |= val & mask;
                } else {
                    p.hw.ovs &= !(val & mask);
                }
            }
            Some(p.hw.ovs)
        }
        PMSWINC => {
            if read || denied(p, USERENR_SW | USERENR_EN) {
                return None;
            }
            software_increment(p, val & mask & !(1 << CYCLE_IDX));
            Some(0)
        }
        PMUSERENR => {
            if read {
                return Some(p.userenr & USERENR_MASK);
            }
            if el0 {
                return None;
            }
            p.userenr = val & USERENR_MASK;
            Some(0)
        }
        PMMIR => read.then_some(0),
        _ => {
            if let Some(i) = evcntr_idx(id) {
                counter_access(p, el0, USERENR_ER | USERENR_EN, i, valid(i), val, read)
            } else if let Some(i) = evtyper_idx(id) {
                typer_access(vm, p, el0, i, valid(i), val, read)
            } else {
                None
            }
        }
    }
}

/// access_pmu_evcntr: EL0 permission, then the index (UNDEFINED past N), then writes need EN.
fn counter_access(
    p: &mut GuestPmu,
    el0: bool,
    flags: u64,
    idx: u32,
    valid: bool,
    val: u64,
    read: bool,
) -> Option<u64> {
    if el0 && p.userenr & flags == 0 {
        return None;
    }
    if !valid {
        return None;
    }
    if read {
        return Some(counter(p, idx));
    }
    if el0 && p.userenr & USERENR_EN == 0 {
        return None;
    }
    p.hw.cntr[idx as usize] = if idx != CYCLE_IDX && pmuver_limit() < 6 {
        val & 0xffff_ffff
    } else {
        val
    };
    Some(0)
}

/// access_pmu_evtyper.
fn typer_access(
    vm: &Vm,
    p: &mut GuestPmu,
    el0: bool,
    idx: u32,
    valid: bool,
    val: u64,
    read: bool,
) -> Option<u64> {
    if (el0 && p.userenr & USERENR_EN == 0) || !valid {
        return None;
    }
    if read {
        return Some(p.hw.typer[idx as usize]);
    }
    p.hw.typer[idx as usize] = val & typer_mask(vm, idx);
    Some(0)
}

/// PMSWINC_EL0: enabled event counters counting SW_INCR (event 0) go up by one; a wrap past
/// 32 bits (or 64 with PMCR.LP) sets their overflow flag (kvm_pmu_software_increment).
fn software_increment(p: &mut GuestPmu, bits: u64) {
    if p.pmcr & PMCR_E == 0 {
        return;
    }
    for i in 0..31u32 {
        if bits & (1 << i) == 0
            || p.hw.cnten & (1 << i) == 0
            || p.hw.typer[i as usize] & 0xffff != 0
        {
            continue;
        }
        let wide = is_64bit(i, p.pmcr);
        let c = &mut p.hw.cntr[i as usize];
        *c = c.wrapping_add(1);
        let wrapped = if wide { *c == 0 } else { *c & 0xffff_ffff == 0 };
        if !wide {
            *c &= 0xffff_ffff;
        }
        if wrapped {
            p.hw.ovs |= 1 << i;
        }
    }
}

/// The registers' values as the CPU gets them: the guest's enables under PMCR.E; the type
/// filters never count EL2 (NSH clear: the host); events the VMM's filter denies count
/// nowhere (P and U set).
fn hw_image(p: &GuestPmu, filter: Option<&[u64]>) -> PmuHw {
    let mut h = p.hw.clone();
    h.pmcr = p.pmcr & (PMCR_E | PMCR_LC | PMCR_LP);
    for (i, t) in h.typer.iter_mut().enumerate() {
        let mut v = *t & ((0xf << 28) | (1 << 26) | 0xffff);
        let denied = i != 31
            && filter.is_some_and(|f| {
                let e = (v & 0xffff) as usize;
                f.get(e / 64).is_some_and(|w| w & (1 << (e % 64)) == 0)
            });
        if denied {
            v |= (1 << 31) | (1 << 30);
        }
        *t = v;
    }
    h
}

/// Just before the guest enters, with interrupts masked: its counters onto the CPU.
#[inline(always)]
pub fn load(vm: &Vm, st: &VcpuState) {
    if st.pmu.is_some() {
        load_pmu(vm, st);
    }
}

fn load_pmu(vm: &Vm, st: &VcpuState) {
    if let Some(p) = st.pmu.as_ref() {
        let vp = vm.pmu.lock();
        let h = hw_image(p, vp.filter.as_deref());
        drop(vp);
        hw::load(p.n, &h);
    }
}

/// Right after it leaves: the counts and overflow flags back.
#[inline(always)]
pub fn save(st: &mut VcpuState) {
    if st.pmu.is_some() {
        save_pmu(st);
    }
}

fn save_pmu(st: &mut VcpuState) {
    if let Some(p) = st.pmu.as_mut() {
        let mut h = PmuHw::default();
        hw::save(p.n, &mut h);
        p.hw.cntr[..p.n as usize].copy_from_slice(&h.cntr[..p.n as usize]);
        p.hw.cntr[CYCLE_IDX as usize] = h.cntr[CYCLE_IDX as usize];
        p.hw.ovs = h.ovs & counter_mask(p.n);
    }
}

/// After each exit, trapped access and KVM_RUN: the guest's PMU interrupt follows PMCR.E and the enabled overflows
/// (kvm_pmu_overflow_status), through the vGIC.
#[inline(always)]
pub fn update_irq(vm: &Vm, id: u32, st: &mut VcpuState) {
    if st.pmu.is_some() {
        update_irq_pmu(vm, id, st);
    }
}

fn update_irq_pmu(vm: &Vm, id: u32, st: &mut VcpuState) {
    let Some(p) = st.pmu.as_mut() else {
        return;
    };
    let Some(irq) = p.irq else {
        return;
    };
    let level = p.pmcr & PMCR_E != 0 && p.hw.ovs & p.hw.cnten & p.inten != 0;
    if level != p.line {
        p.line = level;
        if let Some(v) = vm.vgic.lock().as_mut() {
            let _ = v.set_line(id, irq, level);
        }
    }
}

/// MDCR_EL2.HPMN while a vCPU with a PMU runs: every counter of the CPU in the guest's range,
/// so PMCR_EL0.E (not MDCR_EL2.HPME) starts them; 0 (the host's own) for one without.
#[inline(always)]
pub fn hpmn(st: &VcpuState) -> u64 {
    if st.pmu.is_some() {
        u64::from(hw::counters())
    } else {
        0
    }
}
