//! The vGICv3's ITS (KVM_CREATE_DEVICE with KVM_DEV_TYPE_ARM_VGIC_ITS;
//! Documentation/virt/kvm/devices/arm-vgic-its.rst): its attributes, the GITS_* registers'
//! values and write rules, the LPI registers of the redistributors (GICR_PROPBASER,
//! GICR_PENDBASER) and the command queue's entries, as Linux's arch/arm64/kvm/vgic/vgic-its.c
//! and vgic-mmio-v3.c give them (the layouts from the Arm GICv3 architecture specification,
//! chapters 5 and 12). The kernel's ITS (kvm/vgic/its.rs) keeps the state these rules decide on.

pub const KVM_DEV_TYPE_ARM_VGIC_ITS: u32 = 8;
/// GRP_ADDR's one attribute for an ITS: its frames' base (64 KiB aligned, two 64 KiB pages).
pub const KVM_VGIC_ITS_ADDR_TYPE: u64 = 4;
pub const ITS_SIZE: u64 = 0x2_0000;
pub const ITS_ALIGN: u64 = 0x1_0000;
pub const KVM_DEV_ARM_VGIC_GRP_ITS_REGS: u32 = 8;
// GRP_CTRL attributes of an ITS (INIT is the vGIC's KVM_DEV_ARM_VGIC_CTRL_INIT, 0).
pub const KVM_DEV_ARM_ITS_SAVE_TABLES: u64 = 1;
pub const KVM_DEV_ARM_ITS_RESTORE_TABLES: u64 = 2;
pub const KVM_DEV_ARM_ITS_CTRL_RESET: u64 = 4;

/// KVM_SIGNAL_MSI and its capabilities.
pub const KVM_SIGNAL_MSI: u32 = 0x4020_aea5;
pub const KVM_CAP_SIGNAL_MSI: u64 = 77;
pub const KVM_CAP_MSI_DEVID: u64 = 131;
pub const KVM_MSI_VALID_DEVID: u32 = 1;

/// `struct kvm_msi`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, zerocopy::FromBytes, zerocopy::IntoBytes, zerocopy::Immutable,
)]
pub struct KvmMsi {
    pub address_lo: u32,
    pub address_hi: u32,
    pub data: u32,
    pub flags: u32,
    pub devid: u32,
    pub pad: [u8; 12],
}
const _: () = assert!(core::mem::size_of::<KvmMsi>() == 32);

// The ITS's registers (offsets in its first 64 KiB page; GITS_TRANSLATER in the second).
pub const GITS_CTLR: u64 = 0x0;
pub const GITS_IIDR: u64 = 0x4;
pub const GITS_TYPER: u64 = 0x8;
pub const GITS_CBASER: u64 = 0x80;
pub const GITS_CWRITER: u64 = 0x88;
pub const GITS_CREADR: u64 = 0x90;
pub const GITS_BASER: u64 = 0x100;
pub const GITS_IDREGS: u64 = 0xffd0;
pub const GITS_PIDR4: u64 = 0xffd0;
pub const GITS_TRANSLATER: u64 = 0x1_0040;

pub const CTLR_ENABLED: u32 = 1;
pub const CTLR_QUIESCENT: u32 = 1 << 31;

/// The first LPI; the LPIs' INTIDs have 16 bits (INTERRUPT_ID_BITS_ITS).
pub const LPI_OFFSET: u32 = 8192;
pub const ID_BITS_ITS: u32 = 16;
/// GICD_TYPER with an ITS: IDbits 16 and LPIS (vgic_mmio_read_v3_misc).
pub const GICD_TYPER_LPIS: u32 = 1 << 17;
pub const GICD_TYPER_IDBITS_MASK: u32 = 0x1f << 19;
/// GICR_TYPER.PLPIS, GICR_CTLR.EnableLPIs.
pub const GICR_TYPER_PLPIS: u64 = 1;
pub const GICR_CTLR_ENABLE_LPIS: u32 = 1;
pub const GICR_PROPBASER: u64 = 0x70;
pub const GICR_PENDBASER: u64 = 0x78;

/// The device and event IDs the ITS offers (VITS_TYPER_DEVBITS, VITS_TYPER_IDBITS), and the
/// table entries' size in Linux's ABI 0 (device, collection, interrupt translation).
pub const DEV_BITS: u32 = 16;
pub const EVENT_BITS: u32 = 16;
pub const ENTRY_SIZE: u64 = 8;

