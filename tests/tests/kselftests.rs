//! Every program of Linux's arm64 fp/, signal/, abi/ and gcs/ selftests (upstream's run list,
//! plus fp/zt-ptrace, which upstream builds but does not list), built by tests/selftests/build.sh
//! from Debian's linux-source-7.3 and booted on Svelt and on Linux 7.3.4 under the same QEMU
//! flags: each program, and each subtest its KTAP names, must end the same way on both (pass,
//! skip, xfail, fail). A difference known today is listed in KNOWN_DIFFERENT with its reason;
//! the test checks that it is still there, so fixing it means taking it off the list.
//!
//! Part of the ordinary `cargo test`: three configurations (SVE VQ 4 with SME; the same CPU
//! without SME; QEMU 11.1's with SME2, ZT0 and GCS), about five minutes on two cores (each boot
//! 20-40 s of selftests).
//! `SVELT_KSELFTESTS=all` adds three more (SVE VQ 16, one CPU at EL1 with VQ 1, four CPUs; about
//! four minutes). The archive is cached in target/selftests/ (the first
//! run on a machine downloads a 160 MB package and builds for about a minute); the test is
//! skipped, with a message, only when that package or Debian's Linux cannot be fetched.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use svelt_tests::kselftest::{self, Comparison, Known, Selection, RUN_TIMEOUT};
use svelt_tests::{Config, Qemu};

const SELECTION: Selection = Selection {
    name: "kselftests",
    subtargets: "fp signal abi gcs",
    only: "",
    extra: "zt-ptrace",
    long: "",
};

/// Every difference the configurations below show today, each with its reason. There is none:
/// every program and subtest ends on Svelt as on Linux, on QEMU 10.0 and 11.1 (GCS and FPMR
/// included). An entry names the configuration
/// (`Case::name`), the program, the subtests (exact names, or a prefix and `*`; none: the
/// program's own outcome) and how each kernel ends them.
const KNOWN_DIFFERENT: &[Known] = &[];
/// One QEMU configuration.
struct Case {
    name: &'static str,
    config: fn() -> Config,
}

fn vq4() -> Config {
    Config {
        sve_max_vq: 4,
        timeout: RUN_TIMEOUT,
        ..Config::default()
    }
}

fn qemu11_vq4() -> Config {
    Config {
        qemu: Qemu::V11,
        ..vq4()
    }
}

fn vq4_no_sme() -> Config {
    Config { sme: None, ..vq4() }
}

fn vq16() -> Config {
    Config {
        timeout: RUN_TIMEOUT,
        ..Config::default()
    }
}

fn el1_smp1_vq1() -> Config {
    Config {
        el: 1,
        smp: 1,
        sve_max_vq: 1,
        ..vq4()
    }
}

fn smp4() -> Config {
    Config { smp: 4, ..vq4() }
}

/// One boot at a time: each keeps both host CPUs busy for a minute or two, and fp-stress's
/// timing is not to be squeezed.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn check(case: &Case) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    static ARCHIVE: OnceLock<Option<PathBuf>> = OnceLock::new();
    let Some(archive) = ARCHIVE.get_or_init(|| kselftest::archive(&SELECTION)) else {
        return;
    };
    let Some(c) = Comparison::boot(archive, &(case.config)()) else {
        return;
    };
    eprintln!(
        "{}: {} programs\n{}",
        case.name,
        c.linux.len(),
        kselftest::table(&c.svelt, &c.linux)
    );

    let sorted = kselftest::sort_out(case.name, &c.differences, KNOWN_DIFFERENT);
    for d in &sorted.known {
        eprintln!("known difference (KNOWN_DIFFERENT): {d}");
    }
    // The first ones with what the programs printed, the rest by name.
    let explained: Vec<_> = sorted
        .unexpected
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if i < 30 {
                c.explain(d, 12)
            } else {
                d.to_string()
            }
        })
        .collect();
    assert!(
        sorted.unexpected.is_empty(),
        "{}: {} differences from Linux:\n{}",
        case.name,
        sorted.unexpected.len(),
        explained.join("\n")
    );
    assert!(
        sorted.gone.is_empty(),
        "{}: these KNOWN_DIFFERENT entries no longer differ; take them off the list:\n{}",
        case.name,
        sorted.gone.join("\n")
    );
    let failures = c.linux_failures();
    assert!(
        failures.is_empty(),
        "{}: failed on Linux (the reference must be clean): {failures:?}",
        case.name
    );
}

fn all_configurations() -> bool {
    if std::env::var("SVELT_KSELFTESTS").as_deref() == Ok("all") {
        return true;
    }
    eprintln!("SKIPPED: set SVELT_KSELFTESTS=all for this configuration");
    false
}

#[test]
fn fp_signal_abi_gcs_selftests_match_linux() {
    check(&Case {
        name: "vq4",
        config: vq4,
    });
}

/// QEMU 11.1's `-cpu max`: SME2, ZT0, GCS, FPMR, FP8.
#[test]
fn fp_signal_abi_gcs_selftests_match_linux_qemu11() {
    check(&Case {
        name: "qemu11-vq4",
        config: qemu11_vq4,
    });
}

#[test]
fn fp_signal_abi_gcs_selftests_match_linux_without_sme() {
    check(&Case {
        name: "vq4-no-sme",
        config: vq4_no_sme,
    });
}

#[test]
fn fp_signal_abi_gcs_selftests_match_linux_vq16() {
    if all_configurations() {
        check(&Case {
            name: "vq16",
            config: vq16,
        });
    }
}

#[test]
fn fp_signal_abi_gcs_selftests_match_linux_el1_one_cpu_vq1() {
    if all_configurations() {
        check(&Case {
            name: "el1-smp1-vq1",
            config: el1_smp1_vq1,
        });
    }
}

#[test]
fn fp_signal_abi_gcs_selftests_match_linux_four_cpus() {
    if all_configurations() {
        check(&Case {
            name: "smp4",
            config: smp4,
        });
    }
}
