//! The guest PMU's ABI (KVM_ARM_VCPU_PMU_V3): the vCPU attribute group and its attributes
//! (Documentation/virt/kvm/devices/vcpu.rst, include/uapi/linux/kvm.h and
//! arch/arm64/include/uapi/asm/kvm.h), and the PMUv3 register fields the emulation follows
//! (include/linux/perf/arm_pmuv3.h).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const KVM_CAP_ARM_PMU_V3: u64 = 126;

/// The vCPU attribute group and its attributes.
pub const KVM_ARM_VCPU_PMU_V3_CTRL: u32 = 0;
pub const KVM_ARM_VCPU_PMU_V3_IRQ: u64 = 0;
pub const KVM_ARM_VCPU_PMU_V3_INIT: u64 = 1;
pub const KVM_ARM_VCPU_PMU_V3_FILTER: u64 = 2;
pub const KVM_ARM_VCPU_PMU_V3_SET_PMU: u64 = 3;
pub const KVM_ARM_VCPU_PMU_V3_SET_NR_COUNTERS: u64 = 4;

/// `struct kvm_pmu_event_filter`'s actions.
pub const KVM_PMU_EVENT_ALLOW: u8 = 0;
pub const KVM_PMU_EVENT_DENY: u8 = 1;

/// `struct kvm_pmu_event_filter`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmPmuEventFilter {
    pub base_event: u16,
    pub nevents: u16,
    pub action: u8,
    pub pad: [u8; 3],
}
const _: () = assert!(core::mem::size_of::<KvmPmuEventFilter>() == 8);

/// The cycle counter's index in the counter bitmaps.
pub const CYCLE_IDX: u32 = 31;
/// Event counters a PMUv3 may have (PMCR_EL0.N is at most 31).
pub const MAX_EVENT_COUNTERS: u32 = 31;

/// PMCR_EL0 fields.
pub const PMCR_E: u64 = 1 << 0;
pub const PMCR_P: u64 = 1 << 1;
pub const PMCR_C: u64 = 1 << 2;
pub const PMCR_LC: u64 = 1 << 6;
pub const PMCR_LP: u64 = 1 << 7;
pub const PMCR_N_SHIFT: u32 = 11;
pub const PMCR_N_MASK: u64 = 0x1f << PMCR_N_SHIFT;
/// The bits a guest or VMM may write (ARMV8_PMU_PMCR_MASK: E, P, C, D, X, DP, LC, LP).
pub const PMCR_MASK: u64 = 0xff;

/// PMUSERENR_EL0 fields (EN, SW, CR, ER).
pub const USERENR_EN: u64 = 1 << 0;
pub const USERENR_SW: u64 = 1 << 1;
pub const USERENR_CR: u64 = 1 << 2;
pub const USERENR_ER: u64 = 1 << 3;
pub const USERENR_MASK: u64 = 0xf;

/// PMSELR_EL0.SEL.
pub const PMSELR_SEL_MASK: u64 = 0x1f;

/// The PMEVTYPER<n>_EL0 bits a guest keeps (kvm_pmu_evtyper_mask): P and U, the event
/// number (10 bits for PMUv3, 16 from PMUv3p1), and NSK, NSU and M where the VM has EL3.
pub fn evtyper_mask(pmuver: u64, has_el3: bool) -> u64 {
    let events = if pmuver == 1 { 0x3ff } else { 0xffff };
    let el3 = if has_el3 {
        (1 << 29) | (1 << 28) | (1 << 26)
    } else {
        0
    };
    (1 << 31) | (1 << 30) | el3 | events
}

/// The counters PMCR_EL0.N = `n` gives a guest, the cycle counter included.
pub const fn counter_mask(n: u32) -> u64 {
    (1 << CYCLE_IDX) | ((1u64 << n) - 1)
}

/// Whether `evtype` counts its counter as 64 bits wide: the cycle counter with PMCR.LC,
/// an event counter with PMCR.LP (kvm_pmc_is_64bit).
pub fn is_64bit(idx: u32, pmcr: u64) -> bool {
    if idx == CYCLE_IDX {
        pmcr & PMCR_LC != 0
    } else {
        pmcr & PMCR_LP != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(counter_mask(0), 1 << 31);
        assert_eq!(counter_mask(6), (1 << 31) | 0x3f);
        assert_eq!(evtyper_mask(5, false), 0xc000_ffff);
        assert_eq!(evtyper_mask(1, false), 0xc000_03ff);
        assert_eq!(PMCR_N_MASK, 0xf800);
    }
}
