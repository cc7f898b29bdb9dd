//! A guest's PMUv3 counters on the CPU's own (Arm ARM D13, "The Performance Monitors
//! Extension"): loaded before a vCPU with a PMU enters and saved when it leaves, so that they
//! count only while its guest runs (kvm::pmu). The host kernel does not use the PMU itself.
//! Counters are reached through PMSELR_EL0 and PMXEVCNTR/PMXEVTYPER_EL0.

/// The counters of one vCPU as they go into and come out of the hardware: PMCR_EL0's E, LC
/// and LP, PMCNTENSET_EL0, PMOVSSET_EL0, the event counters and types (index 31: the cycle
/// counter and PMCCFILTR_EL0).
#[derive(Clone, Debug, Default)]
pub struct PmuHw {
    pub pmcr: u64,
    pub cnten: u64,
    pub ovs: u64,
    pub cntr: [u64; 32],
    pub typer: [u64; 32],
}

fn isb() {
    // SAFETY: a barrier; makes PMSELR_EL0 and PMCR_EL0 writes visible to what follows.
    unsafe { core::arch::asm!("isb", options(nomem, nostack)) };
}

/// ID_AA64DFR0_EL1.PMUVer: 0 without a PMU, 0xf for an IMPLEMENTATION DEFINED one.
pub fn pmuver() -> u64 {
    (rd!("S3_0_C0_C5_0") >> 8) & 0xf
}

/// The CPU's event counters (PMCR_EL0.N, as EL2 reads it), where it has a PMUv3.
pub fn counters() -> u32 {
    match pmuver() {
        0 | 0xf => 0,
        _ => ((rd!("S3_3_C9_C12_0") >> 11) & 0x1f) as u32,
    }
}

/// PMCEID0_EL0 or PMCEID1_EL0: the common events the CPU counts.
pub fn pmceid(high: bool) -> u64 {
    if high {
        rd!("S3_3_C9_C12_7")
    } else {
        rd!("S3_3_C9_C12_6")
    }
}

const ALL: u64 = u64::MAX >> 32;

/// Puts a vCPU's first `n` event counters and the cycle counter on the CPU and starts them
/// as its PMCR_EL0.E and PMCNTENSET_EL0 say. Overflow interrupts stay off (kvm::pmu raises
/// the guest's own from PMOVSSET_EL0 after the exit). Interrupts are masked.
pub fn load(n: u32, hw: &PmuHw) {
    wr!("S3_3_C9_C12_0", 0);
    wr!("S3_3_C9_C12_2", ALL); // PMCNTENCLR_EL0
    wr!("S3_3_C9_C12_3", ALL); // PMOVSCLR_EL0
    wr!("S3_0_C9_C14_2", ALL); // PMINTENCLR_EL1
    for i in 0..n as usize {
        wr!("S3_3_C9_C12_5", i as u64);
        isb();
        wr!("S3_3_C9_C13_1", hw.typer[i]);
        wr!("S3_3_C9_C13_2", hw.cntr[i]);
    }
    wr!("S3_3_C14_C15_7", hw.typer[31]);
    wr!("S3_3_C9_C13_0", hw.cntr[31]);
    wr!("S3_3_C9_C14_3", hw.ovs); // PMOVSSET_EL0
    wr!("S3_3_C9_C12_1", hw.cnten); // PMCNTENSET_EL0
    wr!("S3_3_C9_C12_0", hw.pmcr);
    isb();
}

/// Stops the counters and reads the vCPU's values and overflow flags back; the CPU's
/// counters are left disabled with no overflow pending.
pub fn save(n: u32, hw: &mut PmuHw) {
    wr!("S3_3_C9_C12_0", 0);
    isb();
    for i in 0..n as usize {
        wr!("S3_3_C9_C12_5", i as u64);
        isb();
        hw.cntr[i] = rd!("S3_3_C9_C13_2");
    }
    hw.cntr[31] = rd!("S3_3_C9_C13_0");
    hw.ovs = rd!("S3_3_C9_C14_3") & (ALL);
    wr!("S3_3_C9_C12_2", ALL);
    wr!("S3_3_C9_C12_3", ALL);
}