/// GITS_TYPER (vgic_mmio_read_its_typer): physical LPIs, 8-byte ITT entries, 16 event ID
/// and device ID bits; no PTA, no CommonLPIAff.
pub const fn typer() -> u64 {
    1 | ((ENTRY_SIZE - 1) << 4) | (((EVENT_BITS - 1) as u64) << 8) | (((DEV_BITS - 1) as u64) << 13)
}

/// GITS_IIDR: ABI revision 0, KVM's product ID, Arm as implementer.
pub const IIDR: u32 = (0x4b << 24) | 0x43b;

/// The ID registers' page (vgic_mmio_read_its_idregs).
pub fn idreg(off: u64) -> u32 {
    match off {
        0xffe0 => 0x92,
        0xffe4 => 0xb4,
        0xffe8 => 0x3b,
        0xffd0 => 0x40,
        0xfff0 => 0x0d,
        0xfff4 => 0xf0,
        0xfff8 => 0x05,
        0xfffc => 0xb1,
        _ => 0,
    }
}

// GITS_BASER<n> fields.
pub const BASER_VALID: u64 = 1 << 63;
pub const BASER_INDIRECT: u64 = 1 << 62;
const BASER_TYPE_SHIFT: u32 = 56;
pub const BASER_TYPE_DEVICE: u64 = 1;
pub const BASER_TYPE_COLLECTION: u64 = 4;
const BASER_ESZ_SHIFT: u32 = 48;
/// Type and entry size are read-only.
const BASER_RO: u64 = (0x1f << 48) | (0x7 << 56);
const PAGE_SIZE_64K: u64 = 2 << 8;
const PAGE_SIZE_MASK: u64 = 3 << 8;

/// A cacheability or shareability field's sanitising (vgic_sanitise_*): outer shareable
/// becomes inner, inner non-cacheable becomes read-allocate write-back, an outer
/// cacheability other than non-cacheable becomes "same as inner".
fn sanitise(reg: u64, share: u32, inner: u32, outer: u32) -> u64 {
    let mut reg = reg;
    if (reg >> share) & 3 == 2 {
        reg = (reg & !(3 << share)) | (1 << share);
    }
    if (reg >> inner) & 7 <= 1 {
        reg = (reg & !(7 << inner)) | (3 << inner);
    }
    if !matches!((reg >> outer) & 7, 0 | 1) {
        reg &= !(7 << outer);
    }
    reg
}

/// The reset values: the device and collection tables' BASERs (inner shareable, RaWb,
/// 64 KiB pages, their types and entry sizes), and GICR_PROPBASER's.
pub const fn baser_reset(index: usize) -> u64 {
    let ty = if index == 0 {
        BASER_TYPE_DEVICE
    } else {
        BASER_TYPE_COLLECTION
    };
    (3 << 59)
        | (1 << 10)
        | PAGE_SIZE_64K
        | (ty << BASER_TYPE_SHIFT)
        | ((ENTRY_SIZE - 1) << BASER_ESZ_SHIFT)
}
pub const PROPBASER_RESET: u64 = (3 << 7) | (1 << 10);

/// A write to GITS_BASER<index> (0: devices, 1: collections; the others are RAZ/WI),
/// as vgic_mmio_write_its_baser makes it from the full 64-bit value.
pub fn baser_write(index: usize, val: u64) -> Option<u64> {
    if index > 1 {
        return None;
    }
    let mut reg = val & !BASER_RO;
    if index == 1 {
        reg &= !BASER_INDIRECT;
    }
    reg |= baser_reset(index) & BASER_RO;
    reg = sanitise(reg, 10, 59, 53);
    Some((reg & !PAGE_SIZE_MASK) | PAGE_SIZE_64K)
}

/// A write to GITS_CBASER (vgic_sanitise_its_cbaser): 64 KiB aligned.
pub fn cbaser_write(val: u64) -> u64 {
    sanitise(val, 10, 59, 53) & !(0xf << 12)
}

/// The command queue's base and size in bytes.
pub fn cmdq(cbaser: u64) -> (u64, u64) {
    (cbaser & 0x000f_ffff_ffff_f000, ((cbaser & 0xff) + 1) << 12)
}

/// A CWRITER or CREADR value's offset (bits 19:5).
pub fn cmd_offset(val: u64) -> u64 {
    val & 0xf_ffe0
}

