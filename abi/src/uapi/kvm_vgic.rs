//! The in-kernel vGICv3 device's configuration as a VMM sets it through KVM_SET_DEVICE_ATTR
//! (Documentation/virt/kvm/devices/arm-vgic-v3.rst): the distributor's and the redistributors'
//! guest physical addresses (KVM_DEV_ARM_VGIC_GRP_ADDR), the number of interrupts
//! (KVM_DEV_ARM_VGIC_GRP_NR_IRQS) and the initialisation (KVM_DEV_ARM_VGIC_GRP_CTRL), with
//! Linux's rules and errors (arch/arm64/kvm/vgic/vgic-kvm-device.c: kvm_vgic_addr,
//! vgic_check_iorange, vgic_set_common_attr; vgic-mmio-v3.c: vgic_v3_alloc_redist_region;
//! vgic-v3.c: vgic_v3_check_base, vgic_v3_map_resources).
//!
//! The kernel's device (kvm/vgic.rs) keeps the state these rules decide on; the registers
//! behind the frames, the guest's CPU interface and interrupt delivery are still to come.

use super::errno::Errno;

pub const KVM_DEV_TYPE_ARM_VGIC_V3: u32 = 7;

// Attribute groups.
pub const KVM_DEV_ARM_VGIC_GRP_ADDR: u32 = 0;
pub const KVM_DEV_ARM_VGIC_GRP_DIST_REGS: u32 = 1;
pub const KVM_DEV_ARM_VGIC_GRP_NR_IRQS: u32 = 3;
pub const KVM_DEV_ARM_VGIC_GRP_CTRL: u32 = 4;
pub const KVM_DEV_ARM_VGIC_GRP_REDIST_REGS: u32 = 5;
pub const KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS: u32 = 6;
pub const KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO: u32 = 7;
/// GRP_LEVEL_INFO attributes: the vCPU by affinity (bits 63:32), the kind of information
/// (bits 31:10; 0 is the line levels), the first of 32 INTIDs (bits 9:0, a multiple of 32).
pub const LEVEL_INFO_SHIFT: u32 = 10;
pub const LEVEL_INFO_MASK: u64 = 0x3f_ffff << LEVEL_INFO_SHIFT;
pub const LEVEL_INFO_INTID_MASK: u64 = 0x3ff;

// GRP_ADDR attributes.
pub const KVM_VGIC_V3_ADDR_TYPE_DIST: u64 = 2;
pub const KVM_VGIC_V3_ADDR_TYPE_REDIST: u64 = 3;
pub const KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION: u64 = 5;
// GRP_CTRL attributes.
pub const KVM_DEV_ARM_VGIC_CTRL_INIT: u64 = 0;
/// Writes the LPIs' pending bits to the guest's pending tables (a VMM's save before a
/// migration; the vGICv3's, not the ITS's).
pub const KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES: u64 = 3;
/// GRP_REDIST_REGS attributes: the redistributor's vCPU by affinity (Aff3.Aff2.Aff1.Aff0,
/// bits 63:32) and the register's offset in its frames (bits 31:0).
pub const GICR_TYPER: u64 = 0x8;

/// GICR_TYPER of the redistributor of a vCPU with MPIDR `mpidr` and id `id`
/// (vgic_mmio_read_v3r_typer without an ITS): affinity, processor number, Last.
pub fn gicr_typer(mpidr: u64, id: u32, last: bool) -> u64 {
    ((mpidr & 0xff_ffff) << 32) | (((id & 0xffff) as u64) << 8) | (last as u64) << 4
}

/// The distributor's frame, and one redistributor's two frames (RD_base, SGI_base).
pub const DIST_SIZE: u64 = 0x1_0000;
pub const REDIST_SIZE: u64 = 0x2_0000;
/// Both are 64K-aligned.
const ALIGN: u64 = 0x1_0000;

/// SGIs and PPIs, the interrupts every vCPU has of its own.
pub const NR_PRIVATE_IRQS: u32 = 32;
/// NR_IRQS may not exceed this (VGIC_MAX_RESERVED, the last INTID before the special
/// range): with the multiple-of-32 rule, 992 interrupts at most.
pub const MAX_IRQS: u32 = 1023;

