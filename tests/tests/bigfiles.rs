//! Big initramfs archives: the userland plus 512 MiB of files (plain newc, 2 GiB of RAM) on
//! Svelt and on Linux, and a gzip one of about 40 MB unpacked in the default 1 GiB (more than
//! the kernel heap's old fixed 32 MiB). `/bin/tests/bigfiles` runs as the first process, reads
//! every file back against the manifest and fills the root tmpfs to ENOSPC.

use std::time::{Duration, Instant};
use svelt_tests::{big_initramfs, boot, build, parse_ktap, BigSpec, Config, Initrd};

/// One big boot at a time (each wants gigabytes of guest RAM), and one archive being written.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn check(cfg: &Config) {
    let t0 = Instant::now();
    let run = boot(cfg);
    let k = parse_ktap(&run.output);
    let ctx = || format!("config {cfg:?}\n--- output ---\n{}", run.output);
    eprintln!("boot took {:.1} s", t0.elapsed().as_secs_f64());
    for line in run
        .output
        .lines()
        .filter(|l| l.contains("initramfs") || l.starts_with("# ") || l.contains("bigfiles"))
    {
        eprintln!("{line}");
    }
    // The program's own KTAP is at the top level (it is the init).
    assert!(
        !run.output.lines().any(|l| l.starts_with("not ok")),
        "failures; {}",
        ctx()
    );
    let oks = run.output.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(oks, 3, "bigfiles' three tests; {}", ctx());
    assert!(
        !run.output.contains("# SKIP"),
        "the manifest was not found; {}",
        ctx()
    );
    assert_eq!(k.totals.map(|t| t.1), Some(0), "totals; {}", ctx());
    assert_eq!(run.status, Some(0), "run status; {}", ctx());
}

fn config(spec: &BigSpec, mem: Option<&str>, linux: bool) -> Option<Config> {
    let cfg = Config {
        initrd: Initrd::Default,
        linux,
        ..Config::default()
    };
    if let Err(why) = build(&cfg) {
        if linux && why.contains("network") {
            eprintln!("SKIPPED: Debian's Linux could not be fetched:\n{why}");
            return None;
        }
        panic!("set-up failed: {why}");
    }
    let t0 = Instant::now();
    let path = big_initramfs(spec);
    eprintln!(
        "{} ({} MiB) ready in {:.1} s",
        path.display(),
        std::fs::metadata(&path).unwrap().len() >> 20,
        t0.elapsed().as_secs_f64()
    );
    Some(Config {
        initrd: Initrd::File(path),
        init: Some("/bin/tests/bigfiles".into()),
        mem: mem.map(String::from),
        timeout: Duration::from_secs(300),
        ..cfg
    })
}

fn big() -> BigSpec {
    BigSpec {
        files: 64,
        size: 8 << 20,
        text: false,
        gzip: false,
    }
}

fn gzip_40mb() -> BigSpec {
    BigSpec {
        files: 9,
        size: 4 << 20,
        text: true,
        gzip: true,
    }
}

#[test]
fn svelt_512mib_plain() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    check(&config(&big(), Some("2G"), false).unwrap());
}

/// Linux holds the archive and the unpacked files at once too.
#[test]
fn linux_512mib_plain() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cfg) = config(&big(), Some("2G"), true) {
        check(&cfg);
    }
}

#[test]
fn svelt_40mb_gzip_in_1g() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    check(&config(&gzip_40mb(), None, false).unwrap());
}

#[test]
fn linux_40mb_gzip_in_1g() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cfg) = config(&gzip_40mb(), None, true) {
        check(&cfg);
    }
}

/// A gzip initramfs cut short inside its second member: the error is logged, the userland from
/// the first member stays and runs (bigfiles skips, its manifest being lost), no panic.
#[test]
fn svelt_truncated_gzip_keeps_what_was_unpacked() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut cfg = config(&gzip_40mb(), None, false).unwrap();
    let Initrd::File(full) = &cfg.initrd else {
        unreachable!()
    };
    let data = std::fs::read(full).unwrap();
    let cut = full.with_extension("truncated");
    std::fs::write(&cut, &data[..data.len() * 3 / 5]).unwrap();
    cfg.initrd = Initrd::File(cut.clone());
    let run = boot(&cfg);
    let _ = std::fs::remove_file(&cut);
    let ctx = || format!("--- output ---\n{}", run.output);
    assert!(
        run.output.contains("initramfs: gzip at ") && run.output.contains("truncated deflate"),
        "the error is logged; {}",
        ctx()
    );
    assert!(run.output.contains("# SKIP no manifest"), "{}", ctx());
    assert!(!run.output.contains("not ok"), "{}", ctx());
    assert_eq!(run.status, Some(0), "{}", ctx());
}