/// GICR_PROPBASER and GICR_PENDBASER writes (vgic_sanitise_propbaser, _pendbaser).
pub fn propbaser_write(val: u64) -> u64 {
    let res0 = (0x1f << 59) | (0xf << 52) | (3 << 5);
    sanitise(val, 10, 7, 56) & !res0
}
pub fn pendbaser_write(val: u64) -> u64 {
    let res0 = (1 << 63) | (7 << 59) | (0xf << 52) | (0xf << 12) | 0x7f;
    sanitise(val, 10, 7, 56) & !res0
}
pub const PENDBASER_PTZ: u64 = 1 << 62;

/// The property table's address, and the LPIs it covers (max_lpis_propbaser): INTIDs below.
pub fn prop_table(propbaser: u64) -> (u64, u32) {
    let bits = ((propbaser & 0x1f) as u32 + 1).min(ID_BITS_ITS);
    (propbaser & 0x000f_ffff_ffff_f000, 1 << bits)
}

/// An LPI's configuration byte: its priority (bits 7:2) and whether it is enabled (bit 0).
pub fn lpi_config(prop: u8) -> (u8, bool) {
    (prop & 0xfc, prop & 1 != 0)
}

/// Where entry `id` of a table is, as vgic_its_check_id finds it: `Flat(addr)` for a flat
/// table, `Indirect { l1, index_in_l2 }` when the level-1 entry at `l1` must be read first
/// (then `l2_entry`), None when the ID is beyond the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableSlot {
    Flat(u64),
    Indirect { l1: u64, offset: u64 },
}

pub fn table_slot(baser: u64, id: u32) -> Option<TableSlot> {
    let (base, size) = table_extent(baser);
    let esz = ((baser >> BASER_ESZ_SHIFT) & 0x1f) + 1;
    match (baser >> BASER_TYPE_SHIFT) & 7 {
        BASER_TYPE_DEVICE if id < 1 << DEV_BITS => {}
        BASER_TYPE_COLLECTION if id < 1 << 16 => {}
        _ => return None,
    }
    let id = id as u64;
    if baser & BASER_INDIRECT == 0 {
        return (id < size / esz).then_some(TableSlot::Flat(base + id * esz));
    }
    let per_page = 0x1_0000 / esz;
    let index = id / per_page;
    (index < size / 8).then_some(TableSlot::Indirect {
        l1: base + index * 8,
        offset: (id % per_page) * esz,
    })
}

/// The level-2 entry's address from its level-1 entry (valid bit 63, address bits 51:16).
pub fn l2_entry(l1_entry: u64, offset: u64) -> Option<u64> {
    (l1_entry & (1 << 63) != 0).then_some((l1_entry & 0x000f_ffff_ffff_0000) + offset)
}

// The tables KVM_DEV_ARM_ITS_SAVE_TABLES writes and _RESTORE_TABLES reads, in ABI revision
// 0 (Documentation/virt/kvm/devices/arm-vgic-its.rst; the KVM_ITS_* layouts of Linux's
// vgic.h): 8-byte little-endian entries, each valid one saying how many IDs on the next
// valid one is (0: the last).

/// Bit 63 of a device, collection or level-1 entry: valid.
pub const ENTRY_VALID: u64 = 1 << 63;
/// The largest step a device table entry (14 bits) or an ITT entry (16 bits) can record
/// (VITS_DTE_MAX_DEVID_OFFSET, VITS_ITE_MAX_EVENTID_OFFSET).
pub const DTE_MAX_NEXT: u32 = (1 << 14) - 1;
pub const ITE_MAX_NEXT: u32 = (1 << 16) - 1;
/// A collection's target while it has none (COLLECTION_NOT_MAPPED).
pub const COLLECTION_NOT_MAPPED: u32 = u32::MAX;

/// A device table entry: valid, the step to the next device, the ITT's address (256-byte
/// aligned) and the device's event ID bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dte {
    pub next: u32,
    pub itt: u64,
    pub bits: u32,
}

impl Dte {
    pub fn encode(&self) -> u64 {
        ENTRY_VALID
            | ((self.next as u64) << 49)
            | (((self.itt >> 8) << 5) & 0x0001_ffff_ffff_ffe0)
            | (self.bits.saturating_sub(1) as u64 & 0x1f)
    }

    /// None for an invalid entry.
    pub fn decode(e: u64) -> Option<Dte> {
        (e & ENTRY_VALID != 0).then_some(Dte {
            next: ((e >> 49) & 0x3fff) as u32,
            itt: ((e & 0x0001_ffff_ffff_ffe0) >> 5) << 8,
            bits: (e & 0x1f) as u32 + 1,
        })
    }
}

