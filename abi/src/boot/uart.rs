//! Console UARTs as the device tree describes them: which driver a node's `compatible` asks
//! for, where `/chosen/stdout-path` points, and the 8250/16550 register arithmetic and status
//! decisions (the kernel's driver does only the loads and stores).

/// The UART families Svelt drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UartKind {
    /// ARM PL011 (`arm,pl011`), or an SBSA generic UART (`arm,sbsa-uart`).
    Pl011,
    /// 8250/16550-compatible (`ns16550a`, `ns16550`, `snps,dw-apb-uart`, ...).
    Ns16550,
}

/// `compatible` strings of 16550-style UARTs whose registers behave alike for polled output
/// and receive interrupts. The DesignWare one adds a busy-detect interrupt (see
/// [`Iir::BusyDetect`]).
pub const NS16550_COMPATIBLE: &[&str] = &[
    "ns16550a",
    "ns16550",
    "ns16450",
    "ns8250",
    "snps,dw-apb-uart",
];

/// The driver for a node with these `compatible` strings, if Svelt has one.
pub fn uart_kind<'a>(mut compatible: impl Iterator<Item = &'a str>) -> Option<UartKind> {
    compatible.find_map(|c| {
        // The SBSA generic UART is a subset of the PL011's registers (data, flags, interrupt
        // mask, status and clear), all the driver uses once firmware has enabled the UART.
        if c == "arm,pl011" || c == "arm,sbsa-uart" {
            Some(UartKind::Pl011)
        } else if NS16550_COMPATIBLE.contains(&c) {
            Some(UartKind::Ns16550)
        } else {
            None
        }
    })
}

/// `/chosen/stdout-path` split into the node (a path or an alias) and its options
/// (`"serial0:115200n8"` → `("serial0", Some("115200n8"))`); `None` when empty.
pub fn split_stdout_path(value: &[u8]) -> Option<(&str, Option<&str>)> {
    let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
    let s = core::str::from_utf8(&value[..end]).ok()?;
    let (node, opts) = match s.split_once(':') {
        Some((n, o)) => (n, Some(o)),
        None => (s, None),
    };
    (!node.is_empty()).then_some((node, opts))
}

/// The absolute node path a `stdout-path` node names: a path as it is, an alias through
/// `alias` (the `/aliases` property of that name). `None` when either is not an absolute path
/// (a device-tree parser may only be asked for those) or the alias is unknown.
pub fn stdout_node_path<'a>(
    node: &'a str,
    alias: impl FnOnce(&str) -> Option<&'a str>,
) -> Option<&'a str> {
    let path = if node.starts_with('/') {
        node
    } else {
        alias(node)?
    };
    (path.starts_with('/')).then_some(path)
}

/// 16550 register numbers (the index before `reg-shift` scales it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Reg16550 {
    /// Receive buffer (read) / transmit holding (write); divisor latch low with LCR.DLAB.
    RbrThr = 0,
    /// Interrupt enable.
    Ier = 1,
    /// Interrupt identification (read) / FIFO control (write).
    IirFcr = 2,
    Lcr = 3,
    Mcr = 4,
    Lsr = 5,
    /// DesignWare's UART status register (reading it clears a busy-detect interrupt).
    DwUsr = 31,
}

/// How a 16550's registers are laid out: `reg-shift` (register index → byte offset) and
/// `reg-io-width` (1 or 4 bytes per access).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout16550 {
    pub shift: u32,
    pub width: u8,
}

impl Layout16550 {
    /// From the node's properties (both optional, default 0 and 1). Widths other than 1 and 4
    /// (2 is not used by any 16550 binding Svelt knows) and shifts above 4 are refused.
    pub fn new(reg_shift: Option<u32>, reg_io_width: Option<u32>) -> Option<Layout16550> {
        let shift = reg_shift.unwrap_or(0);
        let width = reg_io_width.unwrap_or(1);
        (shift <= 4 && (width == 1 || width == 4)).then_some(Layout16550 {
            shift,
            width: width as u8,
        })
    }

    /// The byte offset of `reg` from the UART's base.
    pub fn offset(&self, reg: Reg16550) -> usize {
        (reg as usize) << self.shift
    }

    /// How many bytes the registers span (what must be mapped).
    pub fn span(&self) -> usize {
        self.offset(Reg16550::DwUsr) + self.width as usize
    }
}

/// Line status register bits.
pub mod lsr {
    /// A received byte waits in RBR.
    pub const DR: u8 = 1 << 0;
    /// The transmit holding register (or FIFO) has room.
    pub const THRE: u8 = 1 << 5;
    /// Transmitter empty: everything written has left the shift register.
    pub const TEMT: u8 = 1 << 6;
}

/// IER: receive data available (and the character timeout with FIFOs).
pub const IER_RDI: u8 = 1 << 0;
/// FCR: FIFOs on, both cleared.
pub const FCR_ENABLE_CLEAR: u8 = 0b111;
/// MCR: DTR, RTS and OUT2 (which gates the interrupt line on PC-style wiring).
pub const MCR_DTR_RTS_OUT2: u8 = 0b1011;
/// LCR: 8 data bits, no parity, one stop bit, DLAB clear.
pub const LCR_8N1: u8 = 0b11;

