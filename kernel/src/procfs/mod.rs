//! /proc: generated files. A file's text is made when a read needs it, as Linux's seq files
//! make it (`generic::TextFile`); the files of /proc/sys instead format and parse their value
//! on every read and write, as Linux's sysctls do (`sysctl`). The root directory is here; the
//! rest is cut as Linux's fs/proc is: `base` (/proc/PID), `array` (stat, status), `task_mmu`
//! (maps, smaps, statm), `fd`, `mounts`, `system` (meminfo, cpuinfo, uptime...) and `sysctl`.

#![forbid(unsafe_code)]

mod array;
mod base;
mod fd;
mod mounts;
mod sysctl;
mod system;
mod task_mmu;

pub use crate::fs::generic::GenFile;
pub use system::set_kernel_cmdline;

use crate::fs::generic::{Dir, Link, Listing};
use crate::fs::ramfs::RamDir;
use crate::fs::{new_ino, Inode, Kind};
use crate::process;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};

/// The system-wide files in /proc itself, and what makes each one's text.
const FILES: [(&str, crate::fs::generic::Gen); 11] = [
    ("cpuinfo", system::cpuinfo),
    ("meminfo", system::meminfo),
    ("uptime", system::uptime),
    ("loadavg", system::loadavg),
    ("stat", system::kernel_stat),
    ("interrupts", system::interrupts),
    ("vmstat", system::vmstat),
    ("version", system::version),
    ("cmdline", system::kernel_cmdline),
    ("mounts", mounts::mounts),
    ("filesystems", mounts::filesystems),
];

/// /proc itself: the fixed entries, then a directory per process.
pub struct ProcRoot {
    fixed: Arc<RamDir>,
}

impl ProcRoot {
    pub fn new() -> Arc<Dir<ProcRoot>> {
        let fixed = RamDir::new(0o555);
        for (name, gen) in FILES {
            fixed.replace(name, GenFile::system(gen));
        }
        fixed.replace("sys", sysctl::sys_dir());
        let svelt = RamDir::new(0o555);
        svelt.replace(
            "fpstat",
            GenFile::system(|| {
                let host = process::system_fp_counters();
                crate::task::fpstate::format_system_fpstat(&host) + &crate::kvm::fpstat_lines()
            }),
        );
        svelt.replace("meminfo", GenFile::system(system::svelt_meminfo));
        svelt.replace("kvm", GenFile::system(crate::kvm::stats));
        fixed.replace("svelt", svelt);
        fixed.replace(
            "self",
            Arc::new(Link::new(new_ino(), (), |cur, ()| {
                Ok(format!("{}", process::caller_thread(cur).pid()))
            })),
        );
        fixed.replace(
            "thread-self",
            Arc::new(Link::new(new_ino(), (), |cur, ()| {
                let me = process::caller_thread(cur);
                Ok(format!("{}/task/{}", me.pid(), me.tid))
            })),
        );
        Dir::new(new_ino(), 0o555, ProcRoot { fixed })
    }
}

impl Listing for ProcRoot {
    fn lookup(&self, _ino: u64, name: &str) -> SysResult<Arc<dyn Inode>> {
        if let Ok(n) = self.fixed.lookup(name) {
            return Ok(n);
        }
        let id: u32 = name.parse().map_err(|_| Errno::ENOENT)?;
        if name.starts_with('0') || name.starts_with('+') {
            return Err(Errno::ENOENT);
        }
        // A thread's ID names its process's directory too (not listed, as on Linux). A zombie
        // has one until it is reaped.
        let Some(t) = process::find_task(id) else {
            return process::find_pid(id)
                .map(|_| base::PidDir::new(id, None) as Arc<dyn Inode>)
                .ok_or(Errno::ENOENT);
        };
        if t.is_idle() {
            return Err(Errno::ENOENT);
        }
        let pid = t.pid();
        Ok(base::PidDir::new(pid, (id != pid).then_some(id)))
    }
    fn entries(&self, _ino: u64) -> SysResult<Vec<(String, u64, Kind)>> {
        let mut v = self.fixed.entries()?;
        // Every pid until it is reaped (sorted, once each).
        for pid in process::processes()?
            .iter()
            .map(|p| p.pid)
            .filter(|&p| p != 0)
        {
            v.push((format!("{pid}"), base::dir_ino(pid, false), Kind::Dir));
        }
        Ok(v)
    }
}
