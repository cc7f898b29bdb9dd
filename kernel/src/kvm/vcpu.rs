//! A vCPU: a thread of the VMM that runs guest code inside KVM_RUN. Its registers while it is
//! off the CPU, its `kvm_run` page and its ioctls; KVM_RUN and the run loop are in vcpu/run.rs.

mod run;

use super::stats::VcpuStats;
use super::sve::{self, GuestSve};
use super::vm::Vm;
use super::{inject, regs};
use crate::arch::fpsimd::fpsimd::{self, FpsimdState};
use crate::arch::guest::{self, El1State, GuestRegs};
use crate::fs::{Caller, File, FileOps};
use crate::mm::aspace::MappedFile;
use crate::mm::frame::Page;
use crate::mm::uaccess::UserPtr;
use crate::task::wait::WaitQueue;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::any::Any;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};
use spin::{Mutex, MutexGuard};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, KvmOneReg, KvmVcpuInit, MmioAccess};

/// An MMIO access the VMM is completing: the register a load writes.
#[derive(Clone, Copy, Debug)]
pub struct PendingMmio {
    pub access: MmioAccess,
    /// The guest accessed the data big-endian: `kvm_run` holds it byte-swapped.
    pub big_endian: bool,
}

/// Bytes of an FP/SIMD state: V0-V31, FPSR and FPCR.
pub const FPSIMD_BYTES: usize = 32 * 16 + 8;

/// A vCPU's state while the holder of its lock (an ioctl on it) works on it.
pub struct VcpuState {
    pub inited: bool,
    pub features: u32,
    pub regs: GuestRegs,
    pub el1: El1State,
    pub fp: FpsimdState,
    /// FPMR (FEAT_FPMR), kept with the FP registers (kvm::fpmr).
    pub fpmr: u64,
    /// TCR2_EL1, PIR_EL1, PIRE0_EL1, POR_EL1, POR_EL0 where the VM has them (kvm::poe).
    pub s1: super::poe::GuestS1,
    /// The pointer-authentication keys, for a vCPU initialised with them (kvm::pauth).
    pub pauth: Option<guest::PauthKeys>,
    /// The AArch32 banked SPSRs (abt, und, irq, fiq): kept for KVM_{GET,SET}_ONE_REG only.
    pub spsr32: [u64; 4],
    pub mpidr: u64,
    /// CLIDR_EL1, the vCPU's own (a VMM may describe another cache hierarchy).
    pub clidr: u64,
    /// The PSCI version the guest is told (the firmware pseudo-register).
    pub psci_version: u64,
    /// The last exit was an MMIO load or store the VMM answers in `kvm_run`.
    pub mmio: Option<PendingMmio>,
    /// Trapped debug and PMU registers, as the guest last wrote them (read back as written,
    /// never reaching the CPU's own).
    pub shadow: BTreeMap<u32, u64>,
    /// The guest's FP/SIMD registers are live in this CPU (since its first FP access of this
    /// entry sequence); they go back to `fp` before anything else may run here.
    pub fp_live: bool,
    /// The guest's registers left the CPU (`put_fp`) and other tasks may have run here since:
    /// the next entry looks whether one left streaming mode on.
    pub put_away: bool,
    /// A virtual SError is pending (HCR_EL2.VSE, which the CPU clears when the guest takes
    /// it), with VSESR_EL2's syndrome.
    pub vse: bool,
    pub vsesr: u64,
    /// SVE, for a vCPU initialised with KVM_ARM_VCPU_SVE.
    pub sve: Option<GuestSve>,
    /// SME, for a vCPU initialised with KVM_ARM_VCPU_SME.
    pub sme: Option<super::sme::GuestSme>,
    /// The PMU, for a vCPU initialised with KVM_ARM_VCPU_PMU_V3 (kvm::pmu).
    pub pmu: Option<alloc::boxed::Box<super::pmu::GuestPmu>>,
    /// The stolen-time structure the VMM gave (KVM_ARM_VCPU_PVTIME_IPA).
    pub steal: super::pvtime::StealTime,
    /// The guest's GICv3 virtual CPU interface (list registers, VMCR, active priorities).
    pub gic: guest::VgicCpu,
    /// The priority and ID bits its ICC_CTLR_EL1 reports to the VMM (GRP_CPU_SYSREGS).
    pub gic_bits: (u32, u32),
    /// The VMM's debugging of this vCPU (KVM_SET_GUEST_DEBUG, kvm::debug).
    pub gdebug: Option<alloc::boxed::Box<super::debug::GuestDebug>>,
}

