//! Register access through ptrace regsets, both ways: the tracee loads a pattern and stops
//! (`brk`/`udf`, no syscall in between, so SVE/SME state stays live), the tracer checks what it
//! reads, writes another pattern and steps the pc over the trapping instruction, and the tracee
//! checks what its registers hold afterwards. NT_PRSTATUS (and the pstate rules), NT_PRFPREG,
//! NT_ARM_TLS, NT_ARM_SVE at every VL (FPSIMD and SVE formats, VL changes, INHERIT/ONEXEC),
//! NT_ARM_SSVE/NT_ARM_ZA/NT_ARM_ZT at every SME VL, the error matrix, short reads, registers
//! rewritten across CPU migrations, and a SETREGSET fuzz loop.
#![no_std]
#![no_main]

use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::ptrace::{self as pt, expect_exit, wait_end, wait_stop, VecHeader};
use svelt_user::sig::{SIGILL, SIGTRAP};
use svelt_user::sme::{self, Op};
use svelt_user::sve::{self, SveRegs};
use svelt_user::sys::{self, *};
use svelt_user::*;
use zerocopy::IntoBytes;

const SELF: &str = "/bin/tests/ptrace_regs";
const TEST_NS: u64 = 20_000_000_000;

core::arch::global_asm!(
    ".text",
    // void svelt_pt_gpr_brk(const u64 in[29], u64 out[30]): x0-x28 := in, brk, out := x0-x28
    // and NZCV as the tracer left them.
    ".global svelt_pt_gpr_brk",
    ".type svelt_pt_gpr_brk, %function",
    "svelt_pt_gpr_brk:",
    "    stp x29, x30, [sp, #-112]!",
    "    stp x19, x20, [sp, #16]",
    "    stp x21, x22, [sp, #32]",
    "    stp x23, x24, [sp, #48]",
    "    stp x25, x26, [sp, #64]",
    "    stp x27, x28, [sp, #80]",
    "    str x1, [sp, #96]",
    "    mov x30, x0",
    "    ldp x0, x1, [x30, #0]",
    "    ldp x2, x3, [x30, #16]",
    "    ldp x4, x5, [x30, #32]",
    "    ldp x6, x7, [x30, #48]",
    "    ldp x8, x9, [x30, #64]",
    "    ldp x10, x11, [x30, #80]",
    "    ldp x12, x13, [x30, #96]",
    "    ldp x14, x15, [x30, #112]",
    "    ldp x16, x17, [x30, #128]",
    "    ldp x18, x19, [x30, #144]",
    "    ldp x20, x21, [x30, #160]",
    "    ldp x22, x23, [x30, #176]",
    "    ldp x24, x25, [x30, #192]",
    "    ldp x26, x27, [x30, #208]",
    "    ldr x28, [x30, #224]",
    ".global svelt_pt_gpr_brk_insn",
    "svelt_pt_gpr_brk_insn:",
    "    brk #0x5f",
    "    mrs x29, nzcv",
    "    ldr x30, [sp, #96]",
    "    stp x0, x1, [x30, #0]",
    "    stp x2, x3, [x30, #16]",
    "    stp x4, x5, [x30, #32]",
    "    stp x6, x7, [x30, #48]",
    "    stp x8, x9, [x30, #64]",
    "    stp x10, x11, [x30, #80]",
    "    stp x12, x13, [x30, #96]",
    "    stp x14, x15, [x30, #112]",
    "    stp x16, x17, [x30, #128]",
    "    stp x18, x19, [x30, #144]",
    "    stp x20, x21, [x30, #160]",
    "    stp x22, x23, [x30, #176]",
    "    stp x24, x25, [x30, #192]",
    "    stp x26, x27, [x30, #208]",
    "    stp x28, x29, [x30, #224]",
    "    ldp x19, x20, [sp, #16]",
    "    ldp x21, x22, [sp, #32]",
    "    ldp x23, x24, [sp, #48]",
    "    ldp x25, x26, [sp, #64]",
    "    ldp x27, x28, [sp, #80]",
    "    ldp x29, x30, [sp], #112",
    "    ret",
    ".size svelt_pt_gpr_brk, . - svelt_pt_gpr_brk",
    // void svelt_pt_fp_brk(const u8 in[520], u8 out[520]): V0-V31 and FPSR := in (512 + 4
    // bytes), brk, out := V0-V31, FPSR, FPCR; FPCR is put back as it was.
    ".global svelt_pt_fp_brk",
    ".type svelt_pt_fp_brk, %function",
    "svelt_pt_fp_brk:",
    "    stp d8, d9, [sp, #-64]!",
    "    stp d10, d11, [sp, #16]",
    "    stp d12, d13, [sp, #32]",
    "    stp d14, d15, [sp, #48]",
    "    mrs x10, fpcr",
    "    mov x11, x1",
    "    ldr w9, [x0, #512]",
    "    msr fpsr, x9",
    "    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
    "    ldr q\\n, [x0, #\\n*16]",
    "    .endr",
    "    brk #0x5f",
    "    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
    "    str q\\n, [x11, #\\n*16]",
    "    .endr",
    "    mrs x9, fpsr",
    "    str w9, [x11, #512]",
    "    mrs x9, fpcr",
    "    str w9, [x11, #516]",
    "    msr fpcr, x10",
    "    msr fpsr, xzr",
    "    ldp d10, d11, [sp, #16]",
    "    ldp d12, d13, [sp, #32]",
    "    ldp d14, d15, [sp, #48]",
    "    ldp d8, d9, [sp], #64",
    "    ret",
    ".size svelt_pt_fp_brk, . - svelt_pt_fp_brk",
    // u64 svelt_pt_zt_brk(const u8 in[64] or NULL, u8 out[64]): with `in`, SMSTART ZA and
    // ZT0 := in; brk; if PSTATE.ZA, out := ZT0; SMSTOP ZA; returns SVCR as it was after brk.
    ".arch_extension sme2",
    ".global svelt_pt_zt_brk",
    ".type svelt_pt_zt_brk, %function",
    "svelt_pt_zt_brk:",
    "    cbz x0, 1f",
    "    smstart za",
    "    ldr zt0, [x0]",
    "1:  brk #0x5f",
    "    mrs x9, S3_3_C4_C2_2",
    "    tbz x9, #1, 2f",
    "    str zt0, [x1]",
    "    smstop za",
    "2:  mov x0, x9",
    "    ret",
    ".size svelt_pt_zt_brk, . - svelt_pt_zt_brk",
);

