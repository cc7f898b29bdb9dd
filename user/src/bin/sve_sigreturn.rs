//! rt_sigreturn's checks of SVE records. A SIGILL handler edits the frame Linux built around
//! live SVE state and returns; each case runs in a child. Rejected (the child dies of SIGSEGV):
//! sve_context with vl other than the current one, size between 16 and
//! SVE_SIG_CONTEXT_SIZE(vq), size below 16, the streaming flag with a vl that is not the SME
//! one, a second sve_context, and extra_context with a wrong datap, a misaligned or oversized
//! size, a short header or no null terminator after it. Accepted, with the registers checked
//! after return: the unchanged frame, the frame without the records after sve_context, a
//! header-only sve_context or none at all (FPSIMD-only: V0-V31 kept, the rest zero), and records
//! moved behind an extra_context the handler built itself.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sve::{self, SveRegs};
use svelt_user::*;

/// What the handler does to the frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
enum Edit {
    None,
    /// vl := [`VL_FIELD`].
    WrongVl,
    /// size := 32 and a terminator after it.
    Size32,
    /// size := the full size - 16 and a terminator after it.
    SizeShort,
    Size8,
    Size0,
    /// size := 16 and a terminator after it: header only.
    HeaderOnly,
    /// A terminator in place of the sve_context.
    NoSve,
    /// A terminator right after the sve_context.
    DropTail,
    /// flags := SVE_SIG_FLAG_SM and vl := [`VL_FIELD`].
    StreamingWrongVl,
    /// A second (header-only) sve_context after the first, then a terminator.
    Duplicate,
    /// extra_context.datap += 16 / -= 16.
    DatapPlus16,
    DatapMinus16,
    /// extra_context.size += 8.
    ExtraSizeMisaligned,
    /// extra_context.size := 1 MiB (beyond the 256 KiB frame limit).
    ExtraSizeHuge,
    /// extra_context.head.size := 16.
    ExtraHeadShort,
    /// The terminator after extra_context gets a magic.
    ExtraNoTerminator,
    /// The records from sve_context on are moved behind a new extra_context.
    BuildExtra,
    /// The same with datap 16 bytes too far.
    BuildExtraBadDatap,
}

static EDIT: AtomicU32 = AtomicU32::new(0);
static VL_FIELD: AtomicU32 = AtomicU32::new(0);

fn edit() -> Edit {
    let all = [
        Edit::None,
        Edit::WrongVl,
        Edit::Size32,
        Edit::SizeShort,
        Edit::Size8,
        Edit::Size0,
        Edit::HeaderOnly,
        Edit::NoSve,
        Edit::DropTail,
        Edit::StreamingWrongVl,
        Edit::Duplicate,
        Edit::DatapPlus16,
        Edit::DatapMinus16,
        Edit::ExtraSizeMisaligned,
        Edit::ExtraSizeHuge,
        Edit::ExtraHeadShort,
        Edit::ExtraNoTerminator,
        Edit::BuildExtra,
        Edit::BuildExtraBadDatap,
    ];
    all[EDIT.load(Ordering::SeqCst) as usize]
}

/// Exit statuses of a child whose handler could not make its edit.
const NO_FRAME: i32 = 90;
const NO_SVE: i32 = 91;
const NO_EXTRA: i32 = 92;
const NO_ROOM: i32 = 93;

fn terminator(ucx: Ucontext, off: usize) {
    ucx.write_bytes(off, &[0; 16]);
}

