//! The vGICv3's ITS (KVM_DEV_TYPE_ARM_VGIC_ITS): the device and its attributes, and an LPI
//! mapped through the command queue, made pending by KVM_SIGNAL_MSI and taken by the guest.

use super::*;
use svelt_abi::uapi::kvm_vgic as v;
use svelt_abi::uapi::kvm_vgic_its as its;

/// Where the ITS's frames sit in these tests.
pub const ITS_BASE: u64 = 0x808_0000;
/// A second slot for the LPI and ITS tables, 64 KiB each: properties, vCPU 0's pending
/// bits, the command queue, the device table, the collection table, the ITT.
pub const TABLES: u64 = 0x100_0000;
pub const TABLES_SIZE: usize = 6 * 0x1_0000;
pub const PROP: u64 = TABLES;
const PEND: u64 = TABLES + 0x1_0000;
pub const CMDQ: u64 = TABLES + 0x2_0000;
pub const DEVT: u64 = TABLES + 0x3_0000;
pub const COLLT: u64 = TABLES + 0x4_0000;
pub const ITT: u64 = TABLES + 0x5_0000;

pub fn create(vm: i32, ty: u32, flags: u32) -> SysResult<i32> {
    let mut d = k::KvmCreateDevice { ty, fd: 0, flags };
    ioctl(vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize)?;
    Ok(d.fd as i32)
}

pub fn msi(vm: i32, addr: u64, devid: u32, data: u32, flags: u32) -> SysResult {
    let m = its::KvmMsi {
        address_lo: addr as u32,
        address_hi: (addr >> 32) as u32,
        data,
        flags,
        devid,
        pad: [0; 12],
    };
    ioctl(vm, its::KVM_SIGNAL_MSI, &m as *const _ as usize)
}

pub fn set_reg(fd: i32, off: u64, val: u64) -> SysResult {
    set_u64(fd, its::KVM_DEV_ARM_VGIC_GRP_ITS_REGS, off, val)
}

pub fn get_reg(fd: i32, off: u64) -> SysResult<u64> {
    get_u64(fd, its::KVM_DEV_ARM_VGIC_GRP_ITS_REGS, off, 0)
}

pub fn set_u32(fd: i32, group: u32, attr: u64, val: u32) -> SysResult {
    dev_attr(
        fd,
        k::KVM_SET_DEVICE_ATTR,
        group,
        attr,
        &val as *const u32 as usize,
    )
}

