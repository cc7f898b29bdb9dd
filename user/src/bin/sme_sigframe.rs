//! SME signal frames: for every supported SVL and each combination of PSTATE.SM and PSTATE.ZA,
//! a `brk` in the middle of live streaming/ZA state, and a handler that walks the frame: the
//! record order (fpsimd, esr, sve, tpidr2, za, zt) and placement (extra_context exactly where
//! Linux puts it when `__reserved` overflows), each record's header and payload byte for byte,
//! the handler's own state (SM=0, ZA=0, TPIDR2=0) and everything restored by sigreturn. Also a
//! signal sent by another thread while spinning in streaming mode, a fresh process's frame
//! (nothing live: header-only SVE record), and AT_MINSIGSTKSZ.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use svelt_user::ktap::{skip, TestResult};
use svelt_user::sig::*;
use svelt_user::sme::*;
use svelt_user::sys;
use svelt_user::*;

const TPIDR2_VALUE: u64 = 0x7470_6964_7232_0001;

/// What the handler expects and what it found.
#[derive(Default)]
struct Ctx {
    svl: usize,
    svevl: usize,
    sm: bool,
    za: bool,
    /// Z image loaded before the signal (at the SVL if sm, else at the SVE VL); None = no SVE
    /// state live (header-only sve record expected).
    zin: Option<Vec<u8>>,
    zain: Vec<u8>,
    tpidr2: u64,
    /// The signal comes from the machine's brk (else: asynchronous).
    brk: bool,
    // found
    ran: u32,
    errors: String,
    desc: String,
    frame_bytes: usize,
    handler_svcr: u64,
    handler_tpidr2: u64,
    handler_fpsr: u64,
}

static CTX: AtomicUsize = AtomicUsize::new(0);
static SPIN: AtomicU64 = AtomicU64::new(0);

fn sve_ctx_size(vl: usize) -> usize {
    16 + z_image_len(vl)
}

/// Where Linux's `__sigframe_alloc` puts records of these sizes (offsets from `__reserved`;
/// `usize::MAX` marks the extra_context), and the total bytes up to and including the final
/// terminator.
fn linux_layout(sizes: &[usize]) -> (Vec<(usize, usize)>, usize) {
    let mut out = Vec::new();
    let (mut size, mut limit, mut extra) = (0usize, 4096 - 16 - 32, false);
    for &s in sizes {
        let padded = s.next_multiple_of(16);
        if padded > limit - size && !extra {
            extra = true;
            out.push((usize::MAX, size));
            size += 32 + 16;
            limit = 256 * 1024 - 16;
        }
        out.push((s, size));
        size += padded;
    }
    (out, size + 16)
}

