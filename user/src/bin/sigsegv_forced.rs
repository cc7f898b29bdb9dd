//! The SIGSEGV the kernel forces. A signal frame that cannot be written (bad SP, no alternate
//! stack) is answered with SIGSEGV, si_code SI_KERNEL (Linux's force_sigsegv), which a handler
//! on an alternate stack takes; a SIGSEGV blocked or ignored is unblocked and reset to SIG_DFL
//! (force_sig_info_to_task), and one whose own frame cannot be written kills. A frame
//! rt_sigreturn refuses leaves the task with the frame's registers, x0 = 0 and SIGSEGV at the
//! frame's SP (arm64_notify_segfault: SEGV_ACCERR when some mapping ends above the address, as
//! find_vma answers, else SEGV_MAPERR); a frame refused at a later record keeps what the
//! records before it restored. Each case runs in a child whose SIGSEGV handler, on an alternate
//! stack, records what it saw and exits with 42.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sme;
use svelt_user::sys::SysResult;
use svelt_user::*;

core::arch::global_asm!(
    ".text",
    // kill(x1, x2) with SP = x0; SP comes back from x9 afterwards.
    ".global bad_sp_kill",
    "bad_sp_kill:",
    "    mov x9, sp",
    "    mov sp, x0",
    "    mov x0, x1",
    "    mov x1, x2",
    "    mov x8, #129",
    "    svc #0",
    ".global bad_sp_kill_ret",
    "bad_sp_kill_ret:",
    "    mov sp, x9",
    "    ret",
    // rt_sigreturn with SP = x0 (never returns: the frame there is refused).
    ".global sigreturn_at",
    "sigreturn_at:",
    "    mov sp, x0",
    "    mov x8, #139",
    "    svc #0",
    ".global sigreturn_at_ret",
    "sigreturn_at_ret:",
    "    udf #1",
    ".global never_run",
    "never_run:",
    "    udf #2",
    // A load from address 0.
    ".global load_null",
    "load_null:",
    "    mov x1, #0",
    "    ldr x0, [x1]",
    "    ret",
);

extern "C" {
    fn bad_sp_kill(sp: usize, pid: i32, sig: i32);
    fn bad_sp_kill_ret();
    fn sigreturn_at(sp: usize) -> !;
    fn sigreturn_at_ret();
    fn never_run();
    fn load_null();
}

fn addr(f: unsafe extern "C" fn()) -> u64 {
    f as *const () as u64
}

/// What the SIGSEGV handler saw.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    handled: bool,
    signo: i32,
    code: i32,
    addr: u64,
    x0: u64,
    x1: u64,
    sp: u64,
    pc: u64,
    /// V0 as the SIGSEGV frame's fpsimd_context holds it.
    v0: u128,
    /// The handler ran on the alternate stack.
    on_altstack: bool,
    /// SIGSEGV's sa_handler while the handler runs.
    handler_now: usize,
}

static OUT: AtomicUsize = AtomicUsize::new(0);
static ALT: AtomicUsize = AtomicUsize::new(0);
const ALT_SIZE: usize = 64 * 1024;

extern "C" fn on_segv(sig: i32, info: *mut SigInfo, ucp: *mut u8) {
    let ucx = Ucontext(ucp);
    let here = &sig as *const i32 as usize;
    let alt = ALT.load(Ordering::Relaxed);
    // SAFETY: SA_SIGINFO: the kernel passes a valid siginfo.
    let info = unsafe { *info };
    let s = Seen {
        handled: true,
        signo: info.signo,
        code: info.code,
        addr: info.addr(),
        x0: ucx.reg(0),
        x1: ucx.reg(1),
        sp: ucx.sp(),
        pc: ucx.pc(),
        v0: frame_vreg(ucx, &parse_records(ucx), 0).unwrap_or(0),
        on_altstack: (alt..alt + ALT_SIZE).contains(&here),
        handler_now: sigaction_raw(SIGSEGV, None).map_or(usize::MAX, |a| a.handler),
    };
    // SAFETY: OUT is the shared page `run` set up before forking.
    unsafe { (OUT.load(Ordering::Relaxed) as *mut Seen).write_volatile(s) };
    sys::exit_group(42);
}

extern "C" fn on_usr1_nothing(_sig: i32, _info: *mut SigInfo, _ucp: *mut u8) {}

