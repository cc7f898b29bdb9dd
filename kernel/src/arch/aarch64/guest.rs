//! Running a guest at EL1 under a kernel at EL2 with VHE: the world switch (guest.s), the
//! guest's EL1 system registers (reached from EL2 through their `_EL12`/`_EL02` names), the
//! EL2 controls a guest runs under, and stage-2 TLB maintenance.
//!
//! With E2H the kernel's own EL1-named registers are really EL2's, so a guest's EL1 state never
//! overlaps the host kernel's; what the two share is EL0's (TPIDR_EL0, TPIDRRO_EL0, SP_EL0),
//! the few EL1 registers E2H does not redirect (TPIDR_EL1, PAR_EL1, CSSELR_EL1, MDSCR_EL1),
//! and the EL2 controls the host runs with (HCR_EL2 with TGE, CPTR_EL2, MDCR_EL2, HCRX_EL2).
//! [`world_switch`] saves those, loads the guest's, runs it until its next exception to EL2,
//! and puts the host's back.

core::arch::global_asm!(include_str!("guest.s"));

/// The guest's general registers and, after an exit, its syndrome. Layout pinned for guest.s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GuestRegs {
    pub x: [u64; 31],
    pub sp_el1: u64,
    pub pc: u64,
    pub pstate: u64,
    /// ESR_EL2, FAR_EL2 and HPFAR_EL2 of the exit.
    pub esr: u64,
    pub far: u64,
    pub hpfar: u64,
}

const _: () = {
    assert!(core::mem::offset_of!(GuestRegs, sp_el1) == 248);
    assert!(core::mem::offset_of!(GuestRegs, pc) == 256);
    assert!(core::mem::offset_of!(GuestRegs, pstate) == 264);
    assert!(core::mem::offset_of!(GuestRegs, esr) == 272);
    assert!(core::mem::offset_of!(GuestRegs, far) == 280);
    assert!(core::mem::offset_of!(GuestRegs, hpfar) == 288);
};

/// Why the guest stopped: the vector its exception took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Sync,
    Irq,
    Fiq,
    SError,
}

unsafe extern "C" {
    fn guest_enter(regs: *mut GuestRegs) -> u64;
}

