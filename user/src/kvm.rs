//! What the KVM programs share (the `kvm` and `kvm_sme` tests and the `vmm`): /dev/kvm, the
//! ioctl call, capability checks, registers by ONE_REG, the one finalize and the register list,
//! and `guest_code!` for guests assembled into a program.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use svelt_abi::uapi::kvm::{self as k, KvmOneReg};
use svelt_abi::uapi::kvm_sme;
use svelt_abi::uapi::kvm_sve::{KVM_ARM_VCPU_FINALIZE, VLS_WORDS};

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

/// KVM_SET_DEVICE_ATTR of a 64-bit value on a device (or vCPU, or VM) fd.
pub fn set_device_u64(fd: i32, group: u32, attr: u64, v: u64) -> SysResult {
    let a = k::KvmDeviceAttr {
        flags: 0,
        group,
        attr,
        addr: &v as *const u64 as u64,
    };
    ioctl(fd, k::KVM_SET_DEVICE_ATTR, &a as *const _ as usize)
}

/// KVM_ARM_VCPU_FINALIZE of feature `what`.
pub fn finalize(vcpu: i32, what: i32) -> SysResult {
    ioctl(vcpu, KVM_ARM_VCPU_FINALIZE, &what as *const i32 as usize)
}

/// A vector-length pseudo-register (KVM_REG_ARM64_SVE_VLS or KVM_REG_ARM64_SME_VLS) as its
/// eight words: bit n of the bitmap is VQ n + 1.
pub fn vls_words(vcpu: i32, id: u64) -> SysResult<[u64; VLS_WORDS]> {
    let mut b = [0u8; 8 * VLS_WORDS];
    get_one(vcpu, id, &mut b)?;
    Ok(core::array::from_fn(|i| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    }))
}

/// Writes a vector-length pseudo-register from its eight words.
pub fn set_vls(vcpu: i32, id: u64, w: [u64; VLS_WORDS]) -> SysResult {
    let mut b = [0u8; 8 * VLS_WORDS];
    for (c, v) in b.chunks_exact_mut(8).zip(w) {
        c.copy_from_slice(&v.to_le_bytes());
    }
    set_one(vcpu, id, &b)
}

