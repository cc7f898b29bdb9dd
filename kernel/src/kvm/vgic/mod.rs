//! The in-kernel vGICv3 device (KVM_CREATE_DEVICE with KVM_DEV_TYPE_ARM_VGIC_V3): its
//! configuration (where the distributor and the redistributors sit in guest physical space,
//! how many interrupts the distributor has, the initialisation) as the VMM sets and reads it
//! through the device's attributes, with Linux's rules (`abi::uapi::kvm_vgic`) and the checks
//! of the first KVM_RUN; the registers behind those frames (`mmio`); the interrupts and their
//! delivery through the list registers (`irq`); KVM_IRQ_LINE, SGIs, the guest timers' PPIs and
//! the run loop's hooks (`deliver`).

mod deliver;
mod irq;
pub mod its;
mod mmio;

pub use deliver::{
    after_exit, before_entry, dir, irq_line, mmio_access, nr_spis, pending, run_start, set_spi,
    sgi, wfi_wake,
};

use super::vcpu::Vcpu;
use super::vm::Vm;
use crate::fs::{Caller, File, FileOps};
use crate::mm::uaccess::UserPtr;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::Ordering;
use deliver::kick_all;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, KvmDeviceAttr};
use svelt_abi::uapi::kvm_vgic::{self as g, RedistRegion, VgicV3Config};
use svelt_abi::uapi::kvm_vgic_sysregs as sr;

/// A VM's vGICv3: its configuration and redistributor regions, in index order.
#[derive(Default)]
pub struct Vgic {
    pub cfg: VgicV3Config,
    pub regions: Vec<RedistRegion>,
    /// Each region's next free redistributor (Linux's free_index).
    free: Vec<u32>,
    /// Each vCPU's redistributor (by vCPU id): its region's position and slot there.
    placed: BTreeMap<u32, (usize, u32)>,
    /// The first KVM_RUN's checks passed (Linux's vgic_ready).
    pub ready: bool,
    /// GICD_CTLR.EnableGrp1 (KVM's one distributor enable).
    pub enabled: bool,
    /// The SPIs (from INTID 32), made at the initialisation. Changed only through `irq_mut`,
    /// which marks them `spis_busy`.
    spis: Vec<irq::Irq>,
    /// Some SPI may be pending or active: set by each `irq_mut` of an SPI, cleared by
    /// `settle_spis` once a walk finds none. While it is clear, the walks the run loop makes
    /// at each entry and exit (`flush`, `pending_for`, `fold`) leave the SPIs out.
    spis_busy: bool,
    /// Each vCPU's SGIs and PPIs, by vCPU id.
    pub private: irq::Privates,
    /// The VM's ITSes (`its`), in creation order: with one, the redistributors have LPIs.
    pub its: Vec<its::Its>,
    /// The LPIs the ITSes mapped, by INTID (each exists while one event maps to it).
    lpis: BTreeMap<u32, irq::Irq>,
    /// GICR_PROPBASER, one for every redistributor (as Linux keeps it).
    pub propbaser: u64,
    /// Each vCPU's GICR_CTLR.EnableLPIs and GICR_PENDBASER, by vCPU id.
    pub rd_lpi: BTreeMap<u32, (bool, u64)>,
    /// The vCPU whose GICR_CTLR.EnableLPIs a write just turned on: its caller syncs the
    /// LPIs from the pending table once the lock is dropped (`its::pending::sync_on_enable`).
    pub lpis_turned_on: Option<u32>,
}

impl Vgic {
    /// Gives vCPU `id` the first free redistributor, if any region has one
    /// (vgic_register_redist_iodev): the frames must then be apart (EINVAL).
    fn place(&mut self, id: u32, nr_vcpus: u32, ipa_bits: u32) -> SysResult<()> {
        if self.placed.contains_key(&id) {
            return Ok(());
        }
        let Some(pos) = self
            .regions
            .iter()
            .zip(&self.free)
            .position(|(r, &f)| r.count == 0 || f < r.count)
        else {
            return Ok(());
        };
        if !self
            .cfg
            .frames_apart(self.regions.iter(), nr_vcpus, ipa_bits)
        {
            return Err(Errno::EINVAL);
        }
        self.placed.insert(id, (pos, self.free[pos]));
        self.free[pos] += 1;
        Ok(())
    }

