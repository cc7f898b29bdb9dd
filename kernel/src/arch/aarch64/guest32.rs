//! The AArch32-only state of a guest whose EL1 runs in AArch32 (HCR_EL2.RW clear): the banked
//! SPSRs of the Abort, Undefined, IRQ and FIQ modes (SPSR_svc is SPSR_EL1), DACR, IFSR and
//! FPEXC, which the CPU keeps in EL2 registers (the Arm ARM's SPSR_abt, DACR32_EL2,
//! IFSR32_EL2, FPEXC32_EL2). The AArch32 general registers of every mode are x0-x30 and the
//! rest of its EL1 state is the AArch64 EL1 registers', which the world switch moves anyway;
//! these are moved only around a 32-bit vCPU's entries, so 64-bit vCPUs pay nothing.

/// FPEXC.EN: FP/SIMD instructions enabled at AArch32 EL1 and EL0.
pub const FPEXC_EN: u64 = 1 << 30;

/// Whether the CPU implements AArch32 at EL1 (ID_AA64PFR0_EL1.EL1 = 0b0010).
pub fn has_el1_aarch32() -> bool {
    let v: u64;
    // SAFETY: reading an ID register has no side effects.
    unsafe { core::arch::asm!("mrs {}, S3_0_C0_C4_0", out(reg) v, options(nomem, nostack)) };
    (v >> 4) & 0xf == 2
}

/// A 32-bit vCPU's AArch32-only registers while it is not on a CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct A32State {
    /// SPSR_abt, SPSR_und, SPSR_irq, SPSR_fiq (KVM's spsr[1..=4] order).
    pub spsr: [u64; 4],
    pub dacr: u64,
    pub ifsr: u64,
    pub fpexc: u64,
}

macro_rules! a32_regs {
    ($($field:ident $([$i:literal])? = $enc:literal),*) => {
        impl A32State {
            /// Loads these into the CPU for the guest (interrupts masked, before the entry):
            /// the host, all AArch64, never reads them.
            pub fn load(&self) {
                $(
                    // SAFETY: an AArch32-only register, used by nothing but the guest.
                    unsafe {
                        core::arch::asm!(concat!("msr ", $enc, ", {}"), in(reg) self.$field$([$i])?,
                            options(nomem, nostack))
                    };
                )*
            }

            /// Reads them back after the guest's exit.
            pub fn save(&mut self) {
                $(
                    // SAFETY: reading a system register has no side effects.
                    unsafe {
                        core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) self.$field$([$i])?,
                            options(nomem, nostack))
                    };
                )*
            }
        }
    };
}

a32_regs! {
    spsr[0] = "S3_4_C4_C3_1", // SPSR_abt
    spsr[1] = "S3_4_C4_C3_2", // SPSR_und
    spsr[2] = "S3_4_C4_C3_0", // SPSR_irq
    spsr[3] = "S3_4_C4_C3_3", // SPSR_fiq
    dacr = "S3_4_C3_C0_0",    // DACR32_EL2
    ifsr = "S3_4_C5_C0_1",    // IFSR32_EL2
    fpexc = "S3_4_C5_C3_0"    // FPEXC32_EL2
}
