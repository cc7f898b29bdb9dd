//! Host harness: boots Svelt through `./qemu-run.sh` in a given configuration and parses what it
//! reports. The expectations (entry EL, CPU count, vector-length sets) are computed here from the
//! QEMU flags, independently of the kernel's own decoding.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One QEMU configuration, in qemu-run.sh's terms.
#[derive(Clone, Debug)]
pub struct Config {
    pub el: u8,
    pub smp: u32,
    pub sve_max_vq: u32,
    /// `None`: `--no-sme`; `Some(None)`: SME with qemu-run.sh's default maximum.
    pub sme: Option<Option<u32>>,
    pub gic: u8,
    pub append: Vec<String>,
    pub timeout: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            el: 2,
            smp: 2,
            sve_max_vq: 16,
            sme: Some(None),
            gic: 3,
            append: vec![],
            timeout: Duration::from_secs(120),
        }
    }
}

impl Config {
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

    fn args(&self) -> Vec<String> {
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
        for w in &self.append {
            a.extend(["--append".into(), w.clone()]);
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

/// Builds the kernel once per test process.
fn build() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let s = Command::new(root().join("qemu-run.sh"))
            .arg("--build-only")
            .status()
            .expect("run qemu-run.sh --build-only");
        assert!(s.success(), "kernel build failed");
    });
}

/// Boots `cfg` and collects the console output and exit status.
pub fn boot(cfg: &Config) -> Run {
    build();
    let mut child = Command::new(root().join("qemu-run.sh"))
        .args(cfg.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start qemu-run.sh");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).replace('\r', "")
    });
    let deadline = Instant::now() + cfg.timeout;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for qemu") {
            break s.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        output: reader.join().unwrap(),
    }
}

/// The boot report, parsed from the console output.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BootReport {
    pub entered_el: Option<u8>,
    pub cpus_online: Option<u32>,
    pub timer_cpus: Option<u32>,
    /// `Some(vec![])` for `cpu: sve absent`.
    pub sve: Option<Vec<u32>>,
    pub sme: Option<Vec<u32>>,
    pub sme_fa64: Option<bool>,
    pub sme2: Option<bool>,
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
        } else if let Some(n) = line.strip_prefix("svelt: cpus online ") {
            r.cpus_online = n.parse().ok();
        } else if let Some(rest) = line.strip_prefix("svelt: timer ticking on ") {
            r.timer_cpus = rest.trim_end_matches(" cpus").parse().ok();
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
            assert_eq!(r.sme, Some(sme), "SME VLs; {}", ctx());
            assert_eq!(r.sme_fa64, Some(true), "QEMU max has FA64; {}", ctx());
            assert_eq!(r.sme2, Some(false), "QEMU 10.0 has no SME2; {}", ctx());
        }
        None => assert_eq!(r.sme, Some(vec![]), "SME absent; {}", ctx()),
    }
    run
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn parses_a_full_report() {
        let out = "noise\nsvelt: entered at EL2\r\nsvelt: timer ticking on 2 cpus\nsvelt: cpus online 2\n\
                   cpu: sve vls=16,32,48\ncpu: sme vls=16,32 fa64=1 sme2=0\nsvelt: exit status 0\n";
        let r = parse_report(&out.replace('\r', ""));
        assert_eq!(r.entered_el, Some(2));
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
}