extern "C" fn handler(_sig: i32, _info: *mut SigInfo, ucp: *mut u8) {
    let ucx = Ucontext(ucp);
    if ucx.pc() != sve::udf_insn() {
        sys::exit_group(99);
    }
    ucx.set_pc(ucx.pc() + 4);
    let Ok(f) = walk_frame(ucx) else {
        sys::exit_group(NO_FRAME)
    };
    let Some(r) = f.find(SVE_MAGIC) else {
        sys::exit_group(NO_SVE)
    };
    let size = r.size as usize;
    let vl_field = VL_FIELD.load(Ordering::SeqCst) as u16;
    let e = edit();
    let x = f.extra;
    match e {
        Edit::None => {}
        Edit::WrongVl => ucx.write_u16(r.off + 8, vl_field),
        Edit::Size32 | Edit::SizeShort | Edit::HeaderOnly => {
            let n = match e {
                Edit::Size32 => 32,
                Edit::SizeShort => size - 16,
                _ => 16,
            };
            ucx.write_u32(r.off + 4, n as u32);
            terminator(ucx, r.off + n);
        }
        Edit::Size8 => ucx.write_u32(r.off + 4, 8),
        Edit::Size0 => ucx.write_u32(r.off + 4, 0),
        Edit::NoSve => terminator(ucx, r.off),
        Edit::DropTail => terminator(ucx, r.off + size),
        Edit::StreamingWrongVl => {
            ucx.write_u16(r.off + 8, vl_field);
            ucx.write_u16(r.off + 10, sve::SVE_SIG_FLAG_SM);
        }
        Edit::Duplicate => {
            let vl = ucx.read_u16(r.off + 8);
            ucx.write_u32(r.off + size, SVE_MAGIC);
            ucx.write_u32(r.off + size + 4, 16);
            ucx.write_u16(r.off + size + 8, vl);
            ucx.write_bytes(r.off + size + 10, &[0; 6]);
            terminator(ucx, r.off + size + 16);
        }
        Edit::DatapPlus16 | Edit::DatapMinus16 | Edit::ExtraSizeMisaligned => {
            let Some(x) = x else {
                sys::exit_group(NO_EXTRA)
            };
            match e {
                Edit::DatapPlus16 => ucx.write_u64(x.off + 8, x.datap + 16),
                Edit::DatapMinus16 => ucx.write_u64(x.off + 8, x.datap - 16),
                _ => ucx.write_u32(x.off + 16, x.size + 8),
            }
        }
        Edit::ExtraSizeHuge | Edit::ExtraHeadShort | Edit::ExtraNoTerminator => {
            let Some(x) = x else {
                sys::exit_group(NO_EXTRA)
            };
            match e {
                Edit::ExtraSizeHuge => ucx.write_u32(x.off + 16, 1 << 20),
                Edit::ExtraHeadShort => ucx.write_u32(x.off + 4, 16),
                _ => ucx.write_u32(x.off + 32, 0x5a5a),
            }
        }
        Edit::BuildExtra | Edit::BuildExtraBadDatap => {
            if x.is_some() || f.end + 48 > uc::RESERVED + uc::RESERVED_SIZE {
                sys::exit_group(NO_ROOM);
            }
            let moved = ucx.read_bytes(r.off, f.end - r.off);
            ucx.write_bytes(r.off + 48, &moved);
            let mut datap = ucp as u64 + (r.off + 48) as u64;
            if e == Edit::BuildExtraBadDatap {
                datap += 16;
            }
            ucx.write_u32(r.off, EXTRA_MAGIC);
            ucx.write_u32(r.off + 4, 32);
            ucx.write_u64(r.off + 8, datap);
            ucx.write_u32(r.off + 16, moved.len() as u32);
            ucx.write_bytes(r.off + 20, &[0; 12]);
            terminator(ucx, r.off + 32);
        }
    }
}

/// How a case must end.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Want {
    Segv,
    /// Accepted, all SVE registers as loaded.
    Full,
    /// Accepted as FPSIMD-only: V0-V31 kept, the rest zero.
    FpsimdOnly,
}

/// Runs one case in a child at length `vl`: load a pattern, `udf`, the handler edits the frame.
fn case(vl: usize, e: Edit, vl_field: usize, want: Want) -> TestResult {
    EDIT.store(e as u32, Ordering::SeqCst);
    VL_FIELD.store(vl_field as u32, Ordering::SeqCst);
    let st = t!(in_child(|| {
        if set_handler(SIGILL, handler, 0, 0).is_err() || sve::set_vl(vl) != Ok(vl) {
            return 2;
        }
        let p = SveRegs::pattern(vl, 0x5157 + e as u64);
        let out = sve::load_udf_store(&p);
        let expect = if want == Want::FpsimdOnly {
            p.after_syscall()
        } else {
            p
        };
        match out.diff(&expect) {
            None => 0,
            Some(d) => {
                println!("# {e:?} at vl {vl}: registers after sigreturn:");
                println!("# {}", d.replace('\n', "\n# "));
                1
            }
        }
    }));
    let ok = match want {
        Want::Segv => wifsignaled(st) && wtermsig(st) == SIGSEGV,
        _ => st == 0,
    };
    check!(
        ok,
        "{:?} at vl {}: child {}, want {:?}",
        e,
        vl,
        describe(st),
        want
    );
    Ok(())
}

