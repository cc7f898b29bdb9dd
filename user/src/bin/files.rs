//! Files on the initramfs and tmpfs: openat/read/write/close/lseek/pread64/pwrite64/readv/writev,
//! newfstatat/fstat, getdents64, readlinkat(/proc/self/exe), faccessat, chdir/getcwd, mkdirat,
//! unlinkat, /dev/null and /dev/console.
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
    ])
}

entry!(main);