/// The ITS device: made only as a test before the vGICv3 is there; its frame's address (64
/// KiB aligned, inside the IPA space, once); its attributes; the GITS registers as a VMM
/// reads and writes them; RESET; KVM_CAP_MSI_DEVID and KVM_SIGNAL_MSI's errors; the
/// distributor and redistributors now offering LPIs.
pub fn vgic_its_device() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_idregs, guest_idregs_end)));
    check_eq!(
        ioctl(
            g.vm,
            k::KVM_CHECK_EXTENSION,
            its::KVM_CAP_SIGNAL_MSI as usize
        ),
        Ok(1)
    );
    check_eq!(
        ioctl(
            g.vm,
            k::KVM_CHECK_EXTENSION,
            its::KVM_CAP_MSI_DEVID as usize
        ),
        Ok(0),
        "no ITS yet"
    );
    check_eq!(
        create(
            g.vm,
            its::KVM_DEV_TYPE_ARM_VGIC_ITS,
            k::KVM_CREATE_DEVICE_TEST
        ),
        Ok(0)
    );
    check_eq!(
        msi(g.vm, ITS_BASE, 0, 0, its::KVM_MSI_VALID_DEVID),
        Err(EINVAL),
        "no vGIC"
    );
    let gic = t!(create(g.vm, v::KVM_DEV_TYPE_ARM_VGIC_V3, 0));
    check_eq!(
        msi(g.vm, ITS_BASE, 0, 0, its::KVM_MSI_VALID_DEVID),
        Err(ENODEV),
        "no ITS"
    );
    let itsfd = t!(create(g.vm, its::KVM_DEV_TYPE_ARM_VGIC_ITS, 0));
    check_eq!(
        ioctl(
            g.vm,
            k::KVM_CHECK_EXTENSION,
            its::KVM_CAP_MSI_DEVID as usize
        ),
        Ok(1)
    );
    let addr = v::KVM_DEV_ARM_VGIC_GRP_ADDR;
    let ty = its::KVM_VGIC_ITS_ADDR_TYPE;
    check_eq!(get_u64(itsfd, addr, ty, 0), Ok(u64::MAX), "not placed");
    check_eq!(get_reg(itsfd, its::GITS_CTLR), Err(ENXIO), "not placed");
    check_eq!(set_u64(itsfd, addr, 0, ITS_BASE), Err(ENODEV));
    check_eq!(get_u64(itsfd, addr, 0, 0), Err(ENODEV));
    check_eq!(set_u64(itsfd, addr, ty, ITS_BASE + 0x1000), Err(EINVAL));
    check_eq!(set_u64(itsfd, addr, ty, 1 << 40), Err(E2BIG));
    check_eq!(set_u64(itsfd, addr, ty, (1 << 40) - 0x1_0000), Err(E2BIG));
    t!(set_u64(itsfd, addr, ty, ITS_BASE));
    check_eq!(set_u64(itsfd, addr, ty, ITS_BASE), Err(EEXIST));
    check_eq!(get_u64(itsfd, addr, ty, 0), Ok(ITS_BASE));
    let has = |group: u32, attr: u64| dev_attr(itsfd, k::KVM_HAS_DEVICE_ATTR, group, attr, 0);
    let ctrl = v::KVM_DEV_ARM_VGIC_GRP_CTRL;
    let regs = its::KVM_DEV_ARM_VGIC_GRP_ITS_REGS;
    check_eq!(has(addr, ty), Ok(0));
    check_eq!(has(addr, 2), Err(ENXIO));
    for a in [
        v::KVM_DEV_ARM_VGIC_CTRL_INIT,
        its::KVM_DEV_ARM_ITS_CTRL_RESET,
        its::KVM_DEV_ARM_ITS_SAVE_TABLES,
        its::KVM_DEV_ARM_ITS_RESTORE_TABLES,
    ] {
        check_eq!(has(ctrl, a), Ok(0), "GRP_CTRL {a}");
    }
    check_eq!(
        has(ctrl, v::KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES),
        Err(ENXIO)
    );
    check_eq!(has(regs, its::GITS_CTLR), Ok(0));
    check_eq!(has(regs, its::GITS_BASER + 0x38), Ok(0));
    check_eq!(has(regs, 2), Err(EINVAL), "unaligned");
    check_eq!(
        has(regs, its::GITS_TYPER + 4),
        Err(EINVAL),
        "half a 64-bit one"
    );
    check_eq!(has(regs, 0x200), Err(ENXIO));
    check_eq!(has(5, 0), Err(ENXIO));
    t!(dev_attr(
        itsfd,
        k::KVM_SET_DEVICE_ATTR,
        ctrl,
        v::KVM_DEV_ARM_VGIC_CTRL_INIT,
        0
    ));
    // The registers.
    check_eq!(get_reg(itsfd, its::GITS_TYPER), Ok(its::typer()));
    check_eq!(get_reg(itsfd, its::GITS_IIDR), Ok(its::IIDR as u64));
    check_eq!(
        get_reg(itsfd, its::GITS_CTLR),
        Ok(1 << 31),
        "off and quiescent"
    );
    check_eq!(get_reg(itsfd, its::GITS_BASER), Ok(its::baser_reset(0)));
    check_eq!(get_reg(itsfd, its::GITS_BASER + 8), Ok(its::baser_reset(1)));
    check_eq!(get_reg(itsfd, its::GITS_BASER + 16), Ok(0));
    check_eq!(get_reg(itsfd, 0xffe8), Ok(0x3b), "GITS_PIDR2");
    check_eq!(
        set_reg(itsfd, its::GITS_IIDR, 1 << 12),
        Err(EINVAL),
        "ABI 1"
    );
    t!(set_reg(itsfd, its::GITS_IIDR, 0));
    let valid = its::BASER_VALID;
    t!(set_reg(itsfd, its::GITS_BASER, valid | DEVT | (0x7 << 56)));
    check_eq!(
        get_reg(itsfd, its::GITS_BASER),
        Ok(its::baser_write(0, valid | DEVT).unwrap()),
        "type and entry size kept"
    );
    t!(set_reg(
        itsfd,
        its::GITS_BASER + 8,
        valid | its::BASER_INDIRECT | COLLT
    ));
    check_eq!(
        get_reg(itsfd, its::GITS_BASER + 8).map(|b| b & its::BASER_INDIRECT),
        Ok(0),
        "no two-level collection table"
    );
    t!(set_reg(itsfd, its::GITS_CBASER, valid | CMDQ | 0x1000 | 1));
    check_eq!(
        get_reg(itsfd, its::GITS_CBASER).map(|c| c & 0xffff_ffff_f0ff),
        Ok(CMDQ | 1),
        "64 KiB aligned"
    );
    check_eq!(
        set_reg(itsfd, its::GITS_CREADR, 0x2000),
        Err(EINVAL),
        "past the queue"
    );
    t!(set_reg(itsfd, its::GITS_CREADR, 0x20));
    check_eq!(get_reg(itsfd, its::GITS_CREADR), Ok(0x20));
    t!(set_reg(itsfd, its::GITS_CREADR, 0));
    t!(set_reg(itsfd, its::GITS_CTLR, 1));
    check_eq!(get_reg(itsfd, its::GITS_CTLR), Ok(1 | 1 << 31));
    check_eq!(set_reg(itsfd, its::GITS_CREADR, 0), Err(EBUSY), "on");
    t!(dev_attr(
        itsfd,
        k::KVM_SET_DEVICE_ATTR,
        ctrl,
        its::KVM_DEV_ARM_ITS_CTRL_RESET,
        0
    ));
    check_eq!(get_reg(itsfd, its::GITS_CTLR), Ok(1 << 31), "reset: off");
    check_eq!(get_reg(itsfd, its::GITS_CBASER), Ok(0));
    check_eq!(
        get_reg(itsfd, its::GITS_BASER).map(|b| b & valid),
        Ok(0),
        "reset: invalid"
    );
    for a in [
        its::KVM_DEV_ARM_ITS_SAVE_TABLES,
        its::KVM_DEV_ARM_ITS_RESTORE_TABLES,
    ] {
        check_eq!(
            dev_attr(itsfd, k::KVM_SET_DEVICE_ATTR, ctrl, a, 0),
            Ok(0),
            "an empty ITS's tables ({a})"
        );
    }
    // MSIs: a DeviceID, a doorbell in the ITS's frames, the ITS on.
    let db = ITS_BASE + its::GITS_TRANSLATER;
    check_eq!(msi(g.vm, db, 0, 0, 0), Err(EINVAL), "no DeviceID");
    check_eq!(msi(g.vm, db, 0, 0, 3), Err(EINVAL), "unknown flag");
    check_eq!(
        msi(g.vm, 0x900_0000, 0, 0, its::KVM_MSI_VALID_DEVID),
        Err(EINVAL),
        "no ITS there"
    );
    check_eq!(
        msi(g.vm, db, 0, 0, its::KVM_MSI_VALID_DEVID),
        Err(EBUSY),
        "the ITS is off"
    );
    // LPIs in the distributor and the redistributors.
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    t!(init_vgic(gic));
    let typer = t!(get_u32(gic, v::KVM_DEV_ARM_VGIC_GRP_DIST_REGS, 4));
    check_eq!(
        typer & its::GICD_TYPER_LPIS,
        its::GICD_TYPER_LPIS,
        "GICD_TYPER {typer:#x}"
    );
    check_eq!(
        (typer >> 19) & 0x1f,
        15,
        "16 INTID bits: GICD_TYPER {typer:#x}"
    );
    let rtyper = t!(get_u32(
        gic,
        v::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS,
        v::GICR_TYPER
    ));
    check_eq!(rtyper & 1, 1, "GICR_TYPER.PLPIS {rtyper:#x}");
    t!(sys::close(itsfd));
    t!(sys::close(gic));
    Ok(())
}

