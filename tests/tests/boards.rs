//! Svelt on a QEMU board that is not `virt`: the Aspeed AST2700 EVB (`./qemu-run.sh --board
//! ast2700`, device tree tests/data/ast2700-evb.dts). Its console is a 16550 (reg-shift 2,
//! 32-bit registers) found through `/chosen/stdout-path = "serial0:..."` and `/aliases`; RAM
//! sits at 16 GiB, the GICv3 and the timer's PPIs where QEMU's model puts them, CNTFRQ_EL0 is
//! 1125 MHz, and there is no PSCI, so one of the four Cortex-A35 runs (they have neither SVE
//! nor SME). The tests check the boot report, that the vector programs skip their SVE/SME
//! tests as on any CPU without them while the rest pass, and typed input through the 16550's
//! receive interrupt into the terminal's line discipline.
//!
//! And QEMU's Raspberry Pi 4B (`./qemu-run.sh --board raspi4b`, tests/data/raspi4b.dts): a
//! PL011 console, a GIC-400 (GICv2), RAM at 0, and four Cortex-A72 whose secondaries wait in
//! QEMU's spin loop: the device tree says `enable-method = "spin-table"`, and Svelt releases
//! them through their `cpu-release-addr`. The tests check the boot report (four CPUs online
//! and ticking) and programs run as the first process, one of them seeing all four CPUs.

use std::time::Duration;
use svelt_tests::{boot, dtc_or_skip, parse_ktap, parse_report, ready, Config, Console, Initrd};

/// `./qemu-run.sh --board NAME` (neither board has SME), with this initramfs and first process.
fn on_board(board: &'static str, initrd: Initrd, init: Option<&str>) -> Config {
    Config {
        board: Some(board),
        sme: None,
        initrd,
        init: init.map(String::from),
        ..Config::default()
    }
}

fn ast2700(initrd: Initrd, init: Option<&str>) -> Config {
    on_board("ast2700", initrd, init)
}

fn raspi4b(initrd: Initrd, init: Option<&str>) -> Config {
    on_board("raspi4b", initrd, init)
}

/// The typed session (`tty_typed` as the first process) through `board`'s console UART, whose
/// boot-report line must be `console`.
fn typed_input(board: fn(Initrd, Option<&str>) -> Config, console: &str) {
    if !dtc_or_skip() {
        return;
    }
    let cfg = Config {
        timeout: Duration::from_secs(60),
        ..board(Initrd::Default, Some("/bin/tests/tty_typed"))
    };
    if !ready(&cfg) {
        return;
    }
    let run = svelt_tests::type_tty_session(Console::boot(&cfg), cfg.timeout, cfg.timeout);
    assert!(run.output.contains(console), "{}", run.output);
}

#[test]
fn ast2700_boot_report() {
    if !dtc_or_skip() {
        return;
    }
    let cfg = ast2700(Initrd::None, None);
    let run = boot(&cfg);
    let r = parse_report(&run.output);
    let out = &run.output;
    assert_eq!(run.status, Some(0), "{out}");
    assert_eq!(r.exit_status, Some(0), "{out}");
    // QEMU enters at EL2 (it drops from EL3 itself); a Cortex-A35 has no VHE.
    assert_eq!(r.entered_el, Some(2), "{out}");
    assert_eq!(r.kernel_el, Some((1, false)), "{out}");
    assert_eq!(
        r.console.as_deref(),
        Some("16550 at 0x12c1a000, reg-shift 2, reg-io-width 4"),
        "{out}"
    );
    assert_eq!((r.cpus_online, r.timer_cpus), (Some(1), Some(1)), "{out}");
    assert_eq!((r.sve, r.sme), (Some(vec![]), Some(vec![])), "{out}");
    for line in [
        "INFO  Svelt 0.1.0 on Aspeed AST2700 EVB (QEMU)",
        "INFO  counter 1125000000 Hz (CNTFRQ_EL0)",
        "MiB free in 1 RAM region(s)",
        "INFO  GICv3 at 0x12200000, timer INTID 27",
        "WARN  no PSCI in the device tree: the other 3 CPUs stay off",
    ] {
        assert!(out.contains(line), "no {line:?} in\n{out}");
    }
}

#[test]
fn ast2700_el2_exception_is_reported_on_the_16550() {
    if !dtc_or_skip() {
        return;
    }
    // The kernel runs at EL1 under an EL2 it left behind: an HVC lands in the EL2
    // report-and-halt vectors, which run with the MMU off and write to the 16550 themselves.
    let cfg = Config {
        append: vec!["svelt.selftest=el2".into()],
        ..ast2700(Initrd::None, None)
    };
    let run = boot(&cfg);
    assert_eq!(run.status, Some(101), "{}", run.output);
    assert!(
        run.output
            .contains("svelt: EL2 exception vector=0x0000000000000008 esr=0x000000005a005e1f"),
        "{}",
        run.output
    );
}

