//! Host harness: boots Svelt through `./qemu-run.sh` in a given configuration and parses what it
//! reports. The expectations (entry EL, CPU count, vector-length sets) are computed here from the
//! QEMU flags, independently of the kernel's own decoding.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub mod bench;
pub mod kselftest;
pub mod nested;

/// Which initramfs a boot gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Initrd {
    /// `--no-initrd`: the kernel only reports its boot.
    None,
    /// The userland built from user/ (init + every test program).
    Default,
    /// `--initrd FILE`.
    File(PathBuf),
}

/// Which QEMU boots a configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Qemu {
    /// qemu-run.sh's default: `$QEMU`, else `qemu-system-aarch64` on PATH.
    #[default]
    Host,
    /// `--qemu11`: QEMU 11.1 from Debian trixie-backports (SME2, ZT0, GCS), fetched into
    /// target/qemu11/ by tests/qemu11.sh when missing.
    V11,
}

/// One QEMU configuration, in qemu-run.sh's terms.
#[derive(Clone, Debug)]
pub struct Config {
    pub el: u8,
    pub smp: u32,
    pub sve_max_vq: u32,
    /// `None`: `--no-sme`; `Some(None)`: SME with qemu-run.sh's default maximum.
    pub sme: Option<Option<u32>>,
    /// FEAT_SME_FA64 (with SME); `false`: `--no-fa64`.
    pub fa64: bool,
    pub gic: u8,
    pub append: Vec<String>,
    pub timeout: Duration,
    pub initrd: Initrd,
    /// `--init PATH`.
    pub init: Option<String>,
    /// `--linux`: reference mode, Debian's Linux instead of Svelt.
    pub linux: bool,
    /// `--mem SIZE` (QEMU -m syntax); `None`: qemu-run.sh's default.
    pub mem: Option<String>,
    /// `--core-dir DIR`: Svelt also writes its core files there (semihosting).
    pub core_dir: Option<PathBuf>,
    pub qemu: Qemu,
    /// `--debian PKGS`: the default userland on top of these Debian packages.
    pub debian: Option<String>,
    /// `--firmware NAME`: boot through firmware (`edk2`, `edk2-acpi`, `uboot`) instead of `-kernel`.
    pub firmware: Option<&'static str>,
    /// `--board NAME`: a QEMU board other than virt (`ast2700`, `raspi4b`), which fixes its own
    /// CPUs.
    pub board: Option<&'static str>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            el: 2,
            smp: 2,
            sve_max_vq: 16,
            sme: Some(None),
            fa64: true,
            gic: 3,
            append: vec![],
            timeout: Duration::from_secs(120),
            initrd: Initrd::None,
            init: None,
            linux: false,
            mem: None,
            core_dir: None,
            qemu: Qemu::Host,
            debian: None,
            firmware: None,
            board: None,
        }
    }
}

impl Config {
    /// The FP policy Svelt runs under with this configuration's extra command-line words.
    pub fn fp_policy(&self) -> svelt_abi::fp::fppolicy::Policy {
        svelt_abi::boot::cmdline::Cmdline::parse(&self.append.join(" ")).fp_policy
    }

    /// Where the kernel runs: entered at EL2 (QEMU's -cpu max has FEAT_VHE) it stays there with
    /// VHE unless the command line says `svelt.el=1`.
    pub fn expected_kernel_el(&self) -> (u8, bool) {
        let el1 = svelt_abi::boot::cmdline::Cmdline::parse(&self.append.join(" ")).el == Some(1);
        if self.el == 2 && !el1 {
            (2, true)
        } else {
            (1, false)
        }
    }

    /// SVE vector lengths QEMU implements for `sve-max-vq=N`: every multiple of 16 up to 16·N.
    pub fn expected_sve(&self) -> Vec<u32> {
        (1..=self.sve_max_vq).map(|q| q * 16).collect()
    }

    /// SME lengths: the powers of two from 16 up to the maximum qemu-run.sh enables.
    pub fn expected_sme(&self) -> Option<Vec<u32>> {
        let max = self.sme?.unwrap_or_else(|| {
            // qemu-run.sh's default: the largest power of two within the SVE maximum.
            let mut m = 16;
            while m * 2 <= self.sve_max_vq * 16 && m * 2 <= 256 {
                m *= 2;
            }
            m
        });
        Some(
            [16, 32, 64, 128, 256]
                .into_iter()
                .filter(|&v| v <= max)
                .collect(),
        )
    }

