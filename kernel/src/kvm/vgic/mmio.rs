//! The vGICv3's distributor and redistributor registers, as the guest reaches them through
//! stage-2 faults in their frames and as the VMM reaches them through the device's
//! GRP_DIST_REGS and GRP_REDIST_REGS attributes (Linux's vgic-mmio-v3.c and vgic-mmio.c;
//! the GICv3 architecture specification, chapter 12, for the layouts). Affinity routing is
//! always on and security is disabled (GICD_CTLR.ARE and DS read as one): the distributor's
//! registers for the private interrupts read as zero, the redistributors' SGI frames hold
//! them.

use super::irq::{Irq, NR_SGIS};
use super::Vgic;
use svelt_abi::uapi::kvm_vgic as g;
use svelt_abi::uapi::kvm_vgic_its as its;

/// Which frame an access lands in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    Dist,
    /// vCPU `n`'s redistributor control frame (RD_base).
    Rd(u32),
    /// vCPU `n`'s SGI and PPI frame (SGI_base).
    Sgi(u32),
}

const CTLR: u64 = 0x0;
const TYPER: u64 = 0x4;
pub const GICD_IIDR: u64 = 0x8;
pub const GICD_TYPER2: u64 = 0xc;
const IGROUPR: u64 = 0x080;
const ISENABLER: u64 = 0x100;
const ICENABLER: u64 = 0x180;
const ISPENDR: u64 = 0x200;
const ICPENDR: u64 = 0x280;
const ISACTIVER: u64 = 0x300;
const ICACTIVER: u64 = 0x380;
const IPRIORITYR: u64 = 0x400;
const ICFGR: u64 = 0xc00;
const IROUTER: u64 = 0x6000;
const PIDR2: u64 = 0xffe8;
const GICR_IIDR: u64 = 0x4;
const GICR_TYPER: u64 = 0x8;

/// The one-bit-per-interrupt register banks: (base, what a read shows, what a write of a
/// one does).
type Get = fn(&Irq) -> bool;
type Set = fn(&mut Irq);
const BIT_REGS: [(u64, Get, Set); 7] = [
    (IGROUPR, |q| q.group1, |_| {}),
    (ISENABLER, |q| q.enabled, |q| q.enabled = true),
    (ICENABLER, |q| q.enabled, |q| q.enabled = false),
    (ISPENDR, |q| q.pending(), |q| q.latch_pending()),
    (ICPENDR, |q| q.pending(), |q| q.latch = false),
    (ISACTIVER, |q| q.active, |q| q.active = true),
    (ICACTIVER, |q| q.active, |q| q.active = false),
];

impl Vgic {
    /// The frame and offset `ipa` falls in, if it is one of this vGIC's.
    pub fn frame_at(&self, ipa: u64) -> Option<(Frame, u64)> {
        if let Some(d) = self.cfg.dist {
            if (d..d + g::DIST_SIZE).contains(&ipa) {
                return Some((Frame::Dist, ipa - d));
            }
        }
        self.placed.iter().find_map(|(&id, &(pos, slot))| {
            let base = self.regions[pos].base + slot as u64 * g::REDIST_SIZE;
            let off = ipa.checked_sub(base).filter(|&o| o < g::REDIST_SIZE)?;
            Some(if off < g::DIST_SIZE {
                (Frame::Rd(id), off)
            } else {
                (Frame::Sgi(id), off - g::DIST_SIZE)
            })
        })
    }

    /// The interrupt a bank register's bit or byte at `index` names in `frame` (None: there
    /// is none there, or it is a private one in the distributor's view).
    fn bank_irq(&mut self, frame: Frame, index: u64) -> Option<&mut Irq> {
        let intid = u32::try_from(index).ok()?;
        match frame {
            Frame::Dist if intid >= g::NR_PRIVATE_IRQS => self.irq_mut(0, intid),
            Frame::Sgi(v) if intid < g::NR_PRIVATE_IRQS => self.irq_mut(v, intid),
            _ => None,
        }
    }

