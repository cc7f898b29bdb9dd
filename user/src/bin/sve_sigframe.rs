//! SVE in signal frames: at every supported vector length, a signal taken with live SVE state
//! has fpsimd_context first, then an sve_context (vl = current VL, flags 0, size
//! round_up(16 + 546·vq, 16)) whose payload is the registers, in `__reserved` while it fits and
//! behind an extra_context (datap/size rules, null terminators) when it does not. A task that
//! has not used SVE gets a header-only sve_context. After a syscall-generated signal the payload
//! may be absent but the values are what the syscall ABI leaves. rt_sigreturn loads Z, P and FFR
//! edited in the frame, and the fpsimd_context V registers override the low 128 bits of Z.
//!
//! Signals come from a `udf` executed with the registers loaded (synchronous, no syscall, so the
//! state is certainly live), or from another process while the task spins on a flag.
#![no_std]
#![no_main]

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sve::{self, SveRegs};
use svelt_user::sys::*;
use svelt_user::*;

const AT_MINSIGSTKSZ: usize = 51;

/// What the handler does to the frame before returning.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
enum Mode {
    Observe = 0,
    /// Z5 (in the sve_context and, its low 128 bits, in the fpsimd_context), P3 and FFR get
    /// the values of [`edited`].
    EditZpFfr = 1,
    /// fpsimd_context V9 := [`V9`], and Z9 in the sve_context := [`edited`]'s Z9.
    EditV9AndZ9 = 2,
    /// Only the sve_context's Z7 := [`edited`]'s Z7: the fpsimd_context's V7 still wins.
    EditZ7Only = 3,
}

static MODE: AtomicU32 = AtomicU32::new(0);
static FLAG: AtomicU32 = AtomicU32::new(0);
const EDIT_SEED: u64 = 0xed17;
const V9: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;

/// The values the edit modes write, at length `vl`.
fn edited(vl: usize) -> SveRegs {
    let mut e = SveRegs::pattern(vl, EDIT_SEED);
    e.set_ffr_prefix(vl / 2 + 3);
    e
}

/// What the handler saw.
#[derive(Clone, Debug)]
struct Seen {
    signo: i32,
    pc: u64,
    frame: Result<Frame, String>,
    /// The sve_context: the record, its vl and flags, and the payload (size - 16 bytes).
    sve: Option<(Record, u16, u16, Vec<u8>)>,
}

struct Slot(UnsafeCell<Option<Seen>>);
// SAFETY: the slot is written by the signal handler and read by the interrupted thread only
// after the signal was handled; the tests use one thread at a time.
unsafe impl Sync for Slot {}
static SEEN: Slot = Slot(UnsafeCell::new(None));

fn take_seen() -> Option<Seen> {
    // SAFETY: see Slot; no handler runs now.
    unsafe { (*SEEN.0.get()).take() }
}

extern "C" fn handler(sig: i32, _info: *mut SigInfo, ucp: *mut u8) {
    let ucx = Ucontext(ucp);
    let mut seen = Seen {
        signo: sig,
        pc: ucx.pc(),
        frame: walk_frame(ucx),
        sve: None,
    };
    if let Ok(f) = &seen.frame {
        if let Some(r) = f.find(SVE_MAGIC) {
            let vl = ucx.read_u16(r.off + 8);
            let flags = ucx.read_u16(r.off + 10);
            let payload = ucx.read_bytes(r.off + 16, r.size as usize - 16);
            let v = vl as usize;
            let full = r.size as usize >= sve::sig_context_size(v);
            let e = edited(v);
            let fp = f.find(FPSIMD_MAGIC).map_or(0, |r| r.off);
            match MODE.load(Ordering::SeqCst) {
                1 if full => {
                    let z5 = r.off + 16 + SveRegs::z_offset(v, 5);
                    ucx.write_bytes(z5, e.z(5));
                    ucx.write_bytes(fp + 16 + 16 * 5, &e.v(5).to_le_bytes());
                    ucx.write_bytes(r.off + 16 + SveRegs::p_offset(v, 3), e.p(3));
                    ucx.write_bytes(r.off + 16 + SveRegs::ffr_offset(v), e.ffr());
                }
                2 if full => {
                    ucx.write_bytes(r.off + 16 + SveRegs::z_offset(v, 9), e.z(9));
                    ucx.write_bytes(fp + 16 + 16 * 9, &V9.to_le_bytes());
                }
                3 if full => ucx.write_bytes(r.off + 16 + SveRegs::z_offset(v, 7), e.z(7)),
                _ => {}
            }
            seen.sve = Some((r, vl, flags, payload));
        }
    }
    // SAFETY: see Slot.
    unsafe { *SEEN.0.get() = Some(seen) };
    FLAG.store(1, Ordering::SeqCst);
    if sig == SIGILL {
        if ucx.pc() == sve::udf_insn() || ucx.pc() == plain_udf_insn as *const () as u64 {
            ucx.set_pc(ucx.pc() + 4);
        } else {
            sys::exit_group(99);
        }
    }
}

