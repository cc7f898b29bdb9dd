//! The console as a terminal with someone typing: boots `/bin/tests/tty_typed` as the first
//! process on Svelt and on Linux (reference mode), waits for each `# READY <step>` line, types
//! into the serial line and checks what the terminal echoes and what the program reports
//! (canonical editing, ^D, ^C and ^Z to the foreground group, a raw read). Both kernels must
//! echo the same bytes.

use std::time::Duration;

use svelt_tests::{parse_ktap, ready, Config, Console, Initrd};

const STEP: Duration = Duration::from_secs(60);

fn typed(linux: bool) {
    let cfg = Config {
        initrd: Initrd::Default,
        init: Some("/bin/tests/tty_typed".into()),
        linux,
        timeout: Duration::from_secs(300),
        ..Config::default()
    };
    if !ready(&cfg) {
        return;
    }
    let mut c = Console::boot(&cfg);
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
    for (i, (step, input, echo)) in steps.iter().enumerate() {
        let wait = if i == 0 { cfg.timeout } else { STEP };
        c.expect(&format!("# READY {step}\r\n"), wait);
        c.send(input);
        if !echo.is_empty() {
            let got = c.expect(echo, STEP);
            assert!(
                got == *echo,
                "step {step}: output before the echo {echo:?}: {got:?}"
            );
        }
    }
    c.expect("# Totals:", STEP);
    let run = c.finish(STEP);
    let k = parse_ktap(&run.output);
    assert_eq!(
        k.totals,
        Some((6, 0)),
        "tty_typed's results:\n{}",
        run.output
    );
    assert_eq!(k.init_status, Some(0), "{}", run.output);
}

#[test]
fn typed_svelt() {
    typed(false);
}

#[test]
fn typed_linux() {
    typed(true);
}