    /// Whether vCPU `id`'s redistributor is the last of a contiguous run of frames
    /// (vgic_mmio_vcpu_rdist_is_last).
    fn is_last(&self, id: u32) -> bool {
        let Some(&(pos, slot)) = self.placed.get(&id) else {
            return false;
        };
        let (r, free) = (&self.regions[pos], self.free[pos]);
        if slot + 1 < free {
            return false;
        }
        if r.count != 0 && slot == r.count - 1 {
            let end = r.base + r.count as u64 * g::REDIST_SIZE;
            let next_used = self
                .regions
                .iter()
                .zip(&self.free)
                .any(|(o, &f)| o.base == end && f > 0);
            return !next_used;
        }
        true
    }
}

/// A new vCPU of a VM with a vGICv3 takes a redistributor (kvm_vgic_vcpu_init). The frames
/// are checked as the VM stood before it: a legacy region covers the vCPUs already online.
pub fn vcpu_created(vm: &Vm, id: u32) -> SysResult<()> {
    let n = (vm.vcpus.lock().len() as u32).saturating_sub(1);
    match vm.vgic.lock().as_mut() {
        Some(v) => v.place(id, n, vm.ipa_bits),
        None => Ok(()),
    }
}

/// What reads of an address not set yet give (VGIC_ADDR_UNDEF).
const ADDR_UNDEF: u64 = u64::MAX;

/// KVM_CREATE_DEVICE for the vGICv3 (kvm_vgic_create): one per VM (EEXIST), not once a vCPU
/// has run (EBUSY). `test`: only asks whether the type exists.
pub fn create(vm: &Arc<Vm>, test: bool) -> SysResult<Option<Arc<File>>> {
    if test {
        return Ok(None);
    }
    let mut vgic = vm.vgic.lock();
    if vgic.is_some() {
        return Err(Errno::EEXIST);
    }
    if vm.ran.load(Ordering::Relaxed) {
        return Err(Errno::EBUSY);
    }
    *vgic = Some(Vgic::default());
    let ops = Arc::new(VgicFile { vm: vm.clone() });
    Ok(Some(File::new(
        None,
        ops,
        svelt_abi::uapi::fs::O_RDWR,
        "anon_inode:kvm-arm-vgic-v3".into(),
    )))
}

/// The first KVM_RUN of a VM with a vGICv3 (vgic_v3_map_resources): every vCPU has a
/// redistributor and the distributor is placed (ENXIO), the frames do not collide (EINVAL),
/// the VMM initialised the device (EBUSY). A failure kills the VM.
pub fn first_run(vm: &Vm) -> SysResult<()> {
    let ids: Vec<u32> = vm.vcpus.lock().iter().map(|c| c.id).collect();
    let n = ids.len() as u32;
    let mut vgic = vm.vgic.lock();
    let Some(v) = vgic.as_mut() else {
        // Without a vGIC the guest has no GIC CPU interface: its ID register says so from
        // the first run on (kvm_finalize_sys_regs), and its accesses to the ICC registers
        // are UNDEFINED (`deliver::before_entry`).
        let pfr0 = 3 * 8; // ID_AA64PFR0_EL1: CRm 4, op2 0
        vm.id_regs.lock()[pfr0] &= !svelt_abi::uapi::kvm::ID_AA64PFR0_GIC;
        return Ok(());
    };
    if v.ready {
        return Ok(());
    }
    let placed = ids.iter().all(|id| v.placed.contains_key(id));
    if let Err(e) = v.cfg.check_base(&v.regions, placed, n, vm.ipa_bits) {
        // A VM whose vGIC cannot be mapped is dead (kvm_vgic_map_resources).
        vm.dead.store(true, Ordering::Relaxed);
        return Err(e);
    }
    v.ready = true;
    Ok(())
}

/// Whether KVM_CREATE_VCPU must fail: the vGIC is initialised (kvm_arch_vcpu_precreate).
pub fn refuses_vcpus(vm: &Vm) -> bool {
    vm.vgic.lock().as_ref().is_some_and(|v| v.cfg.initialized)
}

/// The offset inside its frame of a register attribute's offset (an SGI frame's registers
/// follow the redistributor's control frame).
fn frame_off(frame: mmio::Frame, attr: u64) -> u64 {
    let off = attr & 0xffff_ffff;
    match frame {
        mmio::Frame::Sgi(_) => off - g::DIST_SIZE,
        _ => off,
    }
}

