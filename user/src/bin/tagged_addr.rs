//! arm64's tagged address ABI: PR_SET/GET_TAGGED_ADDR_CTRL (flags, argument checks, inheritance
//! over fork, reset by execve), syscalls taking a pointer with a tag in bits 56-63 only once it
//! is enabled (EFAULT before), and EL0 accesses through a tagged pointer faulting pages in.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig;
use svelt_user::sys::{self, *};
use svelt_user::*;

const SELF: &str = "/bin/tests/tagged_addr";
const PR_SET_TAGGED_ADDR_CTRL: usize = 55;
const PR_GET_TAGGED_ADDR_CTRL: usize = 56;
const PR_TAGGED_ADDR_ENABLE: usize = 1;
const NR_PRCTL: usize = 167;

fn prctl(op: usize, a2: usize, a3: usize) -> SysResult {
    sys::syscall(NR_PRCTL, &[op, a2, a3, 0, 0])
}

fn tag(p: usize, t: u8) -> usize {
    p | (t as usize) << 56
}

fn prctl_rules() -> TestResult {
    let st = t!(in_child(|| {
        let r = (|| -> TestResult {
            check_eq!(prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0), Ok(0));
            check_eq!(
                prctl(PR_SET_TAGGED_ADDR_CTRL, 2, 0),
                Err(EINVAL),
                "unknown flag"
            );
            check_eq!(
                prctl(PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE, 1),
                Err(EINVAL),
                "arg3 set"
            );
            check_eq!(
                prctl(PR_GET_TAGGED_ADDR_CTRL, 1, 0),
                Err(EINVAL),
                "arg2 set"
            );
            check_eq!(
                prctl(PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE, 0),
                Ok(0)
            );
            check_eq!(
                prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0),
                Ok(PR_TAGGED_ADDR_ENABLE)
            );
            // A fork keeps it; an execve drops it.
            let st = t!(in_child(|| match prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0) {
                Ok(1) => 0,
                _ => 1,
            }));
            check_eq!(describe(st), "exited 0", "forked child's setting");
            let st = t!(in_child(|| {
                let e = sys::execve(SELF, &[SELF, "--get"], &[]);
                println!("# execve: {e:?}");
                9
            }));
            check_eq!(
                describe(st),
                "exited 0",
                "setting after execve (exit 0: off)"
            );
            check_eq!(prctl(PR_SET_TAGGED_ADDR_CTRL, 0, 0), Ok(0));
            check_eq!(prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0), Ok(0));
            Ok(())
        })();
        ktap::child_status("child", r)
    }));
    check_eq!(describe(st), "exited 0");
    Ok(())
}

fn syscalls_take_tagged_pointers() -> TestResult {
    let st = t!(in_child(|| {
        let r = (|| -> TestResult {
            let page = t!(sys::mmap_anon(4096));
            let [rd, wr] = t!(sys::pipe2(0));
            t!(sys::write(wr, b"tagged"));
            // Off: a tagged pointer is not a user address.
            let tagged = tag(page, 0x5a);
            let r = sys::syscall(nr_read(), &[rd as usize, tagged, 6]);
            check_eq!(r, Err(EFAULT), "read into a tagged buffer, ABI off");
            t!(prctl(PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE, 0));
            // On: the page is not touched yet, so the copy faults it in through the tag.
            let r = sys::syscall(nr_read(), &[rd as usize, tagged, 6]);
            check_eq!(r, Ok(6), "read into a tagged buffer, ABI on");
            // SAFETY: `page` is a fresh 4 KiB anonymous mapping of ours.
            let got = unsafe { core::slice::from_raw_parts(page as *const u8, 6) };
            check_eq!(got, b"tagged");
            // A kernel address stays one, tag or not.
            let r = sys::syscall(nr_read(), &[rd as usize, 0xffff_0000_0000_1000, 1]);
            check_eq!(r, Err(EFAULT), "kernel address");
            Ok(())
        })();
        ktap::child_status("child", r)
    }));
    check_eq!(describe(st), "exited 0");
    Ok(())
}

fn nr_read() -> usize {
    63
}

fn el0_access_through_a_tag() -> TestResult {
    let page = t!(sys::mmap_anon(8192));
    // The second page is untouched: the store faults it in at its untagged address.
    let p = tag(page + 4096, 0xa5) as *mut u64;
    // SAFETY: the MMU ignores the top byte (TBI0), so this is the mapping's second page.
    unsafe { core::ptr::write_volatile(p, 0x1234_5678) };
    // SAFETY: the same page, untagged.
    let v = unsafe { core::ptr::read_volatile((page + 4096) as *const u64) };
    check_eq!(v, 0x1234_5678);
    t!(sys::munmap(page, 8192));
    Ok(())
}

static WANT_ADDR: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_segv(_: i32, info: *mut sig::SigInfo, _: *mut u8) {
    // SAFETY: SA_SIGINFO handler: the kernel passes a valid siginfo.
    let got = unsafe { (*info).addr() };
    let want = WANT_ADDR.load(Ordering::SeqCst);
    if got != want {
        println!("# si_addr {got:#x}, expected {want:#x}");
    }
    // The faulting load would run again: the verdict is the exit status.
    sys::exit(i32::from(got != want));
}

const SA_EXPOSE_TAGBITS: u64 = 0x800;

/// A load from `addr` faults, and the SIGSEGV handler (SA_SIGINFO with `flags`) is given
/// `want` as si_addr.
fn fault_reports(addr: usize, flags: u64, want: usize) -> TestResult {
    let st = t!(in_child(move || {
        WANT_ADDR.store(want as u64, Ordering::SeqCst);
        if sig::set_handler(sig::SIGSEGV, on_segv, flags, 0).is_err() {
            return 2;
        }
        // SAFETY: the load faults; the handler ends the process.
        unsafe { core::ptr::read_volatile(addr as *const u64) };
        3
    }));
    check_eq!(
        describe(st),
        "exited 0",
        "load from {addr:#x}, sa_flags +{flags:#x}"
    );
    Ok(())
}

/// si_addr of a fault through a tagged pointer: the handler sees the address without its tag
/// unless it asked for the tag bits (SA_EXPOSE_TAGBITS); an address with bit 55 set (never a
/// user address) keeps its top byte either way, as arm64 Linux's untagged_addr leaves it.
fn fault_si_addr_and_tags() -> TestResult {
    // Unmapped: below every mapping a static program has.
    let hole = 0x10_0000usize;
    fault_reports(tag(hole, 0x2a), 0, hole)?;
    fault_reports(tag(hole, 0x2a), SA_EXPOSE_TAGBITS, tag(hole, 0x2a))?;
    fault_reports(0x918c_0000_dead_0000, 0, 0x918c_0000_dead_0000)?;
    fault_reports(
        0x918c_0000_dead_0000,
        SA_EXPOSE_TAGBITS,
        0x918c_0000_dead_0000,
    )?;
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--get") {
        return match prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0) {
            Ok(0) => 0,
            _ => 1,
        };
    }
    ktap::run(&[
        ("prctl_rules", prctl_rules),
        (
            "syscalls_take_tagged_pointers",
            syscalls_take_tagged_pointers,
        ),
        ("el0_access_through_a_tag", el0_access_through_a_tag),
        ("fault_si_addr_and_tags", fault_si_addr_and_tags),
    ])
}

entry!(main);
