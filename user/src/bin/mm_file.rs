//! Mapped files (tmpfs in /tmp and the initramfs root): MAP_SHARED mappings, read() and write()
//! see the same bytes, in both directions, across mappings and across fork, and msync succeeds;
//! MAP_PRIVATE sees the file until it writes a page, and from then on only its own copy of that
//! page; access beyond the end of the file raises SIGBUS; mprotect, munmap and mremap of parts of
//! a file mapping; the permission checks of mmap against the file's open mode; code run from a
//! mapped file.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::{describe, in_child_bounded, spawn, wait_bounded};
use svelt_user::sig::{fault_in_child, BUS_ADRERR, SEGV_ACCERR, SEGV_MAPERR, SIGBUS, SIGSEGV};
use svelt_user::sys::*;
use svelt_user::*;

const PAGE: usize = 4096;
const SEC: u64 = 1_000_000_000;

/// The byte a test file holds at `off` (251 is prime: no page looks like another).
fn pat(off: usize) -> u8 {
    (off % 251) as u8
}

/// Creates `path` (truncated) holding `len` bytes of `pat`; returns it open read/write.
fn make_file(path: &str, len: usize) -> Result<i32, String> {
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
        0o644
    ));
    let data: Vec<u8> = (0..len).map(pat).collect();
    t!(sys::write_all(fd, &data));
    Ok(fd)
}

fn peek(addr: usize) -> u8 {
    // SAFETY: the tests read mappings they made; reads that fault are made in children.
    unsafe { core::ptr::read_volatile(addr as *const u8) }
}

fn poke(addr: usize, v: u8) {
    // SAFETY: as in peek.
    unsafe { core::ptr::write_volatile(addr as *mut u8, v) }
}

fn load(addr: usize, len: usize) -> Vec<u8> {
    (addr..addr + len).map(peek).collect()
}

fn store(addr: usize, bytes: &[u8]) {
    for (i, &b) in bytes.iter().enumerate() {
        poke(addr + i, b);
    }
}

fn pread_vec(fd: i32, off: usize, len: usize) -> SysResult<Vec<u8>> {
    let mut v = vec![0u8; len];
    let n = sys::pread(fd, &mut v, off as u64)?;
    v.truncate(n);
    Ok(v)
}

fn map(len: usize, prot: u32, flags: u32, fd: i32, off: usize) -> SysResult {
    sys::mmap(0, len, prot, flags, fd, off)
}

const RW: u32 = PROT_READ | PROT_WRITE;

/// Checks that the mapping at `addr` shows the file's pattern over `range` (offsets in the file,
/// the mapping starting at file offset `off`).
fn shows_pattern(addr: usize, off: usize, range: core::ops::Range<usize>) -> TestResult {
    for o in range {
        let got = peek(addr + o - off);
        if got != pat(o) {
            return Err(format!(
                "mapping of file offset {off:#x}: byte at file offset {o:#x} is {got:#x}, want {:#x}",
                pat(o)
            ));
        }
    }
    Ok(())
}