impl VcpuState {
    /// Puts the guest's live FP registers back in memory (before a switch, a sleep, the return
    /// to the VMM).
    pub fn put_fp(&mut self) {
        self.put_away = true;
        if self.fp_live {
            super::fpmr::put(self);
        }
        if self.fp_live && self.sme.is_some() {
            super::sme::put(self);
            self.fp_live = false;
        } else if self.fp_live {
            match &mut self.sve {
                Some(g) => g.put(&mut self.fp),
                None => {
                    fpsimd::save(&mut self.fp);
                    super::GUEST_FP.count(false, false, FPSIMD_BYTES);
                }
            }
            self.fp_live = false;
        }
    }
}

/// A vCPU's timer attributes (kvm_arm_timer_{set,get,has}_attr): the timers' PPIs, which
/// can be read; setting them needs the in-kernel vGIC (EINVAL without one, as Linux).
fn timer_attr(cmd: u32, a: &k::KvmDeviceAttr) -> SysResult<usize> {
    let ppi = match (a.group, a.attr) {
        (k::KVM_ARM_VCPU_TIMER_CTRL, k::KVM_ARM_VCPU_TIMER_IRQ_VTIMER) => k::DEFAULT_VTIMER_PPI,
        (k::KVM_ARM_VCPU_TIMER_CTRL, k::KVM_ARM_VCPU_TIMER_IRQ_PTIMER) => k::DEFAULT_PTIMER_PPI,
        _ => return Err(Errno::ENXIO),
    };
    match cmd {
        k::KVM_HAS_DEVICE_ATTR => Ok(0),
        k::KVM_GET_DEVICE_ATTR => {
            UserPtr::<u32>::new(a.addr as usize).write(&ppi)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `Vcpu::running_on` while no CPU runs the vCPU's guest code.
const NOT_IN_GUEST: usize = usize::MAX;

pub struct Vcpu {
    pub id: u32,
    /// The `kvm_run` page the VMM maps, and after it the VM's coalesced MMIO ring.
    pub run: Page,
    ring: Page,
    state: Mutex<VcpuState>,
    /// Where ioctls wait for the state's lock (KVM's vcpu->mutex).
    lockq: WaitQueue,
    /// Where a vCPU in WFI or powered off waits; `kicked` says something happened.
    pub wake: WaitQueue,
    pub kicked: AtomicBool,
    /// The CPU running this vCPU's guest code (from just before the entry, with interrupts
    /// masked, to just after the exit), or NOT_IN_GUEST: where a kick sends its IPI.
    running_on: AtomicUsize,
    /// Something for the guest changed since the run loop last looked (a kick): the entry
    /// about to happen is abandoned and the loop goes round again (Linux's vcpu->requests
    /// checked after IN_GUEST_MODE).
    request: AtomicBool,
    /// The vCPU's IRQ (bit 0) and FIQ (bit 1) inputs, for a VM without an in-kernel GIC
    /// (KVM_IRQ_LINE with KVM_ARM_IRQ_TYPE_CPU): HCR_EL2.VI and VF while the guest runs.
    irq_lines: AtomicU32,
    /// Powered off, and a pending CPU_ON; apart from the state's lock, which the vCPU's own
    /// KVM_RUN holds while another vCPU powers it on.
    pub power: Mutex<Power>,
    /// The thread that created the vCPU (its statistics' id), and the statistics.
    pub creator: u32,
    pub stats: VcpuStats,
    /// Its dirty ring, when the VM has rings (dirty_ring.rs).
    pub dring: spin::Once<Arc<super::dirty_ring::Ring>>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Power {
    pub off: bool,
    /// KVM_SET_MP_STATE(SUSPENDED) (a VMM's PSCI SYSTEM_SUSPEND): until the VMM makes it
    /// runnable, each KVM_RUN waits as a WFI and ends with KVM_SYSTEM_EVENT_WAKEUP once an
    /// interrupt is pending (Linux's kvm_vcpu_suspend). Meaningless while `off`; CPU_ON and
    /// every other MP state clear it.
    pub suspended: bool,
    /// CPU_ON's entry point and context ID, applied when the vCPU next runs.
    pub on: Option<(u64, u64)>,
}

/// The lock on a vCPU's state; dropping it lets the next waiter in.
pub struct StateGuard<'a> {
    g: Option<MutexGuard<'a, VcpuState>>,
    q: &'a WaitQueue,
}

impl Deref for StateGuard<'_> {
    type Target = VcpuState;
    fn deref(&self) -> &VcpuState {
        self.g.as_ref().expect("held")
    }
}

impl DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut VcpuState {
        self.g.as_mut().expect("held")
    }
}

impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        drop(self.g.take());
        self.q.wake_all();
    }
}

