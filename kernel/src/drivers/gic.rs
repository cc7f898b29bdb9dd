//! Generic Interrupt Controller, v3 (system-register CPU interface, redistributors) and v2
//! (memory-mapped CPU interface). Private interrupts (the timer, SGIs) and the console UART's
//! shared one: every interrupt is group 1 (v3; group 0 on v2), priority 0x80; private ones go to
//! the CPU they belong to, the shared one to the boot CPU.

use crate::arch::cpu;
use crate::arch::sysreg::*;
use spin::Once;
use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::register_structs;
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};

register_structs! {
    /// GICD, and the GICv3 redistributor's SGI/PPI frame, which has the same layout for the
    /// banked registers Svelt uses.
    pub DistRegs {
        (0x000 => ctlr: ReadWrite<u32>),
        (0x004 => typer: ReadOnly<u32>),
        (0x008 => _r0),
        (0x080 => igroupr: [ReadWrite<u32>; 32]),
        (0x100 => isenabler: [ReadWrite<u32>; 32]),
        (0x180 => icenabler: [ReadWrite<u32>; 32]),
        (0x200 => _r1),
        (0x400 => ipriorityr: [ReadWrite<u8>; 1024]),
        (0x800 => itargetsr: [ReadWrite<u8>; 1024]),
        (0xc00 => icfgr: [ReadWrite<u32>; 64]),
        (0xd00 => _r2),
        (0xf00 => sgir: WriteOnly<u32>),
        (0xf04 => @END),
    }
}

register_structs! {
    /// GICv3 distributor's interrupt routing registers (GICD_IROUTER<n>, at GICD + 0x6000).
    pub IrouterRegs {
        (0x0000 => irouter: [ReadWrite<u64>; 1024]),
        (0x2000 => @END),
    }
}

const GICD_IROUTER: usize = 0x6000;

register_structs! {
    /// GICv3 redistributor control frame.
    pub RedistRegs {
        (0x00 => ctlr: ReadWrite<u32>),
        (0x04 => iidr: ReadOnly<u32>),
        (0x08 => typer: ReadOnly<u64>),
        (0x10 => statusr: ReadWrite<u32>),
        (0x14 => waker: ReadWrite<u32>),
        (0x18 => @END),
    }
}

register_structs! {
    /// GICv2 CPU interface.
    pub CpuIfRegs {
        (0x00 => ctlr: ReadWrite<u32>),
        (0x04 => pmr: ReadWrite<u32>),
        (0x08 => bpr: ReadWrite<u32>),
        (0x0c => iar: ReadOnly<u32>),
        (0x10 => eoir: WriteOnly<u32>),
        (0x14 => @END),
    }
}

const GICR_FRAME: usize = 0x10000;
/// The most redistributor regions a GIC is described with here.
pub const MAX_REDIST_REGIONS: usize = 8;
const GICR_TYPER_LAST: u64 = 1 << 4;
const GICR_TYPER_VLPIS: u64 = 1 << 1;
const WAKER_PROCESSOR_SLEEP: u32 = 1 << 1;
const WAKER_CHILDREN_ASLEEP: u32 = 1 << 2;
const SPURIOUS: u32 = 1020;
const PRIORITY: u8 = 0x80;

pub enum Gic {
    V3 {
        dist: &'static DistRegs,
        irouter: &'static IrouterRegs,
        /// The redistributor regions' (virtual address, mapped size).
        redists: [(usize, usize); MAX_REDIST_REGIONS],
        nredists: usize,
    },
    V2 {
        dist: &'static DistRegs,
        cpu: &'static CpuIfRegs,
    },
}

// SAFETY: Gic holds references to MMIO frames; the distributor is written only by `init` (before
// it is published) and the per-CPU frames only by their own CPU, all by volatile accesses.
unsafe impl Send for Gic {}
// SAFETY: moving a Gic to another CPU moves only references to MMIO frames, which are
// 'static device mappings.
unsafe impl Sync for Gic {}

static GIC: Once<Gic> = Once::new();

