//! Files on the initramfs and tmpfs: openat/read/write/close/lseek/pread64/pwrite64/readv/writev,
//! newfstatat/fstat, getdents64, readlinkat(/proc/self/exe), faccessat, chdir/getcwd, mkdirat,
//! unlinkat, /dev/null and /dev/console; chmod/chown/utimensat as stat reports them, rename and
//! renameat2, linkat, fadvise64.
#![no_std]
#![no_main]

use svelt_user::ktap::{skip, TestResult};
use svelt_user::sys::*;
use svelt_user::*;

const HELLO: &[u8] = b"Hello from the Svelt initramfs.\nline two\nline three\n";

fn read_initramfs_file() -> TestResult {
    let fd = t!(sys::open("/etc/hello.txt", O_RDONLY));
    check!(fd >= 3, "fd {fd}");
    let mut buf = [0u8; 128];
    let n = t!(sys::read(fd, &mut buf));
    check_eq!(&buf[..n], HELLO);
    check_eq!(sys::read(fd, &mut buf), Ok(0), "EOF");
    check_eq!(sys::lseek(fd, 6, SEEK_SET), Ok(6));
    check_eq!(sys::read(fd, &mut buf[..4]), Ok(4));
    check_eq!(&buf[..4], b"from");
    check_eq!(sys::lseek(fd, -4, SEEK_CUR), Ok(6));
    check_eq!(sys::lseek(fd, -11, SEEK_END), Ok(HELLO.len() - 11));
    check_eq!(sys::read(fd, &mut buf), Ok(11));
    check_eq!(&buf[..11], b"line three\n");
    check_eq!(sys::lseek(fd, -1, SEEK_SET), Err(EINVAL));
    check_eq!(sys::lseek(fd, 0, 7), Err(EINVAL));
    // pread does not move the offset.
    t!(sys::lseek(fd, 2, SEEK_SET));
    check_eq!(sys::pread(fd, &mut buf[..8], 32), Ok(8));
    check_eq!(&buf[..8], b"line two");
    check_eq!(sys::lseek(fd, 0, SEEK_CUR), Ok(2));
    check_eq!(sys::pread(fd, &mut buf, 1000), Ok(0), "pread past the end");
    // readv fills the buffers in order.
    t!(sys::lseek(fd, 0, SEEK_SET));
    let mut a = [0u8; 5];
    let mut b = [0u8; 6];
    let iov = [
        Iovec {
            base: a.as_mut_ptr() as usize,
            len: a.len(),
        },
        Iovec {
            base: b.as_mut_ptr() as usize,
            len: b.len(),
        },
    ];
    check_eq!(sys::readv(fd, &iov), Ok(11));
    check_eq!((&a, &b), (b"Hello", b" from "));
    check_eq!(sys::write(fd, b"x"), Err(EBADF), "write to a read-only fd");
    t!(sys::close(fd));
    check_eq!(sys::close(fd), Err(EBADF));
    check_eq!(sys::read(fd, &mut buf), Err(EBADF));
    Ok(())
}

fn open_errors() -> TestResult {
    check_eq!(sys::open("/etc/nope", O_RDONLY), Err(ENOENT));
    check_eq!(sys::open("/etc/hello.txt/x", O_RDONLY), Err(ENOTDIR));
    check_eq!(sys::open("/bin/tests", O_WRONLY), Err(EISDIR));
    check_eq!(
        sys::open("/etc/hello.txt", O_RDONLY | O_DIRECTORY),
        Err(ENOTDIR)
    );
    check_eq!(sys::open("", O_RDONLY), Err(ENOENT));
    check_eq!(
        sys::openat(99, "x", O_RDONLY, 0),
        Err(EBADF),
        "relative to a bad dirfd"
    );
    Ok(())
}

fn write_in_tmp() -> TestResult {
    let path = "/tmp/files-test";
    let _ = sys::unlinkat(AT_FDCWD, path, 0);
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_RDWR | O_CREAT | O_EXCL,
        0o640
    ));
    check_eq!(
        sys::openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL, 0o640),
        Err(EEXIST)
    );
    let iov = [
        Iovec {
            base: b"abc".as_ptr() as usize,
            len: 3,
        },
        Iovec {
            base: b"".as_ptr() as usize,
            len: 0,
        },
        Iovec {
            base: b"defgh".as_ptr() as usize,
            len: 5,
        },
    ];
    check_eq!(sys::writev(fd, &iov), Ok(8));
    check_eq!(sys::pwrite(fd, b"XY", 2), Ok(2));
    check_eq!(
        sys::lseek(fd, 0, SEEK_CUR),
        Ok(8),
        "pwrite keeps the offset"
    );
    let st = t!(sys::fstat(fd));
    check_eq!(st.st_size, 8);
    check_eq!(st.st_mode, S_IFREG | 0o640);
    let mut buf = [0u8; 16];
    check_eq!(sys::pread(fd, &mut buf, 0), Ok(8));
    check_eq!(&buf[..8], b"abXYefgh");
    // Writing past the end leaves a zero-filled hole.
    check_eq!(sys::pwrite(fd, b"Z", 12), Ok(1));
    check_eq!(sys::pread(fd, &mut buf, 0), Ok(13));
    check_eq!(&buf[..13], b"abXYefgh\0\0\0\0Z");
    t!(sys::close(fd));
    // O_TRUNC and O_APPEND.
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_WRONLY | O_TRUNC | O_APPEND,
        0
    ));
    check_eq!(t!(sys::fstat(fd)).st_size, 0);
    t!(sys::write(fd, b"12"));
    t!(sys::lseek(fd, 0, SEEK_SET));
    t!(sys::write(fd, b"34"));
    t!(sys::close(fd));
    let fd = t!(sys::open(path, O_RDONLY));
    check_eq!(sys::read(fd, &mut buf), Ok(4));
    check_eq!(&buf[..4], b"1234");
    t!(sys::close(fd));
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    check_eq!(sys::stat(path).map(|_| ()), Err(ENOENT));
    check_eq!(sys::unlinkat(AT_FDCWD, path, 0), Err(ENOENT));
    Ok(())
}

