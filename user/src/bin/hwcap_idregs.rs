//! The hwcaps and /proc/cpuinfo's `Features` follow from the ID registers as EL0 reads them, by
//! `svelt_abi::isa::hwcap`'s table: with Svelt's offer on Svelt, and with Linux 7.3's on Linux, so the
//! reference run checks the table itself against Linux. Also: the auxiliary vector carries
//! AT_HWCAP3 but not AT_HWCAP4 (as arm64 Linux 7.3), and the EL0 view hides exactly what the
//! table's view hides. The values are printed (host-test fixtures come from these lines).
#![no_std]
#![no_main]

use svelt_abi::isa::cpu::IdReg;
use svelt_abi::isa::hwcap::{self, Hwcaps, Offer, HWCAPS, HWCAP_CPUID, HWCAP_EVTSTRM};
use svelt_abi::isa::idregs;
use svelt_abi::uapi::auxv::{AT_HWCAP3, AT_HWCAP4};
use svelt_user::cpuid;
use svelt_user::ktap::{skip, TestResult};
use svelt_user::*;

fn need_cpuid() -> TestResult {
    if cpuid::hwcaps().0[0] & HWCAP_CPUID == 0 {
        return skip("no HWCAP_CPUID: EL0 cannot read the ID registers");
    }
    Ok(())
}

/// The hwcaps this kernel should report for what EL0 sees. The event stream is a timer setting,
/// not an ID-register feature: it is taken from what the kernel says.
fn expected(offer: Offer) -> Hwcaps {
    let actual = cpuid::hwcaps();
    let offer = Offer {
        evtstrm: actual.0[0] & HWCAP_EVTSTRM != 0,
        ..offer
    };
    hwcap::hwcaps(&cpuid::el0_view(), offer)
}

fn auxv_words() -> TestResult {
    let a = rt::args();
    let h = cpuid::hwcaps();
    println!(
        "# kernel {}: AT_HWCAP {:#x} AT_HWCAP2 {:#x} AT_HWCAP3 {:#x}",
        if cpuid::on_svelt() { "Svelt" } else { "Linux" },
        h.0[0],
        h.0[1],
        h.0[2]
    );
    check!(a.getauxval(AT_HWCAP3 as usize).is_some(), "no AT_HWCAP3");
    check_eq!(a.getauxval(AT_HWCAP4 as usize), None, "AT_HWCAP4");
    Ok(())
}

fn hwcaps_follow_el0_idregs() -> TestResult {
    need_cpuid()?;
    let view = cpuid::el0_view();
    println!("# EL0 view: {view}");
    let want = expected(cpuid::kernel_offer());
    let got = cpuid::hwcaps();
    let mut bad = Vec::new();
    for c in HWCAPS.iter().filter(|c| want.has(c) != got.has(c)) {
        bad.push(format!(
            "{} ({}) {}",
            c.uapi,
            c.name,
            if got.has(c) { "reported" } else { "missing" }
        ));
    }
    check!(bad.is_empty(), "against the table: {}", bad.join(", "));
    check_eq!(got, want);
    Ok(())
}

/// Linux never shows a field the table keeps hidden: re-applying the table's view to what EL0
/// read changes nothing (the same fields, the same safe values).
fn el0_view_is_the_tables() -> TestResult {
    need_cpuid()?;
    let offer = cpuid::kernel_offer();
    let view = cpuid::el0_view();
    let again = idregs::user_view(&view, offer);
    for reg in IdReg::ALL {
        check_eq!(
            view.get(reg),
            again.get(reg),
            "{}: EL0 reads {:#x}, the table shows {:#x}",
            reg.name(),
            view.get(reg),
            again.get(reg)
        );
    }
    // A second read gives the same answer.
    check_eq!(cpuid::el0_view(), view);
    Ok(())
}

fn cpuinfo_features() -> TestResult {
    need_cpuid()?;
    let s = cpuid::cpuinfo()?;
    let want: Vec<&str> = cpuid::hwcaps().names().collect();
    let want = want.join(" ");
    println!("# Features: {want}");
    let mut lines = 0;
    for l in s.lines().filter(|l| l.starts_with("Features")) {
        lines += 1;
        let got = l.split_once(':').map_or("", |(_, r)| r).trim();
        check_eq!(got, want.as_str(), "cpuinfo Features line {}", lines);
    }
    check!(lines > 0, "no Features line in /proc/cpuinfo");
    Ok(())
}

fn main(_args: &rt::Args) -> i32 {
    ktap::run(&[
        ("hwcap_auxv_words", auxv_words),
        ("hwcaps_follow_el0_idregs", hwcaps_follow_el0_idregs),
        ("el0_view_is_the_tables", el0_view_is_the_tables),
        ("cpuinfo_features_match_hwcaps", cpuinfo_features),
    ])
}

entry!(main);
