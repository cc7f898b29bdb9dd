//! The vGICv3's ITS (KVM_CREATE_DEVICE with KVM_DEV_TYPE_ARM_VGIC_ITS, Linux's
//! arch/arm64/kvm/vgic/vgic-its.c): the device's attributes (its frame's address, the
//! controls, the GITS_* registers for a VMM's save and restore), the frame the guest reaches
//! on stage-2 faults, and MSIs (KVM_SIGNAL_MSI, MSI routes of irqfds) translated from a
//! (DeviceID, EventID) to an LPI. The command queue is `cmd`, the tables' save and restore
//! `tables`; the register rules and the
//! command layout are `abi::uapi::kvm_vgic_its`; the LPIs themselves live with the vGIC's
//! other interrupts (`irq`), the redistributors' LPI registers in `mmio`.
//!
//! The ITS's state is kept inside the VM's `Vgic` (one lock for the interrupts and their
//! translations), so an ITS needs a vGICv3 made before it. Guest memory (the command queue,
//! the LPI property and pending tables) is only read and written with that lock dropped.

mod cmd;
pub mod pending;
mod tables;

use super::irq::Irq;
use super::Vgic;
use crate::fs::{Caller, File, FileOps};
use crate::kvm::vcpu::Vcpu;
use crate::kvm::vm::Vm;
use crate::mm::uaccess::UserPtr;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{KvmDeviceAttr, MmioAccess};
use svelt_abi::uapi::kvm_vgic as g;
use svelt_abi::uapi::kvm_vgic_its::{self as its, KvmMsi};

/// A device's interrupt translations: its ITT's address, its event ID bits, and each event's
/// collection (None once that collection was unmapped) and LPI.
pub struct Device {
    pub itt: u64,
    pub bits: u32,
    pub ites: BTreeMap<u32, (Option<u16>, u32)>,
}

/// One ITS.
#[derive(Default)]
pub struct Its {
    /// The frames' base (GRP_ADDR), once set.
    pub base: Option<u64>,
    pub enabled: bool,
    pub cbaser: u64,
    pub creadr: u64,
    pub cwriter: u64,
    /// GITS_BASER0 (devices) and GITS_BASER1 (collections).
    pub baser: [u64; 2],
    pub devices: BTreeMap<u32, Device>,
    /// Each collection's target vCPU (None: made by a MAPTI, not mapped yet).
    pub collections: BTreeMap<u16, Option<u32>>,
    /// A thread is working through the command queue (`cmd::process`).
    pub busy: bool,
}

impl Its {
    fn new() -> Its {
        Its {
            baser: [its::baser_reset(0), its::baser_reset(1)],
            ..Its::default()
        }
    }

    /// A collection's vCPU, if it is mapped (its_is_collection_mapped).
    pub fn target(&self, coll: Option<u16>) -> Option<u32> {
        self.collections.get(&coll?).copied().flatten()
    }

    /// The 64-bit (or 32-bit) register at `off`, None where there is none (its_registers).
    fn read(&self, off: u64) -> Option<u64> {
        Some(match off {
            its::GITS_CTLR => {
                let mut v = 0;
                if self.creadr == self.cwriter {
                    v |= its::CTLR_QUIESCENT;
                }
                if self.enabled {
                    v |= its::CTLR_ENABLED;
                }
                v as u64
            }
            its::GITS_IIDR => its::IIDR as u64,
            its::GITS_TYPER => its::typer(),
            its::GITS_CBASER => self.cbaser,
            its::GITS_CWRITER => self.cwriter,
            its::GITS_CREADR => self.creadr,
            o if (its::GITS_BASER..its::GITS_BASER + 0x40).contains(&o) => self
                .baser
                .get(((o - its::GITS_BASER) / 8) as usize)
                .copied()
                .unwrap_or(0),
            o if (its::GITS_IDREGS..its::GITS_IDREGS + 0x30).contains(&o) => its::idreg(o) as u64,
            _ => return None,
        })
    }
}

/// The alignment a GRP_ITS_REGS offset needs, less one: the 64-bit registers are reached
/// whole (vgic_its_attr_regs_access).
fn attr_align(off: u64) -> u64 {
    if (its::GITS_TYPER..its::GITS_PIDR4).contains(&off) {
        7
    } else {
        3
    }
}

/// Whether the register at `off` (its first byte) is 64 bits wide.
fn is64(off: u64) -> bool {
    (its::GITS_TYPER..its::GITS_IDREGS).contains(&off)
}

