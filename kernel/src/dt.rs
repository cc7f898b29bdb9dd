//! What Svelt reads from the flattened device tree.

use fdt::Fdt;
use svelt_abi::memrange::Range;

fn be_cells(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64)
}

fn first_reg(node: fdt::node::FdtNode) -> Option<Range> {
    let r = node.reg()?.next()?;
    Some(Range::from_base_size(
        r.starting_address as u64,
        r.size.unwrap_or(0) as u64,
    ))
}

/// RAM regions (/memory nodes). At most `N` are kept.
pub fn ram<const N: usize>(fdt: &Fdt) -> ([Range; N], usize) {
    let mut out = [Range::new(0, 0); N];
    let mut n = 0;
    for node in fdt
        .all_nodes()
        .filter(|n| n.name == "memory" || n.name.starts_with("memory@"))
    {
        if node.property("device_type").and_then(|p| p.as_str()) != Some("memory") {
            continue;
        }
        for r in node.reg().into_iter().flatten() {
            if n < N {
                out[n] =
                    Range::from_base_size(r.starting_address as u64, r.size.unwrap_or(0) as u64);
                n += 1;
            }
        }
    }
    (out, n)
}

/// The initrd's physical range, from /chosen linux,initrd-start/-end.
pub fn initrd(fdt: &Fdt) -> Option<Range> {
    let chosen = fdt.find_node("/chosen")?;
    let start = be_cells(chosen.property("linux,initrd-start")?.value);
    let end = be_cells(chosen.property("linux,initrd-end")?.value);
    (end > start).then(|| Range::new(start, end))
}

/// Ranges that must never be allocated: /memreserve/ entries and /reserved-memory children.
pub fn for_each_reserved(fdt: &Fdt, mut f: impl FnMut(Range)) {
    for m in fdt.memory_reservations() {
        f(Range::from_base_size(m.address() as u64, m.size() as u64));
    }
    if let Some(rm) = fdt.find_node("/reserved-memory") {
        for child in rm.children() {
            if let Some(r) = first_reg(child) {
                f(r);
            }
        }
    }
}

/// The console UART's node: /chosen/stdout-path if it is a PL011, else the first PL011.
fn pl011_node<'b, 'a>(fdt: &'b Fdt<'a>) -> Option<fdt::node::FdtNode<'b, 'a>> {
    let is_pl011 = |n: &fdt::node::FdtNode| {
        n.compatible()
            .is_some_and(|c| c.all().any(|s| s == "arm,pl011"))
    };
    fdt.chosen()
        .stdout()
        .filter(is_pl011)
        .or_else(|| fdt.find_compatible(&["arm,pl011"]))
}

/// The console UART's registers.
pub fn pl011(fdt: &Fdt) -> Option<Range> {
    pl011_node(fdt).and_then(first_reg)
}

/// The console UART's interrupt ID: the first (type, number, flags) triple of its
/// `interrupts` (GIC binding: type 0 is an SPI, 1 a PPI).
pub fn pl011_intid(fdt: &Fdt) -> Option<u32> {
    let v = pl011_node(fdt)?.property("interrupts")?.value;
    let triple = v.get(0..12)?;
    let (kind, number) = (be_cells(&triple[0..4]), be_cells(&triple[4..8]));
    match kind {
        0 => Some(32 + number as u32),
        1 => Some(16 + number as u32),
        _ => None,
    }
}

pub struct GicInfo {
    pub version: u8,
    pub dist: Range,
    /// v3: the redistributor region; v2: the CPU interface.
    pub second: Range,
}

pub fn gic(fdt: &Fdt) -> Option<GicInfo> {
    let (version, node) = if let Some(n) = fdt.find_compatible(&["arm,gic-v3"]) {
        (3, n)
    } else {
        (
            2,
            fdt.find_compatible(&["arm,cortex-a15-gic", "arm,gic-400", "arm,cortex-a9-gic"])?,
        )
    };
    let mut regs = node.reg()?;
    let mut next = || {
        regs.next()
            .map(|r| Range::from_base_size(r.starting_address as u64, r.size.unwrap_or(0) as u64))
    };
    Some(GicInfo {
        version,
        dist: next()?,
        second: next()?,
    })
}

/// The EL1 virtual timer's interrupt ID: the third (type, number, flags) triple of the
/// arm,armv8-timer node's `interrupts`, a PPI.
pub fn virtual_timer_intid(fdt: &Fdt) -> Option<u32> {
    let node = fdt.find_compatible(&["arm,armv8-timer", "arm,armv7-timer"])?;
    let v = node.property("interrupts")?.value;
    let triple = v.get(2 * 12..3 * 12)?;
    let (kind, number) = (be_cells(&triple[0..4]), be_cells(&triple[4..8]));
    (kind == 1).then_some(16 + number as u32)
}

/// /psci `method`: "hvc" or "smc".
pub fn psci_method<'a>(fdt: &Fdt<'a>) -> Option<&'a str> {
    fdt.find_compatible(&["arm,psci-1.0", "arm,psci-0.2", "arm,psci"])?
        .property("method")?
        .as_str()
}

/// MPIDR values of the CPUs in /cpus.
pub fn for_each_cpu(fdt: &Fdt, mut f: impl FnMut(u64)) {
    for cpu in fdt.cpus() {
        f(cpu.ids().first() as u64);
    }
}
