//! The userland (user/: init and every test program) booted over a matrix of QEMU configurations
//! on Svelt, and on Debian's Linux (reference mode) with the same initramfs: every nested KTAP
//! test must pass on both. A test that fails on Linux is a wrong test.
//!
//! The host's QEMU (`$QEMU`, else `qemu-system-aarch64`: 10.0 in CI):
//! - Svelt over {EL1, EL2} x {1, 2 CPUs} at the SVE maximum VQ 16 (SME up to 256 bytes), plus VQ
//!   1, 3 and 4 (SME lengths kept within the SVE maximum), SME capped below the SVE maximum,
//!   FA64 off, and no SME;
//! - Linux at four of those.
//!
//! Entered at EL2, Svelt runs at EL2 with VHE; one configuration on each QEMU boots with
//! `svelt.el=1`, which keeps the kernel at EL1 under an EL2 that only reports faults.
//!
//! One configuration on each QEMU boots with `svelt.mops=off`: the kernel's copies then use
//! register loops, as on CPUs without FEAT_MOPS.
//!
//! Two host configurations run under the non-default FP policies that keep Linux's ABI (abi/src/
//! fppolicy.rs), each a full userland pass: `svelt.fp=eager` (reload after every switch) at VQ 3
//! with 1 CPU, and `svelt.sme_trap=eager` (SME enabled at exec) with SME capped at 64 bytes.
//! Their plain-policy counterparts stay covered by QEMU 11.1's VQ 3 and SME-capped entries.
//! `svelt.sve_syscall=keep` changes the ABI: tests/tests/fp_policy.rs boots it alone.
//!
//! QEMU 11.1 (`--qemu11`: -cpu max with SME2, ZT0 and GCS), fetched into target/qemu11/:
//! - Svelt and Linux at the SVE maximum, at VQ 3, with SME capped below it, FA64 off, and no SME;
//!   Svelt also at EL1 with 1 CPU and VQ 4.
//!
//! `SVELT_FULL_MATRIX=1` adds, on both QEMUs and both kernels, {EL1, EL2} x {1, 2 CPUs} x VQ {1,
//! 3, 4, 16} and, at each VQ, FA64 off, no SME and SME capped at half its default (about an hour
//! on two cores; see docs/testing.md).
//!
//! A configuration whose kernel or QEMU cannot be downloaded (no network) is skipped with the
//! reason printed.

use std::time::Duration;

use svelt_tests::{check_userland, ready, Config, Initrd, Qemu};

/// The default userland at entry level `el` with `smp` CPUs and SVE lengths up to `sve_max_vq`.
fn at(qemu: Qemu, el: u8, smp: u32, sve_max_vq: u32) -> Config {
    Config {
        qemu,
        el,
        smp,
        sve_max_vq,
        initrd: Initrd::Default,
        // The whole suite, possibly sharing the host with another QEMU.
        timeout: Duration::from_secs(600),
        ..Config::default()
    }
}

fn no_fa64(cfg: Config) -> Config {
    Config { fa64: false, ..cfg }
}

fn no_sme(cfg: Config) -> Config {
    Config { sme: None, ..cfg }
}

fn sme_max(cfg: Config, bytes: u32) -> Config {
    Config {
        sme: Some(Some(bytes)),
        ..cfg
    }
}

/// The kernel's copies through register loops although the CPU has CPY*/SET* (FEAT_MOPS),
/// so the user-access code of CPUs without them stays tested.
fn no_mops(mut cfg: Config) -> Config {
    cfg.append.push("svelt.mops=off".into());
    cfg
}

/// Extra kernel command-line words (FP policies).
fn with(mut cfg: Config, word: &str) -> Config {
    cfg.append.push(word.into());
    cfg
}

fn linux(cfg: Config) -> Config {
    Config { linux: true, ..cfg }
}

fn check(cfg: Config) {
    if ready(&cfg) {
        check_userland(&cfg);
    }
}

macro_rules! userland {
    ($($name:ident: $cfg:expr;)*) => {$(
        #[test]
        fn $name() {
            check($cfg);
        }
    )*};
}

use Qemu::{Host, V11};