    /// qemu-run.sh's arguments for this configuration (also a short way to name it).
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            "--no-build".into(),
            format!("--el{}", self.el),
            "--smp".into(),
            self.smp.to_string(),
            "--sve-max-vq".into(),
            self.sve_max_vq.to_string(),
            "--gic".into(),
            self.gic.to_string(),
        ];
        match self.sme {
            None => a.push("--no-sme".into()),
            Some(Some(max)) => a.extend(["--sme-max-vl".into(), max.to_string()]),
            Some(None) => {}
        }
        if !self.fa64 {
            a.push("--no-fa64".into());
        }
        if self.qemu == Qemu::V11 {
            a.push("--qemu11".into());
        }
        for w in &self.append {
            a.extend(["--append".into(), w.clone()]);
        }
        match &self.initrd {
            Initrd::None => a.push("--no-initrd".into()),
            Initrd::Default => {}
            Initrd::File(f) => a.extend(["--initrd".into(), f.display().to_string()]),
        }
        if let Some(init) = &self.init {
            a.extend(["--init".into(), init.clone()]);
        }
        if self.linux {
            a.push("--linux".into());
        }
        if let Some(m) = &self.mem {
            a.extend(["--mem".into(), m.clone()]);
        }
        if let Some(d) = &self.core_dir {
            a.extend(["--core-dir".into(), d.display().to_string()]);
        }
        if let Some(p) = &self.debian {
            a.extend(["--debian".into(), p.clone()]);
        }
        if let Some(f) = self.firmware {
            a.extend(["--firmware".into(), f.into()]);
        }
        if let Some(b) = self.board {
            a.extend(["--board".into(), b.into()]);
        }
        a
    }
}

