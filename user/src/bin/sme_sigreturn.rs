//! rt_sigreturn with SME records: malformed za/tpidr2/sve(SM)/zt records and duplicates are
//! refused with SIGSEGV; valid edits take effect: entering and leaving streaming mode, turning ZA
//! off (header-only za_context) and on (za_context with payload, ZT0 then zero), a new TPIDR2
//! value, and frames without za_context or tpidr2_context (Linux then leaves PSTATE.ZA, ZA and
//! TPIDR2 as the handler has them: off and zero unless it turned ZA on itself). With SME2 a
//! zt_context is taken when ZA is on after the za step, from the frame or, without za_context,
//! from the handler. Each case runs in a child: a `brk` with the state live, a handler that
//! rewrites the frame, and the state checked after sigreturn.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use svelt_user::ktap::{skip, TestResult};
use svelt_user::sig::*;
use svelt_user::sme::*;
use svelt_user::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
enum Mode {
    Keep,
    ZaWrongVl,
    ZaHeaderWrongVl,
    ZaSizeShort,
    ZaSizeOneRowShort,
    Tpidr2Size32,
    Tpidr2Duplicate,
    SveSmWrongVl,
    SveSmHeaderOnly,
    ZaDuplicate,
    ZtRecord,
    EnterStreaming,
    LeaveStreamingHeader,
    LeaveStreamingNoSve,
    ZaOffHeader,
    ZaOnWithPayload,
    NoZaRecord,
    NewTpidr2,
    NoTpidr2Record,
    /// The handler turns ZA on (its own contents) and drops za_context.
    HandlerZaOnNoZaRecord,
    /// The same, and a zt_context (SME2).
    HandlerZaOnZtRecord,
    /// No za_context, a zt_context, ZA off in the handler (SME2): refused.
    ZtNoZaRecord,
    /// The handler turns ZA on and loads ZT0; the frame's za_context has a payload and no
    /// zt_context follows (SME2): ZT0 ends up zero.
    HandlerZt0ZaPayload,
}

static MODE: AtomicU32 = AtomicU32::new(0);
/// The parameters, set before forking (the child sees the same addresses).
static PARAMS: AtomicUsize = AtomicUsize::new(0);

struct Params {
    svl: usize,
    svevl: usize,
    /// Streaming Z image the handler installs when entering streaming mode.
    zs: Vec<u8>,
    /// ZA image the handler installs for ZaOnWithPayload.
    za: Vec<u8>,
    /// ZA image the handler loads itself when it turns ZA on.
    za_h: Vec<u8>,
    /// ZT0 for a zt_context the handler adds, and ZT0 the handler loads itself.
    zt: [u8; 64],
    zt_h: [u8; 64],
}

core::arch::global_asm!(
    r#"
    .arch_extension sme2
    .text
    .global svelt_sme_sigreturn_ldr_zt0
svelt_sme_sigreturn_ldr_zt0:
    ldr zt0, [x0]
    ret
    .global svelt_sme_sigreturn_str_zt0
svelt_sme_sigreturn_str_zt0:
    str zt0, [x0]
    ret
"#
);

extern "C" {
    fn svelt_sme_sigreturn_ldr_zt0(src: *const u8);
    fn svelt_sme_sigreturn_str_zt0(dst: *mut u8);
}

/// ZT0 := `v` (SME2, PSTATE.ZA on).
fn load_zt0(v: &[u8; 64]) {
    // SAFETY: reads 64 bytes at a valid address; ZT0 is used by no compiled code.
    unsafe { svelt_sme_sigreturn_ldr_zt0(v.as_ptr()) }
}

/// ZT0's bytes (SME2, PSTATE.ZA on).
fn store_zt0() -> [u8; 64] {
    let mut v = [0u8; 64];
    // SAFETY: writes 64 bytes to a local buffer.
    unsafe { svelt_sme_sigreturn_str_zt0(v.as_mut_ptr()) };
    v
}