/// One redistributor region: `count` redistributors from `base` (count 0: the legacy single
/// region KVM_VGIC_V3_ADDR_TYPE_REDIST sets, one redistributor per vCPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedistRegion {
    pub index: u32,
    pub base: u64,
    pub count: u32,
}

impl RedistRegion {
    /// Bytes it covers with `nr_vcpus` vCPUs (vgic_v3_rd_region_size).
    pub fn size(&self, nr_vcpus: u32) -> u64 {
        let n = if self.count == 0 {
            nr_vcpus
        } else {
            self.count
        };
        n as u64 * REDIST_SIZE
    }
}

/// A REDIST_REGION attribute's value: index (bits 11:0), flags (15:12), base (51:16), count
/// (63:52).
pub fn decode_region_attr(v: u64) -> (u32, u32, u64, u32) {
    (
        (v & 0xfff) as u32,
        ((v >> 12) & 0xf) as u32,
        v & 0x000f_ffff_ffff_0000,
        (v >> 52) as u32,
    )
}

pub fn encode_region_attr(r: &RedistRegion) -> u64 {
    r.index as u64 | r.base | (r.count as u64) << 52
}

/// Whether an I/O frame of `size` at `addr` may be placed in a VM with `ipa_bits` of IPA space
/// (vgic_check_iorange): EEXIST if the frame is placed already (`cur`), EINVAL if misaligned
/// or wrapping, E2BIG past the IPA space.
pub fn check_iorange(
    cur: Option<u64>,
    addr: u64,
    align: u64,
    size: u64,
    ipa_bits: u32,
) -> Result<(), Errno> {
    if cur.is_some() {
        return Err(Errno::EEXIST);
    }
    if !addr.is_multiple_of(align) || !size.is_multiple_of(align) {
        return Err(Errno::EINVAL);
    }
    let end = addr.checked_add(size).ok_or(Errno::EINVAL)?;
    if addr >> ipa_bits != 0 || end > 1u64 << ipa_bits {
        return Err(Errno::E2BIG);
    }
    Ok(())
}

/// The configuration a vGICv3 device holds before and after KVM_DEV_ARM_VGIC_CTRL_INIT.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VgicV3Config {
    pub dist: Option<u64>,
    /// SPIs (interrupts beyond the private 32); 0 until NR_IRQS or the initialisation sets it.
    pub nr_spis: u32,
    pub initialized: bool,
}

/// SPIs the initialisation gives a distributor NR_IRQS did not size (VGIC_NR_IRQS_LEGACY, 256
/// interrupts, less the private ones).
pub const DEFAULT_NR_SPIS: u32 = 256 - NR_PRIVATE_IRQS;

impl VgicV3Config {
    /// KVM_DEV_ARM_VGIC_GRP_NR_IRQS set: at least 32 SPIs, at most 992 interrupts, a multiple
    /// of 32 (EINVAL); once only, and not after the initialisation chose (EBUSY).
    pub fn set_nr_irqs(&mut self, val: u32) -> Result<(), Errno> {
        if !(NR_PRIVATE_IRQS + 32..=MAX_IRQS).contains(&val) || !val.is_multiple_of(32) {
            return Err(Errno::EINVAL);
        }
        if self.nr_spis != 0 {
            return Err(Errno::EBUSY);
        }
        self.nr_spis = val - NR_PRIVATE_IRQS;
        Ok(())
    }

    /// KVM_DEV_ARM_VGIC_GRP_NR_IRQS get: the private interrupts and the SPIs.
    pub fn nr_irqs(&self) -> u32 {
        self.nr_spis + NR_PRIVATE_IRQS
    }

    /// KVM_VGIC_V3_ADDR_TYPE_DIST set.
    pub fn set_dist(&mut self, addr: u64, ipa_bits: u32) -> Result<(), Errno> {
        check_iorange(self.dist, addr, ALIGN, DIST_SIZE, ipa_bits)?;
        self.dist = Some(addr);
        Ok(())
    }

