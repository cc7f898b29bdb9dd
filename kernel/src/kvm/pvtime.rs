//! Paravirtualised stolen time (Documentation/virt/kvm/arm/pvtime.rst; Linux's
//! arch/arm64/kvm/pvtime.c): the VMM gives a vCPU a 64-byte `pvclock_vcpu_stolen_time` in guest
//! memory (the vCPU attribute KVM_ARM_VCPU_PVTIME_IPA), the guest finds it with PV_TIME_ST, and
//! from then on each load of the vCPU adds the time its thread waited runnable for a CPU
//! (schedstat's run_delay) to the structure's `stolen_time`.

use super::vcpu::VcpuState;
use super::vm::Vm;
use crate::mm::uaccess::UserPtr;
use crate::task::Task;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, KvmDeviceAttr};
use svelt_abi::uapi::kvm_services as sv;

/// A vCPU's stolen-time structure and the run delay already accounted in it.
#[derive(Clone, Copy, Debug, Default)]
pub struct StealTime {
    pub base: Option<u64>,
    last: u64,
}

fn run_delay(t: &Task) -> u64 {
    crate::task::cputime::run_delay_ns(t)
}

/// KVM_{HAS,GET,SET}_DEVICE_ATTR in group KVM_ARM_VCPU_PVTIME_CTRL
/// (`kvm_arm_pvtime_{has,get,set}_attr`): ENXIO for another attribute; a set reads the IPA
/// (EFAULT), then wants it 64-byte aligned (EINVAL), the first one (EEXIST) and in a memory
/// slot (EINVAL). A get before any set reads all ones (INVALID_GPA).
pub fn attr(vm: &Vm, st: &mut VcpuState, cmd: u32, a: &KvmDeviceAttr) -> SysResult<usize> {
    if a.attr != sv::KVM_ARM_VCPU_PVTIME_IPA {
        return Err(Errno::ENXIO);
    }
    let user = UserPtr::<u64>::new(a.addr as usize);
    match cmd {
        k::KVM_HAS_DEVICE_ATTR => {}
        k::KVM_GET_DEVICE_ATTR => user.write(&st.steal.base.unwrap_or(u64::MAX))?,
        _ => {
            let ipa = user.read()?;
            if ipa % 64 != 0 {
                return Err(Errno::EINVAL);
            }
            if st.steal.base.is_some() {
                return Err(Errno::EEXIST);
            }
            if !vm.in_slot(ipa) {
                return Err(Errno::EINVAL);
            }
            st.steal.base = Some(ipa);
        }
    }
    Ok(0)
}

/// PV_TIME_ST (`kvm_init_stolen_time`): the structure zeroed, counting from now; its IPA, or
/// None without one.
pub fn init(vm: &Vm, st: &mut VcpuState, t: &Task) -> Option<u64> {
    let base = st.steal.base?;
    st.steal.last = run_delay(t);
    vm.write_guest(base, &[0; sv::STOLEN_TIME_SIZE]);
    Some(base)
}

/// The vCPU is loaded on a CPU (`kvm_update_stolen_time`): the run delay since the last
/// update goes into the guest's `stolen_time` (little-endian), if the guest memory is there.
pub fn update(vm: &Vm, st: &mut VcpuState, t: &Task) {
    let Some(base) = st.steal.base else {
        return;
    };
    let at = base + sv::STOLEN_TIME_OFFSET;
    if let Some(steal) = vm.read_guest_u64(at) {
        let now = run_delay(t);
        let steal = steal.wrapping_add(now.wrapping_sub(st.steal.last));
        st.steal.last = now;
        vm.write_guest(at, &steal.to_le_bytes());
    }
}