/// In the handler: PSTATE.ZA on with `za_h` in it (and ZT0 zero, as SMSTART ZA leaves it).
fn handler_za_on() {
    let p = params();
    let mut op = Op {
        flags: F_ZA | F_KEEP_ZA,
        za_in: p.za_h.as_ptr() as usize,
        action: A_NONE,
        ..Op::default()
    };
    run(&mut op);
}

fn zt_record(zt: &[u8; 64]) -> OwnedRec {
    let mut body = vec![0u8; 8];
    body[0] = 1; // nregs
    body.extend_from_slice(zt);
    OwnedRec::new(ZT_MAGIC, &body)
}

const TPIDR2_IN: u64 = 0x1111_2222_3333_4444;
const TPIDR2_NEW: u64 = 0x5555_6666_7777_8888;

fn params() -> &'static Params {
    // SAFETY: set (and leaked) before any signal or fork; never freed.
    unsafe { &*(PARAMS.load(Ordering::SeqCst) as *const Params) }
}

fn mode() -> Mode {
    // SAFETY: MODE only ever holds a value stored from a Mode.
    unsafe { core::mem::transmute::<u32, Mode>(MODE.load(Ordering::SeqCst)) }
}

fn other_vl(vl: usize) -> u16 {
    (if vl == 16 { 32 } else { vl / 2 }) as u16
}

fn mutate(ucp: *mut u8) -> Result<(), String> {
    let p = params();
    let f = parse_frame(ucp)?;
    let mut recs = own_records(&f);
    let at = |recs: &Vec<OwnedRec>, m: u32| {
        recs.iter()
            .position(|r| r.magic == m)
            .ok_or_else(|| format!("no {} record", rec_name(m)))
    };
    let za = at(&recs, ZA_MAGIC)?;
    let sve = at(&recs, SVE_MAGIC)?;
    let tp = at(&recs, TPIDR2_MAGIC)?;
    match mode() {
        Mode::Keep => {}
        Mode::ZaWrongVl | Mode::ZaHeaderWrongVl => recs[za].set_u16(8, other_vl(p.svl)),
        Mode::ZaSizeShort => recs[za].bytes.truncate(32),
        Mode::ZaSizeOneRowShort => {
            let n = recs[za].bytes.len() - p.svl;
            recs[za].bytes.truncate(n.next_multiple_of(16));
        }
        Mode::Tpidr2Size32 => recs[tp].bytes.resize(32, 0),
        Mode::Tpidr2Duplicate => {
            let d = recs[tp].clone();
            recs.insert(tp + 1, d);
        }
        Mode::SveSmWrongVl => recs[sve].set_u16(8, other_vl(p.svl)),
        Mode::SveSmHeaderOnly => recs[sve].bytes.truncate(16),
        Mode::ZaDuplicate => {
            let mut d = OwnedRec::new(ZA_MAGIC, &[0; 8]);
            d.set_u16(8, p.svl as u16);
            recs.insert(za + 1, d);
        }
        Mode::ZtRecord => {
            let mut body = vec![0u8; 8 + 64];
            body[0] = 1; // nregs
            recs.insert(za + 1, OwnedRec::new(ZT_MAGIC, &body));
        }
        Mode::EnterStreaming => {
            let mut body = vec![0u8; 8];
            body[0..2].copy_from_slice(&(p.svl as u16).to_ne_bytes());
            body[2..4].copy_from_slice(&SVE_SIG_FLAG_SM.to_ne_bytes());
            body.extend_from_slice(&p.zs);
            recs[sve] = OwnedRec::new(SVE_MAGIC, &body);
            // sigreturn merges V0-V31 from fpsimd_context over the payload: keep them equal.
            let fp = at(&recs, FPSIMD_MAGIC)?;
            for n in 0..32 {
                let v = &p.zs[n * p.svl..n * p.svl + 16];
                recs[fp].bytes[16 + 16 * n..32 + 16 * n].copy_from_slice(v);
            }
        }
        Mode::LeaveStreamingHeader => {
            let mut body = vec![0u8; 8];
            body[0..2].copy_from_slice(&(p.svevl as u16).to_ne_bytes());
            recs[sve] = OwnedRec::new(SVE_MAGIC, &body);
        }
        Mode::LeaveStreamingNoSve => {
            recs.remove(sve);
        }
        Mode::ZaOffHeader => {
            recs[za].bytes.truncate(16);
            // With SME2 and ZA on the frame has a zt_context, which ZA off would refuse.
            recs.retain(|r| r.magic != ZT_MAGIC);
        }
        Mode::ZaOnWithPayload => {
            recs[za].bytes.truncate(16);
            recs[za].bytes.extend_from_slice(&p.za);
        }
        Mode::NoZaRecord => {
            recs.remove(za);
            recs.retain(|r| r.magic != ZT_MAGIC);
        }
        Mode::NewTpidr2 => recs[tp].set_u64(8, TPIDR2_NEW),
        Mode::NoTpidr2Record => {
            recs.remove(tp);
        }
        Mode::HandlerZaOnNoZaRecord => {
            handler_za_on();
            recs.remove(za);
        }
        Mode::HandlerZaOnZtRecord => {
            handler_za_on();
            recs[za] = zt_record(&p.zt);
        }
        Mode::ZtNoZaRecord => recs[za] = zt_record(&p.zt),
        Mode::HandlerZt0ZaPayload => {
            handler_za_on();
            load_zt0(&p.zt_h);
            recs[za].bytes.truncate(16);
            recs[za].bytes.extend_from_slice(&p.za);
        }
    }
    write_frame(&f, &recs)
}