fn shared_mapping_and_read_write_agree() -> TestResult {
    let path = "/tmp/mm_file_shared";
    let fd = make_file(path, 3 * PAGE)?;
    let m = t!(map(3 * PAGE, RW, MAP_SHARED, fd, 0));
    shows_pattern(m, 0, 0..3 * PAGE)?;
    // A store through the mapping is what read() returns...
    store(m + PAGE + 5, b"mapped");
    check_eq!(
        t!(pread_vec(fd, PAGE + 5, 6)),
        b"mapped",
        "pread after a store"
    );
    // ...and write() shows through the mapping, also on a page not touched before.
    t!(sys::pwrite(fd, b"written", (2 * PAGE + 100) as u64));
    check_eq!(
        load(m + 2 * PAGE + 100, 7),
        b"written",
        "the mapping after pwrite"
    );
    t!(sys::pwrite(fd, b"again", (PAGE + 5) as u64));
    check_eq!(
        load(m + PAGE + 5, 6),
        b"againd",
        "a stored page after pwrite"
    );
    check_eq!(sys::msync(m, 3 * PAGE, MS_SYNC), Ok(0));
    check_eq!(sys::msync(m + PAGE, PAGE, MS_ASYNC), Ok(0));
    check_eq!(
        sys::msync(m, PAGE, MS_SYNC | MS_ASYNC),
        Err(EINVAL),
        "both flags"
    );
    check_eq!(sys::msync(m + 1, PAGE, MS_SYNC), Err(EINVAL), "unaligned");
    t!(sys::munmap(m, 3 * PAGE));
    check_eq!(
        sys::msync(m, PAGE, MS_SYNC),
        Err(ENOMEM),
        "msync of nothing mapped"
    );
    // The stores outlive the mapping and the descriptor.
    t!(sys::close(fd));
    let fd = t!(sys::open(path, O_RDONLY | O_CLOEXEC));
    check_eq!(t!(pread_vec(fd, PAGE, 16))[5..11], *b"againd");
    check_eq!(t!(pread_vec(fd, 2 * PAGE + 100, 7)), b"written");
    let _ = sys::close(fd);
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn two_shared_mappings_agree() -> TestResult {
    let path = "/tmp/mm_file_two";
    let fd = make_file(path, 2 * PAGE)?;
    let a = t!(map(2 * PAGE, RW, MAP_SHARED, fd, 0));
    let b = t!(map(2 * PAGE, RW, MAP_SHARED, fd, 0));
    // A third one of the second page only.
    let c = t!(map(PAGE, RW, MAP_SHARED, fd, PAGE));
    check!(a != b);
    store(a + 10, b"from a");
    check_eq!(load(b + 10, 6), b"from a");
    store(b + PAGE + 20, b"from b");
    check_eq!(load(a + PAGE + 20, 6), b"from b");
    check_eq!(load(c + 20, 6), b"from b", "the mapping at offset PAGE");
    store(c + 30, b"from c");
    check_eq!(load(a + PAGE + 30, 6), b"from c");
    // A child's stores through the inherited mapping, and through its own.
    let st = t!(in_child_bounded(
        || {
            store(a + 40, b"child1");
            let Ok(d) = map(PAGE, RW, MAP_SHARED, fd, PAGE) else {
                return 1;
            };
            store(d + 50, b"child2");
            0
        },
        20 * SEC
    ));
    check_eq!(st, (0, false), "child");
    check_eq!(load(b + 40, 6), b"child1");
    check_eq!(t!(pread_vec(fd, PAGE + 50, 6)), b"child2");
    check_eq!(load(a + PAGE + 50, 6), b"child2");
    for (m, len) in [(a, 2 * PAGE), (b, 2 * PAGE), (c, PAGE)] {
        t!(sys::munmap(m, len));
    }
    let _ = sys::close(fd);
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn private_mapping_copies_on_write() -> TestResult {
    let path = "/tmp/mm_file_private";
    let fd = make_file(path, 3 * PAGE)?;
    let p = t!(map(3 * PAGE, RW, MAP_PRIVATE, fd, 0));
    let s = t!(map(3 * PAGE, RW, MAP_SHARED, fd, 0));
    shows_pattern(p, 0, 0..3 * PAGE)?;
    // Until the private mapping writes a page, it sees the file's changes to it.
    t!(sys::pwrite(fd, b"before", 100));
    check_eq!(
        load(p + 100, 6),
        b"before",
        "write() before the first store"
    );
    store(s + 200, b"shared");
    check_eq!(
        load(p + 200, 6),
        b"shared",
        "a shared store before the first store"
    );
    // Its own stores stay its own...
    store(p + PAGE + 8, b"private");
    check_eq!(load(p + PAGE + 8, 7), b"private");
    check_eq!(
        t!(pread_vec(fd, PAGE + 8, 7)),
        (PAGE + 8..PAGE + 15).map(pat).collect::<Vec<u8>>(),
        "read()"
    );
    check_eq!(
        load(s + PAGE + 8, 7),
        (PAGE + 8..PAGE + 15).map(pat).collect::<Vec<u8>>(),
        "the shared mapping"
    );
    // ...and the written page no longer follows the file, while the other pages still do.
    t!(sys::pwrite(fd, b"later", (PAGE + 1000) as u64));
    t!(sys::pwrite(fd, b"later", (2 * PAGE + 1000) as u64));
    check_eq!(
        load(p + PAGE + 1000, 5),
        (PAGE + 1000..PAGE + 1005).map(pat).collect::<Vec<u8>>(),
        "a copied page after write()"
    );
    check_eq!(
        load(p + 2 * PAGE + 1000, 5),
        b"later",
        "an unwritten page after write()"
    );
    // A fork copies the private page as it is.
    let st = t!(in_child_bounded(
        || i32::from(load(p + PAGE + 8, 7) != b"private"),
        20 * SEC
    ));
    check_eq!(st, (0, false), "the child's view of the private page");
    t!(sys::munmap(p, 3 * PAGE));
    t!(sys::munmap(s, 3 * PAGE));
    let _ = sys::close(fd);
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn open_mode_limits_mappings() -> TestResult {
    let path = "/tmp/mm_file_mode";
    let fd = make_file(path, PAGE)?;
    let _ = sys::close(fd);
    let ro = t!(sys::open(path, O_RDONLY | O_CLOEXEC));
    check_eq!(
        map(PAGE, RW, MAP_SHARED, ro, 0),
        Err(EACCES),
        "shared writable of O_RDONLY"
    );
    let r = t!(map(PAGE, PROT_READ, MAP_SHARED, ro, 0));
    check_eq!(peek(r + 7), pat(7));
    check_eq!(
        sys::mprotect(r, PAGE, RW),
        Err(EACCES),
        "mprotect to writable"
    );
    // A private writable mapping of a read-only file is fine: the stores are its own.
    let p = t!(map(PAGE, RW, MAP_PRIVATE, ro, 0));
    poke(p + 7, 0xee);
    check_eq!(peek(r + 7), pat(7));
    let wo = t!(sys::open(path, O_WRONLY | O_CLOEXEC));
    check_eq!(
        map(PAGE, PROT_READ, MAP_SHARED, wo, 0),
        Err(EACCES),
        "O_WRONLY"
    );
    check_eq!(
        map(PAGE, PROT_READ, MAP_PRIVATE, wo, 0),
        Err(EACCES),
        "O_WRONLY private"
    );
    check_eq!(
        map(PAGE, PROT_READ, MAP_SHARED, ro, 100),
        Err(EINVAL),
        "unaligned offset"
    );
    let dir = t!(sys::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    check_eq!(
        map(PAGE, PROT_READ, MAP_PRIVATE, dir, 0),
        Err(ENODEV),
        "a directory"
    );
    t!(sys::munmap(r, PAGE));
    t!(sys::munmap(p, PAGE));
    for fd in [ro, wo, dir] {
        let _ = sys::close(fd);
    }
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn beyond_end_of_file_sigbus() -> TestResult {
    let path = "/tmp/mm_file_eof";
    let size = PAGE + 1904;
    let fd = make_file(path, size)?;
    // Private first: a shared store past EOF stays in the cached page (Linux keeps it until the
    // page is dropped), where a later mapping would see it.
    for flags in [MAP_PRIVATE, MAP_SHARED] {
        let m = t!(map(3 * PAGE, RW, flags, fd, 0));
        shows_pattern(m, 0, 0..size)?;
        // The rest of the last page reads as zero...
        check!(
            load(m + size, 2 * PAGE - size).iter().all(|&b| b == 0),
            "{flags:#x}: tail of the last page"
        );
        // ...and what is stored there does not become part of the file.
        store(m + size + 100, b"tail");
        check_eq!(
            t!(sys::fstat(fd)).st_size as usize,
            size,
            "size after a store past EOF"
        );
        check_eq!(t!(pread_vec(fd, size, 16)).len(), 0, "read at EOF");
        // A page wholly past the end: SIGBUS.
        let (st, f) = t!(fault_in_child(|| {
            peek(m + 2 * PAGE + 24);
        }));
        check!(f.handled, "{flags:#x}: no signal: {}", describe(st));
        check_eq!(
            (f.info.signo, f.info.code),
            (SIGBUS, BUS_ADRERR),
            "{flags:#x}: signal, code"
        );
        check_eq!(f.info.addr(), (m + 2 * PAGE + 24) as u64);
        t!(sys::munmap(m, 3 * PAGE));
    }
    // Truncating a mapped file takes its pages away.
    let m = t!(map(2 * PAGE, RW, MAP_SHARED, fd, 0));
    store(m + PAGE + 5, b"gone");
    t!(sys::ftruncate(fd, PAGE as u64));
    let (st, f) = t!(fault_in_child(|| {
        peek(m + PAGE + 5);
    }));
    check!(
        f.handled && f.info.signo == SIGBUS,
        "after ftruncate: {} {:?}",
        describe(st),
        f.info.signo
    );
    t!(sys::ftruncate(fd, 2 * PAGE as u64));
    check_eq!(
        load(m + PAGE, 16),
        [0u8; 16],
        "the page after growing the file again"
    );
    shows_pattern(m, 0, 0..PAGE)?;
    t!(sys::munmap(m, 2 * PAGE));
    let _ = sys::close(fd);
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn mprotect_and_munmap_part() -> TestResult {
    let path = "/tmp/mm_file_part";
    let fd = make_file(path, 3 * PAGE)?;
    let m = t!(map(3 * PAGE, RW, MAP_SHARED, fd, 0));
    t!(sys::mprotect(m + PAGE, PAGE, PROT_READ));
    store(m + 1, b"zero");
    store(m + 2 * PAGE + 1, b"two");
    check_eq!(t!(pread_vec(fd, 1, 4)), b"zero");
    check_eq!(t!(pread_vec(fd, 2 * PAGE + 1, 3)), b"two");
    shows_pattern(m, 0, PAGE..2 * PAGE)?;
    let (st, f) = t!(fault_in_child(|| poke(m + PAGE + 9, 1)));
    check!(f.handled, "no signal: {}", describe(st));
    check_eq!(
        (f.info.signo, f.info.code),
        (SIGSEGV, SEGV_ACCERR),
        "store to the read-only page"
    );
    check_eq!(peek(m + PAGE + 9), pat(PAGE + 9), "the refused store");
    // Unmapped in the child, after fault_in_child's own mappings are made (one could land
    // in the hole).
    let (st, f) = t!(fault_in_child(|| {
        let _ = sys::munmap(m + PAGE, PAGE);
        peek(m + PAGE + 9);
    }));
    check!(f.handled, "no signal: {}", describe(st));
    check_eq!(
        (f.info.signo, f.info.code),
        (SIGSEGV, SEGV_MAPERR),
        "the unmapped page"
    );
    t!(sys::munmap(m + PAGE, PAGE));
    check_eq!(
        sys::msync(m + PAGE, PAGE, MS_ASYNC),
        Err(ENOMEM),
        "the unmapped page"
    );
    // The pages on either side still show the file.
    t!(sys::pwrite(fd, b"after", (2 * PAGE + 50) as u64));
    check_eq!(load(m + 2 * PAGE + 50, 5), b"after");
    check_eq!(load(m + 1, 4), b"zero");
    t!(sys::munmap(m, 3 * PAGE));
    let _ = sys::close(fd);
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn mremap_keeps_contents() -> TestResult {
    let path = "/tmp/mm_file_mremap";
    let fd = make_file(path, 4 * PAGE)?;
    for flags in [MAP_SHARED, MAP_PRIVATE] {
        // The file's first two pages with an anonymous page right after them, so that growing
        // in place is impossible and the mapping must move.
        let area = t!(sys::mmap_anon(3 * PAGE));
        let m = t!(sys::mmap(area, 2 * PAGE, RW, flags | MAP_FIXED, fd, 0));
        check_eq!(m, area);
        store(m + 10, b"moved");
        check_eq!(
            sys::mremap(m, 2 * PAGE, 4 * PAGE, 0, 0),
            Err(ENOMEM),
            "{flags:#x}: grow without MREMAP_MAYMOVE"
        );
        let n = t!(sys::mremap(m, 2 * PAGE, 4 * PAGE, MREMAP_MAYMOVE, 0));
        check!(n != m, "{flags:#x}: grown in place over the anonymous page");
        check_eq!(load(n + 10, 5), b"moved", "{flags:#x}: a stored page moved");
        shows_pattern(n, 0, 20..4 * PAGE)?;
        if flags == MAP_SHARED {
            store(n + 3 * PAGE + 7, b"grown");
            check_eq!(
                t!(pread_vec(fd, 3 * PAGE + 7, 5)),
                b"grown",
                "a store to a new page"
            );
            t!(sys::pwrite(fd, b"write", (PAGE + 7) as u64));
            check_eq!(load(n + PAGE + 7, 5), b"write", "pwrite after the move");
        }
        // The old place is gone (msync reports unmapped memory as ENOMEM).
        check_eq!(
            sys::msync(m, 2 * PAGE, MS_ASYNC),
            Err(ENOMEM),
            "{flags:#x}: the old address"
        );
        // Shrinking keeps the start.
        let s = t!(sys::mremap(n, 4 * PAGE, PAGE, 0, 0));
        check_eq!(s, n);
        check_eq!(load(s + 10, 5), b"moved");
        t!(sys::munmap(s, PAGE));
        t!(sys::munmap(area + 2 * PAGE, PAGE));
        // Back to the original pattern for the next round.
        let data: Vec<u8> = (0..4 * PAGE).map(pat).collect();
        t!(sys::pwrite(fd, &data, 0));
    }
    let _ = sys::close(fd);
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn initramfs_files_map() -> TestResult {
    let hello = t!(io::read_file("/etc/hello.txt"));
    let fd = t!(sys::open("/etc/hello.txt", O_RDONLY | O_CLOEXEC));
    let m = t!(map(PAGE, PROT_READ, MAP_PRIVATE, fd, 0));
    check_eq!(load(m, hello.len()), hello);
    t!(sys::munmap(m, PAGE));
    let _ = sys::close(fd);
    // A file created in the root directory, shared.
    let path = "/mm_file_root";
    let fd = make_file(path, PAGE + 10)?;
    let m = t!(map(2 * PAGE, RW, MAP_SHARED, fd, 0));
    shows_pattern(m, 0, 0..PAGE + 10)?;
    store(m + PAGE + 2, b"root");
    check_eq!(t!(pread_vec(fd, PAGE, 10))[2..6], *b"root");
    t!(sys::munmap(m, 2 * PAGE));
    let _ = sys::close(fd);
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn code_from_a_mapped_file() -> TestResult {
    let path = "/tmp/mm_file_code";
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
        0o755
    ));
    // mov w0, #42; ret
    let code: [u32; 2] = [0x5280_0540, 0xd65f_03c0];
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    t!(sys::pwrite(fd, &bytes, 64));
    let m = t!(map(PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0));
    let pid = t!(spawn(|| {
        // SAFETY: m + 64 holds the two instructions above, mapped executable; they follow the
        // C calling convention (result in w0, return through x30).
        let f: extern "C" fn() -> i32 = unsafe { core::mem::transmute(m + 64) };
        f()
    }));
    let (st, timed_out) = t!(wait_bounded(pid, 20 * SEC));
    check!(!timed_out);
    check_eq!(
        st,
        42 << 8,
        "the function's result as exit status: {}",
        describe(st)
    );
    t!(sys::munmap(m, PAGE));
    let _ = sys::close(fd);
    t!(sys::unlinkat(AT_FDCWD, path, 0));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        (
            "shared_mapping_and_read_write_agree",
            shared_mapping_and_read_write_agree,
        ),
        ("two_shared_mappings_agree", two_shared_mappings_agree),
        (
            "private_mapping_copies_on_write",
            private_mapping_copies_on_write,
        ),
        ("open_mode_limits_mappings", open_mode_limits_mappings),
        ("beyond_end_of_file_sigbus", beyond_end_of_file_sigbus),
        ("mprotect_and_munmap_part", mprotect_and_munmap_part),
        ("mremap_keeps_contents", mremap_keeps_contents),
        ("initramfs_files_map", initramfs_files_map),
        ("code_from_a_mapped_file", code_from_a_mapped_file),
    ])
}

entry!(main);
