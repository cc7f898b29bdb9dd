//! The system-wide files of /proc (Linux's fs/proc/cpuinfo.c, meminfo.c, uptime.c, loadavg.c,
//! stat.c, interrupts.c, cmdline.c and version.c, and mm/vmstat.c) and Svelt's own meminfo
//! under /proc/svelt.

#![forbid(unsafe_code)]

use crate::process;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::procfs;

pub(super) fn cpuinfo() -> String {
    let features: Vec<&str> = crate::cpufeature::hwcaps().names().collect();
    let midr = crate::cpufeature::midr();
    let freq = crate::arch::cpu::counter_freq();
    let mut s = String::new();
    for c in crate::percpu::all()
        .iter()
        .filter(|c| c.online.load(Ordering::Acquire))
    {
        let _ = write!(
            s,
            "processor\t: {}\nBogoMIPS\t: {}.{:02}\nFeatures\t: {}\nCPU implementer\t: {:#04x}\n\
             CPU architecture: 8\nCPU variant\t: {:#x}\nCPU part\t: {:#05x}\nCPU revision\t: {}\n\n",
            c.id,
            freq * 2 / 1_000_000,
            (freq * 2 / 10_000) % 100,
            features.join(" "),
            (midr >> 24) & 0xff,
            (midr >> 20) & 0xf,
            (midr >> 4) & 0xfff,
            midr & 0xf
        );
    }
    s
}

pub(super) fn meminfo() -> String {
    use crate::mm::frame::{self, ANON_PAGES, CACHE_PAGES, HEAP_LARGE_PAGES, KSTACK_PAGES};
    use crate::mm::frame::{SLAB_PAGES, TABLE_PAGES};
    use core::sync::atomic::Ordering::Relaxed;
    let kb = |pages: usize| (pages * (crate::arch::mmu::PAGE_SIZE / 1024)) as u64;
    let total = kb(frame::total());
    let free = kb(frame::free_count());
    let cached = kb(CACHE_PAGES.load(Relaxed));
    let slab = kb(SLAB_PAGES.load(Relaxed) + HEAP_LARGE_PAGES.load(Relaxed));
    let anon = kb(ANON_PAGES.load(Relaxed));
    let tables = kb(TABLE_PAGES.load(Relaxed));
    let kstack = kb(KSTACK_PAGES.load(Relaxed));
    // File pages live in RAM only (as tmpfs's do): they are shared memory, swap-backed and
    // not reclaimable, so what is available is what is free. No swap, no huge pages.
    let lines: [(&str, u64); 42] = [
        ("MemTotal", total),
        ("MemFree", free),
        ("MemAvailable", free),
        ("Buffers", 0),
        ("Cached", cached),
        ("SwapCached", 0),
        ("Active", anon + cached),
        ("Inactive", 0),
        ("Active(anon)", anon + cached),
        ("Inactive(anon)", 0),
        ("Active(file)", 0),
        ("Inactive(file)", 0),
        ("Unevictable", 0),
        ("Mlocked", 0),
        ("SwapTotal", 0),
        ("SwapFree", 0),
        ("Zswap", 0),
        ("Zswapped", 0),
        ("Dirty", 0),
        ("Writeback", 0),
        ("AnonPages", anon),
        ("Mapped", 0),
        ("Shmem", cached),
        ("KReclaimable", 0),
        ("Slab", slab),
        ("SReclaimable", 0),
        ("SUnreclaim", slab),
        ("KernelStack", kstack),
        ("PageTables", tables),
        ("SecPageTables", 0),
        ("NFS_Unstable", 0),
        ("Bounce", 0),
        ("WritebackTmp", 0),
        ("CommitLimit", total / 2),
        ("Committed_AS", anon + cached),
        ("VmallocTotal", 0),
        ("VmallocUsed", 0),
        ("VmallocChunk", 0),
        ("Percpu", 0),
        ("AnonHugePages", 0),
        ("ShmemHugePages", 0),
        ("ShmemPmdMapped", 0),
    ];
    let mut out = String::new();
    for (name, v) in lines {
        let _ = procfs::write_meminfo_line(&mut out, name, v);
    }
    let _ = procfs::write_meminfo_line(&mut out, "FileHugePages", 0);
    let _ = procfs::write_meminfo_line(&mut out, "FilePmdMapped", 0);
    out.push_str(
        "HugePages_Total:       0\nHugePages_Free:        0\nHugePages_Rsvd:        0\nHugePages_Surp:        0\n",
    );
    let _ = procfs::write_meminfo_line(&mut out, "Hugepagesize", 2048);
    let _ = procfs::write_meminfo_line(&mut out, "Hugetlb", 0);
    out
}