/// An interrupt translation entry: the step to the next event, the LPI (0: invalid) and
/// the collection.
pub fn ite_encode(next: u32, lpi: u32, coll: u16) -> u64 {
    ((next as u64) << 48) | ((lpi as u64) << 16) | coll as u64
}
pub fn ite_decode(e: u64) -> (u32, u32, u16) {
    ((e >> 48) as u32, (e >> 16) as u32, e as u16)
}

/// A collection table entry: valid, the target vCPU's ID, the collection ID.
pub fn cte_encode(target: u32, coll: u16) -> u64 {
    ENTRY_VALID | ((target as u64) << 16) | coll as u64
}
/// None for an invalid entry (the table's end).
pub fn cte_decode(e: u64) -> Option<(u32, u16)> {
    (e & ENTRY_VALID != 0).then_some(((e >> 16) as u32, e as u16))
}

/// A table's base address and size in bytes (GITS_BASER's address and Size fields).
pub fn table_extent(baser: u64) -> (u64, u64) {
    (
        baser & 0x0000_ffff_ffff_f000,
        ((baser & 0xff) + 1) * 0x1_0000,
    )
}

/// One command of the queue (32 bytes, four little-endian words), decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItsCmd {
    Movi {
        dev: u32,
        event: u32,
        coll: u16,
    },
    Int {
        dev: u32,
        event: u32,
    },
    Clear {
        dev: u32,
        event: u32,
    },
    Sync,
    /// `size`: the number of event ID bits (the field plus one).
    Mapd {
        dev: u32,
        size: u32,
        itt: u64,
        valid: bool,
    },
    /// `target`: a vCPU id (GITS_TYPER.PTA is 0).
    Mapc {
        coll: u16,
        target: u32,
        valid: bool,
    },
    /// MAPTI, and MAPI (whose LPI is its event ID).
    Mapti {
        dev: u32,
        event: u32,
        lpi: u32,
        coll: u16,
    },
    Inv {
        dev: u32,
        event: u32,
    },
    Invall {
        coll: u16,
    },
    Movall {
        from: u32,
        to: u32,
    },
    Discard {
        dev: u32,
        event: u32,
    },
    /// Any other command number: ignored.
    Unknown(u8),
}

impl ItsCmd {
    pub fn decode(w: [u64; 4]) -> ItsCmd {
        let dev = (w[0] >> 32) as u32;
        let event = w[1] as u32;
        let coll = w[2] as u16;
        let target = (w[2] >> 16) as u32;
        match w[0] as u8 {
            0x01 => ItsCmd::Movi { dev, event, coll },
            0x03 => ItsCmd::Int { dev, event },
            0x04 => ItsCmd::Clear { dev, event },
            0x05 => ItsCmd::Sync,
            0x08 => ItsCmd::Mapd {
                dev,
                size: (w[1] & 0x1f) as u32 + 1,
                itt: ((w[2] >> 8) & ((1 << 44) - 1)) << 8,
                valid: w[2] >> 63 != 0,
            },
            0x09 => ItsCmd::Mapc {
                coll,
                target,
                valid: w[2] >> 63 != 0,
            },
            0x0a => ItsCmd::Mapti {
                dev,
                event,
                lpi: (w[1] >> 32) as u32,
                coll,
            },
            0x0b => ItsCmd::Mapti {
                dev,
                event,
                lpi: event,
                coll,
            },
            0x0c => ItsCmd::Inv { dev, event },
            0x0d => ItsCmd::Invall { coll },
            0x0e => ItsCmd::Movall {
                from: target,
                to: (w[3] >> 16) as u32,
            },
            0x0f => ItsCmd::Discard { dev, event },
            n => ItsCmd::Unknown(n),
        }
    }
}

