//! /sys: the CPU topology files glibc's sysconf reads.

#![forbid(unsafe_code)]

use super::generic::GenFile;
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
    let system = RamDir::new(0o755);
    system.replace("cpu", cpu);
    let devices = RamDir::new(0o755);
    devices.replace("system", system);
    root.replace("devices", devices);
    for d in ["kernel", "fs", "class", "bus"] {
        let _ = root.create(d, Kind::Dir, 0o755, 0);
    }
    root
}