    /// KVM_DEV_ARM_VGIC_CTRL_INIT: sizes the distributor if NR_IRQS did not; a second one
    /// changes nothing.
    pub fn init(&mut self) {
        if !self.initialized {
            if self.nr_spis == 0 {
                self.nr_spis = DEFAULT_NR_SPIS;
            }
            self.initialized = true;
        }
    }

    /// A new redistributor region after `regions` (vgic_v3_alloc_redist_region): the first has
    /// index 0, each next one the last's plus one (EINVAL); the legacy single region (count 0)
    /// neither follows nor precedes counted ones (EINVAL, EEXIST for a second legacy one); no
    /// overlap with another region, or, for the legacy one, with the distributor (EINVAL);
    /// then the frame rules of [`check_iorange`]. `unplaced`: vCPUs that have no redistributor
    /// yet and take one in the new region, after which the frames must not collide
    /// ([`check_base`], EINVAL).
    pub fn add_redist_region(
        &self,
        regions: &[RedistRegion],
        new: RedistRegion,
        nr_vcpus: u32,
        unplaced: u32,
        ipa_bits: u32,
    ) -> Result<(), Errno> {
        let size = new.size(nr_vcpus);
        new.base.checked_add(size).ok_or(Errno::EINVAL)?;
        match regions.last() {
            None if new.index != 0 => return Err(Errno::EINVAL),
            None => {}
            Some(last) => {
                if new.count == 0 && last.count != 0 {
                    return Err(Errno::EINVAL);
                }
                if new.count == 0 {
                    return Err(Errno::EEXIST);
                }
                if new.index != last.index + 1 {
                    return Err(Errno::EINVAL);
                }
            }
        }
        let overlaps = |base: u64, len: u64, r: &RedistRegion| {
            base + len > r.base && base < r.base + r.size(nr_vcpus)
        };
        if new.count == 0 {
            if let Some(d) = self.dist {
                if overlaps(d, DIST_SIZE, &new) {
                    return Err(Errno::EINVAL);
                }
            }
        }
        if regions.iter().any(|r| overlaps(new.base, size, r)) {
            return Err(Errno::EINVAL);
        }
        check_iorange(None, new.base, ALIGN, size, ipa_bits)?;
        if unplaced != 0 && new.size(nr_vcpus) != 0 {
            let with_new = regions.iter().chain(core::iter::once(&new));
            if !self.frames_apart(with_new, nr_vcpus, ipa_bits) {
                return Err(Errno::EINVAL);
            }
        }
        Ok(())
    }

    /// vgic_v3_check_base: every region inside the IPA space, and the distributor clear of
    /// every region.
    pub fn frames_apart<'a>(
        &self,
        regions: impl Iterator<Item = &'a RedistRegion> + Clone,
        nr_vcpus: u32,
        ipa_bits: u32,
    ) -> bool {
        if let Some(d) = self.dist {
            if d.checked_add(DIST_SIZE).is_none() {
                return false;
            }
        }
        for r in regions.clone() {
            if check_iorange(None, r.base, ALIGN, r.size(nr_vcpus), ipa_bits).is_err() {
                return false;
            }
        }
        match self.dist {
            None => true,
            Some(d) => !regions
                .into_iter()
                .any(|r| d + DIST_SIZE > r.base && d < r.base + r.size(nr_vcpus)),
        }
    }

    /// What the first KVM_RUN checks (vgic_v3_map_resources): every vCPU has a redistributor
    /// (`all_placed`) and the distributor is placed (ENXIO), the frames are apart (EINVAL),
    /// the device was initialised (EBUSY).
    pub fn check_base(
        &self,
        regions: &[RedistRegion],
        all_placed: bool,
        nr_vcpus: u32,
        ipa_bits: u32,
    ) -> Result<(), Errno> {
        if !all_placed || self.dist.is_none() {
            return Err(Errno::ENXIO);
        }
        if !self.frames_apart(regions.iter(), nr_vcpus, ipa_bits) {
            return Err(Errno::EINVAL);
        }
        if !self.initialized {
            return Err(Errno::EBUSY);
        }
        Ok(())
    }
}

