//! What the VMM (user/src/bin/vmm.rs) decides before a Linux guest runs: where an arm64 `Image`,
//! its initramfs and its device tree go in guest memory, and the device tree itself (memory,
//! CPUs started by PSCI over HVC, a GICv3, the architected timer, one PL011 as the console, and
//! /chosen). Pure logic, so the host tests below check it.
//!
//! The Image header is described in Linux's Documentation/arch/arm64/booting.rst; the device
//! tree bindings are Linux's Documentation/devicetree/bindings (arm/psci.yaml,
//! interrupt-controller/arm,gic-v3.yaml, timer/arm,arch_timer.yaml, serial/pl011.yaml).

use super::fdt::{FdtError, FdtWriter};

/// The magic at offset 56 of an arm64 Image header: "ARM\x64".
pub const IMAGE_MAGIC: u32 = 0x644d_5241;
/// An Image must start this far into a 2 MiB aligned base (booting.rst).
pub const IMAGE_ALIGN: u64 = 2 << 20;

/// The fields of an arm64 Image header the loader needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageHeader {
    /// Where the Image goes past a 2 MiB aligned base.
    pub text_offset: u64,
    /// How much memory the kernel uses from its start (0 on kernels before 3.17: unknown).
    pub image_size: u64,
    /// Bit 0: big-endian kernel.
    pub flags: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageError {
    /// Shorter than the 64-byte header.
    Short,
    /// No "ARM\x64" magic (a compressed vmlinuz, or not a kernel).
    NoMagic,
    /// A big-endian kernel: the VMM boots little-endian guests only.
    BigEndian,
}

fn le64(b: &[u8], off: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(v)
}

/// Reads the header of an arm64 `Image`.
pub fn parse_image(img: &[u8]) -> Result<ImageHeader, ImageError> {
    if img.len() < 64 {
        return Err(ImageError::Short);
    }
    if u32::from_le_bytes([img[56], img[57], img[58], img[59]]) != IMAGE_MAGIC {
        return Err(ImageError::NoMagic);
    }
    let mut h = ImageHeader {
        text_offset: le64(img, 8),
        image_size: le64(img, 16),
        flags: le64(img, 24),
    };
    if h.flags & 1 != 0 {
        return Err(ImageError::BigEndian);
    }
    // booting.rst: an image_size of 0 means text_offset 0x80000 and an unknown size.
    if h.image_size == 0 {
        h.text_offset = 0x8_0000;
    }
    Ok(h)
}

/// The guest's physical map: QEMU virt's addresses for the GIC and the UART, RAM at 1 GiB.
pub const GICD_BASE: u64 = 0x0800_0000;
pub const GICR_BASE: u64 = 0x080a_0000;
/// One GICv3 redistributor (RD and SGI frames) per vCPU.
pub const GICR_STRIDE: u64 = 0x2_0000;
/// Room for 123 redistributors below the UART (as QEMU virt's first region).
pub const GICR_MAX_SIZE: u64 = 0x00f6_0000;
pub const UART_BASE: u64 = 0x0900_0000;
pub const UART_SIZE: u64 = 0x1000;
/// The UART's SPI (GIC interrupt 33).
pub const UART_SPI: u32 = 1;
pub const RAM_BASE: u64 = 0x4000_0000;
/// The device tree's place below the end of RAM, and its largest size (booting.rst: at most
/// 2 MiB, 8-byte aligned).
pub const DTB_MAX: u64 = 2 << 20;
/// The largest number of vCPUs the redistributor region holds.
pub const MAX_VCPUS: u32 = (GICR_MAX_SIZE / GICR_STRIDE) as u32;

/// Where each piece goes in guest physical memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub kernel: u64,
    /// The kernel's first instruction (= `kernel`).
    pub entry: u64,
    pub initrd: u64,
    pub dtb: u64,
    pub ram_end: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The kernel, the initramfs and the device tree do not fit in RAM.
    TooSmall,
}

/// Places the kernel at the start of RAM (plus its text_offset), the initramfs after the
/// kernel's whole footprint (image_size, or the file's length if larger) on a 2 MiB boundary,
/// and the device tree in the last 2 MiB of RAM.
pub fn layout(
    h: &ImageHeader,
    file_len: u64,
    initrd_len: u64,
    ram_size: u64,
) -> Result<Layout, LayoutError> {
    let kernel = RAM_BASE + h.text_offset;
    let footprint = h.image_size.max(file_len);
    let initrd = (kernel + footprint).next_multiple_of(IMAGE_ALIGN);
    let ram_end = RAM_BASE + ram_size;
    let dtb = ram_end.checked_sub(DTB_MAX).ok_or(LayoutError::TooSmall)?;
    if initrd + initrd_len > dtb {
        return Err(LayoutError::TooSmall);
    }
    Ok(Layout {
        kernel,
        entry: kernel,
        initrd,
        dtb,
        ram_end,
    })
}

