//! The console as a terminal with someone typing: boots `/bin/tests/tty_typed` as the first
//! process on Svelt and on Linux (reference mode), waits for each `# READY <step>` line, types
//! into the serial line and checks what the terminal echoes and what the program reports
//! (canonical editing, ^D, ^C and ^Z to the foreground group, a raw read). Both kernels must
//! echo the same bytes.

use std::time::Duration;

use svelt_tests::{ready, Config, Console, Initrd};

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
    let c = Console::boot(&cfg);
    svelt_tests::type_tty_session(c, cfg.timeout, STEP);
}

#[test]
fn typed_svelt() {
    typed(false);
}

#[test]
fn typed_linux() {
    typed(true);
}
