//! Secondary CPUs: started as their device-tree nodes say, with PSCI CPU_ON or by release from
//! a spin table, each with its own stack and per-CPU area.

use crate::arch::boot::{self, SecondaryBoot};
use crate::arch::{cpu, mmu};
use crate::drivers::{gic, psci, timer};
use crate::mm::frame;
use crate::{cpufeature, irq, percpu};
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::boot::smpboot::{EnableMethod, NoMethod};

const STACK_PAGES: usize = 16;

unsafe extern "C" {
    /// head.s: where PSCI starts a secondary CPU (physical address, MMU off, x0 = its record).
    fn secondary_entry();
    /// head.s: where a CPU released from a spin table starts (no argument: it finds its record
    /// by MPIDR).
    fn spin_table_entry();
}

/// Starts every CPU the DTB lists besides this one (up to `percpu::possible()`), all at once,
/// then waits for them together. Returns how many came online.
pub fn start_secondaries(fdt: &fdt::Fdt, image_pa: u64) -> usize {
    let pa_of =
        |f: unsafe extern "C" fn()| (f as *const () as usize - mmu::KIMAGE_VADDR) as u64 + image_pa;
    let boot_mpidr = cpu::mpidr();
    let have_psci = psci::conduit() != psci::Conduit::None;
    let mut next_id = 1;
    // (CPU number, MPIDR, boot record) of each CPU asked to start.
    let mut asked: Vec<(usize, u64, u64)> = Vec::new();
    // The spin-table release addresses to write once every record is in place.
    let mut releases: Vec<u64> = Vec::new();
    let mut skipped = 0;
    let mut without_psci = 0;
    crate::dt::for_each_cpu_method(fdt, have_psci, |mpidr, method| {
        if mpidr == boot_mpidr {
            return;
        }
        let method = match method {
            Ok(m) => m,
            Err(NoMethod::NoPsci) => {
                without_psci += 1;
                return;
            }
            Err(e) => {
                log::error!("cpu {mpidr:#x}: cannot be started ({e:?})");
                return;
            }
        };
        if next_id >= percpu::possible()
            || asked.try_reserve(1).is_err()
            || releases.try_reserve(1).is_err()
        {
            skipped += 1;
            return;
        }
        let (Some(stack), Some(rec)) = (frame::alloc_zeroed(STACK_PAGES), frame::alloc_zeroed(1))
        else {
            log::error!("cpu {mpidr:#x}: no memory for its stack");
            return;
        };
        let lo = mmu::phys_to_virt(stack);
        let hi = lo + STACK_PAGES * mmu::PAGE_SIZE;
        percpu::prepare(next_id, mpidr, (lo, hi));
        let record = SecondaryBoot {
            ttbr1: mmu::root_pa(),
            stack_top: hi as u64,
            arg: next_id as u64,
            vhe: crate::arch::el::vhe() as u64,
        };
        let rec_va = mmu::phys_to_virt(rec);
        // SAFETY: rec is a fresh, linear-mapped frame owned by this function.
        unsafe { (rec_va as *mut SecondaryBoot).write(record) };
        // The secondary reads the record with its MMU and caches off.
        cpu::clean_dcache_to_poc(rec_va, core::mem::size_of::<SecondaryBoot>());
        let started = match method {
            EnableMethod::Psci => {
                let r = psci::cpu_on(mpidr, pa_of(secondary_entry), rec);
                if r != 0 {
                    log::error!("cpu {mpidr:#x}: PSCI CPU_ON failed ({r})");
                }
                r == 0
            }
            EnableMethod::SpinTable { release_addr } => {
                // SAFETY: this CPU is the only one that writes the table, and no CPU is
                // released from a spin table before the loop ends.
                let added = unsafe { boot::spin_table_add(mpidr, rec) };
                if added {
                    releases.push(release_addr);
                } else {
                    log::error!("cpu {mpidr:#x}: listed twice");
                }
                added
            }
        };
        if !started {
            frame::free(stack, STACK_PAGES);
            frame::free(rec, 1);
            return;
        }
        asked.push((next_id, mpidr, rec));
        next_id += 1;
    });
    if without_psci != 0 {
        log::warn!("no PSCI in the device tree: the other {without_psci} CPUs stay off");
    }
    if skipped != 0 {
        log::warn!(
            "{skipped} CPUs beyond the first {} not started",
            percpu::possible()
        );
    }
    if !releases.is_empty() {
        boot::spin_table_publish();
        let entry = pa_of(spin_table_entry);
        let (ram, n) = crate::dt::ram::<16>(fdt);
        for &addr in &releases {
            if let Err(e) = release(&ram[..n], addr, entry) {
                log::error!("spin table at {addr:#x}: cannot be written ({e:?})");
            }
        }
        // Wakes the CPUs waiting in `wfe` on their release addresses.
        cpu::send_event();
    }
    // A second of counter time, and more for many CPUs: an emulator runs them on few host
    // threads.
    let online = |id: usize| percpu::get(id).online.load(Ordering::Acquire);
    let wait = cpu::counter_freq() * (1 + asked.len() as u64 / 16);
    let deadline = cpu::counter() + wait;
    while asked.iter().any(|&(id, ..)| !online(id)) && cpu::counter() < deadline {
        // The tick wakes this CPU; until then its host thread is free for the others.
        if gic::get().is_some() {
            cpu::wait_for_interrupt();
        } else {
            core::hint::spin_loop();
        }
    }
    let mut started = 0;
    for &(id, mpidr, rec) in &asked {
        if online(id) {
            started += 1;
            // The record page is only read during bring-up.
            frame::free(rec, 1);
        } else {
            // Its stack and record stay reserved: the CPU may still come up and use them.
            log::error!("cpu {mpidr:#x}: did not come online in time");
        }
    }
    started
}