extern "C" {
    fn svelt_pt_gpr_brk(input: *const u64, out: *mut u64);
    fn svelt_pt_gpr_brk_insn();
    fn svelt_pt_fp_brk(input: *const u8, out: *mut u8);
    fn svelt_pt_zt_brk(input: *const u8, out: *mut u8) -> u64;
}

/// Stops the caller with SIGTRAP (the tracer steps the pc over the brk).
fn brk() {
    // SAFETY: a breakpoint; the tracer resumes us after it.
    unsafe { core::arch::asm!("brk #0x5f", options(nomem, nostack)) };
}

/// Forks a traced child (PTRACE_TRACEME) that runs `f`: exit 0 if it succeeded, else prints
/// why and exits 1.
fn tracee(f: impl FnOnce() -> TestResult) -> Result<i32, String> {
    spawn(|| {
        if pt::traceme().is_err() {
            return 2;
        }
        ktap::child_status("tracee", f())
    })
    .map_err(|e| format!("fork: {e:?}"))
}

/// Waits for a stop with `sig`, failing with the status otherwise.
fn stop_sig(pid: i32, sig: i32) -> TestResult {
    let st = wait_stop(pid).map_err(|e| format!("waiting for signal {sig}: {e}"))?;
    check_eq!(st >> 8, sig, "stop status {st:#x}");
    Ok(())
}