/// The device's file.
struct VgicFile {
    vm: Arc<Vm>,
}

impl VgicFile {
    /// The vCPU and first INTID of a GRP_LEVEL_INFO attribute (vgic_v3_line_level_info_uaccess):
    /// the vCPU by affinity (EINVAL), the initialisation (EBUSY), line levels only and an
    /// INTID that is a multiple of 32 (EINVAL).
    fn level_info_target(&self, v: &Vgic, a: &KvmDeviceAttr) -> SysResult<(u32, u32)> {
        let redist = KvmDeviceAttr {
            group: g::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS,
            attr: a.attr & !0xffff_ffff,
            ..*a
        };
        let mmio::Frame::Rd(vcpu) = self.regs_frame(v, &redist)? else {
            return Err(Errno::EINVAL);
        };
        let intid = (a.attr & g::LEVEL_INFO_INTID_MASK) as u32;
        if (a.attr & g::LEVEL_INFO_MASK) >> g::LEVEL_INFO_SHIFT != 0 || !intid.is_multiple_of(32) {
            return Err(Errno::EINVAL);
        }
        Ok((vcpu, intid))
    }

    /// The frame a GRP_DIST_REGS or GRP_REDIST_REGS attribute names (vgic_v3_parse_attr):
    /// a redistributor's vCPU by affinity (EINVAL if none); then the device must be
    /// initialised (EBUSY).
    fn regs_frame(&self, v: &Vgic, a: &KvmDeviceAttr) -> SysResult<mmio::Frame> {
        let frame = if a.group == g::KVM_DEV_ARM_VGIC_GRP_DIST_REGS {
            mmio::Frame::Dist
        } else {
            let aff = a.attr >> 32;
            let mpidr = ((aff & 0xff00_0000) << 8) | (aff & 0xff_ffff);
            let vcpu = self
                .vm
                .vcpus
                .lock()
                .iter()
                .find(|c| super::vcpu::mpidr_for(c.id) & 0xff_00ff_ffff == mpidr)
                .map(|c| c.id)
                .ok_or(Errno::EINVAL)?;
            if a.attr & 0xffff_ffff < g::DIST_SIZE {
                mmio::Frame::Rd(vcpu)
            } else {
                mmio::Frame::Sgi(vcpu)
            }
        };
        // GICD_IIDR and GICD_TYPER2 are the VMM's to choose before INIT
        // (reg_allowed_pre_init).
        let pre_init = frame == mmio::Frame::Dist
            && matches!(
                frame_off(frame, a.attr),
                mmio::GICD_IIDR | mmio::GICD_TYPER2
            );
        if !v.cfg.initialized && !pre_init {
            return Err(Errno::EBUSY);
        }
        Ok(frame)
    }

    /// The vCPU a GRP_CPU_SYSREGS attribute names by affinity (vgic_v3_parse_attr: EINVAL
    /// if none).
    fn sysregs_vcpu(&self, a: &KvmDeviceAttr) -> SysResult<Arc<Vcpu>> {
        let aff = a.attr >> 32;
        let mpidr = ((aff & 0xff00_0000) << 8) | (aff & 0xff_ffff);
        self.vm
            .vcpus
            .lock()
            .iter()
            .find(|c| super::vcpu::mpidr_for(c.id) & 0xff_00ff_ffff == mpidr)
            .cloned()
            .ok_or(Errno::EINVAL)
    }

