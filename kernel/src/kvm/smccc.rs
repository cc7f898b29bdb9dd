//! A VM's SMCCC filter (the VM attribute KVM_ARM_VM_SMCCC_FILTER, arch/arm64/kvm/hypercalls.c):
//! ranges of function IDs the VMM has taken from KVM, each denied or forwarded to it with
//! KVM_EXIT_HYPERCALL; every other call is KVM's to handle. Ranges never overlap, and once
//! the VMM sets one the Arm Architecture Calls are kept for KVM, so that a VMM cannot answer
//! the guest's Spectre-mitigation queries. The filter is fixed once a vCPU has run.

use super::vcpu::Vcpu;
use super::vm::Vm;
use crate::mm::uaccess::UserPtr;
use alloc::collections::BTreeMap;
use core::sync::atomic::Ordering;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, KvmDeviceAttr, KvmSmcccFilter, SmcccAction};

/// Function-ID ranges: first ID → (last ID, action).
pub struct SmcccFilter {
    ranges: Mutex<BTreeMap<u32, (u32, SmcccAction)>>,
}

impl SmcccFilter {
    pub const fn new() -> SmcccFilter {
        SmcccFilter {
            ranges: Mutex::new(BTreeMap::new()),
        }
    }

    /// Adds `first..=last` with `action`; EEXIST if a range (a reserved one included) already
    /// covers part of it.
    fn insert(
        ranges: &mut BTreeMap<u32, (u32, SmcccAction)>,
        first: u32,
        last: u32,
        action: SmcccAction,
    ) -> SysResult<()> {
        // Ranges never overlap, so the one starting last at or before `last` is the only one
        // that can reach into the new range.
        if let Some((_, &(end, _))) = ranges.range(..=last).next_back() {
            if end >= first {
                return Err(Errno::EEXIST);
            }
        }
        let _ = ranges.insert(first, (last, action));
        Ok(())
    }

    /// KVM_SET_DEVICE_ATTR(KVM_ARM_VM_SMCCC_FILTER) with the filter at `addr`
    /// (`kvm_smccc_set_filter`): EINVAL for a malformed range, EBUSY once a vCPU has run,
    /// EEXIST for an overlap.
    fn set(&self, vm: &Vm, addr: usize) -> SysResult<usize> {
        let f = UserPtr::<KvmSmcccFilter>::new(addr).read()?;
        let (first, last, action) = k::check_smccc_filter(&f)?;
        let mut ranges = self.ranges.lock();
        if vm.ran.load(Ordering::Relaxed) {
            return Err(Errno::EBUSY);
        }
        if ranges.is_empty() {
            for (a, b) in k::SMCCC_ARCH_RANGES {
                Self::insert(&mut ranges, a, b, SmcccAction::Handle)?;
            }
        }
        Self::insert(&mut ranges, first, last, action)?;
        Ok(0)
    }

    /// What the filter does with function `func` (`kvm_smccc_filter_get_action`): a range's
    /// action, or KVM's own handling outside every range.
    #[inline(always)]
    pub fn action(&self, func: u32) -> SmcccAction {
        match self.ranges.lock().range(..=func).next_back() {
            Some((_, &(end, action))) if end >= func => action,
            _ => SmcccAction::Handle,
        }
    }
}

/// The VM's device attributes (`kvm_vm_{has,set}_attr`): the SMCCC filter, which can be set
/// but not read. KVM_GET_DEVICE_ATTR is not a VM ioctl on arm64 (EINVAL, its argument
/// unread); other groups and attributes are ENXIO.
pub fn vm_attr(vm: &Vm, cmd: u32, arg: usize) -> SysResult<usize> {
    if cmd == k::KVM_GET_DEVICE_ATTR {
        return Err(Errno::EINVAL);
    }
    let a = UserPtr::<KvmDeviceAttr>::new(arg).read()?;
    if a.group != k::KVM_ARM_VM_SMCCC_CTRL || a.attr != k::KVM_ARM_VM_SMCCC_FILTER {
        return Err(Errno::ENXIO);
    }
    match cmd {
        k::KVM_HAS_DEVICE_ATTR => Ok(0),
        _ => vm.smccc_filter.set(vm, a.addr as usize),
    }
}

/// Fills in `kvm_run` for a call forwarded to the VMM (`kvm_prepare_hypercall_exit`): the
/// function ID and how the guest called, the argument words zeroed. The guest's registers
/// stay as they are, the PC already past the call; the VMM answers through KVM_SET_ONE_REG.
pub fn forward(vcpu: &Vcpu, func: u32, esr: u64) {
    let mut hc = [0u8; 72];
    hc[..8].copy_from_slice(&u64::from(func).to_le_bytes());
    hc[64..].copy_from_slice(&k::hypercall_exit_flags(esr).to_le_bytes());
    vcpu.run_write(k::run::HYPERCALL_NR, &hc);
    vcpu.set_exit_reason(k::KVM_EXIT_HYPERCALL);
}
