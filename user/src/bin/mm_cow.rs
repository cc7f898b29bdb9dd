//! fork's copy of memory, as a program sees it: after fork, writes to private memory (anonymous
//! pages, a page deep in a big region, pages never touched, brk, the stack, .data and .bss) stay
//! with the writer on both sides, down to grandchildren; MAP_SHARED anonymous memory is seen by
//! both; vfork children and threads share everything; and fork does not need a copy of what it
//! shares (a process holding a quarter of RAM forks six children at once).
#![no_std]
#![no_main]

use svelt_user::ktap::{self, TestResult};
use svelt_user::proc::{self, describe, in_child_bounded, spawn, wait_bounded, Shared};
use svelt_user::sys::*;
use svelt_user::*;

const PAGE: usize = 4096;
const MIB: usize = 1 << 20;
const SEC: u64 = 1_000_000_000;

fn get(addr: usize) -> u64 {
    // SAFETY: the tests pass addresses of mapped, 8-aligned words they own.
    unsafe { core::ptr::read_volatile(addr as *const u64) }
}

fn set(addr: usize, v: u64) {
    // SAFETY: as in get.
    unsafe { core::ptr::write_volatile(addr as *mut u64, v) }
}

/// One byte through a pipe, as a step of a conversation between parent and child.
fn signal(fd: i32) {
    let _ = sys::write(fd, b"!");
}

fn wait_for(fd: i32) -> bool {
    let mut b = [0u8; 1];
    loop {
        match sys::read(fd, &mut b) {
            Ok(1) => return true,
            Err(EINTR) => {}
            _ => return false,
        }
    }
}

/// A conversation with a forked child about the word at `addr`:
/// the parent stores 1 and forks; the child sees 1, stores 2 and tells the parent; the parent
/// still sees 1 (`shared`: sees 2), stores 3 and tells the child; the child still sees 2
/// (`shared`: sees 3).
fn converse(addr: usize, shared: bool) -> TestResult {
    let [to_parent_r, to_parent_w] = t!(sys::pipe2(O_CLOEXEC));
    let [to_child_r, to_child_w] = t!(sys::pipe2(O_CLOEXEC));
    set(addr, 1);
    let pid = t!(spawn(|| {
        if get(addr) != 1 {
            return 10;
        }
        set(addr, 2);
        signal(to_parent_w);
        if !wait_for(to_child_r) {
            return 11;
        }
        match (get(addr), shared) {
            (2, false) | (3, true) => 0,
            (3, false) => 12,
            _ => 13,
        }
    }));
    let seen = if wait_for(to_parent_r) {
        Some(get(addr))
    } else {
        None
    };
    set(addr, 3);
    signal(to_child_w);
    let (st, timed_out) = t!(wait_bounded(pid, 60 * SEC));
    for fd in [to_parent_r, to_parent_w, to_child_r, to_child_w] {
        let _ = sys::close(fd);
    }
    check!(!timed_out, "the child hung");
    let want = if shared { 2 } else { 1 };
    check_eq!(
        seen,
        Some(want),
        "the parent's word after the child's store"
    );
    let why = match proc::wexitstatus(st) {
        10 => "the child did not see the parent's word from before the fork",
        11 => "the conversation broke",
        12 => "the child saw the parent's store after the fork",
        13 => "the child's word changed",
        _ => "",
    };
    check_eq!(st, 0, "child: {} {why}", describe(st));
    check_eq!(get(addr), 3, "the parent's own store");
    Ok(())
}

fn private_anonymous_page() -> TestResult {
    let p = t!(sys::mmap_anon(PAGE));
    converse(p + 64, false)?;
    t!(sys::munmap(p, PAGE));
    Ok(())
}

fn page_deep_in_big_region() -> TestResult {
    let len = 64 * MIB;
    let p = t!(sys::mmap_anon(len));
    // Touch the region around it, so that the word's page is one of many present ones.
    for a in (p..p + len).step_by(64 * PAGE) {
        set(a, 9);
    }
    converse(p + 37 * MIB + 8, false)?;
    t!(sys::munmap(p, len));
    Ok(())
}

fn untouched_pages_stay_private() -> TestResult {
    // Never written before the fork: both sides start from zero pages.
    let p = t!(sys::mmap_anon(16 * PAGE));
    let st = t!(in_child_bounded(
        || {
            for a in (p..p + 16 * PAGE).step_by(PAGE) {
                if get(a) != 0 {
                    return 1;
                }
                set(a, 0xc0ffee);
            }
            0
        },
        60 * SEC
    ));
    check_eq!(st, (0, false), "child");
    for a in (p..p + 16 * PAGE).step_by(PAGE) {
        check_eq!(get(a), 0, "page {:#x} after the child's store", a - p);
    }
    // And the other way round: the parent's stores after the fork are not the child's.
    let [r, w] = t!(sys::pipe2(O_CLOEXEC));
    let q = t!(sys::mmap_anon(16 * PAGE));
    let pid = t!(spawn(|| {
        if !wait_for(r) {
            return 2;
        }
        for a in (q..q + 16 * PAGE).step_by(PAGE) {
            if get(a) != 0 {
                return 1;
            }
        }
        0
    }));
    for a in (q..q + 16 * PAGE).step_by(PAGE) {
        set(a, 5);
    }
    signal(w);
    let st = t!(wait_bounded(pid, 60 * SEC));
    let _ = (sys::close(r), sys::close(w));
    check_eq!(
        st,
        (0, false),
        "child saw the parent's stores: {}",
        describe(st.0)
    );
    t!(sys::munmap(p, 16 * PAGE));
    t!(sys::munmap(q, 16 * PAGE));
    Ok(())
}

