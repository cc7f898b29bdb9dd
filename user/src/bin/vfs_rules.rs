//! File-system rules checked against Linux: statfs's inode counts (tmpfs counts its live
//! inodes against nr_inodes, half of RAM's pages by default; proc and sysfs report none), the
//! /proc/PID links after chroot (paths relative to the reader's root, or from the global root
//! when outside it), and search permission in a path walk by a non-root caller.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sys::*;
use svelt_user::*;

/// struct statfs on arm64: f_type, f_bsize, f_blocks, f_bfree, f_bavail, f_files, f_ffree, ...
fn statfs(path: &str) -> SysResult<[u64; 15]> {
    let mut buf = [0u64; 15];
    let p = CPath::new(path);
    sys::syscall(nr::STATFS, &[p.ptr(), buf.as_mut_ptr() as usize])?;
    Ok(buf)
}

fn fstatfs(fd: i32) -> SysResult<[u64; 15]> {
    let mut buf = [0u64; 15];
    sys::syscall(nr::FSTATFS, &[fd as usize, buf.as_mut_ptr() as usize])?;
    Ok(buf)
}

/// (f_files, f_ffree).
fn inodes(path: &str) -> SysResult<(u64, u64)> {
    statfs(path).map(|s| (s[5], s[6]))
}

const TMPFS_MAGIC: u64 = 0x0102_1994;
const O_DIRECTORY: u32 = 0o40000;
const O_PATH: u32 = 0o10000000;

fn rm(path: &str) {
    let _ = sys::unlinkat(AT_FDCWD, path, 0);
}

fn rmdir(path: &str) {
    let _ = sys::unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
}

/// tmpfs: f_files is nr_inodes (by default as many as f_blocks, half of RAM's pages), f_ffree
/// what is left after every live inode (the root directory, each file, directory and symlink,
/// each extra hard link, an unlinked file still open) and creating past it is ENOSPC;
/// nr_inodes=0 is no limit (both 0). proc and sysfs report 0 and 0.
fn statfs_inodes() -> TestResult {
    let mnt = format!("/tmp/vfs-statfs-{}", sys::getpid());
    t!(sys::mkdirat(AT_FDCWD, &mnt, 0o755));
    let r = statfs_inodes_in(&mnt);
    let _ = sys::umount2(&mnt, 0);
    rmdir(&mnt);
    r?;
    // Run as the first process on Linux, /sys is not mounted yet.
    const SYSFS_MAGIC: u64 = 0x6265_6572;
    if statfs("/sys").map(|s| s[0]) != Ok(SYSFS_MAGIC) {
        let _ = sys::mount("sysfs", "/sys", "sysfs", 0);
    }
    for p in ["/proc", "/proc/self", "/sys", "/sys/kernel"] {
        let s = t!(statfs(p));
        check_eq!((s[5], s[6]), (0, 0), "{p}");
    }
    // The root and /dev are tmpfs (rootfs and devtmpfs) with the default limit.
    for p in ["/", "/dev", "/tmp"] {
        let s = t!(statfs(p));
        println!(
            "# {p}: f_type {:#x} f_files {} f_ffree {}",
            s[0], s[5], s[6]
        );
        check_eq!(s[0], TMPFS_MAGIC, "{p}");
        check!(s[5] > 0 && s[6] < s[5], "{p}: {s:?}");
    }
    // A file made in /tmp takes one inode, given back at unlink.
    let (_, before) = t!(inodes("/tmp"));
    let f = format!("/tmp/vfs-statfs-f-{}", sys::getpid());
    t!(io::write_file(&f, b"x", 0o644));
    let (_, during) = t!(inodes("/tmp"));
    rm(&f);
    let (_, after) = t!(inodes("/tmp"));
    check_eq!((before - during, after), (1, before));
    Ok(())
}

