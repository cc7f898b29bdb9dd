//! Svelt: a small AArch64 kernel for the Linux arm64 SVE/SME userspace ABI.
//!
//! Boot order: head.s (EL2 → EL1, early map, MMU on) → `kernel_main`: read the DTB, build the
//! W^X kernel map, console, memory, CPU features, interrupts, secondary CPUs, boot report.
#![no_std]
#![no_main]
#![deny(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

mod arch;
mod boot;
mod console;
mod cpufeature;
mod drivers;
mod dt;
mod entry;
mod fs;
mod irq;
mod klog;
mod kvm;
mod mm;
mod net;
mod percpu;
mod power;
mod process;
mod procfs;
mod selftest;
mod smp;
mod sync;
mod syscall;
mod task;
mod time;
mod trap;
mod tty;
mod uts;
mod vdso;

use arch::{cpu, el, mmu};
use core::fmt::Write;
use core::sync::atomic::Ordering;
use drivers::{gic, psci};
use svelt_abi::boot::cmdline::Cmdline;
use svelt_abi::boot::memrange::{self, Range};
use svelt_abi::boot::uart::UartKind;
use svelt_abi::isa::cpu::{SmeLine, SveLine, VlDifferLine};

/// Filled by EL1 for the EL2 report-and-halt vectors (vectors.s), which run with the MMU off.
#[repr(C)]
pub struct El2Report {
    uart_pa: u64,
    exit_semihosting: u64,
    /// A 16550's LSR offset (0: the UART is a PL011) and register access width (1 or 4).
    lsr_offset: u64,
    io_width: u64,
}
const _: () = assert!(core::mem::size_of::<El2Report>() == 32);
// vectors.s reads the fields at these offsets.
const _: () = assert!(core::mem::offset_of!(El2Report, exit_semihosting) == 8);
const _: () = assert!(core::mem::offset_of!(El2Report, lsr_offset) == 16);
const _: () = assert!(core::mem::offset_of!(El2Report, io_width) == 24);

#[unsafe(no_mangle)]
static mut el2_report: El2Report = El2Report {
    uart_pa: 0,
    exit_semihosting: 0,
    lsr_offset: 0,
    io_width: 0,
};