fn stat_types() -> TestResult {
    let st = t!(sys::stat("/etc/hello.txt"));
    check_eq!(st.st_mode & S_IFMT, S_IFREG);
    check_eq!(st.st_size, HELLO.len() as i64);
    check_eq!(st.st_mode & 0o777, 0o644);
    check_eq!(st.st_nlink, 1);
    check_eq!((st.st_uid, st.st_gid), (0, 0));
    let st = t!(sys::stat("/bin/tests"));
    check_eq!(st.st_mode & S_IFMT, S_IFDIR);
    let st = t!(sys::stat("/bin/tests/files"));
    check_eq!(st.st_mode & 0o777, 0o755);
    let st = t!(sys::stat("/dev/null"));
    check_eq!(st.st_mode & S_IFMT, S_IFCHR);
    check_eq!(st.st_rdev, (1 << 8) | 3, "st_rdev of /dev/null");
    let st = t!(sys::stat("/dev/console"));
    check_eq!(st.st_rdev, (5 << 8) | 1, "st_rdev of /dev/console");
    // fstat agrees with stat; AT_EMPTY_PATH stats the fd itself.
    let fd = t!(sys::open("/etc/hello.txt", O_RDONLY));
    let a = t!(sys::fstat(fd));
    let b = t!(sys::fstatat(fd, "", AT_EMPTY_PATH));
    let c = t!(sys::stat("/etc/hello.txt"));
    check_eq!(
        (a.st_ino, a.st_dev, a.st_size),
        (c.st_ino, c.st_dev, c.st_size)
    );
    check_eq!((b.st_ino, b.st_mode), (c.st_ino, c.st_mode));
    // Relative to a directory fd.
    let dir = t!(sys::open("/etc", O_RDONLY | O_DIRECTORY));
    let d = t!(sys::fstatat(dir, "hello.txt", 0));
    check_eq!(d.st_ino, c.st_ino);
    t!(sys::close(dir));
    t!(sys::close(fd));
    check_eq!(sys::stat("/nope").map(|_| ()), Err(ENOENT));
    check_eq!(sys::fstat(99).map(|_| ()), Err(EBADF));
    Ok(())
}

