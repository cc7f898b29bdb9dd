//! Booting through U-Boot (`./qemu-run.sh --firmware uboot`: Debian's u-boot-qemu, qemu_arm64
//! build, as -bios), which loads the Image and the initramfs from fw_cfg and starts the Image
//! with booti: the boot report and the userland's results must be those of QEMU's own -kernel
//! loader. Without -initrd U-Boot still passes an initrd region (holding no archive): Svelt says
//! so in one line and goes on as without one.
//!
//! Skipped, saying why, when U-Boot is not installed (.ci/run installs u-boot-qemu).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use svelt_tests::{
    boot, build, check_boot_report, parse_ktap, report_lines, root, Config, Initrd, Run,
};

const NO_ARCHIVE: &str = "svelt: initrd region holds no archive, going on without one";

/// U-Boot's image, or `None` (with the reason printed) when it is missing.
fn uboot() -> Option<PathBuf> {
    let path = std::env::var_os("UBOOT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/lib/u-boot/qemu_arm64/u-boot.bin".into());
    if path.is_file() {
        return Some(path);
    }
    eprintln!(
        "SKIPPED: no U-Boot at {} (install Debian's u-boot-qemu, as .ci/run does, or set \
         UBOOT_BIN)",
        path.display()
    );
    None
}

fn through_uboot(cfg: &Config) -> Config {
    Config {
        firmware: Some("uboot"),
        ..cfg.clone()
    }
}

fn ctx(run: &Run) -> String {
    format!("--- output ---\n{}", run.output)
}

#[test]
fn uboot_without_initrd_reports_as_kernel() {
    if uboot().is_none() {
        return;
    }
    for el in [1, 2] {
        let cfg = Config {
            el,
            ..Config::default()
        };
        let direct = check_boot_report(&cfg);
        // The same expectations hold through U-Boot (check_boot_report), line for line.
        let via = check_boot_report(&through_uboot(&cfg));
        assert!(
            via.output.contains("Starting kernel ..."),
            "U-Boot's booti started it; {}",
            ctx(&via)
        );
        let lines = report_lines(&via.output);
        assert_eq!(
            lines.iter().filter(|l| *l == NO_ARCHIVE).count(),
            1,
            "one line for the empty initrd region; {}",
            ctx(&via)
        );
        let without: Vec<_> = lines.into_iter().filter(|l| l != NO_ARCHIVE).collect();
        assert_eq!(
            without,
            report_lines(&direct.output),
            "EL{el}; {}",
            ctx(&via)
        );
        assert!(
            without.contains(&"svelt: no initramfs, nothing to run".to_string()),
            "{}",
            ctx(&via)
        );
        assert!(!direct.output.contains(NO_ARCHIVE), "{}", ctx(&direct));
    }
}

/// The vector-ABI part of the suite (the whole one takes minutes; -kernel runs it elsewhere).
const SUBSET: &[&str] = &[
    "hwcap_idregs",
    "sme_regs",
    "sme_vl",
    "sve_regs",
    "sve_vl",
    "sysctl_vl",
];

/// The test init with only the SUBSET programs, packed from the staged userland.
fn subset_archive() -> PathBuf {
    build(&Config {
        initrd: Initrd::Default,
        ..Config::default()
    })
    .expect("userland build");
    let stage = root().join("target/user/initramfs");
    let out = root().join("target/uboot/subset.cpio.gz");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mkinitramfs"));
    cmd.arg("--out")
        .arg(out.with_extension(""))
        .arg("--gzip")
        .arg(&out)
        .arg("--init")
        .arg(stage.join("init"));
    for p in SUBSET {
        cmd.arg(stage.join("tests").join(p));
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn userland(archive: &Path, el: u8) -> Config {
    Config {
        el,
        initrd: Initrd::File(archive.to_path_buf()),
        timeout: Duration::from_secs(400),
        ..Config::default()
    }
}

#[test]
fn uboot_userland_as_kernel() {
    if uboot().is_none() {
        return;
    }
    let archive = subset_archive();
    let cfg = userland(&archive, 2);
    let direct = boot(&cfg);
    let via = boot(&through_uboot(&cfg));
    for run in [&direct, &via] {
        let k = parse_ktap(&run.output);
        assert_eq!(run.status, Some(0), "run status; {}", ctx(run));
        assert!(
            k.failures().is_empty(),
            "failed: {:?}; {}",
            k.failures(),
            ctx(run)
        );
        assert_eq!(k.plan, Some(SUBSET.len() + 1), "{}", ctx(run));
        assert_eq!(k.programs.len(), SUBSET.len() + 1, "{}", ctx(run));
        assert_eq!(k.init_status, Some(0), "{}", ctx(run));
    }
    assert!(via.output.contains("Starting kernel ..."), "{}", ctx(&via));
    assert_eq!(
        report_lines(&via.output),
        report_lines(&direct.output),
        "boot report and exit; {}",
        ctx(&via)
    );
    let (a, b) = (parse_ktap(&direct.output), parse_ktap(&via.output));
    let results = |k: &svelt_tests::KtapRun| {
        k.programs
            .iter()
            .map(|p| (p.name.clone(), p.ok, p.subtests.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(results(&b), results(&a), "the same results; {}", ctx(&via));
}