fn accepted_edits() -> TestResult {
    let vls = sve::need_vls()?;
    let vl = sve::rdvl();
    for (e, want) in [
        (Edit::None, Want::Full),
        (Edit::DropTail, Want::Full),
        (Edit::HeaderOnly, Want::FpsimdOnly),
        (Edit::NoSve, Want::FpsimdOnly),
    ] {
        case(vl, e, 0, want)?;
    }
    let max = *vls.last().unwrap();
    case(max, Edit::None, 0, Want::Full)?;
    case(max, Edit::HeaderOnly, 0, Want::FpsimdOnly)?;
    Ok(())
}

fn wrong_vl() -> TestResult {
    let vls = sve::need_vls()?;
    for &vl in &vls {
        // A smaller length keeps the size check satisfied, so only vl can be at fault.
        let other = if vl > 16 { vl - 16 } else { 32 };
        case(vl, Edit::WrongVl, other, Want::Segv)?;
    }
    let vl = sve::rdvl();
    case(vl, Edit::WrongVl, vl + 16, Want::Segv)?;
    case(vl, Edit::WrongVl, 0, Want::Segv)?;
    Ok(())
}

fn wrong_sizes() -> TestResult {
    let vls = sve::need_vls()?;
    let mut lens = vec![vls[0], sve::rdvl(), *vls.last().unwrap()];
    lens.dedup();
    for vl in lens {
        for e in [Edit::Size32, Edit::SizeShort, Edit::Size8, Edit::Size0] {
            case(vl, e, 0, Want::Segv)?;
        }
    }
    Ok(())
}

fn streaming_flag_with_wrong_vl() -> TestResult {
    sve::need_vls()?;
    let vl = sve::rdvl();
    // Without SME the flag alone is fatal; with SME the vl must be the SME one, so give it one
    // that is not.
    let field = match sve::prctl(sve::PR_SME_GET_VL, 0) {
        Ok(sme) if sme & sve::PR_SVE_VL_LEN_MASK == vl => vl + 16,
        _ => vl,
    };
    case(vl, Edit::StreamingWrongVl, field, Want::Segv)
}

fn duplicate_sve_context() -> TestResult {
    sve::need_vls()?;
    case(sve::rdvl(), Edit::Duplicate, 0, Want::Segv)
}

fn built_extra_context() -> TestResult {
    let vls = sve::need_vls()?;
    // Every length whose frame leaves room to move the records 48 bytes up.
    let small: Vec<usize> = vls.iter().copied().filter(|&v| v <= 64).collect();
    for &vl in &small {
        case(vl, Edit::BuildExtra, 0, Want::Full)?;
        case(vl, Edit::BuildExtraBadDatap, 0, Want::Segv)?;
    }
    Ok(())
}

fn bad_extra_context() -> TestResult {
    let vls = sve::need_vls()?;
    let max = *vls.last().unwrap();
    if 528 + sve::sig_context_size(max).next_multiple_of(16) <= RESERVED_BUDGET {
        return skip("no vector length needs an extra_context here");
    }
    case(max, Edit::None, 0, Want::Full)?;
    for e in [
        Edit::DatapPlus16,
        Edit::DatapMinus16,
        Edit::ExtraSizeMisaligned,
        Edit::ExtraSizeHuge,
        Edit::ExtraHeadShort,
        Edit::ExtraNoTerminator,
    ] {
        case(max, e, 0, Want::Segv)?;
    }
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("sve_sigreturn_accepted_edits", accepted_edits),
        ("sve_sigreturn_wrong_vl_segv", wrong_vl),
        ("sve_sigreturn_wrong_size_segv", wrong_sizes),
        (
            "sve_sigreturn_sm_flag_wrong_vl_segv",
            streaming_flag_with_wrong_vl,
        ),
        ("sve_sigreturn_duplicate_sve_segv", duplicate_sve_context),
        ("sve_sigreturn_built_extra_context", built_extra_context),
        ("sve_sigreturn_bad_extra_context_segv", bad_extra_context),
    ])
}

entry!(main);