/// Runs `f` in a child with an alternate stack; `setup` installs the dispositions first.
/// Returns the wait status and what the SIGSEGV handler saw.
fn run(setup: impl FnOnce() -> SysResult<()>, f: impl FnOnce()) -> Result<(i32, Seen), String> {
    let shared = Shared::new(Seen::default());
    OUT.store(shared.addr(), Ordering::Relaxed);
    let st = in_child(|| {
        let stack = sys::mmap_anon(ALT_SIZE).expect("altstack");
        ALT.store(stack, Ordering::Relaxed);
        let ss = StackT {
            sp: stack,
            flags: 0,
            _pad: 0,
            size: ALT_SIZE,
        };
        if sigaltstack(Some(&ss)).is_err() || setup().is_err() {
            return 91;
        }
        f();
        100
    })
    .map_err(|e| format!("fork: {e:?}"))?;
    Ok((st, shared.get()))
}

fn segv_on_altstack() -> SysResult<()> {
    set_handler(SIGSEGV, on_segv, SA_ONSTACK, 0).map(|_| ())
}

fn usr1_handler() -> SysResult<()> {
    set_handler(SIGUSR1, on_usr1_nothing, 0, 0).map(|_| ())
}

/// SPs no frame can be written below: the bottom of the address space, and the top of a
/// PROT_NONE mapping.
fn bad_sps() -> Result<Vec<usize>, String> {
    let flags = sys::MAP_PRIVATE | sys::MAP_ANONYMOUS;
    let none = t!(sys::mmap(0, 64 * 1024, sys::PROT_NONE, flags, -1, 0));
    Ok(vec![0x10, none + 64 * 1024 - 0x100])
}

fn killed_by_segv(st: i32) -> bool {
    wifsignaled(st) && wtermsig(st) == SIGSEGV
}

fn unwritable_frame_sends_sigsegv() -> TestResult {
    for sp in bad_sps()? {
        let (st, s) = run(
            || {
                segv_on_altstack()?;
                usr1_handler()
            },
            || {
                // SAFETY: the SIGSEGV handler exits; the SP is only used by the kernel.
                unsafe { bad_sp_kill(sp, sys::getpid(), SIGUSR1) }
            },
        )?;
        check_eq!(st, 42 << 8, "SP {sp:#x}: child {}", describe(st));
        check!(s.handled);
        check_eq!(
            (s.signo, s.code, s.addr),
            (SIGSEGV, SI_KERNEL, 0),
            "SP {sp:#x}"
        );
        check!(
            s.on_altstack,
            "the SIGSEGV handler ran on the alternate stack"
        );
        // The frame holds the task as it was when SIGUSR1 could not be delivered.
        check_eq!((s.sp, s.pc, s.x0), (sp as u64, addr(bad_sp_kill_ret), 0));
        check_eq!(
            s.handler_now,
            on_segv as *const () as usize,
            "SIGSEGV keeps its handler"
        );
    }
    Ok(())
}

fn unwritable_frame_without_sigsegv_handler_kills() -> TestResult {
    let sp = bad_sps()?[0];
    let (st, s) = run(usr1_handler, || {
        // SAFETY: the child dies of the SIGSEGV.
        unsafe { bad_sp_kill(sp, sys::getpid(), SIGUSR1) }
    })?;
    check!(killed_by_segv(st) && !s.handled, "child {}", describe(st));
    Ok(())
}

fn blocked_or_ignored_sigsegv_kills() -> TestResult {
    let sp = bad_sps()?[0];
    let (st, s) = run(
        || {
            segv_on_altstack()?;
            usr1_handler()?;
            sigprocmask(SIG_BLOCK, Some(bit(SIGSEGV))).map(|_| ())
        },
        // SAFETY: the child dies of the SIGSEGV.
        || unsafe { bad_sp_kill(sp, sys::getpid(), SIGUSR1) },
    )?;
    check!(
        killed_by_segv(st) && !s.handled,
        "blocked: child {}",
        describe(st)
    );
    let (st, s) = run(
        || {
            set_disposition(SIGSEGV, SIG_IGN)?;
            usr1_handler()
        },
        // SAFETY: as above.
        || unsafe { bad_sp_kill(sp, sys::getpid(), SIGUSR1) },
    )?;
    check!(
        killed_by_segv(st) && !s.handled,
        "ignored: child {}",
        describe(st)
    );
    Ok(())
}

fn sigsegv_whose_frame_fails_kills() -> TestResult {
    for sp in bad_sps()? {
        // A handler that would run on the normal stack: its own frame fails.
        let (st, s) = run(
            || set_handler(SIGSEGV, on_segv, 0, 0).map(|_| ()),
            // SAFETY: the child dies of the SIGSEGV.
            || unsafe { bad_sp_kill(sp, sys::getpid(), SIGSEGV) },
        )?;
        check!(
            killed_by_segv(st) && !s.handled,
            "SP {sp:#x}: child {}",
            describe(st)
        );
    }
    Ok(())
}

