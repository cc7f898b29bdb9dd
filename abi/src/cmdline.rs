//! The kernel command line (/chosen/bootargs).
//!
//! Words are separated by white space; each is `key=value` or a bare `flag`. Unknown words are
//! kept for later consumers (as Linux passes them to init), so nothing here rejects input.

/// Log verbosity, from `log=` (names) or Linux's `loglevel=` (numbers) and `quiet`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    fn from_name(s: &str) -> Option<LogLevel> {
        Some(match s {
            "off" => LogLevel::Off,
            "error" => LogLevel::Error,
            "warn" => LogLevel::Warn,
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            "trace" => LogLevel::Trace,
            _ => return None,
        })
    }

    /// Linux console log levels: messages below N are shown (KERN_ERR 3, WARNING 4, INFO 6, DEBUG 7).
    fn from_linux(n: u32) -> LogLevel {
        match n {
            0 => LogLevel::Off,
            1..=4 => LogLevel::Error,
            5 => LogLevel::Warn,
            6..=7 => LogLevel::Info,
            8 => LogLevel::Debug,
            _ => LogLevel::Trace,
        }
    }
}

/// How the run's final status leaves the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitVia {
    /// PSCI SYSTEM_OFF after printing `svelt: exit status N` (works everywhere).
    Psci,
    /// Arm semihosting SYS_EXIT with the status (QEMU `-semihosting`): the host sees it directly.
    Semihosting,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cmdline<'a> {
    pub log: LogLevel,
    /// `init=`: the first user program.
    pub init: Option<&'a str>,
    pub exit: ExitVia,
    /// `svelt.selftest=`: a boot-time self test (e.g. `fault`, `panic`), for the harness.
    pub selftest: Option<&'a str>,
    /// `svelt.coredump=semihosting`: each core file is also written on the host through Arm
    /// semihosting, as `DIR/core.COMM.PID` with DIR from `svelt.coredump_dir=` (default: QEMU's
    /// working directory).
    pub coredump_semihosting: bool,
    pub coredump_dir: Option<&'a str>,
    /// `svelt.mops=off`: the kernel's copies keep to register loops even where every CPU has
    /// CPY*/SET* (so the matrix still runs the code boards without FEAT_MOPS run).
    pub mops: bool,
    raw: &'a str,
}

impl<'a> Cmdline<'a> {
    pub fn parse(raw: &'a str) -> Cmdline<'a> {
        let mut c = Cmdline {
            log: LogLevel::Info,
            init: None,
            exit: ExitVia::Psci,
            selftest: None,
            coredump_semihosting: false,
            coredump_dir: None,
            mops: true,
            raw,
        };
        for word in raw.split_ascii_whitespace() {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            match key {
                "log" => c.log = LogLevel::from_name(value).unwrap_or(c.log),
                "loglevel" => {
                    if let Ok(n) = value.parse() {
                        c.log = LogLevel::from_linux(n)
                    }
                }
                "quiet" => c.log = LogLevel::Warn,
                "init" if !value.is_empty() => c.init = Some(value),
                "svelt.exit" => match value {
                    "semihosting" => c.exit = ExitVia::Semihosting,
                    "psci" => c.exit = ExitVia::Psci,
                    _ => {}
                },
                "svelt.selftest" if !value.is_empty() => c.selftest = Some(value),
                "svelt.coredump" => c.coredump_semihosting = value == "semihosting",
                "svelt.coredump_dir" if !value.is_empty() => c.coredump_dir = Some(value),
                "svelt.mops" => c.mops = value != "off",
                _ => {}
            }
        }
        c
    }

    /// The whole command line as given.
    pub fn raw(&self) -> &'a str {
        self.raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = Cmdline::parse("");
        assert_eq!(c.log, LogLevel::Info);
        assert_eq!(c.init, None);
        assert_eq!(c.exit, ExitVia::Psci);
        assert_eq!(c.selftest, None);
    }

    #[test]
    fn all_keys() {
        let c = Cmdline::parse("  console=ttyAMA0 log=debug init=/bin/sh   svelt.exit=semihosting svelt.selftest=fault");
        assert_eq!(c.log, LogLevel::Debug);
        assert_eq!(c.init, Some("/bin/sh"));
        assert_eq!(c.exit, ExitVia::Semihosting);
        assert_eq!(c.selftest, Some("fault"));
        assert!(c.raw().contains("console=ttyAMA0"));
        assert!(!c.coredump_semihosting);
        let c = Cmdline::parse("svelt.coredump=semihosting svelt.coredump_dir=/tmp/x");
        assert!(c.coredump_semihosting);
        assert_eq!(c.coredump_dir, Some("/tmp/x"));
        assert!(!Cmdline::parse("svelt.coredump=none").coredump_semihosting);
        assert!(c.mops);
        assert!(!Cmdline::parse("svelt.mops=off").mops);
    }

    #[test]
    fn linux_levels_and_later_words_win() {
        assert_eq!(Cmdline::parse("loglevel=3").log, LogLevel::Error);
        assert_eq!(Cmdline::parse("loglevel=7").log, LogLevel::Info);
        assert_eq!(Cmdline::parse("loglevel=8").log, LogLevel::Debug);
        assert_eq!(Cmdline::parse("quiet").log, LogLevel::Warn);
        assert_eq!(Cmdline::parse("quiet log=trace").log, LogLevel::Trace);
        assert_eq!(Cmdline::parse("init=/a init=/b").init, Some("/b"));
    }

    #[test]
    fn junk_is_ignored() {
        let c = Cmdline::parse("log=loud loglevel=x init= svelt.exit=carrier-pigeon = ==");
        assert_eq!(
            c,
            Cmdline::parse("log=loud loglevel=x init= svelt.exit=carrier-pigeon = ==")
        );
        assert_eq!(c.log, LogLevel::Info);
        assert_eq!(c.init, None);
        assert_eq!(c.exit, ExitVia::Psci);
    }
}
