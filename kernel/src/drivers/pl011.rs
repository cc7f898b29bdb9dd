//! ARM PL011 UART: polled transmit, interrupt-driven receive (the receive and receive-timeout
//! interrupts; the handler drains the FIFO). Baud rate and line settings are left as firmware or
//! QEMU set them; the UART is only enabled if nobody did.

use tock_registers::interfaces::{ReadWriteable, Readable, Writeable};
use tock_registers::register_bitfields;
use tock_registers::register_structs;
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};

register_bitfields! {u32,
    FR [ TXFF OFFSET(5) NUMBITS(1) [], RXFE OFFSET(4) NUMBITS(1) [], BUSY OFFSET(3) NUMBITS(1) [] ],
    LCR_H [ WLEN OFFSET(5) NUMBITS(2) [EightBit = 3], FEN OFFSET(4) NUMBITS(1) [] ],
    CR [ RXE OFFSET(9) NUMBITS(1) [], TXE OFFSET(8) NUMBITS(1) [], UARTEN OFFSET(0) NUMBITS(1) [] ],
    /// IMSC (mask: 1 enables), ICR (write 1 to clear): the same bit per interrupt.
    INT [ RT OFFSET(6) NUMBITS(1) [], RX OFFSET(4) NUMBITS(1) [] ]
}

register_structs! {
    pub Pl011Regs {
        (0x00 => dr: ReadWrite<u32>),
        (0x04 => _r0),
        (0x18 => fr: ReadOnly<u32, FR::Register>),
        (0x1c => _r1),
        (0x2c => lcr_h: ReadWrite<u32, LCR_H::Register>),
        (0x30 => cr: ReadWrite<u32, CR::Register>),
        (0x34 => _r2),
        (0x38 => imsc: ReadWrite<u32, INT::Register>),
        (0x3c => _r3),
        (0x44 => icr: WriteOnly<u32, INT::Register>),
        (0x48 => @END),
    }
}

pub struct Pl011 {
    regs: &'static Pl011Regs,
}

// SAFETY: a Pl011 is a handle on MMIO registers; every access is a single volatile load or
// store, so sharing it between CPUs cannot break memory safety (callers serialise for output order).
unsafe impl Send for Pl011 {}
// SAFETY: every access through a Pl011 is one volatile load or store of MMIO, so using it
// from several CPUs at once cannot break memory safety.
unsafe impl Sync for Pl011 {}

impl Pl011 {
    /// # Safety
    /// `base` is the virtual address of a PL011's registers, device-mapped for 'static, and no
    /// other `Pl011` is created for it.
    pub unsafe fn new(base: usize) -> Pl011 {
        // SAFETY: `base` is a PL011's registers, device-mapped for 'static (this function's
        // contract), so the register block is valid for the reference's lifetime.
        let regs = unsafe { &*(base as *const Pl011Regs) };
        if !regs.cr.is_set(CR::UARTEN) {
            regs.lcr_h.write(LCR_H::WLEN::EightBit + LCR_H::FEN::SET);
            regs.cr.write(CR::UARTEN::SET + CR::TXE::SET + CR::RXE::SET);
        }
        Pl011 { regs }
    }

    /// A handle on a PL011 that is already set up, without touching its configuration.
    ///
    /// # Safety
    /// As for `new`, except that other handles may exist; writes through several handles at once
    /// interleave but are otherwise harmless.
    pub unsafe fn attach(base: usize) -> Pl011 {
        // SAFETY: `base` is a PL011's registers, device-mapped for 'static (this function's
        // contract); other handles only interleave output.
        let regs = unsafe { &*(base as *const Pl011Regs) };
        Pl011 { regs }
    }

    pub fn putc(&self, b: u8) {
        while self.regs.fr.is_set(FR::TXFF) {
            core::hint::spin_loop();
        }
        self.regs.dr.set(b.into());
    }

    /// Interrupts when bytes arrive (RX at the FIFO's trigger level, RT when a byte waits
    /// unread for 32 bit periods), and the receiver on.
    pub fn enable_rx_interrupts(&self) {
        self.regs.icr.write(INT::RX::SET + INT::RT::SET);
        self.regs.cr.modify(CR::RXE::SET);
        self.regs.imsc.modify(INT::RX::SET + INT::RT::SET);
    }

    /// The next received byte, if any (error flags in DR's upper bits are dropped: the byte
    /// is passed on as Linux does without INPCK/PARMRK).
    pub fn getc(&self) -> Option<u8> {
        if self.regs.fr.is_set(FR::RXFE) {
            return None;
        }
        Some(self.regs.dr.get() as u8)
    }

    /// Acknowledges the receive interrupts (before draining the FIFO).
    pub fn clear_rx_interrupts(&self) {
        self.regs.icr.write(INT::RX::SET + INT::RT::SET);
    }

    /// Waits until everything written has left the UART.
    pub fn flush(&self) {
        while self.regs.fr.is_set(FR::BUSY) {
            core::hint::spin_loop();
        }
    }
}