fn check_frame(c: &mut Ctx, ucp: *mut u8) -> Result<(), String> {
    let f = parse_frame(ucp)?;
    c.desc = f.describe();
    let ucx = Ucontext(ucp);
    if c.brk {
        check_eq!(ucx.pc(), brk_addr(), "pc");
    }
    // Order: fpsimd, esr?, sve, tpidr2, za, zt?, then records this test does not know.
    let known = [
        FPSIMD_MAGIC,
        ESR_MAGIC,
        SVE_MAGIC,
        TPIDR2_MAGIC,
        ZA_MAGIC,
        ZT_MAGIC,
    ];
    let seq: Vec<u32> = f
        .magics()
        .into_iter()
        .filter(|m| known.contains(m))
        .collect();
    let mut want = vec![FPSIMD_MAGIC];
    if f.find(ESR_MAGIC).is_some() {
        want.push(ESR_MAGIC);
    }
    want.extend([SVE_MAGIC, TPIDR2_MAGIC, ZA_MAGIC]);
    if has_sme2() && c.za {
        want.push(ZT_MAGIC);
    }
    check!(seq == want, "record order {}", f.describe());

    // Placement, extra_context included, from the sizes found.
    let sizes: Vec<usize> = f
        .recs
        .iter()
        .filter(|r| r.magic != EXTRA_MAGIC)
        .map(|r| r.size as usize)
        .collect();
    let (layout, total) = linux_layout(&sizes);
    let mut recs = f.recs.iter();
    for &(s, off) in &layout {
        let r = recs.next().ok_or("fewer records than laid out")?;
        if s == usize::MAX {
            check_eq!(r.magic, EXTRA_MAGIC, "extra_context expected at {off}");
        }
        check_eq!(
            r.addr - f.reserved,
            off,
            "{} placed as Linux places it ({})",
            rec_name(r.magic),
            f.describe()
        );
    }
    check!(recs.next().is_none());
    if let Some((datap, size)) = f.extra {
        check_eq!(datap + size, f.reserved + total, "extra_context size");
    }
    c.frame_bytes = crate::sig::uc::RESERVED + 128 + total;

    let fp = f.find(FPSIMD_MAGIC).ok_or("no fpsimd")?;
    check_eq!(fp.size, 528);

    // sve_context
    let sve = f.find(SVE_MAGIC).ok_or("no sve_context")?;
    let (vl, flags) = (sve.u16_at(8) as usize, sve.u16_at(10));
    let mode_vl = if c.sm { c.svl } else { c.svevl };
    check_eq!(vl, mode_vl, "sve_context.vl");
    check_eq!(flags, if c.sm { SVE_SIG_FLAG_SM } else { 0 }, "sve flags");
    match &c.zin {
        Some(zin) => {
            check_eq!(
                sve.size as usize,
                sve_ctx_size(vl).next_multiple_of(16),
                "sve_context size"
            );
            let p = sve.payload(z_image_len(vl));
            if let Some(d) = z_diff("sve_context payload", vl, p, zin) {
                return Err(d);
            }
            // V0-V31 in fpsimd_context are the low 128 bits of Z0-Z31.
            for n in 0..32 {
                let v = &fp.bytes()[16 + 16 * n..32 + 16 * n];
                check!(
                    v == &zin[n * vl..n * vl + 16],
                    "fpsimd_context v{n} != low bits of z{n}"
                );
            }
        }
        None => check_eq!(sve.size, 16, "sve_context without live SVE state"),
    }

    let t = f.find(TPIDR2_MAGIC).ok_or("no tpidr2_context")?;
    check_eq!(t.size, 16);
    check_eq!(t.u64_at(8), c.tpidr2, "tpidr2_context value");

    let za = f.find(ZA_MAGIC).ok_or("no za_context")?;
    check_eq!(za.u16_at(8) as usize, c.svl, "za_context.vl");
    if c.za {
        check_eq!(
            za.size as usize,
            16 + c.svl * c.svl,
            "za_context size with ZA on"
        );
        if let Some(d) = diff("za_context payload", za.payload(c.svl * c.svl), &c.zain) {
            return Err(d);
        }
    } else {
        check_eq!(za.size, 16, "za_context size with ZA off");
    }
    if let Some(zt) = f.find(ZT_MAGIC) {
        check_eq!(zt.size, 80);
        check_eq!(zt.u16_at(8), 1, "zt nregs");
    }
    Ok(())
}

extern "C" fn handler(_sig: i32, _info: *mut SigInfo, ucp: *mut u8) {
    // Read the handler's own state before anything else can change it.
    let (s, t, fpsr) = (svcr(), tpidr2(), fpsr());
    let p = CTX.load(Ordering::SeqCst) as *mut Ctx;
    if p.is_null() {
        return;
    }
    // SAFETY: CTX points at the test's Ctx, alive while the test waits for this signal.
    let c = unsafe { &mut *p };
    c.ran += 1;
    c.handler_svcr = s;
    c.handler_tpidr2 = t;
    c.handler_fpsr = fpsr;
    if let Err(e) = check_frame(c, ucp) {
        c.errors += &e;
    }
    let ucx = Ucontext(ucp);
    if c.brk {
        ucx.set_pc(ucx.pc() + 4);
    }
    SPIN.store(1, Ordering::SeqCst);
}