fn getdents64_lists_directory() -> TestResult {
    let fd = t!(sys::open("/bin/tests", O_RDONLY | O_DIRECTORY));
    let mut names = Vec::new();
    let mut buf = [0u8; 512]; // small: several calls
    loop {
        let n = t!(sys::getdents64(fd, &mut buf));
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off < n {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            check!(
                reclen >= 20 && reclen.is_multiple_of(8),
                "d_reclen {reclen}"
            );
            let dtype = buf[off + 18];
            let name = String::from(sys::field_str(&buf[off + 19..off + reclen]));
            if name == "files" {
                check_eq!(dtype, 8, "DT_REG");
            }
            if name == "." || name == ".." {
                check_eq!(dtype, 4, "DT_DIR");
            }
            names.push(name);
            off += reclen;
        }
    }
    for want in [".", "..", "files", "elf_stack", "process"] {
        check!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    let mut tiny = [0u8; 8];
    t!(sys::lseek(fd, 0, SEEK_SET));
    check_eq!(
        sys::getdents64(fd, &mut tiny),
        Err(EINVAL),
        "buffer too small"
    );
    t!(sys::close(fd));
    let f = t!(sys::open("/etc/hello.txt", O_RDONLY));
    check_eq!(sys::getdents64(f, &mut buf), Err(ENOTDIR));
    t!(sys::close(f));
    Ok(())
}

fn readlink_proc_self_exe() -> TestResult {
    if sys::stat("/proc/self").is_err() {
        return skip("/proc is not mounted");
    }
    let mut buf = [0u8; 256];
    let n = t!(sys::readlinkat(AT_FDCWD, "/proc/self/exe", &mut buf));
    check_eq!(
        core::str::from_utf8(&buf[..n]).unwrap_or("?"),
        "/bin/tests/files"
    );
    // Truncated to the buffer, not NUL-terminated.
    check_eq!(
        sys::readlinkat(AT_FDCWD, "/proc/self/exe", &mut buf[..4]),
        Ok(4)
    );
    check_eq!(
        sys::readlinkat(AT_FDCWD, "/etc/hello.txt", &mut buf),
        Err(EINVAL),
        "not a link"
    );
    Ok(())
}

fn faccessat() -> TestResult {
    check_eq!(
        sys::faccessat(AT_FDCWD, "/etc/hello.txt", R_OK | W_OK),
        Ok(0)
    );
    check_eq!(sys::faccessat(AT_FDCWD, "/etc/hello.txt", F_OK), Ok(0));
    // Root may execute only files with some execute bit.
    check_eq!(
        sys::faccessat(AT_FDCWD, "/etc/hello.txt", X_OK),
        Err(EACCES)
    );
    check_eq!(sys::faccessat(AT_FDCWD, "/bin/tests/files", X_OK), Ok(0));
    check_eq!(sys::faccessat(AT_FDCWD, "/etc/nope", F_OK), Err(ENOENT));
    check_eq!(sys::faccessat(AT_FDCWD, "/etc/hello.txt", 8), Err(EINVAL));
    Ok(())
}

fn chdir_getcwd() -> TestResult {
    let mut buf = [0u8; 64];
    let n = t!(sys::getcwd(&mut buf));
    let orig = String::from(sys::field_str(&buf[..n]));
    check_eq!(n, orig.len() + 1, "getcwd returns the length with the NUL");
    t!(sys::chdir("/tmp"));
    let n = t!(sys::getcwd(&mut buf));
    check_eq!(&buf[..n], b"/tmp\0");
    check_eq!(sys::getcwd(&mut buf[..3]), Err(ERANGE));
    // Relative paths resolve against the new directory.
    let fd = t!(sys::openat(
        AT_FDCWD,
        "files-cwd",
        O_WRONLY | O_CREAT | O_TRUNC,
        0o600
    ));
    t!(sys::close(fd));
    t!(sys::stat("/tmp/files-cwd"));
    t!(sys::unlinkat(AT_FDCWD, "files-cwd", 0));
    t!(sys::chdir(".."));
    let n = t!(sys::getcwd(&mut buf));
    check_eq!(&buf[..n], b"/\0");
    check_eq!(sys::chdir("/etc/hello.txt"), Err(ENOTDIR));
    check_eq!(sys::chdir("/nope"), Err(ENOENT));
    t!(sys::chdir(&orig));
    Ok(())
}

fn mkdirat_and_unlinkat() -> TestResult {
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/files-dir/f", 0);
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/files-dir", AT_REMOVEDIR);
    t!(sys::mkdirat(AT_FDCWD, "/tmp/files-dir", 0o750));
    check_eq!(sys::mkdirat(AT_FDCWD, "/tmp/files-dir", 0o750), Err(EEXIST));
    check_eq!(sys::mkdirat(AT_FDCWD, "/tmp/nope/sub", 0o750), Err(ENOENT));
    let st = t!(sys::stat("/tmp/files-dir"));
    check_eq!(st.st_mode & S_IFMT, S_IFDIR);
    let dir = t!(sys::open("/tmp/files-dir", O_RDONLY | O_DIRECTORY));
    let fd = t!(sys::openat(dir, "f", O_WRONLY | O_CREAT, 0o600));
    t!(sys::close(fd));
    t!(sys::stat("/tmp/files-dir/f"));
    check_eq!(
        sys::unlinkat(AT_FDCWD, "/tmp/files-dir", AT_REMOVEDIR),
        Err(ENOTEMPTY)
    );
    check_eq!(sys::unlinkat(AT_FDCWD, "/tmp/files-dir", 0), Err(EISDIR));
    t!(sys::unlinkat(dir, "f", 0));
    t!(sys::close(dir));
    t!(sys::unlinkat(AT_FDCWD, "/tmp/files-dir", AT_REMOVEDIR));
    Ok(())
}

fn dev_null_and_console() -> TestResult {
    let fd = t!(sys::open("/dev/null", O_RDWR));
    check_eq!(sys::write(fd, b"discarded"), Ok(9));
    let mut buf = [0u8; 8];
    check_eq!(sys::read(fd, &mut buf), Ok(0));
    t!(sys::close(fd));
    let fd = t!(sys::open("/dev/console", O_RDWR | O_NOCTTY));
    check_eq!(sys::write(fd, b""), Ok(0));
    check_eq!(sys::write(fd, b"files: /dev/console write\n"), Ok(26));
    t!(sys::close(fd));
    Ok(())
}

/// Holes read as zeros; truncating down and up again leaves zeros past the cut, also inside
/// the page it falls in; huge sparse sizes are fine, up to MAX_LFS_FILESIZE.
fn holes_and_truncate() -> TestResult {
    let path = "/tmp/files-holes";
    let _ = sys::unlinkat(AT_FDCWD, path, 0);
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_RDWR | O_CREAT | O_CLOEXEC,
        0o600
    ));
    let ftruncate = |len: usize| sys::syscall(nr::FTRUNCATE, &[fd as usize, len]);
    check_eq!(sys::pwrite(fd, b"tail", 3 * 4096 + 10), Ok(4));
    check_eq!(t!(sys::fstat(fd)).st_size, 3 * 4096 + 14);
    let mut buf = [1u8; 64];
    check_eq!(sys::pread(fd, &mut buf, 4096 + 5), Ok(64));
    check!(buf.iter().all(|&b| b == 0), "a hole reads as zeros");
    let data = [0xabu8; 6000];
    check_eq!(sys::pwrite(fd, &data, 0), Ok(6000));
    t!(ftruncate(5000));
    t!(ftruncate(9000));
    check_eq!(t!(sys::fstat(fd)).st_size, 9000);
    let mut back = [0u8; 9000];
    check_eq!(sys::pread(fd, &mut back, 0), Ok(9000));
    check!(
        back[..5000].iter().all(|&b| b == 0xab),
        "kept below the cut"
    );
    check!(back[5000..].iter().all(|&b| b == 0), "zeros past the cut");
    t!(ftruncate(1 << 40));
    check_eq!(sys::pread(fd, &mut buf[..8], (1 << 40) - 8), Ok(8));
    check_eq!(&buf[..8], &[0; 8]);
    check_eq!(ftruncate(usize::MAX >> 1), Ok(0), "MAX_LFS_FILESIZE itself");
    check_eq!(ftruncate(usize::MAX), Err(EINVAL), "a negative length");
    t!(sys::close(fd));
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

// ---- attributes, rename, link, fadvise ----

/// Creates (or truncates) `path` holding `data`, mode `mode`.
fn make_file(path: &str, data: &[u8], mode: u32) -> TestResult {
    t!(io::write_file(path, data, mode));
    Ok(())
}

fn read_all(path: &str) -> Result<Vec<u8>, String> {
    io::read_file(path).map_err(|e| format!("read {path}: {e:?}"))
}

fn lstat(path: &str) -> SysResult<Stat> {
    sys::fstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)
}

/// Removes a tree of plain files, links and directories (best effort: a leftover from a failed
/// earlier run must not fail the next test).
fn remove_tree(path: &str) {
    if let Ok(st) = lstat(path) {
        if st.st_mode & S_IFMT == S_IFDIR {
            let Ok(fd) = sys::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) else {
                return;
            };
            let mut names = Vec::new();
            let mut buf = [0u8; 1024];
            while let Ok(n) = sys::getdents64(fd, &mut buf) {
                if n == 0 {
                    break;
                }
                let mut off = 0;
                while off < n {
                    let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                    let name = sys::field_str(&buf[off + 19..off + reclen]);
                    if name != "." && name != ".." {
                        names.push(format!("{path}/{name}"));
                    }
                    off += reclen;
                }
            }
            let _ = sys::close(fd);
            for n in names {
                remove_tree(&n);
            }
            let _ = sys::unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
        } else {
            let _ = sys::unlinkat(AT_FDCWD, path, 0);
        }
    }
}

/// A fresh, empty directory for one test.
fn fresh_dir(path: &str) -> TestResult {
    remove_tree(path);
    t!(sys::mkdirat(AT_FDCWD, path, 0o755));
    Ok(())
}

