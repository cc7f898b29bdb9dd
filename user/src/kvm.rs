//! What the KVM programs share (the `kvm` and `kvm_sme` tests and the `vmm`): /dev/kvm, the
//! ioctl call, capability checks, registers by ONE_REG, the one finalize and the register list,
//! and `guest_code!` for guests assembled into a program.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use svelt_abi::uapi::kvm::{self as k, KvmOneReg};
use svelt_abi::uapi::kvm_sve::KVM_ARM_VCPU_FINALIZE;

use crate::sys::{self, SysResult};

const MKNODAT: usize = 33;
const S_IFCHR: u32 = 0o020000;
/// /dev/kvm's device number: misc major 10, minor 232 (Linux's KVM_MINOR).
const KVM_DEV: usize = (10 << 8) | 232;

/// A KVM ioctl on `fd` (request numbers are u32 in the uapi module).
pub fn ioctl(fd: i32, req: u32, arg: usize) -> SysResult {
    sys::ioctl(fd, req as usize, arg)
}

/// /dev/kvm, made if the file system has no node for it; None where the kernel has no KVM.
pub fn open() -> Result<Option<i32>, String> {
    let open = || sys::open("/dev/kvm", sys::O_RDWR | sys::O_CLOEXEC);
    let made = match open() {
        Err(sys::ENOENT) => {
            let p = sys::CPath::new("/dev/kvm");
            let mode = (S_IFCHR | 0o660) as usize;
            sys::syscall(MKNODAT, &[sys::AT_FDCWD as usize, p.ptr(), mode, KVM_DEV])
                .map_err(|e| format!("mknod /dev/kvm: {e:?}"))?;
            open()
        }
        r => r,
    };
    match made {
        Ok(fd) => Ok(Some(fd)),
        Err(sys::ENODEV | sys::ENXIO) => Ok(None),
        Err(e) => Err(format!("open /dev/kvm: {e:?}")),
    }
}

/// KVM_CHECK_EXTENSION(`cap`) answers 1 on `fd` (/dev/kvm or a VM).
pub fn has_cap(fd: i32, cap: u64) -> bool {
    ioctl(fd, k::KVM_CHECK_EXTENSION, cap as usize) == Ok(1)
}

/// KVM_GET_ONE_REG of register `id` into `buf`, which must be the register's size.
pub fn get_one(vcpu: i32, id: u64, buf: &mut [u8]) -> SysResult {
    let r = KvmOneReg {
        id,
        addr: buf.as_mut_ptr() as u64,
    };
    ioctl(vcpu, k::KVM_GET_ONE_REG, &r as *const _ as usize)
}

/// KVM_SET_ONE_REG of register `id` from `buf`, which must be the register's size.
pub fn set_one(vcpu: i32, id: u64, buf: &[u8]) -> SysResult {
    let r = KvmOneReg {
        id,
        addr: buf.as_ptr() as u64,
    };
    ioctl(vcpu, k::KVM_SET_ONE_REG, &r as *const _ as usize)
}

/// KVM_ARM_VCPU_FINALIZE of feature `what`.
pub fn finalize(vcpu: i32, what: i32) -> SysResult {
    ioctl(vcpu, KVM_ARM_VCPU_FINALIZE, &what as *const i32 as usize)
}

/// KVM_GET_REG_LIST: every register ID the vCPU has now.
pub fn reg_list(vcpu: i32) -> SysResult<Vec<u64>> {
    let mut list = vec![0u64; 2048];
    list[0] = 2000;
    ioctl(vcpu, k::KVM_GET_REG_LIST, list.as_mut_ptr() as usize)?;
    let n = list[0] as usize;
    Ok(list[1..1 + n].to_vec())
}

/// A guest's code as bytes: the bytes between two labels of one `global_asm!` block, declared
/// as `static` in an `extern` block.
#[macro_export]
macro_rules! guest_code {
    ($start:ident, $end:ident) => {{
        // SAFETY: two labels of the same .rodata block, `end` after `start`.
        unsafe {
            let s = &raw const $start;
            let e = &raw const $end;
            core::slice::from_raw_parts(s, e as usize - s as usize)
        }
    }};
}