/// Writes command `n` of the queue (four words) into the tables' slot at `mem`.
pub fn put_cmd(mem: *mut u8, n: usize, w: [u64; 4]) {
    for (i, word) in w.iter().enumerate() {
        let at = (CMDQ - TABLES) as usize + 32 * n + 8 * i;
        // SAFETY: inside the TABLES_SIZE mapping; the guest is not running.
        unsafe { (mem.add(at) as *mut u64).write_volatile(*word) };
    }
}

/// A guest (`guest_spi`) with the tables' slot at TABLES, an initialised vGICv3 with its
/// redistributors at 0x80a_0000 and an ITS at ITS_BASE: the guest, the slot's memory, the
/// vGIC's and the ITS's fds.
fn its_guest(kvm: i32) -> Result<(Guest, *mut u8, i32, i32), String> {
    let g = t!(Guest::new(kvm, code!(guest_spi, guest_spi_end)));
    let mem = t!(sys::mmap_anon(TABLES_SIZE)) as *mut u8;
    t!(set_region(
        g.vm,
        &KvmUserspaceMemoryRegion {
            slot: 1,
            flags: 0,
            guest_phys_addr: TABLES,
            memory_size: TABLES_SIZE as u64,
            userspace_addr: mem as u64,
        }
    ));
    let gic = t!(create(g.vm, v::KVM_DEV_TYPE_ARM_VGIC_V3, 0));
    let itsfd = t!(create(g.vm, its::KVM_DEV_TYPE_ARM_VGIC_ITS, 0));
    t!(set_u64(
        itsfd,
        v::KVM_DEV_ARM_VGIC_GRP_ADDR,
        its::KVM_VGIC_ITS_ADDR_TYPE,
        ITS_BASE
    ));
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    t!(init_vgic(gic));
    Ok((g, mem, gic, itsfd))
}