/// Steps over the brk/udf the tracee stopped at and resumes it without the signal.
fn step_cont(pid: i32) -> TestResult {
    t!(pt::advance_pc(pid, 4));
    t!(pt::cont(pid, 0));
    Ok(())
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

// ---- NT_PRSTATUS ----

fn gpr_pattern(seed: u64) -> [u64; 29] {
    core::array::from_fn(|i| splitmix(seed * 100 + i as u64))
}

fn prstatus() -> TestResult {
    let pid = tracee(|| {
        let input = gpr_pattern(1);
        let mut out = [0u64; 30];
        // SAFETY: in and out are the sizes the routine uses.
        unsafe { svelt_pt_gpr_brk(input.as_ptr(), out.as_mut_ptr()) };
        let want = gpr_pattern(2);
        for (i, (g, w)) in out.iter().zip(want.iter()).enumerate() {
            check_eq!(*g, *w, "x{i} as the tracer wrote it");
        }
        check_eq!(
            out[29] & pt::PSR_NZCV,
            0xa000_0000,
            "NZCV as the tracer wrote it"
        );
        Ok(())
    })?;
    stop_sig(pid, SIGTRAP)?;
    let brk_at = svelt_pt_gpr_brk_insn as *const () as u64;
    let si = t!(pt::getsiginfo(pid));
    check_eq!(
        (si.signo, si.code, si.addr()),
        (SIGTRAP, sig::TRAP_BRKPT, brk_at)
    );
    let r = t!(pt::get_regs(pid));
    check_eq!(r.pc, brk_at);
    check_eq!(
        &r.regs[..29],
        &gpr_pattern(1)[..],
        "x0-x28 loaded by the tracee"
    );
    check!(r.sp & 15 == 0 && r.sp != 0, "sp {:#x}", r.sp);
    check_eq!(
        r.pstate & (pt::PSR_MODE_MASK | pt::PSR_MODE32_BIT),
        0,
        "EL0t, AArch64"
    );
    // Short reads: the leading bytes, iov_len updated; a long buffer is cut to 272.
    let mut b = [0u8; 16];
    check_eq!(t!(pt::getregset(pid, pt::NT_PRSTATUS, &mut b)), 16);
    check_eq!(u64::from_le_bytes(b[8..].try_into().unwrap()), r.regs[1]);
    let mut big = [0u8; 4096];
    check_eq!(t!(pt::getregset(pid, pt::NT_PRSTATUS, &mut big)), 272);
    check_eq!(&big[..272], r.as_bytes());
    // pstate: no other EL, no AArch32, no DAIF masking; each refused whole.
    for (what, bits) in [
        ("EL1h", pt::PSR_MODE_EL1H),
        ("AArch32", pt::PSR_MODE32_BIT),
        ("D", pt::PSR_D_BIT),
        ("A", pt::PSR_A_BIT),
        ("I", pt::PSR_I_BIT),
        ("F", pt::PSR_F_BIT),
    ] {
        let mut bad = r;
        bad.regs[0] = 0x666;
        bad.pstate |= bits;
        check_eq!(pt::set_regs(pid, &bad), Err(EINVAL), "pstate with {what}");
        check_eq!(
            t!(pt::get_regs(pid)),
            r,
            "registers after a refused write ({what})"
        );
    }
    // A short write changes only the leading registers.
    check_eq!(
        t!(pt::setregset(pid, pt::NT_PRSTATUS, &0x77u64.to_le_bytes())),
        8
    );
    check_eq!(t!(pt::get_regs(pid)).regs[0], 0x77);
    check_eq!(t!(pt::get_regs(pid)).regs[1], r.regs[1]);
    let mut w = r;
    w.regs[..29].copy_from_slice(&gpr_pattern(2));
    w.pstate = (w.pstate & !pt::PSR_NZCV) | 0xa000_0000;
    w.pc += 4;
    t!(pt::set_regs(pid, &w));
    check_eq!(t!(pt::get_regs(pid)), w);
    t!(pt::cont(pid, 0));
    expect_exit(pid, 0)
}

// ---- NT_PRFPREG, and NT_ARM_SVE in FPSIMD format ----

fn fp_image(seed: u64, fpsr: u32) -> [u8; 520] {
    let mut b = [0u8; 520];
    for (i, c) in b[..512].chunks_mut(8).enumerate() {
        c.copy_from_slice(&splitmix(seed * 1000 + i as u64).to_le_bytes());
    }
    b[512..516].copy_from_slice(&fpsr.to_le_bytes());
    b
}

/// The tracee: V/FPSR := image(1), stop; then checks V/FPSR/FPCR against what `want` says.
fn fp_tracee(want_seed: u64, want_fpsr: u32, want_fpcr: u32) -> Result<i32, String> {
    tracee(move || {
        let input = fp_image(1, 0x0800_0001);
        let mut out = [0u8; 520];
        // SAFETY: buffers of the routine's sizes.
        unsafe { svelt_pt_fp_brk(input.as_ptr(), out.as_mut_ptr()) };
        let want = fp_image(want_seed, want_fpsr);
        if let Some(d) = sme::diff("V0-V31", &out[..512], &want[..512]) {
            return Err(d);
        }
        let w = |o: usize| u32::from_le_bytes(out[o..o + 4].try_into().unwrap());
        check_eq!(w(512), want_fpsr, "FPSR");
        check_eq!(w(516), want_fpcr, "FPCR");
        Ok(())
    })
}

fn prfpreg() -> TestResult {
    let pid = fp_tracee(2, 0x0800_0010, 0x0040_0000)?;
    stop_sig(pid, SIGTRAP)?;
    let got = t!(pt::getregset_vec(pid, pt::NT_PRFPREG, 4096));
    check_eq!(got.len(), pt::FPSIMD_SIZE);
    let f = pt::UserFpsimd::from_bytes(&got);
    let img = fp_image(1, 0x0800_0001);
    if let Some(d) = sme::diff("V0-V31", &got[..512], &img[..512]) {
        return Err(d);
    }
    check_eq!((f.fpsr, f.fpcr), (0x0800_0001, 0));
    let mut nf = pt::UserFpsimd::from_bytes(&fp_image(2, 0));
    nf.fpsr = 0x0800_0010;
    nf.fpcr = 0x0040_0000;
    check_eq!(
        t!(pt::setregset(pid, pt::NT_PRFPREG, nf.as_bytes())),
        pt::FPSIMD_SIZE
    );
    check_eq!(
        t!(pt::getregset_vec(pid, pt::NT_PRFPREG, 528)),
        nf.as_bytes()
    );
    step_cont(pid)?;
    expect_exit(pid, 0)
}

fn sve_fpsimd_format() -> TestResult {
    let vls = sve::need_vls()?;
    let max = *vls.last().unwrap();
    let pid = fp_tracee(3, 0x0800_0002, 0x0080_0000)?;
    stop_sig(pid, SIGTRAP)?;
    let fp = t!(pt::getregset_vec(pid, pt::NT_PRFPREG, 528));
    let b = t!(pt::getregset_vec(pid, pt::NT_ARM_SVE, pt::SVE_PT_MAX + 64));
    let h = VecHeader::parse(&b).ok_or("short NT_ARM_SVE")?;
    check_eq!(
        h.flags & pt::SVE_PT_REGS_MASK,
        pt::SVE_PT_REGS_FPSIMD,
        "flags {:#x}",
        h.flags
    );
    check_eq!(h.size as usize, 544);
    check_eq!(
        b.len(),
        pt::SVE_PT_MAX,
        "iov_len returned (the regset's size)"
    );
    check_eq!(h.vl as usize, sve::get_vl().unwrap_or(0) & 0xffff, "vl");
    check_eq!(h.max_vl as usize, max, "max_vl");
    check_eq!(
        h.max_size as usize,
        pt::sve_pt_size(max / 16, pt::SVE_PT_REGS_SVE),
        "max_size"
    );
    check_eq!(&b[16..544], &fp[..], "the FPSIMD payload is NT_PRFPREG");
    // Short read: the header alone.
    let mut hb = [0u8; 16];
    check_eq!(t!(pt::getregset(pid, pt::NT_ARM_SVE, &mut hb)), 16);
    check_eq!(VecHeader::parse(&hb), Some(h));
    // Write in FPSIMD format.
    let mut nf = pt::UserFpsimd::from_bytes(&fp_image(3, 0));
    nf.fpsr = 0x0800_0002;
    nf.fpcr = 0x0080_0000;
    t!(pt::setregset(
        pid,
        pt::NT_ARM_SVE,
        &pt::build_fpsimd(h.vl as usize, 0, &nf)
    ));
    check_eq!(
        t!(pt::getregset_vec(pid, pt::NT_PRFPREG, 528)),
        nf.as_bytes()
    );
    step_cont(pid)?;
    expect_exit(pid, 0)
}

// ---- NT_ARM_TLS ----

fn tls() -> TestResult {
    let has_sme = sme::has_sme();
    let pid = tracee(move || {
        let old = tpidr_el0();
        // SAFETY: nothing in this program reads TPIDR_EL0 (no TLS); restored below.
        unsafe { core::arch::asm!("msr tpidr_el0, {}", in(reg) 0x1111_2222_3333_4444u64) };
        if has_sme {
            sme::set_tpidr2(0x5555_6666);
        }
        brk();
        let (t0, t2) = (tpidr_el0() as u64, if has_sme { sme::tpidr2() } else { 0 });
        // SAFETY: as above.
        unsafe { core::arch::asm!("msr tpidr_el0, {}", in(reg) old) };
        check_eq!(t0, 0xaaaa_bbbb_cccc_dddd, "TPIDR_EL0");
        if has_sme {
            check_eq!(t2, 0x7777_8888, "TPIDR2_EL0");
        }
        Ok(())
    })?;
    stop_sig(pid, SIGTRAP)?;
    let b = t!(pt::getregset_vec(pid, pt::NT_ARM_TLS, 64));
    let words: Vec<u64> = b
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    if has_sme {
        check_eq!(words, vec![0x1111_2222_3333_4444, 0x5555_6666]);
    } else {
        check_eq!(words[0], 0x1111_2222_3333_4444);
    }
    let mut nb = Vec::new();
    nb.extend_from_slice(&0xaaaa_bbbb_cccc_ddddu64.to_le_bytes());
    nb.extend_from_slice(&0x7777_8888u64.to_le_bytes());
    nb.truncate(b.len());
    check_eq!(t!(pt::setregset(pid, pt::NT_ARM_TLS, &nb)), b.len());
    step_cont(pid)?;
    expect_exit(pid, 0)
}

// ---- NT_ARM_TAGGED_ADDR_CTRL, and the checks every regset shares ----

const PR_SET_TAGGED_ADDR_CTRL: usize = 55;
const PR_GET_TAGGED_ADDR_CTRL: usize = 56;
const NT_ARM_POE: usize = 0x40f;
const NT_ARM_GCS: usize = 0x410;

fn tagged_addr_ctrl() -> TestResult {
    let prctl = |op: usize, a2: usize| sys::syscall(nr::PRCTL, &[op, a2, 0, 0, 0]);
    let pid = tracee(move || {
        t!(prctl(PR_SET_TAGGED_ADDR_CTRL, 1));
        brk();
        // The tracer turned it off.
        check_eq!(prctl(PR_GET_TAGGED_ADDR_CTRL, 0), Ok(0));
        Ok(())
    })?;
    stop_sig(pid, SIGTRAP)?;
    let word = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().unwrap());
    let b = t!(pt::getregset_vec(pid, pt::NT_ARM_TAGGED_ADDR_CTRL, 16));
    check_eq!(
        (b.len(), word(&b)),
        (8, 1),
        "PR_TAGGED_ADDR_ENABLE as the tracee set it"
    );
    // Bits other than PR_TAGGED_ADDR_ENABLE (MTE's, without MTE): EINVAL, nothing changes.
    check_eq!(
        pt::setregset(pid, pt::NT_ARM_TAGGED_ADDR_CTRL, &2u64.to_le_bytes()),
        Err(EINVAL)
    );
    check_eq!(
        pt::setregset(pid, pt::NT_ARM_TAGGED_ADDR_CTRL, &[0u8; 4]),
        Err(EINVAL),
        "a length that is not a multiple of 8"
    );
    check_eq!(
        word(&t!(pt::getregset_vec(pid, pt::NT_ARM_TAGGED_ADDR_CTRL, 8))),
        1
    );
    check_eq!(
        t!(pt::setregset(
            pid,
            pt::NT_ARM_TAGGED_ADDR_CTRL,
            &0u64.to_le_bytes()
        )),
        8
    );
    check_eq!(
        word(&t!(pt::getregset_vec(pid, pt::NT_ARM_TAGGED_ADDR_CTRL, 8))),
        0
    );
    step_cont(pid)?;
    expect_exit(pid, 0)
}

