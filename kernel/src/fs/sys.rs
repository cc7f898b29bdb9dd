//! /sys: the CPU topology files glibc's sysconf and util-linux's lscpu read.

#![forbid(unsafe_code)]

use super::generic::{write_str, GenFile, TextFile};
use super::ramfs::RamDir;
use super::{Inode, Kind};
use alloc::string::String;
use alloc::sync::Arc;
use svelt_abi::uapi::cpumask::{write_cpu_list, CpuMask};

fn cpu_list(mask: CpuMask) -> String {
    let mut out = String::new();
    let _ = write_cpu_list(&mut out, &mask);
    out.push('\n');
    out
}

/// A CPU mask as Linux's cpumap files print it ("%*pb" over nr_cpu_ids bits): hex digits
/// for `n` bits, in groups of eight separated by commas, the highest CPUs first.
fn cpu_hex(n: usize, has: impl Fn(usize) -> bool) -> String {
    let digits = n.div_ceil(4).max(1);
    let mut out = String::new();
    for d in (0..digits).rev() {
        let nib = (0..4).fold(0u32, |v, b| {
            v | (u32::from(has(d * 4 + b) && d * 4 + b < n) << b)
        });
        out.push(core::char::from_digit(nib, 16).unwrap_or('0'));
        if d % 8 == 0 && d != 0 {
            out.push(',');
        }
    }
    out.push('\n');
    out
}

/// The topology files of CPU `cpu`, as Linux 7.3 shows them on QEMU's virt board: every CPU
/// its own core (core_id its number, no SMT siblings), one cluster (cluster_id 0) and one
/// package (physical_package_id 0) holding all of them.
fn topology(cpu: usize, file: &str) -> String {
    let n = crate::percpu::possible();
    let all = || cpu_list(CpuMask::first(n));
    let own = || {
        let mut m = CpuMask::default();
        m.set(cpu);
        cpu_list(m)
    };
    match file {
        "core_id" => alloc::format!("{cpu}\n"),
        "cluster_id" | "physical_package_id" => String::from("0\n"),
        "thread_siblings" | "core_cpus" => cpu_hex(n, |c| c == cpu),
        "thread_siblings_list" | "core_cpus_list" => own(),
        "core_siblings" | "package_cpus" | "cluster_cpus" => cpu_hex(n, |c| c < n),
        _ => all(),
    }
}

const TOPOLOGY: [&str; 13] = [
    "core_id",
    "cluster_id",
    "physical_package_id",
    "thread_siblings",
    "thread_siblings_list",
    "core_cpus",
    "core_cpus_list",
    "core_siblings",
    "core_siblings_list",
    "cluster_cpus",
    "cluster_cpus_list",
    "package_cpus",
    "package_cpus_list",
];

pub fn sys_root() -> Arc<dyn Inode> {
    let root = RamDir::new(0o555);
    let cpu = RamDir::new(0o755);
    cpu.replace(
        "online",
        GenFile::system(|| cpu_list(crate::percpu::online_mask())),
    );
    for name in ["possible", "present"] {
        cpu.replace(
            name,
            GenFile::system(|| cpu_list(CpuMask::first(crate::percpu::possible()))),
        );
    }
    for n in 0..crate::percpu::possible() {
        let topo = RamDir::new(0o755);
        for (i, name) in TOPOLOGY.iter().enumerate() {
            let file = TextFile::new(super::new_ino(), 0o444, (n, i), |(n, i), out| {
                write_str(out, &topology(n, TOPOLOGY[i]))
            });
            topo.replace(
                name,
                Arc::new(file.writer(|_, _, _| Err(svelt_abi::uapi::errno::Errno::EACCES))),
            );
        }
        let dir = RamDir::new(0o755);
        dir.replace("topology", topo);
        cpu.replace(&alloc::format!("cpu{n}"), dir);
    }
    let system = RamDir::new(0o755);
    system.replace("cpu", cpu);
    let devices = RamDir::new(0o755);
    devices.replace("system", system);
    root.replace("devices", devices);
    root.replace("kernel", kernel_dir());
    for d in ["fs", "class", "bus"] {
        let _ = root.create(d, Kind::Dir, 0o755, 0);
    }
    root
}

/// /sys/kernel/mm/transparent_hugepage, as a Linux built with THP shows it (Linux's KVM
/// selftests read `hpage_pmd_size` and look for the directory before they use madvise's huge
/// page advice): Svelt makes no huge pages, so `enabled` and `defrag` say never.
fn kernel_dir() -> Arc<dyn Inode> {
    let thp = RamDir::new(0o755);
    thp.replace(
        "hpage_pmd_size",
        GenFile::system(|| String::from("2097152\n")),
    );
    thp.replace(
        "enabled",
        GenFile::system(|| String::from("always madvise [never]\n")),
    );
    thp.replace(
        "defrag",
        GenFile::system(|| String::from("always defer defer+madvise madvise [never]\n")),
    );
    let mm = RamDir::new(0o755);
    mm.replace("transparent_hugepage", thp);
    let kernel = RamDir::new(0o755);
    kernel.replace("mm", mm);
    kernel
}