fn statfs_inodes_in(mnt: &str) -> TestResult {
    // The default: as many inodes as blocks; the root directory is one.
    t!(sys::mount_data("none", mnt, "tmpfs", 0, ""));
    let s = t!(statfs(mnt));
    check_eq!(s[0], TMPFS_MAGIC);
    check!(s[5] > 0);
    check_eq!((s[5], s[6]), (s[2], s[5] - 1));
    t!(sys::umount2(mnt, 0));
    t!(sys::mount_data("none", mnt, "tmpfs", 0, "nr_inodes=0"));
    check_eq!(t!(inodes(mnt)), (0, 0));
    t!(sys::umount2(mnt, 0));
    t!(sys::mount_data(
        "none",
        mnt,
        "tmpfs",
        0,
        "size=1m,nr_inodes=8"
    ));
    check_eq!(t!(inodes(mnt)), (8, 7));
    let p = |n: &str| format!("{mnt}/{n}");
    t!(io::write_file(&p("f"), b"data", 0o644));
    check_eq!(t!(inodes(mnt)), (8, 6));
    t!(sys::mkdirat(AT_FDCWD, &p("d"), 0o755));
    check_eq!(t!(inodes(mnt)), (8, 5));
    t!(sys::symlinkat("f", AT_FDCWD, &p("s")));
    check_eq!(t!(inodes(mnt)), (8, 4));
    // A second name for a file costs an inode too (Linux's shmem_link), given back at unlink.
    t!(sys::linkat(AT_FDCWD, &p("f"), AT_FDCWD, &p("f2"), 0));
    check_eq!(t!(inodes(mnt)), (8, 3));
    // A rename neither takes nor gives one.
    t!(sys::rename(&p("f2"), &p("f3")));
    check_eq!(t!(inodes(mnt)), (8, 3));
    t!(sys::rename(&p("f3"), &p("d/f3")));
    check_eq!(t!(inodes(mnt)), (8, 3));
    rm(&p("d/f3"));
    check_eq!(t!(inodes(mnt)), (8, 4));
    // fstatfs says the same.
    let fd = t!(sys::open(&p("f"), O_RDONLY | O_CLOEXEC));
    let fs = t!(fstatfs(fd));
    check_eq!((fs[0], fs[5], fs[6]), (TMPFS_MAGIC, 8, 4));
    // An unlinked file keeps its inode while it is open.
    rm(&p("f"));
    check_eq!(t!(inodes(mnt)), (8, 4));
    t!(sys::close(fd));
    check_eq!(t!(inodes(mnt)), (8, 5));
    // Fill it: five more, then ENOSPC for files, directories, symlinks and links alike.
    for i in 0..5 {
        t!(io::write_file(&p(&format!("n{i}")), b"", 0o644));
    }
    check_eq!(t!(inodes(mnt)), (8, 0));
    check_eq!(
        sys::openat(AT_FDCWD, &p("x"), O_CREAT | O_WRONLY | O_CLOEXEC, 0o644),
        Err(ENOSPC)
    );
    check_eq!(sys::mkdirat(AT_FDCWD, &p("x"), 0o755), Err(ENOSPC));
    check_eq!(sys::symlinkat("f", AT_FDCWD, &p("x")), Err(ENOSPC));
    check_eq!(
        sys::linkat(AT_FDCWD, &p("n0"), AT_FDCWD, &p("x"), 0),
        Err(ENOSPC)
    );
    check!(sys::stat(&p("x")).is_err());
    for i in 0..5 {
        rm(&p(&format!("n{i}")));
    }
    rm(&p("s"));
    rmdir(&p("d"));
    check_eq!(t!(inodes(mnt)), (8, 7));
    Ok(())
}

fn readlink(dirfd: i32, path: &str) -> String {
    let mut b = [0u8; 512];
    match sys::readlinkat(dirfd, path, &mut b) {
        Ok(n) => String::from_utf8_lossy(&b[..n]).into_owned(),
        Err(e) => format!("error {e:?}"),
    }
}

fn chroot(path: &str) -> SysResult {
    let p = CPath::new(path);
    sys::syscall(nr::CHROOT, &[p.ptr()])
}