    /// KVM_GET/SET_DEVICE_ATTR of GRP_CPU_SYSREGS (vgic_v3_attr_regs_access and
    /// vgic_v3_cpu_sysregs_uaccess): the vCPU (EINVAL), a write's value (EFAULT), every vCPU
    /// idle (EBUSY), the vGIC initialised (EBUSY), then the register (ENOENT, EINVAL).
    fn cpu_sysregs(&self, a: &KvmDeviceAttr, write: bool) -> SysResult<usize> {
        let vcpu = self.sysregs_vcpu(a)?;
        let ptr = UserPtr::<u64>::new(a.addr as usize);
        let val = if write { ptr.read()? } else { 0 };
        let vcpus: Vec<Arc<Vcpu>> = self.vm.vcpus.lock().clone();
        let mut guards = Vec::new();
        guards.try_reserve(vcpus.len()).map_err(|_| Errno::ENOMEM)?;
        for c in &vcpus {
            guards.push((c.id, c.try_lock().ok_or(Errno::EBUSY)?));
        }
        if !self
            .vm
            .vgic
            .lock()
            .as_ref()
            .is_some_and(|v| v.cfg.initialized)
        {
            return Err(Errno::EBUSY);
        }
        let st = &mut guards
            .iter_mut()
            .find(|(id, _)| *id == vcpu.id)
            .ok_or(Errno::EINVAL)?
            .1;
        let vtr = crate::arch::guest::ich_vtr().unwrap_or(0);
        let mut c = sr::CpuIf {
            vmcr: st.gic.vmcr,
            ap0r: st.gic.ap0r,
            ap1r: st.gic.ap1r,
            pri_bits: st.gic_bits.0,
            id_bits: st.gic_bits.1,
        };
        let reg = (a.attr & sr::SYSREG_MASK) as u16;
        if write {
            let r = sr::set(&mut c, vtr, reg, val);
            // A failed ICC_CTLR_EL1 write may have taken its priority bits (as Linux's).
            st.gic.vmcr = c.vmcr;
            st.gic.ap0r = c.ap0r;
            st.gic.ap1r = c.ap1r;
            st.gic_bits = (c.pri_bits, c.id_bits);
            r?;
        } else {
            let v = sr::get(&c, vtr, reg)?;
            drop(guards);
            ptr.write(&v)?;
        }
        Ok(0)
    }

    /// GRP_CTRL SAVE_PENDING_TABLES (QEMU's save when its VM stops; Linux's
    /// vgic_v3_save_pending_tables): every vCPU idle (EBUSY), the vGIC initialised (ENXIO);
    /// then each LPI's pending bit goes to its redistributor's table (`its::pending::save`).
    fn save_pending_tables(&self) -> SysResult<usize> {
        let vcpus: Vec<Arc<Vcpu>> = self.vm.vcpus.lock().clone();
        let mut guards = Vec::new();
        guards.try_reserve(vcpus.len()).map_err(|_| Errno::ENOMEM)?;
        for c in &vcpus {
            guards.push(c.try_lock().ok_or(Errno::EBUSY)?);
        }
        let initialized = self
            .vm
            .vgic
            .lock()
            .as_ref()
            .is_some_and(|v| v.cfg.initialized);
        if !initialized {
            return Err(Errno::ENXIO);
        }
        its::pending::save(&self.vm)?;
        Ok(0)
    }

    fn has(&self, a: &KvmDeviceAttr) -> SysResult<usize> {
        match (a.group, a.attr) {
            (g::KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS, attr) => {
                self.sysregs_vcpu(a)?;
                if sr::known((attr & sr::SYSREG_MASK) as u16) {
                    Ok(0)
                } else {
                    Err(Errno::ENXIO)
                }
            }
            (
                g::KVM_DEV_ARM_VGIC_GRP_ADDR,
                g::KVM_VGIC_V3_ADDR_TYPE_DIST
                | g::KVM_VGIC_V3_ADDR_TYPE_REDIST
                | g::KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION,
            )
            | (g::KVM_DEV_ARM_VGIC_GRP_NR_IRQS, _)
            | (
                g::KVM_DEV_ARM_VGIC_GRP_CTRL,
                g::KVM_DEV_ARM_VGIC_CTRL_INIT | g::KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES,
            ) => Ok(0),
            (g::KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO, attr) => {
                if (attr & g::LEVEL_INFO_MASK) >> g::LEVEL_INFO_SHIFT == 0 {
                    Ok(0)
                } else {
                    Err(Errno::ENXIO)
                }
            }
            (g::KVM_DEV_ARM_VGIC_GRP_DIST_REGS | g::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, _) => {
                // Whether a register is there (vgic_v3_has_attr_regs), seen from the first
                // vCPU's redistributor for the redistributor's.
                let mut guard = self.vm.vgic.lock();
                let v = guard.as_mut().ok_or(Errno::ENODEV)?;
                let off = a.attr & 0xffff_ffff;
                let frame = if a.group == g::KVM_DEV_ARM_VGIC_GRP_DIST_REGS {
                    mmio::Frame::Dist
                } else if off < g::DIST_SIZE {
                    mmio::Frame::Rd(0)
                } else {
                    mmio::Frame::Sgi(0)
                };
                let off = if matches!(frame, mmio::Frame::Sgi(_)) {
                    off - g::DIST_SIZE
                } else {
                    off
                };
                v.read32(frame, off).map(|_| 0).ok_or(Errno::ENXIO)
            }
            _ => Err(Errno::ENXIO),
        }
    }

