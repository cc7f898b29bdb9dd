//! Debian's own arm64 programs as the userland: `./qemu-run.sh --debian
//! busybox-static,bash,coreutils` unpacks trixie's packages (dynamically linked bash and
//! coreutils, glibc's ld.so, the static busybox) under the test programs, and
//! /bin/tests/debian_userland (user/c/debian_userland.c) runs as the first process: busybox sh
//! and bash (with `-c` and as a `#!` script) run one script with pipes, redirections, globbing,
//! subshells, substitution, background jobs and wait, trap and ulimit; coreutils list
//! /proc/self/, sort, hash a file and run dd. On Svelt at 1 and 2 CPUs and on Linux, every test
//! must pass (none may skip). Skipped, with the reason printed, when the packages or Linux
//! cannot be downloaded.

use std::time::Duration;
use svelt_tests::{boot, ready, Config, Initrd};

const PACKAGES: &str = "busybox-static,bash,coreutils";
const TESTS: usize = 7;

fn config(smp: u32, linux: bool) -> Config {
    Config {
        smp,
        linux,
        initrd: Initrd::Default,
        init: Some("/bin/tests/debian_userland".into()),
        debian: Some(PACKAGES.into()),
        timeout: Duration::from_secs(300),
        ..Config::default()
    }
}

fn check(cfg: Config) {
    if !ready(&cfg) {
        return;
    }
    let run = boot(&cfg);
    let ctx = || format!("config {:?}\n--- output ---\n{}", cfg.args(), run.output);
    let passed: Vec<&str> = run
        .output
        .lines()
        .filter(|l| l.starts_with("ok ") && !l.contains("# SKIP"))
        .collect();
    let failed: Vec<&str> = run
        .output
        .lines()
        .filter(|l| l.starts_with("not ok ") || l.contains("# SKIP"))
        .collect();
    assert!(
        failed.is_empty(),
        "failed or skipped: {failed:?}\n{}",
        ctx()
    );
    assert_eq!(passed.len(), TESTS, "passed: {passed:?}\n{}", ctx());
    let totals = format!("# Totals: pass:{TESTS} fail:0");
    assert!(run.output.contains(&totals), "no '{totals}'\n{}", ctx());
    assert_eq!(run.status, Some(0), "run status\n{}", ctx());
}

#[test]
fn svelt_1cpu() {
    check(config(1, false));
}

#[test]
fn svelt_2cpus() {
    check(config(2, false));
}

#[test]
fn linux_reference() {
    check(config(2, true));
}