/// A 32-bit half of a 64-bit register written (update_64bit_reg).
pub fn update_half(old: u64, hi: bool, val: u32) -> u64 {
    if hi {
        (old & 0xffff_ffff) | ((val as u64) << 32)
    } else {
        (old & !0xffff_ffff) | val as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi0_entries() {
        // A device with 14 event ID bits, its ITT at 0x8_0000_0100, the next device 3 on.
        let d = Dte {
            next: 3,
            itt: 0x8_0000_0100,
            bits: 14,
        };
        let e = d.encode();
        assert_eq!(
            e,
            (1 << 63) | (3 << 49) | ((0x8_0000_0100u64 >> 8) << 5) | 13
        );
        assert_eq!(Dte::decode(e), Some(d));
        assert_eq!(Dte::decode(e & !ENTRY_VALID), None);
        assert_eq!(ite_encode(2, 8192, 5), (2 << 48) | (8192 << 16) | 5);
        assert_eq!(ite_decode(ite_encode(2, 8192, 5)), (2, 8192, 5));
        let c = cte_encode(COLLECTION_NOT_MAPPED, 7);
        assert_eq!(c, (1 << 63) | (0xffff_ffffu64 << 16) | 7);
        assert_eq!(cte_decode(c), Some((COLLECTION_NOT_MAPPED, 7)));
        assert_eq!(cte_decode(0), None);
        assert_eq!(
            table_extent(baser_reset(1) | 0x1234_0000 | 1),
            (0x1234_0000, 0x2_0000)
        );
    }

    #[test]
    fn typer_and_ids() {
        // PLPIS, ITT entry size 8, IDbits 15, Devbits 15.
        assert_eq!(typer(), 0x1_ef71);
        assert_eq!(idreg(0xffe8), 0x3b);
    }

    #[test]
    fn baser_keeps_type_and_size_and_sanitises() {
        let v = baser_write(0, BASER_VALID | (0x7 << 56) | (2 << 10) | 0x4000_0000 | 3).unwrap();
        assert_eq!(v & BASER_VALID, BASER_VALID);
        assert_eq!((v >> 56) & 7, BASER_TYPE_DEVICE);
        assert_eq!((v >> 48) & 0x1f, 7);
        assert_eq!((v >> 10) & 3, 1, "outer shareable becomes inner");
        assert_eq!((v >> 8) & 3, 2, "64K pages");
        assert_eq!(v & 0xff, 3);
        let c = baser_write(1, BASER_INDIRECT | BASER_VALID).unwrap();
        assert_eq!(c & BASER_INDIRECT, 0);
        assert_eq!((c >> 56) & 7, BASER_TYPE_COLLECTION);
        assert_eq!(baser_write(2, u64::MAX), None);
    }

    #[test]
    fn cbaser_is_64k_aligned() {
        let v = cbaser_write((1 << 63) | 0x1234_5000 | 1);
        assert_eq!(cmdq(v), (0x1234_0000, 0x2000));
    }

    #[test]
    fn flat_and_indirect_tables() {
        let dev = baser_write(0, BASER_VALID | 0x10_0000).unwrap();
        assert_eq!(table_slot(dev, 3), Some(TableSlot::Flat(0x10_0018)));
        assert_eq!(
            table_slot(dev, 8192),
            None,
            "one 64K page holds 8192 entries"
        );
        let ind = dev | BASER_INDIRECT;
        assert_eq!(
            table_slot(ind, 8193),
            Some(TableSlot::Indirect {
                l1: 0x10_0008,
                offset: 8
            })
        );
        assert_eq!(l2_entry(0x20_0000, 8), None);
        assert_eq!(l2_entry((1 << 63) | 0x20_0000, 8), Some(0x20_0008));
        assert_eq!(table_slot(dev, 1 << 16), None);
    }

    #[test]
    fn commands_decode() {
        let mapti = ItsCmd::decode([0x0a | (5 << 32), 2 | (8200 << 32), 3, 0]);
        assert_eq!(
            mapti,
            ItsCmd::Mapti {
                dev: 5,
                event: 2,
                lpi: 8200,
                coll: 3
            }
        );
        let mapd = ItsCmd::decode([0x08 | (1 << 32), 4, (1 << 63) | 0x40_0000, 0]);
        assert_eq!(
            mapd,
            ItsCmd::Mapd {
                dev: 1,
                size: 5,
                itt: 0x40_0000,
                valid: true
            }
        );
        assert_eq!(
            ItsCmd::decode([0x09, 0, (1 << 63) | (2 << 16) | 7, 0]),
            ItsCmd::Mapc {
                coll: 7,
                target: 2,
                valid: true
            }
        );
        assert_eq!(
            ItsCmd::decode([0x0b, 9000, 1, 0]),
            ItsCmd::Mapti {
                dev: 0,
                event: 9000,
                lpi: 9000,
                coll: 1
            }
        );
        assert_eq!(ItsCmd::decode([0x42, 0, 0, 0]), ItsCmd::Unknown(0x42));
    }

    #[test]
    fn lpi_registers() {
        assert_eq!(prop_table(0x8000_0000 | 13).1, 1 << 14);
        assert_eq!(prop_table(0x8000_0000 | 31).1, 1 << 16);
        assert_eq!(lpi_config(0xa1), (0xa0, true));
        assert_eq!(
            pendbaser_write(PENDBASER_PTZ | 0x9_0000 | 0x7f),
            PENDBASER_PTZ | 0x9_0000 | (3 << 7)
        );
    }
}