    fn set(&self, a: &KvmDeviceAttr) -> SysResult<usize> {
        if a.group == g::KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS {
            return self.cpu_sysregs(a, true);
        }
        if (a.group, a.attr)
            == (
                g::KVM_DEV_ARM_VGIC_GRP_CTRL,
                g::KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES,
            )
        {
            return self.save_pending_tables();
        }
        let vm = &self.vm;
        let ids: Vec<u32> = vm.vcpus.lock().iter().map(|c| c.id).collect();
        let n = ids.len() as u32;
        let mut guard = vm.vgic.lock();
        let v = guard.as_mut().ok_or(Errno::ENODEV)?;
        match (a.group, a.attr) {
            (g::KVM_DEV_ARM_VGIC_GRP_ADDR, attr) => {
                let addr = UserPtr::<u64>::new(a.addr as usize).read()?;
                let new = match attr {
                    g::KVM_VGIC_V3_ADDR_TYPE_DIST => {
                        v.cfg.set_dist(addr, vm.ipa_bits)?;
                        return Ok(0);
                    }
                    g::KVM_VGIC_V3_ADDR_TYPE_REDIST => RedistRegion {
                        index: 0,
                        base: addr,
                        count: 0,
                    },
                    g::KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION => {
                        let (index, flags, base, count) = g::decode_region_attr(addr);
                        if count == 0 || flags != 0 {
                            return Err(Errno::EINVAL);
                        }
                        RedistRegion { index, base, count }
                    }
                    _ => return Err(Errno::ENXIO),
                };
                let unplaced = (n as u64).saturating_sub(g::redist_slots(&v.regions, n)) as u32;
                v.cfg
                    .add_redist_region(&v.regions, new, n, unplaced, vm.ipa_bits)?;
                v.regions.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                v.free.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                v.regions.push(new);
                v.free.push(0);
                // The vCPUs without a redistributor take theirs, in creation order; if the
                // frames collide the region goes again (vgic_v3_set_redist_base).
                let before = v.placed.clone();
                for &id in &ids {
                    if let Err(e) = v.place(id, n, vm.ipa_bits) {
                        v.regions.pop();
                        v.free.pop();
                        v.placed = before;
                        return Err(e);
                    }
                }
                Ok(0)
            }
            (g::KVM_DEV_ARM_VGIC_GRP_NR_IRQS, _) => {
                let val = UserPtr::<u32>::new(a.addr as usize).read()?;
                v.cfg.set_nr_irqs(val)?;
                Ok(0)
            }
            (g::KVM_DEV_ARM_VGIC_GRP_CTRL, g::KVM_DEV_ARM_VGIC_CTRL_INIT) => {
                let first = !v.cfg.initialized;
                v.cfg.init();
                v.alloc_spis();
                let nr_spis = v.cfg.nr_spis;
                drop(guard);
                // The routing is reset to GSI N to SPI N (vgic_init).
                if first {
                    crate::kvm::eventfd::default_routes(vm, nr_spis);
                }
                Ok(0)
            }
            (g::KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO, _) => {
                let val = UserPtr::<u32>::new(a.addr as usize).read()?;
                let (vcpu, intid) = self.level_info_target(v, a)?;
                for i in 0..32 {
                    // Past the last interrupt there is nothing to set.
                    if v.set_line(vcpu, intid + i, val & (1 << i) != 0).is_none() {
                        break;
                    }
                }
                drop(guard);
                kick_all(vm);
                Ok(0)
            }
            (g::KVM_DEV_ARM_VGIC_GRP_DIST_REGS | g::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, _) => {
                let frame = self.regs_frame(v, a)?;
                let val = UserPtr::<u32>::new(a.addr as usize).read()?;
                let off = frame_off(frame, a.attr);
                // GICD_TYPER2 is read-only to the guest; the VMM may only write back what it
                // reads (vgic_mmio_uaccess_write_v3_misc).
                if frame == mmio::Frame::Dist && off == mmio::GICD_TYPER2 {
                    let cur = v.read32(frame, off).unwrap_or(0);
                    g::typer2_uaccess_write(cur, val, v.cfg.initialized)?;
                    return Ok(0);
                }
                if !v.write32(frame, off, val) {
                    return Err(Errno::ENXIO);
                }
                if let Some(id) = v.lpis_turned_on.take() {
                    drop(guard);
                    its::pending::sync_on_enable(vm, id);
                    kick_all(vm);
                }
                Ok(0)
            }
            _ => Err(Errno::ENXIO),
        }
    }