/// Svelt's own memory figures (the kernel heap), apart from Linux's meminfo.
pub(super) fn svelt_meminfo() -> String {
    let used = crate::mm::heap::IN_USE.load(Ordering::Relaxed) / 1024;
    let mut out = String::new();
    let _ = procfs::write_meminfo_line(&mut out, "HeapInUse", used as u64);
    out
}

pub(super) fn uptime() -> String {
    // Idle time is not counted: 0.
    let mut s = String::new();
    let _ = procfs::write_uptime(&mut s, crate::time::now_ns(), 0);
    s
}

/// Threads running or waiting to run (loadavg's and /proc/stat's count).
fn runnable_threads() -> u64 {
    let mut running = 0;
    for p in process::all_processes() {
        running += p
            .live_threads()
            .iter()
            .filter(|t| {
                !t.is_idle()
                    && matches!(
                        t.state(),
                        process::State::Running | process::State::Runnable
                    )
            })
            .count() as u64;
    }
    running
}

pub(super) fn loadavg() -> String {
    // No load average is kept; the task counts are real (runnable/total, last pid).
    let mut s = String::new();
    let _ = procfs::write_loadavg(
        &mut s,
        [0; 3],
        runnable_threads(),
        process::NR_THREADS.load(Ordering::Relaxed) as u64,
        process::last_pid(),
    );
    s
}

/// /proc/stat: Linux's lines. Each CPU's user, system and idle time (USER_HZ ticks) is what
/// the task core measured on it (task/cputime.rs; nice, iowait, irq, softirq, steal and guest
/// time are not told apart: 0); the boot time, context switches, processes created and the
/// runnable count are real.
pub(super) fn kernel_stat() -> String {
    let mut s = String::new();
    let clk = |c: u64| svelt_abi::uapi::procfs::ns_to_clock_t(crate::time::counter_to_ns(c));
    let line = |name: &str, t: [u64; 3]| {
        format!(
            "{name} {} 0 {} {} 0 0 0 0 0 0\n",
            clk(t[0]),
            clk(t[1]),
            clk(t[2])
        )
    };
    let cpus: Vec<(usize, [u64; 3])> = crate::percpu::online_mask()
        .iter()
        .map(|c| {
            let st = crate::task::cputime::cpu_stat(c);
            (
                c,
                [
                    st.user.load(Ordering::Relaxed),
                    st.system.load(Ordering::Relaxed),
                    st.idle.load(Ordering::Relaxed),
                ],
            )
        })
        .collect();
    let mut all = [0u64; 3];
    for (_, t) in &cpus {
        for i in 0..3 {
            all[i] += t[i];
        }
    }
    s.push_str(&line("cpu", all));
    for (c, t) in cpus {
        s.push_str(&line(&format!("cpu{c}"), t));
    }
    let now = crate::time::now_ns();
    let btime = crate::time::realtime_ns().saturating_sub(now) / 1_000_000_000;
    s.push_str(&format!(
        "intr 0\nctxt {}\nbtime {btime}\nprocesses {}\nprocs_running {}\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
        process::sched::switches(),
        process::last_pid(),
        runnable_threads().max(1),
    ));
    s
}

