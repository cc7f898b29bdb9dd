//! Where the vGICv3 meets the rest of KVM: the run loop's hooks around each entry (the list
//! registers filled and folded back, the guest timers' PPIs sampled, the traps a VM without a
//! vGIC runs under), the guest's accesses to the distributor and redistributor frames and to
//! the SGI registers, WFI's wake-up conditions, and KVM_IRQ_LINE.

use super::irq::{PTIMER_PPI, VTIMER_PPI};
use super::mmio::Frame;
use super::Vgic;
use crate::arch::guest::{self, ich_hcr, El1State};
use crate::kvm::vcpu::{mpidr_for, VcpuState};
use crate::kvm::vm::Vm;
use crate::mm::uaccess::UserPtr;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::MmioAccess;
use svelt_abi::uapi::kvm_vgic::{self as g, IrqLine};

/// The affinity fields of an MPIDR.
pub const MPIDR_HWID: u64 = 0xff_00ff_ffff;

fn affinity(id: u32) -> u64 {
    mpidr_for(id) & MPIDR_HWID
}

/// The CPU's list registers (ICH_VTR_EL2.ListRegs + 1); None without GICv3 system registers.
fn nr_lrs() -> Option<usize> {
    guest::ich_vtr().map(|v| (v & 0x1f) as usize + 1)
}

/// Whether a timer with control `ctl` and compare value `cval` has fired at `count`: enabled,
/// not masked, the count reached (the ISTATUS condition).
fn fired(ctl: u64, cval: u64, count: u64) -> bool {
    ctl & 0b11 == 0b01 && count >= cval
}

/// The guest timers' lines into their PPIs, as they are now (kvm_timer_update_irq).
fn sample_timers(v: &mut Vgic, id: u32, el1: &El1State, cntvoff: u64) {
    let now = crate::arch::cpu::counter();
    let vt = fired(el1.cntv_ctl, el1.cntv_cval, now.wrapping_sub(cntvoff));
    let pt = fired(el1.cntp_ctl, el1.cntp_cval, now);
    let own = v.private_mut(id);
    own[VTIMER_PPI as usize].set_level(vt);
    own[PTIMER_PPI as usize].set_level(pt);
}

/// At the start of a KVM_RUN (after the VM is marked as having run, so that no vGIC can be
/// created from now on: `create` gives EBUSY): whether the VM has a vGIC. Without one, every
/// GIC CPU interface register traps for the whole run (and is UNDEFINED to the guest, as on
/// Linux for a VM without an in-kernel irqchip), and the run loop skips `before_entry` and
/// `after_exit`.
pub fn run_start(vm: &Vm, st: &mut VcpuState) -> bool {
    let has = vm.vgic.lock().is_some();
    if !has && nr_lrs().is_some() {
        trap_cpu_interface(st);
    }
    has
}

/// A VM without a vGIC: every GIC CPU interface register traps, no list register is loaded.
fn trap_cpu_interface(st: &mut VcpuState) {
    st.gic.hcr = ich_hcr::TALL0 | ich_hcr::TALL1 | ich_hcr::TC;
    st.gic.nr_lr = 0;
}

/// Before vCPU `id` enters: with a vGIC, the timers sampled and the list registers filled;
/// without one, every GIC CPU interface register traps (and is UNDEFINED to the guest, as on
/// Linux for a VM without an in-kernel irqchip).
pub fn before_entry(vm: &Vm, id: u32, st: &mut VcpuState) {
    let Some(n) = nr_lrs() else {
        return;
    };
    let mut guard = vm.vgic.lock();
    match guard.as_mut() {
        None => trap_cpu_interface(st),
        Some(v) => {
            sample_timers(v, id, &st.el1, vm.cntvoff.load(Ordering::Relaxed));
            v.settle_spis();
            v.flush(id, affinity(id), &mut st.gic, n);
        }
    }
}

/// After vCPU `id` exits: what the guest did with its list registers, and its timers' lines
/// as it left them (a guest reading its timer's pending bit sees it at once).
pub fn after_exit(vm: &Vm, id: u32, st: &mut VcpuState) {
    let acked = {
        let mut guard = vm.vgic.lock();
        let Some(v) = guard.as_mut() else {
            return;
        };
        let acked = v.fold(id, affinity(id), &mut st.gic);
        sample_timers(v, id, &st.el1, vm.cntvoff.load(Ordering::Relaxed));
        acked
    };
    // Resamplers lower their lines and signal their VMMs (irqfd_resampler_ack).
    for &pin in acked.pins() {
        crate::kvm::eventfd::acked(vm, pin);
    }
}