fn ts(sec: i64, nsec: i64) -> Timespec {
    Timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

/// Sleeps past the file system's timestamp granularity (Linux's coarse clock ticks at HZ).
fn tick() {
    sys::sleep_ns(30_000_000);
}

fn realtime() -> Timespec {
    sys::clock_gettime(CLOCK_REALTIME).unwrap_or_default()
}

/// (sec, nsec) pairs order as times do.
fn at_least(sec: i64, nsec: u64, than: Timespec) -> bool {
    (sec, nsec as i64) >= (than.tv_sec, than.tv_nsec)
}

fn chmod_chown_stat() -> TestResult {
    let dir = "/tmp/files-attr";
    t!(fresh_dir(dir));
    let path = "/tmp/files-attr/f";
    t!(make_file(path, b"data", 0o600));
    check_eq!(t!(sys::stat(path)).st_mode, S_IFREG | 0o600);
    let before = t!(sys::stat(path));
    tick();
    t!(sys::fchmodat(AT_FDCWD, path, 0o751));
    let st = t!(sys::stat(path));
    check_eq!(st.st_mode, S_IFREG | 0o751);
    check!(
        (st.st_ctime, st.st_ctime_nsec) > (before.st_ctime, before.st_ctime_nsec),
        "chmod moves ctime: {} {} -> {} {}",
        before.st_ctime,
        before.st_ctime_nsec,
        st.st_ctime,
        st.st_ctime_nsec
    );
    check_eq!(
        (st.st_mtime, st.st_mtime_nsec),
        (before.st_mtime, before.st_mtime_nsec),
        "chmod keeps mtime"
    );
    // The file type bits in the mode are ignored; the fd form works on an O_RDONLY fd.
    let fd = t!(sys::open(path, O_RDONLY | O_CLOEXEC));
    t!(sys::syscall(
        nr::FCHMOD,
        &[fd as usize, (S_IFDIR | 0o640) as usize]
    ));
    check_eq!(t!(sys::fstat(fd)).st_mode, S_IFREG | 0o640);
    // Owner and group; -1 leaves one alone.
    t!(sys::syscall(nr::FCHOWN, &[fd as usize, 1000, 2000]));
    let st = t!(sys::fstat(fd));
    check_eq!((st.st_uid, st.st_gid), (1000, 2000));
    t!(sys::fchownat(AT_FDCWD, path, u32::MAX, 3000, 0));
    check_eq!(t!(sys::stat(path)).st_uid, 1000);
    check_eq!(t!(sys::stat(path)).st_gid, 3000);
    t!(sys::fchownat(AT_FDCWD, path, 0, u32::MAX, 0));
    check_eq!(
        (t!(sys::stat(path)).st_uid, t!(sys::stat(path)).st_gid),
        (0, 3000)
    );
    // chown drops set-user-ID, and set-group-ID with group execute, even for root and even
    // when nothing changes.
    t!(sys::fchmodat(AT_FDCWD, path, 0o6755));
    check_eq!(t!(sys::stat(path)).st_mode, S_IFREG | 0o6755);
    t!(sys::fchownat(AT_FDCWD, path, u32::MAX, u32::MAX, 0));
    check_eq!(
        t!(sys::stat(path)).st_mode,
        S_IFREG | 0o755,
        "chown clears S_ISUID/S_ISGID"
    );
    // AT_EMPTY_PATH: the fd itself.
    t!(sys::syscall(
        nr::FCHOWNAT,
        &[
            fd as usize,
            c"".as_ptr() as usize,
            7,
            8,
            AT_EMPTY_PATH as usize
        ]
    ));
    check_eq!(
        (t!(sys::fstat(fd)).st_uid, t!(sys::fstat(fd)).st_gid),
        (7, 8)
    );
    check_eq!(
        sys::fchownat(fd, "", 7, 8, 0),
        Err(ENOENT),
        "\"\" without AT_EMPTY_PATH"
    );
    check_eq!(
        sys::fchownat(AT_FDCWD, path, 0, 0, 0x8000),
        Err(EINVAL),
        "bad flags"
    );
    // A symlink: lchown changes the link, chown its target.
    let link = "/tmp/files-attr/l";
    t!(sys::symlinkat("f", AT_FDCWD, link));
    t!(sys::fchownat(AT_FDCWD, link, 11, 12, AT_SYMLINK_NOFOLLOW));
    let (l, f) = (t!(lstat(link)), t!(sys::stat(link)));
    check_eq!((l.st_mode & S_IFMT, l.st_uid, l.st_gid), (S_IFLNK, 11, 12));
    check_eq!((f.st_uid, f.st_gid), (7, 8));
    t!(sys::fchownat(AT_FDCWD, link, 0, 0, 0));
    check_eq!(
        (t!(sys::stat(path)).st_uid, t!(lstat(link)).st_uid),
        (0, 11)
    );
    // chmod follows the link; fchmodat2 with AT_SYMLINK_NOFOLLOW cannot change a link's mode.
    t!(sys::fchmodat(AT_FDCWD, link, 0o604));
    check_eq!(t!(sys::stat(path)).st_mode, S_IFREG | 0o604);
    let chmod2 = |p: &str, mode: u32, flags: u32| {
        let c = CPath::new(p);
        sys::syscall(
            nr::FCHMODAT2,
            &[AT_FDCWD as usize, c.ptr(), mode as usize, flags as usize],
        )
    };
    check_eq!(chmod2(link, 0o600, AT_SYMLINK_NOFOLLOW), Err(EOPNOTSUPP));
    check_eq!(t!(lstat(link)).st_mode, S_IFLNK | 0o777);
    check_eq!(
        chmod2(path, 0o640, AT_SYMLINK_NOFOLLOW),
        Ok(0),
        "not a link"
    );
    check_eq!(t!(sys::stat(path)).st_mode, S_IFREG | 0o640);
    check_eq!(chmod2(path, 0o640, 0x8000), Err(EINVAL), "bad flags");
    check_eq!(
        sys::fchmodat(AT_FDCWD, "/tmp/files-attr/none", 0o600),
        Err(ENOENT)
    );
    check_eq!(sys::syscall(nr::FCHMOD, &[99, 0o600]), Err(EBADF));
    t!(sys::close(fd));
    remove_tree(dir);
    Ok(())
}

fn utimensat_times() -> TestResult {
    let dir = "/tmp/files-utime";
    t!(fresh_dir(dir));
    let path = "/tmp/files-utime/f";
    t!(make_file(path, b"x", 0o644));
    // Explicit times, to the nanosecond; ctime becomes now.
    let t0 = realtime();
    t!(sys::utimensat(
        AT_FDCWD,
        Some(path),
        Some(&[ts(1000, 5), ts(2000, 999_999_999)]),
        0
    ));
    let st = t!(sys::stat(path));
    check_eq!((st.st_atime, st.st_atime_nsec), (1000, 5));
    check_eq!((st.st_mtime, st.st_mtime_nsec), (2000, 999_999_999));
    check!(
        st.st_ctime >= t0.tv_sec,
        "ctime {} before {}",
        st.st_ctime,
        t0.tv_sec
    );
    // UTIME_OMIT keeps one; UTIME_NOW sets one to now.
    t!(sys::utimensat(
        AT_FDCWD,
        Some(path),
        Some(&[ts(0, UTIME_OMIT), ts(3000, 0)]),
        0
    ));
    let st = t!(sys::stat(path));
    check_eq!((st.st_atime, st.st_atime_nsec), (1000, 5), "atime omitted");
    check_eq!((st.st_mtime, st.st_mtime_nsec), (3000, 0));
    let t1 = realtime();
    t!(sys::utimensat(
        AT_FDCWD,
        Some(path),
        Some(&[ts(77, UTIME_NOW), ts(0, UTIME_OMIT)]),
        0
    ));
    let st = t!(sys::stat(path));
    check!(
        st.st_atime >= t1.tv_sec && st.st_atime <= t1.tv_sec + 5,
        "UTIME_NOW atime {} at {}",
        st.st_atime,
        t1.tv_sec
    );
    check_eq!(st.st_mtime, 3000, "mtime omitted");
    // No times: both now.
    t!(sys::utimensat(AT_FDCWD, Some(path), None, 0));
    let st = t!(sys::stat(path));
    check!(
        st.st_mtime >= t1.tv_sec && st.st_mtime <= t1.tv_sec + 5,
        "mtime {}",
        st.st_mtime
    );
    // Before 1970.
    t!(sys::utimensat(
        AT_FDCWD,
        Some(path),
        Some(&[ts(5, 0), ts(-100, 0)]),
        0
    ));
    check_eq!(t!(sys::stat(path)).st_atime, 5);
    // Bad nanoseconds.
    for bad in [1_000_000_000, -1, UTIME_NOW + 1] {
        check_eq!(
            sys::utimensat(AT_FDCWD, Some(path), Some(&[ts(1, bad), ts(1, 0)]), 0),
            Err(EINVAL),
            "atime nsec {bad}"
        );
        check_eq!(
            sys::utimensat(AT_FDCWD, Some(path), Some(&[ts(1, 0), ts(1, bad)]), 0),
            Err(EINVAL),
            "mtime nsec {bad}"
        );
    }
    // Both omitted: nothing to do, the path is not looked up.
    let omit = [ts(0, UTIME_OMIT), ts(0, UTIME_OMIT)];
    check_eq!(
        sys::utimensat(AT_FDCWD, Some("/tmp/files-utime/none"), Some(&omit), 0),
        Ok(0)
    );
    check_eq!(
        sys::utimensat(AT_FDCWD, Some("/tmp/files-utime/none"), None, 0),
        Err(ENOENT)
    );
    check_eq!(
        sys::utimensat(AT_FDCWD, Some(path), None, 0x8000),
        Err(EINVAL),
        "bad flags"
    );
    // A null path is the fd itself (futimens), which takes no flags.
    let fd = t!(sys::open(path, O_RDONLY | O_CLOEXEC));
    t!(sys::utimensat(fd, None, Some(&[ts(10, 1), ts(20, 2)]), 0));
    let st = t!(sys::stat(path));
    check_eq!((st.st_atime, st.st_mtime), (10, 20));
    check_eq!(
        sys::utimensat(fd, None, None, AT_SYMLINK_NOFOLLOW),
        Err(EINVAL),
        "futimens with flags"
    );
    check_eq!(sys::utimensat(99, None, None, 0), Err(EBADF));
    // AT_EMPTY_PATH with "": the fd as well; "" alone is ENOENT.
    t!(sys::utimensat(
        fd,
        Some(""),
        Some(&[ts(30, 0), ts(40, 0)]),
        AT_EMPTY_PATH
    ));
    check_eq!(t!(sys::stat(path)).st_mtime, 40);
    check_eq!(sys::utimensat(fd, Some(""), None, 0), Err(ENOENT));
    t!(sys::close(fd));
    // AT_SYMLINK_NOFOLLOW sets the link's own times.
    let link = "/tmp/files-utime/l";
    t!(sys::symlinkat("f", AT_FDCWD, link));
    t!(sys::utimensat(
        AT_FDCWD,
        Some(link),
        Some(&[ts(50, 0), ts(60, 0)]),
        AT_SYMLINK_NOFOLLOW
    ));
    check_eq!(
        (t!(lstat(link)).st_mtime, t!(sys::stat(link)).st_mtime),
        (60, 40)
    );
    t!(sys::utimensat(
        AT_FDCWD,
        Some(link),
        Some(&[ts(70, 0), ts(80, 0)]),
        0
    ));
    check_eq!(
        (t!(lstat(link)).st_mtime, t!(sys::stat(link)).st_mtime),
        (60, 80)
    );
    remove_tree(dir);
    Ok(())
}

/// Writes, truncation and directory changes move mtime and ctime.
fn mtime_advances() -> TestResult {
    let dir = "/tmp/files-mtime";
    t!(fresh_dir(dir));
    let path = "/tmp/files-mtime/f";
    t!(make_file(path, b"x", 0o644));
    let old = [ts(1000, 0), ts(1000, 0)];
    t!(sys::utimensat(AT_FDCWD, Some(path), Some(&old), 0));
    let fd = t!(sys::open(path, O_WRONLY | O_APPEND | O_CLOEXEC));
    tick();
    let t0 = realtime();
    t!(sys::write(fd, b"more"));
    let st = t!(sys::fstat(fd));
    check!(
        at_least(st.st_mtime, st.st_mtime_nsec, ts(t0.tv_sec, 0)),
        "write: mtime {}",
        st.st_mtime
    );
    check!(
        at_least(st.st_ctime, st.st_ctime_nsec, ts(t0.tv_sec, 0)),
        "write: ctime {}",
        st.st_ctime
    );
    check_eq!(st.st_atime, 1000, "a write leaves atime");
    t!(sys::utimensat(AT_FDCWD, Some(path), Some(&old), 0));
    t!(sys::ftruncate(fd, 1));
    check!(
        t!(sys::fstat(fd)).st_mtime >= t0.tv_sec,
        "ftruncate moves mtime"
    );
    t!(sys::close(fd));
    // A directory's mtime moves when an entry is added or removed.
    t!(sys::utimensat(AT_FDCWD, Some(dir), Some(&old), 0));
    t!(make_file("/tmp/files-mtime/g", b"", 0o644));
    check!(
        t!(sys::stat(dir)).st_mtime >= t0.tv_sec,
        "create moves the directory's mtime"
    );
    t!(sys::utimensat(AT_FDCWD, Some(dir), Some(&old), 0));
    t!(sys::unlinkat(AT_FDCWD, "/tmp/files-mtime/g", 0));
    check!(
        t!(sys::stat(dir)).st_mtime >= t0.tv_sec,
        "unlink moves the directory's mtime"
    );
    remove_tree(dir);
    Ok(())
}

/// A non-root effective user: only the owner changes mode, owner and explicit times; anyone
/// who may write sets both times to now.
fn attr_permissions_non_root() -> TestResult {
    let dir = "/tmp/files-perm";
    t!(fresh_dir(dir));
    let (root644, root666, mine) = (
        "/tmp/files-perm/root644",
        "/tmp/files-perm/root666",
        "/tmp/files-perm/mine",
    );
    t!(make_file(root644, b"", 0o644));
    t!(make_file(root666, b"", 0o644));
    t!(sys::fchmodat(AT_FDCWD, root666, 0o666));
    t!(make_file(mine, b"", 0o644));
    t!(sys::fchownat(AT_FDCWD, mine, 1000, u32::MAX, 0));
    let st = t!(proc::in_child(|| {
        let r: TestResult = (|| {
            t!(sys::setuid(1000));
            let now = [ts(0, UTIME_NOW), ts(0, UTIME_NOW)];
            let some = [ts(1, 0), ts(2, 0)];
            let half = [ts(0, UTIME_NOW), ts(0, UTIME_OMIT)];
            check_eq!(sys::fchmodat(AT_FDCWD, root644, 0o777), Err(EPERM));
            check_eq!(
                sys::fchownat(AT_FDCWD, root644, 1000, u32::MAX, 0),
                Err(EPERM)
            );
            check_eq!(
                sys::utimensat(AT_FDCWD, Some(root644), Some(&some), 0),
                Err(EPERM)
            );
            check_eq!(
                sys::utimensat(AT_FDCWD, Some(root644), None, 0),
                Err(EACCES)
            );
            check_eq!(
                sys::utimensat(AT_FDCWD, Some(root644), Some(&now), 0),
                Err(EACCES)
            );
            check_eq!(
                sys::utimensat(AT_FDCWD, Some(root644), Some(&half), 0),
                Err(EPERM)
            );
            // Writable by others: "now" is allowed, given times are not.
            check_eq!(sys::utimensat(AT_FDCWD, Some(root666), None, 0), Ok(0));
            check_eq!(
                sys::utimensat(AT_FDCWD, Some(root666), Some(&now), 0),
                Ok(0)
            );
            check_eq!(
                sys::utimensat(AT_FDCWD, Some(root666), Some(&some), 0),
                Err(EPERM)
            );
            // The owner may do all of it, but not give the file away.
            check_eq!(sys::fchmodat(AT_FDCWD, mine, 0o600), Ok(0));
            check_eq!(sys::utimensat(AT_FDCWD, Some(mine), Some(&some), 0), Ok(0));
            check_eq!(sys::fchownat(AT_FDCWD, mine, 1000, u32::MAX, 0), Ok(0));
            check_eq!(sys::fchownat(AT_FDCWD, mine, 2000, u32::MAX, 0), Err(EPERM));
            Ok(())
        })();
        ktap::child_status("non-root", r)
    }));
    check_eq!(st, 0, "child: {}", proc::describe(st));
    let st = t!(sys::stat(mine));
    check_eq!((st.st_mode, st.st_mtime), (S_IFREG | 0o600, 2));
    remove_tree(dir);
    Ok(())
}

fn rename_moves_and_replaces() -> TestResult {
    let d = "/tmp/files-rn";
    t!(fresh_dir(d));
    let p = |n: &str| format!("{d}/{n}");
    // A plain move keeps the inode.
    t!(make_file(&p("a"), b"AAA", 0o644));
    let ino = t!(sys::stat(&p("a"))).st_ino;
    t!(sys::rename(&p("a"), &p("b")));
    check_eq!(sys::stat(&p("a")).map(|_| ()), Err(ENOENT));
    check_eq!(t!(sys::stat(&p("b"))).st_ino, ino);
    check_eq!(t!(read_all(&p("b"))), b"AAA");
    // Replacing a file.
    t!(make_file(&p("c"), b"CC", 0o644));
    t!(sys::rename(&p("c"), &p("b")));
    check_eq!(t!(read_all(&p("b"))), b"CC");
    check_eq!(sys::stat(&p("c")).map(|_| ()), Err(ENOENT));
    // Onto itself, and onto another link to the same file: nothing happens.
    check_eq!(sys::rename(&p("b"), &p("b")), Ok(0));
    t!(sys::linkat(AT_FDCWD, &p("b"), AT_FDCWD, &p("b2"), 0));
    check_eq!(sys::rename(&p("b"), &p("b2")), Ok(0));
    check_eq!(
        (sys::stat(&p("b")).is_ok(), sys::stat(&p("b2")).is_ok()),
        (true, true)
    );
    // A directory over an empty directory; its contents move with it.
    t!(sys::mkdirat(AT_FDCWD, &p("d1"), 0o755));
    t!(make_file(&p("d1/f"), b"in d1", 0o644));
    t!(sys::mkdirat(AT_FDCWD, &p("d2"), 0o755));
    t!(sys::rename(&p("d1"), &p("d2")));
    check_eq!(t!(read_all(&p("d2/f"))), b"in d1");
    check_eq!(sys::stat(&p("d1")).map(|_| ()), Err(ENOENT));
    // ... but not over a non-empty one.
    t!(sys::mkdirat(AT_FDCWD, &p("d3"), 0o755));
    check_eq!(sys::rename(&p("d3"), &p("d2")), Err(ENOTEMPTY));
    // File over directory, directory over file.
    check_eq!(sys::rename(&p("b"), &p("d3")), Err(EISDIR));
    check_eq!(sys::rename(&p("d3"), &p("b")), Err(ENOTDIR));
    // A trailing slash on a file.
    check_eq!(sys::rename(&p("b/"), &p("e")), Err(ENOTDIR));
    // Into its own subdirectory.
    t!(sys::mkdirat(AT_FDCWD, &p("d2/sub"), 0o755));
    check_eq!(sys::rename(&p("d2"), &p("d2/sub/x")), Err(EINVAL));
    check_eq!(sys::rename(&p("d2"), &p("d2/x")), Err(EINVAL));
    // "." and ".." as either last component.
    check_eq!(sys::rename(&p("d2/."), &p("e")), Err(EBUSY));
    check_eq!(sys::rename(&p("d2/.."), &p("e")), Err(EBUSY));
    check_eq!(sys::rename(&p("b"), &p("d2/..")), Err(EBUSY));
    check_eq!(sys::rename(&p("none"), &p("e")), Err(ENOENT));
    check_eq!(sys::rename(&p("b"), &p("none/e")), Err(ENOENT));
    remove_tree(d);
    Ok(())
}

fn renameat2_flags() -> TestResult {
    let d = "/tmp/files-rn2";
    t!(fresh_dir(d));
    let p = |n: &str| format!("{d}/{n}");
    let rn2 = |a: &str, b: &str, f: u32| sys::renameat2(AT_FDCWD, &p(a), AT_FDCWD, &p(b), f);
    t!(make_file(&p("f"), b"file", 0o644));
    t!(make_file(&p("g"), b"gg", 0o644));
    t!(sys::mkdirat(AT_FDCWD, &p("dir"), 0o755));
    t!(make_file(&p("dir/inner"), b"inner", 0o644));
    check_eq!(rn2("f", "g", RENAME_NOREPLACE), Err(EEXIST));
    check_eq!(t!(read_all(&p("g"))), b"gg", "NOREPLACE left the target");
    check_eq!(rn2("g", "h", RENAME_NOREPLACE), Ok(0));
    check_eq!(t!(read_all(&p("h"))), b"gg");
    // EXCHANGE swaps a file and a directory, both staying.
    check_eq!(rn2("f", "dir", RENAME_EXCHANGE), Ok(0));
    check_eq!(t!(read_all(&p("dir"))), b"file");
    check_eq!(t!(read_all(&p("f/inner"))), b"inner");
    check_eq!(t!(sys::stat(&p("f"))).st_mode & S_IFMT, S_IFDIR);
    check_eq!(rn2("h", "none", RENAME_EXCHANGE), Err(ENOENT));
    check_eq!(t!(read_all(&p("h"))), b"gg");
    check_eq!(
        rn2("h", "dir", RENAME_EXCHANGE | RENAME_NOREPLACE),
        Err(EINVAL)
    );
    check_eq!(rn2("h", "dir", 8), Err(EINVAL), "unknown flag");
    // A directory cannot be exchanged with something inside it.
    t!(sys::mkdirat(AT_FDCWD, &p("f/sub"), 0o755));
    check_eq!(rn2("f", "f/sub", RENAME_EXCHANGE), Err(EINVAL));
    check_eq!(rn2("f/sub", "f", RENAME_EXCHANGE), Err(EINVAL));
    check_eq!(
        rn2("f/sub", "f", 0),
        Err(ENOTEMPTY),
        "over its own ancestor"
    );
    // renameat (no flags) relative to directory fds.
    let dfd = t!(sys::open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    let (a, b) = (CPath::new("h"), CPath::new("f/moved"));
    t!(sys::syscall(
        nr::RENAMEAT,
        &[dfd as usize, a.ptr(), dfd as usize, b.ptr()]
    ));
    check_eq!(t!(read_all(&p("f/moved"))), b"gg");
    t!(sys::close(dfd));
    remove_tree(d);
    Ok(())
}

/// "/" (the initramfs) and /tmp are different file systems: rename and link between them fail.
fn rename_link_exdev() -> TestResult {
    if sys::stat("/proc/self").is_err() {
        return skip("the file systems are not mounted");
    }
    let mounts = t!(read_all("/proc/mounts"));
    let text = core::str::from_utf8(&mounts).unwrap_or("");
    check!(
        text.lines()
            .any(|l| l.split(' ').nth(1) == Some("/tmp") && l.split(' ').nth(2) == Some("tmpfs")),
        "no tmpfs on /tmp in /proc/mounts:\n{text}"
    );
    check!(
        t!(sys::stat("/")).st_dev != t!(sys::stat("/tmp")).st_dev,
        "/ and /tmp share st_dev"
    );
    let (root_file, tmp_file) = ("/files-xdev", "/tmp/files-xdev");
    let _ = sys::unlinkat(AT_FDCWD, root_file, 0);
    let _ = sys::unlinkat(AT_FDCWD, tmp_file, 0);
    t!(make_file(root_file, b"x", 0o644));
    t!(make_file(tmp_file, b"y", 0o644));
    check_eq!(sys::rename(root_file, "/tmp/files-xdev2"), Err(EXDEV));
    check_eq!(
        sys::rename(tmp_file, root_file),
        Err(EXDEV),
        "even over a file"
    );
    check_eq!(
        sys::renameat2(AT_FDCWD, tmp_file, AT_FDCWD, root_file, RENAME_EXCHANGE),
        Err(EXDEV)
    );
    check_eq!(
        sys::linkat(AT_FDCWD, tmp_file, AT_FDCWD, "/files-xdev2", 0),
        Err(EXDEV)
    );
    check_eq!(t!(read_all(root_file)), b"x");
    t!(sys::unlinkat(AT_FDCWD, root_file, 0));
    t!(sys::unlinkat(AT_FDCWD, tmp_file, 0));
    Ok(())
}

fn linkat_hard_links() -> TestResult {
    let d = "/tmp/files-ln";
    t!(fresh_dir(d));
    let p = |n: &str| format!("{d}/{n}");
    t!(make_file(&p("a"), b"shared data", 0o644));
    t!(sys::linkat(AT_FDCWD, &p("a"), AT_FDCWD, &p("b"), 0));
    let (sa, sb) = (t!(sys::stat(&p("a"))), t!(sys::stat(&p("b"))));
    check_eq!(sa.st_ino, sb.st_ino);
    check_eq!((sa.st_nlink, sb.st_nlink), (2, 2));
    check_eq!(t!(read_all(&p("b"))), b"shared data");
    // A write through one name shows through the other; unlinking the first keeps the data.
    let fd = t!(sys::open(&p("b"), O_WRONLY | O_APPEND | O_CLOEXEC));
    t!(sys::write(fd, b"!"));
    t!(sys::close(fd));
    check_eq!(t!(read_all(&p("a"))), b"shared data!");
    t!(sys::unlinkat(AT_FDCWD, &p("a"), 0));
    check_eq!(t!(read_all(&p("b"))), b"shared data!");
    check_eq!(t!(sys::stat(&p("b"))).st_nlink, 1);
    // Errors: a directory, an existing name, a missing source, bad flags.
    t!(sys::mkdirat(AT_FDCWD, &p("dir"), 0o755));
    check_eq!(
        sys::linkat(AT_FDCWD, &p("dir"), AT_FDCWD, &p("dir2"), 0),
        Err(EPERM)
    );
    t!(make_file(&p("c"), b"c", 0o644));
    check_eq!(
        sys::linkat(AT_FDCWD, &p("b"), AT_FDCWD, &p("c"), 0),
        Err(EEXIST)
    );
    check_eq!(
        sys::linkat(AT_FDCWD, &p("b"), AT_FDCWD, &p("dir"), 0),
        Err(EEXIST)
    );
    check_eq!(
        sys::linkat(AT_FDCWD, &p("none"), AT_FDCWD, &p("x"), 0),
        Err(ENOENT)
    );
    check_eq!(
        sys::linkat(AT_FDCWD, &p("b"), AT_FDCWD, &p("none/x"), 0),
        Err(ENOENT)
    );
    check_eq!(
        sys::linkat(AT_FDCWD, &p("b"), AT_FDCWD, &p("x"), 0x8000),
        Err(EINVAL)
    );
    // A symlink: linked itself by default, its target with AT_SYMLINK_FOLLOW.
    t!(sys::symlinkat("b", AT_FDCWD, &p("s")));
    t!(sys::linkat(AT_FDCWD, &p("s"), AT_FDCWD, &p("s-itself"), 0));
    check_eq!(t!(lstat(&p("s-itself"))).st_mode & S_IFMT, S_IFLNK);
    t!(sys::linkat(
        AT_FDCWD,
        &p("s"),
        AT_FDCWD,
        &p("s-target"),
        AT_SYMLINK_FOLLOW
    ));
    let st = t!(lstat(&p("s-target")));
    check_eq!((st.st_mode & S_IFMT, st.st_ino), (S_IFREG, sb.st_ino));
    // AT_EMPTY_PATH: a name for an open file ("" alone is ENOENT).
    let fd = t!(sys::open(&p("c"), O_RDONLY | O_CLOEXEC));
    check_eq!(sys::linkat(fd, "", AT_FDCWD, &p("c2"), 0), Err(ENOENT));
    t!(sys::linkat(fd, "", AT_FDCWD, &p("c2"), AT_EMPTY_PATH));
    check_eq!(t!(read_all(&p("c2"))), b"c");
    check_eq!(t!(sys::fstat(fd)).st_nlink, 2);
    t!(sys::close(fd));
    remove_tree(d);
    Ok(())
}

fn fadvise64_errors() -> TestResult {
    let fadvise = |fd: i32, off: i64, len: i64, advice: u32| {
        sys::syscall(
            nr::FADVISE64,
            &[fd as usize, off as usize, len as usize, advice as usize],
        )
    };
    let fd = t!(sys::open("/etc/hello.txt", O_RDONLY | O_CLOEXEC));
    for advice in 0..=5 {
        check_eq!(fadvise(fd, 0, 0, advice), Ok(0), "advice {advice}");
    }
    check_eq!(fadvise(fd, 0, 100, 6), Err(EINVAL), "unknown advice");
    check_eq!(fadvise(fd, 0, -1, 0), Err(EINVAL), "negative length");
    check_eq!(fadvise(99, 0, 0, 0), Err(EBADF));
    t!(sys::close(fd));
    let [r, w] = t!(sys::pipe2(O_CLOEXEC));
    check_eq!(fadvise(r, 0, 0, 0), Err(ESPIPE));
    check_eq!(
        fadvise(w, 0, 0, 6),
        Err(ESPIPE),
        "ESPIPE before the advice is looked at"
    );
    t!(sys::close(r));
    t!(sys::close(w));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("read_lseek_pread_readv", read_initramfs_file),
        ("open_errors", open_errors),
        ("write_writev_pwrite_in_tmp", write_in_tmp),
        ("newfstatat_fstat", stat_types),
        ("getdents64", getdents64_lists_directory),
        ("readlinkat_proc_self_exe", readlink_proc_self_exe),
        ("faccessat", faccessat),
        ("chdir_getcwd", chdir_getcwd),
        ("mkdirat_unlinkat", mkdirat_and_unlinkat),
        ("dev_null_and_console", dev_null_and_console),
        ("holes_and_truncate", holes_and_truncate),
        ("chmod_chown_stat", chmod_chown_stat),
        ("utimensat_times", utimensat_times),
        ("mtime_advances", mtime_advances),
        ("attr_permissions_non_root", attr_permissions_non_root),
        ("rename_moves_and_replaces", rename_moves_and_replaces),
        ("renameat2_flags", renameat2_flags),
        ("rename_link_exdev", rename_link_exdev),
        ("linkat_hard_links", linkat_hard_links),
        ("fadvise64_errors", fadvise64_errors),
    ])
}

entry!(main);