/// A SETREGSET whose buffer lies outside user space is EFAULT for every regset Linux knows,
/// whether or not this CPU has what the regset describes (the range is checked first); a
/// length that is not a multiple of the regset's unit is EINVAL before that.
fn regset_bad_buffers() -> TestResult {
    let pid = tracee(|| {
        brk();
        Ok(())
    })?;
    stop_sig(pid, SIGTRAP)?;
    let set_at = |nt: usize, base: usize, len: usize| {
        let mut iov = [base, len];
        pt::ptrace(pt::PTRACE_SETREGSET, pid, nt, iov.as_mut_ptr() as usize)
    };
    let kernel = 0xffff_8000_0000_0000usize;
    for (nt, unit) in [
        (pt::NT_ARM_ZT, 64),
        (pt::NT_ARM_FPMR, 8),
        (NT_ARM_POE, 8),
        (NT_ARM_GCS, 8),
        (pt::NT_ARM_TLS, 8),
        (pt::NT_ARM_TAGGED_ADDR_CTRL, 8),
    ] {
        check_eq!(set_at(nt, kernel, unit), Err(EFAULT), "note {nt:#x}");
        if unit > 4 {
            check_eq!(set_at(nt, kernel, 4), Err(EINVAL), "note {nt:#x}, 4 bytes");
        }
    }
    // An unknown note type is EINVAL whatever the buffer.
    check_eq!(set_at(0x4ff, kernel, 8), Err(EINVAL));
    step_cont(pid)?;
    expect_exit(pid, 0)
}

// ---- NT_ARM_SVE ----

/// Reads NT_ARM_SVE (or SSVE) and checks the header's SVE format at `vl`.
fn read_sve(pid: i32, nt: usize, vl: usize) -> Result<Vec<u8>, String> {
    let mut b = t!(pt::getregset_vec(pid, nt, pt::SVE_PT_MAX + 64));
    // iov_len comes back clamped to the regset's size, not cut to the data.
    check_eq!(b.len(), pt::SVE_PT_MAX, "iov_len returned");
    let h = VecHeader::parse(&b).ok_or("short read")?;
    check_eq!(
        h.flags & pt::SVE_PT_REGS_MASK,
        pt::SVE_PT_REGS_SVE,
        "flags {:#x}",
        h.flags
    );
    check_eq!(h.vl as usize, vl, "vl");
    check_eq!(
        h.size as usize,
        pt::sve_pt_size(vl / 16, pt::SVE_PT_REGS_SVE),
        "size"
    );
    b.truncate(h.size as usize);
    Ok(b)
}

fn sve_every_vl() -> TestResult {
    let vls = sve::need_vls()?;
    let v2 = vls.clone();
    let pid = tracee(move || {
        for &vl in &v2 {
            t!(sve::set_vl(vl));
            let out = sve::load_udf_store(&SveRegs::pattern(vl, 1));
            if let Some(d) = out.diff(&SveRegs::pattern(vl, 2)) {
                return Err(format!("after the tracer's write at vl {vl}: {d}"));
            }
        }
        // The tracer changes the VL with a header-only write (and sets INHERIT).
        let (lo, hi) = (v2[0], *v2.last().unwrap());
        t!(sve::set_vl(lo));
        let out = sve::load_udf_store(&SveRegs::pattern(lo, 3));
        check_eq!(out.vl, hi, "VL after a header-only write");
        if let Some(d) = out.diff(&SveRegs::zeroed(hi)) {
            return Err(format!("registers after a header-only write: {d}"));
        }
        let g = t!(sve::get_vl());
        check_eq!(
            g,
            hi | sve::PR_SVE_VL_INHERIT,
            "PR_SVE_GET_VL after the write"
        );
        // ONEXEC: the VL for the next exec; the current one stays.
        brk();
        check_eq!(sve::rdvl(), hi, "VL after an ONEXEC write");
        let e = sys::execve(SELF, &[SELF, "--exit-vq"], &[]);
        Err(format!("execve: {e:?}"))
    })?;
    for &vl in &vls {
        stop_sig(pid, SIGILL)?;
        let b = read_sve(pid, pt::NT_ARM_SVE, vl)?;
        let want = SveRegs::pattern(vl, 1);
        if let Some(d) = sme::z_diff("Z/P/FFR", vl, pt::sve_zpf(&b, vl).unwrap(), &want.bytes) {
            return Err(format!("vl {vl}: {d}"));
        }
        let (fpsr, fpcr) = pt::sve_fpsr_fpcr(&b, vl).unwrap();
        let w = pt::build_sve(vl, 0, &SveRegs::pattern(vl, 2).bytes, fpsr, fpcr);
        check_eq!(t!(pt::setregset(pid, pt::NT_ARM_SVE, &w)), w.len());
        let rb = t!(pt::getregset_vec(pid, pt::NT_ARM_SVE, w.len()));
        let rh = VecHeader::parse(&rb).ok_or("short")?;
        check_eq!(
            (rh.size as usize, rh.vl as usize, rh.flags),
            (w.len(), vl, 1),
            "read back at vl {vl}"
        );
        check!(
            rb[16..] == w[16..],
            "read back at vl {vl}: the payload differs"
        );
        step_cont(pid)?;
    }
    let (lo, hi) = (vls[0], *vls.last().unwrap());
    stop_sig(pid, SIGILL)?;
    read_sve(pid, pt::NT_ARM_SVE, lo)?;
    let h = VecHeader::new(16, hi, pt::SVE_PT_REGS_SVE | pt::SVE_PT_VL_INHERIT);
    check_eq!(t!(pt::setregset(pid, pt::NT_ARM_SVE, h.as_bytes())), 16);
    let b = t!(pt::getregset_vec(pid, pt::NT_ARM_SVE, pt::SVE_PT_MAX));
    let rh = VecHeader::parse(&b).ok_or("short")?;
    check_eq!(
        (rh.vl as usize, rh.flags),
        (hi, pt::SVE_PT_REGS_SVE | pt::SVE_PT_VL_INHERIT)
    );
    step_cont(pid)?;
    stop_sig(pid, SIGTRAP)?;
    let h = VecHeader::new(16, lo, pt::SVE_PT_VL_ONEXEC);
    t!(pt::setregset(pid, pt::NT_ARM_SVE, h.as_bytes()));
    step_cont(pid)?;
    stop_sig(pid, SIGTRAP)?; // the legacy post-execve stop
    t!(pt::cont(pid, 0));
    expect_exit(pid, (lo / 16) as i32)
}