/// The outcome of one boot.
#[derive(Debug)]
pub struct Run {
    /// QEMU's exit status (the run's status); `None` if it was killed at the timeout.
    pub status: Option<i32>,
    pub output: String,
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Whether `dtc` (Debian's device-tree-compiler, which .ci/run and qemu-run.sh install when
/// they can) is there to compile the boards' device trees, tests/data/*.dts; without it the
/// board tests say why and pass.
pub fn dtc_or_skip() -> bool {
    let found = Command::new("dtc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!(
            "SKIPPED: no dtc (Debian's device-tree-compiler) to compile the boards' tests/data/*.dts"
        );
    }
    found
}

/// Builds what `cfg` boots, once per test process: the kernel, plus the userland and its
/// initramfs when the default one is used. For `--linux`, fetches Linux too; returns why if
/// that failed (no network: the caller decides whether to skip).
pub fn build(cfg: &Config) -> Result<(), String> {
    static KERNEL: OnceLock<()> = OnceLock::new();
    static USERLAND: OnceLock<()> = OnceLock::new();
    static LINUX: OnceLock<Result<(), String>> = OnceLock::new();
    let run = |args: &[&str]| {
        Command::new(root().join("qemu-run.sh"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run qemu-run.sh --build-only")
    };
    let check = |what: &str, o: std::process::Output| {
        assert!(
            o.status.success(),
            "{what} build failed:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    };
    // One build at a time, and never a rebuild while other tests boot what was built: the
    // userland (with the kernel) once, Linux's kernel once, without rebuilding the userland.
    static BUILD_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if cfg.linux || cfg.initrd == Initrd::Default {
        USERLAND.get_or_init(|| check("kernel and userland", run(&["--build-only"])));
    } else {
        KERNEL.get_or_init(|| check("kernel", run(&["--build-only", "--no-initrd"])));
    }
    if cfg.qemu != Qemu::Host {
        qemu_version(cfg.qemu)?;
    }
    if let Some(pkgs) = &cfg.debian {
        // Fetched and unpacked once per package set (qemu-run.sh caches it in target/debian/).
        static DEBIAN: std::sync::Mutex<Vec<(String, Result<(), String>)>> =
            std::sync::Mutex::new(Vec::new());
        let mut sets = DEBIAN.lock().unwrap_or_else(|e| e.into_inner());
        if !sets.iter().any(|(p, _)| p == pkgs) {
            let o = run(&["--no-build", "--build-only", "--debian", pkgs]);
            let r = if o.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ))
            };
            sets.push((pkgs.clone(), r));
        }
        sets.iter().find(|(p, _)| p == pkgs).unwrap().1.clone()?;
    }
    if cfg.linux {
        return LINUX
            .get_or_init(|| {
                let o = run(&["--linux", "--no-build", "--build-only"]);
                if o.status.success() {
                    Ok(())
                } else {
                    Err(format!(
                        "{}{}",
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    ))
                }
            })
            .clone();
    }
    Ok(())
}

/// Whether what `cfg` boots is ready (built, and fetched: Linux, QEMU 11.1); `false`, with the
/// reason printed, when a download failed for want of network, so that the caller skips.
pub fn ready(cfg: &Config) -> bool {
    match build(cfg) {
        Ok(()) => true,
        Err(why) if why.contains("network") => {
            let args = cfg.args().join(" ");
            eprintln!("SKIPPED ./qemu-run.sh {args}: a download failed:\n{why}");
            false
        }
        Err(why) => panic!("set-up for {cfg:?} failed: {why}"),
    }
}

/// The version (major, minor) of the QEMU `qemu` selects, asked once per test process through
/// `qemu-run.sh --qemu-version` (which fetches QEMU 11.1 first if needed); returns why if that
/// failed (a fetch without network: the caller decides whether to skip).
pub fn qemu_version(qemu: Qemu) -> Result<(u32, u32), String> {
    static HOST: OnceLock<Result<(u32, u32), String>> = OnceLock::new();
    static V11: OnceLock<Result<(u32, u32), String>> = OnceLock::new();
    let (cell, flag) = match qemu {
        Qemu::Host => (&HOST, None),
        Qemu::V11 => (&V11, Some("--qemu11")),
    };
    cell.get_or_init(|| {
        let o = Command::new(root().join("qemu-run.sh"))
            .args(flag)
            .arg("--qemu-version")
            .stdin(Stdio::null())
            .output()
            .expect("run qemu-run.sh --qemu-version");
        let out = String::from_utf8_lossy(&o.stdout);
        if !o.status.success() {
            return Err(format!("{out}{}", String::from_utf8_lossy(&o.stderr)));
        }
        parse_qemu_version(&out).ok_or_else(|| format!("no QEMU version in {out:?}"))
    })
    .clone()
}

/// (major, minor) from `QEMU emulator version 11.1.3 (Debian ...)`.
fn parse_qemu_version(s: &str) -> Option<(u32, u32)> {
    let v = s.split("version ").nth(1)?.split_whitespace().next()?;
    let mut parts = v.split('.').map(|p| p.parse().ok());
    Some((parts.next()??, parts.next()??))
}

/// Builds what `cfg` boots and starts qemu-run.sh for it, standard output piped, standard
/// input as given. Its own process group: qemu-run.sh may run QEMU as a child (to read its
/// output), and a timeout must kill both.
fn start(cfg: &Config, stdin: Stdio) -> std::process::Child {
    if let Err(e) = build(cfg) {
        panic!("build for {cfg:?} failed: {e}");
    }
    Command::new(root().join("qemu-run.sh"))
        .args(cfg.args())
        .process_group(0)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start qemu-run.sh")
}

/// Kills qemu-run.sh and QEMU (their process group) and reaps them.
fn kill_group(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits for qemu-run.sh to end, at most `timeout` (then kills it: `None`).
fn wait_or_kill(child: &mut std::process::Child, timeout: Duration) -> Option<i32> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(s) = child.try_wait().expect("wait for qemu") {
            return s.code();
        }
        if Instant::now() > deadline {
            kill_group(child);
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Boots `cfg` and collects the console output and exit status.
pub fn boot(cfg: &Config) -> Run {
    collect(start(cfg, Stdio::null()), cfg.timeout)
}

/// Runs `cmd` (a QEMU command line of the test's own, say) in its own process group and
/// collects its output and exit status, killing it after `timeout`.
pub fn run_command(cmd: &mut Command, timeout: Duration) -> Run {
    let child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
    collect(child, timeout)
}

fn collect(mut child: std::process::Child, timeout: Duration) -> Run {
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).replace('\r', "")
    });
    let status = wait_or_kill(&mut child, timeout);
    Run {
        status,
        output: reader.join().unwrap(),
    }
}

/// The boot report's lines (`svelt: ...` and `cpu: ...`, in order), which must not depend on
/// how the kernel was loaded.
pub fn report_lines(output: &str) -> Vec<String> {
    output
        .lines()
        .map(str::trim_end)
        .filter(|l| l.starts_with("svelt: ") || l.starts_with("cpu: "))
        .map(String::from)
        .collect()
}

/// The boot report, parsed from the console output.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BootReport {
    pub entered_el: Option<u8>,
    /// `svelt: kernel at EL2 (VHE)` gives `Some((2, true))`, `svelt: kernel at EL1` `Some((1, false))`.
    pub kernel_el: Option<(u8, bool)>,
    pub cpus_online: Option<u32>,
    pub timer_cpus: Option<u32>,
    /// `Some(vec![])` for `cpu: sve absent`.
    pub sve: Option<Vec<u32>>,
    pub sme: Option<Vec<u32>>,
    pub sme_fa64: Option<bool>,
    pub sme2: Option<bool>,
    /// `svelt: fp policy ...` (the policy in force; malformed text: a panic).
    pub fp_policy: Option<svelt_abi::fp::fppolicy::Policy>,
    /// `svelt: console ...`: the console UART as the kernel reports it (`pl011 at 0x9000000`).
    pub console: Option<String>,
    pub exit_status: Option<i32>,
}