/// # Safety
/// `va` is a device mapping of at least `size_of::<T>()` bytes of T's registers, valid for
/// 'static.
unsafe fn regs<T>(va: usize) -> &'static T {
    // SAFETY: `va` maps T's registers for 'static (this function's contract).
    unsafe { &*(va as *const T) }
}

/// Sets up the distributor once, on the boot CPU.
///
/// # Safety
/// The virtual addresses are device mappings of the GIC's frames, valid for 'static: `dist`,
/// and in `second` (virtual address, size; not empty) for v3 each redistributor region (the
/// first `MAX_REDIST_REGIONS` are used), for v2 the CPU interface (the first entry).
pub unsafe fn init(version: u8, dist: usize, second: &[(usize, usize)]) -> &'static Gic {
    // SAFETY: `dist` is the distributor's device mapping, valid for 'static (`init`'s contract).
    let d: &'static DistRegs = unsafe { regs(dist) };
    d.ctlr.set(0);
    let gic = if version == 3 {
        // Wait for RWP: the disable has taken effect.
        while d.ctlr.get() & (1 << 31) != 0 {}
        // ARE (affinity routing) and both groups enabled; the same bits work whether the GIC
        // has one security state (QEMU without secure=on) or shows us the non-secure view.
        d.ctlr.set((1 << 4) | (1 << 1) | 1);
        Gic::V3 {
            dist: d,
            // SAFETY: a v3 distributor's mapping covers its 64 KiB frame (`init`'s contract),
            // which holds the IROUTER array.
            irouter: unsafe { regs(dist + GICD_IROUTER) },
            redists: core::array::from_fn(|i| second.get(i).copied().unwrap_or((0, 0))),
            nredists: second.len().min(MAX_REDIST_REGIONS),
        }
    } else {
        d.ctlr.set(1);
        // SAFETY: `second` is the v2 CPU interface's device mapping, valid for 'static (`init`'s
        // contract).
        let cpu = unsafe { regs(second.first().map_or(0, |s| s.0)) };
        Gic::V2 { dist: d, cpu }
    };
    GIC.call_once(|| gic)
}