fn sve_errors() -> TestResult {
    let vls = sve::need_vls()?;
    let pid = tracee(|| {
        brk();
        Ok(())
    })?;
    stop_sig(pid, SIGTRAP)?;
    let vl = vls[0];
    check_eq!(
        pt::setregset(pid, pt::NT_ARM_SVE, &[]),
        Err(EINVAL),
        "empty write"
    );
    check_eq!(
        pt::setregset(pid, pt::NT_ARM_SVE, &[0u8; 8]),
        Err(EINVAL),
        "8 bytes"
    );
    let h = VecHeader::new(16, 17, pt::SVE_PT_REGS_SVE);
    check_eq!(
        pt::setregset(pid, pt::NT_ARM_SVE, h.as_bytes()),
        Err(EINVAL),
        "vl 17"
    );
    let mut b = [0u8; 64];
    check_eq!(
        pt::getregset(pid, pt::NT_ARM_SVE, &mut b[..8]),
        Err(EINVAL),
        "iov_len 8"
    );
    // A payload at a VL the system cannot give: EIO.
    let bad = pt::build_sve(512, 0, &[], 0, 0);
    check_eq!(
        pt::setregset(pid, pt::NT_ARM_SVE, &bad),
        Err(EIO),
        "payload at vl 512"
    );
    if let Some(&odd) = (16..=256).step_by(16).find(|v| !vls.contains(v)).as_ref() {
        let bad = pt::build_sve(odd, 0, &[], 0, 0);
        check_eq!(
            pt::setregset(pid, pt::NT_ARM_SVE, &bad),
            Err(EIO),
            "payload at vl {odd}"
        );
    }
    let ok = pt::build_sve(vl, 0, &SveRegs::pattern(vl, 5).bytes, 0, 0);
    t!(pt::setregset(pid, pt::NT_ARM_SVE, &ok));
    if sme::has_sme() {
        let svl = sme::sme_vls()[0];
        let f = pt::build_fpsimd(svl, 0, &pt::UserFpsimd::from_bytes(&[]));
        check_eq!(
            pt::setregset(pid, pt::NT_ARM_SSVE, &f),
            Err(EINVAL),
            "SSVE in FPSIMD format"
        );
        check_eq!(
            pt::setregset(pid, pt::NT_ARM_ZA, &[0u8; 8]),
            Err(EINVAL),
            "ZA: 8 bytes"
        );
        let bad = pt::build_za(512, 0, &[]);
        check_eq!(
            pt::setregset(pid, pt::NT_ARM_ZA, &bad),
            Err(EIO),
            "ZA payload at vl 512"
        );
        if !sme::has_sme2() {
            check_eq!(
                pt::getregset(pid, pt::NT_ARM_ZT, &mut b),
                Err(EINVAL),
                "ZT without SME2"
            );
        } else {
            check_eq!(
                pt::getregset(pid, pt::NT_ARM_ZT, &mut b[..32]),
                Err(EINVAL),
                "ZT iov_len 32"
            );
        }
    } else {
        check_eq!(
            pt::getregset(pid, pt::NT_ARM_ZA, &mut b),
            Err(EINVAL),
            "ZA without SME"
        );
        check_eq!(
            pt::getregset(pid, pt::NT_ARM_SSVE, &mut b),
            Err(EINVAL),
            "SSVE without SME"
        );
    }
    step_cont(pid)?;
    expect_exit(pid, 0)
}

// ---- SME: NT_ARM_SSVE, NT_ARM_ZA, NT_ARM_ZT ----

fn fa64() -> u64 {
    if sme::has_fa64() {
        sme::F_FA64
    } else {
        0
    }
}

/// Runs `op` (with A_BRK) with room for Z at any VL and ZA at any SVL; returns the outputs.
fn run_op(mut op: Op, z_in: Option<&[u8]>, za_in: Option<&[u8]>) -> (Op, Vec<u8>, Vec<u8>) {
    let mut z_out = vec![0u8; sme::z_image_len(256)];
    let mut za_out = vec![0u8; 256 * 256];
    op.z_in = z_in.map_or(0, |z| z.as_ptr() as usize);
    op.za_in = za_in.map_or(0, |z| z.as_ptr() as usize);
    op.action = sme::A_BRK;
    op.z_out = z_out.as_mut_ptr() as usize;
    op.za_out = za_out.as_mut_ptr() as usize;
    sme::run(&mut op);
    (op, z_out, za_out)
}

