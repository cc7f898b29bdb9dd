//! /sys: the CPU topology files glibc's sysconf reads.

use super::proc::GenFile;
use super::ramfs::RamDir;
use super::{Inode, Kind};
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

fn cpu_list(pred: fn(usize) -> bool) -> String {
    let ids: alloc::vec::Vec<usize> = (0..crate::percpu::MAX_CPUS).filter(|&c| pred(c)).collect();
    // Ranges, as Linux prints them: "0-3", "0,2-3".
    let mut out = String::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        out += &if i == j {
            format!("{}", ids[i])
        } else {
            format!("{}-{}", ids[i], ids[j])
        };
        i = j + 1;
    }
    out.push('\n');
    out
}

fn online(c: usize) -> bool {
    crate::percpu::get(c).online.load(Ordering::Acquire)
}

pub fn sys_root() -> Arc<dyn Inode> {
    let root = RamDir::new(0o555);
    let cpu = RamDir::new(0o755);
    cpu.replace("online", GenFile::new(|_| cpu_list(online)));
    cpu.replace("possible", GenFile::new(|_| cpu_list(online)));
    cpu.replace("present", GenFile::new(|_| cpu_list(online)));
    let system = RamDir::new(0o755);
    system.replace("cpu", cpu);
    let devices = RamDir::new(0o755);
    devices.replace("system", system);
    root.replace("devices", devices);
    for d in ["kernel", "fs", "class", "bus"] {
        let _ = root.create(d, Kind::Dir, 0o755);
    }
    root
}