/// Declares the guest's EL1/EL0 system registers the switch moves, each with its encoding as
/// seen from EL2 with E2H, in one list (the struct, its load and its save come from it).
macro_rules! el1_state {
    ($($(#[$doc:meta])* $field:ident = $enc:literal),* $(,)?) => {
        /// A vCPU's EL1 and EL0 system registers while it is not on a CPU.
        #[derive(Clone, Copy, Debug, Default)]
        pub struct El1State {
            $($(#[$doc])* pub $field: u64,)*
        }

        impl El1State {
            /// Loads these into the CPU (the guest's view), with interrupts masked.
            fn load(&self) {
                $(
                    // SAFETY: writes a guest-owned register; the host does not use it while
                    // the guest's state is loaded (world_switch puts the host's back).
                    unsafe {
                        core::arch::asm!(concat!("msr ", $enc, ", {}"), in(reg) self.$field,
                            options(nomem, nostack))
                    };
                )*
            }

            /// Reads these from the CPU.
            fn save(&mut self) {
                $(
                    // SAFETY: reading a system register has no side effects.
                    unsafe {
                        core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) self.$field,
                            options(nomem, nostack))
                    };
                )*
            }
        }
    };
}

el1_state! {
    sctlr = "S3_5_C1_C0_0",      // SCTLR_EL12
    cpacr = "S3_5_C1_C0_2",      // CPACR_EL12
    ttbr0 = "S3_5_C2_C0_0",      // TTBR0_EL12
    ttbr1 = "S3_5_C2_C0_1",      // TTBR1_EL12
    tcr = "S3_5_C2_C0_2",        // TCR_EL12
    esr = "S3_5_C5_C2_0",        // ESR_EL12
    afsr0 = "S3_5_C5_C1_0",      // AFSR0_EL12
    afsr1 = "S3_5_C5_C1_1",      // AFSR1_EL12
    far = "S3_5_C6_C0_0",        // FAR_EL12
    mair = "S3_5_C10_C2_0",      // MAIR_EL12
    amair = "S3_5_C10_C3_0",     // AMAIR_EL12
    vbar = "S3_5_C12_C0_0",      // VBAR_EL12
    contextidr = "S3_5_C13_C0_1", // CONTEXTIDR_EL12
    cntkctl = "S3_5_C14_C1_0",   // CNTKCTL_EL12
    elr = "S3_5_C4_C0_1",        // ELR_EL12
    spsr = "S3_5_C4_C0_0",       // SPSR_EL12
    tpidr_el1 = "S3_0_C13_C0_4", // TPIDR_EL1 (not redirected by E2H)
    par = "S3_0_C7_C4_0",        // PAR_EL1
    csselr = "S3_2_C0_C0_0",     // CSSELR_EL1
    mdscr = "S2_0_C0_C2_2",      // MDSCR_EL1
    tpidr_el0 = "S3_3_C13_C0_2", // TPIDR_EL0
    tpidrro_el0 = "S3_3_C13_C0_3", // TPIDRRO_EL0
    sp_el0 = "sp_el0",
    cntv_cval = "S3_5_C14_C3_2", // CNTV_CVAL_EL02
    cntv_ctl = "S3_5_C14_C3_1",  // CNTV_CTL_EL02
    cntp_cval = "S3_5_C14_C2_2", // CNTP_CVAL_EL02
    cntp_ctl = "S3_5_C14_C2_1",  // CNTP_CTL_EL02
}

/// The EL2 controls one guest entry runs under.
#[derive(Clone, Copy, Debug)]
pub struct Controls {
    pub hcr: u64,
    pub vttbr: u64,
    pub vtcr: u64,
    pub vmpidr: u64,
    /// VPIDR_EL2: the MIDR_EL1 the guest reads (never trapped).
    pub vpidr: u64,
    pub cntvoff: u64,
    /// CPTR_EL2 in CPACR_EL1's layout (E2H): which FP/SVE/SME accesses trap to EL2.
    pub cptr: u64,
    /// MDCR_EL2 bits to set over the host's (debug and PMU register traps).
    pub mdcr_traps: u64,
    /// HCRX_EL2 for the guest (where the CPU has it).
    pub hcrx: u64,
    /// HFGITR_EL2 bits to set over the host's (instructions the VM was not given); 0 where the
    /// CPU has no FEAT_FGT.
    pub hfgitr: u64,
    /// HFGRTR_EL2 and HFGWTR_EL2 "n" bits to clear from the host's (registers the VM was not
    /// given, whose accesses must trap); 0 where nothing is hidden this way.
    pub hfgrtr_clear: u64,
    /// VSESR_EL2: the syndrome of a virtual SError HCR_EL2.VSE makes pending (with FEAT_RAS).
    pub vsesr: u64,
}

/// The guest's GICv3 virtual CPU interface (the ICH_*_EL2 registers), moved by the world
/// switch when the CPU has GICv3's system registers.
#[derive(Clone, Copy, Debug, Default)]
pub struct VgicCpu {
    /// ICH_HCR_EL2: the interface's enable, its maintenance conditions, the traps (read back
    /// on exit for its EOIcount).
    pub hcr: u64,
    /// ICH_VMCR_EL2: the guest's PMR, BPRs, group enables, EOI mode.
    pub vmcr: u64,
    /// The list registers in use (the first `nr_lr`), loaded on entry and read back on exit.
    pub lr: [u64; 16],
    pub nr_lr: usize,
    /// The list registers as they were loaded (what the guest changed shows against them).
    pub lr_in: [u64; 16],
    /// For each list register loaded with a pending interrupt: that interrupt's count of
    /// latchings then (the vGIC's bookkeeping: one latched later is not the register's).
    pub lr_latches: [u32; 16],
    /// ICH_AP0R<n>_EL2 and ICH_AP1R<n>_EL2: the guest's active priorities.
    pub ap0r: [u64; 4],
    pub ap1r: [u64; 4],
}

/// ICH_HCR_EL2 bits.
pub mod ich_hcr {
    pub const EN: u64 = 1 << 0;
    /// Underflow: a maintenance interrupt when at most one list register holds an interrupt.
    pub const UIE: u64 = 1 << 1;
    /// TC, TALL0, TALL1: the guest's accesses to the common, Group 0 and Group 1 CPU interface
    /// registers trap to EL2.
    pub const TC: u64 = 1 << 10;
    pub const TALL0: u64 = 1 << 11;
    pub const TALL1: u64 = 1 << 12;
    /// TDIR: the guest's writes to ICC_DIR_EL1 trap.
    pub const TDIR: u64 = 1 << 14;
    /// EOIcount: EOIs the guest made for interrupts in no list register.
    pub const EOICOUNT_SHIFT: u32 = 27;
}

/// HCR_EL2 bits a guest runs with.
pub mod hcr {
    pub const VM: u64 = 1 << 0;
    pub const SWIO: u64 = 1 << 1;
    pub const FMO: u64 = 1 << 3;
    pub const IMO: u64 = 1 << 4;
    pub const AMO: u64 = 1 << 5;
    /// A virtual FIQ and a virtual IRQ are pending (levels the hypervisor holds).
    pub const VF: u64 = 1 << 6;
    pub const VI: u64 = 1 << 7;
    /// A virtual SError is pending; the CPU clears it when the guest takes it.
    pub const VSE: u64 = 1 << 8;
    pub const FB: u64 = 1 << 9;
    /// Barriers are Inner Shareable at least.
    pub const BSU_IS: u64 = 1 << 10;
    pub const TWI: u64 = 1 << 13;
    /// TID1: REVIDR_EL1, AIDR_EL1, SMIDR_EL1. TID2: CTR_EL0, CLIDR_EL1, CSSELR_EL1 and the
    /// CCSIDRs. TID3: the ID register space. TID5: GMID_EL1.
    pub const TID1: u64 = 1 << 16;
    pub const TID2: u64 = 1 << 17;
    pub const TSC: u64 = 1 << 19;
    pub const TID3: u64 = 1 << 18;
    pub const TID5: u64 = 1 << 58;
    /// APK: the pointer-authentication key registers, API: the PAC instructions, not trapped.
    pub const APK: u64 = 1 << 40;
    pub const API: u64 = 1 << 41;
    pub const TACR: u64 = 1 << 21;
    pub const TSW: u64 = 1 << 22;
    pub const RW: u64 = 1 << 31;
    pub const E2H: u64 = 1 << 34;
}

/// MDCR_EL2 trap bits: PMU (TPMCR, TPM), debug registers (TDA), OS lock and OS debug registers
/// (TDOSA), debug ROM (TDRA).
pub mod mdcr {
    pub const TDE: u64 = 1 << 8;
    pub const TPMCR: u64 = 1 << 5;
    pub const TPM: u64 = 1 << 6;
    pub const TDA: u64 = 1 << 9;
    pub const TDOSA: u64 = 1 << 10;
    pub const TDRA: u64 = 1 << 11;
}

/// CPTR_EL2 (CPACR layout under E2H): FP untrapped at every level (FPEN).
pub const CPTR_FP_ON: u64 = 3 << 20;
/// The same for SVE (ZEN), for a guest with SVE whose registers are loaded.
pub const CPTR_SVE_ON: u64 = 3 << 16;

/// The guest's ZCR_EL1 (ZCR_EL12 from EL2 with E2H), which caps its VL under ZCR_EL2's cap.
pub fn guest_zcr() -> u64 {
    rd!("S3_5_C1_C2_0")
}

pub fn set_guest_zcr(v: u64) {
    // SAFETY: ZCR_EL12 is the guest's own register (the host's EL0 and EL2 vector lengths
    // come from ZCR_EL2), written while the guest's SVE state is being loaded.
    unsafe { core::arch::asm!("msr S3_5_C1_C2_0, {}", in(reg) v, options(nomem, nostack)) };
}

/// ICH_VTR_EL2, where the CPU has GICv3's system registers (ID_AA64PFR0_EL1.GIC and
/// ICC_SRE_EL2.SRE): list registers, priority and preemption bits.
pub fn ich_vtr() -> Option<u64> {
    if (rd!("S3_0_C0_C4_0") >> 24) & 0xf == 0 || rd_sre() & 1 == 0 {
        return None;
    }
    Some(rd!("S3_4_C12_C11_1"))
}

fn rd_sre() -> u64 {
    if (rd!("S3_0_C0_C4_0") >> 24) & 0xf == 0 {
        return 0;
    }
    rd!("S3_4_C12_C9_5") // ICC_SRE_EL2
}

/// Active priority registers of each group the CPU has (ICH_VTR_EL2.PREbits: 5, 6 or 7 bits).
fn nr_apr(vtr: u64) -> usize {
    let pre = ((vtr >> 26) & 7) + 1;
    1 << pre.saturating_sub(5).min(2)
}

macro_rules! lr_access {
    ($($i:literal => $enc:literal),*) => {
        /// Reads list register `n`.
        fn lr_read(n: usize) -> u64 {
            match n { $($i => rd!($enc),)* _ => 0 }
        }
        /// Writes list register `n`.
        fn lr_write(n: usize, v: u64) {
            match n { $($i => wr!($enc, v),)* _ => {} }
        }
    };
}

lr_access!(0 => "S3_4_C12_C12_0", 1 => "S3_4_C12_C12_1", 2 => "S3_4_C12_C12_2",
    3 => "S3_4_C12_C12_3", 4 => "S3_4_C12_C12_4", 5 => "S3_4_C12_C12_5",
    6 => "S3_4_C12_C12_6", 7 => "S3_4_C12_C12_7", 8 => "S3_4_C12_C13_0",
    9 => "S3_4_C12_C13_1", 10 => "S3_4_C12_C13_2", 11 => "S3_4_C12_C13_3",
    12 => "S3_4_C12_C13_4", 13 => "S3_4_C12_C13_5", 14 => "S3_4_C12_C13_6",
    15 => "S3_4_C12_C13_7");

fn apr_rw(n: usize, save: bool, g: &mut VgicCpu) {
    macro_rules! one {
        ($i:literal, $e0:literal, $e1:literal) => {
            if save {
                g.ap0r[$i] = rd!($e0);
                g.ap1r[$i] = rd!($e1);
            } else {
                wr!($e0, g.ap0r[$i]);
                wr!($e1, g.ap1r[$i]);
            }
        };
    }
    one!(0, "S3_4_C12_C8_0", "S3_4_C12_C9_0");
    if n > 1 {
        one!(1, "S3_4_C12_C8_1", "S3_4_C12_C9_1");
    }
    if n > 2 {
        one!(2, "S3_4_C12_C8_2", "S3_4_C12_C9_2");
        one!(3, "S3_4_C12_C8_3", "S3_4_C12_C9_3");
    }
}

/// Loads the guest's virtual CPU interface (interrupts masked). ICC_SRE_EL2.Enable lets the
/// guest reach its ICC_SRE_EL1 without a trap.
fn vgic_load(g: &mut VgicCpu, vtr: u64) {
    let sre = rd!("S3_4_C12_C9_5");
    if sre & 0b1001 != 0b1001 {
        wr!("S3_4_C12_C9_5", sre | 0b1001);
    }
    apr_rw(nr_apr(vtr), false, g);
    wr!("S3_4_C12_C11_7", g.vmcr);
    for i in 0..g.nr_lr {
        lr_write(i, g.lr[i]);
    }
    wr!("S3_4_C12_C11_0", g.hcr);
}

/// Reads the guest's virtual CPU interface back and turns it off for the host.
fn vgic_save(g: &mut VgicCpu, vtr: u64) {
    g.hcr = rd!("S3_4_C12_C11_0"); // with EOIcount
    for i in 0..g.nr_lr {
        g.lr[i] = lr_read(i);
        lr_write(i, 0);
    }
    g.vmcr = rd!("S3_4_C12_C11_7");
    apr_rw(nr_apr(vtr), true, g);
    wr!("S3_4_C12_C11_0", 0);
}

/// Whether the CPU implements FEAT_RAS (ID_AA64PFR0_EL1.RAS), and with it VSESR_EL2.
pub fn has_ras() -> bool {
    (rd!("S3_0_C0_C4_0") >> 28) & 0xf != 0
}

/// Whether the CPU implements the fine-grained traps (FEAT_FGT: ID_AA64MMFR0_EL1.FGT).
pub fn has_fgt() -> bool {
    (rd!("S3_0_C0_C7_0") >> 56) & 0xf != 0
}

/// Whether the CPU implements HCRX_EL2 (FEAT_HCX).
fn has_hcx() -> bool {
    (rd!("S3_0_C0_C7_1") >> 40) & 0xf != 0 // ID_AA64MMFR1_EL1.HCX
}

/// A vCPU's pointer-authentication keys (APIA, APIB, APDA, APDB, APGA; low half first), in
/// the CPU only while it runs: the host gives its own tasks no keys (SCTLR_EL1/EL2's EnIA..
/// clear, HWCAP_PACA hidden), so a guest's left behind are never used, and each vCPU that has
/// the feature loads its own at every entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PauthKeys(pub [u64; 10]);

macro_rules! pauth_keys {
    ($($i:literal $enc:literal)*) => {
        impl PauthKeys {
            fn load(&self) {
                $(
                    // SAFETY: writes a key register, which the host does not use.
                    unsafe {
                        core::arch::asm!(concat!("msr ", $enc, ", {}"), in(reg) self.0[$i],
                            options(nomem, nostack))
                    };
                )*
            }

            fn save(&mut self) {
                $(
                    // SAFETY: reading a system register has no side effects.
                    unsafe {
                        core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) self.0[$i],
                            options(nomem, nostack))
                    };
                )*
            }
        }
    };
}

