//! The LPI pending tables (Linux's vgic-v3.c and vgic-its.c; Documentation/virt/kvm/devices/
//! arm-vgic-v3.rst, arm-vgic-its.rst): KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES writes each
//! mapped LPI's pending bit into its redistributor's table; GICR_CTLR.EnableLPIs going on
//! reads the bits back; an ITS restore reads a restored LPI's bit and clears it.

use super::its::{
    create, msi, put_cmd, set_reg, set_u32, CMDQ, COLLT, DEVT, ITS_BASE, ITT, PROP, TABLES,
    TABLES_SIZE,
};
use super::*;
use svelt_abi::uapi::kvm_vgic as v;
use svelt_abi::uapi::kvm_vgic_its as its;

/// vCPU 0's pending table, in a slot of its own (slot 2) so that it can be taken away.
const PEND: u64 = 0x200_0000;
const PEND_SIZE: usize = 0x1_0000;
/// The table's byte holding the bits of LPIs 8192..=8199.
const BYTE: usize = 8192 / 8;

fn slot(vm: i32, slot: u32, gpa: u64, size: usize, mem: *mut u8) -> SysResult {
    set_region(
        vm,
        &KvmUserspaceMemoryRegion {
            slot,
            flags: 0,
            guest_phys_addr: gpa,
            memory_size: size as u64,
            userspace_addr: mem as u64,
        },
    )
}

fn pend_byte(pend: *mut u8, off: usize) -> u8 {
    // SAFETY: inside the PEND_SIZE mapping; no vCPU runs.
    unsafe { pend.add(off).read_volatile() }
}
fn put_pend_byte(pend: *mut u8, off: usize, val: u8) {
    // SAFETY: as `pend_byte`.
    unsafe { pend.add(off).write_volatile(val) }
}

/// Guest `g`'s VM given the tables' slots (`mem` at TABLES, `pend` at PEND), a vGICv3 and an
/// ITS at ITS_BASE: the vGIC's and the ITS's fds. SAVE_PENDING_TABLES is ENXIO until the
/// vGIC is initialised.
fn lpi_vm(g: &Guest, mem: *mut u8, pend: *mut u8) -> Result<(i32, i32), String> {
    t!(slot(g.vm, 1, TABLES, TABLES_SIZE, mem));
    t!(slot(g.vm, 2, PEND, PEND_SIZE, pend));
    let gic = t!(create(g.vm, v::KVM_DEV_TYPE_ARM_VGIC_V3, 0));
    let itsfd = t!(create(g.vm, its::KVM_DEV_TYPE_ARM_VGIC_ITS, 0));
    t!(set_u64(
        itsfd,
        v::KVM_DEV_ARM_VGIC_GRP_ADDR,
        its::KVM_VGIC_ITS_ADDR_TYPE,
        ITS_BASE
    ));
    check_eq!(save_pending(gic), Err(ENXIO), "not initialised");
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    t!(init_vgic(gic));
    // 14 INTID bits, vCPU 0's pending table.
    let rd = v::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS;
    t!(set_u32(gic, rd, its::GICR_PROPBASER, PROP as u32 | 13));
    t!(set_u32(gic, rd, its::GICR_PROPBASER + 4, 0));
    t!(set_u32(gic, rd, its::GICR_PENDBASER, PEND as u32));
    t!(set_u32(gic, rd, its::GICR_PENDBASER + 4, 0));
    let valid = its::BASER_VALID;
    t!(set_reg(itsfd, its::GITS_BASER, valid | DEVT));
    t!(set_reg(itsfd, its::GITS_BASER + 8, valid | COLLT));
    t!(set_reg(itsfd, its::GITS_CBASER, valid | CMDQ | 15));
    Ok((gic, itsfd))
}

fn save_pending(gic: i32) -> SysResult {
    dev_attr(
        gic,
        k::KVM_SET_DEVICE_ATTR,
        v::KVM_DEV_ARM_VGIC_GRP_CTRL,
        v::KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES,
        0,
    )
}

fn its_ctrl(itsfd: i32, attr: u64) -> SysResult {
    dev_attr(
        itsfd,
        k::KVM_SET_DEVICE_ATTR,
        v::KVM_DEV_ARM_VGIC_GRP_CTRL,
        attr,
        0,
    )
}