/// Raises a signal (brk, or another thread's tgkill while spinning) with the given state live,
/// checks the frame in the handler and the state after sigreturn.
fn one_case(svl: usize, sm: bool, za: bool, live_sve: bool, brk: bool) -> Result<String, String> {
    let svevl = sve_vl();
    let fa64 = has_fa64();
    let zvl = if sm { svl } else { svevl };
    let zin = (sm || live_sve).then(|| z_pattern(svl as u64 * 7 + 1, zvl, !sm || fa64));
    let zain = pattern(svl as u64 * 7 + 2, svl * svl);
    let mut c = Ctx {
        svl,
        svevl,
        sm,
        za,
        zin: zin.clone(),
        zain: zain.clone(),
        tpidr2: TPIDR2_VALUE,
        brk,
        ..Ctx::default()
    };
    CTX.store(&mut c as *mut Ctx as usize, Ordering::SeqCst);
    SPIN.store(0, Ordering::SeqCst);
    let mut zout = pattern(3, z_image_len(zvl));
    let mut zaout = pattern(4, svl * svl);
    let mut op = Op {
        flags: F_TPIDR2
            | if sm { F_SM } else { 0 }
            | if za { F_ZA } else { 0 }
            | if fa64 { F_FA64 } else { 0 },
        tpidr2_in: TPIDR2_VALUE,
        z_in: zin.as_ref().map_or(0, |z| z.as_ptr() as usize),
        za_in: if za { zain.as_ptr() as usize } else { 0 },
        action: if brk { A_BRK } else { A_SPIN_FLAG },
        spin: SPIN.as_ptr() as usize,
        z_out: zout.as_mut_ptr() as usize,
        za_out: zaout.as_mut_ptr() as usize,
        ..Op::default()
    };
    let sender = if brk {
        None
    } else {
        extern "C" fn send(tid: usize) -> i32 {
            sys::sleep_ns(20_000_000);
            let _ = sys::tgkill(sys::getpid(), tid as i32, SIGUSR1);
            0
        }
        Some(proc::spawn_thread(send, sys::gettid() as usize, 0).map_err(|e| format!("{e:?}"))?)
    };
    run(&mut op);
    if let Some(th) = sender {
        th.join();
    }
    CTX.store(0, Ordering::SeqCst);
    set_tpidr2(0);
    let name = format!("svl {svl} sm {} za {}", sm as u8, za as u8);
    check_eq!(c.ran, 1, "{name}: handler runs");
    if !c.errors.is_empty() {
        return Err(format!("{name}: {} [{}]", c.errors, c.desc));
    }
    check_eq!(c.handler_svcr, 0, "{name}: SVCR in the handler");
    check_eq!(c.handler_tpidr2, 0, "{name}: TPIDR2 in the handler");
    if sm {
        check_eq!(
            c.handler_fpsr,
            0x0800_009f,
            "{name}: FPSR in the handler (SMSTOP)"
        );
    }
    // Restored by sigreturn.
    let want_svcr = (sm as u64) | ((za as u64) << 1);
    check_eq!(op.svcr_before, want_svcr, "{name}");
    check_eq!(op.svcr_after, want_svcr, "{name}: SVCR after sigreturn");
    check_eq!(
        op.tpidr2_after,
        TPIDR2_VALUE,
        "{name}: TPIDR2 after sigreturn"
    );
    check_eq!(op.vl_after as usize, zvl, "{name}");
    if let Some(zin) = &zin {
        let n = if op.out_flags & O_FFR != 0 {
            zin.len()
        } else {
            ffr_off(zvl)
        };
        if let Some(d) = z_diff(
            &format!("{name}: Z/P/FFR after sigreturn"),
            zvl,
            &zout[..n],
            &zin[..n],
        ) {
            return Err(d);
        }
    }
    if za {
        check!(op.out_flags & O_ZA != 0);
        if let Some(d) = diff(&format!("{name}: ZA after sigreturn"), &zaout, &zain) {
            return Err(d);
        }
    }
    Ok(format!(
        "{name}: {} (frame {} bytes)",
        c.desc, c.frame_bytes
    ))
}

fn install() -> Result<(), String> {
    set_handler(SIGTRAP, handler, 0, 0).map_err(|e| format!("{e:?}"))?;
    set_handler(SIGUSR1, handler, 0, 0).map_err(|e| format!("{e:?}"))?;
    Ok(())
}