fn blocked_fault_signal_is_reset_and_kills() -> TestResult {
    // A fault while its signal is blocked: the handler is dropped, the default kills.
    let (st, s) = run(
        || {
            segv_on_altstack()?;
            sigprocmask(SIG_BLOCK, Some(bit(SIGSEGV))).map(|_| ())
        },
        // SAFETY: address 0 is never mapped: the child dies of SIGSEGV.
        || unsafe { load_null() },
    )?;
    check!(killed_by_segv(st) && !s.handled, "child {}", describe(st));
    Ok(())
}

// ---- rt_sigreturn refusing a frame ----

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
enum Edit {
    /// fpsimd_context's magic broken: refused while the records are walked.
    BreakFpsimd,
    /// tpidr2_context of 32 bytes (SME): refused after fpsimd_context was restored.
    Tpidr2Size32,
    /// sve_context at a wrong VL (SVE): refused before anything was restored.
    SveWrongVl,
}

static EDIT: AtomicU32 = AtomicU32::new(0);
/// The SP, pc and x1 the edited frame holds.
static NEW_SP: AtomicUsize = AtomicUsize::new(0);
const NEW_X0: u64 = 0x1234_5678;
const NEW_X1: u64 = 0x5555_aaaa;
const V0: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;

fn edit() -> Edit {
    // SAFETY: EDIT only holds values stored from an Edit.
    unsafe { core::mem::transmute::<u32, Edit>(EDIT.load(Ordering::Relaxed)) }
}

extern "C" fn on_usr1_edit(_sig: i32, _info: *mut SigInfo, ucp: *mut u8) {
    let ucx = Ucontext(ucp);
    ucx.write_u64(uc::SP, NEW_SP.load(Ordering::Relaxed) as u64);
    ucx.set_pc(addr(never_run));
    ucx.write_u64(uc::REGS, NEW_X0);
    ucx.write_u64(uc::REGS + 8, NEW_X1);
    let r = match edit() {
        Edit::BreakFpsimd => {
            ucx.write_u32(uc::RESERVED, 0x1234_5678);
            Ok(())
        }
        Edit::Tpidr2Size32 | Edit::SveWrongVl => (|| {
            let f = sme::parse_frame(ucp)?;
            let mut recs = sme::own_records(&f);
            let m = if edit() == Edit::SveWrongVl {
                SVE_MAGIC
            } else {
                TPIDR2_MAGIC
            };
            let i = recs
                .iter()
                .position(|r| r.magic == m)
                .ok_or_else(|| format!("no {} record", sme::rec_name(m)))?;
            if m == SVE_MAGIC {
                let vl = u16::from_ne_bytes([recs[i].bytes[8], recs[i].bytes[9]]);
                recs[i].set_u16(8, vl ^ 0x30);
            } else {
                recs[i].bytes.resize(32, 0);
            }
            sme::write_frame(&f, &recs)
        })(),
    };
    if let Err(e) = r {
        println!("# handler: {e}");
        sys::exit_group(90);
    }
    // V0 in fpsimd_context (first in __reserved, V0 at +16), written last and through x
    // registers, so that the value is in no vector register when rt_sigreturn runs.
    // SAFETY: inside the frame the kernel built; 8-byte aligned.
    unsafe {
        let v0 = ucp.add(uc::RESERVED + 16) as *mut u64;
        v0.write_volatile(V0 as u64);
        v0.add(1).write_volatile((V0 >> 64) as u64);
    }
}

/// A SIGUSR1 whose handler edits its frame so that rt_sigreturn refuses it, with `new_sp` in
/// the frame.
fn refused_frame(e: Edit, new_sp: usize) -> Result<(i32, Seen), String> {
    EDIT.store(e as u32, Ordering::Relaxed);
    NEW_SP.store(new_sp, Ordering::Relaxed);
    run(
        || {
            segv_on_altstack()?;
            set_handler(SIGUSR1, on_usr1_edit, 0, 0).map(|_| ())
        },
        || {
            let _ = sys::kill(sys::getpid(), SIGUSR1);
        },
    )
}

/// The end of the highest mapping (/proc/self/maps).
fn highest_mapping_end() -> Result<u64, String> {
    if sys::stat("/proc/self/maps").is_err() {
        let _ = sys::mkdirat(sys::AT_FDCWD, "/proc", 0o555);
        let _ = sys::mount("proc", "/proc", "proc", 0);
    }
    let maps = t!(io::read_file("/proc/self/maps"));
    let maps = String::from_utf8_lossy(&maps).into_owned();
    maps.lines()
        .filter_map(|l| l.split_once(' ')?.0.split_once('-'))
        .filter_map(|(_, end)| u64::from_str_radix(end, 16).ok())
        .max()
        .ok_or_else(|| format!("no mappings in /proc/self/maps: {maps:?}"))
}

