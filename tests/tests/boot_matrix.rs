//! Boots Svelt over the configuration matrix (entry EL × CPUs × SVE maximum × SME) and checks
//! the boot report against what the QEMU flags imply (entered at EL2, the kernel stays there with
//! VHE; `svelt.el=1` keeps it at EL1); QEMU 11.1 (SME2) at both entry levels, with
//! FA64 off and with SME capped below an odd SVE maximum.

use svelt_tests::{check_boot_report, ready, Config, Qemu};

macro_rules! matrix {
    ($($name:ident: el $el:literal, smp $smp:literal, vq $vq:literal, sme $sme:literal;)*) => {$(
        #[test]
        fn $name() {
            check_boot_report(&Config {
                el: $el,
                smp: $smp,
                sve_max_vq: $vq,
                sme: if $sme { Some(None) } else { None },
                ..Config::default()
            });
        }
    )*};
}

matrix! {
    el1_smp1_vq1_nosme: el 1, smp 1, vq 1, sme false;
    el1_smp1_vq1_sme: el 1, smp 1, vq 1, sme true;
    el1_smp1_vq4_nosme: el 1, smp 1, vq 4, sme false;
    el1_smp1_vq4_sme: el 1, smp 1, vq 4, sme true;
    el1_smp1_vq16_nosme: el 1, smp 1, vq 16, sme false;
    el1_smp1_vq16_sme: el 1, smp 1, vq 16, sme true;
    el1_smp2_vq1_nosme: el 1, smp 2, vq 1, sme false;
    el1_smp2_vq1_sme: el 1, smp 2, vq 1, sme true;
    el1_smp2_vq4_nosme: el 1, smp 2, vq 4, sme false;
    el1_smp2_vq4_sme: el 1, smp 2, vq 4, sme true;
    el1_smp2_vq16_nosme: el 1, smp 2, vq 16, sme false;
    el1_smp2_vq16_sme: el 1, smp 2, vq 16, sme true;
    el2_smp1_vq1_nosme: el 2, smp 1, vq 1, sme false;
    el2_smp1_vq1_sme: el 2, smp 1, vq 1, sme true;
    el2_smp1_vq4_nosme: el 2, smp 1, vq 4, sme false;
    el2_smp1_vq4_sme: el 2, smp 1, vq 4, sme true;
    el2_smp1_vq16_nosme: el 2, smp 1, vq 16, sme false;
    el2_smp1_vq16_sme: el 2, smp 1, vq 16, sme true;
    el2_smp2_vq1_nosme: el 2, smp 2, vq 1, sme false;
    el2_smp2_vq1_sme: el 2, smp 2, vq 1, sme true;
    el2_smp2_vq4_nosme: el 2, smp 2, vq 4, sme false;
    el2_smp2_vq4_sme: el 2, smp 2, vq 4, sme true;
    el2_smp2_vq16_nosme: el 2, smp 2, vq 16, sme false;
    el2_smp2_vq16_sme: el 2, smp 2, vq 16, sme true;
}

#[test]
fn four_cpus_at_el2() {
    check_boot_report(&Config {
        smp: 4,
        ..Config::default()
    });
}

#[test]
fn el1_kernel_when_entered_at_el2_with_svelt_el_1() {
    // check_boot_report asserts `svelt: kernel at EL1` after `svelt: entered at EL2`.
    for smp in [1, 2] {
        check_boot_report(&Config {
            smp,
            append: vec!["svelt.el=1".into()],
            ..Config::default()
        });
    }
    // svelt.el=2 entered at EL1 cannot rise: the EL1 kernel, with a warning.
    let run = check_boot_report(&Config {
        el: 1,
        append: vec!["svelt.el=2".into()],
        ..Config::default()
    });
    assert!(
        run.output
            .contains("svelt.el=2: entered at EL1, so the kernel runs there"),
        "{}",
        run.output
    );
}

#[test]
fn el2_without_vhe_runs_the_kernel_at_el1() {
    // A Cortex-A57 (ARMv8.0: no FEAT_VHE, no SVE) entered at EL2: head.s drops to EL1. The
    // last -cpu on QEMU's command line wins over qemu-run.sh's.
    let cfg = Config {
        sme: None,
        ..Config::default()
    };
    let mut cmd = std::process::Command::new(svelt_tests::root().join("qemu-run.sh"));
    cmd.args(cfg.args()).args(["--", "-cpu", "cortex-a57"]);
    let run = svelt_tests::run_command(&mut cmd, cfg.timeout);
    let r = svelt_tests::parse_report(&run.output);
    assert_eq!(run.status, Some(0), "{}", run.output);
    assert_eq!(r.entered_el, Some(2), "{}", run.output);
    assert_eq!(r.kernel_el, Some((1, false)), "{}", run.output);
    assert_eq!(
        (r.cpus_online, r.timer_cpus),
        (Some(2), Some(2)),
        "{}",
        run.output
    );
    assert_eq!(r.sve, Some(vec![]), "{}", run.output);
}

#[test]
fn gicv2_at_el1_and_el2() {
    for el in [1, 2] {
        check_boot_report(&Config {
            el,
            gic: 2,
            ..Config::default()
        });
    }
}

