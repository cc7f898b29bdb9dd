//! FPSIMD: V0-V31, FPSR and FPCR. The only kernel code that reads or writes them.

/// A task's FPSIMD registers, as Linux's `user_fpsimd_state` (and the signal frame) lays them out.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, zerocopy::IntoBytes, zerocopy::Immutable)]
pub struct FpsimdState {
    pub vregs: [u128; 32],
    pub fpsr: u32,
    pub fpcr: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(core::mem::size_of::<FpsimdState>() == 528);
const _: () = assert!(core::mem::offset_of!(FpsimdState, fpsr) == 512);

/// Stores this CPU's FPSIMD registers into `st`.
pub fn save(st: &mut FpsimdState) {
    // SAFETY: writes 528 bytes into *st, which is 16-aligned; FP access is enabled at EL1 since
    // boot (CPACR_EL1.FPEN), and the kernel itself never uses these registers.
    unsafe {
        core::arch::asm!(
            ".arch_extension fp",
            ".arch_extension simd",
            "stp q0, q1, [{p}, #0]", "stp q2, q3, [{p}, #32]", "stp q4, q5, [{p}, #64]",
            "stp q6, q7, [{p}, #96]", "stp q8, q9, [{p}, #128]", "stp q10, q11, [{p}, #160]",
            "stp q12, q13, [{p}, #192]", "stp q14, q15, [{p}, #224]", "stp q16, q17, [{p}, #256]",
            "stp q18, q19, [{p}, #288]", "stp q20, q21, [{p}, #320]", "stp q22, q23, [{p}, #352]",
            "stp q24, q25, [{p}, #384]", "stp q26, q27, [{p}, #416]", "stp q28, q29, [{p}, #448]",
            "stp q30, q31, [{p}, #480]",
            "mrs {t}, fpsr", "str {t:w}, [{p}, #512]",
            "mrs {t}, fpcr", "str {t:w}, [{p}, #516]",
            p = in(reg) st as *mut FpsimdState,
            t = out(reg) _,
            options(nostack),
        )
    };
}

/// Loads this CPU's FPSIMD registers from `st`.
pub fn load(st: &FpsimdState) {
    // SAFETY: reads 528 bytes from *st; see `save`.
    unsafe {
        core::arch::asm!(
            ".arch_extension fp",
            ".arch_extension simd",
            "ldp q0, q1, [{p}, #0]", "ldp q2, q3, [{p}, #32]", "ldp q4, q5, [{p}, #64]",
            "ldp q6, q7, [{p}, #96]", "ldp q8, q9, [{p}, #128]", "ldp q10, q11, [{p}, #160]",
            "ldp q12, q13, [{p}, #192]", "ldp q14, q15, [{p}, #224]", "ldp q16, q17, [{p}, #256]",
            "ldp q18, q19, [{p}, #288]", "ldp q20, q21, [{p}, #320]", "ldp q22, q23, [{p}, #352]",
            "ldp q24, q25, [{p}, #384]", "ldp q26, q27, [{p}, #416]", "ldp q28, q29, [{p}, #448]",
            "ldp q30, q31, [{p}, #480]",
            "ldr {t:w}, [{p}, #512]", "msr fpsr, {t}",
            "ldr {t:w}, [{p}, #516]", "msr fpcr, {t}",
            p = in(reg) st as *const FpsimdState,
            t = out(reg) _,
            options(nostack, readonly),
        )
    };
}

/// Loads only FPSR and FPCR (after an SVE load brought V0-V31 with Z0-Z31).
pub fn load_control(st: &FpsimdState) {
    let (fpsr, fpcr) = (st.fpsr as u64, st.fpcr as u64);
    // SAFETY: user FP control registers; the kernel itself does not use FP.
    unsafe {
        core::arch::asm!(
            ".arch_extension fp",
            "msr fpsr, {}",
            "msr fpcr, {}",
            in(reg) fpsr,
            in(reg) fpcr,
            options(nomem, nostack)
        )
    };
}

/// Stores only FPSR and FPCR (when the vector registers were saved as SVE or streaming SVE;
/// AdvSIMD stores are not allowed in streaming mode without FA64).
pub fn save_control(st: &mut FpsimdState) {
    let (fpsr, fpcr): (u64, u64);
    // SAFETY: reads the user FP control registers.
    unsafe {
        core::arch::asm!(".arch_extension fp", "mrs {}, fpsr", "mrs {}, fpcr", out(reg) fpsr, out(reg) fpcr, options(nomem, nostack))
    };
    st.fpsr = fpsr as u32;
    st.fpcr = fpcr as u32;
}

/// FPMR (FEAT_FPMR): the FP8 mode register, user state kept with the FP registers.
pub mod fpmr {
    /// Lets EL0 use FPMR (SCTLR_EL1.EnFPM); on a CPU with FEAT_FPMR only.
    pub fn enable_el0() {
        crate::arch::aarch64::cpu::enable_el0_access(crate::arch::aarch64::cpu::El0Access::Fpmr);
    }

    /// FPMR's value; only on a CPU with FEAT_FPMR.
    pub fn read() -> u64 {
        let v: u64;
        // SAFETY: reads a user FP control register (EL1 FP access is enabled at boot).
        unsafe { core::arch::asm!("mrs {}, S3_3_C4_C4_2", out(reg) v, options(nomem, nostack)) };
        v
    }

    /// Sets FPMR; only on a CPU with FEAT_FPMR.
    pub fn write(v: u64) {
        // SAFETY: user FP state only; the kernel does not use FP8 instructions.
        unsafe { core::arch::asm!("msr S3_3_C4_C4_2, {}", in(reg) v, options(nomem, nostack)) };
    }
}