fn refused_frame_keeps_its_registers() -> TestResult {
    let local = 0u64;
    let on_stack = (&local as *const u64 as usize - 0x1000) & !15;
    let top = highest_mapping_end()?;
    // In a mapping, below every mapping (find_vma finds the first one above), above all.
    let mut cases = vec![(on_stack, SEGV_ACCERR), (0x10, SEGV_ACCERR)];
    if top + 0x1_0000 < 1 << 48 {
        cases.push(((top + 0x1_0000) as usize, SEGV_MAPERR));
    }
    for (sp, code) in cases {
        let (st, s) = refused_frame(Edit::BreakFpsimd, sp)?;
        check_eq!(st, 42 << 8, "new SP {sp:#x}: child {}", describe(st));
        check_eq!(
            (s.signo, s.code, s.addr),
            (SIGSEGV, code, sp as u64),
            "SIGSEGV at the frame's SP {sp:#x}"
        );
        check_eq!(
            (s.x0, s.x1, s.sp, s.pc),
            (0, NEW_X1, sp as u64, addr(never_run)),
            "x0 is rt_sigreturn's 0, the rest the frame's"
        );
    }
    Ok(())
}

fn refused_sigreturn_sp_itself() -> TestResult {
    // A misaligned SP, and one outside user space: nothing is read, SIGSEGV at that SP.
    let junk = t!(sys::mmap_anon(64 * 1024)) + 32 * 1024;
    for (sp, code) in [
        (junk + 8, SEGV_ACCERR),
        (0xffff_8000_0000_0000usize, SEGV_MAPERR),
    ] {
        let (st, s) = run(segv_on_altstack, || {
            // SAFETY: the SIGSEGV handler exits.
            unsafe { sigreturn_at(sp) }
        })?;
        check_eq!(st, 42 << 8, "SP {sp:#x}: child {}", describe(st));
        check_eq!(
            (s.signo, s.code, s.addr),
            (SIGSEGV, code, sp as u64),
            "SP {sp:#x}"
        );
        check_eq!((s.x0, s.sp, s.pc), (0, sp as u64, addr(sigreturn_at_ret)));
    }
    Ok(())
}

fn refused_record_keeps_what_came_before() -> TestResult {
    let sp = (sys::mmap_anon(64 * 1024).map_err(|e| format!("mmap: {e:?}"))? + 32 * 1024) & !15;
    let mut ran = false;
    if sme::has_sme() {
        // fpsimd_context was restored before tpidr2_context was refused: V0 is the frame's.
        let (st, s) = refused_frame(Edit::Tpidr2Size32, sp)?;
        check_eq!(st, 42 << 8, "tpidr2: child {}", describe(st));
        check_eq!((s.code, s.addr), (SEGV_ACCERR, sp as u64));
        check_eq!(s.v0, V0, "V0 restored before the bad tpidr2_context");
        ran = true;
    }
    if sme::has_sve() {
        // A bad sve_context is refused before the FP registers are touched.
        let (st, s) = refused_frame(Edit::SveWrongVl, sp)?;
        check_eq!(st, 42 << 8, "sve: child {}", describe(st));
        check_eq!((s.code, s.addr), (SEGV_ACCERR, sp as u64));
        check!(
            s.v0 != V0,
            "V0 not restored from a frame refused at sve_context"
        );
        ran = true;
    }
    if !ran {
        return skip("neither SVE nor SME");
    }
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        (
            "unwritable_frame_sends_sigsegv",
            unwritable_frame_sends_sigsegv,
        ),
        (
            "unwritable_frame_without_sigsegv_handler_kills",
            unwritable_frame_without_sigsegv_handler_kills,
        ),
        (
            "blocked_or_ignored_sigsegv_kills",
            blocked_or_ignored_sigsegv_kills,
        ),
        (
            "sigsegv_whose_frame_fails_kills",
            sigsegv_whose_frame_fails_kills,
        ),
        (
            "blocked_fault_signal_is_reset_and_kills",
            blocked_fault_signal_is_reset_and_kills,
        ),
        (
            "refused_frame_keeps_its_registers",
            refused_frame_keeps_its_registers,
        ),
        ("refused_sigreturn_sp_itself", refused_sigreturn_sp_itself),
        (
            "refused_record_keeps_what_came_before",
            refused_record_keeps_what_came_before,
        ),
    ])
}

entry!(main);