impl Vgic {
    pub fn has_its(&self) -> bool {
        !self.its.is_empty()
    }

    /// A write to ITS `n`'s register at `off` (the register's first byte) of its full
    /// 64-bit (or 32-bit) value, by the guest or (`uaccess`) by the VMM. Says whether the
    /// command queue should be worked through.
    fn its_write(&mut self, n: usize, off: u64, val: u64, uaccess: bool) -> SysResult<bool> {
        let i = &mut self.its[n];
        match off {
            its::GITS_CTLR => {
                let on = val as u32 & its::CTLR_ENABLED != 0;
                // Enabling with a table or the queue invalid is ignored (UNPREDICTABLE).
                let valid = i.baser[0] & its::BASER_VALID != 0
                    && i.baser[1] & its::BASER_VALID != 0
                    && i.cbaser & its::BASER_VALID != 0;
                if !i.enabled && on && !valid {
                    return Ok(false);
                }
                i.enabled = on;
                return Ok(true);
            }
            // Only ABI revision 0 exists.
            its::GITS_IIDR if uaccess && (val >> 12) & 0xf != 0 => return Err(Errno::EINVAL),
            its::GITS_CBASER if !i.enabled => {
                i.cbaser = its::cbaser_write(val);
                i.creadr = 0;
                i.cwriter = 0;
            }
            its::GITS_CWRITER => {
                let off = its::cmd_offset(val);
                if off >= its::cmdq(i.cbaser).1 {
                    return Ok(false);
                }
                i.cwriter = off;
                return Ok(true);
            }
            its::GITS_CREADR if uaccess => {
                if i.enabled {
                    return Err(Errno::EBUSY);
                }
                let off = its::cmd_offset(val);
                if off >= its::cmdq(i.cbaser).1 {
                    return Err(Errno::EINVAL);
                }
                i.creadr = off;
            }
            o if (its::GITS_BASER..its::GITS_BASER + 0x40).contains(&o) && !i.enabled => {
                let idx = ((o - its::GITS_BASER) / 8) as usize;
                if let Some(new) = its::baser_write(idx, val) {
                    let old = core::mem::replace(&mut i.baser[idx], new);
                    // A changed table forgets what it held (an unchanged one is rewritten
                    // on the guest's resume).
                    if new != old {
                        if idx == 0 {
                            let devs = core::mem::take(&mut i.devices);
                            self.free_devices(devs);
                        } else {
                            self.its[n].collections.clear();
                            for d in self.its[n].devices.values_mut() {
                                for ite in d.ites.values_mut() {
                                    ite.0 = None;
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(false)
    }

    /// Forgets devices and the LPIs their events were mapped to.
    pub fn free_devices(&mut self, devs: BTreeMap<u32, Device>) {
        for d in devs.into_values() {
            for (_, lpi) in d.ites.into_values() {
                self.lpis.remove(&lpi);
            }
        }
    }

    /// KVM_DEV_ARM_ITS_CTRL_RESET (vgic_its_reset): the tables invalid (their other fields
    /// kept), the queue empty, the ITS off, every mapping gone.
    fn its_reset(&mut self, n: usize) {
        let i = &mut self.its[n];
        i.baser[0] &= !its::BASER_VALID;
        i.baser[1] &= !its::BASER_VALID;
        i.cbaser = 0;
        i.creadr = 0;
        i.cwriter = 0;
        i.enabled = false;
        i.collections.clear();
        let devs = core::mem::take(&mut i.devices);
        self.free_devices(devs);
    }

    /// The ITS whose frames hold `ipa`, and the offset there.
    fn its_at(&self, ipa: u64) -> Option<(usize, u64)> {
        self.its.iter().enumerate().find_map(|(n, i)| {
            let off = ipa.checked_sub(i.base?)?;
            (off < its::ITS_SIZE).then_some((n, off))
        })
    }

    /// Whether vCPU `id` has LPIs on (GICR_CTLR.EnableLPIs).
    pub fn lpis_on(&self, id: u32) -> bool {
        self.rd_lpi.get(&id).is_some_and(|r| r.0)
    }

    /// An MSI (DeviceID `dev`, EventID `event`) to ITS `n` (vgic_its_trigger_msi): EBUSY with
    /// the ITS off or the target's LPIs off; Ok(None) when the event maps to no LPI on a
    /// mapped collection (the MSI is dropped); otherwise the LPI is pending and its vCPU is
    /// returned.
    pub fn trigger_msi(&mut self, n: usize, dev: u32, event: u32) -> SysResult<Option<u32>> {
        let i = &self.its[n];
        if !i.enabled {
            return Err(Errno::EBUSY);
        }
        let Some(&(coll, lpi)) = i.devices.get(&dev).and_then(|d| d.ites.get(&event)) else {
            return Ok(None);
        };
        let Some(vcpu) = i.target(coll) else {
            return Ok(None);
        };
        if !self.lpis_on(vcpu) {
            return Err(Errno::EBUSY);
        }
        if let Some(q) = self.lpis.get_mut(&lpi) {
            q.latch_pending();
        }
        Ok(Some(vcpu))
    }

    /// A new LPI's state: edge-triggered, Group 1, routed to `vcpu` (see `lpi_route`).
    pub fn new_lpi(route: u64, prop: u8, pending: bool) -> Irq {
        let (priority, enabled) = its::lpi_config(prop);
        Irq {
            edge: true,
            group1: true,
            priority,
            enabled,
            latch: pending,
            route,
            ..Irq::default()
        }
    }
}

/// An LPI's `route`: its vCPU's affinity, or none.
pub const NO_TARGET: u64 = u64::MAX;
pub fn lpi_route(vcpu: Option<u32>) -> u64 {
    vcpu.map_or(NO_TARGET, |id| {
        crate::kvm::vcpu::mpidr_for(id) & super::deliver::MPIDR_HWID
    })
}

/// A guest access to an ITS's frames: true if `ipa` is in one (the access is then done:
/// registers by their widths as Linux's its_registers allow, everything else RAZ/WI,
/// GITS_TRANSLATER included: a CPU's write there is no MSI on KVM).
pub fn mmio_access(
    vm: &Vm,
    ipa: u64,
    a: &MmioAccess,
    st: &mut crate::kvm::vcpu::VcpuState,
) -> bool {
    let mut guard = vm.vgic.lock();
    let Some(v) = guard.as_mut() else {
        return false;
    };
    let Some((n, off)) = v.its_at(ipa) else {
        return false;
    };
    let reg = off & !7;
    let wide = is64(reg);
    let ok = match a.len {
        4 => off & 3 == 0,
        8 => off & 7 == 0 && wide,
        _ => false,
    };
    let (reg, hi) = if wide {
        (reg, off & 4 != 0)
    } else {
        (off, false)
    };
    let mut process = false;
    if a.write {
        let x = if a.reg == 31 {
            0
        } else {
            st.regs.x[a.reg as usize]
        };
        let val = a.store_value(x);
        if ok {
            if let Some(old) = v.its[n].read(reg) {
                let new = if a.len == 4 && wide {
                    its::update_half(old, hi, val as u32)
                } else {
                    val
                };
                process = v.its_write(n, reg, new, false).unwrap_or(false);
            }
        }
    } else {
        let data = if ok {
            let r = v.its[n].read(reg).unwrap_or(0);
            match (a.len, hi) {
                (4, true) => r >> 32,
                (4, false) => r & 0xffff_ffff,
                _ => r,
            }
        } else {
            0
        };
        if a.reg != 31 {
            st.regs.x[a.reg as usize] = a.load_value(data);
        }
    }
    drop(guard);
    if process {
        cmd::process(vm, n);
    }
    st.regs.pc += 4;
    true
}

/// KVM_CREATE_DEVICE for an ITS (vgic_its_create): after the vGICv3 here (ENODEV before).
/// MSIs then need a DeviceID (KVM_CAP_MSI_DEVID), and GICR_PROPBASER takes its reset value.
pub fn create(vm: &Arc<Vm>, test: bool) -> SysResult<Option<Arc<File>>> {
    if test {
        return Ok(None);
    }
    let mut guard = vm.vgic.lock();
    let v = guard.as_mut().ok_or(Errno::ENODEV)?;
    v.its.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    let n = v.its.len();
    v.its.push(Its::new());
    v.propbaser = its::PROPBASER_RESET;
    drop(guard);
    let ops = Arc::new(ItsFile { vm: vm.clone(), n });
    Ok(Some(File::new(
        None,
        ops,
        svelt_abi::uapi::fs::O_RDWR,
        "anon_inode:kvm-arm-vgic-its".into(),
    )))
}

/// Whether MSIs need a DeviceID (KVM_CAP_MSI_DEVID on a VM): once it has an ITS.
pub fn msis_require_devid(vm: &Vm) -> bool {
    vm.vgic.lock().as_ref().is_some_and(|v| v.has_its())
}

/// KVM_SIGNAL_MSI (kvm_send_userspace_msi, vgic_its_inject_msi): EINVAL without an
/// in-kernel vGIC or with unknown flags, ENODEV without an ITS, EINVAL without a DeviceID
/// or with a doorbell in no ITS's frames; then 1 if the LPI was made pending, 0 if the
/// guest's mappings dropped it, EBUSY with the ITS or the target's LPIs off.
pub fn signal_msi(vm: &Vm, arg: usize) -> SysResult<usize> {
    let msi = UserPtr::<KvmMsi>::new(arg).read()?;
    deliver_msi(vm, &msi)
}

/// An MSI from userspace or an irqfd's MSI route.
pub fn deliver_msi(vm: &Vm, msi: &KvmMsi) -> SysResult<usize> {
    let mut guard = vm.vgic.lock();
    let v = guard.as_mut().ok_or(Errno::EINVAL)?;
    if msi.flags & !its::KVM_MSI_VALID_DEVID != 0 {
        return Err(Errno::EINVAL);
    }
    if !v.has_its() {
        return Err(Errno::ENODEV);
    }
    if msi.flags & its::KVM_MSI_VALID_DEVID == 0 {
        return Err(Errno::EINVAL);
    }
    let db = ((msi.address_hi as u64) << 32) | msi.address_lo as u64;
    let (n, _) = v.its_at(db).ok_or(Errno::EINVAL)?;
    let target = v.trigger_msi(n, msi.devid, msi.data)?;
    drop(guard);
    let Some(id) = target else {
        return Ok(0);
    };
    let c = vm.vcpus.lock().iter().find(|c| c.id == id).cloned();
    if let Some(c) = c {
        c.kick();
    }
    Ok(1)
}

/// The device's file: which of the VM's ITSes it is.
struct ItsFile {
    vm: Arc<Vm>,
    n: usize,
}

impl ItsFile {
    /// GRP_ITS_REGS (vgic_its_attr_regs_access): the offset aligned to its register's width
    /// (EINVAL), every vCPU idle (EBUSY), the frame placed and a register there (ENXIO).
    fn regs(&self, a: &KvmDeviceAttr, write: bool) -> SysResult<usize> {
        let off = a.attr;
        let align = attr_align(off);
        if off & align != 0 {
            return Err(Errno::EINVAL);
        }
        let ptr = UserPtr::<u64>::new(a.addr as usize);
        let val = if write { ptr.read()? } else { 0 };
        let vcpus: Vec<Arc<Vcpu>> = self.vm.vcpus.lock().clone();
        let mut guards = Vec::new();
        guards.try_reserve(vcpus.len()).map_err(|_| Errno::ENOMEM)?;
        for c in &vcpus {
            guards.push(c.try_lock().ok_or(Errno::EBUSY)?);
        }
        let mut guard = self.vm.vgic.lock();
        let v = guard.as_mut().ok_or(Errno::ENODEV)?;
        if v.its[self.n].base.is_none() {
            return Err(Errno::ENXIO);
        }
        let reg = if is64(off) { off & !7 } else { off & !3 };
        let cur = v.its[self.n].read(reg).ok_or(Errno::ENXIO)?;
        if write {
            let process = v.its_write(self.n, reg, val, true)?;
            drop(guard);
            drop(guards);
            if process {
                cmd::process(&self.vm, self.n);
            }
        } else {
            drop(guard);
            drop(guards);
            ptr.write(&cur)?;
        }
        Ok(0)
    }

    /// GRP_CTRL (vgic_its_ctrl): INIT does nothing; the others need every vCPU idle (EBUSY).
    /// Saving writes the device, interrupt translation and collection tables in Linux's ABI
    /// 0 layout, restoring reads them back (`tables`).
    fn ctrl(&self, attr: u64) -> SysResult<usize> {
        if attr == g::KVM_DEV_ARM_VGIC_CTRL_INIT {
            return Ok(0);
        }
        let vcpus: Vec<Arc<Vcpu>> = self.vm.vcpus.lock().clone();
        let mut guards = Vec::new();
        guards.try_reserve(vcpus.len()).map_err(|_| Errno::ENOMEM)?;
        for c in &vcpus {
            guards.push(c.try_lock().ok_or(Errno::EBUSY)?);
        }
        let mut guard = self.vm.vgic.lock();
        let v = guard.as_mut().ok_or(Errno::ENODEV)?;
        match attr {
            its::KVM_DEV_ARM_ITS_CTRL_RESET => {
                v.its_reset(self.n);
                Ok(0)
            }
            its::KVM_DEV_ARM_ITS_SAVE_TABLES | its::KVM_DEV_ARM_ITS_RESTORE_TABLES => {
                // Guest memory is reached with the vGIC's lock dropped; the vCPUs stay held.
                drop(guard);
                let r = if attr == its::KVM_DEV_ARM_ITS_SAVE_TABLES {
                    tables::save(&self.vm, self.n)
                } else {
                    tables::restore(&self.vm, self.n)
                };
                drop(guards);
                r.map(|()| 0)
            }
            _ => Err(Errno::ENXIO),
        }
    }

    fn has(&self, a: &KvmDeviceAttr) -> SysResult<usize> {
        match (a.group, a.attr) {
            (g::KVM_DEV_ARM_VGIC_GRP_ADDR, its::KVM_VGIC_ITS_ADDR_TYPE)
            | (
                g::KVM_DEV_ARM_VGIC_GRP_CTRL,
                g::KVM_DEV_ARM_VGIC_CTRL_INIT
                | its::KVM_DEV_ARM_ITS_CTRL_RESET
                | its::KVM_DEV_ARM_ITS_SAVE_TABLES
                | its::KVM_DEV_ARM_ITS_RESTORE_TABLES,
            ) => Ok(0),
            (its::KVM_DEV_ARM_VGIC_GRP_ITS_REGS, off) => {
                let align = attr_align(off);
                if off & align != 0 {
                    return Err(Errno::EINVAL);
                }
                let reg = if is64(off) { off & !7 } else { off & !3 };
                Its::default().read(reg).map(|_| 0).ok_or(Errno::ENXIO)
            }
            _ => Err(Errno::ENXIO),
        }
    }

    fn set(&self, a: &KvmDeviceAttr) -> SysResult<usize> {
        match a.group {
            g::KVM_DEV_ARM_VGIC_GRP_ADDR => {
                addr_attr(a)?;
                let addr = UserPtr::<u64>::new(a.addr as usize).read()?;
                let mut guard = self.vm.vgic.lock();
                let v = guard.as_mut().ok_or(Errno::ENODEV)?;
                // vgic_check_iorange: once (EEXIST), aligned (EINVAL), inside the IPA
                // space (E2BIG).
                if v.its[self.n].base.is_some() {
                    return Err(Errno::EEXIST);
                }
                if addr % its::ITS_ALIGN != 0 {
                    return Err(Errno::EINVAL);
                }
                let end = addr.checked_add(its::ITS_SIZE).ok_or(Errno::EINVAL)?;
                if end > 1u64 << self.vm.ipa_bits {
                    return Err(Errno::E2BIG);
                }
                v.its[self.n].base = Some(addr);
                Ok(0)
            }
            g::KVM_DEV_ARM_VGIC_GRP_CTRL => self.ctrl(a.attr),
            its::KVM_DEV_ARM_VGIC_GRP_ITS_REGS => self.regs(a, true),
            _ => Err(Errno::ENXIO),
        }
    }

    fn get(&self, a: &KvmDeviceAttr) -> SysResult<usize> {
        match a.group {
            g::KVM_DEV_ARM_VGIC_GRP_ADDR => {
                addr_attr(a)?;
                let base = self
                    .vm
                    .vgic
                    .lock()
                    .as_ref()
                    .and_then(|v| v.its[self.n].base)
                    .unwrap_or(u64::MAX);
                UserPtr::<u64>::new(a.addr as usize).write(&base)?;
                Ok(0)
            }
            its::KVM_DEV_ARM_VGIC_GRP_ITS_REGS => self.regs(a, false),
            _ => Err(Errno::ENXIO),
        }
    }
}

/// GRP_ADDR knows one attribute, the ITS's base (vgic_its_set_attr/get_attr: ENODEV else).
fn addr_attr(a: &KvmDeviceAttr) -> SysResult<()> {
    if a.attr != its::KVM_VGIC_ITS_ADDR_TYPE {
        return Err(Errno::ENODEV);
    }
    Ok(())
}

impl FileOps for ItsFile {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn ioctl(&self, cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        self.vm.check_caller(cur)?;
        super::attr_ioctl(cmd, arg, |a| self.has(a), |a| self.set(a), |a| self.get(a))
    }
    fn poll(&self, _cur: &dyn Caller) -> u32 {
        0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