fn brk_memory() -> TestResult {
    let start = sys::brk(0);
    let end = start + 4 * PAGE;
    check_eq!(sys::brk(end), end);
    let word = start.next_multiple_of(PAGE) + PAGE + 16;
    let r = converse(word, false);
    sys::brk(start);
    r
}

fn stack_word() -> TestResult {
    let mut slot = [0u64; 4];
    let addr = slot.as_mut_ptr() as usize + 8;
    converse(addr, false)?;
    // The compiler must not assume the array is unchanged.
    check_eq!(get(addr), 3);
    check_eq!(core::hint::black_box(&mut slot)[0], 0);
    Ok(())
}

static mut DATA_WORD: [u64; 2] = [0x1234, 0x5678];
static mut BSS_WORD: [u64; 2] = [0, 0];

fn data_and_bss() -> TestResult {
    converse(core::ptr::addr_of_mut!(DATA_WORD) as usize + 8, false)?;
    converse(core::ptr::addr_of_mut!(BSS_WORD) as usize, false)
}

fn shared_anonymous_seen_by_both() -> TestResult {
    let p = t!(sys::mmap_shared(4 * PAGE));
    converse(p + 2 * PAGE, true)?;
    t!(sys::munmap(p, 4 * PAGE));
    Ok(())
}

