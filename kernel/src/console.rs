//! The kernel console: the UART named by /chosen/stdout-path (a PL011 or a 16550), `print!`/
//! `println!`, and the `log` backend. Lines are written whole under a lock (with IRQs masked, so an interrupt handler that
//! logs cannot deadlock against the code it interrupted).

use crate::arch::cpu;
use crate::drivers::ns16550::Ns16550;
use crate::drivers::pl011::Pl011;
use core::fmt::{self, Write};
use spin::{Mutex, Once};
use svelt_abi::boot::uart::Layout16550;
use tock_registers::interfaces::{Readable, Writeable};

/// Which UART the console is, and where.
#[derive(Clone, Copy)]
pub enum UartAt {
    Pl011(usize),
    Ns16550(usize, Layout16550),
}

/// The console's UART, one driver or the other.
enum Uart {
    Pl011(Pl011),
    Ns16550(Ns16550),
}

impl Uart {
    fn putc(&self, b: u8) {
        match self {
            Uart::Pl011(u) => u.putc(b),
            Uart::Ns16550(u) => u.putc(b),
        }
    }
    /// Console text: each newline goes out as CR LF.
    fn write_bytes(&self, s: &[u8]) {
        for &b in s {
            if b == b'\n' {
                self.putc(b'\r');
            }
            self.putc(b);
        }
    }
    /// Bytes as they are (a terminal's output, already post-processed).
    fn write_raw(&self, s: &[u8]) {
        for &b in s {
            self.putc(b);
        }
    }
    fn flush(&self) {
        match self {
            Uart::Pl011(u) => u.flush(),
            Uart::Ns16550(u) => u.flush(),
        }
    }
    fn enable_rx_interrupts(&self) {
        match self {
            Uart::Pl011(u) => u.enable_rx_interrupts(),
            Uart::Ns16550(u) => u.enable_rx_interrupts(),
        }
    }
    fn clear_rx_interrupts(&self) {
        match self {
            Uart::Pl011(u) => u.clear_rx_interrupts(),
            Uart::Ns16550(u) => u.clear_rx_interrupts(),
        }
    }
    fn getc(&self) -> Option<u8> {
        match self {
            Uart::Pl011(u) => u.getc(),
            Uart::Ns16550(u) => u.getc(),
        }
    }
}

static CONSOLE: Mutex<Option<Uart>> = Mutex::new(None);
/// The UART, for the lock-free emergency writer.
static AT: Once<UartAt> = Once::new();

/// # Safety
/// `at` names the virtual address of a UART of that kind, device-mapped for 'static (for a
/// 16550, over its layout's span).
pub unsafe fn init(at: UartAt) {
    // SAFETY: the UART is mapped for 'static (this function's contract), and this is the only
    // driver made for the console.
    let uart = unsafe {
        match at {
            UartAt::Pl011(base) => Uart::Pl011(Pl011::new(base)),
            UartAt::Ns16550(base, layout) => Uart::Ns16550(Ns16550::new(base, layout)),
        }
    };
    *CONSOLE.lock() = Some(uart);
    AT.call_once(|| at);
}

struct Locked<'a>(&'a Uart);
impl Write for Locked<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write_bytes(s.as_bytes());
        Ok(())
    }
}

pub fn _print(args: fmt::Arguments) {
    let daif = aarch64_cpu::registers::DAIF.get();
    cpu::irq_disable();
    if let Some(uart) = CONSOLE.lock().as_ref() {
        let _ = Locked(uart).write_fmt(args);
    }
    aarch64_cpu::registers::DAIF.set(daif);
}

/// Writes a terminal's output bytes as they are (the line discipline did the translations).
pub fn write_raw(b: &[u8]) {
    let daif = aarch64_cpu::registers::DAIF.get();
    cpu::irq_disable();
    if let Some(uart) = CONSOLE.lock().as_ref() {
        uart.write_raw(b);
    }
    aarch64_cpu::registers::DAIF.set(daif);
}

/// Waits until everything written has left the UART (a terminal's drain).
pub fn drain() {
    let daif = aarch64_cpu::registers::DAIF.get();
    cpu::irq_disable();
    if let Some(uart) = CONSOLE.lock().as_ref() {
        uart.flush();
    }
    aarch64_cpu::registers::DAIF.set(daif);
}

