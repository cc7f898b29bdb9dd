//! Svelt's FP policies from the kernel command line (`svelt.fp`, `svelt.sve_syscall`,
//! `svelt.sme_trap`; abi/src/fp/fppolicy.rs): short targeted boots.
//!
//! - All three non-default policies at once, /bin/tests/fp_policy as the first process: the boot
//!   log names them (`abi=NON-LINUX` for `keep`), and the program sees each one's effect (SVE
//!   registers surviving a syscall, no SME access trap since boot, a reload after every switch).
//!   `keep` is not Linux's ABI, so the full userland does not run under it; the two policies
//!   that keep the ABI each run the full userland in tests/tests/userland.rs.
//! - Unknown values: a warning each, and the default stays.

use std::time::Duration;

use svelt_abi::fp::fppolicy::{Policy, Restore, SmeAccess, SveSyscall};
use svelt_tests::{boot, parse_report, ready, Config, Initrd};

#[test]
fn non_default_policies_are_reported_and_observed() {
    let cfg = Config {
        initrd: Initrd::Default,
        init: Some("/bin/tests/fp_policy".into()),
        append: vec![
            "svelt.fp=eager".into(),
            "svelt.sve_syscall=keep".into(),
            "svelt.sme_trap=eager".into(),
        ],
        timeout: Duration::from_secs(180),
        ..Config::default()
    };
    if !ready(&cfg) {
        return;
    }
    let run = boot(&cfg);
    let out = &run.output;
    let want = Policy {
        fp: Restore::Eager,
        sve_syscall: SveSyscall::Keep,
        sme_trap: SmeAccess::Eager,
    };
    assert_eq!(parse_report(out).fp_policy, Some(want), "{out}");
    assert!(
        out.contains("svelt: fp policy fp=eager sve_syscall=keep sme_trap=eager abi=NON-LINUX"),
        "{out}"
    );
    assert!(!out.contains("not ok"), "a test failed:\n{out}");
    assert!(
        out.contains("# Totals: pass:5 fail:0 xfail:0 xpass:0 skip:0 error:0"),
        "{out}"
    );
    for line in [
        "# sme_trap=eager: no SME access trap since boot",
        "# policy fp=eager sve_syscall=keep sme_trap=eager abi=NON-LINUX",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
    assert!(out.contains("# fp=eager: 20 sleeps: "), "{out}");
    assert!(
        out.lines().any(
            |l| l.starts_with("# sve_syscall=keep (NOT Linux): Z, P and FFR at VL ")
                && l.ends_with(" survived getpid")
        ),
        "{out}"
    );
    assert_eq!(run.status, Some(0), "{out}");
}

#[test]
fn unknown_values_warn_and_keep_the_default() {
    let cfg = Config {
        append: vec![
            "svelt.fp=fast".into(),
            "svelt.sve_syscall".into(),
            "svelt.sme_trap=eager".into(),
        ],
        ..Config::default()
    };
    if !ready(&cfg) {
        return;
    }
    let run = boot(&cfg);
    let out = &run.output;
    assert!(
        out.contains("svelt.fp=\"fast\": unknown value, the default stays"),
        "{out}"
    );
    assert!(
        out.contains("svelt.sve_syscall=\"\": unknown value, the default stays"),
        "{out}"
    );
    assert!(
        out.contains("svelt: fp policy fp=lazy sve_syscall=discard sme_trap=eager abi=linux"),
        "{out}"
    );
    assert_eq!(run.status, Some(0), "{out}");
}