pauth_keys! {
    0 "S3_0_C2_C1_0" 1 "S3_0_C2_C1_1" 2 "S3_0_C2_C1_2" 3 "S3_0_C2_C1_3"
    4 "S3_0_C2_C2_0" 5 "S3_0_C2_C2_1" 6 "S3_0_C2_C2_2" 7 "S3_0_C2_C2_3"
    8 "S3_0_C2_C3_0" 9 "S3_0_C2_C3_1"
}

/// Runs the guest once: loads `el1`, `c` and the vCPU's pointer-authentication `keys` (given
/// when `c.hcr` opens them, API and APK), enters at `regs`, and on its next exception to EL2
/// saves its registers back and restores the host's. Interrupts must be masked (the guest's
/// IRQs come back as [`Exit::Irq`] and are taken by the host once it unmasks). Only in a
/// kernel at EL2. `c.hcr` comes back as the guest left it: VSE clear if it took its virtual
/// SError.
pub fn world_switch(
    c: &mut Controls,
    el1: &mut El1State,
    regs: &mut GuestRegs,
    gic: &mut VgicCpu,
    keys: Option<&mut PauthKeys>,
) -> Exit {
    let vtr = ich_vtr();
    let host_hcr = rd!("S3_4_C1_C1_0");
    let host_mdcr = rd!("S3_4_C1_C1_1");
    let host_cptr = rd!("S3_0_C1_C0_2"); // CPTR_EL2 through CPACR_EL1 (E2H)
    let hcx = has_hcx();
    let host_hcrx = if hcx { rd!("S3_4_C1_C2_2") } else { 0 };
    let (tpidr, tpidrro, sp0, mdscr, tpidr_el1, par, csselr) = (
        rd!("S3_3_C13_C0_2"),
        rd!("S3_3_C13_C0_3"),
        rd!("sp_el0"),
        rd!("S2_0_C0_C2_2"),
        rd!("S3_0_C13_C0_4"),
        rd!("S3_0_C7_C4_0"),
        rd!("S3_2_C0_C0_0"),
    );

    wr!("S3_4_C2_C1_2", c.vtcr);
    wr!("S3_4_C2_C1_0", c.vttbr);
    wr!("S3_4_C0_C0_5", c.vmpidr);
    wr!("S3_4_C0_C0_0", c.vpidr);
    wr!("S3_4_C14_C0_3", c.cntvoff);
    // TDE off: the guest's debug exceptions are its own.
    wr!("S3_4_C1_C1_1", (host_mdcr & !mdcr::TDE) | c.mdcr_traps);
    if hcx {
        // What the VM is given (MOPS and FPMR at most); TCR2 and GCS stay UNDEFINED or
        // trapped, as the guest's ID registers say.
        wr!("S3_4_C1_C2_2", c.hcrx);
    }
    // The fine-grained instruction traps apply to EL1 and EL0 only while HCR_EL2.{E2H, TGE} is
    // not {1, 1} (the Arm ARM's HFGITR_EL2): the host under TGE never sees them, but the
    // host's own value (head.s) comes back so that the next guest starts from it.
    let host_hfgitr = (c.hfgitr != 0).then(|| {
        let v = rd!("S3_4_C1_C1_6");
        wr!("S3_4_C1_C1_6", v | c.hfgitr);
        v
    });
    let host_hfgrtr = (c.hfgrtr_clear != 0).then(|| {
        let (r, w) = (rd!("S3_4_C1_C1_4"), rd!("S3_4_C1_C1_5"));
        wr!("S3_4_C1_C1_4", r & !c.hfgrtr_clear);
        wr!("S3_4_C1_C1_5", w & !c.hfgrtr_clear);
        (r, w)
    });
    if c.hcr & hcr::VSE != 0 && has_ras() {
        wr!("S3_4_C5_C2_3", c.vsesr); // VSESR_EL2
    }
    el1.load();
    if let Some(k) = &keys {
        k.load();
    }
    if let Some(vtr) = vtr {
        vgic_load(gic, vtr);
    }
    wr!("S3_0_C1_C0_2", c.cptr);
    wr!("S3_4_C1_C1_0", c.hcr);
    // SAFETY: barrier only: the controls above take effect before the guest's first
    // instruction (guest_enter ends with ERET, itself a context synchronization event).
    unsafe { core::arch::asm!("isb", options(nomem, nostack)) };
    // SAFETY: guest_enter saves and restores every callee-saved register and SP, and returns
    // on the host's stack with the host's vectors; `regs` is valid for the whole call.
    let kind = unsafe { guest_enter(regs) };

    c.hcr = rd!("S3_4_C1_C1_0");
    wr!("S3_4_C1_C1_0", host_hcr);
    wr!("S3_0_C1_C0_2", host_cptr);
    el1.save();
    if let Some(k) = keys {
        k.save();
    }
    if let Some(vtr) = vtr {
        vgic_save(gic, vtr);
    }
    // The guest's timers must not fire while it is away: the host takes their state from
    // `el1` and the vCPU's own deadline.
    wr!("S3_5_C14_C3_1", 0);
    wr!("S3_5_C14_C2_1", 0);
    wr!("S3_3_C13_C0_2", tpidr);
    wr!("S3_3_C13_C0_3", tpidrro);
    wr!("sp_el0", sp0);
    wr!("S2_0_C0_C2_2", mdscr);
    wr!("S3_0_C13_C0_4", tpidr_el1);
    wr!("S3_0_C7_C4_0", par);
    wr!("S3_2_C0_C0_0", csselr);
    wr!("S3_4_C1_C1_1", host_mdcr);
    if hcx {
        wr!("S3_4_C1_C2_2", host_hcrx);
    }
    if let Some(v) = host_hfgitr {
        wr!("S3_4_C1_C1_6", v);
    }
    if let Some((r, w)) = host_hfgrtr {
        wr!("S3_4_C1_C1_4", r);
        wr!("S3_4_C1_C1_5", w);
    }
    wr!("S3_4_C14_C0_3", 0);
    // SAFETY: barrier only.
    unsafe { core::arch::asm!("isb", options(nomem, nostack)) };
    match kind {
        0 => Exit::Sync,
        1 => Exit::Irq,
        2 => Exit::Fiq,
        _ => Exit::SError,
    }
}

