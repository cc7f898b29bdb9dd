//! Running out of memory, on purpose: a child that touches more anonymous memory than the
//! machine has is killed with SIGKILL and the rest goes on; a tmpfs filled up gives ENOSPC (a
//! small one mounted with size=, and /tmp itself), and the space is usable again once the file
//! is gone. Each case is bounded in size and time, so a kernel without the limit fails it
//! instead of hanging.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::{describe, in_child, spawn, wait_bounded, wifsignaled, wtermsig, Shared};
use svelt_user::sig::SIGKILL;
use svelt_user::sys::*;
use svelt_user::*;

const PAGE: usize = 4096;
const MIB: usize = 1 << 20;
const SEC: u64 = 1_000_000_000;

/// MemTotal from /proc/meminfo, in bytes.
fn mem_total() -> Option<usize> {
    let text = io::read_file("/proc/meminfo").ok()?;
    let text = core::str::from_utf8(&text).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn poke(addr: usize, v: u8) {
    // SAFETY: the callers write into anonymous read/write mappings they just made.
    unsafe { core::ptr::write_volatile(addr as *mut u8, v) }
}

fn peek(addr: usize) -> u8 {
    // SAFETY: as in poke.
    unsafe { core::ptr::read_volatile(addr as *const u8) }
}

#[derive(Clone, Copy, Default)]
struct Hog {
    /// Bytes mapped and touched so far.
    touched: usize,
    /// The errno of a failed mmap (0: none).
    mmap_err: i32,
}

const CHUNK: usize = 64 * MIB;
/// The kernel's console messages (the OOM report) would land in the middle of KTAP lines.
const PRINTK: &str = "/proc/sys/kernel/printk";

fn oom_kills_the_toucher() -> TestResult {
    let total = mem_total().unwrap_or(1 << 30);
    let goal = total + 256 * MIB;
    let printk = io::read_file(PRINTK).ok();
    if printk.is_some() {
        let _ = write_text(PRINTK, "1");
    }
    let res = Shared::new(Hog::default());
    let pid = t!(spawn(|| {
        // Chunks, not one mapping: Linux's overcommit heuristic refuses a single mapping larger
        // than RAM, but not many that add up to more.
        let mut hog = Hog::default();
        while hog.touched < goal {
            let p = match sys::mmap_anon(CHUNK) {
                Ok(p) => p,
                Err(e) => {
                    hog.mmap_err = e.0;
                    res.set(hog);
                    return 2;
                }
            };
            for a in (p..p + CHUNK).step_by(PAGE) {
                poke(a, 1);
            }
            hog.touched += CHUNK;
            res.set(hog);
        }
        3
    }));
    let (st, timed_out) = t!(wait_bounded(pid, 120 * SEC));
    if let Some(old) = printk {
        let _ = write_text(PRINTK, core::str::from_utf8(&old).unwrap_or("4\n"));
    }
    let hog = res.get();
    println!(
        "# MemTotal {} MiB: the child touched {} MiB, then {}",
        total / MIB,
        hog.touched / MIB,
        describe(st)
    );
    check!(!timed_out, "the child ran past the time limit");
    check!(
        wifsignaled(st) && wtermsig(st) == SIGKILL,
        "child: {}, want killed by SIGKILL (mmap error {:?} after {} MiB)",
        describe(st),
        Errno(hog.mmap_err),
        hog.touched / MIB
    );
    check!(
        hog.touched + CHUNK > total / 2,
        "killed after only {} MiB of {} MiB",
        hog.touched / MIB,
        total / MIB
    );
    // The rest of the system goes on: memory and fork work.
    let len = 16 * MIB;
    let p = t!(sys::mmap_anon(len));
    for a in (p..p + len).step_by(PAGE) {
        poke(a, 7);
    }
    for a in (p..p + len).step_by(PAGE) {
        check_eq!(peek(a), 7);
    }
    t!(sys::munmap(p, len));
    let st = t!(in_child(|| 0));
    check_eq!(st, 0, "fork after the OOM kill: {}", describe(st));
    Ok(())
}

fn write_text(path: &str, text: &str) -> SysResult<()> {
    let fd = sys::open(path, O_WRONLY | O_CLOEXEC)?;
    let r = sys::write(fd, text.as_bytes()).map(|_| ());
    let _ = sys::close(fd);
    r
}

/// Free bytes of the file system holding `path` (statfs: f_bsize * f_bavail).
fn free_bytes(path: &str) -> SysResult<usize> {
    // struct statfs on arm64: 64-bit f_type, f_bsize, f_blocks, f_bfree, f_bavail, ...
    let mut buf = [0u64; 15];
    let p = CPath::new(path);
    sys::syscall(nr::STATFS, &[p.ptr(), buf.as_mut_ptr() as usize])?;
    Ok((buf[1] * buf[4]) as usize)
}

struct Fill {
    written: usize,
    err: Option<Errno>,
    timed_out: bool,
}

/// Writes `path` (created, truncated) in `chunk`-byte writes until a write fails or `bound`
/// bytes are written.
fn fill(path: &str, chunk: usize, bound: usize) -> Result<Fill, String> {
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
        0o644
    ));
    let buf = vec![0x5au8; chunk];
    let deadline = sys::now_ns() + 60 * SEC;
    let mut f = Fill {
        written: 0,
        err: None,
        timed_out: false,
    };
    while f.written < bound {
        if sys::now_ns() > deadline {
            f.timed_out = true;
            break;
        }
        match sys::write(fd, &buf) {
            Ok(0) => break,
            Ok(n) => f.written += n,
            Err(e) => {
                f.err = Some(e);
                break;
            }
        }
    }
    let size = sys::fstat(fd).map(|s| s.st_size as usize);
    let _ = sys::close(fd);
    check_eq!(size, Ok(f.written), "{path}: size after the writes");
    Ok(f)
}