core::arch::global_asm!(
    ".text",
    // An undefined instruction with no SVE anywhere near it.
    ".global plain_udf",
    "plain_udf:",
    ".global plain_udf_insn",
    "plain_udf_insn:",
    "    udf #0x5f",
    "    ret",
);

extern "C" {
    fn plain_udf();
    fn plain_udf_insn();
}

fn install() -> TestResult {
    for s in [SIGILL, SIGUSR1, SIGUSR2] {
        t!(set_handler(s, handler, 0, 0));
    }
    MODE.store(Mode::Observe as u32, Ordering::SeqCst);
    Ok(())
}

/// The sve_context record size Linux writes for a full payload.
fn full_size(vl: usize) -> u32 {
    sve::sig_context_size(vl).next_multiple_of(16) as u32
}

/// The frame is well formed, fpsimd_context comes first, and there is exactly one
/// sve_context, with `vl` and flags 0, placed where Linux's allocator puts it: in `__reserved`
/// if it fits in what the records before it left, otherwise first in the extra space.
/// Returns the sve_context.
fn check_layout(s: &Seen, vl: usize) -> Result<(Record, Vec<u8>), String> {
    let f = s
        .frame
        .as_ref()
        .map_err(|e| format!("malformed frame: {e}"))?;
    let first = f.records.first().ok_or("no records")?;
    check_eq!(
        (first.magic, first.off, first.size),
        (FPSIMD_MAGIC, uc::RESERVED, 528),
        "fpsimd_context first"
    );
    check_eq!(f.count(SVE_MAGIC), 1, "sve_context records");
    check_eq!(f.count(FPSIMD_MAGIC), 1, "fpsimd_context records");
    let (r, rvl, flags, payload) = s.sve.clone().ok_or("no sve_context")?;
    check_eq!(rvl as usize, vl, "sve_context.vl");
    check_eq!(flags, 0, "sve_context.flags");
    let idx = f.records.iter().position(|x| x.magic == SVE_MAGIC).unwrap();
    let before: usize = f.records[..idx]
        .iter()
        .filter(|x| x.magic != EXTRA_MAGIC)
        .map(|x| x.size as usize)
        .sum();
    check!(
        f.records[..idx]
            .iter()
            .all(|x| !x.in_extra && x.magic != EXTRA_MAGIC)
            || r.in_extra,
        "records before sve_context: {:x?}",
        &f.records[..idx]
    );
    if before + r.size as usize <= RESERVED_BUDGET {
        check!(
            !r.in_extra && f.extra.is_none(),
            "a {}-byte sve_context fits __reserved but went to the extra space ({:x?})",
            r.size,
            f.extra
        );
        check_eq!(r.off, uc::RESERVED + before, "sve_context offset");
    } else {
        let x = f.extra.ok_or(format!(
            "a {}-byte sve_context after {before} bytes of records without an extra_context",
            r.size
        ))?;
        check_eq!(
            x.off,
            uc::RESERVED + before,
            "extra_context where sve_context would have gone"
        );
        check!(r.in_extra, "sve_context not in the extra space");
        check_eq!(r.off, x.off + 48, "sve_context first in the extra space");
    }
    if let Some(min) = rt::args().getauxval(AT_MINSIGSTKSZ) {
        // The frame (from the siginfo at its base to the final terminator) plus the frame
        // record and alignment slack must fit the advertised minimum.
        let used = 128 + f.end;
        check!(
            used + 32 <= min,
            "frame of {used} bytes, AT_MINSIGSTKSZ {min}"
        );
    }
    Ok((r, payload))
}

/// The records as `magic@offset+size` (offsets from `__reserved`), for the log.
fn describe_frame(s: &Seen) -> String {
    let Ok(f) = &s.frame else {
        return "malformed".into();
    };
    let mut out = String::new();
    for r in &f.records {
        out += &format!("{:#x}@{}+{} ", r.magic, r.off - uc::RESERVED, r.size);
    }
    out += &format!("end@{}", f.end - uc::RESERVED);
    if let Some(min) = rt::args().getauxval(AT_MINSIGSTKSZ) {
        out += &format!(" (AT_MINSIGSTKSZ {min})");
    }
    out
}