/// MIDR_EL1, REVIDR_EL1, CLIDR_EL1, AIDR_EL1 and CTR_EL0: the CPU's identification and cache
/// geometry, which a VM reports as its own.
pub fn impl_regs() -> [u64; 5] {
    [
        rd!("midr_el1"),
        rd!("revidr_el1"),
        rd!("clidr_el1"),
        rd!("aidr_el1"),
        rd!("ctr_el0"),
    ]
}

/// CCSIDR_EL1 and CCSIDR2_EL1 of the cache level and kind `csselr` selects (a guest's
/// CSSELR_EL1, trapped by HCR_EL2.TID2): read with the host's CSSELR_EL1 set to it for the
/// moment. `two`: CCSIDR2 (only with FEAT_CCIDX).
pub fn ccsidr(csselr: u64, two: bool) -> u64 {
    let old = rd!("csselr_el1");
    wr!("csselr_el1", csselr & 0x1f);
    // SAFETY: a barrier; the read below must see the new selection.
    unsafe { core::arch::asm!("isb", options(nomem, nostack)) };
    let v = if two {
        rd!("S3_1_C0_C0_2")
    } else {
        rd!("ccsidr_el1")
    };
    wr!("csselr_el1", old);
    v
}

/// The CPU's SMIDR_EL1 (only where it has SME: the register is UNDEFINED otherwise).
pub fn smidr() -> u64 {
    rd!("S3_1_C0_C0_6")
}