fn every_svl_sm_za() -> TestResult {
    need_sme()?;
    if !has_sve() {
        return skip("SME without SVE: the non-streaming cases need SVE");
    }
    install()?;
    let old = t!(sme_get_vl());
    for svl in sme_vls() {
        check_eq!(t!(sme_set_vl(svl)), svl);
        for (sm, za) in [(false, false), (false, true), (true, false), (true, true)] {
            println!("# {}", one_case(svl, sm, za, true, true)?);
        }
    }
    t!(sme_set_vl(old));
    Ok(())
}

fn async_signal_while_spinning_in_streaming_mode() -> TestResult {
    need_sme()?;
    install()?;
    let old = t!(sme_get_vl());
    let vls = sme_vls();
    for svl in [vls[0], *vls.last().unwrap()] {
        t!(sme_set_vl(svl));
        let r = one_case(svl, true, true, true, false);
        t!(sme_set_vl(old));
        println!("# async {}", r?);
    }
    Ok(())
}

/// In a fresh process (no SVE state ever live), ZA on: the sve record is header-only.
fn fresh_frame() -> i32 {
    if install().is_err() {
        return 2;
    }
    let svl = svl();
    match one_case(svl, false, true, false, true) {
        Ok(d) => {
            println!("# fresh process {d}");
            0
        }
        Err(e) => {
            println!("# fresh process: {e}");
            1
        }
    }
}

fn fresh_process_frame_has_header_only_sve() -> TestResult {
    need_sme()?;
    let st = t!(exec_self(&["--fresh-frame"]));
    check_eq!(st, 0, "child: {}", proc::describe(st));
    Ok(())
}

fn at_minsigstksz() -> TestResult {
    need_sme()?;
    let min = rt::args().getauxval(AT_MINSIGSTKSZ);
    let (sve_max, sme_max) = (
        sve_vls().last().copied().unwrap_or(0),
        *sme_vls().last().unwrap(),
    );
    println!("# AT_MINSIGSTKSZ {min:?} (SVE max {sve_max}, SME max {sme_max})");
    let min = min.ok_or("no AT_MINSIGSTKSZ")?;
    // Linux's order: fpsimd, esr, gcs, sve (at the larger maximum), tpidr2, za (header: the
    // boot task's ZA is off, so a frame with ZA on at a large SVL is bigger), zt, fpmr, poe.
    // GCS, FPMR and POE records count where the hwcaps say the kernel delivers them.
    let gcs = hwcap() & (1 << 32) != 0;
    let fpmr = hwcap2() & (1 << 48) != 0;
    let poe = hwcap2() & (1 << 63) != 0;
    println!("# gcs {gcs} fpmr {fpmr} poe {poe}");
    let mut sizes = vec![528, 16];
    if gcs {
        sizes.push(32);
    }
    sizes.extend([sve_ctx_size(sve_max.max(sme_max)), 16, 16]);
    if has_sme2() {
        sizes.push(80);
    }
    if fpmr {
        sizes.push(16);
    }
    if poe {
        sizes.push(16);
    }
    let (_, total) = linux_layout(&sizes);
    let frame = (crate::sig::uc::RESERVED + 128 + total)
        .max(4688)
        .next_multiple_of(16);
    check_eq!(
        min,
        frame + 32,
        "fpsimd+esr(+gcs)+sve(max)+tpidr2+za header(+zt)(+fpmr)(+poe), + frame record + slack"
    );
    Ok(())
}

fn main(args: &rt::Args) -> i32 {
    if args.arg(1) == Some("--fresh-frame") {
        return fresh_frame();
    }
    ktap::run(&[
        ("every_svl_sm_za", every_svl_sm_za),
        (
            "async_signal_while_spinning_in_streaming_mode",
            async_signal_while_spinning_in_streaming_mode,
        ),
        (
            "fresh_process_frame_has_header_only_sve",
            fresh_process_frame_has_header_only_sve,
        ),
        ("at_minsigstksz", at_minsigstksz),
    ])
}

entry!(main);