fn parse_vls(s: &str) -> Vec<u32> {
    s.split(',')
        .map(|v| v.parse().unwrap_or_else(|_| panic!("bad VL {v:?}")))
        .collect()
}

pub fn parse_report(output: &str) -> BootReport {
    let mut r = BootReport::default();
    for line in output.lines().map(str::trim_end) {
        if let Some(el) = line.strip_prefix("svelt: entered at EL") {
            r.entered_el = el.parse().ok();
        } else if let Some(el) = line.strip_prefix("svelt: kernel at EL") {
            r.kernel_el = match el {
                "2 (VHE)" => Some((2, true)),
                "1" => Some((1, false)),
                _ => panic!("bad kernel EL line {line:?}"),
            };
        } else if let Some(n) = line.strip_prefix("svelt: cpus online ") {
            r.cpus_online = n.parse().ok();
        } else if let Some(rest) = line.strip_prefix("svelt: timer ticking on ") {
            r.timer_cpus = rest.trim_end_matches(" cpus").parse().ok();
        } else if let Some(p) = line.strip_prefix("svelt: fp policy ") {
            r.fp_policy = Some(
                svelt_abi::fp::fppolicy::Policy::parse(p)
                    .unwrap_or_else(|| panic!("bad fp policy line {line:?}")),
            );
        } else if let Some(c) = line.strip_prefix("svelt: console ") {
            r.console = Some(c.to_string());
        } else if let Some(n) = line.strip_prefix("svelt: exit status ") {
            r.exit_status = n.parse().ok();
        } else if line == "cpu: sve absent" {
            r.sve = Some(vec![]);
        } else if let Some(v) = line.strip_prefix("cpu: sve vls=") {
            r.sve = Some(parse_vls(v));
        } else if line == "cpu: sme absent" {
            r.sme = Some(vec![]);
        } else if let Some(rest) = line.strip_prefix("cpu: sme vls=") {
            let mut words = rest.split(' ');
            r.sme = Some(parse_vls(words.next().unwrap()));
            for w in words {
                match w.split_once('=') {
                    Some(("fa64", v)) => r.sme_fa64 = Some(v == "1"),
                    Some(("sme2", v)) => r.sme2 = Some(v == "1"),
                    _ => panic!("unexpected word {w:?} in {line:?}"),
                }
            }
        }
    }
    r
}

/// Boots `cfg` and checks the whole boot report against what the flags imply.
pub fn check_boot_report(cfg: &Config) -> Run {
    let run = boot(cfg);
    let r = parse_report(&run.output);
    let ctx = || format!("config {cfg:?}\n--- output ---\n{}", run.output);
    assert_eq!(run.status, Some(0), "run status; {}", ctx());
    assert_eq!(r.exit_status, Some(0), "{}", ctx());
    assert_eq!(r.entered_el, Some(cfg.el), "entry EL; {}", ctx());
    assert_eq!(
        r.kernel_el,
        Some(cfg.expected_kernel_el()),
        "kernel EL; {}",
        ctx()
    );
    assert_eq!(r.fp_policy, Some(cfg.fp_policy()), "FP policy; {}", ctx());
    if cfg.board.is_none() {
        // virt's one UART, wherever the device tree came from.
        assert_eq!(
            r.console.as_deref(),
            Some("pl011 at 0x9000000"),
            "console; {}",
            ctx()
        );
    }
    assert_eq!(r.cpus_online, Some(cfg.smp), "CPUs online; {}", ctx());
    assert_eq!(
        r.timer_cpus,
        Some(cfg.smp),
        "CPUs whose timer ticks; {}",
        ctx()
    );
    assert_eq!(r.sve, Some(cfg.expected_sve()), "SVE VLs; {}", ctx());
    match cfg.expected_sme() {
        Some(sme) => {
            // SME2 came to -cpu max in QEMU 10.1.
            let version = qemu_version(cfg.qemu).expect("QEMU's version");
            assert_eq!(r.sme, Some(sme), "SME VLs; {}", ctx());
            assert_eq!(r.sme_fa64, Some(cfg.fa64), "FA64 as asked; {}", ctx());
            assert_eq!(
                r.sme2,
                Some(version >= (10, 1)),
                "SME2 from QEMU 10.1 (this is {version:?}); {}",
                ctx()
            );
        }
        None => assert_eq!(r.sme, Some(vec![]), "SME absent; {}", ctx()),
    }
    run
}