/// After chroot, /proc/self/{cwd,root,fd/N,exe} read as paths from the reader's root; a path
/// outside it reads from the global root (Linux's d_path). Another process reading the
/// chrooted one's links sees them from its own root.
fn proc_links_chroot() -> TestResult {
    let dir = format!("/tmp/vfs-chroot-{}", sys::getpid());
    t!(sys::mkdirat(AT_FDCWD, &dir, 0o755));
    t!(sys::mkdirat(AT_FDCWD, &format!("{dir}/sub"), 0o755));
    t!(io::write_file(&format!("{dir}/f"), b"inside", 0o644));
    let exe = readlink(AT_FDCWD, "/proc/self/exe");
    let d = dir.clone();
    let [rd, wr] = t!(sys::pipe2(O_CLOEXEC));
    let [rd2, wr2] = t!(sys::pipe2(O_CLOEXEC));
    let me = sys::getpid();
    let pid = t!(spawn(move || {
        let r = (|| -> TestResult {
            let proc = t!(sys::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            let inside = t!(sys::open(&format!("{d}/f"), O_RDONLY | O_CLOEXEC));
            let outside = t!(sys::open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
            t!(sys::chdir("/tmp"));
            t!(chroot(&d));
            // The cwd is outside the new root: from the global root.
            check_eq!(readlink(proc, "self/cwd"), "/tmp");
            check_eq!(readlink(proc, "self/root"), "/");
            check_eq!(readlink(proc, &format!("self/fd/{inside}")), "/f");
            check_eq!(readlink(proc, &format!("self/fd/{proc}")), "/proc");
            check_eq!(
                readlink(proc, &format!("self/fd/{outside}")),
                format!("/proc/{}/stat", sys::getpid())
            );
            check_eq!(readlink(proc, "self/exe"), exe);
            // The parent's root is the global one: outside, so "/".
            check_eq!(readlink(proc, &format!("{me}/root")), "/");
            check_eq!(readlink(proc, &format!("{me}/cwd")), "/");
            t!(sys::chdir("/sub"));
            check_eq!(readlink(proc, "self/cwd"), "/sub");
            Ok(())
        })();
        if let Err(e) = &r {
            println!("# child: {e}");
        }
        // Let the parent look, then go.
        let _ = sys::write(wr, &[r.is_ok() as u8]);
        let mut b = [0u8];
        let _ = sys::read(rd2, &mut b);
        if r.is_ok() {
            0
        } else {
            1
        }
    }));
    let _ = sys::close(wr);
    let _ = sys::close(rd2);
    let mut b = [0u8];
    let got = sys::read(rd, &mut b);
    let seen = (
        readlink(AT_FDCWD, &format!("/proc/{pid}/root")),
        readlink(AT_FDCWD, &format!("/proc/{pid}/cwd")),
    );
    let _ = sys::write(wr2, &[1]);
    let (_, st) = t!(sys::waitpid(pid, 0));
    let _ = sys::close(rd);
    let _ = sys::close(wr2);
    rm(&format!("{dir}/f"));
    rmdir(&format!("{dir}/sub"));
    rmdir(&dir);
    check_eq!(got, Ok(1));
    check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    check_eq!(seen, (dir.clone(), format!("{dir}/sub")));
    Ok(())
}

/// A non-root caller needs search (x) permission on every directory a path walks through, in
/// the class that applies to it (owner, else group, else other): EACCES before the next name
/// is looked up, so a missing name behind such a directory is EACCES too, while a missing or
/// non-directory component before it is ENOENT or ENOTDIR. chdir and fchdir need x on the
/// directory itself. Root walks anywhere.
fn search_permission() -> TestResult {
    let dir = format!("/tmp/vfs-perm-{}", sys::getpid());
    let p = |n: &str| format!("{dir}/{n}");
    t!(sys::mkdirat(AT_FDCWD, &dir, 0o755));
    t!(sys::fchmodat(AT_FDCWD, &dir, 0o755));
    for (d, mode) in [
        ("nox", 0o700),
        ("gx", 0o710),
        ("ox", 0o701),
        ("own", 0o677),
        ("ok", 0o711),
    ] {
        t!(sys::mkdirat(AT_FDCWD, &p(d), 0o700));
        t!(io::write_file(&p(&format!("{d}/f")), b"#!/bin/sh\n", 0o755));
        t!(sys::mkdirat(AT_FDCWD, &p(&format!("{d}/sub")), 0o755));
        t!(sys::fchmodat(AT_FDCWD, &p(d), mode));
    }
    t!(sys::fchownat(AT_FDCWD, &p("own"), 1000, 0, 0));
    t!(io::write_file(&p("file"), b"", 0o644));
    t!(sys::symlinkat("nox/f", AT_FDCWD, &p("lnk")));
    let nox_fd = t!(sys::open(&p("nox"), O_PATH | O_DIRECTORY | O_CLOEXEC));
    let d = dir.clone();
    let r = in_child_test(move || {
        let p = |n: &str| format!("{d}/{n}");
        // Root is not stopped.
        t!(sys::stat(&p("nox/f")));
        t!(sys::setuid(1000));
        for (path, want) in [
            ("nox", Ok(())),
            ("nox/f", Err(EACCES)),
            ("nox/missing", Err(EACCES)),
            ("nox/missing/x", Err(EACCES)),
            ("nox/.", Err(EACCES)),
            ("nox/..", Err(EACCES)),
            ("nox/sub/..", Err(EACCES)),
            ("missing/f", Err(ENOENT)),
            ("file/x", Err(ENOTDIR)),
            ("file/x/y", Err(ENOTDIR)),
            ("lnk", Err(EACCES)),
            // Group 0 is the caller's: the group bits count, not the other ones.
            ("gx/f", Ok(())),
            ("ox/f", Err(EACCES)),
            // The owner's bits count for the owner, whatever the others have.
            ("own/f", Err(EACCES)),
            ("ok/f", Ok(())),
            ("ok/sub/../f", Ok(())),
            ("ok/missing", Err(ENOENT)),
        ] {
            check_eq!(sys::stat(&p(path)).map(|_| ()), want, "stat {path}");
        }
        check!(sys::fstatat(AT_FDCWD, &p("lnk"), AT_SYMLINK_NOFOLLOW).is_ok());
        check_eq!(sys::open(&p("nox/f"), O_RDONLY | O_CLOEXEC), Err(EACCES));
        check_eq!(
            sys::openat(
                AT_FDCWD,
                &p("nox/new"),
                O_CREAT | O_WRONLY | O_CLOEXEC,
                0o644
            ),
            Err(EACCES)
        );
        check_eq!(sys::mkdirat(AT_FDCWD, &p("nox/new"), 0o755), Err(EACCES));
        check_eq!(sys::unlinkat(AT_FDCWD, &p("nox/f"), 0), Err(EACCES));
        check_eq!(sys::faccessat(AT_FDCWD, &p("nox/f"), 0), Err(EACCES));
        check_eq!(readlink(AT_FDCWD, &p("nox/sub")), "error EACCES");
        check_eq!(sys::chdir(&p("nox")), Err(EACCES));
        check_eq!(sys::chdir(&p("nox/sub")), Err(EACCES));
        check_eq!(sys::chdir(&p("ox")), Err(EACCES));
        check_eq!(sys::execve(&p("nox/f"), &["f"], &[]), EACCES);
        // A walk that starts at a directory without x is stopped there.
        check_eq!(
            sys::openat(nox_fd, "f", O_RDONLY | O_CLOEXEC, 0),
            Err(EACCES)
        );
        check_eq!(
            sys::fstatat(nox_fd, "", AT_EMPTY_PATH).map(|s| s.st_mode & 0o777),
            Ok(0o700)
        );
        check_eq!(
            sys::syscall(nr::FCHDIR, &[nox_fd as usize]).map(|_| ()),
            Err(EACCES)
        );
        t!(sys::chdir(&p("gx")));
        t!(sys::stat("f"));
        t!(sys::chdir(&p("ok/sub")));
        t!(sys::stat("../f"));
        Ok(())
    });
    // A cwd that lost its x: relative walks from it stop, "." included.
    let d = dir.clone();
    let r2 = in_child_test(move || {
        let p = |n: &str| format!("{d}/{n}");
        t!(sys::chdir(&p("nox")));
        t!(sys::setuid(1000));
        check_eq!(sys::stat("f").map(|_| ()), Err(EACCES));
        check_eq!(sys::stat(".").map(|_| ()), Err(EACCES));
        check_eq!(sys::stat("sub/..").map(|_| ()), Err(EACCES));
        // An absolute path does not walk the cwd.
        check!(sys::stat(&p("ok/f")).is_ok());
        Ok(())
    });
    let _ = sys::close(nox_fd);
    for d in ["nox", "gx", "ox", "own", "ok"] {
        rm(&p(&format!("{d}/f")));
        rmdir(&p(&format!("{d}/sub")));
        rmdir(&p(d));
    }
    rm(&p("file"));
    rm(&p("lnk"));
    rmdir(&dir);
    r?;
    r2
}

fn main(_a: &rt::Args) -> i32 {
    svelt_user::proc::mount_when_init();
    ktap::run(&[
        ("statfs_inodes", statfs_inodes),
        ("proc_links_chroot", proc_links_chroot),
        ("search_permission", search_permission),
    ])
}

entry!(main);