/// What the device tree describes.
#[derive(Clone, Copy, Debug)]
pub struct GuestConfig<'a> {
    pub ram_size: u64,
    /// Each vCPU's MPIDR_EL1 (as KVM reports it); its affinity fields become the CPU's `reg`.
    pub mpidrs: &'a [u64],
    pub bootargs: &'a str,
    /// The initramfs's guest-physical range (start, end), if there is one.
    pub initrd: Option<(u64, u64)>,
}

/// GIC interrupt specifier types (arm,gic-v3.yaml): SPI 0, PPI 1; level high is 4.
const GIC_SPI: u32 = 0;
const GIC_PPI: u32 = 1;
const IRQ_LEVEL_HIGH: u32 = 4;
const PHANDLE_GIC: u32 = 1;
const PHANDLE_CLK: u32 = 2;
/// The timers' PPIs as PPI numbers (INTID - 16): secure physical 29, non-secure physical 30,
/// virtual 27, hypervisor 26, in arm,arch_timer.yaml's order.
const TIMER_PPIS: [u32; 4] = [13, 14, 11, 10];

/// The MPIDR affinity fields (Aff3, Aff2..Aff0) that a CPU node's `reg` holds.
pub fn mpidr_affinity(mpidr: u64) -> u64 {
    mpidr & 0xff_00ff_ffff
}

/// The redistributor region's size for `n` vCPUs.
pub fn redist_size(n: u32) -> u64 {
    n as u64 * GICR_STRIDE
}

fn node_at(buf: &mut [u8], base: &str, addr: u64) -> usize {
    let mut n = 0;
    for &b in base.as_bytes() {
        buf[n] = b;
        n += 1;
    }
    buf[n] = b'@';
    n += 1;
    let digits = if addr == 0 {
        1
    } else {
        (64 - addr.leading_zeros()).div_ceil(4) as usize
    };
    for i in (0..digits).rev() {
        let d = ((addr >> (i * 4)) & 0xf) as u8;
        buf[n] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
        n += 1;
    }
    n
}

fn begin_at(w: &mut FdtWriter, base: &str, addr: u64) -> Result<(), FdtError> {
    let mut buf = [0u8; 40];
    let n = node_at(&mut buf, base, addr);
    // The name is ASCII built above.
    w.begin_node(core::str::from_utf8(&buf[..n]).map_err(|_| FdtError::Malformed)?)
}