/// The redistributor slots `regions` offer with `nr_vcpus` vCPUs: vCPU n takes the n-th, in
/// region order (vgic_v3_rdist_free_slot).
pub fn redist_slots(regions: &[RedistRegion], nr_vcpus: u32) -> u64 {
    regions.iter().map(|r| r.size(nr_vcpus) / REDIST_SIZE).sum()
}

// ---- interrupts a VMM raises (KVM_IRQ_LINE) ----

/// KVM_IRQ_LINE: `struct kvm_irq_level` (u32 irq, u32 level).
pub const KVM_IRQ_LINE: u32 = super::tty::iow(super::kvm::KVMIO, 0x61, 8);

/// What KVM_IRQ_LINE's `irq` names on arm64 (arch/arm64/include/uapi/asm/kvm.h): its type in
/// bits 27:24, the vCPU index in bits 23:16 (and 31:28 above them), the number in 15:0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqLine {
    /// The vCPU's own IRQ (0) or FIQ (1) line: only without an in-kernel GIC.
    Cpu { vcpu: u32, num: u32 },
    /// An SPI (32 and up).
    Spi { num: u32 },
    /// A PPI (16..32) of one vCPU.
    Ppi { vcpu: u32, num: u32 },
}

/// Decodes KVM_IRQ_LINE's `irq` (kvm_vm_ioctl_irq_line); None for an unknown type (EINVAL).
pub fn decode_irq_line(irq: u32) -> Option<IrqLine> {
    let vcpu = ((irq >> 16) & 0xff) + 256 * ((irq >> 28) & 0xf);
    let num = irq & 0xffff;
    match (irq >> 24) & 0xf {
        0 => Some(IrqLine::Cpu { vcpu, num }),
        1 => Some(IrqLine::Spi { num }),
        2 => Some(IrqLine::Ppi { vcpu, num }),
        _ => None,
    }
}

/// GICD_IIDR and GICR_IIDR as KVM's vGICv3 reports them: KVM's product ID, Arm as the
/// implementer, implementation revision 3 (vgic_mmio_read_v3_misc).
pub const KVM_GIC_IIDR: u32 = (0x4b << 24) | (3 << 12) | 0x43b;
/// The peripheral ID register PIDR2 of both frames: GICv3's architecture revision.
pub const GIC_PIDR2_V3: u32 = 0x3b;
/// ID bits of a distributor without LPIs (INTERRUPT_ID_BITS_SPIS: 10).
pub const ID_BITS_SPIS: u32 = 10;

/// GICD_TYPER of a distributor with `nr_irqs` interrupts and no ITS: ITLinesNumber and
/// IDbits.
pub fn gicd_typer(nr_irqs: u32) -> u32 {
    ((nr_irqs >> 5) - 1) | ((ID_BITS_SPIS - 1) << 19)
}

/// GICD_TYPER2.nASSGIcap: SGIs without an active state, which only a host with GICv4.1 and
/// vSGIs offers (system_supports_direct_sgis); Svelt never does, so GICD_TYPER2 reads zero
/// and GICD_CTLR.nASSGIreq is RAZ/WI.
pub const GICD_TYPER2_NASSGICAP: u32 = 1 << 8;

/// A VMM's write of GICD_TYPER2 through GRP_DIST_REGS (vgic_mmio_uaccess_write_v3_misc):
/// the value it reads is accepted; otherwise EBUSY once the vGIC is initialised, and EINVAL
/// for any other bit or for nASSGIcap where the host cannot offer it.
pub fn typer2_uaccess_write(current: u32, val: u32, initialized: bool) -> Result<(), Errno> {
    if val == current {
        return Ok(());
    }
    if initialized {
        return Err(Errno::EBUSY);
    }
    // Only nASSGIcap is writable, and only where the host has direct SGIs (never here).
    Err(Errno::EINVAL)
}