/// The vCPU an SPI routes to, among `vcpus`.
fn spi_target(
    v: &mut Vgic,
    vcpus: Vec<Arc<crate::kvm::vcpu::Vcpu>>,
    intid: u32,
) -> Option<Arc<crate::kvm::vcpu::Vcpu>> {
    let route = v.irq_mut(0, intid).map_or(0, |q| q.route) & MPIDR_HWID;
    vcpus.into_iter().find(|c| affinity(c.id) == route)
}

/// An SPI's input set from an irqfd (vgic_irqfd_set_irq): pin `pin` is INTID pin + 32; a pin
/// past the distributor's SPIs, or a vGIC not initialised, takes nothing. The vCPU it routes
/// to is woken.
pub fn set_spi(vm: &Vm, pin: u32, level: bool) {
    let intid = pin + g::NR_PRIVATE_IRQS;
    let vcpus: Vec<Arc<crate::kvm::vcpu::Vcpu>> = vm.vcpus.lock().iter().cloned().collect();
    let mut guard = vm.vgic.lock();
    let Some(v) = guard.as_mut() else {
        return;
    };
    if !v.cfg.initialized || v.set_line(0, intid, level).is_none() {
        return;
    }
    let wake = spi_target(v, vcpus, intid);
    drop(guard);
    if let Some(c) = wake {
        c.kick();
    }
}

/// The SPIs the vGIC has (0 before the initialisation).
pub fn nr_spis(vm: &Vm) -> u32 {
    vm.vgic
        .lock()
        .as_ref()
        .filter(|v| v.cfg.initialized)
        .map_or(0, |v| v.cfg.nr_spis)
}

/// Whether a WFI of vCPU `id` ends at once (an interrupt it can take is pending), and if not,
/// when its next guest timer fires (a host counter value).
pub fn wfi_wake(vm: &Vm, id: u32, st: &VcpuState) -> (bool, Option<u64>) {
    let mut guard = vm.vgic.lock();
    let Some(v) = guard.as_mut() else {
        return (false, None);
    };
    let cntvoff = vm.cntvoff.load(Ordering::Relaxed);
    sample_timers(v, id, &st.el1, cntvoff);
    // The timers first: the usual reason a WFI ends, found without a walk.
    let vmcr = st.gic.vmcr;
    let timer = |ppi| v.can_take_private(id, ppi, vmcr);
    if timer(VTIMER_PPI) || timer(PTIMER_PPI) || v.pending_for(id, affinity(id), vmcr) {
        return (true, None);
    }
    // Each armed timer's distance is counted in its own count, and one already due (it may
    // have fired since it was sampled above) is a deadline of now: the wait ends at once
    // (Linux's kvm_timer_compute_delta gives 0). Dropped, it would make the WFI a sleep with
    // no deadline, which nothing might end (both vCPUs of an idle guest asleep for good).
    let el1 = &st.el1;
    let now = crate::arch::cpu::counter();
    let deadline = |ctl: u64, cval: u64, count: u64| {
        (ctl & 0b11 == 0b01).then(|| now.saturating_add(cval.saturating_sub(count)))
    };
    let vt = deadline(el1.cntv_ctl, el1.cntv_cval, now.wrapping_sub(cntvoff));
    let pt = deadline(el1.cntp_ctl, el1.cntp_cval, now);
    let next = [vt, pt].into_iter().flatten().min();
    (false, next)
}

/// Whether vCPU `id`, asleep in WFI with the guest's VMCR `vmcr`, has an interrupt to take.
pub fn pending(vm: &Vm, id: u32, vmcr: u64) -> bool {
    vm.vgic
        .lock()
        .as_ref()
        .is_some_and(|v| v.pending_for(id, affinity(id), vmcr))
}

/// A guest load or store in the vGIC's frames, emulated here (the PC moves past it). False if
/// `ipa` is none of them.
pub fn mmio_access(vm: &Vm, ipa: u64, a: &MmioAccess, st: &mut VcpuState) -> bool {
    if super::its::mmio_access(vm, ipa, a, st) {
        return true;
    }
    let mut guard = vm.vgic.lock();
    let Some(v) = guard.as_mut() else {
        return false;
    };
    let Some((frame, off)) = v.frame_at(ipa) else {
        return false;
    };
    if a.write {
        let reg = if a.reg == 31 {
            0
        } else {
            st.regs.x[a.reg as usize]
        };
        v.guest_write(frame, off, a.len, a.store_value(reg));
        let sgi_ppi = matches!(frame, Frame::Dist | Frame::Sgi(_));
        let lpis_on = v.lpis_turned_on.take();
        drop(guard);
        if let Some(id) = lpis_on {
            super::its::pending::sync_on_enable(vm, id);
            kick_all(vm);
        }
        if sgi_ppi {
            // An interrupt made pending or enabled may be another vCPU's to take.
            kick_all(vm);
        }
    } else {
        let data = v.guest_read(frame, off, a.len);
        if a.reg != 31 {
            st.regs.x[a.reg as usize] = a.load_value(data);
        }
    }
    st.regs.pc += 4;
    true
}