/// Writes the guest's device tree into `buf` (with `strings` as scratch); returns its size.
pub fn write_dtb(buf: &mut [u8], strings: &mut [u8], c: &GuestConfig) -> Result<usize, FdtError> {
    let mut w = FdtWriter::new(buf, strings, core::iter::empty())?;
    w.begin_node("")?;
    w.prop_str("compatible", "linux,dummy-virt")?;
    w.prop_u32("#address-cells", 2)?;
    w.prop_u32("#size-cells", 2)?;
    w.prop_u32("interrupt-parent", PHANDLE_GIC)?;

    w.begin_node("chosen")?;
    w.prop_str("bootargs", c.bootargs)?;
    let mut path = [0u8; 40];
    let n = node_at(&mut path[1..], "pl011", UART_BASE);
    path[0] = b'/';
    w.prop_str(
        "stdout-path",
        core::str::from_utf8(&path[..n + 1]).map_err(|_| FdtError::Malformed)?,
    )?;
    if let Some((start, end)) = c.initrd {
        w.prop_u64("linux,initrd-start", start)?;
        w.prop_u64("linux,initrd-end", end)?;
    }
    w.end_node()?;

    begin_at(&mut w, "memory", RAM_BASE)?;
    w.prop_str("device_type", "memory")?;
    w.prop_reg(2, 2, &[(RAM_BASE, c.ram_size)])?;
    w.end_node()?;

    w.begin_node("cpus")?;
    w.prop_u32("#address-cells", 2)?;
    w.prop_u32("#size-cells", 0)?;
    for &mpidr in c.mpidrs {
        let aff = mpidr_affinity(mpidr);
        begin_at(&mut w, "cpu", aff)?;
        w.prop_str("device_type", "cpu")?;
        w.prop_str("compatible", "arm,arm-v8")?;
        w.prop_reg(2, 0, &[(aff, 0)])?;
        w.prop_str("enable-method", "psci")?;
        w.end_node()?;
    }
    w.end_node()?;

    w.begin_node("psci")?;
    w.prop("compatible", b"arm,psci-1.0\0arm,psci-0.2\0")?;
    w.prop_str("method", "hvc")?;
    w.end_node()?;

    begin_at(&mut w, "intc", GICD_BASE)?;
    w.prop_str("compatible", "arm,gic-v3")?;
    w.prop_u32("#interrupt-cells", 3)?;
    w.prop("interrupt-controller", &[])?;
    w.prop_u32("#redistributor-regions", 1)?;
    w.prop_reg(
        2,
        2,
        &[
            (GICD_BASE, 0x1_0000),
            (GICR_BASE, redist_size(c.mpidrs.len() as u32)),
        ],
    )?;
    w.prop_u32("phandle", PHANDLE_GIC)?;
    w.end_node()?;

    w.begin_node("timer")?;
    w.prop_str("compatible", "arm,armv8-timer")?;
    let mut irqs = [0u32; 12];
    for (i, ppi) in TIMER_PPIS.iter().enumerate() {
        irqs[i * 3..i * 3 + 3].copy_from_slice(&[GIC_PPI, *ppi, IRQ_LEVEL_HIGH]);
    }
    w.prop_cells("interrupts", &irqs)?;
    w.prop("always-on", &[])?;
    w.end_node()?;

    w.begin_node("apb-pclk")?;
    w.prop_str("compatible", "fixed-clock")?;
    w.prop_u32("#clock-cells", 0)?;
    w.prop_u32("clock-frequency", 24_000_000)?;
    w.prop_str("clock-output-names", "clk24mhz")?;
    w.prop_u32("phandle", PHANDLE_CLK)?;
    w.end_node()?;

    begin_at(&mut w, "pl011", UART_BASE)?;
    w.prop("compatible", b"arm,pl011\0arm,primecell\0")?;
    w.prop_reg(2, 2, &[(UART_BASE, UART_SIZE)])?;
    w.prop_cells("interrupts", &[GIC_SPI, UART_SPI, IRQ_LEVEL_HIGH])?;
    w.prop_cells("clocks", &[PHANDLE_CLK, PHANDLE_CLK])?;
    w.prop("clock-names", b"uartclk\0apb_pclk\0")?;
    w.end_node()?;

    w.end_node()?;
    w.finish(0)
}

/// Parses a list of vector lengths in bytes ("16,32,64") into KVM_REG_ARM64_SVE_VLS's bitmap
/// (bit vq-1 of the 512-bit set, vq = bytes / 16). None for an empty list, a length that is not
/// a multiple of 16 in 16..=256, or one given twice.
pub fn parse_vls(s: &str) -> Option<[u64; 8]> {
    let mut set = [0u64; 8];
    let mut any = false;
    for w in s.split(',') {
        let bytes: u32 = w.trim().parse().ok()?;
        if bytes == 0 || !bytes.is_multiple_of(16) || bytes > 256 {
            return None;
        }
        let bit = bytes / 16 - 1;
        let (word, mask) = ((bit / 64) as usize, 1u64 << (bit % 64));
        if set[word] & mask != 0 {
            return None;
        }
        set[word] |= mask;
        any = true;
    }
    any.then_some(set)
}