/// The MPIDR KVM gives vCPU `id`: Aff0 = id % 16, Aff1 and Aff2 the next bits, bit 31 RES1.
pub fn mpidr_for(id: u32) -> u64 {
    let id = id as u64;
    (1 << 31) | (id & 0xf) | (((id >> 4) & 0xff) << 8) | (((id >> 12) & 0xff) << 16)
}

/// PSTATE at reset and after KVM_ARM_VCPU_INIT: EL1h with D, A, I and F masked.
pub const PSTATE_RESET: u64 = 0x3c5;
/// SCTLR_EL1 at reset: MMU and caches off, the RES1 bits.
const SCTLR_RESET: u64 = 0x30d0_0800;

impl Vcpu {
    pub fn new(cur: &dyn Caller, id: u32, clidr: u64, ring: Page) -> SysResult<Arc<Vcpu>> {
        let run = Page::new_user().ok_or(Errno::ENOMEM)?;
        Ok(Arc::new(Vcpu {
            id,
            run,
            ring,
            state: Mutex::new(VcpuState {
                inited: false,
                features: 0,
                regs: GuestRegs::default(),
                el1: El1State::default(),
                fp: FpsimdState::default(),
                fpmr: 0,
                s1: Default::default(),
                pauth: None,
                pmu: None,
                spsr32: [0; 4],
                mpidr: mpidr_for(id),
                clidr,
                psci_version: k::PSCI_VERSION_1_3,
                mmio: None,
                shadow: BTreeMap::new(),
                fp_live: false,
                put_away: true,
                vse: false,
                vsesr: 0,
                sve: None,
                sme: None,
                steal: Default::default(),
                gic: guest::VgicCpu::default(),
                gic_bits: {
                    let c = svelt_abi::uapi::kvm_vgic_sysregs::CpuIf::new(
                        guest::ich_vtr().unwrap_or(0),
                    );
                    (c.pri_bits, c.id_bits)
                },
                gdebug: None,
            }),
            lockq: WaitQueue::new(),
            wake: WaitQueue::new(),
            kicked: AtomicBool::new(false),
            running_on: AtomicUsize::new(NOT_IN_GUEST),
            request: AtomicBool::new(false),
            irq_lines: AtomicU32::new(0),
            power: Mutex::new(Power::default()),
            creator: cur.core().tid,
            stats: VcpuStats::new(),
            dring: spin::Once::new(),
        }))
    }

