//! Synchronous faults as signals: null dereference (SEGV_MAPERR, si_addr 0), misaligned PC and
//! SP and an unaligned exclusive load (SIGBUS BUS_ADRALN), `udf` (SIGILL ILL_ILLOPC at the pc),
//! `brk #0` (SIGTRAP); the records of the signal frame (fpsimd_context first, esr_context for
//! data aborts, terminator), and a garbage rt_sigreturn killing only its caller.
#![no_std]
#![no_main]

use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::*;

core::arch::global_asm!(
    ".text",
    ".global fault_null",
    "fault_null:",
    "    mov x1, #0",
    ".global fault_null_insn",
    "fault_null_insn:",
    "    ldr x0, [x1]",
    "    ret",
    ".global fault_udf",
    "fault_udf:",
    ".global fault_udf_insn",
    "fault_udf_insn:",
    "    udf #0",
    "    ret",
    ".global fault_brk",
    "fault_brk:",
    ".global fault_brk_insn",
    "fault_brk_insn:",
    "    brk #0",
    "    ret",
    ".global fault_pc",
    "fault_pc:",
    "    adr x1, 1f",
    "    add x1, x1, #2",
    "    br x1",
    "1:  ret",
    // Misaligned SP used as a base register: SP alignment fault.
    ".global fault_sp",
    "fault_sp:",
    "    mov x2, sp",
    "    sub x1, x2, #20",
    "    mov sp, x1",
    ".global fault_sp_insn",
    "fault_sp_insn:",
    "    ldr x0, [sp]",
    "    mov sp, x2",
    "    ret",
    // Load-exclusive from an unaligned address (x0).
    ".global fault_ldxr",
    "fault_ldxr:",
    "    add x0, x0, #1",
    ".global fault_ldxr_insn",
    "fault_ldxr_insn:",
    "    ldxr x1, [x0]",
    "    ret",
    // rt_sigreturn with SP at junk (x0).
    ".global bad_sigreturn",
    "bad_sigreturn:",
    "    mov sp, x0",
    "    mov x8, #139",
    "    svc #0",
    "    ret",
);

extern "C" {
    fn fault_null();
    fn fault_null_insn();
    fn fault_udf();
    fn fault_udf_insn();
    fn fault_brk();
    fn fault_brk_insn();
    fn fault_pc();
    fn fault_sp();
    fn fault_sp_insn();
    fn fault_ldxr(addr: usize);
    fn fault_ldxr_insn();
    fn bad_sigreturn(sp: usize);
}

fn addr(f: unsafe extern "C" fn()) -> u64 {
    f as *const () as u64
}

fn show(what: &str, f: &Fault) {
    println!(
        "# {what}: signo {} code {} addr {:#x} pc {:#x} fault_address {:#x} esr {:?} records {}",
        f.info.signo,
        f.info.code,
        f.info.addr(),
        f.pc,
        f.fault_address,
        f.records.esr.map(|e| format!("{e:#x}")),
        f.records.count
    );
}

/// Every frame: fpsimd_context first in __reserved with size 528, known records, a terminator.
fn check_records(f: &Fault) -> TestResult {
    let r = &f.records;
    check_eq!(
        r.fpsimd,
        Some((0, 528)),
        "fpsimd_context at the start of __reserved"
    );
    check!(
        r.unknown.is_none(),
        "unknown or malformed record {:#x?}",
        r.unknown
    );
    check!(r.terminated, "no terminator record");
    check!(!r.extra, "extra_context in a small frame");
    Ok(())
}

fn run(what: &str, f: impl FnOnce()) -> Result<Fault, String> {
    let (st, fault) = fault_in_child(f).map_err(|e| format!("fork: {e:?}"))?;
    if !fault.handled {
        return Err(format!("{what}: no signal; child {}", describe(st)));
    }
    show(what, &fault);
    Ok(fault)
}