    /// A 32-bit register at `off` of `frame`; None where there is none.
    pub fn read32(&mut self, frame: Frame, off: u64) -> Option<u32> {
        let banks = matches!(frame, Frame::Dist | Frame::Sgi(_));
        if banks {
            for (base, get, _) in BIT_REGS {
                if (base..base + 0x80).contains(&off) {
                    let first = (off - base) * 8;
                    let mut v = 0u32;
                    for b in 0..32 {
                        if self.bank_irq(frame, first + b).is_some_and(|q| get(q)) {
                            v |= 1 << b;
                        }
                    }
                    return Some(v);
                }
            }
            if (IPRIORITYR..IPRIORITYR + 0x400).contains(&off) {
                let first = off & !3;
                let mut v = 0u32;
                for b in 0..4 {
                    let p = self
                        .bank_irq(frame, first - IPRIORITYR + b)
                        .map_or(0, |q| q.priority);
                    v |= (p as u32) << (8 * b);
                }
                return Some(v);
            }
            if (ICFGR..ICFGR + 0x100).contains(&off) {
                let first = (off - ICFGR) * 4;
                let mut v = 0u32;
                for b in 0..16 {
                    if self.bank_irq(frame, first + b).is_some_and(|q| q.edge) {
                        v |= 2 << (2 * b);
                    }
                }
                return Some(v);
            }
        }
        let nr_irqs = self.cfg.nr_irqs();
        match (frame, off) {
            (Frame::Dist, CTLR) => Some(((self.enabled as u32) << 1) | (1 << 4) | (1 << 6)),
            (Frame::Dist, TYPER) if self.has_its() => Some(
                (g::gicd_typer(nr_irqs) & !its::GICD_TYPER_IDBITS_MASK)
                    | ((its::ID_BITS_ITS - 1) << 19)
                    | its::GICD_TYPER_LPIS,
            ),
            (Frame::Dist, TYPER) => Some(g::gicd_typer(nr_irqs)),
            (Frame::Dist, GICD_IIDR) | (Frame::Rd(_), GICR_IIDR) => Some(g::KVM_GIC_IIDR),
            (Frame::Dist, GICD_TYPER2) => Some(0),
            (Frame::Dist, o) if (IROUTER..IROUTER + 8 * 1024).contains(&o) => {
                let intid = (o - IROUTER) / 8;
                let route = match self.bank_irq(frame, intid) {
                    Some(q) => q.route,
                    None => 0,
                };
                Some(if o & 4 == 0 {
                    route as u32
                } else {
                    (route >> 32) as u32
                })
            }
            (_, PIDR2) => Some(g::GIC_PIDR2_V3),
            // Changes are visible at once (CES), IR: no Group 0 in Non-secure; EnableLPIs.
            (Frame::Rd(v), CTLR) => Some(0b110 | self.lpis_on(v) as u32),
            (Frame::Rd(v), o) if o == GICR_TYPER || o == GICR_TYPER + 4 => {
                let mut typer = g::gicr_typer(super::super::vcpu::mpidr_for(v), v, self.is_last(v));
                if self.has_its() {
                    typer |= its::GICR_TYPER_PLPIS;
                }
                Some(if o == GICR_TYPER {
                    typer as u32
                } else {
                    (typer >> 32) as u32
                })
            }
            (Frame::Rd(_), o) if o & !4 == its::GICR_PROPBASER => Some(half(self.propbaser, o)),
            (Frame::Rd(v), o) if o & !4 == its::GICR_PENDBASER => {
                let pend = self.rd_lpi.get(&v).map_or(0, |r| r.1) & !its::PENDBASER_PTZ;
                Some(half(pend, o))
            }
            // STATUSR, WAKER (the redistributor never sleeps): zero, writes ignored.
            (Frame::Rd(_), 0x10 | 0x14) => Some(0),
            (Frame::Dist, 0x10) => Some(0),
            _ => None,
        }
    }