/// Primary CPU entry from head.s: MMU on with the early map, on the boot stack, IRQs masked.
#[unsafe(no_mangle)]
pub extern "C" fn kernel_main(dtb_pa: u64, entry_el: u64, image_pa: u64) -> ! {
    percpu::prepare(0, cpu::mpidr(), arch::boot::boot_stack_range());
    percpu::enter(0);

    let dtb_va = mmu::phys_to_virt(dtb_pa);
    // SAFETY: head.s mapped the DTB's header in the linear map, read-write.
    let header: [u8; 40] = unsafe { core::ptr::read_volatile(dtb_va as *const [u8; 40]) };
    let magic = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    let total = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if magic == 0xd00d_feed && total <= 2 << 20 {
        // SAFETY: head.s mapped `totalsize` bytes of the DTB read-write (it maps up to 2 MiB);
        // nothing else refers to them yet.
        let blob = unsafe { core::slice::from_raw_parts_mut(dtb_va as *mut u8, total) };
        // A loader's edits may have left NOPs the fdt crate cannot parse; a malformed tree is
        // left for the parser to refuse.
        let _ = svelt_abi::boot::fdt::drop_nops(blob);
    }
    // SAFETY: head.s mapped the DTB's blocks in the linear map; the loader promises a valid DTB
    // there, and the frame allocator never hands out its range, so it lives for 'static.
    let fdt: fdt::Fdt<'static> = match unsafe { fdt::Fdt::from_ptr(dtb_va as *const u8) } {
        Ok(f) => f,
        Err(_) => cpu::halt(), // no DTB, so no console to say so
    };
    let dt_hz = dt::timer_clock_frequency(&fdt);
    let hz = svelt_abi::isa::cpu::counter_rate(dt_hz, cpu::cntfrq());
    cpu::set_counter_freq(hz.unwrap_or(0));
    let (ram, nram) = dt::ram::<16>(&fdt);
    let ram = &ram[..nram];
    let Some(uart) = dt::console(&fdt) else {
        cpu::halt()
    };
    if mm::build_kernel_map(image_pa, ram).is_err() {
        cpu::halt();
    }
    let uart_span = match uart.kind {
        UartKind::Pl011 => 0x1000,
        UartKind::Ns16550 => uart.layout.span(),
    };
    let Ok(uart_va) = mmu::ioremap(uart.regs.start, uart_span) else {
        cpu::halt()
    };
    percpu::set_possible(dt::cpu_count(&fdt));
    let gic_info = dt::gic(&fdt);
    let gic_vas = gic_info.as_ref().and_then(map_gic);
    mmu::activate();
    // SAFETY: uart_va maps the DTB's console UART (its whole register span) as device memory,
    // for good.
    unsafe {
        console::init(match uart.kind {
            UartKind::Pl011 => console::UartAt::Pl011(uart_va),
            UartKind::Ns16550 => console::UartAt::Ns16550(uart_va, uart.layout),
        })
    };

    // Not `fdt.chosen()`: it panics on a device tree without /chosen.
    let bootargs = fdt
        .find_node("/chosen")
        .and_then(|c| c.property("bootargs"))
        .and_then(|p| p.as_str())
        .unwrap_or("");
    let cmdline = Cmdline::parse(bootargs);
    power::set_exit_via(cmdline.exit);
    console::init_log(cmdline.log);
    println!("svelt: entered at EL{entry_el}");
    let vhe = el::vhe();
    println!("svelt: kernel at {}", if vhe { "EL2 (VHE)" } else { "EL1" });
    match uart.kind {
        UartKind::Pl011 => println!("svelt: console pl011 at {:#x}", uart.regs.start),
        UartKind::Ns16550 => println!(
            "svelt: console 16550 at {:#x}, reg-shift {}, reg-io-width {}",
            uart.regs.start, uart.layout.shift, uart.layout.width
        ),
    }
    match cmdline.el {
        Some(1) if vhe => log::error!("svelt.el=1 on the command line, but head.s stayed at EL2"),
        Some(2) if !vhe && entry_el == 2 => {
            log::warn!("svelt.el=2: this CPU has no FEAT_VHE, so the kernel runs at EL1")
        }
        Some(2) if !vhe => log::warn!("svelt.el=2: entered at EL1, so the kernel runs there"),
        _ => {}
    }
    log::info!(
        "Svelt {} on {}",
        env!("CARGO_PKG_VERSION"),
        fdt.root().model()
    );
    log::info!("command line: \"{}\"", cmdline.raw());
    for bad in cmdline.fp_policy_bad.iter().flatten() {
        log::warn!(
            "{}={:?}: unknown value, the default stays",
            bad.key,
            bad.value
        );
    }
    task::fpstate::set_policy(cmdline.fp_policy);
    println!("svelt: fp policy {}", cmdline.fp_policy);
    match (hz, dt_hz) {
        (Some(hz), Some(d)) if d != 0 => {
            log::info!("counter {hz} Hz (device tree clock-frequency)")
        }
        (Some(hz), _) => log::info!("counter {hz} Hz (CNTFRQ_EL0)"),
        (None, _) => {
            log::error!("counter frequency unknown: CNTFRQ_EL0 is 0 and no clock-frequency")
        }
    }
    if entry_el == 2 && !vhe {
        hand_over_to_el2_reporter(&uart);
    }

    init_memory(&fdt, dtb_pa, image_pa, ram);
    tty::init();
    kvm::init(cmdline.vmid_bits);
    procfs::set_kernel_cmdline(cmdline.raw());
    percpu::init_table();
    if dt::cpu_count(&fdt) > percpu::MAX_CPUS {
        log::warn!(
            "{} CPUs in the device tree: Svelt runs the first {}",
            dt::cpu_count(&fdt),
            percpu::MAX_CPUS
        );
    }
    process::coredump::configure(cmdline.coredump_semihosting, cmdline.coredump_dir);
    process::init_limits();
    mm::aspace::init();
    cpufeature::init_this_cpu();
    task::fpstate::cpu_init();

    // The timer interrupt runs its handlers in the order they register: the tasks' timers
    // (here), the processes' interval timers and the timerfds, the tty's typed signals (tty::enable_input), the scheduler's slice.
    task::timer::init_irq();
    process::itimer::init_irq();
    fs::timerfd::init_irq();
    if let (Some(g), Some((dist, second, n))) = (&gic_info, gic_vas) {
        if let Some(id) = dt::timer_intid(&fdt, cpu::timer_interrupt_index()) {
            irq::set_timer_intid(id);
        }
        // SAFETY: dist and second are device mappings of this GIC's frames, made above.
        unsafe { gic::init(g.version, dist, &second[..n]) };
        smp::bring_up_interrupts();
        if let Some(id) = dt::console_intid(&fdt) {
            tty::enable_input(id);
        }
        log::info!(
            "GICv{} at {:#x}, timer INTID {}",
            g.version,
            g.dist.start,
            irq::timer_intid()
        );
    } else {
        log::error!("no GIC in the device tree: no interrupts");
    }
    task::sched::init_irqs();
    process::init();
    process::init_cpu();
    percpu::this().online.store(true, Ordering::Release);

    psci::set_conduit(dt::psci_method(&fdt).unwrap_or(""));
    if let Some((maj, min)) = psci::version() {
        log::info!("PSCI {maj}.{min} via {:?}", psci::conduit());
    }
    smp::start_secondaries(&fdt, image_pa);

    cpufeature::finalize(cmdline.mops);
    task::fpstate::init_default_vls();
    let ticking = wait_for_ticks(3);
    println!("svelt: timer ticking on {ticking} cpus");
    boot_report();

    if let Some(name) = cmdline.selftest {
        selftest::run(name, entry_el);
    }

    time::init(&fdt);
    if let Some(seed) = fdt
        .find_node("/chosen")
        .and_then(|c| c.property("rng-seed"))
    {
        fs::dev::seed_random(seed.value);
    }
    if !unpack_root(&fdt, dtb_pa, image_pa, ram) {
        println!("svelt: no initramfs, nothing to run");
        power::exit(0);
    }
    let init = cmdline.init.unwrap_or("/init");
    // SAFETY: boot runs as this CPU's idle task (process::init_cpu), which never enters user
    // mode; the token lives on this stack only until PID 1 is made.
    let boot = process::CurrentTask::new(unsafe { task::CurrentTask::enter() });
    if let Err(e) = process::exec::spawn_init(&boot, init) {
        println!("svelt: cannot run {init}: {e}");
        power::exit(1);
    }
    task::sched::idle_loop()
}

