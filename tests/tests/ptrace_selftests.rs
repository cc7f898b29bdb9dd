//! Linux's own arm64 ptrace and seccomp selftests (fp/sve-ptrace, za-ptrace, fp-ptrace,
//! abi/ptrace, abi/seccomp_ptrace_x0_bypass, abi/seccomp_ret_trace_x0_bypass), and
//! the fp/abi/mte programs that once differed and now match (vec-syscfg, hwcap, check_prctl)
//! or that guard the same ground (syscall-abi, tpidr2, za-fork, sve-probe-vls), built
//! by tests/selftests/build.sh from Debian's linux-source-7.3, booted on Svelt and on Linux
//! 7.3.4 under the same QEMU flags (SVE VQ 16, two CPUs), compared by svelt_tests::kselftest.
//! Every program and subtest must end the same way on both: the same ones pass, the same ones
//! skip, none fails. kselftests.rs runs every program of fp/, signal/, abi/ and gcs/ (zt-ptrace
//! too) in other configurations.
//!
//! This is part of the ordinary `cargo test` (the first run on a machine downloads a 160 MB
//! package and builds three selftest directories, about two minutes; cached in target/selftests/
//! afterwards). It is skipped, with a message, only when the package cannot be fetched.

use std::time::Duration;
use svelt_tests::kselftest::{self, Comparison, Selection};
use svelt_tests::Config;

const SELECTION: Selection = Selection {
    // Its own archive: kselftests.rs packs a different selection.
    name: "ptrace",
    subtargets: "fp abi mte",
    only: "sve-ptrace za-ptrace fp-ptrace ptrace \
           seccomp_ptrace_x0_bypass seccomp_ret_trace_x0_bypass \
           vec-syscfg hwcap check_prctl syscall-abi tpidr2 za-fork sve-probe-vls",
    extra: "",
    long: "",
};

#[test]
fn ptrace_and_seccomp_selftests_match_linux() {
    let Some(archive) = kselftest::archive(&SELECTION) else {
        return;
    };
    let cfg = Config {
        timeout: Duration::from_secs(600),
        ..Config::default()
    };
    let Some(c) = Comparison::boot(&archive, &cfg) else {
        return;
    };
    eprintln!("{}", kselftest::table(&c.svelt, &c.linux));
    let explained: Vec<_> = c.differences.iter().map(|d| c.explain(d, 12)).collect();
    assert!(
        c.differences.is_empty(),
        "{} differences:\n{}",
        c.differences.len(),
        explained.join("\n")
    );
    let failures = c.linux_failures();
    assert!(failures.is_empty(), "failed on Linux: {failures:?}");
}
