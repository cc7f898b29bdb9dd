//! How a program discovers SVE: AT_HWCAP (HWCAP_SVE, HWCAP_CPUID), the EL0 ID-register
//! emulation (MRS of ID_AA64PFR0_EL1 shows SVE; ID_AA64ZFR0_EL1 agrees with the HWCAP2_SVE*
//! bits; ID_AA64PFR1_EL1's SME field with HWCAP2_SME and PR_SME_GET_VL; MIDR_EL1 readable;
//! unallocated ID-space registers read as zero), /proc/cpuinfo's Features, and SIGILL for a
//! non-ID system register read from EL0.
#![no_std]
#![no_main]

use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::describe;
use svelt_user::sig::*;
use svelt_user::sme::{self, hwcap, hwcap2, HWCAP2_SME};
use svelt_user::sve::{HWCAP2_SVE2, HWCAP_CPUID, HWCAP_SVE};
use svelt_user::*;

const HWCAP2_SVEAES: u64 = 1 << 2;
const HWCAP2_SVEPMULL: u64 = 1 << 3;
const HWCAP2_SVEBITPERM: u64 = 1 << 4;
const HWCAP2_SVESHA3: u64 = 1 << 5;
const HWCAP2_SVESM4: u64 = 1 << 6;
const HWCAP2_SVEI8MM: u64 = 1 << 9;
const HWCAP2_SVEF32MM: u64 = 1 << 10;
const HWCAP2_SVEF64MM: u64 = 1 << 11;
const HWCAP2_SVEBF16: u64 = 1 << 12;

fn need_sve() -> TestResult {
    if hwcap() & HWCAP_SVE == 0 {
        return skip("no SVE (AT_HWCAP lacks HWCAP_SVE)");
    }
    Ok(())
}

/// Reads a system register by its generic name (the read traps to the kernel from EL0).
macro_rules! mrs {
    ($name:literal) => {{
        let v: u64;
        // SAFETY: an MRS from EL0 either reads the register, is emulated by the kernel, or
        // raises SIGILL; it touches no memory.
        unsafe { core::arch::asm!(concat!("mrs {}, ", $name), out(reg) v, options(nomem, nostack)) };
        v
    }};
}

fn field(reg: u64, shift: u32) -> u64 {
    (reg >> shift) & 0xf
}

fn hwcaps() -> TestResult {
    need_sve()?;
    println!("# AT_HWCAP {:#x} AT_HWCAP2 {:#x}", hwcap(), hwcap2());
    check!(
        hwcap() & HWCAP_CPUID != 0,
        "HWCAP_CPUID (EL0 ID-register emulation)"
    );
    Ok(())
}

fn id_aa64pfr0_shows_sve() -> TestResult {
    need_sve()?;
    let pfr0 = mrs!("S3_0_C0_C4_0"); // ID_AA64PFR0_EL1
    println!("# ID_AA64PFR0_EL1 {pfr0:#018x}");
    check_eq!(field(pfr0, 32), 1, "ID_AA64PFR0_EL1.SVE");
    check!(field(pfr0, 16) != 0xf, "FP implemented");
    Ok(())
}

fn id_aa64zfr0_matches_hwcap2() -> TestResult {
    need_sve()?;
    let zfr0 = mrs!("S3_0_C0_C4_4"); // ID_AA64ZFR0_EL1
    let h2 = hwcap2();
    println!("# ID_AA64ZFR0_EL1 {zfr0:#018x}");
    for (name, bit, shift, min) in [
        ("SVE2 (SVEver)", HWCAP2_SVE2, 0, 1),
        ("SVEAES", HWCAP2_SVEAES, 4, 1),
        ("SVEPMULL", HWCAP2_SVEPMULL, 4, 2),
        ("SVEBITPERM", HWCAP2_SVEBITPERM, 16, 1),
        ("SVEBF16", HWCAP2_SVEBF16, 20, 1),
        ("SVESHA3", HWCAP2_SVESHA3, 32, 1),
        ("SVESM4", HWCAP2_SVESM4, 40, 1),
        ("SVEI8MM", HWCAP2_SVEI8MM, 44, 1),
        ("SVEF32MM", HWCAP2_SVEF32MM, 52, 1),
        ("SVEF64MM", HWCAP2_SVEF64MM, 56, 1),
    ] {
        check_eq!(
            h2 & bit != 0,
            field(zfr0, shift) >= min,
            "HWCAP2_{} vs ID_AA64ZFR0_EL1 field {}",
            name,
            shift
        );
    }
    Ok(())
}

fn id_aa64pfr1_sme_matches() -> TestResult {
    need_sve()?;
    let pfr1 = mrs!("S3_0_C0_C4_1"); // ID_AA64PFR1_EL1
    let sme_field = field(pfr1, 24);
    let prctl_ok = sme::sme_get_vl().is_ok();
    println!("# ID_AA64PFR1_EL1 {pfr1:#018x}");
    check_eq!(
        hwcap2() & HWCAP2_SME != 0,
        sme_field != 0,
        "HWCAP2_SME vs ID_AA64PFR1_EL1.SME"
    );
    check_eq!(
        prctl_ok,
        sme_field != 0,
        "PR_SME_GET_VL works vs ID_AA64PFR1_EL1.SME"
    );
    Ok(())
}

fn other_id_registers() -> TestResult {
    need_sve()?;
    let midr = mrs!("S3_0_C0_C0_0"); // MIDR_EL1: emulated too
    println!("# MIDR_EL1 {midr:#x}");
    check!(midr >> 32 == 0, "MIDR_EL1 upper half is RES0: {midr:#x}");
    // An unallocated encoding in the ID space reads as zero.
    check_eq!(
        mrs!("S3_0_C0_C7_7"),
        0,
        "unallocated ID register S3_0_C0_C7_7"
    );
    Ok(())
}