/// Unpacks the root file system from the initrd, or, when there is none or its region holds
/// no archive (U-Boot passes one even without an initrd), from the archive built into the
/// image. Returns whether there was an archive; without one the root has only its mount points.
fn unpack_root(fdt: &fdt::Fdt, dtb_pa: u64, image_pa: u64, ram: &[Range]) -> bool {
    if let Some(r) = dt::initrd(fdt) {
        let unpacked = {
            // SAFETY: the initrd lies in RAM (linear-mapped) that init_memory kept from the
            // frame allocator; the slice lives only in this block, and the frames go to the
            // allocator only after it.
            let region = unsafe {
                core::slice::from_raw_parts(
                    mmu::phys_to_virt(r.start) as *const u8,
                    (r.end - r.start) as usize,
                )
            };
            let archive = svelt_abi::boot::cpio::region_start(region).is_archive();
            if archive {
                fs::init(Some(region), procfs::ProcRoot::new());
            } else {
                println!("svelt: initrd region holds no archive, going on without one");
            }
            archive
        };
        release_initrd(fdt, dtb_pa, image_pa, ram, r);
        if unpacked {
            return true;
        }
    }
    let built_in = fs::initramfs::embedded();
    if let Some(a) = built_in {
        log::info!(
            "initramfs: the image's built-in archive ({} KiB)",
            a.len() >> 10
        );
    }
    fs::init(built_in, procfs::ProcRoot::new());
    built_in.is_some()
}

/// Maps the GIC's distributor and its redistributor regions (v3) or CPU interface (v2): the
/// virtual address of the distributor, and (virtual address, size) of the others.
type GicVas = (usize, [(usize, usize); dt::MAX_REDIST_REGIONS], usize);
fn map_gic(g: &dt::GicInfo) -> Option<GicVas> {
    let dist = mmu::ioremap(g.dist.start, 0x10000).ok()?;
    let mut second = [(0, 0); dt::MAX_REDIST_REGIONS];
    let mut n = 0;
    for r in g.seconds() {
        // v3: a region holds up to one redistributor (at most 256 KiB) per CPU; only what the
        // CPUs can use is mapped.
        let size = if g.version == 3 {
            (r.end - r.start).min((percpu::possible() * 0x40000) as u64) as usize
        } else {
            0x2000
        };
        second[n] = (mmu::ioremap(r.start, size).ok()?, size);
        n += 1;
    }
    Some((dist, second, n))
}

/// Ranges the frame allocator must not hand out: the image, the DTB, the initrd (unless
/// `initrd` is false) and the DTB's reservations.
fn reserved_ranges(
    fdt: &fdt::Fdt,
    dtb_pa: u64,
    image_pa: u64,
    initrd: bool,
) -> ([Range; 32], usize) {
    let mut reserved = [Range::new(0, 0); 32];
    let mut n = 0;
    let mut reserve = |r: Range| {
        if n < reserved.len() {
            reserved[n] = r;
            n += 1;
        }
    };
    reserve(mm::image_phys_range(image_pa));
    reserve(Range::from_base_size(dtb_pa, fdt.total_size() as u64));
    if initrd {
        if let Some(r) = dt::initrd(fdt) {
            reserve(r);
        }
    }
    dt::for_each_reserved(fdt, &mut reserve);
    (reserved, n)
}

