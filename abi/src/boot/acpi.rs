//! The few ACPI tables the EFI stub reads to describe a machine that comes without a device
//! tree: MADT (CPUs and the GIC), GTDT (the architected timer's interrupts), SPCR (the console
//! UART) and FADT (the PSCI conduit). MCFG, DSDT and the rest are not read. The result is
//! written out as a DTB (`write_fdt`), so the kernel proper boots the same way either way.
//!
//! Tables are reached through [`PhysMem`], which the stub implements over its identity map and
//! the host tests over table bytes dumped from QEMU.

use crate::boot::fdt::{node_name, Chosen, FdtError, FdtWriter};
use crate::boot::memrange::Range;

/// The CPUs a description holds; more are left out.
pub const MAX_CPUS: usize = crate::uapi::cpumask::NR_CPUS;
/// Redistributor regions kept (the kernel's GIC driver maps as many).
pub const MAX_REDIST_REGIONS: usize = 8;

/// Physical memory as seen by the parser.
pub trait PhysMem {
    /// `len` bytes at physical address `pa`, or `None` if they cannot be read.
    fn read(&self, pa: u64, len: usize) -> Option<&[u8]>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcpiError {
    /// No valid RSDP (signature, checksum).
    Rsdp,
    /// No valid XSDT/RSDT.
    Rsdt,
    /// A required table is missing or broken: its signature.
    Table([u8; 4]),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gic {
    pub version: u8,
    pub dist: u64,
    /// v3: the redistributor regions, in MADT order (one per GICR structure, or the span of
    /// the CPUs' own frames); v2: the CPU interface (8 KiB), alone.
    pub second: [Range; MAX_REDIST_REGIONS],
    pub nsecond: usize,
}

impl Gic {
    fn new(version: u8, dist: u64, regions: &[Range]) -> Gic {
        let mut second = [Range::new(0, 0); MAX_REDIST_REGIONS];
        let n = regions.len().min(MAX_REDIST_REGIONS);
        second[..n].copy_from_slice(&regions[..n]);
        Gic {
            version,
            dist,
            second,
            nsecond: n,
        }
    }

    pub fn seconds(&self) -> &[Range] {
        &self.second[..self.nsecond]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerIrq {
    pub gsiv: u32,
    /// GTDT flags: bit 0 edge-triggered, bit 1 active low.
    pub flags: u32,
}

/// The EL1 secure, EL1 non-secure, EL1 virtual and EL2 timers, in the device tree's order.
pub type Timer = [TimerIrq; 4];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UartKind {
    Pl011,
    SbsaGeneric,
    Ns16550,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uart {
    pub kind: UartKind,
    pub base: u64,
    /// Global system interrupt, when SPCR gives one for the GIC.
    pub gsiv: Option<u32>,
    /// Bytes per register access, from the base address's access size (1, 2, 4 or 8; a
    /// size left undefined reads as 1). A 16550's registers are that far apart.
    pub access_bytes: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsciConduit {
    Hvc,
    Smc,
}

/// A machine as the ACPI tables describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    pub cpus: [u64; MAX_CPUS],
    pub ncpus: usize,
    pub gic: Option<Gic>,
    pub timer: Option<Timer>,
    pub uart: Option<Uart>,
    pub psci: Option<PsciConduit>,
}

fn le16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}
fn le32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}
fn le64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

fn checksum_ok(b: &[u8]) -> bool {
    b.iter().fold(0u8, |a, &x| a.wrapping_add(x)) == 0
}

const HEADER: usize = 36;

/// A whole table at `pa`: its header's length, at least the header, checksum correct.
fn table<M: PhysMem>(mem: &M, pa: u64) -> Option<&[u8]> {
    let len = le32(mem.read(pa, HEADER)?, 4)? as usize;
    if !(HEADER..=1 << 20).contains(&len) {
        return None;
    }
    let t = mem.read(pa, len)?;
    checksum_ok(t).then_some(t)
}

/// The tables the RSDP at `rsdp` lists, found by signature.
pub struct Tables<'m, M: PhysMem> {
    mem: &'m M,
    /// The XSDT (8-byte entries) or RSDT (4-byte entries).
    root: &'m [u8],
    entry: usize,
}

impl<'m, M: PhysMem> Tables<'m, M> {
    pub fn new(mem: &'m M, rsdp: u64) -> Result<Self, AcpiError> {
        let r = mem.read(rsdp, 20).ok_or(AcpiError::Rsdp)?;
        if &r[..8] != b"RSD PTR " || !checksum_ok(r) {
            return Err(AcpiError::Rsdp);
        }
        if r[15] >= 2 {
            let r = mem.read(rsdp, 36).ok_or(AcpiError::Rsdp)?;
            let xsdt = le64(r, 24).ok_or(AcpiError::Rsdp)?;
            if xsdt != 0 {
                let t = table(mem, xsdt).ok_or(AcpiError::Rsdt)?;
                if &t[..4] != b"XSDT" {
                    return Err(AcpiError::Rsdt);
                }
                return Ok(Tables {
                    mem,
                    root: t,
                    entry: 8,
                });
            }
        }
        let rsdt = le32(r, 16).ok_or(AcpiError::Rsdp)? as u64;
        let t = table(mem, rsdt).ok_or(AcpiError::Rsdt)?;
        if &t[..4] != b"RSDT" {
            return Err(AcpiError::Rsdt);
        }
        Ok(Tables {
            mem,
            root: t,
            entry: 4,
        })
    }

    /// The first valid table with signature `sig`.
    pub fn find(&self, sig: &[u8; 4]) -> Option<&'m [u8]> {
        let entries = self.root.get(HEADER..)?;
        entries.chunks_exact(self.entry).find_map(|e| {
            let pa = if self.entry == 8 {
                le64(e, 0)?
            } else {
                le32(e, 0)? as u64
            };
            let t = table(self.mem, pa)?;
            (&t[..4] == sig).then_some(t)
        })
    }
}

/// MADT: the enabled CPUs' MPIDRs and the GIC.
fn parse_madt(t: &[u8], m: &mut Machine) {
    let mut off = HEADER + 8;
    let mut gicd: Option<(u64, u8)> = None;
    let mut gicr = [Range::new(0, 0); MAX_REDIST_REGIONS];
    let mut ngicr = 0;
    // Per-CPU redistributor bases (when there is no GICR structure) and v2 CPU interfaces.
    let mut gicc_base: Option<u64> = None;
    let mut gicc_rd: Option<(u64, u64)> = None;
    while let (Some(&kind), Some(&len)) = (t.get(off), t.get(off + 1)) {
        let len = len as usize;
        if len < 2 {
            break;
        }
        let Some(e) = t.get(off..off + len) else {
            break;
        };
        match kind {
            0x0b if len >= 76 => {
                let flags = le32(e, 12).unwrap_or(0);
                let online_capable = flags & (1 << 3) != 0;
                if flags & 1 != 0 || online_capable {
                    if m.ncpus < MAX_CPUS {
                        m.cpus[m.ncpus] = le64(e, 68).unwrap_or(0) & 0xff_00ff_ffff;
                        m.ncpus += 1;
                    }
                    let base = le64(e, 32).unwrap_or(0);
                    if base != 0 && gicc_base.is_none() {
                        gicc_base = Some(base);
                    }
                    let rd = le64(e, 60).unwrap_or(0);
                    if rd != 0 {
                        let (lo, hi) = gicc_rd.unwrap_or((rd, rd));
                        gicc_rd = Some((lo.min(rd), hi.max(rd)));
                    }
                }
            }
            0x0c if len >= 24 => {
                gicd = Some((le64(e, 8).unwrap_or(0), e[20]));
            }
            // Each GICR structure is one region (servers and QEMU past 123 CPUs have several).
            0x0e if len >= 16 && ngicr < MAX_REDIST_REGIONS => {
                let base = le64(e, 4).unwrap_or(0);
                gicr[ngicr] = Range::from_base_size(base, le32(e, 12).unwrap_or(0) as u64);
                ngicr += 1;
            }
            _ => {}
        }
        off += len;
    }
    let Some((dist, version)) = gicd else {
        return;
    };
    // Per-CPU redistributors (no GICR structure): from the lowest to past the highest frame.
    if ngicr == 0 {
        if let Some((lo, hi)) = gicc_rd {
            gicr[0] = Range::new(lo, hi + 0x20000);
            ngicr = 1;
        }
    }
    let version = match version {
        1 => 2,
        3 | 4 => version,
        _ if ngicr > 0 => 3,
        _ => 2,
    };
    m.gic = match version {
        2 => gicc_base.map(|b| Gic::new(2, dist, &[Range::from_base_size(b, 0x2000)])),
        _ => (ngicr > 0).then(|| Gic::new(3, dist, &gicr[..ngicr])),
    };
}

fn parse_gtdt(t: &[u8]) -> Option<Timer> {
    let irq = |off| {
        Some(TimerIrq {
            gsiv: le32(t, off)?,
            flags: le32(t, off + 4)?,
        })
    };
    Some([irq(48)?, irq(56)?, irq(64)?, irq(72)?])
}

fn parse_spcr(t: &[u8]) -> Option<Uart> {
    let kind = match *t.get(36)? {
        0x03 => UartKind::Pl011,
        0x0e => UartKind::SbsaGeneric,
        0x00 | 0x01 | 0x12 => UartKind::Ns16550,
        _ => return None,
    };
    // The base is a generic address structure in system memory (space 0).
    if *t.get(40)? != 0 {
        return None;
    }
    let access_bytes = match *t.get(43)? {
        size @ 1..=4 => 1 << (size - 1),
        _ => 1,
    };
    let base = le64(t, 44)?;
    let gic_interrupt = t.get(52).is_some_and(|ty| ty & 0x08 != 0);
    let gsiv = le32(t, 54).filter(|_| gic_interrupt);
    (base != 0).then_some(Uart {
        kind,
        base,
        gsiv,
        access_bytes,
    })
}

fn parse_fadt(t: &[u8]) -> Option<PsciConduit> {
    let flags = le16(t, 129)?;
    match (flags & 1 != 0, flags & 2 != 0) {
        (true, true) => Some(PsciConduit::Hvc),
        (true, false) => Some(PsciConduit::Smc),
        _ => None,
    }
}

/// Reads the machine's description from the tables the RSDP at `rsdp` lists. A missing MADT
/// is an error (no CPUs, no GIC); the other tables are optional.
pub fn parse<M: PhysMem>(mem: &M, rsdp: u64) -> Result<Machine, AcpiError> {
    let tables = Tables::new(mem, rsdp)?;
    let mut m = Machine {
        cpus: [0; MAX_CPUS],
        ncpus: 0,
        gic: None,
        timer: None,
        uart: None,
        psci: None,
    };
    let madt = tables.find(b"APIC").ok_or(AcpiError::Table(*b"APIC"))?;
    parse_madt(madt, &mut m);
    if m.ncpus == 0 {
        return Err(AcpiError::Table(*b"APIC"));
    }
    m.timer = tables.find(b"GTDT").and_then(parse_gtdt);
    m.uart = tables.find(b"SPCR").and_then(parse_spcr);
    m.psci = tables.find(b"FACP").and_then(parse_fadt);
    Ok(m)
}

/// A GIC binding interrupt specifier (type, number, flags) for a GSIV, or `None` for an SGI.
fn gic_irq(gsiv: u32, acpi_flags: u32) -> Option<[u32; 3]> {
    let flags = match (acpi_flags & 1 != 0, acpi_flags & 2 != 0) {
        (true, false) => 1,  // edge, rising
        (true, true) => 2,   // edge, falling
        (false, false) => 4, // level, high
        (false, true) => 8,  // level, low
    };
    match gsiv {
        16..=31 => Some([1, gsiv - 16, flags]),
        32.. => Some([0, gsiv - 32, flags]),
        _ => None,
    }
}

/// Writes `m` as a DTB into `out` (names through `strings`) with the given RAM and /chosen.
/// The model says the description came from ACPI. Returns the tree's size.
pub fn write_fdt(
    m: &Machine,
    out: &mut [u8],
    strings: &mut [u8],
    ram: &[Range],
    chosen: &Chosen,
) -> Result<usize, FdtError> {
    let mut w = FdtWriter::new(out, strings, core::iter::empty())?;
    let mut name = [0u8; 32];
    w.begin_node("")?;
    w.prop_u32("#address-cells", 2)?;
    w.prop_u32("#size-cells", 2)?;
    w.prop_str("model", "ACPI machine (described by the Svelt EFI stub)")?;
    w.prop_str("compatible", "svelt,acpi")?;
    const GIC_PHANDLE: u32 = 1;
    w.prop_u32("interrupt-parent", GIC_PHANDLE)?;

    let wide = m.cpus[..m.ncpus].iter().any(|&c| c >> 32 != 0);
    w.begin_node("cpus")?;
    w.prop_u32("#address-cells", if wide { 2 } else { 1 })?;
    w.prop_u32("#size-cells", 0)?;
    for &mpidr in &m.cpus[..m.ncpus] {
        w.begin_node(node_name(&mut name, "cpu", mpidr))?;
        w.prop_str("device_type", "cpu")?;
        w.prop_str("compatible", "arm,armv8")?;
        w.prop_reg(if wide { 2 } else { 1 }, 0, &[(mpidr, 0)])?;
        if m.psci.is_some() {
            w.prop_str("enable-method", "psci")?;
        }
        w.end_node()?;
    }
    w.end_node()?;

    if let Some(g) = &m.gic {
        w.begin_node(node_name(&mut name, "intc", g.dist))?;
        if g.version == 3 {
            w.prop_str("compatible", "arm,gic-v3")?;
            let mut reg = [(0u64, 0u64); 1 + MAX_REDIST_REGIONS];
            reg[0] = (g.dist, 0x10000);
            for (slot, r) in reg[1..].iter_mut().zip(g.seconds()) {
                *slot = (r.start, r.end - r.start);
            }
            w.prop_reg(2, 2, &reg[..1 + g.nsecond])?;
            if g.nsecond > 1 {
                w.prop_u32("#redistributor-regions", g.nsecond as u32)?;
            }
        } else {
            w.prop_str("compatible", "arm,cortex-a15-gic")?;
            w.prop_reg(2, 2, &[(g.dist, 0x1000), (g.second[0].start, 0x2000)])?;
        }
        w.prop_u32("#interrupt-cells", 3)?;
        w.prop("interrupt-controller", &[])?;
        w.prop_u32("phandle", GIC_PHANDLE)?;
        w.end_node()?;
    }

    if let Some(t) = &m.timer {
        let mut cells = [0u32; 12];
        let mut n = 0;
        for irq in t {
            // A timer the firmware does not route (GSIV 0) still needs its slot.
            let spec = gic_irq(irq.gsiv, irq.flags).unwrap_or([1, 0, 4]);
            cells[n..n + 3].copy_from_slice(&spec);
            n += 3;
        }
        w.begin_node("timer")?;
        w.prop_str("compatible", "arm,armv8-timer")?;
        w.prop_cells("interrupts", &cells)?;
        w.prop("always-on", &[])?;
        w.end_node()?;
    }

    // Byte-string literals only, no tables of string slices: the EFI stub runs this before the
    // kernel is at its link address, and a table of pointers would hold link addresses.
    if let Some(p) = m.psci {
        w.begin_node("psci")?;
        w.prop("compatible", b"arm,psci-1.0\0arm,psci-0.2\0")?;
        if p == PsciConduit::Hvc {
            w.prop_str("method", "hvc")?;
        } else {
            w.prop_str("method", "smc")?;
        }
        w.end_node()?;
    }

    let mut path = [0u8; 40];
    let mut path_len = 0;
    if let Some(u) = &m.uart {
        let n = if u.kind == UartKind::Pl011 {
            node_name(&mut name, "pl011", u.base)
        } else {
            node_name(&mut name, "serial", u.base)
        };
        path[0] = b'/';
        path[1..1 + n.len()].copy_from_slice(n.as_bytes());
        path_len = 1 + n.len();
        w.begin_node(n)?;
        if u.kind == UartKind::Pl011 {
            w.prop("compatible", b"arm,pl011\0arm,primecell\0")?;
        } else if u.kind == UartKind::SbsaGeneric {
            w.prop("compatible", b"arm,sbsa-uart\0")?;
        } else {
            // Registers one access apart (Linux's SPCR console: mmio, mmio16 or mmio32).
            w.prop("compatible", b"ns16550a\0")?;
            w.prop_u32("reg-shift", u.access_bytes.trailing_zeros())?;
            w.prop_u32("reg-io-width", u.access_bytes.into())?;
        }
        w.prop_reg(2, 2, &[(u.base, 0x1000)])?;
        if let Some(spec) = u.gsiv.and_then(|g| gic_irq(g, 0)) {
            w.prop_cells("interrupts", &spec)?;
        }
        w.end_node()?;
    }

    w.begin_node("chosen")?;
    if path_len > 0 {
        w.prop_str(
            "stdout-path",
            core::str::from_utf8(&path[..path_len]).unwrap_or("/"),
        )?;
    }
    chosen.write(&mut w)?;
    w.end_node()?;

    for r in ram.iter().filter(|r| !r.is_empty()) {
        w.begin_node(node_name(&mut name, "memory", r.start))?;
        w.prop_str("device_type", "memory")?;
        w.prop_reg(2, 2, &[(r.start, r.end - r.start)])?;
        w.end_node()?;
    }
    w.end_node()?;
    w.finish(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boot::fdt::tests::{find_prop, node_names};
    use std::vec::Vec;

    const APIC: &[u8] = include_bytes!("../../testdata/acpi/qemu-virt-gicv3-smp2.apic");
    const GTDT: &[u8] = include_bytes!("../../testdata/acpi/qemu-virt-gicv3-smp2.gtdt");
    const SPCR: &[u8] = include_bytes!("../../testdata/acpi/qemu-virt-gicv3-smp2.spcr");
    const FACP: &[u8] = include_bytes!("../../testdata/acpi/qemu-virt-gicv3-smp2.facp");
    const MCFG: &[u8] = include_bytes!("../../testdata/acpi/qemu-virt-gicv3-smp2.mcfg");

    /// Tables laid out at fake physical addresses, with an RSDP and an XSDT made here.
    struct Fake {
        base: u64,
        bytes: Vec<u8>,
    }

    impl PhysMem for Fake {
        fn read(&self, pa: u64, len: usize) -> Option<&[u8]> {
            let off = pa.checked_sub(self.base)? as usize;
            self.bytes.get(off..off.checked_add(len)?)
        }
    }

    fn fix_checksum(t: &mut [u8], at: usize) {
        t[at] = 0;
        let sum = t.iter().fold(0u8, |a, &x| a.wrapping_add(x));
        t[at] = 0u8.wrapping_sub(sum);
    }

    /// The RSDP at `base`, the XSDT at base + 0x40, then the tables, each 8-aligned.
    fn machine_mem(tables: &[&[u8]]) -> Fake {
        let base = 0x7000_0000u64;
        let mut bytes = std::vec![0u8; 0x40];
        let xsdt_len = HEADER + 8 * tables.len();
        let mut xsdt = std::vec![0u8; xsdt_len];
        xsdt[..4].copy_from_slice(b"XSDT");
        xsdt[4..8].copy_from_slice(&(xsdt_len as u32).to_le_bytes());
        xsdt[8] = 1;
        let mut at = 0x40 + xsdt_len.next_multiple_of(8);
        let mut body = Vec::new();
        for (i, t) in tables.iter().enumerate() {
            let pa = base + at as u64;
            xsdt[HEADER + 8 * i..HEADER + 8 * i + 8].copy_from_slice(&pa.to_le_bytes());
            let mut t = t.to_vec();
            t.resize(t.len().next_multiple_of(8), 0);
            at += t.len();
            body.extend(t);
        }
        fix_checksum(&mut xsdt, 9);
        bytes.extend(&xsdt);
        bytes.resize(bytes.len().next_multiple_of(8), 0);
        bytes.extend(body);
        // RSDP, revision 2.
        let rsdp = &mut bytes[..36];
        rsdp[..8].copy_from_slice(b"RSD PTR ");
        rsdp[9..15].copy_from_slice(b"BOCHS ");
        rsdp[15] = 2;
        rsdp[20..24].copy_from_slice(&36u32.to_le_bytes());
        rsdp[24..32].copy_from_slice(&(base + 0x40).to_le_bytes());
        fix_checksum(&mut rsdp[..20], 8);
        fix_checksum(rsdp, 32);
        Fake { base, bytes }
    }

    #[test]
    fn qemu_virt_tables() {
        let mem = machine_mem(&[FACP, APIC, GTDT, MCFG, SPCR]);
        let m = parse(&mem, mem.base).unwrap();
        assert_eq!(&m.cpus[..m.ncpus], &[0, 1]);
        assert_eq!(
            m.gic,
            Some(Gic::new(
                3,
                0x0800_0000,
                &[Range::new(0x080a_0000, 0x0900_0000)]
            ))
        );
        let t = m.timer.unwrap();
        assert_eq!(t.map(|i| i.gsiv), [29, 30, 27, 26]);
        assert_eq!(
            m.uart,
            Some(Uart {
                kind: UartKind::Pl011,
                base: 0x0900_0000,
                gsiv: Some(33),
                access_bytes: 4,
            })
        );
        // This QEMU ran without virtualization=on: PSCI through HVC.
        assert_eq!(m.psci, Some(PsciConduit::Hvc));
    }

    #[test]
    fn acpi_machine_as_a_device_tree() {
        let mem = machine_mem(&[FACP, APIC, GTDT, SPCR]);
        let m = parse(&mem, mem.base).unwrap();
        let mut out = std::vec![0u8; 0x4000];
        let mut strings = std::vec![0u8; 0x400];
        let ram = [Range::new(0x4000_0000, 0x7000_0000)];
        let chosen = Chosen {
            bootargs: "log=debug",
            initrd: Some(Range::new(0x4800_0000, 0x4900_0000)),
            rng_seed: None,
            realtime: Some(1_795_537_155),
        };
        let n = write_fdt(&m, &mut out, &mut strings, &ram, &chosen).unwrap();
        let dtb = &out[..n];
        let names = node_names(dtb);
        assert_eq!(
            names,
            [
                "",
                "  cpus",
                "    cpu@0",
                "    cpu@1",
                "  intc@8000000",
                "  timer",
                "  psci",
                "  pl011@9000000",
                "  chosen",
                "  memory@40000000"
            ]
        );
        // What kernel/src/dt.rs reads, in the same encodings as QEMU's own tree.
        assert_eq!(
            find_prop(dtb, "/cpus/cpu@1", "reg"),
            Some(&[0, 0, 0, 1][..])
        );
        assert_eq!(
            find_prop(dtb, "/intc@8000000", "compatible"),
            Some(&b"arm,gic-v3\0"[..])
        );
        let reg = find_prop(dtb, "/intc@8000000", "reg").unwrap();
        assert_eq!(reg.len(), 32);
        assert_eq!(&reg[16..24], &0x080a_0000u64.to_be_bytes());
        let irqs = find_prop(dtb, "/timer", "interrupts").unwrap();
        // The third specifier is the EL1 virtual timer: PPI 11 (INTID 27), level high.
        assert_eq!(&irqs[24..36], &[0, 0, 0, 1, 0, 0, 0, 11, 0, 0, 0, 4]);
        assert_eq!(find_prop(dtb, "/psci", "method"), Some(&b"hvc\0"[..]));
        assert_eq!(
            find_prop(dtb, "/pl011@9000000", "interrupts"),
            Some(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4][..])
        );
        assert_eq!(
            find_prop(dtb, "/chosen", "stdout-path"),
            Some(&b"/pl011@9000000\0"[..])
        );
        assert_eq!(
            find_prop(dtb, "/chosen", "bootargs"),
            Some(&b"log=debug\0"[..])
        );
        assert!(find_prop(dtb, "", "model")
            .unwrap()
            .starts_with(b"ACPI machine"));
    }

    /// QEMU's tables with this SPCR instead of its own: the machine, and the device tree the
    /// stub would write for it.
    fn machine_with_spcr(spcr: &[u8]) -> (Machine, std::vec::Vec<u8>) {
        let mem = machine_mem(&[FACP, APIC, GTDT, spcr]);
        let m = parse(&mem, mem.base).unwrap();
        let dtb = fdt_of(&m);
        (m, dtb)
    }

    /// The device tree the stub writes for `m`, with 768 MiB of RAM and an empty /chosen.
    fn fdt_of(m: &Machine) -> std::vec::Vec<u8> {
        let (mut out, mut strings) = (std::vec![0u8; 0x20000], std::vec![0u8; 0x400]);
        let chosen = Chosen {
            bootargs: "",
            initrd: None,
            rng_seed: None,
            realtime: None,
        };
        let ram = [Range::new(0x4000_0000, 0x7000_0000)];
        let n = write_fdt(m, &mut out, &mut strings, &ram, &chosen).unwrap();
        out.truncate(n);
        out
    }

    /// A server's SPCR naming a 16550 (interface type 0x12) at 0x1c020000 with 32-bit or 8-bit
    /// accesses: a `ns16550a` node whose registers are one access apart, which the console
    /// code's own reading of a device tree accepts (`uart_kind`, `Layout16550`), and
    /// `stdout-path` naming it. An SBSA generic UART gets its own compatible string.
    #[test]
    fn spcr_16550_and_sbsa_uart_nodes() {
        use crate::boot::uart::{uart_kind, Layout16550, UartKind as Driver};
        let be32 = |v: &[u8]| u32::from_be_bytes(v.try_into().unwrap());
        for (access_size, shift, width) in [(3u8, 2u32, 4u32), (1, 0, 1), (0, 0, 1)] {
            let mut spcr = SPCR.to_vec();
            spcr[36] = 0x12;
            spcr[43] = access_size;
            spcr[44..52].copy_from_slice(&0x1c02_0000u64.to_le_bytes());
            fix_checksum(&mut spcr, 9);
            let (m, dtb) = machine_with_spcr(&spcr);
            assert_eq!(m.uart.unwrap().kind, UartKind::Ns16550);
            let dtb = &dtb[..];
            let node = "/serial@1c020000";
            let compat = find_prop(dtb, node, "compatible").unwrap();
            let compat = core::str::from_utf8(compat).unwrap();
            assert_eq!(
                uart_kind(compat.split('\0').filter(|c| !c.is_empty())),
                Some(Driver::Ns16550)
            );
            let got_shift = be32(find_prop(dtb, node, "reg-shift").unwrap());
            let got_width = be32(find_prop(dtb, node, "reg-io-width").unwrap());
            assert_eq!(
                (got_shift, got_width),
                (shift, width),
                "access size {access_size}"
            );
            assert!(Layout16550::new(Some(got_shift), Some(got_width)).is_some());
            assert_eq!(
                find_prop(dtb, "/chosen", "stdout-path"),
                Some(&b"/serial@1c020000\0"[..])
            );
        }
        let mut spcr = SPCR.to_vec();
        spcr[36] = 0x0e;
        fix_checksum(&mut spcr, 9);
        let (_, dtb) = machine_with_spcr(&spcr);
        let compat = find_prop(&dtb, "/serial@9000000", "compatible").unwrap();
        assert_eq!(compat, b"arm,sbsa-uart\0");
        assert_eq!(
            uart_kind(["arm,sbsa-uart"].into_iter()),
            Some(Driver::Pl011)
        );
    }

    /// A large machine's MADT, as QEMU writes it past 123 CPUs and servers do: 130 GICCs and
    /// two GICR structures (a second, high redistributor region). Every CPU and both regions
    /// reach the device tree, the regions counted in `#redistributor-regions`.
    #[test]
    fn many_cpus_and_redistributor_regions() {
        let mut apic = APIC[..0x44].to_vec();
        let gicc = &APIC[0x44..0x94];
        for cpu in 0..130u64 {
            let mut e = gicc.to_vec();
            e[4..8].copy_from_slice(&(cpu as u32).to_le_bytes());
            e[8..12].copy_from_slice(&(cpu as u32).to_le_bytes());
            let mpidr = ((cpu / 16) << 8) | (cpu % 16);
            e[68..76].copy_from_slice(&mpidr.to_le_bytes());
            apic.extend_from_slice(&e);
        }
        for (base, len) in [
            (0x080a_0000u64, 0x00f6_0000u32),
            (0x40_0000_0000, 0x0004_0000),
        ] {
            let mut e = std::vec![0x0e, 16, 0, 0];
            e.extend_from_slice(&base.to_le_bytes());
            e.extend_from_slice(&len.to_le_bytes());
            apic.extend_from_slice(&e);
        }
        let len = apic.len() as u32;
        apic[4..8].copy_from_slice(&len.to_le_bytes());
        fix_checksum(&mut apic, 9);
        let mem = machine_mem(&[FACP, &apic, GTDT, SPCR]);
        let m = parse(&mem, mem.base).unwrap();
        assert_eq!(m.ncpus, 130);
        assert_eq!(m.cpus[129], (8 << 8) | 1);
        let g = m.gic.unwrap();
        assert_eq!(
            g.seconds(),
            [
                Range::from_base_size(0x080a_0000, 0x00f6_0000),
                Range::from_base_size(0x40_0000_0000, 0x0004_0000)
            ]
        );
        let dtb = &fdt_of(&m)[..];
        assert_eq!(
            node_names(dtb)
                .iter()
                .filter(|l| l.starts_with("    cpu@"))
                .count(),
            130
        );
        let reg = find_prop(dtb, "/intc@8000000", "reg").unwrap();
        assert_eq!(reg.len(), 48);
        assert_eq!(&reg[32..40], &0x40_0000_0000u64.to_be_bytes());
        assert_eq!(
            find_prop(dtb, "/intc@8000000", "#redistributor-regions"),
            Some(&2u32.to_be_bytes()[..])
        );
    }

    #[test]
    fn smc_conduit_gicv2_and_missing_tables() {
        let mut facp = FACP.to_vec();
        facp[129] = 1; // PSCI compliant, SMC
        fix_checksum(&mut facp, 9);
        // A GICv2 MADT: GICD version 2, the GICCs' CPU interface at 0x08010000, no GICR.
        let mut apic = APIC[..0xe4].to_vec();
        apic[4..8].copy_from_slice(&0xe4u32.to_le_bytes());
        apic[0x2c + 20] = 2;
        for gicc in [0x44, 0x94] {
            apic[gicc + 32..gicc + 40].copy_from_slice(&0x0801_0000u64.to_le_bytes());
        }
        fix_checksum(&mut apic, 9);
        let mem = machine_mem(&[&facp, &apic]);
        let m = parse(&mem, mem.base).unwrap();
        assert_eq!(m.psci, Some(PsciConduit::Smc));
        assert_eq!(
            m.gic,
            Some(Gic::new(
                2,
                0x0800_0000,
                &[Range::new(0x0801_0000, 0x0801_2000)]
            ))
        );
        assert_eq!(m.timer, None);
        assert_eq!(m.uart, None);

        // No MADT: an error naming it. A bad checksum hides a table.
        let mem = machine_mem(&[FACP, GTDT]);
        assert_eq!(parse(&mem, mem.base), Err(AcpiError::Table(*b"APIC")));
        let mut bad = APIC.to_vec();
        bad[9] ^= 1;
        let mem = machine_mem(&[&bad]);
        assert_eq!(parse(&mem, mem.base), Err(AcpiError::Table(*b"APIC")));
        let mut mem = machine_mem(&[APIC]);
        mem.bytes[0] = b'X';
        assert_eq!(parse(&mem, mem.base).err(), Some(AcpiError::Rsdp));
    }

    #[test]
    fn truncated_and_corrupt_tables_never_panic() {
        for cut in 0..APIC.len() {
            let mut t = APIC[..cut.max(HEADER)].to_vec();
            let len = t.len() as u32;
            t[4..8].copy_from_slice(&len.to_le_bytes());
            fix_checksum(&mut t, 9);
            let mem = machine_mem(&[&t, GTDT, SPCR]);
            let _ = parse(&mem, mem.base);
        }
        // Entry lengths of 0 and 1 and longer than the table.
        for bad_len in [0u8, 1, 0xff] {
            let mut t = APIC.to_vec();
            t[0x45] = bad_len;
            fix_checksum(&mut t, 9);
            let mem = machine_mem(&[&t]);
            let _ = parse(&mem, mem.base);
        }
    }
}
