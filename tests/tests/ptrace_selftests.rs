//! Linux's own arm64 ptrace and seccomp selftests (fp/sve-ptrace, za-ptrace, fp-ptrace,
//! abi/ptrace, abi/seccomp_ptrace_x0_bypass, abi/seccomp_ret_trace_x0_bypass; zt-ptrace is an
//! "extended" program upstream's list does not run, and needs SME2, which QEMU 10 lacks), and
//! the fp/abi/mte programs that once differed and now match (vec-syscfg, hwcap, check_prctl)
//! or that guard the same ground (syscall-abi, tpidr2, za-fork, sve-probe-vls), built
//! by tests/selftests/build.sh from Debian's linux-source-7.3, booted on Svelt and on Linux
//! 7.3.4 under the same QEMU flags. Every subtest must end the same way on both: the same
//! ones pass, the same ones skip, none fails.
//!
//! This is part of the ordinary `cargo test` (the first run on a machine downloads a 160 MB
//! package and builds three selftest directories, about two minutes; cached in target/selftests/
//! afterwards). It is skipped, with a message, only when the package cannot be fetched.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;
use svelt_tests::{boot, build, parse_ktap, root, Config, Initrd, Run};

const PROGRAMS: &str = "sve-ptrace za-ptrace fp-ptrace ptrace \
                        seccomp_ptrace_x0_bypass seccomp_ret_trace_x0_bypass \
                        vec-syscfg hwcap check_prctl syscall-abi tpidr2 za-fork sve-probe-vls";

/// Builds the archive with only the ptrace and seccomp programs; None when the source
/// package cannot be fetched.
fn archive() -> Option<std::path::PathBuf> {
    let o = Command::new(root().join("tests/selftests/build.sh"))
        .env("SELFTESTS_SUBTARGETS", "fp abi mte")
        .env("SELFTESTS_ONLY", PROGRAMS)
        .env("SELFTESTS_SKIP", "")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run tests/selftests/build.sh");
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        if err.contains("network") || err.contains("Could not resolve") || err.contains("fetch") {
            eprintln!("SKIPPED: the selftest sources could not be fetched:\n{err}");
            return None;
        }
        panic!("tests/selftests/build.sh failed:\n{err}");
    }
    let out = String::from_utf8_lossy(&o.stdout);
    Some(std::path::PathBuf::from(
        out.lines().last().expect("archive path").trim(),
    ))
}

/// program → subtest → "pass" / "skip" / "FAIL".
type Results = BTreeMap<String, BTreeMap<String, &'static str>>;

fn results(run: &Run) -> Results {
    let mut r = Results::new();
    for p in parse_ktap(&run.output).programs {
        let name = p.name.split(" # ").next().unwrap_or("").to_string();
        let subs = r.entry(name).or_default();
        for (ok, sub, skip) in p.subtests {
            let skipped = skip.is_some() || sub.contains("# SKIP");
            let v = match (ok, skipped) {
                (false, _) => "FAIL",
                (true, true) => "skip",
                (true, false) => "pass",
            };
            subs.insert(sub, v);
        }
    }
    r
}

fn run(initrd: &std::path::Path, linux: bool) -> Option<Run> {
    let cfg = Config {
        initrd: Initrd::File(initrd.to_path_buf()),
        linux,
        timeout: Duration::from_secs(600),
        ..Config::default()
    };
    if linux {
        if let Err(why) = build(&cfg) {
            if why.contains("network") {
                eprintln!("SKIPPED: Debian's Linux could not be fetched:\n{why}");
                return None;
            }
            panic!("set-up failed: {why}");
        }
    }
    let r = boot(&cfg);
    assert_ne!(r.status, Some(101), "kernel panic:\n{}", r.output);
    assert!(r.status.is_some(), "time-out:\n{}", r.output);
    Some(r)
}

#[test]
fn ptrace_and_seccomp_selftests_match_linux() {
    let Some(archive) = archive() else { return };
    let svelt = run(&archive, false).unwrap();
    let Some(linux) = run(&archive, true) else {
        return;
    };
    let (s, l) = (results(&svelt), results(&linux));
    let mut diffs = Vec::new();
    for (prog, lsubs) in &l {
        let ssubs = s.get(prog).cloned().unwrap_or_default();
        let count = |m: &BTreeMap<String, &str>, v: &str| m.values().filter(|x| **x == v).count();
        eprintln!(
            "{prog:32} Linux pass {:3} skip {:3} fail {} | Svelt pass {:3} skip {:3} fail {}",
            count(lsubs, "pass"),
            count(lsubs, "skip"),
            count(lsubs, "FAIL"),
            count(&ssubs, "pass"),
            count(&ssubs, "skip"),
            count(&ssubs, "FAIL"),
        );
        for (sub, lv) in lsubs {
            let sv = ssubs.get(sub).copied().unwrap_or("missing");
            if sv != *lv {
                diffs.push(format!("{prog}: {sub}: Linux {lv}, Svelt {sv}"));
            }
        }
        for sub in ssubs.keys().filter(|k| !lsubs.contains_key(*k)) {
            diffs.push(format!("{prog}: {sub}: only on Svelt"));
        }
    }
    assert_eq!(
        s.keys().collect::<Vec<_>>(),
        l.keys().collect::<Vec<_>>(),
        "programs"
    );
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}\n--- Svelt output ---\n{}",
        diffs.len(),
        diffs.join("\n"),
        svelt.output
    );
    let fails: Vec<_> = l
        .iter()
        .flat_map(|(p, m)| {
            m.iter()
                .filter(|(_, v)| **v == "FAIL")
                .map(move |(s, _)| format!("{p}: {s}"))
        })
        .collect();
    assert!(fails.is_empty(), "failed on Linux: {fails:?}");
}
