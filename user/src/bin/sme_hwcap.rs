//! SME hwcaps: HWCAP2_SME and every SME feature hwcap (in AT_HWCAP, AT_HWCAP2 and AT_HWCAP3)
//! agree with ID_AA64PFR1_EL1.SME and ID_AA64SMFR0_EL1 as EL0 reads them (HWCAP_CPUID
//! emulation), and /proc/cpuinfo lists exactly the SME features the hwcaps have, under Linux's
//! names ("sme", "smefa64", "smei16i64", ...).
#![no_std]
#![no_main]

use svelt_user::ktap::{skip, TestResult};
use svelt_user::sme::*;
use svelt_user::*;

/// (cpuinfo name, AT_HWCAP word, bit, ID_AA64SMFR0_EL1 field shift, width, minimum value), from
/// Linux 7.3's uapi asm/hwcap.h and cpufeature.c.
const FEATURES: &[(&str, u8, u32, u32, u32, u64)] = &[
    ("sme2p2", 1, 42, 56, 4, 3),
    ("smesbitperm", 1, 43, 25, 1, 1),
    ("smeaes", 1, 44, 24, 1, 1),
    ("smesfexpa", 1, 45, 23, 1, 1),
    ("smestmop", 1, 46, 16, 1, 1),
    ("smesmop4", 1, 47, 0, 1, 1),
    ("smei16i64", 2, 24, 52, 4, 0xf),
    ("smef64f64", 2, 25, 48, 1, 1),
    ("smei8i32", 2, 26, 36, 4, 0xf),
    ("smef16f32", 2, 27, 35, 1, 1),
    ("smeb16f32", 2, 28, 34, 1, 1),
    ("smef32f32", 2, 29, 32, 1, 1),
    ("smefa64", 2, 30, 63, 1, 1),
    ("sme2", 2, 37, 56, 4, 1),
    ("sme2p1", 2, 38, 56, 4, 2),
    ("smei16i32", 2, 39, 44, 4, 5),
    ("smebi32i32", 2, 40, 33, 1, 1),
    ("smeb16b16", 2, 41, 43, 1, 1),
    ("smef16f16", 2, 42, 42, 1, 1),
    ("smelutv2", 2, 57, 60, 1, 1),
    ("smef8f16", 2, 58, 41, 1, 1),
    ("smef8f32", 2, 59, 40, 1, 1),
    ("smesf8fma", 2, 60, 30, 1, 1),
    ("smesf8dp4", 2, 61, 29, 1, 1),
    ("smesf8dp2", 2, 62, 28, 1, 1),
    ("smelut6", 3, 6, 61, 1, 1),
    ("sme2p3", 3, 7, 56, 4, 4),
];

/// The hwcap word `word` (1: AT_HWCAP, 2: AT_HWCAP2, 3: AT_HWCAP3).
fn hwcap_word(word: u8) -> u64 {
    svelt_user::cpuid::hwcaps().0[usize::from(word) - 1]
}

fn field(v: u64, shift: u32, width: u32) -> u64 {
    (v >> shift) & ((1 << width) - 1)
}

fn need_cpuid() -> TestResult {
    if hwcap() & HWCAP_CPUID == 0 {
        return skip("no HWCAP_CPUID");
    }
    Ok(())
}

fn hwcap2_sme_matches_pfr1() -> TestResult {
    need_cpuid()?;
    let pfr1 = id_aa64pfr1();
    let sme = field(pfr1, 24, 4);
    println!(
        "# ID_AA64PFR1_EL1 {pfr1:#018x} (SME {sme}), AT_HWCAP2 {:#x}",
        hwcap2()
    );
    check_eq!(sme >= 1, has_sme(), "PFR1.SME >= 1 <=> HWCAP2_SME");
    check_eq!(sme >= 2, has_sme2(), "PFR1.SME >= 2 <=> HWCAP2_SME2");
    Ok(())
}

fn feature_hwcaps_match_smfr0() -> TestResult {
    need_cpuid()?;
    let smfr0 = id_aa64smfr0();
    println!("# ID_AA64SMFR0_EL1 {smfr0:#018x}");
    if !has_sme() {
        for &(name, word, bit, ..) in FEATURES {
            check_eq!(hwcap_word(word) >> bit & 1, 0, "{name} without SME");
        }
        return Ok(());
    }
    for &(name, word, bit, shift, width, min) in FEATURES {
        let want = field(smfr0, shift, width) >= min;
        check_eq!(
            hwcap_word(word) >> bit & 1 == 1,
            want,
            "AT_HWCAP{word} bit {bit} ({name})"
        );
    }
    Ok(())
}

fn cpuinfo_names() -> TestResult {
    let text = svelt_user::cpuid::cpuinfo()?;
    let feats: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("Features"))
        .flat_map(|l| l.split_once(':').map_or("", |(_, r)| r).split_whitespace())
        .collect();
    check!(!feats.is_empty(), "no Features line");
    let smes: Vec<&&str> = feats.iter().filter(|f| f.starts_with("sme")).collect();
    println!("# cpuinfo SME features (all CPUs): {smes:?}");
    check_eq!(feats.contains(&"sme"), has_sme(), "\"sme\"");
    for &(name, word, bit, ..) in FEATURES {
        check_eq!(
            feats.contains(&name),
            hwcap_word(word) >> bit & 1 == 1,
            "cpuinfo \"{name}\" <=> AT_HWCAP{word} bit {bit}"
        );
    }
    check!(!feats.contains(&"sme_fa64"), "FA64 is spelled \"smefa64\"");
    Ok(())
}

fn main(_args: &rt::Args) -> i32 {
    ktap::run(&[
        ("hwcap2_sme_matches_pfr1", hwcap2_sme_matches_pfr1),
        ("feature_hwcaps_match_smfr0", feature_hwcaps_match_smfr0),
        ("cpuinfo_names", cpuinfo_names),
    ])
}

entry!(main);