fn sme_ssve_za() -> TestResult {
    sme::need_sme()?;
    let svls = sme::sme_vls();
    let fa = fa64() != 0;
    let sv = svls.clone();
    let pid = tracee(move || {
        for &svl in &sv {
            t!(sme::sme_set_vl(svl));
            let zl = sme::z_image_len(svl);
            // 1: streaming, the tracer rewrites Z/P(/FFR).
            let (o, z, _) = run_op(
                Op {
                    flags: sme::F_SM | fa64(),
                    ..Op::default()
                },
                Some(&sme::z_pattern(1, svl, fa)),
                None,
            );
            check_eq!(o.svcr_after & sme::SVCR_SM, 1, "svl {svl}: still streaming");
            if let Some(d) = sme::z_diff("ssve", svl, &z[..zl], &sme::z_pattern(2, svl, fa)) {
                return Err(format!("svl {svl}: {d}"));
            }
            // 2: not streaming; the tracer's NT_ARM_SSVE write enters streaming mode.
            let (o, z, _) = run_op(
                Op {
                    flags: fa64(),
                    ..Op::default()
                },
                None,
                None,
            );
            check_eq!(
                o.svcr_after & sme::SVCR_SM,
                1,
                "svl {svl}: SSVE write entered streaming"
            );
            check_eq!(o.vl_after as usize, svl);
            if let Some(d) = sme::z_diff("ssve entered", svl, &z[..zl], &sme::z_pattern(3, svl, fa))
            {
                return Err(format!("svl {svl}: {d}"));
            }
            // 3: ZA on, rewritten.
            let za = sme::pattern(4, svl * svl);
            let (o, _, zo) = run_op(
                Op {
                    flags: sme::F_ZA,
                    ..Op::default()
                },
                None,
                Some(&za),
            );
            check_eq!(o.out_flags & sme::O_ZA, sme::O_ZA, "svl {svl}: ZA on");
            if let Some(d) = sme::diff("ZA", &zo[..svl * svl], &sme::pattern(5, svl * svl)) {
                return Err(format!("svl {svl}: {d}"));
            }
            // 4: ZA off; the tracer's write turns it on.
            let (o, _, zo) = run_op(Op::default(), None, None);
            check_eq!(
                o.svcr_after & sme::SVCR_ZA,
                sme::SVCR_ZA,
                "svl {svl}: ZA write enabled ZA"
            );
            if let Some(d) = sme::diff("ZA", &zo[..svl * svl], &sme::pattern(6, svl * svl)) {
                return Err(format!("svl {svl}: {d}"));
            }
            // 5: ZA on; a header-only write turns it off.
            let (o, _, _) = run_op(
                Op {
                    flags: sme::F_ZA,
                    ..Op::default()
                },
                None,
                Some(&za),
            );
            check_eq!(
                o.svcr_after & sme::SVCR_ZA,
                0,
                "svl {svl}: header-only ZA write"
            );
        }
        Ok(())
    })?;
    let brk_at = sme::brk_addr();
    for &svl in &svls {
        let vq = svl / 16;
        // 1
        stop_sig(pid, SIGTRAP)?;
        check_eq!(t!(pt::get_regs(pid)).pc, brk_at);
        let b = read_sve(pid, pt::NT_ARM_SSVE, svl)?;
        if let Some(d) = sme::z_diff(
            "ssve read",
            svl,
            pt::sve_zpf(&b, svl).unwrap(),
            &sme::z_pattern(1, svl, fa),
        ) {
            return Err(format!("svl {svl}: {d}"));
        }
        let s = t!(pt::getregset_vec(pid, pt::NT_ARM_SVE, pt::SVE_PT_MAX));
        let h = VecHeader::parse(&s).ok_or("short")?;
        check_eq!(
            h.flags & pt::SVE_PT_REGS_MASK,
            pt::SVE_PT_REGS_FPSIMD,
            "NT_ARM_SVE while streaming"
        );
        check_eq!(h.size, 16, "NT_ARM_SVE while streaming: header only");
        let w = pt::build_sve(svl, 0, &sme::z_pattern(2, svl, fa), 0, 0);
        t!(pt::setregset(pid, pt::NT_ARM_SSVE, &w));
        step_cont(pid)?;
        // 2
        stop_sig(pid, SIGTRAP)?;
        let s = t!(pt::getregset_vec(pid, pt::NT_ARM_SSVE, pt::SVE_PT_MAX));
        let h = VecHeader::parse(&s).ok_or("short")?;
        check_eq!(
            (h.flags & pt::SVE_PT_REGS_MASK, h.vl as usize),
            (0, svl),
            "SSVE when not streaming"
        );
        let w = pt::build_sve(svl, 0, &sme::z_pattern(3, svl, fa), 0, 0);
        t!(pt::setregset(pid, pt::NT_ARM_SSVE, &w));
        read_sve(pid, pt::NT_ARM_SSVE, svl)?;
        step_cont(pid)?;
        // 3
        stop_sig(pid, SIGTRAP)?;
        let z = t!(pt::getregset_vec(pid, pt::NT_ARM_ZA, pt::ZA_PT_MAX));
        let h = VecHeader::parse(&z).ok_or("short")?;
        check_eq!(
            (h.size as usize, h.vl as usize, z.len()),
            (pt::za_pt_size(vq), svl, pt::ZA_PT_MAX)
        );
        if let Some(d) = sme::diff(
            "ZA read",
            &z[16..h.size as usize],
            &sme::pattern(4, svl * svl),
        ) {
            return Err(format!("svl {svl}: {d}"));
        }
        t!(pt::setregset(
            pid,
            pt::NT_ARM_ZA,
            &pt::build_za(svl, 0, &sme::pattern(5, svl * svl))
        ));
        step_cont(pid)?;
        // 4
        stop_sig(pid, SIGTRAP)?;
        let z = t!(pt::getregset_vec(pid, pt::NT_ARM_ZA, pt::ZA_PT_MAX));
        let h = VecHeader::parse(&z).ok_or("short")?;
        check_eq!((h.size, h.vl as usize), (16, svl), "ZA read with ZA off");
        t!(pt::setregset(
            pid,
            pt::NT_ARM_ZA,
            &pt::build_za(svl, 0, &sme::pattern(6, svl * svl))
        ));
        step_cont(pid)?;
        // 5
        stop_sig(pid, SIGTRAP)?;
        t!(pt::setregset(
            pid,
            pt::NT_ARM_ZA,
            VecHeader::new(16, svl, 0).as_bytes()
        ));
        let z = t!(pt::getregset_vec(pid, pt::NT_ARM_ZA, pt::ZA_PT_MAX));
        check_eq!(
            VecHeader::parse(&z).map(|h| h.size),
            Some(16),
            "ZA after a header-only write"
        );
        step_cont(pid)?;
    }
    expect_exit(pid, 0)
}

