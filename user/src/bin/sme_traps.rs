//! SME instructions in the wrong state: one that needs PSTATE.SM=1 outside streaming mode (SME
//! trap SMTC 2), one that needs PSTATE.ZA=1 with ZA off (SMTC 3, in and out of streaming mode),
//! AdvSIMD in streaming mode without FA64 (SMTC 1), and ZT0 without SME2 (UNDEFINED): each is
//! SIGILL with ILL_ILLOPC and si_addr = pc = the instruction. The same instructions in the right
//! state do not trap. The frames carry no esr_context.
#![no_std]
#![no_main]

use svelt_user::ktap::{skip, TestResult};
use svelt_user::sig::*;
use svelt_user::sme::*;
use svelt_user::*;

core::arch::global_asm!(
    r#"
    .arch_extension sve
    .arch_extension sme
    .text
    // ZA on, SM off: MOVA needs streaming mode (SMTC 2).
    .global svelt_sme_trap_mova
    .type svelt_sme_trap_mova, %function
svelt_sme_trap_mova:
    smstart za
    .global svelt_sme_trap_mova_insn
svelt_sme_trap_mova_insn:
    mova z0.b, p0/m, za0h.b[w12, 0]
    smstop za
    ret
    .size svelt_sme_trap_mova, . - svelt_sme_trap_mova
    // ZA off: ZERO {{ZA}} needs ZA (SMTC 3), outside and inside streaming mode; LDR ZA likewise.
    .global svelt_sme_trap_zero
    .type svelt_sme_trap_zero, %function
svelt_sme_trap_zero:
    smstop za
    .global svelt_sme_trap_zero_insn
svelt_sme_trap_zero_insn:
    zero {{za}}
    nop
    ret
    .size svelt_sme_trap_zero, . - svelt_sme_trap_zero
    .global svelt_sme_trap_zero_sm
    .type svelt_sme_trap_zero_sm, %function
svelt_sme_trap_zero_sm:
    smstart sm
    .global svelt_sme_trap_zero_sm_insn
svelt_sme_trap_zero_sm_insn:
    zero {{za}}
    smstop sm
    ret
    .size svelt_sme_trap_zero_sm, . - svelt_sme_trap_zero_sm
    .global svelt_sme_trap_ldr_za
    .type svelt_sme_trap_ldr_za, %function
svelt_sme_trap_ldr_za:
    smstart sm
    .global svelt_sme_trap_ldr_za_insn
svelt_sme_trap_ldr_za_insn:
    ldr za[w12, 0], [sp]
    smstop sm
    ret
    .size svelt_sme_trap_ldr_za, . - svelt_sme_trap_ldr_za
    // Streaming mode: AdvSIMD is illegal without FA64 (SMTC 1).
    .global svelt_sme_trap_neon
    .type svelt_sme_trap_neon, %function
svelt_sme_trap_neon:
    smstart sm
    .global svelt_sme_trap_neon_insn
svelt_sme_trap_neon_insn:
    add v0.4s, v0.4s, v0.4s
    smstop sm
    ret
    .size svelt_sme_trap_neon, . - svelt_sme_trap_neon
    // The right states: no trap.
    .global svelt_sme_ok_mova
    .type svelt_sme_ok_mova, %function
svelt_sme_ok_mova:
    stp d8, d9, [sp, #-64]!         // SMSTART/SMSTOP zero the callee-saved d8-d15
    stp d10, d11, [sp, #16]
    stp d12, d13, [sp, #32]
    stp d14, d15, [sp, #48]
    smstart
    .global svelt_sme_ok_mova_insn
svelt_sme_ok_mova_insn:
    mova z0.b, p0/m, za0h.b[w12, 0]
    smstop
    ldp d14, d15, [sp, #48]
    ldp d12, d13, [sp, #32]
    ldp d10, d11, [sp, #16]
    ldp d8, d9, [sp], #64
    ret
    .size svelt_sme_ok_mova, . - svelt_sme_ok_mova
    .global svelt_sme_ok_zero
    .type svelt_sme_ok_zero, %function
svelt_sme_ok_zero:
    smstart za
    .global svelt_sme_ok_zero_insn
svelt_sme_ok_zero_insn:
    zero {{za}}
    smstop za
    ret
    .size svelt_sme_ok_zero, . - svelt_sme_ok_zero
    "#
);

core::arch::global_asm!(
    r#"
    .arch_extension sme2
    .text
    .global svelt_sme_trap_zt0
    .type svelt_sme_trap_zt0, %function
svelt_sme_trap_zt0:
    smstart za
    .global svelt_sme_trap_zt0_insn
svelt_sme_trap_zt0_insn:
    zero {{zt0}}
    smstop za
    ret
    .size svelt_sme_trap_zt0, . - svelt_sme_trap_zt0
    "#
);

extern "C" {
    fn svelt_sme_trap_mova();
    fn svelt_sme_trap_mova_insn();
    fn svelt_sme_trap_zero();
    fn svelt_sme_trap_zero_insn();
    fn svelt_sme_trap_zero_sm();
    fn svelt_sme_trap_zero_sm_insn();
    fn svelt_sme_trap_ldr_za();
    fn svelt_sme_trap_ldr_za_insn();
    fn svelt_sme_trap_neon();
    fn svelt_sme_trap_neon_insn();
    fn svelt_sme_trap_zt0();
    fn svelt_sme_trap_zt0_insn();
    fn svelt_sme_ok_mova();
    fn svelt_sme_ok_zero();
}

/// Runs `f` in a child at a small SVL (the frame must fit the 64 KiB altstack) and checks the
/// SIGILL it must raise at `insn`.
fn expect_sigill(
    what: &str,
    f: unsafe extern "C" fn(),
    insn: unsafe extern "C" fn(),
) -> TestResult {
    let (st, fault) = t!(fault_in_child(|| {
        let _ = sme_set_vl(32);
        // SAFETY: the routine changes only SME state and traps before returning.
        unsafe { f() }
    }));
    check!(
        fault.handled,
        "{what}: no signal (child {})",
        proc::describe(st)
    );
    let want = insn as *const () as u64;
    check_eq!(fault.info.signo, SIGILL, "{what}: signal");
    check_eq!(fault.info.code, ILL_ILLOPC, "{what}: si_code");
    check_eq!(fault.info.addr(), want, "{what}: si_addr");
    check_eq!(fault.pc, want, "{what}: pc");
    // Linux raises these without a fault code: the frame has no esr_context.
    check_eq!(fault.records.esr, None, "{what}: esr_context");
    Ok(())
}

fn needs_streaming_mode_smtc2() -> TestResult {
    need_sme()?;
    // (REVD, streaming-only before SVE2p1, does not trap on QEMU 10.0: not used.)
    expect_sigill(
        "MOVA with SM=0",
        svelt_sme_trap_mova,
        svelt_sme_trap_mova_insn,
    )?;
    Ok(())
}

fn needs_za_smtc3() -> TestResult {
    need_sme()?;
    expect_sigill(
        "ZERO {ZA} with ZA=0",
        svelt_sme_trap_zero,
        svelt_sme_trap_zero_insn,
    )?;
    expect_sigill(
        "ZERO {ZA} in streaming mode with ZA=0",
        svelt_sme_trap_zero_sm,
        svelt_sme_trap_zero_sm_insn,
    )?;
    expect_sigill(
        "LDR ZA with ZA=0",
        svelt_sme_trap_ldr_za,
        svelt_sme_trap_ldr_za_insn,
    )
}

fn illegal_in_streaming_mode_smtc1() -> TestResult {
    need_sme()?;
    if has_fa64() {
        return skip("FA64: AdvSIMD is legal in streaming mode");
    }
    expect_sigill(
        "AdvSIMD in streaming mode",
        svelt_sme_trap_neon,
        svelt_sme_trap_neon_insn,
    )
}

fn zt0_without_sme2_is_undefined() -> TestResult {
    need_sme()?;
    if has_sme2() {
        return skip("SME2 present: ZT0 is accessible");
    }
    expect_sigill(
        "ZERO {ZT0} without SME2",
        svelt_sme_trap_zt0,
        svelt_sme_trap_zt0_insn,
    )
}

fn right_state_does_not_trap() -> TestResult {
    need_sme()?;
    let st = t!(fault_in_child(|| {
        // SAFETY: each routine enters the state its instruction needs and leaves it again.
        unsafe {
            svelt_sme_ok_mova();
            svelt_sme_ok_zero();
        }
    }));
    check!(!st.1.handled, "trapped: {:?}", st.1.info);
    check_eq!(st.0 >> 8, 100, "child ran to the end");
    Ok(())
}

fn main(_args: &rt::Args) -> i32 {
    ktap::run(&[
        ("needs_streaming_mode_smtc2", needs_streaming_mode_smtc2),
        ("needs_za_smtc3", needs_za_smtc3),
        (
            "illegal_in_streaming_mode_smtc1",
            illegal_in_streaming_mode_smtc1,
        ),
        (
            "zt0_without_sme2_is_undefined",
            zt0_without_sme2_is_undefined,
        ),
        ("right_state_does_not_trap", right_state_does_not_trap),
    ])
}

entry!(main);
