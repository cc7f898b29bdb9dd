//! Memory: brk grows and shrinks, anonymous mmap (zero-filled, MAP_FIXED, munmap), mprotect, and
//! the SIGSEGV codes for unmapped (SEGV_MAPERR) and protected (SEGV_ACCERR) accesses.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::{describe, in_child, wifsignaled, wtermsig};
use svelt_user::sig::{fault_in_child, SEGV_ACCERR, SEGV_MAPERR, SIGSEGV};
use svelt_user::sys::*;
use svelt_user::*;

const PAGE: usize = 4096;

extern "C" {
    static _end: u8;
}

fn peek(addr: usize) -> u8 {
    // SAFETY: the tests read memory they mapped; a faulting read is the point of the test and
    // happens in a child.
    unsafe { core::ptr::read_volatile(addr as *const u8) }
}

fn poke(addr: usize, v: u8) {
    // SAFETY: as in peek.
    unsafe { core::ptr::write_volatile(addr as *mut u8, v) }
}

fn brk_grows_and_shrinks() -> TestResult {
    let start = sys::brk(0);
    let end = core::ptr::addr_of!(_end) as usize;
    check!(start >= end, "brk {start:#x} below the end of bss {end:#x}");
    let grown = sys::brk(start + 3 * PAGE + 5);
    check_eq!(grown, start + 3 * PAGE + 5);
    for a in (start..start + 3 * PAGE).step_by(PAGE) {
        check_eq!(peek(a), 0, "new brk memory is zero");
        poke(a, 0x5a);
        check_eq!(peek(a), 0x5a);
    }
    check_eq!(sys::brk(start), start, "shrink");
    check_eq!(sys::brk(0), start);
    // The released pages are gone: touching them faults.
    let st = t!(in_child(|| {
        poke(start.next_multiple_of(PAGE) + PAGE, 1);
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGSEGV,
        "{}",
        describe(st)
    );
    // Growing again gives zeroed memory.
    check_eq!(sys::brk(start + 2 * PAGE), start + 2 * PAGE);
    check_eq!(peek(start.next_multiple_of(PAGE) + PAGE), 0);
    sys::brk(start);
    Ok(())
}

fn mmap_anonymous_zeroed_rw() -> TestResult {
    let len = 16 * PAGE;
    let p = t!(sys::mmap_anon(len));
    check_eq!(p % PAGE, 0);
    for a in (p..p + len).step_by(PAGE / 2) {
        check_eq!(peek(a), 0);
        poke(a, (a >> 11) as u8);
    }
    for a in (p..p + len).step_by(PAGE / 2) {
        check_eq!(peek(a), (a >> 11) as u8);
    }
    t!(sys::munmap(p, len));
    Ok(())
}

fn mmap_fixed_replaces() -> TestResult {
    let p = t!(sys::mmap_anon(4 * PAGE));
    poke(p + PAGE, 7);
    poke(p + 2 * PAGE, 8);
    let q = t!(sys::mmap(
        p + PAGE,
        PAGE,
        PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
        -1,
        0
    ));
    check_eq!(q, p + PAGE);
    check_eq!(peek(p + PAGE), 0, "MAP_FIXED gives a fresh zero page");
    check_eq!(peek(p + 2 * PAGE), 8, "the neighbour is untouched");
    check_eq!(
        sys::mmap(
            p,
            PAGE,
            PROT_READ,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
            -1,
            0
        ),
        Err(EEXIST)
    );
    t!(sys::munmap(p, 4 * PAGE));
    Ok(())
}

fn mmap_errors() -> TestResult {
    let rw = PROT_READ | PROT_WRITE;
    let anon = MAP_PRIVATE | MAP_ANONYMOUS;
    check_eq!(sys::mmap(0, 0, rw, anon, -1, 0), Err(EINVAL), "length 0");
    check_eq!(
        sys::mmap(0x10_0001, PAGE, rw, anon | MAP_FIXED, -1, 0),
        Err(EINVAL),
        "unaligned MAP_FIXED"
    );
    check_eq!(
        sys::mmap(0, PAGE, rw, MAP_ANONYMOUS, -1, 0),
        Err(EINVAL),
        "neither shared nor private"
    );
    check_eq!(
        sys::mmap(0, PAGE, rw, MAP_PRIVATE, 99, 0),
        Err(EBADF),
        "file mapping of a bad fd"
    );
    check_eq!(sys::munmap(0x10_0001, PAGE), Err(EINVAL));
    check_eq!(sys::mprotect(0x10_0001, PAGE, PROT_READ), Err(EINVAL));
    // No huge pages are reserved (vm.nr_hugepages is 0 on both kernels).
    const MAP_HUGE_2MB: u32 = 21 << 26;
    check_eq!(
        sys::mmap(
            0,
            2 << 20,
            rw,
            anon | svelt_abi::uapi::mm::MAP_HUGETLB | MAP_HUGE_2MB,
            -1,
            0
        ),
        Err(ENOMEM),
        "MAP_HUGETLB without reserved huge pages"
    );
    Ok(())
}

fn munmap_then_access_segv() -> TestResult {
    // A hole between two mapped pages, so that later mappings (the handler's altstack in the
    // child) cannot land there.
    // The page is unmapped inside the child, after the handler's own set-up has mapped
    // what it needs (which could otherwise land in the hole).
    let base = t!(sys::mmap_anon(3 * PAGE));
    let p = base + PAGE;
    let (st, f) = t!(fault_in_child(|| {
        let _ = sys::munmap(p, PAGE);
        peek(p + 8);
    }));
    check!(f.handled, "no SIGSEGV: {}", describe(st));
    check_eq!(f.info.signo, SIGSEGV);
    check_eq!(f.info.code, SEGV_MAPERR);
    check_eq!(f.info.addr(), (p + 8) as u64);
    // Unhandled, the same access kills the process.
    let st = t!(in_child(|| {
        let _ = sys::munmap(p, PAGE);
        peek(p + 8);
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGSEGV,
        "{}",
        describe(st)
    );
    Ok(())
}

fn mprotect_read_only_write_faults() -> TestResult {
    let p = t!(sys::mmap_anon(3 * PAGE));
    poke(p + PAGE + 100, 42);
    t!(sys::mprotect(p + PAGE, PAGE, PROT_READ));
    check_eq!(peek(p + PAGE + 100), 42, "still readable");
    poke(p, 1); // the neighbours keep their protection
    poke(p + 2 * PAGE, 1);
    let (st, f) = t!(fault_in_child(|| poke(p + PAGE + 123, 1)));
    check!(f.handled, "no SIGSEGV: {}", describe(st));
    check_eq!(f.info.signo, SIGSEGV);
    check_eq!(f.info.code, SEGV_ACCERR);
    check_eq!(f.info.addr(), (p + PAGE + 123) as u64);
    check_eq!(f.fault_address, (p + PAGE + 123) as u64);
    // PROT_NONE: reads fault too.
    t!(sys::mprotect(p + PAGE, PAGE, PROT_NONE));
    let (_, f) = t!(fault_in_child(|| {
        peek(p + PAGE);
    }));
    check!(f.handled && f.info.code == SEGV_ACCERR, "{:?}", f.info);
    // And back to read/write.
    t!(sys::mprotect(p + PAGE, PAGE, PROT_READ | PROT_WRITE));
    poke(p + PAGE + 123, 9);
    check_eq!(peek(p + PAGE + 100), 42);
    t!(sys::munmap(p, 3 * PAGE));
    Ok(())
}

fn fork_copies_private_mappings() -> TestResult {
    let p = t!(sys::mmap_anon(PAGE));
    poke(p, 1);
    let st = t!(in_child(|| {
        if peek(p) != 1 {
            return 1;
        }
        poke(p, 2);
        0
    }));
    check_eq!(st, 0, "{}", describe(st));
    check_eq!(peek(p), 1, "the child's write is private");
    let s = t!(sys::mmap_shared(PAGE));
    let st = t!(in_child(|| {
        poke(s, 3);
        0
    }));
    check_eq!(st, 0);
    check_eq!(peek(s), 3, "MAP_SHARED is shared with the child");
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("brk_grows_and_shrinks", brk_grows_and_shrinks),
        ("mmap_anonymous_zeroed_rw", mmap_anonymous_zeroed_rw),
        ("mmap_fixed_replaces", mmap_fixed_replaces),
        ("mmap_errors", mmap_errors),
        ("munmap_then_access_segv", munmap_then_access_segv),
        (
            "mprotect_read_only_write_faults",
            mprotect_read_only_write_faults,
        ),
        ("fork_copies_private_mappings", fork_copies_private_mappings),
    ])
}

entry!(main);