/// One test program's result in the init's top-level KTAP, with its nested results.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ProgramResult {
    pub name: String,
    pub ok: bool,
    /// Nested `ok`/`not ok` lines: (passed, subtest name, skip reason).
    pub subtests: Vec<(bool, String, Option<String>)>,
    /// The nested diagnostics (`# ...`) and other output, for failure messages.
    pub output: Vec<String>,
}

/// What the init reported.
#[derive(Debug, Default)]
pub struct KtapRun {
    pub programs: Vec<ProgramResult>,
    /// `1..N` of the top level.
    pub plan: Option<usize>,
    /// The top-level `# Totals:` line's pass and fail counts.
    pub totals: Option<(u32, u32)>,
    /// `svelt-init: exit status S`.
    pub init_status: Option<i32>,
}

impl KtapRun {
    /// "program/subtest" for every failed nested test, and "program" for a failed program
    /// whose nested lines do not say which test failed (a crash, a timeout).
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.programs {
            let failed: Vec<_> = p.subtests.iter().filter(|s| !s.0).collect();
            for s in &failed {
                out.push(format!("{}/{}", p.name, s.1));
            }
            if !p.ok && failed.is_empty() {
                out.push(p.name.clone());
            }
        }
        out
    }

    /// What each failed program printed (its nested diagnostics, at most the last 30 lines of
    /// each), so that the first lines of a failure message say why, not only which.
    pub fn failure_details(&self) -> String {
        let mut out = String::new();
        for p in self.programs.iter().filter(|p| !p.ok) {
            let skip = p.output.len().saturating_sub(30);
            out.push_str(&format!("--- {} printed ---\n", p.name));
            for l in &p.output[skip..] {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }
}

fn parse_result_line(line: &str) -> Option<(bool, String, Option<String>)> {
    let (ok, rest) = if let Some(r) = line.strip_prefix("ok ") {
        (true, r)
    } else {
        (false, line.strip_prefix("not ok ")?)
    };
    let (num, name) = rest.split_once(' ').unwrap_or((rest, ""));
    num.parse::<u32>().ok()?;
    let (name, skip) = match name.split_once(" # SKIP") {
        Some((n, why)) => (n, Some(why.trim().to_string())),
        None => (name, None),
    };
    Some((ok, name.trim().to_string(), skip))
}

/// Parses the init's output: the top level at column 0, each program's KTAP indented by four.
pub fn parse_ktap(output: &str) -> KtapRun {
    let mut run = KtapRun::default();
    let mut cur = ProgramResult::default();
    for line in output.lines().map(str::trim_end) {
        if let Some(nested) = line.strip_prefix("    ") {
            match parse_result_line(nested) {
                Some(r) => cur.subtests.push(r),
                None => cur.output.push(nested.to_string()),
            }
        } else if let Some((ok, name, _)) = parse_result_line(line) {
            cur.ok = ok;
            cur.name = name;
            run.programs.push(std::mem::take(&mut cur));
        } else if let Some(n) = line.strip_prefix("1..") {
            run.plan = n.parse().ok();
        } else if let Some(t) = line.strip_prefix("# Totals: ") {
            let field = |k: &str| {
                t.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .and_then(|v| v.parse().ok())
            };
            if let (Some(p), Some(f)) = (field("pass:"), field("fail:")) {
                run.totals = Some((p, f));
            }
        } else if let Some(s) = line.strip_prefix("svelt-init: exit status ") {
            run.init_status = s.parse().ok();
        }
    }
    run
}

/// Boots the default userland in `cfg` and asserts that the init ran every program and every
/// nested test passed, naming the failures.
pub fn check_userland(cfg: &Config) -> Run {
    let run = boot(cfg);
    let k = parse_ktap(&run.output);
    let ctx = || format!("config {cfg:?}\n--- output ---\n{}", run.output);
    let failures = k.failures();
    assert!(
        failures.is_empty(),
        "failed tests: {}\n{}{}",
        failures.join(", "),
        k.failure_details(),
        ctx()
    );
    assert!(
        k.plan.is_some() && k.plan == Some(k.programs.len()),
        "the init ran {} of {:?} programs; {}",
        k.programs.len(),
        k.plan,
        ctx()
    );
    assert!(
        k.programs.len() > 5,
        "too few test programs ({}); {}",
        k.programs.len(),
        ctx()
    );
    assert_eq!(
        k.totals.map(|t| t.1),
        Some(0),
        "top-level totals; {}",
        ctx()
    );
    assert_eq!(k.init_status, Some(0), "init's status; {}", ctx());
    assert_eq!(run.status, Some(0), "run status; {}", ctx());
    if !cfg.linux {
        assert_eq!(
            parse_report(&run.output).fp_policy,
            Some(cfg.fp_policy()),
            "the FP policy the boot log reports; {}",
            ctx()
        );
    }
    run
}

/// Extra files for a big initramfs: `files` pseudo-random files of `size` bytes each (every
/// third one compressible text instead, when `text` is set), spread over subdirectories of
/// `big/`, plus a few small ones of awkward sizes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BigSpec {
    pub files: usize,
    pub size: usize,
    pub text: bool,
    pub gzip: bool,
}