/// The CPU's own value of the ID register at op0=3, op1=0, CRn=0, `crm` (1..=7), `op2` (the
/// space HCR_EL2.TID3 traps); 0 outside it.
pub fn read_id_reg(crm: u8, op2: u8) -> u64 {
    match (crm, op2) {
        (1, 0) => rd!("S3_0_C0_C1_0"),
        (1, 1) => rd!("S3_0_C0_C1_1"),
        (1, 2) => rd!("S3_0_C0_C1_2"),
        (1, 3) => rd!("S3_0_C0_C1_3"),
        (1, 4) => rd!("S3_0_C0_C1_4"),
        (1, 5) => rd!("S3_0_C0_C1_5"),
        (1, 6) => rd!("S3_0_C0_C1_6"),
        (1, 7) => rd!("S3_0_C0_C1_7"),
        (2, 0) => rd!("S3_0_C0_C2_0"),
        (2, 1) => rd!("S3_0_C0_C2_1"),
        (2, 2) => rd!("S3_0_C0_C2_2"),
        (2, 3) => rd!("S3_0_C0_C2_3"),
        (2, 4) => rd!("S3_0_C0_C2_4"),
        (2, 5) => rd!("S3_0_C0_C2_5"),
        (2, 6) => rd!("S3_0_C0_C2_6"),
        (2, 7) => rd!("S3_0_C0_C2_7"),
        (3, 0) => rd!("S3_0_C0_C3_0"),
        (3, 1) => rd!("S3_0_C0_C3_1"),
        (3, 2) => rd!("S3_0_C0_C3_2"),
        (3, 3) => rd!("S3_0_C0_C3_3"),
        (3, 4) => rd!("S3_0_C0_C3_4"),
        (3, 5) => rd!("S3_0_C0_C3_5"),
        (3, 6) => rd!("S3_0_C0_C3_6"),
        (3, 7) => rd!("S3_0_C0_C3_7"),
        (4, 0) => rd!("S3_0_C0_C4_0"),
        (4, 1) => rd!("S3_0_C0_C4_1"),
        (4, 2) => rd!("S3_0_C0_C4_2"),
        (4, 3) => rd!("S3_0_C0_C4_3"),
        (4, 4) => rd!("S3_0_C0_C4_4"),
        (4, 5) => rd!("S3_0_C0_C4_5"),
        (4, 6) => rd!("S3_0_C0_C4_6"),
        (4, 7) => rd!("S3_0_C0_C4_7"),
        (5, 0) => rd!("S3_0_C0_C5_0"),
        (5, 1) => rd!("S3_0_C0_C5_1"),
        (5, 2) => rd!("S3_0_C0_C5_2"),
        (5, 3) => rd!("S3_0_C0_C5_3"),
        (5, 4) => rd!("S3_0_C0_C5_4"),
        (5, 5) => rd!("S3_0_C0_C5_5"),
        (5, 6) => rd!("S3_0_C0_C5_6"),
        (5, 7) => rd!("S3_0_C0_C5_7"),
        (6, 0) => rd!("S3_0_C0_C6_0"),
        (6, 1) => rd!("S3_0_C0_C6_1"),
        (6, 2) => rd!("S3_0_C0_C6_2"),
        (6, 3) => rd!("S3_0_C0_C6_3"),
        (6, 4) => rd!("S3_0_C0_C6_4"),
        (6, 5) => rd!("S3_0_C0_C6_5"),
        (6, 6) => rd!("S3_0_C0_C6_6"),
        (6, 7) => rd!("S3_0_C0_C6_7"),
        (7, 0) => rd!("S3_0_C0_C7_0"),
        (7, 1) => rd!("S3_0_C0_C7_1"),
        (7, 2) => rd!("S3_0_C0_C7_2"),
        (7, 3) => rd!("S3_0_C0_C7_3"),
        (7, 4) => rd!("S3_0_C0_C7_4"),
        (7, 5) => rd!("S3_0_C0_C7_5"),
        (7, 6) => rd!("S3_0_C0_C7_6"),
        (7, 7) => rd!("S3_0_C0_C7_7"),
        _ => 0,
    }
}

