//! What a kernel bug looks like from outside: a report on the console and the failure status.

use svelt_tests::{boot, Config};

const KERNEL_BUG: i32 = 101;

fn selftest(name: &str, el: u8) -> svelt_tests::Run {
    selftest_with(name, el, &[])
}

/// `selftest` with more kernel command-line words.
fn selftest_with(name: &str, el: u8, words: &[&str]) -> svelt_tests::Run {
    let mut append = vec![format!("svelt.selftest={name}")];
    append.extend(words.iter().map(|w| w.to_string()));
    boot(&Config {
        el,
        smp: 2,
        append,
        ..Config::default()
    })
}

fn assert_dump(out: &str) {
    assert!(out.contains("  x0  "), "register dump:\n{out}");
    assert!(out.contains("  elr "), "register dump:\n{out}");
    assert!(
        out.contains("  backtrace:\n    #0  0xffffff80"),
        "backtrace:\n{out}"
    );
    assert!(
        out.contains("\n    #1  0xffffff80"),
        "backtrace goes beyond the faulting frame:\n{out}"
    );
    assert!(
        out.contains(&format!("svelt: exit status {KERNEL_BUG}")),
        "{out}"
    );
}

#[test]
fn data_abort_is_reported_with_decoded_esr() {
    let run = selftest("fault", 2);
    assert_eq!(run.status, Some(KERNEL_BUG), "{}", run.output);
    assert!(
        run.output
            .contains("svelt: unexpected exception on cpu 0: El1 Sync"),
        "{}",
        run.output
    );
    assert!(
        run.output.contains("EC 0x25 (data abort from the same EL)")
            && run.output.contains("translation fault"),
        "{}",
        run.output
    );
    assert!(
        run.output.contains("  FAR 0xffff7fffdead0000"),
        "{}",
        run.output
    );
    assert_dump(&run.output);
}

#[test]
fn panic_is_reported() {
    let run = selftest("panic", 1);
    assert_eq!(run.status, Some(KERNEL_BUG), "{}", run.output);
    assert!(
        run.output
            .contains("svelt: kernel panic on cpu 0: panicked at"),
        "{}",
        run.output
    );
    assert!(run.output.contains("selftest panic"), "{}", run.output);
    assert_dump(&run.output);
}

#[test]
fn undefined_instruction_is_reported() {
    let run = selftest("undef", 1);
    assert_eq!(run.status, Some(KERNEL_BUG), "{}", run.output);
    assert!(
        run.output
            .contains("EC 0x00 (unknown/undefined instruction)"),
        "{}",
        run.output
    );
    assert_dump(&run.output);
}

#[test]
fn kernel_text_is_not_writable() {
    let run = selftest("write-text", 1);
    assert_eq!(run.status, Some(KERNEL_BUG), "{}", run.output);
    assert!(
        run.output.contains("permission fault level 3, write"),
        "{}",
        run.output
    );
}

#[test]
fn kernel_image_alias_in_linear_map_is_read_only() {
    let run = selftest("write-image-alias", 2);
    assert_eq!(run.status, Some(KERNEL_BUG), "{}", run.output);
    assert!(run.output.contains("permission fault"), "{}", run.output);
    assert!(run.output.contains(", write"), "{}", run.output);
}

#[test]
fn linear_map_is_not_executable() {
    let run = selftest("exec-linear", 1);
    assert_eq!(run.status, Some(KERNEL_BUG), "{}", run.output);
    assert!(
        run.output
            .contains("EC 0x21 (instruction abort from the same EL)")
            && run.output.contains("permission fault"),
        "{}",
        run.output
    );
}

#[test]
fn el2_exception_is_reported_when_entered_at_el2() {
    // A kernel at EL1 that was entered at EL2: the HVC lands in head.s's report-and-halt vectors.
    let run = selftest_with("el2", 2, &["svelt.el=1"]);
    assert_eq!(run.status, Some(KERNEL_BUG), "{}", run.output);
    // HVC from EL1 to EL2: lower-EL AArch64 synchronous vector (entry 8), EC 0x16, imm 0x5e1f.
    assert!(
        run.output
            .contains("svelt: EL2 exception vector=0x0000000000000008 esr=0x000000005a005e1f"),
        "{}",
        run.output
    );
    // A kernel at EL2 (VHE) takes the HVC itself: the ordinary report, with the dump and the
    // backtrace (EC 0x16, HVC from AArch64, its immediate in the ISS).
    let run = selftest("el2", 2);
    assert!(
        run.output.contains("svelt: kernel at EL2 (VHE)"),
        "{}",
        run.output
    );
    assert_eq!(run.status, Some(KERNEL_BUG), "{}", run.output);
    assert!(
        run.output
            .contains("svelt: unexpected exception on cpu 0: El1 Sync"),
        "{}",
        run.output
    );
    assert!(
        run.output.contains("  ESR 0x000000005a005e1f: EC 0x16"),
        "{}",
        run.output
    );
    assert_dump(&run.output);
    let run = selftest("el2", 1);
    assert_eq!(run.status, Some(0), "{}", run.output);
    assert!(
        run.output
            .contains("svelt: selftest el2 skipped: entered at EL1"),
        "{}",
        run.output
    );
}

/// A kernel copy (CPY*, FEAT_MOPS) resumed under the other algorithm option raises EC 0x27 at
/// EL1: the kernel restarts the sequence and the copy comes out right, instead of a report.
#[test]
fn mops_sequence_under_the_other_option_is_restarted() {
    let run = selftest("mops", 1);
    assert!(
        run.output
            .contains("svelt: selftest mops: 1 restart(s), bytes right"),
        "{}",
        run.output
    );
    assert!(
        !run.output.contains("unexpected exception"),
        "{}",
        run.output
    );
}