    /// Takes the state's lock, sleeping while another ioctl holds it; EINTR if the caller is
    /// killed meanwhile.
    pub fn lock(&self) -> SysResult<StateGuard<'_>> {
        let g = self
            .lockq
            .wait_uninterruptible(|| self.state.try_lock())
            .ok_or(Errno::EINTR)?;
        Ok(StateGuard {
            g: Some(g),
            q: &self.lockq,
        })
    }

    /// The state's lock if no one holds it (a VMM's access to the vGIC's CPU registers, which
    /// is EBUSY while a vCPU runs or another ioctl has it, as Linux's kvm_trylock_all_vcpus).
    pub fn try_lock(&self) -> Option<StateGuard<'_>> {
        let g = self.state.try_lock()?;
        Some(StateGuard {
            g: Some(g),
            q: &self.lockq,
        })
    }

    pub fn run_write(&self, off: usize, bytes: &[u8]) {
        self.run.writer().write(off, bytes);
    }

    pub fn run_read<const N: usize>(&self, off: usize) -> [u8; N] {
        let mut b = [0u8; N];
        self.run.reader().read(off, &mut b);
        b
    }

    pub fn set_exit_reason(&self, reason: u32) {
        self.run_write(k::run::EXIT_REASON, &reason.to_le_bytes());
    }

    fn init(&self, vm: &Vm, st: &mut VcpuState, init: &KvmVcpuInit) -> SysResult<usize> {
        let sve_bit = 1 << svelt_abi::uapi::kvm_sve::KVM_ARM_VCPU_SVE;
        let sme_bit = 1 << svelt_abi::uapi::kvm_sme::KVM_ARM_VCPU_SME;
        let offered = (1 << k::KVM_ARM_VCPU_POWER_OFF)
            | (1 << k::KVM_ARM_VCPU_PSCI_0_2)
            | if super::aarch32::offered() {
                1 << k::KVM_ARM_VCPU_EL1_32BIT
            } else {
                0
            }
            | if sve::offered() { sve_bit } else { 0 }
            | if super::sme::offered() { sme_bit } else { 0 }
            | if super::pmu::offered() {
                1 << k::KVM_ARM_VCPU_PMU_V3
            } else {
                0
            }
            | if super::pauth::offered() {
                super::pauth::FEATURES
            } else {
                0
            };
        let asked = super::sme::check_init(init, offered)?;
        // POWER_OFF belongs to this call only; the rest is the VM's, the same for every vCPU
        // and every re-init (kvm_vcpu_set_target, kvm_vcpu_init_changed).
        let power_off = asked & (1 << k::KVM_ARM_VCPU_POWER_OFF) != 0;
        let features = asked & !(1 << k::KVM_ARM_VCPU_POWER_OFF);
        let first_in_vm = {
            let mut vm_features = vm.vcpu_features.lock();
            if vm_features.is_some_and(|f| f != features) {
                return Err(Errno::EINVAL);
            }
            vm_features.replace(features).is_none()
        };
        st.features = features;
        // SVE: every host length until the VMM chooses (and finalizes); a finalized vCPU's
        // registers back to zero (kvm_reset_vcpu).
        match (&mut st.sve, features & sve_bit != 0) {
            (Some(g), true) if g.finalized() => g.reset(),
            (g, true) => *g = Some(GuestSve::new()),
            (g, false) => *g = None,
        }
        super::sme::init(st, features & sme_bit != 0);
        super::pauth::init(st, features);
        super::pmu::init(
            vm,
            st,
            features & (1 << k::KVM_ARM_VCPU_PMU_V3) != 0,
            first_in_vm,
        );
        // The VM's ID registers follow its features once, at its first vCPU's init (a VMM's
        // later writes stay).
        if first_in_vm {
            sve::init_id_regs(vm, features & sve_bit != 0);
            super::sme::init_id_regs(vm, features & sme_bit != 0);
            super::pauth::init_id_regs(vm, st.pauth.is_some());
        }
        st.regs = GuestRegs {
            pstate: PSTATE_RESET,
            ..GuestRegs::default()
        };
        super::aarch32::reset(st);
        st.el1 = El1State {
            sctlr: SCTLR_RESET,
            ..El1State::default()
        };
        st.fp = FpsimdState::default();
        st.fpmr = 0;
        st.s1 = Default::default();
        st.spsr32 = [0; 4];
        st.shadow.clear();
        super::regs::reset_shadow(st);
        st.mmio = None;
        st.vse = false;
        st.vsesr = 0;
        st.gic = guest::VgicCpu::default();
        *self.power.lock() = Power {
            off: power_off,
            suspended: false,
            on: None,
        };
        if !st.inited {
            // The newest PSCI with KVM_ARM_VCPU_PSCI_0_2, KVM's 0.1 without; a VMM's choice
            // (KVM_REG_ARM_PSCI_VERSION) survives a re-init.
            st.psci_version = if features & (1 << k::KVM_ARM_VCPU_PSCI_0_2) != 0 {
                k::PSCI_VERSION_1_3
            } else {
                k::PSCI_VERSION_0_1
            };
        }
        st.inited = true;
        Ok(0)
    }

    /// A CPU_ON another vCPU made for this one: the reset state, at the entry point with the
    /// context in x0. Applied before this vCPU runs or its registers are read or written
    /// (KVM_REQ_VCPU_RESET), so that the VMM sees what the guest will.
    fn take_cpu_on(&self, st: &mut VcpuState) {
        let on = self.power.lock().on.take();
        if let Some((entry, context)) = on {
            self.apply_cpu_on(st, entry, context);
        }
    }

    /// The reset state of a CPU_ON (`take_cpu_on`; the run loop takes `on` itself).
    #[cold]
    fn apply_cpu_on(&self, st: &mut VcpuState, entry: u64, context: u64) {
        st.regs = GuestRegs {
            pstate: PSTATE_RESET,
            pc: entry,
            ..GuestRegs::default()
        };
        st.regs.x[0] = context;
        super::aarch32::cpu_on(st);
        st.el1 = El1State {
            sctlr: SCTLR_RESET,
            ..El1State::default()
        };
    }
}