/// An LPI end to end: the VMM places the LPI tables (GICR_PROPBASER, PENDBASER, EnableLPIs)
/// and the ITS's (device and collection tables, command queue), queues MAPD, MAPC and
/// MAPTI and moves GITS_CWRITER, which the ITS works through; KVM_SIGNAL_MSI then makes LPI
/// 8192 pending (1), an unmapped event or device is dropped (0), and the guest acknowledges
/// INTID 8192. DISCARD unmaps the event.
pub fn vgic_its_lpi() -> TestResult {
    let kvm = kvm!();
    let (g, mem, gic, itsfd) = its_guest(kvm)?;
    // LPI 8192: priority 0xa0, enabled.
    // SAFETY: inside the mapping.
    unsafe { mem.write_volatile(0xa1) };
    let rd = v::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS;
    // 14 INTID bits, then vCPU 0's pending table.
    t!(set_u32(gic, rd, its::GICR_PROPBASER, PROP as u32 | 13));
    t!(set_u32(gic, rd, its::GICR_PROPBASER + 4, 0));
    t!(set_u32(gic, rd, its::GICR_PENDBASER, PEND as u32));
    t!(set_u32(gic, rd, its::GICR_PENDBASER + 4, 0));
    let prop = t!(get_u32(gic, rd, its::GICR_PROPBASER));
    check_eq!(
        prop & 0xffff_f01f,
        PROP as u32 | 13,
        "GICR_PROPBASER {prop:#x}"
    );
    let valid = its::BASER_VALID;
    t!(set_reg(itsfd, its::GITS_BASER, valid | DEVT));
    t!(set_reg(itsfd, its::GITS_BASER + 8, valid | COLLT));
    t!(set_reg(itsfd, its::GITS_CBASER, valid | CMDQ | 15));
    // MAPD device 1 (4 event ID bits), MAPC collection 0 to vCPU 0, MAPTI event 3 to LPI
    // 8192 in collection 0, SYNC.
    put_cmd(mem, 0, [0x08 | 1 << 32, 3, valid | ITT, 0]);
    put_cmd(mem, 1, [0x09, 0, valid, 0]);
    put_cmd(mem, 2, [0x0a | 1 << 32, 3 | 8192 << 32, 0, 0]);
    put_cmd(mem, 3, [0x05, 0, 0, 0]);
    t!(set_reg(itsfd, its::GITS_CWRITER, 4 * 32));
    check_eq!(
        get_reg(itsfd, its::GITS_CREADR),
        Ok(0),
        "nothing done while the ITS is off"
    );
    t!(set_reg(itsfd, its::GITS_CTLR, 1));
    check_eq!(get_reg(itsfd, its::GITS_CREADR), Ok(4 * 32), "all done");
    check_eq!(get_reg(itsfd, its::GITS_CTLR), Ok(1 | 1 << 31));
    let db = ITS_BASE + its::GITS_TRANSLATER;
    let dev = its::KVM_MSI_VALID_DEVID;
    check_eq!(
        msi(g.vm, db, 1, 3, dev),
        Err(EBUSY),
        "LPIs off in the redistributor"
    );
    t!(set_u32(gic, rd, 0, its::GICR_CTLR_ENABLE_LPIS));
    check_eq!(t!(get_u32(gic, rd, 0)) & 1, 1, "GICR_CTLR.EnableLPIs");
    check_eq!(msi(g.vm, db, 1, 4, dev), Ok(0), "event 4 is not mapped");
    check_eq!(msi(g.vm, db, 2, 3, dev), Ok(0), "device 2 is not mapped");
    // The guest (as vgic_spi's) turns its distributor on and waits: an LPI made pending
    // before that would wait on Linux until something else queued it (vgic_target_oracle
    // leaves it out while the distributor is off).
    let (a, _, _, _) = t!(g.run_to_mmio());
    check_eq!(a, MMIO, "the guest is ready");
    check_eq!(
        msi(g.vm, ITS_BASE, 1, 3, dev),
        Ok(1),
        "any doorbell in the frames"
    );
    check_eq!(t!(g.run_to_mmio()).1, 8192, "ICC_IAR1_EL1");
    t!(g.run_to_mmio());
    t!(g.run_to_mmio());
    check_eq!(t!(g.run_to_mmio()).1, 1023, "nothing left");
    // DISCARD event 3: its MSIs are dropped.
    put_cmd(mem, 4, [0x0f | 1 << 32, 3, 0, 0]);
    t!(set_reg(itsfd, its::GITS_CWRITER, 5 * 32));
    check_eq!(get_reg(itsfd, its::GITS_CREADR), Ok(5 * 32));
    check_eq!(msi(g.vm, db, 1, 3, dev), Ok(0), "discarded");
    t!(sys::close(itsfd));
    t!(sys::close(gic));
    let _ = sys::munmap(mem as usize, TABLES_SIZE);
    Ok(())
}