userland! {
    svelt_el1_smp1: at(Host, 1, 1, 16);
    svelt_el1_smp2: at(Host, 1, 2, 16);
    svelt_el2_smp1: at(Host, 2, 1, 16);
    svelt_el2_smp2: at(Host, 2, 2, 16);
    svelt_el2_smp2_vq1_vmid_bits3: with(at(Host, 2, 2, 1), "svelt.vmid_bits=3");
    svelt_el1_smp1_vq1: at(Host, 1, 1, 1);
    svelt_el2_smp1_vq4: at(Host, 2, 1, 4);
    svelt_el1_smp2_vq4_no_mops: no_mops(at(Host, 1, 2, 4));
    svelt_el2_smp1_vq3_fp_eager: with(at(Host, 2, 1, 3), "svelt.fp=eager");
    svelt_el1_smp2_sme_max64_sme_trap_eager:
        with(sme_max(at(Host, 1, 2, 16), 64), "svelt.sme_trap=eager");
    svelt_el2_smp2_no_fa64: no_fa64(at(Host, 2, 2, 16));
    svelt_el2_smp2_el1_kernel: with(at(Host, 2, 2, 16), "svelt.el=1");
    svelt_el1_smp2_no_sme: no_sme(at(Host, 1, 2, 16));

    qemu11_svelt_el2_smp2: at(V11, 2, 2, 16);
    qemu11_svelt_el2_smp1_el1_kernel: with(at(V11, 2, 1, 4), "svelt.el=1");
    qemu11_svelt_el1_smp1_vq4_no_mops: no_mops(at(V11, 1, 1, 4));
    qemu11_svelt_el1_smp2_vq3: at(V11, 1, 2, 3);
    qemu11_svelt_el2_smp2_sme_max32: sme_max(at(V11, 2, 2, 16), 32);
    qemu11_svelt_el2_smp1_no_fa64: no_fa64(at(V11, 2, 1, 16));
    qemu11_svelt_el2_smp2_no_sme: no_sme(at(V11, 2, 2, 16));

    // Linux on QEMU 11.1 in the default run: SME2 with ZT0 at every length, and SME capped
    // below SVE. Its other configurations (EL1, no FA64, no SME, ...) run in
    // full_matrix_qemu11_linux (SVELT_FULL_MATRIX=1): each Linux run under QEMU 11.1 takes five
    // to eight minutes on two loaded cores, and the tests themselves are checked on Linux in
    // these two and in linux_reference's four.
    qemu11_linux_el2_smp2: linux(at(V11, 2, 2, 16));
    qemu11_linux_el2_smp2_sme_max32: linux(sme_max(at(V11, 2, 2, 16), 32));
}

/// Reference mode on the host's QEMU.
#[test]
fn linux_reference() {
    for (el, smp, sve_max_vq) in [(2, 2, 4), (1, 1, 4), (2, 2, 16), (1, 2, 1)] {
        check(linux(at(Host, el, smp, sve_max_vq)));
    }
}

/// The full matrix for one QEMU and kernel, when SVELT_FULL_MATRIX=1: every configuration runs,
/// and the test fails at the end naming each one that failed.
fn full_matrix(qemu: Qemu, on_linux: bool) {
    if std::env::var_os("SVELT_FULL_MATRIX").is_none_or(|v| v != "1") {
        eprintln!("SKIPPED: the full matrix runs with SVELT_FULL_MATRIX=1");
        return;
    }
    let mut configs = Vec::new();
    for sve_max_vq in [1, 3, 4, 16] {
        for el in [1, 2] {
            for smp in [1, 2] {
                configs.push(at(qemu, el, smp, sve_max_vq));
            }
        }
        let base = at(qemu, 2, 2, sve_max_vq);
        configs.push(no_fa64(base.clone()));
        configs.push(no_sme(base.clone()));
        // Half the default SME maximum (the largest power of two within the SVE maximum).
        let default_max = base.expected_sme().unwrap().into_iter().max().unwrap();
        if default_max > 16 {
            configs.push(sme_max(base, default_max / 2));
        }
    }
    if on_linux {
        configs = configs.into_iter().map(linux).collect();
    }
    let failed: Vec<String> = configs
        .into_iter()
        .filter(ready)
        .filter_map(|cfg| {
            let desc = cfg.args().join(" ");
            std::panic::catch_unwind(|| check_userland(&cfg))
                .err()
                .map(|_| desc)
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} configurations failed (their output is above):\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn full_matrix_svelt() {
    full_matrix(Host, false);
}

#[test]
fn full_matrix_linux() {
    full_matrix(Host, true);
}

#[test]
fn full_matrix_qemu11_svelt() {
    full_matrix(V11, false);
}

#[test]
fn full_matrix_qemu11_linux() {
    full_matrix(V11, true);
}