/// Physical address bits the CPU implements (ID_AA64MMFR0_EL1.PARange).
pub fn pa_bits() -> u32 {
    match rd!("S3_0_C0_C7_0") & 0xf {
        0 => 32,
        1 => 36,
        2 => 40,
        3 => 42,
        4 => 44,
        5 => 48,
        _ => 52,
    }
}

/// VMID bits (ID_AA64MMFR1_EL1.VMIDBits: 8 or 16).
pub fn vmid_bits() -> u32 {
    if (rd!("S3_0_C0_C7_1") >> 4) & 0xf == 2 {
        16
    } else {
        8
    }
}

/// Invalidates every stage-1 and stage-2 TLB entry of the VM whose VTTBR_EL2 is `vttbr`, on
/// every CPU (Inner Shareable). Interrupts are masked inside: VTTBR_EL2 briefly holds the VM's.
pub fn flush_tlb_vm(vttbr: u64) {
    let _irqs = super::cpu::IrqGuard::new();
    let old = rd!("S3_4_C2_C1_0");
    wr!("S3_4_C2_C1_0", vttbr);
    // SAFETY: TLB maintenance and barriers only; with HCR_EL2.{E2H,TGE} = {1,1} the host's
    // own translations are not the EL1&0 regime's, so VMALLS12E1IS touches only the VM's.
    unsafe {
        core::arch::asm!(
            "isb",
            "dsb ishst",
            "tlbi vmalls12e1is",
            "dsb ish",
            "isb",
            options(nostack)
        )
    };
    wr!("S3_4_C2_C1_0", old);
}

/// Invalidates every VM's stage-1 and stage-2 TLB entries on every CPU (Inner Shareable), as a
/// new generation of VMIDs needs (kvm/vmid.rs). The host's own translations are the EL2&0
/// regime's and stay.
pub fn flush_tlb_all_vms() {
    // SAFETY: TLB maintenance and barriers only.
    unsafe {
        core::arch::asm!(
            "dsb ishst",
            "tlbi alle1is",
            "dsb ish",
            "isb",
            options(nostack)
        )
    };
}