extern "C" fn handler(_sig: i32, _info: *mut SigInfo, ucp: *mut u8) {
    let ucx = Ucontext(ucp);
    ucx.set_pc(ucx.pc() + 4);
    if let Err(e) = mutate(ucp) {
        println!("# handler ({:?}): {e}", mode());
        sys::exit_group(90);
    }
}

/// What the child saw after sigreturn.
#[derive(Clone, Copy, Debug, Default)]
struct After {
    svcr: u64,
    tpidr2: u64,
    vl: u64,
    z_ok: bool,
    za_ok: bool,
    /// ZT0 after sigreturn (the modes that look at it, with ZA on).
    zt0: Option<[u8; 64]>,
}

/// Runs one case in a child: SVL `svl`, state (sm, za) live with patterns, brk, handler edits.
/// Returns the wait status and what the child saw after sigreturn.
fn case(m: Mode, svl: usize, sm: bool, za: bool) -> Result<(i32, After), String> {
    let svevl = sve_vl();
    let boxed = Box::new(Params {
        svl,
        svevl,
        zs: z_pattern(77, svl, has_fa64()),
        za: pattern(78, svl * svl),
        za_h: pattern(79, svl * svl),
        zt: pattern(80, 64).try_into().unwrap(),
        zt_h: pattern(81, 64).try_into().unwrap(),
    });
    PARAMS.store(Box::leak(boxed) as *const Params as usize, Ordering::SeqCst);
    MODE.store(m as u32, Ordering::SeqCst);
    let out = proc::Shared::new(After::default());
    let st = proc::in_child(|| {
        if set_handler(SIGTRAP, handler, 0, 0).is_err() || sme_set_vl(svl) != Ok(svl) {
            return 91;
        }
        let p = params();
        let fa64 = has_fa64();
        let zvl = if sm { svl } else { svevl };
        let zin = z_pattern(5, zvl, !sm || fa64);
        let zain = pattern(6, svl * svl);
        let big = z_image_len(svl.max(svevl));
        let mut zout = vec![0xeeu8; big];
        let mut zaout = vec![0xeeu8; svl * svl];
        let want_zt0 = matches!(m, Mode::HandlerZaOnZtRecord | Mode::HandlerZt0ZaPayload);
        let mut op = Op {
            flags: F_TPIDR2
                | if sm { F_SM } else { 0 }
                | if za { F_ZA } else { 0 }
                | if fa64 { F_FA64 } else { 0 }
                | if want_zt0 { F_KEEP_ZA } else { 0 },
            tpidr2_in: TPIDR2_IN,
            z_in: zin.as_ptr() as usize,
            za_in: if za { zain.as_ptr() as usize } else { 0 },
            action: A_BRK,
            z_out: zout.as_mut_ptr() as usize,
            za_out: zaout.as_mut_ptr() as usize,
            ..Op::default()
        };
        run(&mut op);
        // ZA is still on for these modes (F_KEEP_ZA): ZT0 is as sigreturn left it.
        let zt0 = (want_zt0 && op.svcr_after & SVCR_ZA != 0).then(store_zt0);
        if want_zt0 {
            smstop_za();
        }
        let vl = op.vl_after as usize;
        let n = z_image_len(vl);
        let stored = if op.out_flags & O_FFR != 0 {
            n
        } else {
            ffr_off(vl)
        };
        // The Z image the case should end with.
        let want_z: Vec<u8> = match m {
            Mode::EnterStreaming => p.zs.clone(),
            Mode::LeaveStreamingHeader | Mode::LeaveStreamingNoSve => {
                let mut w = zeros(n);
                for r in 0..32 {
                    w[r * vl..r * vl + 16].copy_from_slice(&zin[r * svl..r * svl + 16]);
                }
                w
            }
            _ => zin.clone(),
        };
        let z_ok = want_z.len() == n && zout[..stored] == want_z[..stored];
        if !z_ok && want_z.len() == n {
            if let Some(d) = z_diff("after sigreturn", vl, &zout[..stored], &want_z[..stored]) {
                println!("# {m:?}: {d}");
            }
        }
        let want_za = match m {
            Mode::ZaOnWithPayload | Mode::HandlerZt0ZaPayload => &p.za,
            Mode::HandlerZaOnNoZaRecord | Mode::HandlerZaOnZtRecord => &p.za_h,
            _ => &zain,
        };
        let za_ok = op.out_flags & O_ZA != 0 && zaout == *want_za;
        out.set(After {
            svcr: op.svcr_after,
            tpidr2: op.tpidr2_after,
            vl: op.vl_after,
            z_ok,
            za_ok,
            zt0,
        });
        set_tpidr2(0);
        0
    })
    .map_err(|e| format!("fork: {e:?}"))?;
    Ok((st, out.get()))
}