/// A full payload equal to `want`.
fn check_payload(r: &Record, payload: &[u8], want: &SveRegs) -> TestResult {
    check_eq!(
        r.size,
        full_size(want.vl),
        "sve_context size at vl {}",
        want.vl
    );
    let got = SveRegs {
        vl: want.vl,
        bytes: payload[..SveRegs::size(want.vl)].to_vec(),
    };
    if let Some(d) = got.diff(want) {
        return Err(format!("sve_context payload:\n{d}"));
    }
    Ok(())
}

fn sve_record_at_every_vl() -> TestResult {
    let vls = sve::need_vls()?;
    install()?;
    let orig = sve::rdvl();
    let mut via_extra = Vec::new();
    for &vl in &vls {
        t!(sve::set_vl(vl));
        let p = SveRegs::pattern(vl, vl as u64);
        let out = sve::load_udf_store(&p);
        let s = take_seen().ok_or(format!("vl {vl}: no signal"))?;
        check_eq!(s.signo, SIGILL);
        check_eq!(s.pc, sve::udf_insn(), "pc in the frame");
        let (r, payload) = check_layout(&s, vl).map_err(|e| format!("vl {vl}: {e}"))?;
        check_payload(&r, &payload, &p).map_err(|e| format!("vl {vl}: {e}"))?;
        if r.in_extra {
            via_extra.push(vl);
        }
        if vl == vls[0] || vl == *vls.last().unwrap() {
            println!("# vl {vl}: {}", describe_frame(&s));
        }
        if let Some(d) = out.diff(&p) {
            return Err(format!("registers after sigreturn at vl {vl}:\n{d}"));
        }
    }
    println!("# sve_context behind an extra_context at vl {via_extra:?}");
    for &vl in &vls {
        let size = full_size(vl) as usize;
        check_eq!(
            via_extra.contains(&vl),
            528 + size > RESERVED_BUDGET,
            "vl {} ({} bytes) via extra_context",
            vl,
            size
        );
    }
    t!(sve::set_vl(orig));
    Ok(())
}

fn header_only_without_sve_use() -> TestResult {
    let vls = sve::need_vls()?;
    install()?;
    let mut lens = vec![sve::rdvl(), *vls.last().unwrap()];
    lens.dedup();
    for vl in lens {
        // A forked child starts FPSIMD-only; PR_SVE_SET_VL does not use SVE either.
        let out = Shared::new([0u32; 4]);
        let st = t!(in_child(|| {
            if sve::set_vl(vl) != Ok(vl) {
                return 2;
            }
            // SAFETY: the SIGILL handler steps over the udf.
            unsafe { plain_udf() };
            let Some(s) = take_seen() else { return 3 };
            let Ok(f) = &s.frame else { return 4 };
            let Some((r, rvl, flags, _)) = s.sve else {
                return 5;
            };
            out.set([
                r.size,
                u32::from(rvl),
                u32::from(flags),
                u32::from(f.extra.is_some()),
            ]);
            0
        }));
        check_eq!(describe(st), "exited 0");
        check_eq!(
            out.get(),
            [16, vl as u32, 0, 0],
            "[size, vl, flags, extra] at vl {}",
            vl
        );
    }
    Ok(())
}

fn signal_from_a_syscall() -> TestResult {
    let vls = sve::need_vls()?;
    install()?;
    let orig = sve::rdvl();
    let mut saw = [0usize; 2];
    for &vl in &vls {
        t!(sve::set_vl(vl));
        for i in 0..4 {
            let p = SveRegs::pattern(vl, 0x5000 + i);
            let args = [
                sys::getpid() as usize,
                sys::gettid() as usize,
                SIGUSR1 as usize,
            ];
            let (r, out) = sve::load_syscall_store(&p, nr::TGKILL, &args);
            check_eq!(r, Ok(0), "tgkill");
            let s = take_seen().ok_or("no signal")?;
            check_eq!(s.signo, SIGUSR1);
            let (rec, payload) = check_layout(&s, vl).map_err(|e| format!("vl {vl}: {e}"))?;
            // The payload may be there or not (Linux may have saved FPSIMD only); when there,
            // it holds what the syscall left: V0-V31 and zeros.
            if rec.size == 16 {
                saw[0] += 1;
            } else {
                saw[1] += 1;
                check_payload(&rec, &payload, &p.after_syscall())
                    .map_err(|e| format!("vl {vl}: {e}"))?;
            }
            if let Some(d) = out.diff(&p.after_syscall()) {
                return Err(format!(
                    "registers after tgkill and its handler at vl {vl}:\n{d}"
                ));
            }
        }
    }
    println!(
        "# after tgkill: {} header-only sve_context, {} with payload",
        saw[0], saw[1]
    );
    t!(sve::set_vl(orig));
    Ok(())
}

