//! The big-initramfs check (tests/tests/bigfiles.rs boots it as the first process): reads back
//! every file listed in /etc/bigfiles.manifest (`SIZE CHECKSUM PATH` per line, checksum
//! `svelt_abi::util::bytes::Checksum` in hex) and checks its size and contents, then fills the root
//! file system (a tmpfs, limited to half of RAM) to ENOSPC and frees it again, checking statfs
//! on the way. Without the manifest (the ordinary userland) every test skips.
#![no_std]
#![no_main]

use svelt_abi::util::bytes::Checksum;
use svelt_user::ktap::{skip, TestResult};
use svelt_user::sys::*;
use svelt_user::*;

const MANIFEST: &str = "/etc/bigfiles.manifest";
const TMPFS_MAGIC: u64 = 0x0102_1994;
const CHUNK: usize = 1 << 20;

/// One reusable 1 MiB buffer (the runtime's allocator never frees).
fn buffer() -> &'static mut [u8] {
    static mut BUF: [u8; CHUNK] = [0; CHUNK];
    // SAFETY: the program is single-threaded and each test takes the buffer only for as long
    // as it runs, never twice at once.
    unsafe { &mut *core::ptr::addr_of_mut!(BUF) }
}

/// One manifest line: size, checksum, path.
type Listed = (u64, u64, String);

fn manifest() -> Result<Option<Vec<Listed>>, String> {
    let text = match io::read_file(MANIFEST) {
        Ok(t) => t,
        Err(ENOENT) => return Ok(None),
        Err(e) => return Err(format!("{MANIFEST}: {e:?}")),
    };
    let text = core::str::from_utf8(&text).map_err(|_| "manifest not UTF-8")?;
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let mut w = line.splitn(3, ' ');
        let (Some(size), Some(sum), Some(path)) = (w.next(), w.next(), w.next()) else {
            return Err(format!("bad manifest line {line:?}"));
        };
        let size = size.parse().map_err(|_| format!("bad size in {line:?}"))?;
        let sum = u64::from_str_radix(sum, 16).map_err(|_| format!("bad sum in {line:?}"))?;
        out.push((size, sum, String::from(path)));
    }
    Ok(Some(out))
}

fn statfs(path: &str) -> Result<[u64; 15], String> {
    let mut buf = [0u64; 15];
    let p = CPath::new(path);
    t!(sys::syscall(
        nr::STATFS,
        &[p.ptr(), buf.as_mut_ptr() as usize]
    ));
    Ok(buf)
}

fn meminfo(what: &str) {
    if let Ok(m) = io::read_file("/proc/meminfo") {
        let m = String::from_utf8(m).unwrap_or_default();
        let pick: Vec<&str> = m
            .lines()
            .filter(|l| {
                ["MemTotal:", "MemFree:", "Cached:", "Shmem:"]
                    .iter()
                    .any(|k| l.starts_with(k))
            })
            .collect();
        println!(
            "# meminfo {what}: {}",
            pick.join(", ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
}

fn files_match() -> TestResult {
    let Some(files) = manifest()? else {
        return skip("no manifest (not the big initramfs)");
    };
    meminfo("at start");
    let buf = buffer();
    let t0 = now_ns();
    let mut total = 0u64;
    for (size, sum, path) in &files {
        let fd = t!(sys::open(path, O_RDONLY | O_CLOEXEC));
        let st = t!(sys::fstat(fd));
        check_eq!(st.st_size as u64, *size, "size of {}", path);
        let mut c = Checksum::new();
        let mut got = 0u64;
        loop {
            // Fill the buffer (reads may be short) so that only the last piece is partial.
            let mut n = 0;
            while n < buf.len() {
                match sys::read(fd, &mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(EINTR) => {}
                    Err(e) => return Err(format!("read {path}: {e:?}")),
                }
            }
            c.update(&buf[..n]);
            got += n as u64;
            if n < buf.len() {
                break;
            }
        }
        t!(sys::close(fd));
        check_eq!(got, *size, "bytes read from {}", path);
        check_eq!(c.finish(), *sum, "checksum of {}", path);
        total += got;
    }
    println!(
        "# {} files, {} MiB read and checked in {} ms",
        files.len(),
        total >> 20,
        (now_ns() - t0) / 1_000_000
    );
    Ok(())
}

fn root_is_a_tmpfs() -> TestResult {
    let Some(files) = manifest()? else {
        return skip("no manifest (not the big initramfs)");
    };
    let s = statfs("/")?;
    let (blocks, bfree, bavail) = (s[2], s[3], s[4]);
    println!("# statfs /: f_blocks {blocks} f_bfree {bfree} f_bavail {bavail}");
    check_eq!(s[0], TMPFS_MAGIC, "f_type");
    check_eq!(s[1], 4096, "f_bsize");
    check!(
        bfree <= blocks && bavail == bfree,
        "{bfree} free of {blocks}"
    );
    let pages: u64 = files.iter().map(|f| f.0.div_ceil(4096)).sum();
    check!(
        blocks - bfree >= pages,
        "{} pages used, the files take {pages}",
        blocks - bfree
    );
    Ok(())
}

/// Writes to a new file until the root is full: ENOSPC (after a short write) and no free blocks;
/// then a sparse extension past the limit still works, and unlinking gives the blocks back.
fn fill_to_enospc() -> TestResult {
    if manifest()?.is_none() {
        return skip("no manifest (not the big initramfs)");
    }
    let path = "/bigfiles-fill";
    let before = statfs("/")?[3];
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
        0o600
    ));
    let buf = buffer();
    buf.fill(0x5a);
    let mut written = 0u64;
    let mut short = false;
    let err = loop {
        // Odd-sized writes, so that the one that fills the last page is short.
        match sys::write(fd, &buf[..CHUNK - 100]) {
            Ok(n) => {
                written += n as u64;
                short |= n < CHUNK - 100;
            }
            Err(e) => break e,
        }
    };
    meminfo("full");
    let full = statfs("/")?;
    println!(
        "# wrote {} MiB before {err:?}; f_bfree then {}",
        written >> 20,
        full[3]
    );
    check_eq!(err, ENOSPC);
    check!(short, "a short write before ENOSPC");
    check_eq!(full[3], 0, "f_bfree when full");
    check!(
        written.div_ceil(4096) >= before.saturating_sub(1),
        "{written} bytes for {before} free pages"
    );
    // A hole costs nothing: extending far beyond the limit is fine.
    t!(sys::syscall(nr::FTRUNCATE, &[fd as usize, 1 << 40]));
    check_eq!(t!(sys::fstat(fd)).st_size, 1 << 40);
    check_eq!(
        sys::pwrite(fd, b"x", (1 << 40) - 1),
        Err(ENOSPC),
        "a write into a hole when full"
    );
    t!(sys::close(fd));
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    let after = statfs("/")?[3];
    meminfo("after unlink");
    check_eq!(after, before, "f_bfree after unlink");
    Ok(())
}

fn main(_: &rt::Args) -> i32 {
    let status = ktap::run(&[
        ("files_match", files_match),
        ("root_is_a_tmpfs", root_is_a_tmpfs),
        ("fill_to_enospc", fill_to_enospc),
    ]);
    // As the first process on Linux, exiting would panic the kernel before the console has
    // printed the last lines: power off instead, as init does (Svelt reports the status).
    let u = sys::uname();
    if sys::getpid() == 1 && !sys::field_str(&u.release).contains("svelt") {
        sys::sync();
        let _ = sys::reboot(sys::LINUX_REBOOT_CMD_POWER_OFF);
    }
    status
}

entry!(main);