const SMALL_DIR: &str = "/tmp/mm_oom_small";
const SMALL: usize = 8 * MIB;

fn tmpfs_size_limit_enospc() -> TestResult {
    let _ = sys::mkdirat(AT_FDCWD, SMALL_DIR, 0o755);
    t!(sys::mount_data("none", SMALL_DIR, "tmpfs", 0, "size=8m"));
    let r = small_tmpfs_fills();
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/mm_oom_small/f", 0);
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/mm_oom_small/g", 0);
    let um = sys::umount2(SMALL_DIR, 0);
    let _ = sys::unlinkat(AT_FDCWD, SMALL_DIR, AT_REMOVEDIR);
    r?;
    t!(um);
    Ok(())
}

fn small_tmpfs_fills() -> TestResult {
    check_eq!(
        free_bytes(SMALL_DIR),
        Ok(SMALL),
        "statfs of a size=8m tmpfs"
    );
    // 3000-byte writes do not divide the size: the last one is short.
    let f = fill("/tmp/mm_oom_small/f", 3000, 2 * SMALL)?;
    println!(
        "# size=8m tmpfs: {} bytes written, then {:?}",
        f.written, f.err
    );
    check_eq!(f.err, Some(ENOSPC), "after {} bytes", f.written);
    check_eq!(f.written, SMALL, "bytes written before ENOSPC");
    check_eq!(free_bytes(SMALL_DIR), Ok(0), "statfs when full");
    // A second file gets nothing, not even its first byte.
    let g = fill("/tmp/mm_oom_small/g", 1, 1)?;
    check_eq!(g.err, Some(ENOSPC), "another file on the full tmpfs");
    // Removing the file gives the space back.
    t!(sys::unlinkat(AT_FDCWD, "/tmp/mm_oom_small/f", 0));
    check_eq!(free_bytes(SMALL_DIR), Ok(SMALL), "statfs after the unlink");
    let g = fill("/tmp/mm_oom_small/g", 64 * 1024, 2 * SMALL)?;
    check_eq!(
        (g.written, g.err),
        (SMALL, Some(ENOSPC)),
        "filling again after the unlink"
    );
    // Truncating frees it too.
    let fd = t!(sys::open("/tmp/mm_oom_small/g", O_WRONLY));
    t!(sys::ftruncate(fd, 0));
    let _ = sys::close(fd);
    check_eq!(free_bytes(SMALL_DIR), Ok(SMALL), "statfs after ftruncate");
    Ok(())
}

const TMP_FILE: &str = "/tmp/mm_oom_fill";

fn tmp_fills_up_enospc() -> TestResult {
    let total = mem_total().unwrap_or(1 << 30);
    let free = free_bytes("/tmp");
    let f = fill(TMP_FILE, MIB, total);
    let free_full = free_bytes("/tmp");
    let _ = sys::unlinkat(AT_FDCWD, TMP_FILE, 0);
    let f = f?;
    println!(
        "# /tmp: {:?} bytes free, {} bytes written, then {:?}",
        free, f.written, f.err
    );
    check!(!f.timed_out, "only {} bytes written in time", f.written);
    check_eq!(f.err, Some(ENOSPC), "after {} bytes", f.written);
    let free = t!(free);
    check_eq!(
        f.written,
        free,
        "bytes written into /tmp, want its free space"
    );
    check_eq!(free_full, Ok(0), "statfs of the full /tmp");
    check_eq!(free_bytes("/tmp"), Ok(free), "statfs after the unlink");
    // And the space is usable again.
    let f = fill(TMP_FILE, MIB, 16 * MIB);
    let _ = sys::unlinkat(AT_FDCWD, TMP_FILE, 0);
    let f = f?;
    check_eq!(
        (f.written, f.err),
        (16 * MIB, None),
        "16 MiB after the unlink"
    );
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("oom_kills_the_toucher", oom_kills_the_toucher),
        ("tmpfs_size_limit_enospc", tmpfs_size_limit_enospc),
        ("tmp_fills_up_enospc", tmp_fills_up_enospc),
    ])
}

entry!(main);
