//! CPU features: ID registers decoded once on the boot CPU, vector lengths probed on every CPU,
//! and the system-wide sets (the intersection, as Linux uses) for the boot report. This module
//! only reports; the vector-length defaults tasks get are fpstate's.

#![forbid(unsafe_code)]

use crate::arch::{cpu, fpsimd};
use crate::percpu;
use core::sync::atomic::{AtomicBool, Ordering};
use spin::Once;
use svelt_abi::fp::vl::VlSet;
use svelt_abi::isa::cpu::{Features, VlCensus};
use svelt_abi::isa::hwcap::Hwcaps;

static FEATURES: Once<Features> = Once::new();

/// The boot CPU's decoded features.
pub fn features() -> Features {
    *FEATURES.call_once(|| {
        let raw = cpu::read_id_regs();
        log::debug!("{raw}");
        Features::decode(&raw)
    })
}

/// Enables EL1 access to FP/SVE/SME on this CPU, configures SME, and records its vector lengths.
pub fn init_this_cpu() {
    let f = features();
    let sme = f.sme != 0;
    fpsimd::enable_el1_access(f.sve, sme);
    let this = percpu::this();
    if f.sve {
        this.sve_vls
            .store(fpsimd::sve::probe_vls().bits(), Ordering::Relaxed);
    }
    if f.fpmr {
        fpsimd::fpsimd::fpmr::enable_el0();
    }
    if sme {
        fpsimd::sme::cpu_init(f.sme_fa64, f.sme2());
        this.sme_vls
            .store(fpsimd::sme::probe_vls().bits(), Ordering::Relaxed);
    }
    crate::arch::debug::init();
    if f.gcs {
        // Permission indirection first: GCS pages need it (arch::gcs). GCS controls cleared.
        crate::arch::gcs::enable_pie();
        crate::arch::gcs::cpu_init();
        GCS.store(true, Ordering::Relaxed);
    }
    // CPY*/SET* for the kernel's copies: FEAT_MOPS (ID_AA64ISAR2_EL1[19:16]) with FEAT_HCX
    // (ID_AA64MMFR1_EL1[43:40]), through which head.s let EL1 use them, on every CPU.
    let id = cpu::read_id_regs();
    if (id.isar2 >> 16) & 0xf == 0 || (id.mmfr1 >> 40) & 0xf == 0 {
        MOPS_EVERYWHERE.store(false, Ordering::Relaxed);
    }
}

/// Whether user space has GCS: set at each CPU's bring-up, before any task runs; read on every
/// context switch and signal, so a plain flag rather than the feature table.
static GCS: AtomicBool = AtomicBool::new(false);

/// Whether GCS is on for user space (gcs.rs offers it).
pub fn gcs() -> bool {
    GCS.load(Ordering::Relaxed)
}

/// Cleared by any CPU that cannot run CPY*/SET* at EL1.
static MOPS_EVERYWHERE: AtomicBool = AtomicBool::new(true);

static SYSTEM_VLS: Once<VlCensus> = Once::new();

/// The online CPUs' vector lengths: the common sets, and whether they differ. Fixed by
/// `finalize` once all CPUs are up.
pub fn vl_census() -> VlCensus {
    if let Some(v) = SYSTEM_VLS.get() {
        return *v;
    }
    let mut census = VlCensus::new();
    for c in percpu::all()
        .iter()
        .filter(|c| c.online.load(Ordering::Acquire))
    {
        let s = VlSet::from_bits(c.sve_vls.load(Ordering::Relaxed));
        let m = VlSet::from_bits(c.sme_vls.load(Ordering::Relaxed));
        if census.add(s, m) {
            log::warn!(
                "cpu{} vector lengths differ from other CPUs: sve {s} sme {m}",
                c.id
            );
        }
    }
    census
}

/// Vector lengths every online CPU implements: (SVE, SME).
pub fn system_vls() -> (VlSet, VlSet) {
    let c = vl_census();
    (c.sve, c.sme)
}

/// Fixes the system vector-length sets (after SMP bring-up), and turns on CPY*/SET* for the
/// kernel's copies if every CPU has them and `mops` (the command line) allows it.
pub fn finalize(mops: bool) {
    SYSTEM_VLS.call_once(vl_census);
    crate::arch::exception::set_program_ssbs(features().ssbs);
    match (MOPS_EVERYWHERE.load(Ordering::Relaxed), mops) {
        (true, true) => {
            crate::arch::mem::use_mops();
            log::info!("kernel copies: CPY*/SET* (FEAT_MOPS on every CPU)");
        }
        (true, false) => log::info!("kernel copies: register loops (svelt.mops=off)"),
        (false, _) => log::info!("kernel copies: register loops (no FEAT_MOPS at EL1)"),
    }
}

/// What the kernel offers user space (hwcap::Offer::svelt lists what Svelt leaves out): SVE and
/// SME when the CPU has them, EL0 ID-register reads emulated.
pub fn offer() -> svelt_abi::isa::hwcap::Offer {
    let f = features();
    svelt_abi::isa::hwcap::Offer {
        gcs: f.gcs,
        ..svelt_abi::isa::hwcap::Offer::svelt(f.sve, f.sme != 0)
    }
}

static HWCAPS: Once<Hwcaps> = Once::new();

/// AT_HWCAP, AT_HWCAP2 and AT_HWCAP3 as user space sees them (decided once, on the boot CPU's
/// ID registers).
pub fn hwcaps() -> Hwcaps {
    *HWCAPS.call_once(|| svelt_abi::isa::hwcap::hwcaps(&cpu::read_id_regs(), offer()))
}

/// The system-wide SVE vector lengths (every online CPU has them).
pub fn sve_vls() -> VlSet {
    if features().sve {
        system_vls().0
    } else {
        VlSet::EMPTY
    }
}

/// The system-wide SME (streaming) vector lengths.
pub fn sme_vls() -> VlSet {
    if features().sme != 0 {
        system_vls().1
    } else {
        VlSet::EMPTY
    }
}

/// The largest SVE vector length, if SVE exists.
pub fn sve_max_vl() -> Option<u32> {
    sve_vls().max_bytes()
}

/// MIDR_EL1 of the boot CPU.
pub fn midr() -> u64 {
    use aarch64_cpu::registers::Readable;
    aarch64_cpu::registers::MIDR_EL1.get()
}