fn async_signal_while_spinning() -> TestResult {
    let vls = sve::need_vls()?;
    install()?;
    let orig = sve::rdvl();
    let mut lens = vec![orig, *vls.last().unwrap(), vls[0]];
    lens.dedup();
    for vl in lens {
        t!(sve::set_vl(vl));
        FLAG.store(0, Ordering::SeqCst);
        let me = sys::getpid();
        let child = t!(spawn(|| {
            sys::sleep_ns(20_000_000);
            i32::from(sys::kill(me, SIGUSR2).is_err())
        }));
        let p = SveRegs::pattern(vl, 0x7000 + vl as u64);
        let (out, left) = sve::load_spin_store(&p, &FLAG, 20_000_000_000);
        let (_, st) = t!(sys::waitpid(child, 0));
        check_eq!(describe(st), "exited 0");
        check!(left > 0, "no signal while spinning");
        let s = take_seen().ok_or("no signal")?;
        check_eq!(s.signo, SIGUSR2);
        let (rec, payload) = check_layout(&s, vl).map_err(|e| format!("vl {vl}: {e}"))?;
        check_payload(&rec, &payload, &p).map_err(|e| format!("vl {vl}: {e}"))?;
        if let Some(d) = out.diff(&p) {
            return Err(format!("registers after the handler at vl {vl}:\n{d}"));
        }
    }
    t!(sve::set_vl(orig));
    Ok(())
}

fn edits(mode: Mode) -> TestResult {
    let vls = sve::need_vls()?;
    install()?;
    let orig = sve::rdvl();
    for &vl in &vls {
        t!(sve::set_vl(vl));
        let p = SveRegs::pattern(vl, 0x9000 + vl as u64);
        MODE.store(mode as u32, Ordering::SeqCst);
        let out = sve::load_udf_store(&p);
        MODE.store(Mode::Observe as u32, Ordering::SeqCst);
        let s = take_seen().ok_or("no signal")?;
        let (rec, payload) = check_layout(&s, vl).map_err(|e| format!("vl {vl}: {e}"))?;
        check_payload(&rec, &payload, &p).map_err(|e| format!("vl {vl}: {e}"))?;
        let e = edited(vl);
        let mut want = p.clone();
        match mode {
            Mode::EditZpFfr => {
                want.z_mut(5).copy_from_slice(e.z(5));
                want.p_mut(3).copy_from_slice(e.p(3));
                want.ffr_mut().copy_from_slice(e.ffr());
            }
            Mode::EditV9AndZ9 => {
                want.z_mut(9).copy_from_slice(e.z(9));
                want.set_v(9, V9);
            }
            Mode::EditZ7Only => {
                want.z_mut(7)[16..].copy_from_slice(&e.z(7)[16..]);
            }
            Mode::Observe => {}
        }
        if let Some(d) = out.diff(&want) {
            return Err(format!(
                "registers after sigreturn from an edited frame ({mode:?}) at vl {vl}:\n{d}"
            ));
        }
    }
    t!(sve::set_vl(orig));
    Ok(())
}

fn sigreturn_loads_edited_z_p_ffr() -> TestResult {
    edits(Mode::EditZpFfr)
}

fn sigreturn_fpsimd_overrides_low_128() -> TestResult {
    edits(Mode::EditV9AndZ9)
}

fn sigreturn_z_low_128_from_fpsimd() -> TestResult {
    edits(Mode::EditZ7Only)
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("sve_sigframe_every_vl", sve_record_at_every_vl),
        (
            "sve_sigframe_header_only_without_sve",
            header_only_without_sve_use,
        ),
        ("sve_sigframe_signal_from_syscall", signal_from_a_syscall),
        (
            "sve_sigframe_async_signal_spinning",
            async_signal_while_spinning,
        ),
        (
            "sve_sigreturn_loads_edited_z_p_ffr",
            sigreturn_loads_edited_z_p_ffr,
        ),
        (
            "sve_sigreturn_fpsimd_v_overrides",
            sigreturn_fpsimd_overrides_low_128,
        ),
        (
            "sve_sigreturn_z_low_128_from_fpsimd",
            sigreturn_z_low_128_from_fpsimd,
        ),
    ])
}

entry!(main);
