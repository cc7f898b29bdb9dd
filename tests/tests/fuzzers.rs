//! The userland fuzzers against Linux: each of user/src/bin/fuzz_sigframe.rs, fuzz_regset.rs
//! and fuzz_exec.rs boots as the first process on Svelt and on Linux (QEMU 10 with 2 CPUs, and
//! QEMU 11.1, which adds SME2 and ZT0), with its fixed seed and default budget. Each prints one
//! `# hist PROGRAM OUTCOME COUNT` line per outcome class (a signal or an errno per case, say);
//! the two kernels must print the same lines, and the program must pass on both (its own checks:
//! every case ended, the bystander's registers are intact).
//!
//! A program that is not in the initramfs (one whose branch has not landed) is skipped with the
//! reason printed.

use std::collections::BTreeMap;
use std::time::Duration;

use svelt_tests::{boot, parse_ktap, ready, root, Config, Initrd, Qemu};

fn config(program: &str, qemu: Qemu, linux: bool) -> Config {
    Config {
        initrd: Initrd::Default,
        init: Some(format!("/bin/tests/{program}")),
        qemu,
        linux,
        timeout: Duration::from_secs(150),
        ..Config::default()
    }
}

/// The `# hist PROGRAM OUTCOME COUNT` lines of one run.
fn histogram(program: &str, output: &str) -> BTreeMap<String, u64> {
    let prefix = format!("# hist {program} ");
    output
        .lines()
        .filter_map(|l| {
            let (outcome, count) = l.trim_end().strip_prefix(&prefix)?.rsplit_once(' ')?;
            Some((outcome.to_string(), count.parse().ok()?))
        })
        .collect()
}

/// The per-case lines (`# cases PROGRAM ...`), where a program prints them: the first case
/// whose outcome differs, to start looking from.
fn first_differing_case(program: &str, svelt: &str, linux: &str) -> Option<String> {
    let prefix = format!("# cases {program} ");
    let cases = |out: &str| -> Vec<String> {
        out.lines()
            .filter_map(|l| l.trim_end().strip_prefix(&prefix).map(String::from))
            .collect()
    };
    for (s, l) in cases(svelt).iter().zip(cases(linux).iter()) {
        let (Some((base, s)), Some((_, l))) = (s.split_once(' '), l.split_once(' ')) else {
            continue;
        };
        if let Some(i) = s.chars().zip(l.chars()).position(|(a, b)| a != b) {
            let base: usize = base.parse().unwrap_or(0);
            return Some(format!(
                "case {} (Svelt {:?}, Linux {:?})",
                base + i,
                s.chars().nth(i).unwrap(),
                l.chars().nth(i).unwrap()
            ));
        }
    }
    None
}

/// Boots `program` on `kernel`'s configuration and returns its output, checking it passed.
fn run(cfg: &Config, program: &str, kernel: &str) -> String {
    let mut r = boot(cfg);
    // Once in many CI runs (2026-12-03), Linux's reference run of fuzz_exec printed its KTAP
    // plan and nothing more, its init then ending with status 0: the console lost the rest of
    // the reference's output. Such a run says nothing about Svelt; it is booted once more.
    if kernel == "Linux" && parse_ktap(&r.output).totals.is_none() {
        eprintln!(
            "{program} on Linux printed no KTAP totals; booting it once more. Its output:\n{}",
            r.output
        );
        r = boot(cfg);
    }
    let out = r.output;
    let k = parse_ktap(&out);
    assert!(
        k.failures().is_empty() && matches!(k.totals, Some((p, 0)) if p > 0),
        "{program} on {kernel} failed ({:?}):\n{out}",
        k.failures()
    );
    assert_eq!(r.status, Some(0), "{program} on {kernel}:\n{out}");
    out
}

fn compare(program: &str, qemu: Qemu) {
    let svelt = config(program, qemu, false);
    let linux = config(program, qemu, true);
    if !ready(&svelt) || !ready(&linux) {
        return;
    }
    let staged = root().join("target/user/initramfs/tests").join(program);
    if !staged.exists() {
        eprintln!(
            "SKIPPED {program} on {qemu:?}: /bin/tests/{program} is not in the initramfs \
             (no user/src/bin/{program}.rs in this tree)"
        );
        return;
    }
    let s_out = run(&svelt, program, "Svelt");
    let l_out = run(&linux, program, "Linux");
    let (s, l) = (histogram(program, &s_out), histogram(program, &l_out));
    assert!(
        !l.is_empty(),
        "{program} printed no # hist lines on Linux:\n{l_out}"
    );
    let mut diffs = Vec::new();
    for k in s.keys().chain(l.keys().filter(|k| !s.contains_key(*k))) {
        let (a, b) = (
            s.get(k).copied().unwrap_or(0),
            l.get(k).copied().unwrap_or(0),
        );
        if a != b {
            diffs.push(format!("  {k}: Svelt {a}, Linux {b}"));
        }
    }
    if !diffs.is_empty() {
        let first = first_differing_case(program, &s_out, &l_out)
            .map(|c| format!("\nfirst differing {c}"))
            .unwrap_or_default();
        panic!(
            "{program} on {qemu:?}: the outcome histograms differ:\n{}{first}",
            diffs.join("\n")
        );
    }
    eprintln!(
        "{program} on {qemu:?}: {} outcome classes, {} cases, the same on Svelt and Linux",
        s.len(),
        s.values().sum::<u64>()
    );
}

macro_rules! fuzzer {
    ($name:ident, $program:literal, $qemu:expr) => {
        #[test]
        fn $name() {
            compare($program, $qemu);
        }
    };
}

fuzzer!(sigframe, "fuzz_sigframe", Qemu::Host);
fuzzer!(regset, "fuzz_regset", Qemu::Host);
fuzzer!(exec, "fuzz_exec", Qemu::Host);
fuzzer!(sigframe_qemu11, "fuzz_sigframe", Qemu::V11);
fuzzer!(regset_qemu11, "fuzz_regset", Qemu::V11);
fuzzer!(exec_qemu11, "fuzz_exec", Qemu::V11);

#[test]
fn histogram_lines_parse() {
    let out = "x\n# hist fuzz_a sig:11 3\r\n# hist fuzz_a za:errno:22+get:errno:22 1\n# hist fuzz_b exit:0 9\n";
    let h = histogram("fuzz_a", &out.replace('\r', ""));
    assert_eq!(h.len(), 2);
    assert_eq!(h["sig:11"], 3);
    assert_eq!(h["za:errno:22+get:errno:22"], 1);
    let s = "# cases fuzz_a 0 SS0S\n# cases fuzz_a 4 0\n";
    let l = "# cases fuzz_a 0 SS0S\n# cases fuzz_a 4 S\n";
    assert_eq!(
        first_differing_case("fuzz_a", s, l).as_deref(),
        Some("case 4 (Svelt '0', Linux 'S')")
    );
}