/// Decodes a write to ICC_SGI0R_EL1/ICC_SGI1R_EL1: the SGI's INTID, whether it goes to every
/// PE but the sender (IRM), and otherwise the affinity (Aff3.Aff2.Aff1 in MPIDR's layout)
/// and the 16-bit target list at Aff0 = RS * 16 + bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgiReq {
    pub intid: u32,
    pub broadcast: bool,
    pub aff: u64,
    pub rs: u32,
    pub targets: u16,
}

pub fn decode_sgi(v: u64) -> SgiReq {
    SgiReq {
        intid: ((v >> 24) & 0xf) as u32,
        broadcast: v & (1 << 40) != 0,
        aff: (((v >> 48) & 0xff) << 32) | (((v >> 32) & 0xff) << 16) | (((v >> 16) & 0xff) << 8),
        rs: ((v >> 44) & 0xf) as u32,
        targets: v as u16,
    }
}

impl SgiReq {
    /// Whether the PE with affinity `mpidr` (MPIDR's layout) is a target (the sender aside).
    pub fn targets_mpidr(&self, mpidr: u64) -> bool {
        if self.broadcast {
            return true;
        }
        let aff0 = (mpidr & 0xff) as u32;
        mpidr & 0xff_00ff_ff00 == self.aff
            && aff0 / 16 == self.rs
            && self.targets & (1 << (aff0 % 16)) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typer2_nassgicap_is_not_offered() {
        // vgic_init's test_v3_nassgicap: the same value passes, setting the bit is EINVAL
        // before INIT and EBUSY after.
        assert_eq!(typer2_uaccess_write(0, 0, false), Ok(()));
        assert_eq!(typer2_uaccess_write(0, 0, true), Ok(()));
        assert_eq!(
            typer2_uaccess_write(0, GICD_TYPER2_NASSGICAP, false),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            typer2_uaccess_write(0, GICD_TYPER2_NASSGICAP, true),
            Err(Errno::EBUSY)
        );
    }

    const IPA: u32 = 40;
    const MAX: u64 = 1 << IPA;

    fn region(count: u32, base: u64, index: u32) -> RedistRegion {
        RedistRegion { index, base, count }
    }

    #[test]
    fn region_attr_round_trips() {
        let v = (2u64 << 52) | 0x20_0000 | 1;
        assert_eq!(decode_region_attr(v), (1, 0, 0x20_0000, 2));
        assert_eq!(encode_region_attr(&region(2, 0x20_0000, 1)), v);
        assert_eq!(decode_region_attr(2 << 12).1, 2);
    }

    /// subtest_dist_rdist of Linux's vgic_init selftest, for GICv3 with 4 vCPUs.
    #[test]
    fn dist_and_legacy_redist() {
        let mut c = VgicV3Config::default();
        assert_eq!(c.set_dist(ALIGN / 0x10, IPA), Err(Errno::EINVAL));
        assert_eq!(c.set_dist(MAX, IPA), Err(Errno::E2BIG));
        let legacy = |base| region(0, base, 0);
        assert_eq!(
            c.add_redist_region(&[], legacy(ALIGN / 0x10), 4, 0, IPA),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            c.add_redist_region(&[], legacy(MAX), 4, 0, IPA),
            Err(Errno::E2BIG)
        );
        assert_eq!(
            c.add_redist_region(&[], legacy(MAX - ALIGN), 4, 0, IPA),
            Err(Errno::E2BIG)
        );
        assert_eq!(c.add_redist_region(&[], legacy(0), 4, 0, IPA), Ok(()));
        let regions = [legacy(0)];
        assert_eq!(
            c.add_redist_region(&regions, legacy(0xe_0000), 4, 0, IPA),
            Err(Errno::EEXIST)
        );
        assert_eq!(
            c.add_redist_region(&regions, region(4, 0x10_0000, 0), 4, 0, IPA),
            Err(Errno::EINVAL)
        );
        // Overlapping the redistributors: only the first run sees it.
        assert_eq!(c.set_dist(4 * REDIST_SIZE - ALIGN, IPA), Ok(()));
        assert_eq!(c.set_dist(0x100_0000, IPA), Err(Errno::EEXIST));
        c.init();
        assert_eq!(c.check_base(&regions, true, 4, IPA), Err(Errno::EINVAL));
        assert_eq!(c.check_base(&regions, false, 4, IPA), Err(Errno::ENXIO));
    }

    /// subtest_v3_redist_regions of the same selftest.
    #[test]
    fn redist_regions() {
        let c = VgicV3Config::default();
        let add = |rs: &[RedistRegion], r| c.add_redist_region(rs, r, 4, 0, IPA);
        assert_eq!(add(&[], region(2, 0x20_0000, 1)), Err(Errno::EINVAL));
        assert_eq!(add(&[], region(2, 0x20_1000, 0)), Err(Errno::EINVAL));
        assert_eq!(add(&[], region(2, 0x20_0000, 0)), Ok(()));
        let one = [region(2, 0x20_0000, 0)];
        assert_eq!(add(&one, region(2, 0x20_0000, 1)), Err(Errno::EINVAL));
        assert_eq!(add(&one, region(1, 0x21_0000, 2)), Err(Errno::EINVAL));
        assert_eq!(add(&one, region(1, 0x24_0000, 2)), Err(Errno::EINVAL));
        assert_eq!(add(&one, region(1, 0x24_0000, 1)), Ok(()));
        let two = [one[0], region(1, 0x24_0000, 1)];
        assert_eq!(add(&two, region(1, MAX, 2)), Err(Errno::E2BIG));
        assert_eq!(add(&two, region(2, MAX - 0x3_0000, 2)), Err(Errno::E2BIG));
        assert_eq!(add(&two, region(0, 0x26_0000, 0)), Err(Errno::EINVAL));
        assert_eq!(redist_slots(&two, 4), 3);
        // With the distributor at 0x260000, a region there that the fourth vCPU would take.
        let mut c = c.clone();
        assert_eq!(c.set_dist(0x26_0000, IPA), Ok(()));
        assert_eq!(
            c.add_redist_region(&two, region(1, 0x26_0000, 2), 4, 1, IPA),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn typer() {
        assert_eq!(gicr_typer(0x8000_0003, 3, true) as u32, 0x310);
        assert_eq!(gicr_typer(0x8000_0102, 0x12, false), 0x102_0000_1200);
    }

    #[test]
    fn irq_line_and_sgi() {
        assert_eq!(KVM_IRQ_LINE, 0x4008_ae61);
        assert_eq!(decode_irq_line(0x0100_0020), Some(IrqLine::Spi { num: 32 }));
        assert_eq!(
            decode_irq_line(0x1203_001b),
            Some(IrqLine::Ppi { vcpu: 259, num: 27 })
        );
        assert_eq!(decode_irq_line(0x0300_0000), None);
        assert_eq!(gicd_typer(256), 7 | (9 << 19));
        let r = decode_sgi((1 << 24) | (1 << 16) | 0b101);
        assert!(r.targets_mpidr(0x100) && r.targets_mpidr(0x102) && !r.targets_mpidr(0x101));
        assert!(!r.targets_mpidr(0x0));
        assert!(decode_sgi(1 << 40).targets_mpidr(0x1234));
    }

    #[test]
    fn nr_irqs_and_init() {
        let mut c = VgicV3Config::default();
        for bad in [32, 63, 1024, 100] {
            assert_eq!(c.set_nr_irqs(bad), Err(Errno::EINVAL), "{bad}");
        }
        let mut e = VgicV3Config::default();
        assert_eq!(e.set_nr_irqs(992), Ok(()));
        assert_eq!(c.set_nr_irqs(64), Ok(()));
        assert_eq!(c.nr_irqs(), 64);
        assert_eq!(c.set_nr_irqs(128), Err(Errno::EBUSY));
        c.init();
        assert_eq!(c.nr_irqs(), 64);
        let mut d = VgicV3Config::default();
        d.init();
        assert_eq!(d.nr_irqs(), 256);
        assert_eq!(d.set_nr_irqs(64), Err(Errno::EBUSY));
        assert_eq!(d.check_base(&[], true, 1, IPA), Err(Errno::ENXIO));
    }
}
