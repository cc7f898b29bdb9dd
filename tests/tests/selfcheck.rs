//! The one-file self-checking Image (`./qemu-run.sh --build-selfcheck`): the kernel with the test
//! userland built in, booted with nothing but `qemu-system-aarch64 -M virt -cpu max -nographic
//! -kernel IMAGE` (no initrd, no command line, no semihosting: EL1, one CPU, QEMU's default
//! 128 MiB). It must run the whole suite, print the KTAP report and `svelt-selfcheck: N passed,
//! F failed, S skipped` with the report's own counts and F = 0, and power off through PSCI (QEMU
//! ends by itself). And `--embed FILE` builds a user's own archive in instead: its /init runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use svelt_tests::{build, parse_ktap, root, run_command, Config, Console, Initrd, KtapRun, Run};

/// Both tests write target/svelt-selfcheck.img: one at a time.
static IMAGE: Mutex<()> = Mutex::new(());

/// Builds the self-check image (with `embed` built in instead of the test userland, if given)
/// and copies it to `out`.
fn build_selfcheck(embed: Option<&Path>, out: &Path) {
    // The userland once per test process (shared with the other tests' builds).
    build(&Config {
        initrd: Initrd::Default,
        ..Config::default()
    })
    .expect("userland build");
    let _g = IMAGE.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new(root().join("qemu-run.sh"));
    cmd.args(["--build-selfcheck", "--no-build"]);
    if let Some(f) = embed {
        cmd.arg("--embed").arg(f);
    }
    let o = cmd.stdin(Stdio::null()).output().expect("run qemu-run.sh");
    assert!(
        o.status.success(),
        "--build-selfcheck failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::copy(root().join("target/svelt-selfcheck.img"), out).expect("copy the image");
}

/// QEMU with the plainest command line that boots a Linux arm64 Image, in QEMU's default 128 MiB
/// of RAM, a small board's (`-nic none`: without it QEMU wants the default NIC's boot ROM,
/// which a host without ipxe-qemu lacks).
fn plain_boot(image: &Path, timeout: Duration) -> Run {
    let qemu = std::env::var("QEMU").unwrap_or_else(|_| "qemu-system-aarch64".into());
    run_command(
        Command::new(qemu)
            .args([
                "-M",
                "virt",
                "-cpu",
                "max",
                "-nographic",
                "-nic",
                "none",
                "-kernel",
            ])
            .arg(image),
        timeout,
    )
}

/// (passed, failed, skipped) test cases of the init's report, counted from the host's own
/// parse: each program's nested results, a program without nested results by its own result,
/// and one more failure for a program that failed with no nested failure.
fn cases(k: &KtapRun) -> (u32, u32, u32) {
    let (mut p, mut f, mut s) = (0, 0, 0);
    for prog in &k.programs {
        for (ok, _, skip) in &prog.subtests {
            match (ok, skip) {
                (true, None) => p += 1,
                (true, Some(_)) => s += 1,
                (false, _) => f += 1,
            }
        }
        let nested_failed = prog.subtests.iter().any(|t| !t.0);
        if prog.subtests.is_empty() {
            if prog.ok {
                p += 1
            } else {
                f += 1
            }
        } else if !prog.ok && !nested_failed {
            f += 1;
        }
    }
    (p, f, s)
}

/// `svelt-selfcheck: N passed, F failed, S skipped`.
fn parse_summary(line: &str) -> Option<(u32, u32, u32)> {
    let rest = line.strip_prefix("svelt-selfcheck: ")?;
    let mut n = rest.split(", ").map(|w| {
        let (num, word) = w.split_once(' ')?;
        Some((num.parse::<u32>().ok()?, word))
    });
    match (n.next()??, n.next()??, n.next()??, n.next()) {
        ((p, "passed"), (f, "failed"), (s, "skipped"), None) => Some((p, f, s)),
        _ => None,
    }
}

#[test]
fn summary_lines() {
    assert_eq!(
        parse_summary("svelt-selfcheck: 310 passed, 0 failed, 12 skipped"),
        Some((310, 0, 12))
    );
    assert_eq!(parse_summary("svelt-selfcheck: 1 passed, 0 failed"), None);
    assert_eq!(
        parse_summary("svelt-selfcheck: x passed, 0 failed, 0 skipped"),
        None
    );
}

#[test]
fn selfcheck_image_passes_without_initrd() {
    let image = root().join("target/selfcheck/test-selfcheck.img");
    build_selfcheck(None, &image);
    let run = plain_boot(&image, Duration::from_secs(900));
    let ctx = || format!("--- output ---\n{}", run.output);
    // QEMU ended by itself: PSCI SYSTEM_OFF (not the timeout, not a semihosting exit).
    assert_eq!(run.status, Some(0), "QEMU's status; {}", ctx());
    assert!(
        !run.output.contains("initrd region") && !run.output.contains("no initramfs"),
        "{}",
        ctx()
    );
    check_report_and_summary(&run);
    // The summary comes after the report, and the run ends on the kernel's last word.
    let at = |s: &str| {
        run.output
            .find(s)
            .unwrap_or_else(|| panic!("no {s:?}; {}", ctx()))
    };
    assert!(at("# Totals:") < at("svelt-selfcheck:"), "{}", ctx());
    assert_eq!(
        run.output.lines().rfind(|l| l.starts_with("svelt: ")),
        Some("svelt: exit status 0"),
        "{}",
        ctx()
    );
}

/// The run's KTAP report has no failure and the init's status 0, and exactly one summary line
/// whose counts are the report's, with F = 0 and more than 100 cases passed.
fn check_report_and_summary(run: &Run) {
    let ctx = || format!("--- output ---\n{}", run.output);
    let k = parse_ktap(&run.output);
    assert!(
        k.failures().is_empty(),
        "failed: {:?}; {}",
        k.failures(),
        ctx()
    );
    assert!(
        k.programs.len() > 5 && k.plan == Some(k.programs.len()),
        "{}",
        ctx()
    );
    assert_eq!(k.init_status, Some(0), "{}", ctx());
    let summaries: Vec<_> = run
        .output
        .lines()
        .filter(|l| l.starts_with("svelt-selfcheck:"))
        .collect();
    assert_eq!(summaries.len(), 1, "one summary line; {}", ctx());
    let got = parse_summary(summaries[0].trim_end())
        .unwrap_or_else(|| panic!("bad summary {:?}; {}", summaries[0], ctx()));
    assert_eq!(
        got,
        cases(&k),
        "the summary's counts against the report; {}",
        ctx()
    );
    assert_eq!(got.1, 0, "{}", ctx());
    assert!(got.0 > 100, "too few cases passed; {}", ctx());
}

/// The same Image on a board that is not `virt` and has no PSCI (QEMU's AST2700 EVB with our
/// device tree, tests/data/ast2700-evb.dts; console a 16550, one Cortex-A35 without SVE or
/// SME): the suite passes there too, the summary line comes, and the kernel halts saying so,
/// with the report on the console (QEMU does not end: the test stops it).
#[test]
fn selfcheck_image_halts_on_a_board_without_psci() {
    if !svelt_tests::dtc_or_skip() {
        return;
    }
    let dir = root().join("target/selfcheck");
    std::fs::create_dir_all(&dir).unwrap();
    let dtb = dir.join("ast2700-evb.dtb");
    let o = Command::new("dtc")
        .args(["-q", "-I", "dts", "-O", "dtb", "-o"])
        .arg(&dtb)
        .arg(root().join("tests/data/ast2700-evb.dts"))
        .output()
        .expect("run dtc");
    assert!(
        o.status.success(),
        "dtc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let image = dir.join("board-selfcheck.img");
    build_selfcheck(None, &image);
    let qemu = std::env::var("QEMU").unwrap_or_else(|_| "qemu-system-aarch64".into());
    let mut c = Console::spawn(
        Command::new(qemu)
            .args([
                "-M",
                "ast2700a1-evb,bmc-console=uart4",
                "-m",
                "1G",
                "-nographic",
                "-nodefaults",
                "-serial",
                "stdio",
                "-monitor",
                "none",
                "-dtb",
            ])
            .arg(&dtb)
            .arg("-kernel")
            .arg(&image),
    );
    c.expect(
        "svelt: halted (nothing to power off through)",
        Duration::from_secs(600),
    );
    let run = c.finish(Duration::from_millis(500));
    let ctx = || format!("--- output ---\n{}", run.output);
    assert!(
        run.output.contains("svelt: console 16550 at 0x12c1a000"),
        "{}",
        ctx()
    );
    check_report_and_summary(&run);
    // The halt comes after the run's end, as its last word.
    let tail: Vec<&str> = run.output.lines().rev().take(2).collect();
    assert_eq!(
        tail,
        [
            "svelt: halted (nothing to power off through)",
            "svelt: exit status 0"
        ],
        "{}",
        ctx()
    );
}

/// The C source of a user's own /init: prints a file of its archive and exits with status 3.
const USER_INIT: &str = r#"
#include <stdio.h>
int main(void) {
    char line[128];
    FILE *f = fopen("/etc/greeting", "r");
    if (!f || !fgets(line, sizeof line, f)) { printf("user-init: no /etc/greeting\n"); return 1; }
    printf("user-init: pid %d says %s", (int)getpid(), line);
    return 3;
}
"#;

#[test]
fn embedded_user_archive_runs_its_init() {
    let dir = root().join("target/selfcheck/user-archive");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("init.c");
    std::fs::write(&src, format!("#include <unistd.h>\n{USER_INIT}")).unwrap();
    let init = dir.join("init");
    let o = Command::new("aarch64-linux-gnu-gcc")
        .args(["-static", "-O2", "-o"])
        .arg(&init)
        .arg(&src)
        .output()
        .expect("aarch64-linux-gnu-gcc (the userland build needs it too)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let greeting = dir.join("greeting");
    std::fs::write(&greeting, "hello from an embedded archive\n").unwrap();
    let archive: PathBuf = dir.join("user.cpio");
    let o = Command::new(env!("CARGO_BIN_EXE_mkinitramfs"))
        .arg("--out")
        .arg(&archive)
        .arg("--init")
        .arg(&init)
        .arg("--add")
        .arg(format!("etc/greeting={}", greeting.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let image = dir.join("user-selfcheck.img");
    build_selfcheck(Some(&archive), &image);
    let run = plain_boot(&image, Duration::from_secs(120));
    let ctx = || format!("--- output ---\n{}", run.output);
    assert_eq!(run.status, Some(0), "QEMU's status (PSCI off); {}", ctx());
    assert!(
        run.output
            .contains("user-init: pid 1 says hello from an embedded archive\n"),
        "{}",
        ctx()
    );
    assert!(run.output.contains("svelt: exit status 3\n"), "{}", ctx());
    assert!(
        !run.output.contains("svelt-selfcheck:") && !run.output.contains("TAP version"),
        "only the user's /init ran; {}",
        ctx()
    );
}