#[test]
fn restricted_sme_set() {
    // SME lengths below the SVE maximum: only 16 and 32 bytes.
    check_boot_report(&Config {
        sme: Some(Some(32)),
        ..Config::default()
    });
}

#[test]
fn odd_sve_maximum() {
    // 48 bytes: SVE gets 16, 32, 48; SME the powers of two within it.
    check_boot_report(&Config {
        sve_max_vq: 3,
        el: 1,
        ..Config::default()
    });
}

#[test]
fn qemu11_at_el1_and_el2() {
    for el in [1, 2] {
        let cfg = Config {
            el,
            qemu: Qemu::V11,
            ..Config::default()
        };
        if ready(&cfg) {
            check_boot_report(&cfg);
        }
    }
}

#[test]
fn qemu11_no_fa64_odd_sve_maximum() {
    let cfg = Config {
        qemu: Qemu::V11,
        fa64: false,
        sve_max_vq: 3,
        sme: Some(Some(16)),
        ..Config::default()
    };
    if ready(&cfg) {
        check_boot_report(&cfg);
    }
}

#[test]
fn no_fa64() {
    check_boot_report(&Config {
        fa64: false,
        ..Config::default()
    });
}

/// Server-sized machines: every CPU comes up (QEMU virt's GICv3 redistributors past the 123rd
/// are in a second, high region), and the affinity mask, /sys's CPU list and the cpumask size
/// rules agree (sysmisc as init; at 256 CPUs the mask is 4 words).
#[test]
fn sixty_four_and_256_cpus() {
    for smp in [64, 256] {
        let cfg = Config {
            smp,
            initrd: svelt_tests::Initrd::Default,
            init: Some("/bin/tests/sysmisc".into()),
            timeout: std::time::Duration::from_secs(300),
            ..Config::default()
        };
        if !ready(&cfg) {
            return;
        }
        let run = check_boot_report(&cfg);
        assert!(
            run.output.contains("\nok ") && !run.output.contains("\nnot ok "),
            "sysmisc at {smp} CPUs:\n{}",
            run.output
        );
    }
}

/// The boot protocol lets a loader put the device tree anywhere in RAM (8-byte aligned, at most
/// 2 MiB). Here it straddles the 1 GiB line at 2 GiB (0x7ffff000, QEMU's own tree of
/// 1 MiB, whose structure runs past the line): head.s must map its second 2 MiB block through a
/// second L2 table, or the kernel faults before it has a console and the run hangs silently.
/// No `-kernel`: QEMU's generic loader places the Image at 0x40200000, the tree, and three
/// instructions at 0x40100000 (x0 = the tree, then a branch to the Image) where the CPU starts;
/// the run ends through PSCI SYSTEM_OFF (no initramfs, nothing to run).
#[test]
fn device_tree_across_a_1gib_line() {
    let cfg = Config {
        smp: 1,
        ..Config::default()
    };
    assert!(ready(&cfg));
    let qemu = std::env::var("QEMU").unwrap_or_else(|_| "qemu-system-aarch64".into());
    let dir = svelt_tests::root().join("target/boot-matrix");
    std::fs::create_dir_all(&dir).unwrap();
    let dtb = dir.join("virt-2g.dtb");
    let machine = "virt,gic-version=3,virtualization=on";
    let common = [
        "-cpu",
        "max,pauth-impdef=on",
        "-smp",
        "1",
        "-m",
        "2G",
        "-nographic",
        "-nodefaults",
        "-nic",
        "none",
    ];
    let o = std::process::Command::new(&qemu)
        .arg("-M")
        .arg(format!("{machine},dumpdtb={}", dtb.display()))
        .args(common)
        .output()
        .expect("run QEMU");
    assert!(
        o.status.success(),
        "dumpdtb: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let image =
        svelt_tests::root().join("target/kernel/aarch64-unknown-none-softfloat/release/svelt.img");
    // movz x0, #0xf000; movk x0, #0x7fff, lsl #16; b 0x40200000.
    let code = [(0, 0xd29e_0000u32), (4, 0xf2af_ffe0), (8, 0x1403_fffe)];
    let mut cmd = std::process::Command::new(&qemu);
    cmd.args(["-M", machine])
        .args(common)
        .args([
            "-serial",
            "stdio",
            "-monitor",
            "none",
            "-no-reboot",
            "-device",
        ])
        .arg(format!(
            "loader,file={},addr=0x40200000,force-raw=on",
            image.display()
        ))
        .arg("-device")
        .arg(format!(
            "loader,file={},addr=0x7ffff000,force-raw=on",
            dtb.display()
        ));
    for (off, insn) in code {
        cmd.arg("-device").arg(format!(
            "loader,addr={:#x},data={insn:#x},data-len=4",
            0x4010_0000 + off
        ));
    }
    cmd.args(["-device", "loader,addr=0x40100000,cpu-num=0"]);
    let run = svelt_tests::run_command(&mut cmd, std::time::Duration::from_secs(60));
    assert_eq!(
        run.status,
        Some(0),
        "QEMU's status (PSCI SYSTEM_OFF):\n{}",
        run.output
    );
    let r = svelt_tests::parse_report(&run.output);
    assert_eq!(r.cpus_online, Some(1), "{}", run.output);
    assert_eq!(r.exit_status, Some(0), "{}", run.output);
}