    fn get(&self, a: &KvmDeviceAttr) -> SysResult<usize> {
        if a.group == g::KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS {
            return self.cpu_sysregs(a, false);
        }
        let mut guard = self.vm.vgic.lock();
        let v = guard.as_mut().ok_or(Errno::ENODEV)?;
        let out = UserPtr::<u64>::new(a.addr as usize);
        match (a.group, a.attr) {
            (g::KVM_DEV_ARM_VGIC_GRP_ADDR, g::KVM_VGIC_V3_ADDR_TYPE_DIST) => {
                out.write(&v.cfg.dist.unwrap_or(ADDR_UNDEF))?;
            }
            (g::KVM_DEV_ARM_VGIC_GRP_ADDR, g::KVM_VGIC_V3_ADDR_TYPE_REDIST) => {
                out.write(&v.regions.first().map_or(ADDR_UNDEF, |r| r.base))?;
            }
            (g::KVM_DEV_ARM_VGIC_GRP_ADDR, g::KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION) => {
                let index = (out.read()? & 0xfff) as u32;
                let r = v
                    .regions
                    .iter()
                    .find(|r| r.index == index)
                    .ok_or(Errno::ENOENT)?;
                out.write(&g::encode_region_attr(r))?;
            }
            (g::KVM_DEV_ARM_VGIC_GRP_NR_IRQS, _) => {
                UserPtr::<u32>::new(a.addr as usize).write(&v.cfg.nr_irqs())?;
            }
            (g::KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO, _) => {
                let (vcpu, intid) = self.level_info_target(v, a)?;
                let mut val = 0u32;
                for i in 0..32 {
                    if v.irq_mut(vcpu, intid + i).is_some_and(|q| q.line) {
                        val |= 1 << i;
                    }
                }
                UserPtr::<u32>::new(a.addr as usize).write(&val)?;
                return Ok(0);
            }
            (g::KVM_DEV_ARM_VGIC_GRP_DIST_REGS | g::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, _) => {
                let frame = self.regs_frame(v, a)?;
                let val = v
                    .read32(frame, frame_off(frame, a.attr))
                    .ok_or(Errno::ENXIO)?;
                UserPtr::<u32>::new(a.addr as usize).write(&val)?;
                return Ok(0);
            }
            _ => return Err(Errno::ENXIO),
        }
        Ok(0)
    }
}

/// A KVM device file's ioctls (the vGICv3's and the ITS's, kvm_device_ioctl): the three
/// attribute calls with their `kvm_device_attr`, ENOTTY for anything else.
pub(super) fn attr_ioctl(
    cmd: u32,
    arg: usize,
    has: impl FnOnce(&KvmDeviceAttr) -> SysResult<usize>,
    set: impl FnOnce(&KvmDeviceAttr) -> SysResult<usize>,
    get: impl FnOnce(&KvmDeviceAttr) -> SysResult<usize>,
) -> SysResult<usize> {
    if !matches!(
        cmd,
        k::KVM_HAS_DEVICE_ATTR | k::KVM_SET_DEVICE_ATTR | k::KVM_GET_DEVICE_ATTR
    ) {
        return Err(Errno::ENOTTY);
    }
    let a = UserPtr::<KvmDeviceAttr>::new(arg).read()?;
    match cmd {
        k::KVM_HAS_DEVICE_ATTR => has(&a),
        k::KVM_SET_DEVICE_ATTR => set(&a),
        _ => get(&a),
    }
}

impl FileOps for VgicFile {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn ioctl(&self, cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        self.vm.check_caller(cur)?;
        attr_ioctl(cmd, arg, |a| self.has(a), |a| self.set(a), |a| self.get(a))
    }
    fn poll(&self, _cur: &dyn Caller) -> u32 {
        0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
