//! What is mounted (Linux's fs/proc_namespace.c): /proc/mounts, /proc/PID/mountinfo, and the
//! file system types one can mount (/proc/filesystems).

#![forbid(unsafe_code)]

use super::base::Target;
use crate::fs::generic::Text;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::procfs::{self, MountInfo};

/// The mounts every Svelt system has, before those a program made: (point, type).
const BASE_MOUNTS: [(&str, &str); 5] = [
    ("/", "rootfs"),
    ("/proc", "proc"),
    ("/sys", "sysfs"),
    ("/dev", "devtmpfs"),
    ("/dev/pts", "devpts"),
];

pub(super) fn mountinfo(_t: Target, out: &mut Text) -> SysResult<()> {
    // Mount points by ID (1-based), to find each one's parent: the deepest one containing it.
    let mut points: Vec<String> = Vec::new();
    let parent_of = |points: &[String], path: &str| -> u32 {
        let mut best = (0usize, 1u32);
        for (i, p) in points.iter().enumerate() {
            let inside = p == "/" || path == p || path.starts_with(&format!("{p}/"));
            if inside && p != path && p.len() >= best.0 {
                best = (p.len(), i as u32 + 1);
            }
        }
        best.1
    };
    let (major, minor) = procfs::dev_split(1);
    for (path, fstype) in BASE_MOUNTS {
        let id = points.len() as u32 + 1;
        let _ = MountInfo {
            id,
            parent: if id == 1 { 1 } else { parent_of(&points, path) },
            major,
            minor,
            root: "/",
            mount_point: path,
            mount_opts: "rw,relatime",
            fstype,
            source: fstype,
            super_opts: "rw",
        }
        .write(out);
        points.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        points.push(path.to_string());
    }
    let mut err = Ok(());
    crate::fs::for_each_mount(|path, source, fstype, flags, opts| {
        let id = points.len() as u32 + 1;
        let mut mflags = String::new();
        let _ = svelt_abi::uapi::mount::write_mount_flags(&mut mflags, flags);
        // The superblock's options: rw or ro, then the file system's own.
        let fs_opts = opts.strip_prefix(mflags.as_str()).unwrap_or("");
        let ro = if flags & svelt_abi::uapi::mount::MS_RDONLY != 0 {
            "ro"
        } else {
            "rw"
        };
        let _ = MountInfo {
            id,
            parent: parent_of(&points, path),
            major,
            minor,
            root: "/",
            mount_point: path,
            mount_opts: &mflags,
            fstype,
            source,
            super_opts: &format!("{ro}{fs_opts}"),
        }
        .write(out);
        if points.try_reserve(1).is_err() {
            err = Err(Errno::ENOMEM);
            return;
        }
        points.push(path.to_string());
    });
    err
}

/// /proc/mounts (and /proc/PID/mounts): the base mounts, then the tmpfs and ramfs ones.
pub(super) fn mounts() -> String {
    "rootfs / rootfs rw 0 0\nproc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\ndevtmpfs /dev devtmpfs rw 0 0\ndevpts /dev/pts devpts rw 0 0\n".to_string()
        + &crate::fs::mounts_text()
}

/// /proc/filesystems.
pub(super) fn filesystems() -> String {
    "nodev\tproc\nnodev\tsysfs\nnodev\tdevtmpfs\nnodev\ttmpfs\nnodev\tramfs\nnodev\tdevpts\n"
        .to_string()
}