/// A vCPU's file: `anon_inode:kvm-vcpu:N`.
pub struct VcpuFile {
    pub vm: Arc<Vm>,
    pub vcpu: Arc<Vcpu>,
}

impl MappedFile for Vcpu {
    fn cache_page(&self, index: u64) -> SysResult<Page> {
        if index == 0 {
            Ok(self.run.clone())
        } else if index == k::KVM_COALESCED_MMIO_PAGE_OFFSET as u64 {
            Ok(self.ring.clone())
        } else if let Some(p) = super::dirty_ring::page(self, index) {
            Ok(p)
        } else {
            Err(Errno::EFAULT)
        }
    }
    fn file_ino(&self) -> u64 {
        0
    }
    fn file_perm(&self) -> u32 {
        0o600
    }
}

impl FileOps for VcpuFile {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn ioctl_as(
        &self,
        _file: &Arc<File>,
        cur: &dyn Caller,
        cmd: u32,
        arg: usize,
    ) -> SysResult<usize> {
        let mm = self.vm.check_caller(cur)?;
        let vcpu = &self.vcpu;
        match cmd {
            k::KVM_RUN => {
                if arg != 0 {
                    return Err(Errno::EINVAL);
                }
                vcpu.run_ioctl(&self.vm, &mm, cur.core())
            }
            k::KVM_ARM_VCPU_INIT => {
                let init = UserPtr::<KvmVcpuInit>::new(arg).read()?;
                let mut st = vcpu.lock()?;
                vcpu.init(&self.vm, &mut st, &init)
            }
            k::KVM_GET_ONE_REG | k::KVM_SET_ONE_REG => {
                let r = UserPtr::<KvmOneReg>::new(arg).read()?;
                let mut st = vcpu.lock()?;
                if !st.inited {
                    return Err(Errno::ENOEXEC);
                }
                vcpu.take_cpu_on(&mut st);
                if cmd == k::KVM_GET_ONE_REG {
                    regs::get(&self.vm, &st, &r)
                } else {
                    regs::set(&self.vm, &mut st, &r)
                }
            }
            // The vCPU's attribute groups: timers and stolen time (no PMU: ENXIO).
            k::KVM_SET_DEVICE_ATTR | k::KVM_GET_DEVICE_ATTR | k::KVM_HAS_DEVICE_ATTR => {
                let a = UserPtr::<k::KvmDeviceAttr>::new(arg).read()?;
                if a.group == svelt_abi::uapi::kvm_services::KVM_ARM_VCPU_PVTIME_CTRL {
                    let mut st = vcpu.lock()?;
                    return super::pvtime::attr(&self.vm, &mut st, cmd, &a);
                }
                if a.group == svelt_abi::uapi::kvm_pmu::KVM_ARM_VCPU_PMU_V3_CTRL {
                    let mut st = vcpu.lock()?;
                    return super::pmu::attr(&self.vm, vcpu.id, &mut st, cmd, &a);
                }
                timer_attr(cmd, &a)
            }
            k::KVM_GET_REG_LIST => {
                let st = vcpu.lock()?;
                if !st.inited {
                    return Err(Errno::ENOEXEC);
                }
                super::sme::check_finalized(&st)?;
                regs::list(&self.vm, &st, arg)
            }
            svelt_abi::uapi::kvm_sve::KVM_ARM_VCPU_FINALIZE => {
                let mut st = vcpu.lock()?;
                if !st.inited {
                    return Err(Errno::ENOEXEC);
                }
                let what = UserPtr::<i32>::new(arg).read()?;
                super::sme::finalize(&mut st, what)
            }
            k::KVM_GET_MP_STATE => {
                let p = vcpu.power.lock();
                let s = if p.off {
                    k::KVM_MP_STATE_STOPPED
                } else if p.suspended {
                    k::KVM_MP_STATE_SUSPENDED
                } else {
                    k::KVM_MP_STATE_RUNNABLE
                };
                drop(p);
                UserPtr::<u32>::new(arg).write(&s)?;
                Ok(0)
            }
            k::KVM_SET_MP_STATE => {
                let s = UserPtr::<u32>::new(arg).read()?;
                // arm64's three (kvm_arch_vcpu_ioctl_set_mpstate).
                let (off, suspended) = match s {
                    k::KVM_MP_STATE_RUNNABLE => (false, false),
                    k::KVM_MP_STATE_STOPPED => (true, false),
                    k::KVM_MP_STATE_SUSPENDED => (false, true),
                    _ => return Err(Errno::EINVAL),
                };
                let mut p = vcpu.power.lock();
                p.off = off;
                p.suspended = suspended;
                drop(p);
                vcpu.kick();
                Ok(0)
            }
            k::KVM_GET_VCPU_EVENTS | k::KVM_SET_VCPU_EVENTS => {
                let mut st = vcpu.lock()?;
                inject::check_inited(&st)?;
                vcpu.take_cpu_on(&mut st);
                if cmd == k::KVM_GET_VCPU_EVENTS {
                    inject::get_events(&st, arg)
                } else {
                    inject::set_events(&self.vm, &mut st, arg)
                }
            }
            k::KVM_CHECK_EXTENSION => Ok(super::check_extension(arg as u64)),
            svelt_abi::uapi::kvm_debug::KVM_SET_GUEST_DEBUG => {
                let mut st = vcpu.lock()?;
                super::debug::set_guest_debug(&mut st, arg)
            }
            k::KVM_GET_STATS_FD => super::stats::vcpu_fd(cur, vcpu),
            _ => Err(Errno::ENOTTY),
        }
    }
    fn ioctl(&self, _cur: &dyn Caller, _file: &File, _cmd: u32, _arg: usize) -> SysResult<usize> {
        Err(Errno::ENOTTY)
    }
    fn mmap_file(&self) -> Option<Arc<dyn MappedFile>> {
        Some(self.vcpu.clone())
    }
    fn mmap_check(&self, pgoff: u64, pages: u64, exec: bool, shared: bool) -> SysResult<()> {
        // KVM's files live on the anon-inode mount, which is noexec (do_mmap's path_noexec).
        if exec {
            return Err(Errno::EPERM);
        }
        super::dirty_ring::mmap_check(&self.vcpu, pgoff, pages, exec, shared)
    }
    fn poll(&self, _cur: &dyn Caller) -> u32 {
        0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