/// Whether a byte may be written now.
pub fn can_send(lsr: u8) -> bool {
    lsr & lsr::THRE != 0
}

/// Whether a byte can be read now.
pub fn can_receive(lsr: u8) -> bool {
    lsr & lsr::DR != 0
}

/// Whether everything written has left the UART.
pub fn drained(lsr: u8) -> bool {
    lsr & lsr::TEMT != 0
}

/// What IIR says is pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iir {
    None,
    /// Received data (at the FIFO's trigger level) or a character timeout: drain RBR.
    Receive,
    /// A line status condition: reading LSR clears it.
    LineStatus,
    /// Room to transmit (not enabled by Svelt).
    TransmitEmpty,
    /// Modem status: reading MSR clears it (not enabled by Svelt).
    Modem,
    /// DesignWare: LCR written while busy; reading USR clears it.
    BusyDetect,
}

pub fn decode_iir(iir: u8) -> Iir {
    match iir & 0xf {
        0x1 => Iir::None,
        0x4 | 0xc => Iir::Receive,
        0x6 => Iir::LineStatus,
        0x2 => Iir::TransmitEmpty,
        0x0 => Iir::Modem,
        0x7 => Iir::BusyDetect,
        _ => Iir::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_compatible() {
        assert_eq!(
            uart_kind(["arm,pl011", "arm,primecell"].into_iter()),
            Some(UartKind::Pl011)
        );
        assert_eq!(
            uart_kind(["rockchip,rk3588-uart", "snps,dw-apb-uart"].into_iter()),
            Some(UartKind::Ns16550)
        );
        assert_eq!(uart_kind(["ns16550a"].into_iter()), Some(UartKind::Ns16550));
        assert_eq!(uart_kind(["brcm,bcm2835-aux-uart"].into_iter()), None);
        assert_eq!(uart_kind([].into_iter()), None);
    }

    #[test]
    fn stdout_path_forms() {
        assert_eq!(
            split_stdout_path(b"/pl011@9000000\0"),
            Some(("/pl011@9000000", None))
        );
        assert_eq!(
            split_stdout_path(b"serial0:115200n8\0"),
            Some(("serial0", Some("115200n8")))
        );
        assert_eq!(
            split_stdout_path(b"/soc/serial@feb50000:1500000n8"),
            Some(("/soc/serial@feb50000", Some("1500000n8")))
        );
        assert_eq!(split_stdout_path(b"\0"), None);
        assert_eq!(split_stdout_path(b""), None);
        assert_eq!(split_stdout_path(b":115200"), None);
        assert_eq!(split_stdout_path(&[0xff, 0xfe, 0]), None);
    }

    #[test]
    fn stdout_path_aliases_resolve_to_absolute_paths() {
        let aliases = |a: &str| match a {
            "serial0" => Some("/soc/serial@12c1a000"),
            "broken" => Some("serial@1"),
            _ => None,
        };
        assert_eq!(
            stdout_node_path("/pl011@9000000", aliases),
            Some("/pl011@9000000")
        );
        assert_eq!(
            stdout_node_path("serial0", aliases),
            Some("/soc/serial@12c1a000")
        );
        // An unknown alias, or one that is not an absolute path, names nothing.
        assert_eq!(stdout_node_path("serial1", aliases), None);
        assert_eq!(stdout_node_path("broken", aliases), None);
    }

    #[test]
    fn register_offsets_follow_shift_and_width() {
        // A PC-style 16550: byte registers next to each other.
        let pc = Layout16550::new(None, None).unwrap();
        assert_eq!(pc.offset(Reg16550::Lsr), 5);
        assert_eq!(pc.offset(Reg16550::RbrThr), 0);
        // DesignWare on most SoCs: reg-shift 2, reg-io-width 4.
        let dw = Layout16550::new(Some(2), Some(4)).unwrap();
        assert_eq!(dw.offset(Reg16550::Lsr), 0x14);
        assert_eq!(dw.offset(Reg16550::IirFcr), 0x08);
        assert_eq!(dw.offset(Reg16550::DwUsr), 0x7c);
        assert_eq!(dw.span(), 0x80);
        assert_eq!(pc.span(), 32);
        assert_eq!(Layout16550::new(Some(0), Some(2)), None);
        assert_eq!(Layout16550::new(Some(5), Some(4)), None);
    }

    #[test]
    fn status_decisions() {
        assert!(can_send(0x60) && can_send(0x20) && !can_send(0x01));
        assert!(can_receive(0x61) && !can_receive(0x60));
        assert!(drained(0x60) && !drained(0x20));
        assert_eq!(decode_iir(0xc1), Iir::None);
        assert_eq!(decode_iir(0xc4), Iir::Receive);
        assert_eq!(decode_iir(0xcc), Iir::Receive);
        assert_eq!(decode_iir(0xc6), Iir::LineStatus);
        assert_eq!(decode_iir(0xc2), Iir::TransmitEmpty);
        assert_eq!(decode_iir(0xc7), Iir::BusyDetect);
        assert_eq!(decode_iir(0xc0), Iir::Modem);
    }
}