/// A first VM maps events 3, 5 and 6 of device 1 to LPIs 8192, 8193 and 8194 (all disabled
/// in the property table), with 8193's bit set in the pending table before its LPIs go on,
/// which makes 8193 pending and leaves the bit; an MSI makes 8192 pending. The save then
/// writes 8192's and 8193's bits and clears 8194's, touching no other byte; with the table's
/// slot gone it is EFAULT. A second VM, given the same memory and the saved ITS tables,
/// restores 8192 and 8193 pending and clears their bits; once 8192 is enabled (its property
/// byte and an INV) the guest takes it.
pub fn lpi_pending_tables() -> TestResult {
    let kvm = kvm!();
    let code = code!(guest_spi, guest_spi_end);
    let g = t!(Guest::new(kvm, code));
    let mem = t!(sys::mmap_anon(TABLES_SIZE)) as *mut u8;
    let pend = t!(sys::mmap_anon(PEND_SIZE)) as *mut u8;
    // LPIs 8192..=8194: priority 0xa0, disabled.
    for i in 0..3 {
        // SAFETY: inside the mapping.
        unsafe { mem.add(i).write_volatile(0xa0) };
    }
    let (gic, itsfd) = lpi_vm(&g, mem, pend)?;
    let valid = its::BASER_VALID;
    // MAPD device 1 (4 event ID bits), MAPC collection 0 to vCPU 0, MAPTI events 3, 5, 6
    // to LPIs 8192..=8194, SYNC.
    put_cmd(mem, 0, [0x08 | 1 << 32, 3, valid | ITT, 0]);
    put_cmd(mem, 1, [0x09, 0, valid, 0]);
    put_cmd(mem, 2, [0x0a | 1 << 32, 3 | 8192 << 32, 0, 0]);
    put_cmd(mem, 3, [0x0a | 1 << 32, 5 | 8193 << 32, 0, 0]);
    put_cmd(mem, 4, [0x0a | 1 << 32, 6 | 8194 << 32, 0, 0]);
    put_cmd(mem, 5, [0x05, 0, 0, 0]);
    t!(set_reg(itsfd, its::GITS_CTLR, 1));
    t!(set_reg(itsfd, its::GITS_CWRITER, 6 * 32));
    // EnableLPIs reads the table (without consuming it).
    put_pend_byte(pend, BYTE, 0x02);
    let rd = v::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS;
    t!(set_u32(gic, rd, 0, its::GICR_CTLR_ENABLE_LPIS));
    check_eq!(pend_byte(pend, BYTE), 0x02, "EnableLPIs leaves the table");
    let db = ITS_BASE + its::GITS_TRANSLATER;
    check_eq!(
        msi(g.vm, db, 1, 3, its::KVM_MSI_VALID_DEVID),
        Ok(1),
        "LPI 8192"
    );
    // The save: 8192 and 8193 pending, 8194 not; the bytes around untouched.
    put_pend_byte(pend, BYTE - 1, 0xa5);
    put_pend_byte(pend, BYTE, 0x04);
    put_pend_byte(pend, BYTE + 1, 0x5a);
    t!(save_pending(gic));
    check_eq!(pend_byte(pend, BYTE), 0x03, "LPIs 8192 and 8193 pending");
    check_eq!(pend_byte(pend, BYTE - 1), 0xa5, "the byte before");
    check_eq!(pend_byte(pend, BYTE + 1), 0x5a, "the byte after");
    // The table outside guest memory.
    t!(slot(g.vm, 2, PEND, 0, pend));
    check_eq!(save_pending(gic), Err(EFAULT), "no pending table");
    t!(slot(g.vm, 2, PEND, PEND_SIZE, pend));
    put_pend_byte(pend, BYTE, 0);
    t!(save_pending(gic));
    check_eq!(pend_byte(pend, BYTE), 0x03, "saved again");
    t!(its_ctrl(itsfd, its::KVM_DEV_ARM_ITS_SAVE_TABLES));
    t!(sys::close(itsfd));
    t!(sys::close(gic));
    drop(g);

    // The second VM: the redistributor's registers first (as QEMU restores them), then the
    // ITS's tables.
    let g = t!(Guest::another(code, 0));
    let (gic, itsfd) = lpi_vm(&g, mem, pend)?;
    t!(set_u32(gic, rd, 0, its::GICR_CTLR_ENABLE_LPIS));
    check_eq!(pend_byte(pend, BYTE), 0x03, "no LPI yet");
    t!(its_ctrl(itsfd, its::KVM_DEV_ARM_ITS_RESTORE_TABLES));
    check_eq!(pend_byte(pend, BYTE), 0, "the bits consumed");
    check_eq!(pend_byte(pend, BYTE + 1), 0x5a, "the byte after");
    t!(save_pending(gic));
    check_eq!(pend_byte(pend, BYTE), 0x03, "restored pending");
    t!(set_reg(itsfd, its::GITS_CTLR, 1));
    let (a, _, _, _) = t!(g.run_to_mmio());
    check_eq!(a, MMIO, "the guest is ready");
    // LPI 8192 enabled (INV of device 1's event 3): the guest takes it.
    // SAFETY: inside the mapping; the vCPU is not running.
    unsafe { mem.write_volatile(0xa1) };
    put_cmd(mem, 0, [0x0c | 1 << 32, 3, 0, 0]);
    t!(set_reg(itsfd, its::GITS_CWRITER, 32));
    check_eq!(t!(g.run_to_mmio()).1, 8192, "ICC_IAR1_EL1");
    t!(g.run_to_mmio());
    t!(g.run_to_mmio());
    check_eq!(t!(g.run_to_mmio()).1, 1023, "8193 is still disabled");
    t!(sys::close(itsfd));
    t!(sys::close(gic));
    drop(g);
    let _ = sys::munmap(mem as usize, TABLES_SIZE);
    let _ = sys::munmap(pend as usize, PEND_SIZE);
    Ok(())
}