/// The content of extra file `i` (deterministic).
fn big_content(spec: &BigSpec, i: usize, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 8);
    if spec.text && i.is_multiple_of(3) {
        let mut n = i as u64;
        while out.len() < size {
            n += 1;
            out.extend_from_slice(
                format!("line {n} of file {i}: the quick brown fox\n").as_bytes(),
            );
        }
    } else {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 + 1).wrapping_mul(0xd134_2543_de82_ef95);
        while out.len() < size {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out.truncate(size);
    out
}

/// Builds (once; cached in target/bigfiles/ by the userland archive's content and `spec`) an
/// initramfs of the default userland (target/initramfs.cpio, which must be built) followed by
/// a second archive with the extra files and /etc/bigfiles.manifest for
/// `/bin/tests/bigfiles`. Plain: the two newc archives concatenated; gzip: the userland's
/// gzip member (target/initramfs.cpio.gz) and one for the extra archive, concatenated.
pub fn big_initramfs(spec: &BigSpec) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let base =
        std::fs::read(root().join("target/initramfs.cpio")).expect("the userland's initramfs");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    base.hash(&mut h);
    spec.hash(&mut h);
    let dir = root().join("target/bigfiles");
    let ext = if spec.gzip { "cpio.gz" } else { "cpio" };
    let prefix = format!("big-{}x{}-", spec.files, spec.size);
    let path = dir.join(format!("{prefix}{:016x}.{ext}", h.finish()));
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let mut extra = Vec::new();
    let mut manifest = String::new();
    {
        let mut w = svelt_abi::boot::cpio::Writer::new(|b: &[u8]| extra.extend_from_slice(b));
        let mut add = |w: &mut svelt_abi::boot::cpio::Writer<_>, name: String, data: Vec<u8>| {
            let mut c = svelt_abi::util::bytes::Checksum::new();
            c.update(&data);
            manifest += &format!("{} {:016x} /{name}\n", data.len(), c.finish());
            w.file(&name, 0o644, &data);
        };
        w.dir("big", 0o755);
        for d in 0..4 {
            w.dir(&format!("big/d{d}"), 0o755);
        }
        for i in 0..spec.files {
            let data = big_content(spec, i, spec.size);
            add(&mut w, format!("big/d{}/f{i:03}", i % 4), data);
        }
        for (k, size) in [0usize, 1, 4095, 4096, 4097, 12345, 65537]
            .into_iter()
            .enumerate()
        {
            let data = big_content(spec, 1000 + k, size);
            add(&mut w, format!("big/small{k}"), data);
        }
        w.file("etc/bigfiles.manifest", 0o644, manifest.as_bytes());
        let _sink = w.finish();
    }
    let mut out = if spec.gzip {
        let mut out = std::fs::read(root().join("target/initramfs.cpio.gz")).unwrap();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, &extra).unwrap();
        out.extend_from_slice(&e.finish().unwrap());
        out
    } else {
        let mut out = base;
        out.extend_from_slice(&extra);
        out
    };
    // Zero padding after the archive, as boot loaders leave it.
    out.extend_from_slice(&[0; 512]);
    // Older versions of this archive go; the new one appears whole.
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && name.ends_with(ext) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &out).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// A boot whose serial line the test talks to: it waits for what the guest prints and types
/// into QEMU's standard input (the PL011), as a person at the console would.
pub struct Console {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    rx: std::sync::mpsc::Receiver<Vec<u8>>,
    /// Everything the guest printed so far, raw (CRs kept).
    pub output: Vec<u8>,
    /// Where the next `expect` starts looking.
    seen: usize,
}