fn expect_segv(m: Mode, svl: usize, sm: bool, za: bool) -> TestResult {
    let (st, _) = case(m, svl, sm, za)?;
    check!(
        proc::wifsignaled(st) && proc::wtermsig(st) == SIGSEGV,
        "{m:?} at SVL {svl} (sm {sm} za {za}): child {}, want SIGSEGV",
        proc::describe(st)
    );
    Ok(())
}

fn expect_ok(m: Mode, svl: usize, sm: bool, za: bool) -> Result<After, String> {
    let (st, a) = case(m, svl, sm, za)?;
    check_eq!(
        st,
        0,
        "{m:?} at SVL {svl} (sm {sm} za {za}): child {}",
        proc::describe(st)
    );
    Ok(a)
}

/// The SVL for the cases that grow records: the largest supported one whose frames fit in
/// `__reserved` without extra_context (Linux's default is the same rule, ≤ 32).
fn small_svl() -> usize {
    sme_vls().into_iter().rfind(|&v| v <= 32).unwrap_or(16)
}

fn need() -> TestResult {
    need_sme()?;
    if !has_sve() {
        return skip("no SVE");
    }
    Ok(())
}

fn unchanged_frame_restores_everything() -> TestResult {
    need()?;
    for svl in sme_vls() {
        for (sm, za) in [(false, false), (false, true), (true, false), (true, true)] {
            let a = expect_ok(Mode::Keep, svl, sm, za)?;
            check_eq!(a.svcr, sm as u64 | (za as u64) << 1, "svl {svl}");
            check_eq!(a.tpidr2, TPIDR2_IN);
            check!(a.z_ok, "svl {svl} sm {sm} za {za}: Z");
            check!(!za || a.za_ok, "svl {svl} sm {sm} za {za}: ZA");
        }
    }
    Ok(())
}