/// Wakes every vCPU of the VM (an interrupt any of them may take changed).
pub fn kick_all(vm: &Vm) {
    let vcpus: Vec<_> = vm.vcpus.lock().iter().cloned().collect();
    for c in vcpus {
        c.kick();
    }
}

/// A write to ICC_SGI1R_EL1 (`group1`) or ICC_SGI0R_EL1/ICC_ASGI1R_EL1 by vCPU `sender`
/// (vgic_v3_dispatch_sgi): the SGI becomes pending on each target; a Group 0 request makes
/// only Group 0 SGIs pending. The targets are woken.
pub fn sgi(vm: &Vm, sender: u32, val: u64, group1: bool) {
    let req = g::decode_sgi(val);
    let vcpus: Vec<Arc<crate::kvm::vcpu::Vcpu>> = vm.vcpus.lock().iter().cloned().collect();
    let mut woken = Vec::new();
    {
        let mut guard = vm.vgic.lock();
        let Some(v) = guard.as_mut() else {
            return;
        };
        for c in &vcpus {
            if (req.broadcast && c.id == sender) || !req.targets_mpidr(affinity(c.id)) {
                continue;
            }
            if let Some(q) = v.irq_mut(c.id, req.intid) {
                if !q.group1 || group1 {
                    q.latch_pending();
                    if woken.try_reserve(1).is_ok() {
                        woken.push(c.clone());
                    }
                }
            }
        }
    }
    for c in woken {
        c.kick();
    }
}

/// A trapped ICC_DIR_EL1 write (ICH_HCR_EL2.TDIR, set while active interrupts are left
/// out of the list registers with EOImode 1): the interrupt is deactivated.
pub fn dir(vm: &Vm, id: u32, val: u64) {
    if let Some(v) = vm.vgic.lock().as_mut() {
        v.deactivate(id, (val & 0xff_ffff) as u32);
    }
}

/// KVM_IRQ_LINE (kvm_vm_ioctl_irq_line): an SPI or a vCPU's PPI raised or lowered. Without
/// an in-kernel vGIC, ENXIO; an unknown type, a missing vCPU or a number out of its range,
/// EINVAL; before the vGIC's initialisation, EBUSY. The vCPU to take it is woken.
pub fn irq_line(vm: &Vm, arg: usize) -> SysResult<usize> {
    let irq = UserPtr::<u32>::new(arg).read()?;
    let level = UserPtr::<u32>::new(arg + 4).read()? != 0;
    let line = g::decode_irq_line(irq).ok_or(Errno::EINVAL)?;
    let vcpus: Vec<Arc<crate::kvm::vcpu::Vcpu>> = vm.vcpus.lock().iter().cloned().collect();
    let mut guard = vm.vgic.lock();
    let (target, intid) = match line {
        // The vCPU's own IRQ and FIQ inputs exist only without an in-kernel GIC, for a VMM
        // that models its own (HCR_EL2.VI and VF).
        IrqLine::Cpu { vcpu, num } => {
            if guard.is_some() {
                return Err(Errno::ENXIO);
            }
            drop(guard);
            let c = vcpus.iter().find(|c| c.id == vcpu).ok_or(Errno::EINVAL)?;
            if num > 1 {
                return Err(Errno::EINVAL);
            }
            c.set_irq_line(num, level);
            return Ok(0);
        }
        IrqLine::Ppi { vcpu, num } => {
            guard.as_ref().ok_or(Errno::ENXIO)?;
            let c = vcpus.iter().find(|c| c.id == vcpu).ok_or(Errno::EINVAL)?;
            if !(16..32).contains(&num) {
                return Err(Errno::EINVAL);
            }
            (Some(c.clone()), num)
        }
        IrqLine::Spi { num } => {
            guard.as_ref().ok_or(Errno::ENXIO)?;
            if num < g::NR_PRIVATE_IRQS {
                return Err(Errno::EINVAL);
            }
            (None, num)
        }
    };
    let v = guard.as_mut().ok_or(Errno::ENXIO)?;
    if !v.cfg.initialized {
        return Err(Errno::EBUSY);
    }
    let owner = target.as_ref().map_or(0, |c| c.id);
    v.set_line(owner, intid, level).ok_or(Errno::EINVAL)?;
    let wake = match target {
        Some(c) => Some(c),
        None => spi_target(v, vcpus, intid),
    };
    drop(guard);
    if let Some(c) = wake {
        c.kick();
    }
    Ok(0)
}