fn null_dereference() -> TestResult {
    // SAFETY: faults on purpose, in a child.
    let f = run("null", || unsafe { fault_null() })?;
    check_eq!(f.info.signo, SIGSEGV);
    check_eq!(f.info.code, SEGV_MAPERR);
    check_eq!(f.info.addr(), 0);
    check_eq!(f.fault_address, 0);
    check_eq!(f.pc, addr(fault_null_insn));
    check_records(&f)?;
    let esr = f.records.esr.ok_or("no esr_context for a data abort")?;
    check_eq!(esr >> 26, 0x24, "EC: data abort from a lower EL");
    check_eq!(esr & (1 << 6), 0, "WnR: a read");
    Ok(())
}

fn undefined_instruction() -> TestResult {
    // SAFETY: faults on purpose, in a child.
    let f = run("udf", || unsafe { fault_udf() })?;
    check_eq!(f.info.signo, SIGILL);
    check_eq!(f.info.code, ILL_ILLOPC);
    check_eq!(f.info.addr(), addr(fault_udf_insn));
    check_eq!(f.pc, addr(fault_udf_insn));
    check_records(&f)?;
    check_eq!(
        f.records.esr,
        None,
        "no esr_context for an undefined instruction"
    );
    Ok(())
}

fn breakpoint() -> TestResult {
    // SAFETY: traps on purpose, in a child.
    let f = run("brk", || unsafe { fault_brk() })?;
    check_eq!(f.info.signo, SIGTRAP);
    check_eq!(f.info.code, TRAP_BRKPT);
    check_eq!(f.info.addr(), addr(fault_brk_insn));
    check_eq!(f.pc, addr(fault_brk_insn));
    check_records(&f)?;
    Ok(())
}

fn misaligned_pc() -> TestResult {
    // SAFETY: faults on purpose, in a child.
    let f = run("pc", || unsafe { fault_pc() })?;
    check_eq!(f.info.signo, SIGBUS);
    check_eq!(f.info.code, BUS_ADRALN);
    check_eq!(f.info.addr() % 4, 2, "si_addr is the misaligned pc");
    check_eq!(f.pc, f.info.addr());
    check_records(&f)?;
    let esr = f
        .records
        .esr
        .ok_or("no esr_context for a PC alignment fault")?;
    check_eq!(esr >> 26, 0x22, "EC: PC alignment fault");
    Ok(())
}

/// Like `run`, but a missing signal is a skip: QEMU's TCG does not implement the SP alignment
/// check (SCTLR_EL1.SA0) nor alignment faults for exclusives, so under QEMU Linux never sees
/// these faults; on hardware it does.
fn run_or_skip(what: &str, f: impl FnOnce()) -> Result<Option<Fault>, String> {
    let (st, fault) = fault_in_child(f).map_err(|e| format!("fork: {e:?}"))?;
    if !fault.handled {
        println!(
            "# {what}: no fault (child {}): not enforced by this CPU",
            describe(st)
        );
        return Ok(None);
    }
    show(what, &fault);
    Ok(Some(fault))
}

fn misaligned_sp() -> TestResult {
    // SAFETY: faults on purpose, in a child; the handler runs on the alternate stack.
    let Some(f) = run_or_skip("sp", || unsafe { fault_sp() })? else {
        return skip("the CPU does not check SP alignment");
    };
    check_eq!(f.info.signo, SIGBUS);
    check_eq!(f.info.code, BUS_ADRALN);
    check_eq!(f.pc, addr(fault_sp_insn));
    check_eq!(f.sp % 16, 12, "the interrupted SP is the misaligned one");
    check_eq!(f.info.addr(), f.sp, "si_addr is the SP");
    check_records(&f)?;
    Ok(())
}