fn za_context_wrong_vl() -> TestResult {
    need()?;
    for svl in sme_vls() {
        expect_segv(Mode::ZaWrongVl, svl, false, true)?;
        expect_segv(Mode::ZaHeaderWrongVl, svl, false, false)?;
    }
    Ok(())
}

fn za_context_short_size() -> TestResult {
    need()?;
    let svl = small_svl();
    expect_segv(Mode::ZaSizeShort, svl, false, true)?;
    expect_segv(Mode::ZaSizeOneRowShort, svl, true, true)?;
    Ok(())
}

fn tpidr2_context_bad_size_or_duplicate() -> TestResult {
    need()?;
    let svl = small_svl();
    expect_segv(Mode::Tpidr2Size32, svl, false, false)?;
    expect_segv(Mode::Tpidr2Duplicate, svl, false, true)?;
    Ok(())
}

fn sve_context_streaming_wrong_vl() -> TestResult {
    need()?;
    for svl in sme_vls() {
        expect_segv(Mode::SveSmWrongVl, svl, true, false)?;
    }
    Ok(())
}

fn sve_context_streaming_without_payload() -> TestResult {
    need()?;
    expect_segv(Mode::SveSmHeaderOnly, small_svl(), true, true)
}

fn za_context_duplicate() -> TestResult {
    need()?;
    expect_segv(Mode::ZaDuplicate, small_svl(), false, false)?;
    expect_segv(Mode::ZaDuplicate, small_svl(), true, true)
}

fn zt_context_refused() -> TestResult {
    need()?;
    if has_sme2() {
        // With SME2 a zt record is only valid with ZA on.
        expect_segv(Mode::ZtRecord, small_svl(), false, false)
    } else {
        expect_segv(Mode::ZtRecord, small_svl(), false, true)
    }
}

fn enter_streaming_mode_via_sigreturn() -> TestResult {
    need()?;
    let svl = sme_vls().into_iter().rfind(|&v| v <= 64).unwrap_or(16);
    for za in [false, true] {
        if za && svl > 32 {
            continue;
        }
        let a = expect_ok(Mode::EnterStreaming, svl, false, za)?;
        check_eq!(a.svcr, SVCR_SM | (za as u64) << 1, "SM set by sigreturn");
        check_eq!(a.vl, svl as u64);
        check!(a.z_ok, "streaming Z/P(/FFR) from the frame");
        check!(!za || a.za_ok);
    }
    Ok(())
}

fn leave_streaming_mode_via_sigreturn() -> TestResult {
    need()?;
    for svl in sme_vls() {
        for m in [Mode::LeaveStreamingHeader, Mode::LeaveStreamingNoSve] {
            let a = expect_ok(m, svl, true, svl <= 32)?;
            check_eq!(a.svcr & SVCR_SM, 0, "{m:?} svl {svl}: SM cleared");
            check_eq!(a.vl, sve_vl() as u64);
            check!(
                a.z_ok,
                "{m:?} svl {svl}: V from fpsimd_context, the rest zero"
            );
        }
    }
    Ok(())
}

fn za_off_and_on_via_sigreturn() -> TestResult {
    need()?;
    for svl in sme_vls() {
        let a = expect_ok(Mode::ZaOffHeader, svl, svl <= 32, true)?;
        check_eq!(a.svcr & SVCR_ZA, 0, "header-only za_context turns ZA off");
    }
    let svl = small_svl();
    let a = expect_ok(Mode::ZaOnWithPayload, svl, false, false)?;
    check_eq!(a.svcr, SVCR_ZA, "za_context with payload turns ZA on");
    check!(a.za_ok, "ZA loaded from the frame");
    Ok(())
}

fn frame_without_za_context() -> TestResult {
    need()?;
    for svl in sme_vls() {
        let a = expect_ok(Mode::NoZaRecord, svl, false, true)?;
        println!(
            "# no za_context, SVL {svl}, ZA was on: SVCR after {:#x}",
            a.svcr
        );
        // Linux only touches PSTATE.ZA for a za record; delivery had turned it off.
        check_eq!(a.svcr, 0, "ZA stays off (as the handler ran)");
        check_eq!(a.tpidr2, TPIDR2_IN);
    }
    Ok(())
}