/// /proc/interrupts: the timer, the console's receive interrupt and the reschedule IPI per
/// online CPU (Linux's show_interrupts and arm64's show_ipi_list).
pub(super) fn interrupts() -> String {
    use procfs::{IrqKind, IrqRow};
    let cpus: Vec<usize> = crate::percpu::online_mask().iter().collect();
    let count = |f: fn(&crate::percpu::PerCpu) -> u64| -> Vec<u64> {
        cpus.iter().map(|&c| f(crate::percpu::get(c))).collect()
    };
    let ticks = count(|p| p.ticks.load(Ordering::Relaxed));
    let uart = count(|p| p.uart_irqs.load(Ordering::Relaxed));
    let resched = count(|p| p.resched_ipis.load(Ordering::Relaxed));
    let mut rows = vec![IrqRow {
        kind: IrqKind::Gic {
            intid: crate::irq::timer_intid(),
            level: true,
            name: "arch_timer",
        },
        counts: &ticks,
    }];
    if let Some(intid) = crate::irq::uart_intid() {
        rows.push(IrqRow {
            kind: IrqKind::Gic {
                intid,
                level: true,
                name: "uart",
            },
            counts: &uart,
        });
    }
    rows.push(IrqRow {
        kind: IrqKind::Ipi {
            n: crate::irq::SGI_RESCHEDULE,
            name: "Rescheduling interrupts",
        },
        counts: &resched,
    });
    let mut s = String::new();
    let _ = procfs::write_interrupts(&mut s, &cpus, &rows);
    s
}

/// /proc/vmstat: the counters Svelt keeps, under Linux's names and in pages (Linux's
/// mm/vmstat.c); no swap and no block device, so nothing is paged in or out.
pub(super) fn vmstat() -> String {
    use crate::mm::frame::{self, ANON_PAGES, CACHE_PAGES, HEAP_LARGE_PAGES, KSTACK_PAGES};
    use crate::mm::frame::{SLAB_PAGES, TABLE_PAGES};
    let pages = |c: &core::sync::atomic::AtomicUsize| c.load(Ordering::Relaxed) as u64;
    let kb = (crate::arch::mmu::PAGE_SIZE / 1024) as u64;
    let anon = pages(&ANON_PAGES);
    let cache = pages(&CACHE_PAGES);
    let lines: [(&str, u64); 16] = [
        ("nr_free_pages", frame::free_count() as u64),
        ("nr_inactive_anon", 0),
        ("nr_active_anon", anon + cache),
        ("nr_inactive_file", 0),
        ("nr_active_file", 0),
        ("nr_unevictable", 0),
        ("nr_anon_pages", anon),
        ("nr_file_pages", cache),
        ("nr_shmem", cache),
        // Linux counts kernel stacks in kB here.
        ("nr_kernel_stack", pages(&KSTACK_PAGES) * kb),
        ("nr_page_table_pages", pages(&TABLE_PAGES)),
        (
            "nr_slab_unreclaimable",
            pages(&SLAB_PAGES) + pages(&HEAP_LARGE_PAGES),
        ),
        ("pgpgin", 0),
        ("pgpgout", 0),
        ("pswpin", 0),
        ("pswpout", 0),
    ];
    let mut s = String::new();
    for (name, v) in lines {
        let _ = writeln!(s, "{name} {v}");
    }
    s
}

/// The kernel command line, kept at boot for /proc/cmdline.
static CMDLINE: spin::Once<String> = spin::Once::new();

/// Records the kernel command line (once, after the heap is up).
pub fn set_kernel_cmdline(raw: &str) {
    CMDLINE.call_once(|| raw.to_string());
}

/// /proc/cmdline: the command line the kernel booted with, as Linux prints it.
pub(super) fn kernel_cmdline() -> String {
    format!("{}\n", CMDLINE.get().map_or("", |s| s.as_str()))
}

pub(super) fn version() -> String {
    format!("Linux version {} (svelt) #1 SMP\n", crate::uts::RELEASE)
}