fn unaligned_exclusive() -> TestResult {
    let buf = [0u64; 4];
    let p = buf.as_ptr() as usize;
    // SAFETY: faults on purpose, in a child.
    let Some(f) = run_or_skip("ldxr", || unsafe { fault_ldxr(p) })? else {
        return skip("the CPU does not fault unaligned exclusives");
    };
    check_eq!(f.info.signo, SIGBUS);
    check_eq!(f.info.code, BUS_ADRALN);
    check_eq!(f.info.addr(), (p + 1) as u64);
    check_eq!(f.pc, addr(fault_ldxr_insn));
    check_records(&f)?;
    let esr = f
        .records
        .esr
        .ok_or("no esr_context for an alignment fault")?;
    check_eq!(esr >> 26, 0x24, "EC: data abort from a lower EL");
    check_eq!(esr & 0x3f, 0x21, "DFSC: alignment fault");
    Ok(())
}

fn fault_without_handler_kills() -> TestResult {
    // SAFETY: each child faults on purpose.
    let cases: [(&str, fn(), i32); 3] = [
        ("null", || unsafe { fault_null() }, SIGSEGV),
        ("udf", || unsafe { fault_udf() }, SIGILL),
        ("brk", || unsafe { fault_brk() }, SIGTRAP),
    ];
    for (what, f, sig) in cases {
        let st = t!(in_child(|| {
            f();
            0
        }));
        check!(
            wifsignaled(st) && wtermsig(st) == sig,
            "{what}: {}",
            describe(st)
        );
    }
    Ok(())
}

fn garbage_sigreturn_kills_caller() -> TestResult {
    let junk = t!(svelt_user::sys::mmap_anon(16 * 4096));
    // SAFETY: junk is a fresh 64 KiB read/write mapping.
    unsafe { core::ptr::write_bytes(junk as *mut u8, 0xa5, 16 * 4096) };
    let st = t!(in_child(|| {
        // SAFETY: the child ends in rt_sigreturn's forced SIGSEGV.
        unsafe { bad_sigreturn(junk + 8 * 4096) };
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGSEGV,
        "{}",
        describe(st)
    );
    // A zeroed frame (no fpsimd_context) is rejected too.
    // SAFETY: as above.
    unsafe { core::ptr::write_bytes(junk as *mut u8, 0, 16 * 4096) };
    let st = t!(in_child(|| {
        // SAFETY: as above.
        unsafe { bad_sigreturn(junk + 8 * 4096) };
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGSEGV,
        "zeroed frame: {}",
        describe(st)
    );
    // Misaligned SP at rt_sigreturn.
    let st = t!(in_child(|| {
        // SAFETY: as above.
        unsafe { bad_sigreturn(junk + 8 * 4096 + 8) };
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGSEGV,
        "misaligned SP: {}",
        describe(st)
    );
    Ok(())
}

extern "C" fn skip_udf(_sig: i32, info: *mut SigInfo, ucp: *mut u8) {
    let ucx = Ucontext(ucp);
    // SAFETY: SA_SIGINFO handler: valid siginfo.
    if unsafe { (*info).signo } == SIGILL {
        ucx.set_pc(ucx.pc() + 4);
    }
}

fn handler_can_skip_the_faulting_instruction() -> TestResult {
    t!(set_handler(SIGILL, skip_udf, 0, 0));
    // SAFETY: the handler moves the pc past the udf, so fault_udf returns normally.
    unsafe { fault_udf() };
    t!(set_disposition(SIGILL, SIG_DFL));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("null_deref_segv_maperr", null_dereference),
        ("udf_sigill_illopc", undefined_instruction),
        ("brk_sigtrap", breakpoint),
        ("misaligned_pc_sigbus", misaligned_pc),
        ("misaligned_sp_sigbus", misaligned_sp),
        ("unaligned_ldxr_sigbus", unaligned_exclusive),
        ("unhandled_faults_kill", fault_without_handler_kills),
        ("garbage_rt_sigreturn_segv", garbage_sigreturn_kills_caller),
        (
            "handler_skips_faulting_insn",
            handler_can_skip_the_faulting_instruction,
        ),
    ])
}

entry!(main);