impl Console {
    /// Boots `cfg` with its standard input a pipe.
    pub fn boot(cfg: &Config) -> Console {
        Console::attach(start(cfg, Stdio::piped()))
    }

    /// Runs `cmd` (a QEMU command line of the test's own) with its standard input a pipe and
    /// its output collected, in its own process group.
    pub fn spawn(cmd: &mut Command) -> Console {
        let child = cmd
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
        Console::attach(child)
    }

    fn attach(mut child: std::process::Child) -> Console {
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Console {
            child,
            stdin,
            rx,
            output: Vec::new(),
            seen: 0,
        }
    }

    /// Waits until the output (after what earlier calls matched) contains `what`; returns the
    /// output from there up to the end of the match. Panics with the transcript on timeout.
    pub fn expect(&mut self, what: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let hay = &self.output[self.seen..];
            if let Some(at) = hay.windows(what.len()).position(|w| w == what.as_bytes()) {
                let end = self.seen + at + what.len();
                let got = String::from_utf8_lossy(&self.output[self.seen..end]).into_owned();
                self.seen = end;
                return got;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left.max(Duration::from_millis(1))) {
                Ok(b) => self.output.extend_from_slice(&b),
                Err(_) if Instant::now() < deadline => {}
                Err(_) => panic!(
                    "no {what:?} within {timeout:?}; the console said:\n{}",
                    String::from_utf8_lossy(&self.output)
                ),
            }
        }
    }

    /// Types `bytes` on the serial line.
    pub fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stdin.write_all(bytes).expect("write to QEMU");
        self.stdin.flush().expect("flush to QEMU");
    }

    /// Waits for QEMU to end (at most `timeout`, then kills it); the exit status, and all
    /// the output.
    pub fn finish(mut self, timeout: Duration) -> Run {
        let status = wait_or_kill(&mut self.child, timeout);
        while let Ok(b) = self.rx.recv_timeout(Duration::from_millis(200)) {
            self.output.extend_from_slice(&b);
        }
        Run {
            status,
            output: String::from_utf8_lossy(&self.output).replace('\r', ""),
        }
    }
}

/// Drives `/bin/tests/tty_typed` (booted as the first process) through its steps: waits for
/// each `# READY <step>` line (the first within `first`, the others within `step`), types
/// into the serial line and checks what the terminal echoes (canonical editing, ^D, ^C and ^Z
/// to the foreground group, a raw read), then the program's own results and end. Consumes the
/// console; returns the whole run.
pub fn type_tty_session(mut c: Console, first: Duration, step: Duration) -> Run {
    // (step, what to type, what the terminal must echo back).
    let steps: [(&str, &[u8], &str); 7] = [
        (
            "line",
            b"hello\x7fo wor\x17world\r",
            "hello\x08 \x08o wor\x08 \x08\x08 \x08\x08 \x08world\r\n",
        ),
        (
            "kill",
            b"junk\x15ok\r",
            "junk\x08 \x08\x08 \x08\x08 \x08\x08 \x08ok\r\n",
        ),
        ("eof", b"\x04", ""),
        ("eof2", b"abc\x04", "abc"),
        ("sigint", b"\x03", "^C"),
        ("sigtstp", b"\x1a", "^Z"),
        ("raw", b"a\x03\r", ""),
    ];
    for (i, (name, input, echo)) in steps.iter().enumerate() {
        let wait = if i == 0 { first } else { step };
        c.expect(&format!("# READY {name}\r\n"), wait);
        c.send(input);
        if !echo.is_empty() {
            let got = c.expect(echo, step);
            assert!(
                got == *echo,
                "step {name}: output before the echo {echo:?}: {got:?}"
            );
        }
    }
    c.expect("# Totals:", step);
    let run = c.finish(step);
    let k = parse_ktap(&run.output);
    assert_eq!(
        k.totals,
        Some((6, 0)),
        "tty_typed's results:\n{}",
        run.output
    );
    assert_eq!(k.init_status, Some(0), "{}", run.output);
    run
}