fn za_turned_on_by_the_handler_stays_on() -> TestResult {
    need()?;
    for svl in sme_vls() {
        for za in [false, true] {
            let a = expect_ok(Mode::HandlerZaOnNoZaRecord, svl, false, za)?;
            println!(
                "# handler turned ZA on, no za_context, SVL {svl}, ZA at the brk {za}: SVCR after {:#x}",
                a.svcr
            );
            check_eq!(a.svcr, SVCR_ZA, "ZA stays on, as the handler left it");
            check!(a.za_ok, "svl {svl}: ZA holds what the handler put there");
            check_eq!(a.tpidr2, TPIDR2_IN);
        }
    }
    Ok(())
}

fn zt_context_with_za_on() -> TestResult {
    need()?;
    if !has_sme2() {
        return skip("no SME2");
    }
    let p_zt = pattern(80, 64);
    for svl in sme_vls() {
        // ZA on from the handler, no za_context: the zt_context is taken.
        let a = expect_ok(Mode::HandlerZaOnZtRecord, svl, false, false)?;
        check_eq!(a.svcr, SVCR_ZA);
        check!(a.za_ok, "svl {svl}: ZA as the handler left it");
        check_eq!(
            a.zt0.map(|z| z.to_vec()),
            Some(p_zt.clone()),
            "ZT0 from the frame"
        );
        // A za_context with a payload clears ZT0 when no zt_context follows.
        if svl <= 32 {
            let a = expect_ok(Mode::HandlerZt0ZaPayload, svl, false, false)?;
            check_eq!(a.svcr, SVCR_ZA);
            check!(a.za_ok, "svl {svl}: ZA from the frame");
            check_eq!(a.zt0, Some([0u8; 64]), "ZT0 zeroed by the za_context");
        }
        // ZA off in the handler (delivery turned it off) and no za_context: refused.
        expect_segv(Mode::ZtNoZaRecord, svl, false, true)?;
    }
    Ok(())
}

fn tpidr2_from_the_frame() -> TestResult {
    need()?;
    let a = expect_ok(Mode::NewTpidr2, small_svl(), true, true)?;
    check_eq!(a.tpidr2, TPIDR2_NEW);
    check!(a.z_ok && a.za_ok);
    let a = expect_ok(Mode::NoTpidr2Record, small_svl(), false, true)?;
    println!("# no tpidr2_context: TPIDR2 after {:#x}", a.tpidr2);
    check_eq!(a.tpidr2, 0, "TPIDR2 stays as the handler had it");
    check_eq!(a.svcr, SVCR_ZA);
    Ok(())
}

fn main(_args: &rt::Args) -> i32 {
    ktap::run(&[
        (
            "unchanged_frame_restores_everything",
            unchanged_frame_restores_everything,
        ),
        ("za_context_wrong_vl", za_context_wrong_vl),
        ("za_context_short_size", za_context_short_size),
        (
            "tpidr2_context_bad_size_or_duplicate",
            tpidr2_context_bad_size_or_duplicate,
        ),
        (
            "sve_context_streaming_wrong_vl",
            sve_context_streaming_wrong_vl,
        ),
        (
            "sve_context_streaming_without_payload",
            sve_context_streaming_without_payload,
        ),
        ("za_context_duplicate", za_context_duplicate),
        ("zt_context_refused", zt_context_refused),
        (
            "enter_streaming_mode_via_sigreturn",
            enter_streaming_mode_via_sigreturn,
        ),
        (
            "leave_streaming_mode_via_sigreturn",
            leave_streaming_mode_via_sigreturn,
        ),
        ("za_off_and_on_via_sigreturn", za_off_and_on_via_sigreturn),
        ("frame_without_za_context", frame_without_za_context),
        (
            "za_turned_on_by_the_handler_stays_on",
            za_turned_on_by_the_handler_stays_on,
        ),
        ("zt_context_with_za_on", zt_context_with_za_on),
        ("tpidr2_from_the_frame", tpidr2_from_the_frame),
    ])
}

entry!(main);