/// Gives the initrd's frames (the whole pages of it that are RAM and nothing else's) to the
/// frame allocator once it has been unpacked.
fn release_initrd(fdt: &fdt::Fdt, dtb_pa: u64, image_pa: u64, ram: &[Range], initrd: Range) {
    let (reserved, n) = reserved_ranges(fdt, dtb_pa, image_pa, false);
    let before = mm::frame::total();
    for r in ram {
        let piece = Range::new(r.start.max(initrd.start), r.end.min(initrd.end));
        if !piece.is_empty() {
            memrange::free_ranges(&[piece], &reserved[..n], mmu::PAGE_SIZE as u64, |f| {
                mm::frame::add(f)
            });
        }
    }
    let back = mm::frame::total() - before;
    log::info!(
        "initramfs: {back} pages ({} KiB) of the archive given back to the frame allocator",
        back * mmu::PAGE_SIZE / 1024
    );
}

/// Reserved ranges out, the rest to the frame allocator; then the heap.
fn init_memory(fdt: &fdt::Fdt, dtb_pa: u64, image_pa: u64, ram: &[Range]) {
    let (reserved, n) = reserved_ranges(fdt, dtb_pa, image_pa, true);
    let reserved = &reserved[..n];
    let page = mmu::PAGE_SIZE as u64;
    let mut total = 0;
    memrange::free_ranges(ram, reserved, page, |r| total += r.end - r.start);
    // The frame descriptors (one per frame of the span of RAM) come from the first free range
    // big enough; the buddy allocator gets everything else, and the heap grows from it.
    let lo = ram.iter().map(|r| r.start).min().unwrap_or(0);
    let hi = ram.iter().map(|r| r.end).max().unwrap_or(0);
    let need = mm::frame::descriptors_size(lo, hi);
    let mut placed = false;
    memrange::free_ranges(ram, reserved, page, |mut r| {
        if !placed && r.end - r.start >= need {
            // SAFETY: a free RAM range (linear-mapped by build_kernel_map) used only for the
            // descriptors; this runs once on the boot CPU before any allocation.
            unsafe { mm::frame::init(lo, hi, r.start) };
            placed = true;
            r.start += need;
        }
        if placed {
            mm::frame::add(r);
        }
    });
    if !placed {
        panic!("no free range of {need} bytes for the frame descriptors ({total} bytes free)");
    }
    let (used, size) = mmu::pool_usage();
    log::info!(
        "memory: {} MiB free in {} RAM region(s), frame descriptors {} KiB, kernel map {used}/{size} table pages",
        (mm::frame::total() * mmu::PAGE_SIZE) >> 20,
        ram.len(),
        need >> 10
    );
}

/// Lets the EL2 vectors report on the console and end the run the same way EL1 would.
fn hand_over_to_el2_reporter(uart: &dt::ConsoleUart) {
    let (lsr_offset, io_width) = match uart.kind {
        UartKind::Pl011 => (0, 0),
        UartKind::Ns16550 => (
            uart.layout.offset(svelt_abi::boot::uart::Reg16550::Lsr) as u64,
            uart.layout.width as u64,
        ),
    };
    let r = &raw mut el2_report;
    // SAFETY: written once on the boot CPU before anything can take an exception to EL2.
    unsafe {
        (*r).uart_pa = uart.regs.start;
        (*r).exit_semihosting = power::exits_via_semihosting() as u64;
        (*r).lsr_offset = lsr_offset;
        (*r).io_width = io_width;
    }
    // EL2 runs with its MMU off: make the values visible in memory.
    cpu::clean_dcache_to_poc(r as usize, core::mem::size_of::<El2Report>());
}

/// Waits (up to a second of counter time, and more for many CPUs) until every online CPU has
/// taken `n` timer ticks.
/// Returns how many did.
fn wait_for_ticks(n: u64) -> usize {
    let ticked = || {
        percpu::all()
            .iter()
            .filter(|c| c.online.load(Ordering::Acquire) && c.ticks.load(Ordering::Relaxed) >= n)
            .count()
    };
    let deadline = cpu::counter() + cpu::counter_freq() * (1 + percpu::online_count() as u64 / 16);
    while ticked() < percpu::online_count() && cpu::counter() < deadline {
        cpu::wait_for_interrupt();
    }
    ticked()
}

/// The boot report (format fixed: tools parse it).
fn boot_report() {
    let f = cpufeature::features();
    let census = cpufeature::vl_census();
    let (sve, sme) = (census.sve, census.sme);
    println!("svelt: cpus online {}", percpu::online_count());
    println!("{}", SveLine(f.sve.then_some(sve)));
    println!(
        "{}",
        SmeLine {
            vls: (f.sme != 0).then_some(sme),
            fa64: f.sme_fa64,
            sme2: f.sme2()
        }
    );
    if census.differ() {
        println!("{}", VlDifferLine(&census));
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let mut out = console::emergency();
    let _ = writeln!(
        out,
        "\nsvelt: kernel panic on cpu {}: {}",
        percpu::cpu_id(),
        info
    );
    arch::exception::provoke::report_here();
    power::exit_from_fatal(&mut out)
}