/// A test that fails part-way must not leave QEMU running.
impl Drop for Console {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill_group(&mut self.child);
        }
    }
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn parses_a_full_report() {
        let out = "noise\nsvelt: entered at EL2\r\nsvelt: kernel at EL2 (VHE)\nsvelt: console pl011 at 0x9000000\nsvelt: timer ticking on 2 cpus\nsvelt: cpus online 2\n\
                   cpu: sve vls=16,32,48\ncpu: sme vls=16,32 fa64=1 sme2=0\nsvelt: exit status 0\n";
        let r = parse_report(&out.replace('\r', ""));
        assert_eq!(r.entered_el, Some(2));
        assert_eq!(r.kernel_el, Some((2, true)));
        assert_eq!(r.console.as_deref(), Some("pl011 at 0x9000000"));
        assert_eq!(
            parse_report("svelt: kernel at EL1").kernel_el,
            Some((1, false))
        );
        assert_eq!(r.cpus_online, Some(2));
        assert_eq!(r.timer_cpus, Some(2));
        assert_eq!(r.sve, Some(vec![16, 32, 48]));
        assert_eq!(r.sme, Some(vec![16, 32]));
        assert_eq!((r.sme_fa64, r.sme2), (Some(true), Some(false)));
        assert_eq!(r.exit_status, Some(0));
    }

    #[test]
    fn absent_lines() {
        let r = parse_report("cpu: sve absent\ncpu: sme absent\n");
        assert_eq!((r.sve, r.sme), (Some(vec![]), Some(vec![])));
        assert_eq!(parse_report("").entered_el, None);
    }

    #[test]
    fn expectations_from_flags() {
        let c = Config {
            sve_max_vq: 4,
            ..Config::default()
        };
        assert_eq!(c.expected_sve(), [16, 32, 48, 64]);
        assert_eq!(c.expected_sme(), Some(vec![16, 32, 64]));
        let c = Config {
            sve_max_vq: 3,
            ..Config::default()
        };
        assert_eq!(c.expected_sme(), Some(vec![16, 32]));
        let c = Config {
            sme: Some(Some(128)),
            ..Config::default()
        };
        assert_eq!(c.expected_sme(), Some(vec![16, 32, 64, 128]));
        assert_eq!(
            Config {
                sme: None,
                ..Config::default()
            }
            .expected_sme(),
            None
        );
    }

    #[test]
    fn qemu_versions() {
        let v = "QEMU emulator version 11.1.3 (Debian 1:11.1.3+ds-1~bpo13+1)\n";
        assert_eq!(parse_qemu_version(v), Some((11, 1)));
        assert_eq!(
            parse_qemu_version("QEMU emulator version 7.2.15\n"),
            Some((7, 2))
        );
        assert_eq!(parse_qemu_version("qemu: no such file"), None);
    }

    #[test]
    fn qemu_flags() {
        let c = Config {
            qemu: Qemu::V11,
            fa64: false,
            ..Config::default()
        };
        let a = c.args();
        assert!(a.contains(&"--qemu11".to_string()) && a.contains(&"--no-fa64".to_string()));
        let a = Config::default().args();
        assert!(!a
            .iter()
            .any(|w| w.starts_with("--qemu") || w == "--no-fa64"));
    }

    #[test]
    fn parses_nested_ktap() {
        let out = "TAP version 13\n1..3\nok 1 init_mounts\n    TAP version 13\n    1..2\n\
                   \x20   ok 1 a\n    # why\n    not ok 2 b\n    # Totals: pass:1 fail:1\n\
                   not ok 2 prog\n    ok 1 c # SKIP no proc\nnot ok 3 crashed\n\
                   # Totals: pass:1 fail:2 xfail:0 xpass:0 skip:0 error:0\n\
                   svelt-init: exit status 1\n";
        let k = parse_ktap(out);
        assert_eq!(k.plan, Some(3));
        assert_eq!(k.programs.len(), 3);
        assert_eq!(k.programs[1].name, "prog");
        assert_eq!(k.programs[1].subtests.len(), 2);
        assert_eq!(
            k.programs[2].subtests[0],
            (true, "c".to_string(), Some("no proc".to_string()))
        );
        assert_eq!(k.failures(), ["prog/b", "crashed"]);
        let d = k.failure_details();
        assert!(d.starts_with("--- prog printed ---\nTAP version 13\n1..2\n# why\n# Totals"));
        assert!(d.ends_with("--- crashed printed ---\n"), "{d}");
        assert_eq!(k.totals, Some((1, 2)));
        assert_eq!(k.init_status, Some(1));
    }
}