fn sme2_zt() -> TestResult {
    sme::need_sme()?;
    if !sme::has_sme2() {
        return skip("no SME2 (HWCAP2_SME2): NT_ARM_ZT does not exist");
    }
    let pid = tracee(|| {
        let input = sme::pattern(7, 64);
        let mut out = [0u8; 64];
        // SAFETY: 64-byte buffers; the routine leaves ZA off.
        let svcr = unsafe { svelt_pt_zt_brk(input.as_ptr(), out.as_mut_ptr()) };
        check_eq!(svcr & sme::SVCR_ZA, sme::SVCR_ZA);
        check_eq!(
            &out[..],
            &sme::pattern(8, 64)[..],
            "ZT0 as the tracer wrote it"
        );
        // ZA off: the tracer reads zeros, then its write turns ZA on.
        // SAFETY: as above.
        let svcr = unsafe { svelt_pt_zt_brk(core::ptr::null(), out.as_mut_ptr()) };
        check_eq!(svcr & sme::SVCR_ZA, sme::SVCR_ZA, "ZT write enabled ZA");
        check_eq!(&out[..], &sme::pattern(9, 64)[..]);
        Ok(())
    })?;
    stop_sig(pid, SIGTRAP)?;
    check_eq!(
        t!(pt::getregset_vec(pid, pt::NT_ARM_ZT, 128)),
        sme::pattern(7, 64)
    );
    check_eq!(
        t!(pt::setregset(pid, pt::NT_ARM_ZT, &sme::pattern(8, 64))),
        64
    );
    step_cont(pid)?;
    stop_sig(pid, SIGTRAP)?;
    check_eq!(
        t!(pt::getregset_vec(pid, pt::NT_ARM_ZT, 64)),
        vec![0u8; 64],
        "ZT0 with ZA off"
    );
    check_eq!(
        VecHeader::parse(&t!(pt::getregset_vec(pid, pt::NT_ARM_ZA, 64))).map(|h| h.size),
        Some(16)
    );
    t!(pt::setregset(pid, pt::NT_ARM_ZT, &sme::pattern(9, 64)));
    let svl = sme::svl();
    let z = t!(pt::getregset_vec(pid, pt::NT_ARM_ZA, pt::ZA_PT_MAX));
    check_eq!(
        VecHeader::parse(&z).map(|h| h.size as usize),
        Some(pt::za_pt_size(svl / 16)),
        "ZA is on after a ZT write"
    );
    check!(
        z[16..pt::za_pt_size(svl / 16)].iter().all(|&b| b == 0),
        "ZA zeroed by the ZT write"
    );
    step_cont(pid)?;
    expect_exit(pid, 0)
}

// ---- migration ----

const ROUNDS: u64 = 200;

fn migrate_rewrite() -> TestResult {
    let _ = sve::need_vls()?;
    let cpus = t!(sys::sched_getaffinity(0));
    if cpus.count_ones() < 2 {
        return skip("one CPU: nothing to migrate between");
    }
    let c0 = 1u64 << cpus.trailing_zeros();
    let c1 = 1u64 << (63 - cpus.leading_zeros());
    let pid = tracee(move || {
        let vl = sve::rdvl();
        let mut bad = 0;
        for r in 0..ROUNDS {
            let out = sve::load_udf_store(&SveRegs::pattern(vl, r));
            if let Some(d) = out.diff(&SveRegs::pattern(vl, 1000 + r)) {
                if bad < 3 {
                    println!("# tracee round {r}: {}", d.replace('\n', "\n# "));
                }
                bad += 1;
            }
            if r % 3 == 0 {
                let _ = sys::sched_setaffinity(0, if r % 2 == 0 { c0 } else { c1 });
            }
        }
        check_eq!(bad, 0, "rounds with wrong registers");
        Ok(())
    })?;
    let vl = sve::rdvl();
    let mut bad = 0;
    for r in 0..ROUNDS {
        stop_sig(pid, SIGILL)?;
        let b = read_sve(pid, pt::NT_ARM_SVE, vl)?;
        if pt::sve_zpf(&b, vl) != Some(&SveRegs::pattern(vl, r).bytes[..]) {
            bad += 1;
        }
        let w = pt::build_sve(vl, 0, &SveRegs::pattern(vl, 1000 + r).bytes, 0, 0);
        t!(pt::setregset(pid, pt::NT_ARM_SVE, &w));
        let _ = sys::sched_setaffinity(pid, if r % 2 == 0 { c1 } else { c0 });
        step_cont(pid)?;
    }
    check_eq!(bad, 0, "stops where the tracer read wrong registers");
    expect_exit(pid, 0)
}

// ---- fuzz ----

const FUZZ_ROUNDS: u64 = 150;

