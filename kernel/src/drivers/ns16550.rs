//! 8250/16550-compatible UART (ns16550a, snps,dw-apb-uart, ...): polled transmit,
//! interrupt-driven receive. Registers sit `1 << reg-shift` bytes apart and are accessed
//! `reg-io-width` bytes wide, so they are reached by computed offsets (svelt_abi::boot::uart does
//! the arithmetic and the status decisions). Baud rate and line settings are left as firmware
//! set them.

use svelt_abi::boot::uart::{self, Iir, Layout16550, Reg16550};

pub struct Ns16550 {
    base: usize,
    layout: Layout16550,
}

impl Ns16550 {
    /// # Safety
    /// `base` is the virtual address of a 16550's registers laid out as `layout` says,
    /// device-mapped for 'static over `layout.span()` bytes, and no other `Ns16550` is created
    /// for it (`attach` handles excepted).
    pub unsafe fn new(base: usize, layout: Layout16550) -> Ns16550 {
        let u = Ns16550 { base, layout };
        // FIFOs on (and emptied), the modem lines up so the interrupt line is wired through;
        // no interrupts until `enable_rx_interrupts`.
        u.write(Reg16550::Ier, 0);
        u.write(Reg16550::IirFcr, uart::FCR_ENABLE_CLEAR);
        u.write(Reg16550::Mcr, uart::MCR_DTR_RTS_OUT2);
        u
    }

    /// A handle on a 16550 that is already set up, without touching it.
    ///
    /// # Safety
    /// As for `new`, except that other handles may exist; writes through several handles at
    /// once interleave but are otherwise harmless.
    pub unsafe fn attach(base: usize, layout: Layout16550) -> Ns16550 {
        Ns16550 { base, layout }
    }

    fn read(&self, reg: Reg16550) -> u8 {
        let a = self.base + self.layout.offset(reg);
        // SAFETY: `a` lies inside the register span mapped for 'static (`new`'s contract) and
        // is aligned for the access width (offsets are multiples of 1 << shift ≥ width when the
        // width is 4, as the bindings require).
        unsafe {
            if self.layout.width == 4 {
                core::ptr::read_volatile(a as *const u32) as u8
            } else {
                core::ptr::read_volatile(a as *const u8)
            }
        }
    }

    fn write(&self, reg: Reg16550, v: u8) {
        let a = self.base + self.layout.offset(reg);
        // SAFETY: as in `read`.
        unsafe {
            if self.layout.width == 4 {
                core::ptr::write_volatile(a as *mut u32, v.into())
            } else {
                core::ptr::write_volatile(a as *mut u8, v)
            }
        }
    }

    pub fn putc(&self, b: u8) {
        while !uart::can_send(self.read(Reg16550::Lsr)) {
            core::hint::spin_loop();
        }
        self.write(Reg16550::RbrThr, b);
    }

    /// Interrupts when bytes arrive (received data and character timeout).
    pub fn enable_rx_interrupts(&self) {
        self.write(Reg16550::Ier, uart::IER_RDI);
    }

    pub fn getc(&self) -> Option<u8> {
        uart::can_receive(self.read(Reg16550::Lsr)).then(|| self.read(Reg16550::RbrThr))
    }

    /// Clears what is pending besides received data, which draining RBR clears: a line status
    /// condition (LSR read) or DesignWare's busy detect (USR read), either of which would
    /// otherwise keep the line raised.
    pub fn clear_rx_interrupts(&self) {
        match uart::decode_iir(self.read(Reg16550::IirFcr)) {
            Iir::LineStatus => {
                self.read(Reg16550::Lsr);
            }
            Iir::BusyDetect => {
                self.read(Reg16550::DwUsr);
            }
            _ => {}
        }
    }

    /// Waits until everything written has left the UART.
    pub fn flush(&self) {
        while !uart::drained(self.read(Reg16550::Lsr)) {
            core::hint::spin_loop();
        }
    }
}