impl Gic {
    /// Brings up this CPU's interface (redistributor for v3) and enables private interrupt
    /// `intid` (a PPI, 16..32) on it.
    pub fn init_cpu(&self, ppi: u32) -> Result<(), &'static str> {
        match self {
            Gic::V3 {
                redists, nredists, ..
            } => {
                let rd = redists[..*nredists]
                    .iter()
                    .find_map(|&(base, size)| Self::find_redist(base, size))
                    .ok_or("no redistributor for this CPU")?;
                // SAFETY: rd is a frame inside the mapped redistributor region.
                let ctl: &RedistRegs = unsafe { regs(rd) };
                ctl.waker.set(ctl.waker.get() & !WAKER_PROCESSOR_SLEEP);
                while ctl.waker.get() & WAKER_CHILDREN_ASLEEP != 0 {
                    core::hint::spin_loop();
                }
                // SAFETY: the SGI/PPI frame follows the control frame inside the region.
                let sgi: &DistRegs = unsafe { regs(rd + GICR_FRAME) };
                sgi.igroupr[0].set(u32::MAX);
                sgi.ipriorityr[ppi as usize].set(PRIORITY);
                sgi.ipriorityr[0].set(PRIORITY);
                sgi.isenabler[0].set((1 << ppi) | 1);
                ICC_SRE_EL1.set(ICC_SRE_EL1.get() | 1);
                aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
                ICC_PMR_EL1.set(0xff);
                ICC_BPR1_EL1.set(0);
                ICC_IGRPEN1_EL1.set(1);
                aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
            }
            Gic::V2 { dist, cpu } => {
                dist.ipriorityr[ppi as usize].set(PRIORITY);
                dist.ipriorityr[0].set(PRIORITY);
                dist.isenabler[0].set((1 << ppi) | 1);
                cpu.pmr.set(0xf0);
                cpu.bpr.set(0);
                cpu.ctlr.set(1);
            }
        }
        Ok(())
    }

    /// Enables shared peripheral interrupt `intid` (32..1020), level-sensitive, routed to the
    /// calling CPU.
    pub fn enable_spi(&self, intid: u32) {
        let n = intid as usize;
        if !(32..1020).contains(&n) {
            return;
        }
        let bit = 1u32 << (n % 32);
        let d = match self {
            Gic::V3 { dist, irouter, .. } => {
                dist.igroupr[n / 32].set(dist.igroupr[n / 32].get() | bit);
                let m = cpu::mpidr();
                irouter.irouter[n].set(m & 0xff_00ff_ffff);
                dist
            }
            Gic::V2 { dist, .. } => {
                // ITARGETSR0..7 read back the reading CPU's own target bit.
                let me = dist.itargetsr[0].get();
                dist.itargetsr[n].set(if me == 0 { 1 } else { me });
                dist
            }
        };
        d.ipriorityr[n].set(PRIORITY);
        let shift = (n % 16) * 2;
        d.icfgr[n / 16].set(d.icfgr[n / 16].get() & !(2 << shift));
        d.isenabler[n / 32].set(bit);
    }

    /// The redistributor in region `[base, base + size)` whose affinity matches this CPU's
    /// MPIDR. The region's last frame says so (GICR_TYPER.Last).
    fn find_redist(base: usize, size: usize) -> Option<usize> {
        let m = cpu::mpidr();
        let aff = ((m >> 32) & 0xff) << 24 | (m & 0xff_ffff);
        let mut frame = base;
        while frame + 2 * GICR_FRAME <= base + size {
            // SAFETY: frame is inside the mapped redistributor region.
            let rd: &RedistRegs = unsafe { regs(frame) };
            let typer = rd.typer.get();
            if typer >> 32 == aff {
                return Some(frame);
            }
            if typer & GICR_TYPER_LAST != 0 {
                return None;
            }
            frame += if typer & GICR_TYPER_VLPIS != 0 { 4 } else { 2 } * GICR_FRAME;
        }
        None
    }

    /// Acknowledges the highest-priority pending interrupt, if any.
    pub fn ack(&self) -> Option<u32> {
        let id = match self {
            Gic::V3 { .. } => ICC_IAR1_EL1.read_with_effects() as u32 & 0xff_ffff,
            Gic::V2 { cpu, .. } => cpu.iar.get() & 0x3ff,
        };
        (id < SPURIOUS).then_some(id)
    }

    /// Sends software-generated interrupt `id` (0..16) to CPU `cpu` (a Svelt CPU number: its
    /// GICv2 CPU interface) whose MPIDR affinity is `m` (what GICv3 routes by).
    pub fn send_sgi(&self, id: u32, cpu: usize, m: u64) {
        match self {
            Gic::V3 { .. } => {
                let (aff3, aff2, aff1, aff0) = (
                    (m >> 32) & 0xff,
                    (m >> 16) & 0xff,
                    (m >> 8) & 0xff,
                    m & 0xff,
                );
                // The target list holds 16 Aff0 values; RS (range selector) picks which 16.
                let (rs, bit) = (aff0 >> 4, aff0 & 0xf);
                let v =
                    aff3 << 48 | rs << 44 | aff2 << 32 | (id as u64) << 24 | aff1 << 16 | 1 << bit;
                // The write must follow the stores the target will look at.
                aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::ISHST);
                ICC_SGI1R_EL1.set(v);
                aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
            }
            Gic::V2 { dist, .. } => {
                aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::ISHST);
                dist.sgir.set((1 << (16 + (cpu & 7))) | id);
            }
        }
    }

    pub fn eoi(&self, id: u32) {
        match self {
            Gic::V3 { .. } => ICC_EOIR1_EL1.set(id as u64),
            Gic::V2 { cpu, .. } => cpu.eoir.set(id),
        }
    }
}

pub fn get() -> Option<&'static Gic> {
    GIC.get()
}