/// Turns on the UART's receive interrupts.
pub fn enable_input() {
    let daif = aarch64_cpu::registers::DAIF.get();
    cpu::irq_disable();
    if let Some(uart) = CONSOLE.lock().as_ref() {
        uart.enable_rx_interrupts();
    }
    aarch64_cpu::registers::DAIF.set(daif);
}

/// Takes up to `buf.len()` bytes from the receive FIFO (from the UART's interrupt); returns
/// how many.
pub fn read_input(buf: &mut [u8]) -> usize {
    let daif = aarch64_cpu::registers::DAIF.get();
    cpu::irq_disable();
    let mut n = 0;
    if let Some(uart) = CONSOLE.lock().as_ref() {
        // Acknowledge first, then drain: a byte that lands after the last look raises the
        // interrupt again (acknowledging after the drain could swallow it for good).
        uart.clear_rx_interrupts();
        while n < buf.len() {
            let Some(b) = uart.getc() else { break };
            buf[n] = b;
            n += 1;
        }
    }
    aarch64_cpu::registers::DAIF.set(daif);
    n
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::console::_print(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::console::_print(format_args!("{}\n", format_args!($($arg)*))) };
}

/// A writer that bypasses the lock: for the fatal-error path only, where the lock holder may be
/// the code that just crashed.
pub struct Emergency(Option<Uart>);

pub fn emergency() -> Emergency {
    // SAFETY: AT was device-mapped for 'static by `init` and the UART set up there. Concurrent
    // writers can interleave characters, which is acceptable when the machine is going down.
    Emergency(AT.get().map(|at| unsafe {
        match *at {
            UartAt::Pl011(base) => Uart::Pl011(Pl011::attach(base)),
            UartAt::Ns16550(base, layout) => Uart::Ns16550(Ns16550::attach(base, layout)),
        }
    }))
}

impl Write for Emergency {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Some(u) = &self.0 {
            u.write_bytes(s.as_bytes());
        }
        Ok(())
    }
}

impl Emergency {
    pub fn flush(&self) {
        if let Some(u) = &self.0 {
            u.flush();
        }
    }
}

struct KernelLogger;

impl log::Log for KernelLogger {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::max_level()
    }

    fn log(&self, r: &log::Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let prio = match r.level() {
            log::Level::Error => svelt_abi::uapi::klog::LEVEL_ERR,
            log::Level::Warn => svelt_abi::uapi::klog::LEVEL_WARNING,
            log::Level::Info => svelt_abi::uapi::klog::LEVEL_INFO,
            log::Level::Debug | log::Level::Trace => svelt_abi::uapi::klog::LEVEL_DEBUG,
        };
        let mut text = TextBuf {
            buf: [0; crate::klog::MAX_TEXT],
            len: 0,
        };
        let _ = write!(text, "{}", r.args());
        let t = cpu::counter();
        if crate::klog::record(prio, crate::time::counter_to_ns(t), &text.buf[..text.len]) {
            log_line(t, r.level().as_str(), *r.args());
        }
    }

    fn flush(&self) {}
}

/// A record's text, cut at the ring's limit.
struct TextBuf {
    buf: [u8; crate::klog::MAX_TEXT],
    len: usize,
}

impl Write for TextBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// A log record on the console: time, CPU, level, text.
pub fn log_line(t: u64, level: &str, args: fmt::Arguments) {
    let f = cpu::counter_freq().max(1);
    let us = (t % f) * 1_000_000 / f;
    println!(
        "[{:5}.{:06}] cpu{} {:<5} {}",
        t / f,
        us,
        crate::percpu::cpu_id(),
        level,
        args
    );
}

static LOGGER: KernelLogger = KernelLogger;

pub fn init_log(level: svelt_abi::boot::cmdline::LogLevel) {
    use svelt_abi::boot::cmdline::LogLevel as L;
    let filter = match level {
        L::Off => log::LevelFilter::Off,
        L::Error => log::LevelFilter::Error,
        L::Warn => log::LevelFilter::Warn,
        L::Info => log::LevelFilter::Info,
        L::Debug => log::LevelFilter::Debug,
        L::Trace => log::LevelFilter::Trace,
    };
    let _ = log::set_logger(&LOGGER);
    // The ring keeps debug records whatever the console shows (as Linux's printk keeps
    // KERN_DEBUG); `log=trace` adds trace.
    log::set_max_level(filter.max(log::LevelFilter::Debug));
    crate::klog::set_console_level(level.console_level());
}