fn fuzz_setregset() -> TestResult {
    let vls = sve::need_vls()?;
    let has_sme = sme::has_sme();
    // The tracee's registers after each round: vl, then the Z/P/FFR image.
    let shared = t!(sys::mmap_shared(8 + SveRegs::size(256)));
    let pid = tracee(move || {
        for r in 0..FUZZ_ROUNDS {
            let vl = sve::rdvl();
            let out = sve::load_udf_store(&SveRegs::pattern(vl, r));
            // SAFETY: the shared mapping is big enough for any VL.
            unsafe {
                (shared as *mut u64).write_volatile(out.vl as u64);
                core::ptr::copy_nonoverlapping(
                    out.bytes.as_ptr(),
                    (shared + 8) as *mut u8,
                    out.bytes.len(),
                );
            }
        }
        Ok(())
    })?;
    let mut seed = 0x5eed_f022u64;
    let mut rnd = move || {
        seed = splitmix(seed);
        seed
    };
    let mut expect: Option<SveRegs> = None;
    let mut checked = 0;
    let mut killed = false;
    for _ in 0..FUZZ_ROUNDS {
        let (_, st) = pt::wait_for(pid, pt::WALL, pt::WAIT_NS)?;
        if let Some(want) = expect.take() {
            // SAFETY: the shared mapping, written by the tracee before this stop.
            let vl = unsafe { (shared as *const u64).read_volatile() } as usize;
            // SAFETY: as above; vl is at most 256.
            let bytes = unsafe {
                core::slice::from_raw_parts((shared + 8) as *const u8, SveRegs::size(vl.min(256)))
            };
            if wifstopped(st) && wstopsig(st) == SIGILL {
                let got = SveRegs {
                    vl,
                    bytes: bytes.to_vec(),
                };
                if let Some(d) = got.diff(&want) {
                    return Err(format!(
                        "tracee registers differ from the last GETREGSET: {d}"
                    ));
                }
                checked += 1;
            }
        }
        if !wifstopped(st) {
            killed = true;
            break;
        }
        let at_udf = wstopsig(st) == SIGILL && t!(pt::get_regs(pid)).pc == sve::udf_insn();
        if !at_udf {
            // Some write made the tracee fault elsewhere: that is allowed, it dies.
            t!(sys::kill(pid, sig::SIGKILL));
            wait_end(pid)?;
            killed = true;
            break;
        }
        for _ in 0..(1 + rnd() % 4) {
            let types = [
                pt::NT_ARM_SVE,
                pt::NT_ARM_SVE,
                pt::NT_ARM_SVE,
                pt::NT_PRFPREG,
                pt::NT_ARM_TLS,
                pt::NT_ARM_SYSTEM_CALL,
                pt::NT_ARM_SSVE,
                pt::NT_ARM_ZA,
                pt::NT_ARM_ZT,
                0x400 + (rnd() % 32) as usize,
            ];
            let nt = types[(rnd() % types.len() as u64) as usize];
            let mut len = (rnd() % 2200) as usize;
            if rnd() % 2 == 0 {
                len &= !15;
            }
            let mut buf: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
            if len >= 16 && rnd() % 4 != 0 {
                let vl = if rnd() % 4 == 0 {
                    (rnd() % 300) as usize
                } else {
                    vls[(rnd() % vls.len() as u64) as usize]
                };
                let flags = (rnd() % 8) as u16;
                let size = if rnd() % 3 == 0 {
                    rnd() as u32 % 4096
                } else {
                    len as u32
                };
                buf[..16].copy_from_slice(VecHeader::new(size as usize, vl, flags).as_bytes());
                if nt == pt::NT_ARM_SVE
                    && flags & 1 == 1
                    && len >= pt::sve_pt_size(vl / 16, 1)
                    && vl >= 16
                {
                    // Keep FFR valid-looking and FPCR sane most of the time.
                    let o = pt::sve_pt_fpsr_offset(vl / 16);
                    buf[o..o + 8].fill(0);
                }
            }
            if nt == pt::NT_PRFPREG && buf.len() >= 520 {
                buf[512..520].fill(0);
            }
            let _ = pt::setregset(pid, nt, &buf);
        }
        if has_sme {
            // Leave streaming mode (compiled code may not run in it) before resuming.
            let s = t!(pt::getregset_vec(pid, pt::NT_ARM_SSVE, 64));
            if VecHeader::parse(&s).is_some_and(|h| h.flags & 1 == 1) {
                let vl = sve::rdvl();
                t!(pt::setregset(
                    pid,
                    pt::NT_ARM_SVE,
                    VecHeader::new(16, vl, 1).as_bytes()
                ));
            }
        }
        // What the tracee must see: this read.
        let b = t!(pt::getregset_vec(pid, pt::NT_ARM_SVE, pt::SVE_PT_MAX));
        let h = VecHeader::parse(&b).ok_or("short NT_ARM_SVE")?;
        let vl = h.vl as usize;
        check!(
            vls.contains(&vl),
            "NT_ARM_SVE vl {vl} is not a supported VL"
        );
        let want = if h.flags & 1 == 1 {
            SveRegs {
                vl,
                bytes: pt::sve_zpf(&b, vl).ok_or("short SVE read")?.to_vec(),
            }
        } else {
            let f = pt::UserFpsimd::from_bytes(&b[16..]);
            let mut w = SveRegs::zeroed(vl);
            for (n, v) in f.vregs.iter().enumerate() {
                w.set_v(n, *v);
            }
            w
        };
        // FFR must be a prefix for the tracee's WRFFR-free store to be exact; any FFR value is
        // stored as written, so the check stands as is.
        expect = Some(want);
        step_cont(pid)?;
    }
    if !killed {
        let (_, st) = pt::wait_for(pid, pt::WALL, pt::WAIT_NS)?;
        if wifstopped(st) {
            // A fault after the last round: allowed, it dies.
            t!(sys::kill(pid, sig::SIGKILL));
            wait_end(pid)?;
            killed = true;
        } else {
            check_eq!(describe(st), "exited 0", "the tracee after the last round");
            // SAFETY: the shared mapping, written by the tracee before it exited.
            let vl = unsafe { (shared as *const u64).read_volatile() } as usize;
            // SAFETY: as above; vl is at most 256.
            let bytes = unsafe {
                core::slice::from_raw_parts((shared + 8) as *const u8, SveRegs::size(vl.min(256)))
            };
            let got = SveRegs {
                vl,
                bytes: bytes.to_vec(),
            };
            if let Some(d) = expect.as_ref().and_then(|w| got.diff(w)) {
                return Err(format!(
                    "last round: tracee registers differ from GETREGSET: {d}"
                ));
            }
            checked += 1;
        }
    }
    check!(sys::getpid() > 0);
    println!(
        "# fuzz: {checked} rounds checked{}",
        if killed { ", tracee died" } else { "" }
    );
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--exit-vq") {
        return (sve::rdvl() / 16) as i32;
    }
    macro_rules! iso {
        ($f:ident) => {{
            fn w() -> TestResult {
                pt::isolated($f, TEST_NS)
            }
            (stringify!($f), w as fn() -> TestResult)
        }};
    }
    ktap::run(&[
        iso!(prstatus),
        iso!(prfpreg),
        iso!(sve_fpsimd_format),
        iso!(tls),
        iso!(tagged_addr_ctrl),
        iso!(regset_bad_buffers),
        iso!(sve_every_vl),
        iso!(sve_errors),
        iso!(sme_ssve_za),
        iso!(sme2_zt),
        iso!(migrate_rewrite),
        iso!(fuzz_setregset),
    ])
}

entry!(main);