/// MemTotal from /proc/meminfo, in bytes.
fn mem_total() -> Option<usize> {
    let text = io::read_file("/proc/meminfo").ok()?;
    let text = core::str::from_utf8(&text).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn whole_region_copy() -> TestResult {
    // A child rewrites every page of a 64 MiB region while the parent rewrites every page too:
    // each ends with exactly its own contents.
    let len = 64 * MIB;
    // Two copies and the rest of the suite's room: not in QEMU's default 128 MiB, where the
    // OOM killer would end one side.
    match mem_total() {
        Some(total) if total < 4 * len => {
            return ktap::skip(&format!(
                "needs 256 MiB of RAM for two 64 MiB copies; MemTotal is {} MiB",
                total / MIB
            ))
        }
        _ => {}
    }
    let p = t!(sys::mmap_anon(len));
    for (i, a) in (p..p + len).step_by(PAGE).enumerate() {
        set(a, i as u64);
    }
    let [r, w] = t!(sys::pipe2(O_CLOEXEC));
    let pid = t!(spawn(|| {
        for (i, a) in (p..p + len).step_by(PAGE).enumerate() {
            if get(a) != i as u64 {
                return 1;
            }
            set(a, !(i as u64));
        }
        if !wait_for(r) {
            return 2;
        }
        for (i, a) in (p..p + len).step_by(PAGE).enumerate() {
            if get(a) != !(i as u64) {
                return 3;
            }
        }
        0
    }));
    for (i, a) in (p..p + len).step_by(PAGE).enumerate() {
        set(a + 8, i as u64 * 3);
    }
    signal(w);
    let st = t!(wait_bounded(pid, 60 * SEC));
    let _ = (sys::close(r), sys::close(w));
    check_eq!(
        st,
        (0, false),
        "child (1: saw a wrong value, 3: its values changed)"
    );
    for (i, a) in (p..p + len).step_by(PAGE).enumerate() {
        check_eq!(get(a), i as u64, "page {i}: the child's store leaked");
        check_eq!(get(a + 8), i as u64 * 3, "page {i}: the parent's own store");
    }
    t!(sys::munmap(p, len));
    Ok(())
}

fn grandchildren() -> TestResult {
    let p = t!(sys::mmap_anon(PAGE));
    set(p, 1);
    let st = t!(in_child_bounded(
        || {
            set(p, 2);
            let st = match proc::in_child(|| {
                if get(p) != 2 {
                    return 1;
                }
                set(p, 3);
                0
            }) {
                Ok(st) => st,
                Err(_) => return 2,
            };
            if st != 0 {
                return 3;
            }
            if get(p) != 2 {
                return 4;
            }
            0
        },
        60 * SEC
    ));
    check_eq!(
        st,
        (0, false),
        "child (3: grandchild failed, 4: its store leaked)"
    );
    check_eq!(get(p), 1);
    t!(sys::munmap(p, PAGE));
    Ok(())
}

fn child_mprotect_is_its_own() -> TestResult {
    let p = t!(sys::mmap_anon(2 * PAGE));
    set(p, 1);
    let st = t!(in_child_bounded(
        || {
            if sys::mprotect(p, PAGE, PROT_READ).is_err() || sys::munmap(p + PAGE, PAGE).is_err() {
                return 1;
            }
            0
        },
        60 * SEC
    ));
    check_eq!(st, (0, false));
    // Still writable here, and the second page still mapped.
    set(p, 2);
    set(p + PAGE, 3);
    check_eq!((get(p), get(p + PAGE)), (2, 3));
    t!(sys::munmap(p, 2 * PAGE));
    Ok(())
}

fn vfork_shares_memory() -> TestResult {
    let p = t!(sys::mmap_anon(PAGE));
    set(p, 1);
    let pid = t!(proc::vfork_store(p as *mut u64, 0xabcd, 0));
    let st = t!(wait_bounded(pid, 60 * SEC));
    check_eq!(st, (0, false));
    check_eq!(get(p), 0xabcd, "the vfork child's store");
    t!(sys::munmap(p, PAGE));
    Ok(())
}

extern "C" fn thread_store(addr: usize) -> i32 {
    set(addr, 0x7777);
    0
}

fn threads_share_memory() -> TestResult {
    let p = t!(sys::mmap_anon(PAGE));
    set(p, 1);
    let th = t!(proc::spawn_thread(thread_store, p, 0));
    th.join();
    check_eq!(get(p), 0x7777, "the thread's store");
    // A fork after the thread's store copies what the thread wrote.
    let st = t!(in_child_bounded(|| i32::from(get(p) != 0x7777), 60 * SEC));
    check_eq!(st, (0, false), "the child's view of the thread's store");
    t!(sys::munmap(p, PAGE));
    Ok(())
}

fn fork_shares_until_written() -> TestResult {
    // A process with a quarter of RAM written forks six children that live at the same time:
    // 1.75 times RAM if fork copied, a few page tables if it shares. Each child reads its pages
    // and writes one. A quarter of what this machine has (a board's 128 MiB as well as 1 GiB).
    let len = mem_total().map_or(256 * MIB, |t| (t / 4) & !(MIB - 1));
    let children = 6;
    let res = Shared::new(0u64);
    let st = t!(in_child_bounded(
        || {
            let Ok(p) = sys::mmap_anon(len) else {
                return 1;
            };
            for (i, a) in (p..p + len).step_by(PAGE).enumerate() {
                set(a, i as u64);
            }
            let Ok([r, w]) = sys::pipe2(O_CLOEXEC) else {
                return 2;
            };
            let mut pids = Vec::new();
            for c in 0..children {
                match spawn(|| {
                    if !wait_for(r) {
                        return 1;
                    }
                    for (i, a) in (p..p + len).step_by(64 * PAGE).enumerate() {
                        if get(a) != (i * 64) as u64 {
                            return 2;
                        }
                    }
                    set(p + c * PAGE, 99);
                    0
                }) {
                    Ok(pid) => pids.push(pid),
                    Err(e) => {
                        res.set(e.0 as u64);
                        // The ones made wait on the pipe, which this process keeps open.
                        for &pid in &pids {
                            let _ = sys::kill(pid, svelt_user::sig::SIGKILL);
                            let _ = sys::waitpid(pid, 0);
                        }
                        return 3;
                    }
                }
            }
            for _ in 0..children {
                signal(w);
            }
            let mut bad = 0;
            for pid in pids {
                match sys::waitpid(pid, 0) {
                    Ok((_, 0)) => {}
                    _ => bad += 1,
                }
            }
            if bad != 0 {
                return 4;
            }
            for c in 0..children {
                if get(p + c * PAGE) != c as u64 {
                    return 5;
                }
            }
            0
        },
        60 * SEC
    ));
    check_eq!(
        st,
        (0, false),
        "{} (3: fork failed with {:?}, 4: a child failed, 5: a child's store leaked)",
        describe(st.0),
        Errno(res.get() as i32)
    );
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("private_anonymous_page", private_anonymous_page),
        ("page_deep_in_big_region", page_deep_in_big_region),
        ("untouched_pages_stay_private", untouched_pages_stay_private),
        ("brk_memory", brk_memory),
        ("stack_word", stack_word),
        ("data_and_bss", data_and_bss),
        (
            "shared_anonymous_seen_by_both",
            shared_anonymous_seen_by_both,
        ),
        ("whole_region_copy", whole_region_copy),
        ("grandchildren", grandchildren),
        ("child_mprotect_is_its_own", child_mprotect_is_its_own),
        ("vfork_shares_memory", vfork_shares_memory),
        ("threads_share_memory", threads_share_memory),
        ("fork_shares_until_written", fork_shares_until_written),
    ])
}

entry!(main);