    /// Writes a 32-bit register; false where there is none.
    pub fn write32(&mut self, frame: Frame, off: u64, val: u32) -> bool {
        let banks = matches!(frame, Frame::Dist | Frame::Sgi(_));
        if banks {
            for (base, _, set) in BIT_REGS {
                if (base..base + 0x80).contains(&off) {
                    let first = (off - base) * 8;
                    for b in 0..32 {
                        if base == IGROUPR {
                            if let Some(q) = self.bank_irq(frame, first + b) {
                                q.group1 = val & (1 << b) != 0;
                            }
                        } else if val & (1 << b) != 0 {
                            if let Some(q) = self.bank_irq(frame, first + b) {
                                set(q);
                            }
                        }
                    }
                    return true;
                }
            }
            if (IPRIORITYR..IPRIORITYR + 0x400).contains(&off) {
                for b in 0..4 {
                    self.write_priority(frame, (off & !3) + b, (val >> (8 * b)) as u8);
                }
                return true;
            }
            if (ICFGR..ICFGR + 0x100).contains(&off) {
                let first = (off - ICFGR) * 4;
                for b in 0..16 {
                    // SGIs are always edge-triggered (their ICFGR is read-only).
                    if first + b < NR_SGIS as u64 {
                        continue;
                    }
                    if let Some(q) = self.bank_irq(frame, first + b) {
                        q.edge = val & (2 << (2 * b)) != 0;
                    }
                }
                return true;
            }
        }
        match (frame, off) {
            (Frame::Dist, CTLR) => {
                self.enabled = val & 2 != 0;
                true
            }
            // EnableLPIs, with an ITS (vgic_mmio_write_v3r_ctlr): turning it off drops the
            // vCPU's pending LPIs.
            (Frame::Rd(v), CTLR) => {
                if self.has_its() {
                    let on = val & its::GICR_CTLR_ENABLE_LPIS != 0;
                    let was = self.lpis_on(v);
                    self.rd_lpi.entry(v).or_default().0 = on;
                    if on && !was {
                        self.lpis_turned_on = Some(v);
                    }
                    if was && !on {
                        let route = super::its::lpi_route(Some(v));
                        for q in self.lpis.values_mut() {
                            if q.route == route {
                                q.latch = false;
                            }
                        }
                    }
                }
                true
            }
            // Both are fixed while the vCPU's LPIs are on (vgic_mmio_write_propbase,
            // _pendbase); the 32-bit halves are written one at a time.
            (Frame::Rd(v), o) if o & !4 == its::GICR_PROPBASER => {
                if !self.lpis_on(v) {
                    let new = its::update_half(self.propbaser, o & 4 != 0, val);
                    self.propbaser = its::propbaser_write(new);
                }
                true
            }
            (Frame::Rd(v), o) if o & !4 == its::GICR_PENDBASER => {
                if !self.lpis_on(v) {
                    let r = self.rd_lpi.entry(v).or_default();
                    r.1 = its::pendbaser_write(its::update_half(r.1, o & 4 != 0, val));
                }
                true
            }
            (Frame::Dist, o) if (IROUTER..IROUTER + 8 * 1024).contains(&o) => {
                let intid = (o - IROUTER) / 8;
                if let Some(q) = self.bank_irq(frame, intid) {
                    // Aff3 in the high word, Aff2..Aff0 in the low (IRM is not offered).
                    q.route = if o & 4 == 0 {
                        (q.route & !0xff_ffff) | (val & 0xff_ffff) as u64
                    } else {
                        (q.route & 0xff_ffff) | (((val & 0xff) as u64) << 32)
                    };
                }
                true
            }
            _ => self.read32(frame, off).is_some(),
        }
    }

    /// One priority byte (IPRIORITYR is byte-accessible).
    fn write_priority(&mut self, frame: Frame, byte: u64, val: u8) {
        if let Some(q) = self.bank_irq(frame, byte - IPRIORITYR) {
            // The CPU interface has 5 priority bits (ICH_VTR_EL2.PRIbits on QEMU and most
            // cores): the low three read as zero, as KVM's GICv3 model keeps them.
            q.priority = val & 0xf8;
        }
    }

    /// A guest load of `len` bytes at `off`: 8 for the 64-bit registers (two halves), 1 for
    /// the priority bytes, 4 for everything; other widths and holes read as zero.
    pub fn guest_read(&mut self, frame: Frame, off: u64, len: u32) -> u64 {
        match len {
            4 if off & 3 == 0 => self.read32(frame, off).unwrap_or(0) as u64,
            8 if off & 7 == 0 && is64(frame, off) => {
                let lo = self.read32(frame, off).unwrap_or(0) as u64;
                lo | (self.read32(frame, off + 4).unwrap_or(0) as u64) << 32
            }
            1 if (IPRIORITYR..IPRIORITYR + 0x400).contains(&off)
                && matches!(frame, Frame::Dist | Frame::Sgi(_)) =>
            {
                let w = self.read32(frame, off & !3).unwrap_or(0);
                ((w >> (8 * (off & 3))) & 0xff) as u64
            }
            _ => 0,
        }
    }

    /// A guest store (the same widths as loads; others are ignored).
    pub fn guest_write(&mut self, frame: Frame, off: u64, len: u32, val: u64) {
        match len {
            4 if off & 3 == 0 => {
                self.write32(frame, off, val as u32);
            }
            8 if off & 7 == 0 && is64(frame, off) => {
                self.write32(frame, off, val as u32);
                self.write32(frame, off + 4, (val >> 32) as u32);
            }
            1 if (IPRIORITYR..IPRIORITYR + 0x400).contains(&off)
                && matches!(frame, Frame::Dist | Frame::Sgi(_)) =>
            {
                self.write_priority(frame, off, val as u8);
            }
            _ => {}
        }
    }
}

/// The low or high half of a 64-bit register, by the offset's bit 2.
fn half(reg: u64, off: u64) -> u32 {
    if off & 4 == 0 {
        reg as u32
    } else {
        (reg >> 32) as u32
    }
}

/// The registers a 64-bit access may reach.
fn is64(frame: Frame, off: u64) -> bool {
    match frame {
        Frame::Dist => (IROUTER..IROUTER + 8 * 1024).contains(&off),
        Frame::Rd(_) => matches!(off, GICR_TYPER | 0x70 | 0x78),
        Frame::Sgi(_) => false,
    }
}