/// Reads or writes the 8-byte entry at `gpa` of the tables' slot at `mem`.
fn entry(mem: *mut u8, gpa: u64) -> u64 {
    // SAFETY: inside the TABLES_SIZE mapping; no vCPU runs.
    unsafe { (mem.add((gpa - TABLES) as usize) as *const u64).read_volatile() }
}
fn put_entry(mem: *mut u8, gpa: u64, val: u64) {
    // SAFETY: as `entry`.
    unsafe { (mem.add((gpa - TABLES) as usize) as *mut u64).write_volatile(val) };
}

/// KVM_DEV_ARM_ITS_SAVE_TABLES and _RESTORE_TABLES (Linux's ABI 0,
/// Documentation/virt/kvm/devices/arm-vgic-its.rst): a device with two events mapped and a
/// collection are saved as a device table entry, two ITT entries chained by their distance
/// and a collection entry followed by an invalid one, nothing else written; after a reset and
/// the BASERs written back, a restore brings the translations back (the MSIs reach their
/// LPIs again); a restore over existing collections is EEXIST, bad entries are EINVAL.
pub fn vgic_its_save_restore() -> TestResult {
    let kvm = kvm!();
    let (g, mem, gic, itsfd) = its_guest(kvm)?;
    // LPIs 8192 and 8193 enabled.
    // SAFETY: inside the mapping.
    unsafe {
        mem.write_volatile(0xa1);
        mem.add(1).write_volatile(0xa1);
    }
    let rd = v::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS;
    t!(set_u32(gic, rd, its::GICR_PROPBASER, PROP as u32 | 13));
    t!(set_u32(gic, rd, its::GICR_PENDBASER, PEND as u32));
    t!(set_u32(gic, rd, 0, its::GICR_CTLR_ENABLE_LPIS));
    let valid = its::BASER_VALID;
    let bases = |fd: i32| -> SysResult {
        set_reg(fd, its::GITS_BASER, valid | DEVT)?;
        set_reg(fd, its::GITS_BASER + 8, valid | COLLT)?;
        set_reg(fd, its::GITS_CBASER, valid | CMDQ | 15)
    };
    t!(bases(itsfd));
    // MAPD device 1 (4 event ID bits), MAPC collection 0 to vCPU 0, MAPTI events 3 and 5
    // to LPIs 8192 and 8193, SYNC.
    put_cmd(mem, 0, [0x08 | 1 << 32, 3, valid | ITT, 0]);
    put_cmd(mem, 1, [0x09, 0, valid, 0]);
    put_cmd(mem, 2, [0x0a | 1 << 32, 3 | 8192 << 32, 0, 0]);
    put_cmd(mem, 3, [0x0a | 1 << 32, 5 | 8193 << 32, 0, 0]);
    put_cmd(mem, 4, [0x05, 0, 0, 0]);
    t!(set_reg(itsfd, its::GITS_CTLR, 1));
    t!(set_reg(itsfd, its::GITS_CWRITER, 5 * 32));
    check_eq!(get_reg(itsfd, its::GITS_CREADR), Ok(5 * 32), "all done");
    let db = ITS_BASE + its::GITS_TRANSLATER;
    let dev = its::KVM_MSI_VALID_DEVID;
    check_eq!(msi(g.vm, db, 1, 3, dev), Ok(1), "mapped before the save");

    // What the save may not touch.
    // (bit 63 clear: read back as invalid entries)
    const POISON: u64 = 0x1ead_beef_dead_beef;
    for gpa in [DEVT, DEVT + 16, ITT + 4 * 8, COLLT + 8, COLLT + 16] {
        put_entry(mem, gpa, POISON);
    }
    let ctrl = v::KVM_DEV_ARM_VGIC_GRP_CTRL;
    let ctl = |fd: i32, a: u64| dev_attr(fd, k::KVM_SET_DEVICE_ATTR, ctrl, a, 0);
    t!(ctl(itsfd, its::KVM_DEV_ARM_ITS_SAVE_TABLES));
    // Device 1: valid, no next device, the ITT's address bits 48:8 at 48:5, 4 bits less one.
    check_eq!(entry(mem, DEVT + 8), valid | (ITT >> 8) << 5 | 3, "DTE 1");
    check_eq!(entry(mem, DEVT), POISON, "DTE 0 untouched");
    check_eq!(entry(mem, DEVT + 16), POISON, "DTE 2 untouched");
    // Event 3: the next valid event 2 on, LPI 8192, collection 0; event 5: the last.
    check_eq!(entry(mem, ITT + 3 * 8), 2 << 48 | 8192 << 16, "ITE 3");
    check_eq!(entry(mem, ITT + 5 * 8), 8193 << 16, "ITE 5");
    check_eq!(entry(mem, ITT + 4 * 8), POISON, "ITE 4 untouched");
    // Collection 0 on vCPU 0, then the table's end.
    check_eq!(entry(mem, COLLT), valid, "CTE 0");
    check_eq!(entry(mem, COLLT + 8), 0, "CTE 1: the end");
    check_eq!(entry(mem, COLLT + 16), POISON, "CTE 2 untouched");

    // A restore over the collections still there.
    check_eq!(
        ctl(itsfd, its::KVM_DEV_ARM_ITS_RESTORE_TABLES),
        Err(EEXIST),
        "collection 0 exists"
    );
    // Reset, the registers back, the tables back: the translations work again.
    let restore = |fd: i32| -> SysResult {
        ctl(fd, its::KVM_DEV_ARM_ITS_CTRL_RESET)?;
        bases(fd)?;
        ctl(fd, its::KVM_DEV_ARM_ITS_RESTORE_TABLES)
    };
    t!(restore(itsfd));
    t!(set_reg(itsfd, its::GITS_CTLR, 1));
    check_eq!(msi(g.vm, db, 1, 3, dev), Ok(1), "event 3 restored");
    check_eq!(msi(g.vm, db, 1, 5, dev), Ok(1), "event 5 restored");
    check_eq!(msi(g.vm, db, 1, 4, dev), Ok(0), "event 4 was never mapped");

    // Bad entries (vgic_its_restore_cte, _dte, _ite): each fails the restore.
    let cte0 = entry(mem, COLLT);
    put_entry(mem, COLLT, valid | 7 << 16);
    check_eq!(restore(itsfd), Err(EINVAL), "a collection on vCPU 7");
    put_entry(mem, COLLT, cte0);
    let dte1 = entry(mem, DEVT + 8);
    put_entry(mem, DEVT + 8, (dte1 & !0x1f) | 16);
    check_eq!(restore(itsfd), Err(EINVAL), "17 event ID bits");
    put_entry(mem, DEVT + 8, dte1);
    let ite5 = entry(mem, ITT + 5 * 8);
    put_entry(mem, ITT + 5 * 8, 100 << 16);
    check_eq!(restore(itsfd), Err(EINVAL), "LPI 100");
    put_entry(mem, ITT + 5 * 8, 8193 << 16 | 9);
    check_eq!(restore(itsfd), Err(EINVAL), "no collection 9");
    put_entry(mem, ITT + 5 * 8, ite5);
    // A failed restore leaves no collections behind: this one works.
    t!(restore(itsfd));
    t!(set_reg(itsfd, its::GITS_CTLR, 1));
    check_eq!(
        msi(g.vm, db, 1, 5, dev),
        Ok(1),
        "restored after the failures"
    );
    t!(sys::close(itsfd));
    t!(sys::close(gic));
    let _ = sys::munmap(mem as usize, TABLES_SIZE);
    Ok(())
}