/// Writes `entry` to a spin table's release address (little-endian, as the waiting firmware
/// reads it) and cleans it to the point of coherency, where a CPU with its caches off sees it.
/// The address is usually in `ram`, reserved by the firmware (through the linear map);
/// otherwise it is mapped for the write.
fn release(
    ram: &[svelt_abi::boot::memrange::Range],
    addr: u64,
    entry: u64,
) -> Result<(), mmu::MapError> {
    let in_ram = ram
        .iter()
        .any(|r| r.start <= addr && addr.checked_add(8).is_some_and(|end| end <= r.end));
    let va = if in_ram {
        mmu::phys_to_virt(addr)
    } else {
        mmu::ioremap(addr, 8)?
    };
    // SAFETY: va maps the 8-byte aligned release address (enable_method checked the
    // alignment), read-write; only the waiting CPU reads it.
    unsafe { core::ptr::write_volatile(va as *mut u64, entry.to_le()) };
    cpu::clean_dcache_to_poc(va, 8);
    Ok(())
}

/// Rust entry of a secondary CPU (from head.s, MMU on, on its own stack).
#[unsafe(no_mangle)]
pub extern "C" fn secondary_main(id: u64, _entry_el: u64) -> ! {
    percpu::enter(id as usize);
    mmu::activate();
    cpufeature::init_this_cpu();
    crate::task::fpstate::cpu_init();
    bring_up_interrupts();
    crate::process::init_cpu();
    log::debug!("online, mpidr {:#x}", cpu::mpidr());
    percpu::this().online.store(true, Ordering::Release);
    crate::task::sched::idle_loop()
}

/// This CPU's GIC interface and tick; IRQs unmasked.
pub fn bring_up_interrupts() {
    if let Some(g) = gic::get() {
        if let Err(e) = g.init_cpu(irq::timer_intid()) {
            log::error!("gic: {e}");
            return;
        }
        timer::arm_next_tick();
        cpu::enable_el0_counter();
        cpu::irq_enable();
    }
}