/// The status of a console line "PREFIX: exit status N" for one of `prefixes`, if it is one.
pub fn status_line(line: &[u8], prefixes: &[&str]) -> Option<i32> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    for p in prefixes {
        if let Some(rest) = line.strip_prefix(p.as_bytes()) {
            let n = rest.strip_prefix(b": exit status ")?;
            if n.is_empty() || n.len() > 9 || !n.iter().all(u8::is_ascii_digit) {
                return None;
            }
            return core::str::from_utf8(n).ok()?.parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boot::fdt::tests::find_prop;

    fn image(text_offset: u64, size: u64, flags: u64) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[8..16].copy_from_slice(&text_offset.to_le_bytes());
        b[16..24].copy_from_slice(&size.to_le_bytes());
        b[24..32].copy_from_slice(&flags.to_le_bytes());
        b[56..60].copy_from_slice(b"ARM\x64");
        b
    }

    #[test]
    fn image_header() {
        let h = parse_image(&image(0, 0x300_0000, 0xa)).unwrap();
        assert_eq!((h.text_offset, h.image_size), (0, 0x300_0000));
        assert_eq!(parse_image(&image(0, 0, 0)).unwrap().text_offset, 0x8_0000);
        assert_eq!(parse_image(&image(0, 1, 1)), Err(ImageError::BigEndian));
        assert_eq!(parse_image(&[0; 63]), Err(ImageError::Short));
        let mut gz = image(0, 1, 0);
        gz[56] = 0x1f;
        assert_eq!(parse_image(&gz), Err(ImageError::NoMagic));
    }

    #[test]
    fn layout_places_everything_apart() {
        let h = parse_image(&image(0, 0x300_1000, 0)).unwrap();
        let l = layout(&h, 0x200_0000, 0x10_0000, 256 << 20).unwrap();
        assert_eq!(l.kernel, RAM_BASE);
        assert_eq!(l.initrd, RAM_BASE + 0x320_0000);
        assert_eq!(l.dtb, RAM_BASE + (254 << 20));
        assert_eq!(l.ram_end, RAM_BASE + (256 << 20));
        assert_eq!(layout(&h, 0, 0x10_0000, 64 << 20).map(|_| ()), Ok(()));
        assert_eq!(
            layout(&h, 0, 60 << 20, 64 << 20),
            Err(LayoutError::TooSmall)
        );
        assert_eq!(layout(&h, 0, 0, 1 << 20), Err(LayoutError::TooSmall));
    }

    #[test]
    fn vls_lists() {
        let s = parse_vls("16,32,64").unwrap();
        assert_eq!(s[0], 0b1011);
        assert_eq!(parse_vls("256").unwrap()[0], 1 << 15);
        assert_eq!(parse_vls(""), None);
        assert_eq!(parse_vls("24"), None);
        assert_eq!(parse_vls("16,16"), None);
        assert_eq!(parse_vls("512"), None);
    }

    #[test]
    fn status_lines() {
        let p = ["svelt-init", "vmm-guest"];
        assert_eq!(status_line(b"vmm-guest: exit status 3\r", &p), Some(3));
        assert_eq!(status_line(b"svelt-init: exit status 0", &p), Some(0));
        assert_eq!(status_line(b"other: exit status 0", &p), None);
        assert_eq!(status_line(b"vmm-guest: exit status x", &p), None);
        assert_eq!(status_line(b"vmm-guest: exit status ", &p), None);
    }

    #[test]
    fn device_tree() {
        let mut buf = [0u8; 8192];
        let mut strings = [0u8; 1024];
        let mpidrs = [0x8000_0000, 0x8000_0001];
        let c = GuestConfig {
            ram_size: 256 << 20,
            mpidrs: &mpidrs,
            bootargs: "console=ttyAMA0",
            initrd: Some((0x4400_0000, 0x4410_0000)),
        };
        let n = write_dtb(&mut buf, &mut strings, &c).unwrap();
        let dtb = &buf[..n];
        assert_eq!(&dtb[..4], &[0xd0, 0x0d, 0xfe, 0xed]);
        assert_eq!(
            find_prop(dtb, "chosen", "bootargs"),
            Some(&b"console=ttyAMA0\0"[..])
        );
        assert_eq!(
            find_prop(dtb, "chosen", "stdout-path"),
            Some(&b"/pl011@9000000\0"[..])
        );
        assert_eq!(
            find_prop(dtb, "chosen", "linux,initrd-end"),
            Some(&0x4410_0000u64.to_be_bytes()[..])
        );
        assert_eq!(
            find_prop(dtb, "cpus/cpu@1", "reg"),
            Some(&[0, 0, 0, 0, 0, 0, 0, 1][..])
        );
        assert_eq!(
            find_prop(dtb, "cpus/cpu@1", "enable-method"),
            Some(&b"psci\0"[..])
        );
        assert_eq!(find_prop(dtb, "psci", "method"), Some(&b"hvc\0"[..]));
        let reg = find_prop(dtb, "intc@8000000", "reg").unwrap();
        assert_eq!(reg.len(), 32);
        assert_eq!(&reg[16..24], &GICR_BASE.to_be_bytes());
        assert_eq!(&reg[24..32], &(2 * GICR_STRIDE).to_be_bytes());
        let timer = find_prop(dtb, "timer", "interrupts").unwrap();
        assert_eq!(&timer[4..8], &13u32.to_be_bytes());
        let mem = find_prop(dtb, "memory@40000000", "reg").unwrap();
        assert_eq!(&mem[8..16], &(256u64 << 20).to_be_bytes());
        assert_eq!(
            find_prop(dtb, "pl011@9000000", "interrupts"),
            Some(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4][..])
        );
        // Too small a buffer is an error, not a partial tree.
        let mut small = [0u8; 256];
        assert_eq!(
            write_dtb(&mut small, &mut strings, &c),
            Err(FdtError::NoSpace)
        );
    }
}
