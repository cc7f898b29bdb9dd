//! Linux's own arm64 selftests (tools/testing/selftests/arm64 from Debian's linux-source-7.3,
//! built static by tests/selftests/build.sh) packed as one ~20 MB gzip initramfs with a static
//! runner as /init (tests/selftests/runner.c), booted on Svelt and on Linux.
//!
//! What is asserted on Svelt is that the archive boots: no kernel panic, the archive unpacked
//! (the runner started and read its list), every program came to an end by itself (no time-out),
//! and the runner reached its end line. Individual results are printed, not compared: the
//! subtest-by-subtest comparison with Linux is kselftests.rs's and ptrace_selftests.rs's.
//!
//! Gated behind `SVELT_SELFTESTS=1`: the first run downloads a 160 MB package and builds for
//! a few minutes (cached in target/selftests/ afterwards).

use std::process::Command;
use std::time::{Duration, Instant};
use svelt_tests::{boot, build, parse_ktap, root, Config, Initrd, Run};

/// One boot at a time (each runs about a minute of selftests on both CPUs).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn enabled() -> bool {
    if std::env::var("SVELT_SELFTESTS").as_deref() == Ok("1") {
        return true;
    }
    eprintln!("SKIPPED: set SVELT_SELFTESTS=1 to build and boot Linux's arm64 selftests");
    false
}

/// Runs tests/selftests/build.sh (idempotent, cached) and returns the archive's path.
fn archive() -> std::path::PathBuf {
    static ARCHIVE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ARCHIVE
        .get_or_init(|| {
            let t0 = Instant::now();
            let o = Command::new(root().join("tests/selftests/build.sh"))
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::inherit())
                .output()
                .expect("run tests/selftests/build.sh");
            assert!(o.status.success(), "tests/selftests/build.sh failed");
            let out = String::from_utf8_lossy(&o.stdout);
            let path = std::path::PathBuf::from(out.lines().last().expect("archive path").trim());
            eprintln!(
                "{} ({} MiB) ready in {:.1} s",
                path.display(),
                std::fs::metadata(&path).unwrap().len() >> 20,
                t0.elapsed().as_secs_f64()
            );
            path
        })
        .clone()
}

/// The programs the runner was given (its list in the archive's staging directory).
fn listed() -> usize {
    let list =
        std::fs::read_to_string(root().join("target/selftests/selftests.stage/list")).unwrap();
    list.lines().filter(|l| l.starts_with("arm64/")).count()
}

fn config(linux: bool) -> Config {
    Config {
        initrd: Initrd::File(archive()),
        linux,
        // ~1 min of selftests under TCG; 60 s per program at most in the runner.
        timeout: Duration::from_secs(900),
        ..Config::default()
    }
}

/// Prints one line per program: its result and the totals its own KTAP printed.
fn report(run: &Run) {
    let k = parse_ktap(&run.output);
    // The top-level result lines, in order (parse_ktap drops the `# SKIP` of a program).
    let results = run
        .output
        .lines()
        .filter(|l| l.starts_with("ok ") || l.starts_with("not ok "));
    for (line, p) in results.zip(&k.programs) {
        let (_, directive) = line.split_once(" # ").unwrap_or((line, ""));
        let verdict = if line.starts_with("not ok") {
            "FAIL"
        } else if directive.starts_with("SKIP") {
            "skip"
        } else {
            "ok"
        };
        let name = p.name.split(" # ").next().unwrap_or("");
        let totals = p
            .output
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("# Totals: "))
            .unwrap_or("");
        let why = if verdict == "FAIL" { directive } else { "" };
        eprintln!("{verdict:4} {name:42} {why:22} {totals}");
    }
    for l in run.output.lines().filter(|l| {
        l.strip_prefix("# selftests: ")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    }) {
        eprintln!("{l}");
    }
}

fn check(cfg: &Config) -> Run {
    let t0 = Instant::now();
    let run = boot(cfg);
    eprintln!(
        "boot ({}) took {:.1} s, status {:?}",
        if cfg.linux { "Linux" } else { "Svelt" },
        t0.elapsed().as_secs_f64(),
        run.status
    );
    report(&run);
    let k = parse_ktap(&run.output);
    let ctx = || format!("config {cfg:?}\n--- output ---\n{}", run.output);
    assert_ne!(run.status, Some(101), "kernel panic; {}", ctx());
    assert!(
        run.status.is_some(),
        "QEMU killed at the time-out; {}",
        ctx()
    );
    let n = listed();
    assert!(
        run.output
            .lines()
            .any(|l| l.starts_with(&format!("# selftests: {n} programs, "))
                && l.ends_with(" s each at most")),
        "the archive did not unpack (no runner, or no list); {}",
        ctx()
    );
    assert_eq!(
        k.init_status,
        Some(0),
        "the runner did not reach its end; {}",
        ctx()
    );
    assert_eq!(k.plan, Some(n), "plan; {}", ctx());
    assert_eq!(k.programs.len(), n, "programs reported; {}", ctx());
    let hung: Vec<_> = k
        .programs
        .iter()
        .filter(|p| p.name.contains("# TIMEOUT") || p.name.contains("# not started"))
        .map(|p| p.name.clone())
        .collect();
    assert!(
        hung.is_empty(),
        "programs that did not end: {hung:?}; {}",
        ctx()
    );
    assert_eq!(run.status, Some(0), "run status; {}", ctx());
    run
}

#[test]
fn svelt_boots_linux_arm64_selftests() {
    if !enabled() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    check(&config(false));
}

/// The reference: the same archive on Debian's Linux (skipped only when it cannot be fetched).
#[test]
fn linux_boots_linux_arm64_selftests() {
    if !enabled() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = config(true);
    if let Err(why) = build(&cfg) {
        if why.contains("network") {
            eprintln!("SKIPPED: Debian's Linux could not be fetched:\n{why}");
            return;
        }
        panic!("set-up failed: {why}");
    }
    let run = check(&cfg);
    // On Linux no selftest fails outright in QEMU's -cpu max.
    let failed: Vec<_> = parse_ktap(&run.output)
        .programs
        .into_iter()
        .filter(|p| !p.ok)
        .map(|p| p.name)
        .collect();
    assert!(failed.is_empty(), "failed on Linux: {failed:?}");
}