fn cpuinfo_features() -> TestResult {
    need_sve()?;
    let s = svelt_user::cpuid::cpuinfo()?;
    let sve2 = hwcap2() & HWCAP2_SVE2 != 0;
    let mut lines = 0;
    for l in s.lines().filter(|l| l.starts_with("Features")) {
        lines += 1;
        let (_, feats) = l.split_once(':').ok_or(format!("no colon: {l}"))?;
        let has = |w: &str| feats.split_whitespace().any(|f| f == w);
        check!(has("sve"), "no \"sve\" in {l}");
        check!(has("cpuid"), "no \"cpuid\" in {l}");
        check_eq!(
            has("sve2"),
            sve2,
            "\"sve2\" in Features iff HWCAP2_SVE2: {}",
            l
        );
    }
    check!(lines > 0, "no Features line in /proc/cpuinfo:\n{s}");
    Ok(())
}

core::arch::global_asm!(
    ".text",
    ".global read_zcr_el1",
    "read_zcr_el1:",
    ".global read_zcr_el1_insn",
    "read_zcr_el1_insn:",
    "    mrs x0, S3_0_C1_C2_0", // ZCR_EL1
    "    ret",
    ".global read_sctlr_el1",
    "read_sctlr_el1:",
    ".global read_sctlr_el1_insn",
    "read_sctlr_el1_insn:",
    "    mrs x0, S3_0_C1_C0_0", // SCTLR_EL1
    "    ret",
);

extern "C" {
    fn read_zcr_el1() -> u64;
    fn read_zcr_el1_insn();
    fn read_sctlr_el1() -> u64;
    fn read_sctlr_el1_insn();
}

fn non_id_register_sigill() -> TestResult {
    need_sve()?;
    let cases: [(&str, unsafe extern "C" fn() -> u64, unsafe extern "C" fn()); 2] = [
        ("ZCR_EL1", read_zcr_el1, read_zcr_el1_insn),
        ("SCTLR_EL1", read_sctlr_el1, read_sctlr_el1_insn),
    ];
    for (name, f, insn) in cases {
        let (st, fault) = t!(fault_in_child(|| {
            // SAFETY: the read raises SIGILL, recorded by the child's handler.
            unsafe { f() };
        }));
        check!(
            fault.handled,
            "MRS {name} from EL0: no signal (child {})",
            describe(st)
        );
        check_eq!(fault.info.signo, SIGILL, "MRS {} from EL0", name);
        check_eq!(fault.info.code, ILL_ILLOPC);
        check_eq!(fault.pc, insn as *const () as u64, "pc");
        check_eq!(fault.info.addr(), insn as *const () as u64, "si_addr");
    }
    Ok(())
}

/// Capabilities Linux 7.3 derives from one ID-register field each (uapi asm/hwcap.h bits,
/// cpuinfo.c names): (name, AT_HWCAP word, bit, register read at EL0, shift, minimum, needs SVE).
fn field_caps() -> [(&'static str, u8, u32, u64, u32, u64, bool); 4] {
    let mmfr2 = mrs!("S3_0_C0_C7_2"); // ID_AA64MMFR2_EL1
    let isar2 = mrs!("S3_0_C0_C6_2"); // ID_AA64ISAR2_EL1
    let zfr0 = if hwcap() & HWCAP_SVE != 0 {
        mrs!("S3_0_C0_C4_4") // ID_AA64ZFR0_EL1
    } else {
        0
    };
    [
        ("uscat", 1, 25, mmfr2, 32, 1, false), // FEAT_LSE2 (MMFR2.AT)
        ("rprfm", 2, 35, isar2, 48, 1, false),
        ("sve2p1", 2, 36, zfr0, 0, 2, true), // SVEver >= SVE2p1
        ("hbc", 2, 44, isar2, 20, 1, false), // ISAR2.BC
    ]
}

/// Each of those hwcaps is reported exactly when its ID field (as EL0 reads it) says so, and
/// /proc/cpuinfo names it exactly then.
fn hwcaps_follow_id_fields() -> TestResult {
    if hwcap() & HWCAP_CPUID == 0 {
        return skip("no HWCAP_CPUID: EL0 cannot read the ID registers");
    }
    let s = svelt_user::cpuid::cpuinfo()?;
    let feats = s
        .lines()
        .find(|l| l.starts_with("Features"))
        .and_then(|l| l.split_once(':'))
        .map_or("", |(_, r)| r);
    for (name, word, bit, reg, shift, min, sve) in field_caps() {
        let words = [hwcap(), hwcap2()];
        let reported = words[word as usize - 1] >> bit & 1 == 1;
        let want = field(reg, shift) >= min && (!sve || hwcap() & HWCAP_SVE != 0);
        println!("# {name}: field {} -> {want}", field(reg, shift));
        check_eq!(reported, want, "AT_HWCAP{word} bit {bit} ({name})");
        let named = feats.split_whitespace().any(|f| f == name);
        check_eq!(named, want, "\"{name}\" in /proc/cpuinfo");
    }
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("sve_hwcap_sve_and_cpuid", hwcaps),
        ("sve_id_aa64pfr0_sve_field", id_aa64pfr0_shows_sve),
        ("sve_id_aa64zfr0_matches_hwcap2", id_aa64zfr0_matches_hwcap2),
        ("sve_id_aa64pfr1_sme_matches", id_aa64pfr1_sme_matches),
        ("sve_midr_and_unallocated_id_regs", other_id_registers),
        ("sve_cpuinfo_features", cpuinfo_features),
        ("sve_non_id_sysreg_sigill", non_id_register_sigill),
        ("hwcaps_follow_id_fields", hwcaps_follow_id_fields),
    ])
}

entry!(main);