#[test]
fn ast2700_vector_programs_skip_and_the_rest_pass() {
    if !dtc_or_skip() {
        return;
    }
    // Each program as the first process: a boot takes about a second.
    programs_as_init(
        ast2700,
        None,
        &[
            ("sve_regs", true, None),
            ("sve_sigframe", true, None),
            ("sme_regs", true, None),
            ("sve_vl", true, None),
            ("hwcap_idregs", false, None),
            ("signals", false, None),
            ("sysmisc", false, None),
        ],
    );
}

/// Runs each `(program, vector, expect)` as the first process on the board `board` makes:
/// its results are the top level and none fails; a vector program skips every test, any
/// other runs some; `expect`, when given, is a line it prints. With `cpus`, the boot report
/// says that many CPUs came online.
fn programs_as_init(
    board: fn(Initrd, Option<&str>) -> Config,
    cpus: Option<u32>,
    programs: &[(&str, bool, Option<&str>)],
) {
    for &(program, vector, expect) in programs {
        let cfg = board(Initrd::Default, Some(&format!("/bin/tests/{program}")));
        if !ready(&cfg) {
            return;
        }
        let run = boot(&cfg);
        let k = parse_ktap(&run.output);
        let ctx = || format!("{program}:\n{}", run.output);
        if cpus.is_some() {
            assert_eq!(parse_report(&run.output).cpus_online, cpus, "{}", ctx());
        }
        // As the first process its own results are the top level.
        assert!(
            !k.programs.is_empty() && k.plan == Some(k.programs.len()),
            "{}",
            ctx()
        );
        assert_eq!(k.failures(), Vec::<String>::new(), "{}", ctx());
        let skipped = run
            .output
            .lines()
            .filter(|l| l.starts_with("ok ") && l.contains(" # SKIP"))
            .count();
        if vector {
            assert_eq!(skipped, k.programs.len(), "every test skips; {}", ctx());
        } else {
            assert!(skipped < k.programs.len(), "some tests ran; {}", ctx());
        }
        if let Some(line) = expect {
            assert!(run.output.contains(line), "no {line:?}; {}", ctx());
        }
        assert_eq!(run.status, Some(0), "{}", ctx());
    }
}

#[test]
fn ast2700_typed_input_through_the_16550() {
    typed_input(
        ast2700,
        "svelt: console 16550 at 0x12c1a000, reg-shift 2, reg-io-width 4",
    );
}

#[test]
fn raspi4b_boot_report() {
    if !dtc_or_skip() {
        return;
    }
    let run = boot(&raspi4b(Initrd::None, None));
    let r = parse_report(&run.output);
    let out = &run.output;
    assert_eq!(run.status, Some(0), "{out}");
    assert_eq!(r.exit_status, Some(0), "{out}");
    // QEMU enters at EL2 (no EL3 firmware runs); a Cortex-A72 has no VHE.
    assert_eq!(r.entered_el, Some(2), "{out}");
    assert_eq!(r.kernel_el, Some((1, false)), "{out}");
    assert_eq!(r.console.as_deref(), Some("pl011 at 0xfe201000"), "{out}");
    // The three secondaries came from their spin tables and each takes its tick.
    assert_eq!((r.cpus_online, r.timer_cpus), (Some(4), Some(4)), "{out}");
    assert_eq!((r.sve, r.sme), (Some(vec![]), Some(vec![])), "{out}");
    for line in [
        "INFO  Svelt 0.1.0 on Raspberry Pi 4 Model B (QEMU)",
        "INFO  counter 62500000 Hz (CNTFRQ_EL0)",
        "MiB free in 1 RAM region(s)",
        "INFO  GICv2 at 0xff841000, timer INTID 27",
    ] {
        assert!(out.contains(line), "no {line:?} in\n{out}");
    }
    for absent in ["PSCI", "did not come online", "cannot be started", "ERROR"] {
        assert!(!out.contains(absent), "{absent:?} in\n{out}");
    }
}

#[test]
fn raspi4b_programs_on_four_cpus() {
    if !dtc_or_skip() {
        return;
    }
    // Each program as the first process, on all four CPUs: sysmisc counts them in its
    // affinity mask, threads runs threads across them, sve_regs skips (no SVE on an A72).
    programs_as_init(
        raspi4b,
        Some(4),
        &[
            ("sysmisc", false, Some("# 4 cpus in the affinity mask")),
            ("threads", false, None),
            ("signals", false, None),
            ("sve_regs", true, None),
        ],
    );
}

#[test]
fn raspi4b_typed_input_through_the_pl011() {
    // The PL011's receive interrupt arrives as GIC SPI 121 (the VideoCore's interrupt 57).
    typed_input(raspi4b, "svelt: console pl011 at 0xfe201000");
}