/// Caps an SME vCPU's streaming lengths at `svl` bytes (before finalize): the host's lengths up
/// to it, a prefix as the ABI asks. An error where the host does not offer `svl` itself, so the
/// guest's largest SVL is exactly `svl`.
pub fn cap_sme_vls(vcpu: i32, svl: usize) -> Result<(), String> {
    let vq = svl / 16;
    if !svl.is_multiple_of(16) || vq == 0 || vq > 64 * VLS_WORDS {
        return Err(format!("SVL {svl} is no streaming length"));
    }
    let mut w = vls_words(vcpu, kvm_sme::KVM_REG_ARM64_SME_VLS)
        .map_err(|e| format!("read SME_VLS: {e:?}"))?;
    let (word, bit) = ((vq - 1) / 64, (vq - 1) % 64);
    if w[word] & 1 << bit == 0 {
        return Err(format!("SVL {svl} not offered to guests"));
    }
    w[word] &= u64::MAX >> (63 - bit);
    w[word + 1..].fill(0);
    set_vls(vcpu, kvm_sme::KVM_REG_ARM64_SME_VLS, w)
        .map(|_| ())
        .map_err(|e| format!("set SME_VLS: {e:?}"))
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

/// Where a [`SmallVm`]'s guest finds its RAM (slot 0; its code at the start), its MMIO device
/// (any access there exits to the VMM) and, when it has one, its vGICv3's distributor and
/// redistributor (QEMU virt's addresses).
pub const SMALL_RAM_IPA: u64 = 0x1_0000;
pub const SMALL_RAM_SIZE: usize = 0x1_0000;
pub const SMALL_MMIO: u64 = 0x1000_0000;
pub const SMALL_GICD: u64 = 0x800_0000;
pub const SMALL_GICR: u64 = 0x80a_0000;

/// What a [`SmallVm`] has besides its RAM and one vCPU with PSCI 0.2.
#[derive(Clone, Copy, Default)]
pub struct SmallVmOpts {
    /// The vCPU has SVE (KVM_ARM_VCPU_SVE, every host length, finalized).
    pub sve: bool,
    /// The VM has an initialised in-kernel vGICv3 at SMALL_GICD/SMALL_GICR.
    pub vgic: bool,
    /// The vCPU has SME (KVM_ARM_VCPU_SME), its streaming lengths capped at this SVL in bytes,
    /// which the host must offer (an error otherwise); finalized with SVE when both are asked.
    pub sme_svl: Option<usize>,
}

/// A VM with one slot of RAM holding a guest's code at SMALL_RAM_IPA and one vCPU about to run
/// it, with its `kvm_run` page mapped; everything closed when dropped. For the benchmarks and
/// any program that needs a guest of a few instructions.
pub struct SmallVm {
    pub kvm: i32,
    pub vm: i32,
    pub vcpu: i32,
    pub gic: Option<i32>,
    ram: *mut u8,
    run: *mut u8,
    run_size: usize,
}

impl SmallVm {
    /// `kvm` is an open /dev/kvm, which the VM closes when dropped.
    pub fn new(kvm: i32, code: &[u8], opts: SmallVmOpts) -> Result<SmallVm, String> {
        fn e(what: &'static str) -> impl Fn(sys::Errno) -> String {
            move |err| format!("{what}: {err:?}")
        }
        if code.len() > SMALL_RAM_SIZE {
            return Err(format!("guest code of {} bytes", code.len()));
        }
        let vm = ioctl(kvm, k::KVM_CREATE_VM, 0).map_err(e("KVM_CREATE_VM"))? as i32;
        let mut v = SmallVm {
            kvm,
            vm,
            vcpu: -1,
            gic: None,
            ram: core::ptr::null_mut(),
            run: core::ptr::null_mut(),
            run_size: 0,
        };
        let ram = sys::mmap_anon(SMALL_RAM_SIZE).map_err(e("mmap"))? as *mut u8;
        v.ram = ram;
        // SAFETY: a fresh private mapping of SMALL_RAM_SIZE bytes; code is no longer (checked).
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), ram, code.len()) };
        let region = k::KvmUserspaceMemoryRegion {
            slot: 0,
            flags: 0,
            guest_phys_addr: SMALL_RAM_IPA,
            memory_size: SMALL_RAM_SIZE as u64,
            userspace_addr: ram as u64,
        };
        let rp = &region as *const _ as usize;
        ioctl(vm, k::KVM_SET_USER_MEMORY_REGION, rp).map_err(e("memory region"))?;
        v.vcpu = ioctl(vm, k::KVM_CREATE_VCPU, 0).map_err(e("KVM_CREATE_VCPU"))? as i32;
        let mut init = k::KvmVcpuInit::default();
        let ip = &mut init as *mut _ as usize;
        ioctl(vm, k::KVM_ARM_PREFERRED_TARGET, ip).map_err(e("preferred target"))?;
        init.features[0] |= 1 << k::KVM_ARM_VCPU_PSCI_0_2;
        if opts.sve {
            init.features[0] |= 1 << svelt_abi::uapi::kvm_sve::KVM_ARM_VCPU_SVE;
        }
        if opts.sme_svl.is_some() {
            init.features[0] |= 1 << kvm_sme::KVM_ARM_VCPU_SME;
        }
        let ip = &init as *const _ as usize;
        ioctl(v.vcpu, k::KVM_ARM_VCPU_INIT, ip).map_err(e("KVM_ARM_VCPU_INIT"))?;
        if let Some(svl) = opts.sme_svl {
            cap_sme_vls(v.vcpu, svl)?;
        }
        if opts.sve || opts.sme_svl.is_some() {
            // One finalize fixes both length sets (KVM_ARM_VCPU_VEC is SVE's old 4).
            finalize(v.vcpu, kvm_sme::KVM_ARM_VCPU_VEC).map_err(e("finalize"))?;
        }
        if opts.vgic {
            v.add_vgic()?;
        }
        v.run_size = ioctl(kvm, k::KVM_GET_VCPU_MMAP_SIZE, 0).map_err(e("mmap size"))?;
        let rw = sys::PROT_READ | sys::PROT_WRITE;
        let run = sys::mmap(0, v.run_size, rw, sys::MAP_SHARED, v.vcpu, 0);
        v.run = run.map_err(e("mmap kvm_run"))? as *mut u8;
        v.set_pc(SMALL_RAM_IPA).map_err(e("set PC"))?;
        Ok(v)
    }

    /// The in-kernel vGICv3: made, placed and initialised (after the vCPU, as Linux requires).
    fn add_vgic(&mut self) -> Result<(), String> {
        use svelt_abi::uapi::kvm_vgic as g;
        let mut d = k::KvmCreateDevice {
            ty: g::KVM_DEV_TYPE_ARM_VGIC_V3,
            fd: 0,
            flags: 0,
        };
        let dp = &mut d as *mut _ as usize;
        ioctl(self.vm, k::KVM_CREATE_DEVICE, dp).map_err(|e| format!("vGICv3: {e:?}"))?;
        let gic = d.fd as i32;
        self.gic = Some(gic);
        let attr = |group: u32, attr: u64, v: u64| set_device_u64(gic, group, attr, v);
        let addr = g::KVM_DEV_ARM_VGIC_GRP_ADDR;
        attr(addr, g::KVM_VGIC_V3_ADDR_TYPE_DIST, SMALL_GICD)
            .and_then(|_| attr(addr, g::KVM_VGIC_V3_ADDR_TYPE_REDIST, SMALL_GICR))
            .and_then(|_| {
                attr(
                    g::KVM_DEV_ARM_VGIC_GRP_CTRL,
                    g::KVM_DEV_ARM_VGIC_CTRL_INIT,
                    0,
                )
            })
            .map_err(|e| format!("vGICv3 set-up: {e:?}"))?;
        Ok(())
    }

    /// Sets general register `n` (x0..x30).
    pub fn set_x(&self, n: usize, v: u64) -> SysResult {
        set_one(self.vcpu, k::CoreReg::X(n).id(), &v.to_le_bytes())
    }

    /// Reads general register `n` (x0..x30).
    pub fn x(&self, n: usize) -> SysResult<u64> {
        let mut b = [0u8; 8];
        get_one(self.vcpu, k::CoreReg::X(n).id(), &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    pub fn set_pc(&self, v: u64) -> SysResult {
        set_one(self.vcpu, k::CoreReg::Pc.id(), &v.to_le_bytes())
    }

    /// KVM_RUN to the next exit.
    #[inline]
    pub fn run(&self) -> SysResult {
        ioctl(self.vcpu, k::KVM_RUN, 0)
    }

    fn run_word<T: Copy>(&self, off: usize) -> T {
        // SAFETY: `off` is a field of the mapped kvm_run page, aligned for T (the uapi layout).
        unsafe { (self.run.add(off) as *const T).read_volatile() }
    }

    pub fn exit_reason(&self) -> u32 {
        self.run_word(k::run::EXIT_REASON)
    }

    /// The last exit's MMIO access: (address, data, is_write).
    pub fn mmio(&self) -> (u64, u64, bool) {
        (
            self.run_word(k::run::MMIO_PHYS_ADDR),
            self.run_word(k::run::MMIO_DATA),
            self.run_word::<u8>(k::run::MMIO_IS_WRITE) != 0,
        )
    }

    /// KVM_RUN, which must end in an MMIO write: its (address, data).
    #[inline]
    pub fn run_to_mmio_write(&self) -> Result<(u64, u64), String> {
        self.run().map_err(|e| format!("KVM_RUN: {e:?}"))?;
        match (self.exit_reason(), self.mmio()) {
            (k::KVM_EXIT_MMIO, (a, d, true)) => Ok((a, d)),
            (r, _) => Err(format!("exit reason {r}, not an MMIO write")),
        }
    }
}

impl Drop for SmallVm {
    fn drop(&mut self) {
        if !self.run.is_null() {
            let _ = sys::munmap(self.run as usize, self.run_size);
        }
        if !self.ram.is_null() {
            let _ = sys::munmap(self.ram as usize, SMALL_RAM_SIZE);
        }
        if let Some(gic) = self.gic {
            let _ = sys::close(gic);
        }
        if self.vcpu >= 0 {
            let _ = sys::close(self.vcpu);
        }
        let _ = sys::close(self.vm);
        let _ = sys::close(self.kvm);
    }
}

extern "C" fn alarm_ends_run(_: i32, _: *mut crate::sig::SigInfo, _: *mut u8) {}

/// A host task beside a vCPU on one CPU: pins the caller to its first allowed CPU, forks a
/// child that runs `task(stop)` (it should loop until `stop` reads nonzero and return its exit
/// status), then calls `run` (one KVM_RUN) `runs` times, each ended by a SIGALRM after
/// `slice_ns`, so that the two take turns at every tick. Returns `run`'s results, or an error
/// when the child did not exit with status 0; the caller's affinity is put back.
pub fn beside_a_task<R>(
    task: impl FnOnce(&crate::proc::Shared<u32>) -> i32,
    runs: usize,
    slice_ns: u64,
    mut run: impl FnMut() -> R,
) -> Result<Vec<R>, String> {
    let mask = sys::sched_getaffinity(0).map_err(|e| format!("sched_getaffinity: {e:?}"))?;
    sys::sched_setaffinity(0, 1u64 << mask.trailing_zeros())
        .map_err(|e| format!("sched_setaffinity: {e:?}"))?;
    let stop = crate::proc::Shared::new(0u32);
    let child = crate::proc::spawn(|| task(&stop));
    let mut results = Vec::new();
    if child.is_ok() && crate::sig::set_handler(crate::sig::SIGALRM, alarm_ends_run, 0, 0).is_ok() {
        // The timer repeats: the first alarm may come while this thread still waits for the
        // CPU the task holds, before `run` has begun (one CPU).
        for _ in 0..runs {
            if sys::setitimer_real(slice_ns, slice_ns).is_err() {
                break;
            }
            results.push(run());
        }
        let _ = sys::setitimer_real(0, 0);
    }
    stop.set(1);
    let _ = sys::sched_setaffinity(0, mask);
    let pid = child.map_err(|e| format!("fork: {e:?}"))?;
    let (_, status) = sys::waitpid(pid, 0).map_err(|e| format!("waitpid: {e:?}"))?;
    if results.len() != runs {
        return Err(format!("only {} of {runs} runs started", results.len()));
    }
    if !(crate::proc::wifexited(status) && crate::proc::wexitstatus(status) == 0) {
        return Err(format!("host task: {}", crate::proc::describe(status)));
    }
    Ok(results)
}
