//! What Svelt reads from the flattened device tree.

#![forbid(unsafe_code)]

use fdt::Fdt;
use svelt_abi::boot::memrange::Range;
use svelt_abi::boot::smpboot::{enable_method, EnableMethod, NoMethod};
use svelt_abi::boot::uart::{
    split_stdout_path, stdout_node_path, uart_kind, Layout16550, UartKind, NS16550_COMPATIBLE,
};

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

/// The console UART's node and kind: the node /chosen/stdout-path names (a path or an alias,
/// options after ':' ignored) if Svelt drives it, else the first PL011, else the first 16550.
fn console_node<'b, 'a>(fdt: &'b Fdt<'a>) -> Option<(fdt::node::FdtNode<'b, 'a>, UartKind)> {
    let kind_of = |n: &fdt::node::FdtNode| n.compatible().and_then(|c| uart_kind(c.all()));
    let chosen = fdt
        .find_node("/chosen")
        .and_then(|c| c.property("stdout-path"))
        .and_then(|p| split_stdout_path(p.value))
        .and_then(|(node, _)| stdout_node_path(node, |a| fdt.aliases()?.resolve(a)))
        .and_then(|path| fdt.find_node(path))
        .and_then(|n| Some((n, kind_of(&n)?)));
    chosen
        .or_else(|| Some((fdt.find_compatible(&["arm,pl011"])?, UartKind::Pl011)))
        .or_else(|| Some((fdt.find_compatible(NS16550_COMPATIBLE)?, UartKind::Ns16550)))
}

/// The console UART: its kind, registers and (for a 16550) register layout.
pub struct ConsoleUart {
    pub kind: UartKind,
    pub regs: Range,
    pub layout: Layout16550,
}

pub fn console(fdt: &Fdt) -> Option<ConsoleUart> {
    let (node, kind) = console_node(fdt)?;
    let u32_prop = |name| {
        node.property(name)
            .and_then(|p| p.value.get(0..4))
            .map(|b| be_cells(b) as u32)
    };
    // A PL011 has no use for the 16550 layout; a 16550 with one Svelt cannot drive is no console.
    let pl011_layout = (kind == UartKind::Pl011).then_some(Layout16550 { shift: 0, width: 1 });
    let layout =
        Layout16550::new(u32_prop("reg-shift"), u32_prop("reg-io-width")).or(pl011_layout)?;
    Some(ConsoleUart {
        kind,
        regs: first_reg(node)?,
        layout,
    })
}

/// The console UART's interrupt ID: the first (type, number, flags) triple of its
/// `interrupts` (GIC binding: type 0 is an SPI, 1 a PPI).
pub fn console_intid(fdt: &Fdt) -> Option<u32> {
    let v = console_node(fdt)?.0.property("interrupts")?.value;
    let triple = v.get(0..12)?;
    let (kind, number) = (be_cells(&triple[0..4]), be_cells(&triple[4..8]));
    match kind {
        0 => Some(32 + number as u32),
        1 => Some(16 + number as u32),
        _ => None,
    }
}

pub use crate::drivers::gic::MAX_REDIST_REGIONS;

pub struct GicInfo {
    pub version: u8,
    pub dist: Range,
    /// v3: the redistributor regions (`#redistributor-regions` of them, default 1); v2: the
    /// CPU interface alone.
    pub second: [Range; MAX_REDIST_REGIONS],
    pub nsecond: usize,
}

impl GicInfo {
    pub fn seconds(&self) -> &[Range] {
        &self.second[..self.nsecond]
    }
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
    let regions = if version == 3 {
        node.property("#redistributor-regions")
            .and_then(|p| p.as_usize())
            .unwrap_or(1)
    } else {
        1
    };
    let mut regs = node
        .reg()?
        .map(|r| Range::from_base_size(r.starting_address as u64, r.size.unwrap_or(0) as u64));
    let dist = regs.next()?;
    let mut second = [Range::new(0, 0); MAX_REDIST_REGIONS];
    let mut nsecond = 0;
    for r in regs.take(regions) {
        if nsecond < MAX_REDIST_REGIONS && !r.is_empty() {
            second[nsecond] = r;
            nsecond += 1;
        }
    }
    (nsecond != 0).then_some(GicInfo {
        version,
        dist,
        second,
        nsecond,
    })
}

/// A timer's interrupt ID: entry `index` (0 secure physical, 1 physical, 2 virtual, 3 EL2
/// physical) of the arm,armv8-timer node's `interrupts` (type, number, flags) triples, a PPI.
pub fn timer_intid(fdt: &Fdt, index: usize) -> Option<u32> {
    let node = fdt.find_compatible(&["arm,armv8-timer", "arm,armv7-timer"])?;
    let v = node.property("interrupts")?.value;
    let triple = v.get(index * 12..(index + 1) * 12)?;
    let (kind, number) = (be_cells(&triple[0..4]), be_cells(&triple[4..8]));
    (kind == 1).then_some(16 + number as u32)
}

/// /psci `method`: "hvc" or "smc".
pub fn psci_method<'a>(fdt: &Fdt<'a>) -> Option<&'a str> {
    fdt.find_compatible(&["arm,psci-1.0", "arm,psci-0.2", "arm,psci"])?
        .property("method")?
        .as_str()
}

/// Each CPU in /cpus: its MPIDR and how it is started, from its `enable-method` and
/// `cpu-release-addr` and whether the tree has PSCI.
pub fn for_each_cpu_method(
    fdt: &Fdt,
    have_psci: bool,
    mut f: impl FnMut(u64, Result<EnableMethod, NoMethod>),
) {
    for cpu in fdt.cpus() {
        let method = cpu.property("enable-method").map(|p| p.value);
        let release = cpu.property("cpu-release-addr").map(|p| p.value);
        f(
            cpu.ids().first() as u64,
            enable_method(method, release, have_psci),
        );
    }
}

/// How many CPUs /cpus lists.
pub fn cpu_count(fdt: &Fdt) -> usize {
    fdt.cpus().count()
}

/// The arm,armv8-timer node's `clock-frequency`, for firmware that leaves CNTFRQ_EL0 unset.
pub fn timer_clock_frequency(fdt: &Fdt) -> Option<u32> {
    fdt.find_compatible(&["arm,armv8-timer", "arm,armv7-timer"])?
        .property("clock-frequency")?
        .as_usize()
        .map(|v| v as u32)
}
