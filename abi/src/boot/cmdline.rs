//! The kernel command line (/chosen/bootargs).
//!
//! Words are separated by white space; each is `key=value` or a bare `flag`. Unknown words are
//! kept for later consumers (as Linux passes them to init), so nothing here rejects input.

use crate::fp::fppolicy::{BadValue, Policy};

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

    /// The Linux console log level that shows what this level names: records of a level below
    /// it are printed (Svelt's error, warn, info and debug are Linux's 3, 4, 6 and 7).
    pub fn console_level(self) -> u8 {
        match self {
            LogLevel::Off => 1,
            LogLevel::Error => 4,
            LogLevel::Warn => 5,
            LogLevel::Info => 7,
            LogLevel::Debug | LogLevel::Trace => 8,
        }
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
    /// `svelt.el=1|2`: the level the kernel runs at when entered at EL2 (default 2, with VHE
    /// where the CPU has it). The boot code reads `svelt.el=1` from the device tree itself,
    /// before anything else runs; the kernel checks it agreed.
    pub el: Option<u8>,
    /// `svelt.vmid_bits=N`: KVM hands out VMIDs 1..2^N only (N from 2 to the CPU's 8 or 16,
    /// raised to more VMIDs than CPUs), so that tests reach new VMID generations quickly.
    pub vmid_bits: Option<u8>,
    /// `svelt.fp=`, `svelt.sve_syscall=`, `svelt.sme_trap=` (see `fppolicy`).
    pub fp_policy: Policy,
    /// Policy words with an unknown value, in order (the first few): the kernel warns about
    /// each; the setting keeps its default (or an earlier good value).
    pub fp_policy_bad: [Option<BadValue<'a>>; 4],
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
            el: None,
            vmid_bits: None,
            fp_policy: Policy::LINUX,
            fp_policy_bad: [None; 4],
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
                // Linux's CONSOLE_LOGLEVEL_QUIET (4): errors and worse.
                "quiet" => c.log = LogLevel::Error,
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
                "svelt.vmid_bits" => {
                    c.vmid_bits = value.parse().ok().filter(|b| (2..=16).contains(b))
                }
                "svelt.el" => match value {
                    "1" => c.el = Some(1),
                    "2" => c.el = Some(2),
                    _ => {}
                },
                _ => {
                    if let Err(bad) = c.fp_policy.apply(key, value) {
                        if let Some(slot) = c.fp_policy_bad.iter_mut().find(|s| s.is_none()) {
                            *slot = Some(bad);
                        }
                    }
                }
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
        assert_eq!(c.fp_policy, Policy::LINUX);
        assert_eq!(c.fp_policy_bad, [None; 4]);
    }

    #[test]
    fn fp_policy_words() {
        use crate::fp::fppolicy::{Restore, SmeAccess, SveSyscall};
        let c = Cmdline::parse("svelt.fp=eager svelt.sve_syscall=keep svelt.sme_trap=eager");
        assert_eq!(c.fp_policy.fp, Restore::Eager);
        assert_eq!(c.fp_policy.sve_syscall, SveSyscall::Keep);
        assert_eq!(c.fp_policy.sme_trap, SmeAccess::Eager);
        assert_eq!(c.fp_policy_bad, [None; 4]);
        // Unknown values: reported, default kept; a later good word still counts.
        let c =
            Cmdline::parse("svelt.fp=fast svelt.sme_trap svelt.sve_syscall=keep svelt.fp=eager");
        assert_eq!(c.fp_policy.fp, Restore::Eager);
        assert_eq!(c.fp_policy.sme_trap, SmeAccess::Lazy);
        assert_eq!(c.fp_policy.sve_syscall, SveSyscall::Keep);
        assert_eq!(
            c.fp_policy_bad[..2],
            [
                Some(BadValue {
                    key: "svelt.fp",
                    value: "fast"
                }),
                Some(BadValue {
                    key: "svelt.sme_trap",
                    value: ""
                })
            ]
        );
        assert_eq!(c.fp_policy_bad[2], None);
        // More bad words than slots: the first four are kept, nothing overflows.
        let c = Cmdline::parse("svelt.fp=1 svelt.fp=2 svelt.fp=3 svelt.fp=4 svelt.fp=5");
        assert_eq!(
            c.fp_policy_bad[3],
            Some(BadValue {
                key: "svelt.fp",
                value: "4"
            })
        );
        assert_eq!(c.fp_policy, Policy::LINUX);
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
        assert_eq!(Cmdline::parse("svelt.vmid_bits=3").vmid_bits, Some(3));
        assert_eq!(Cmdline::parse("svelt.vmid_bits=1").vmid_bits, None);
        assert_eq!(Cmdline::parse("svelt.vmid_bits=x").vmid_bits, None);
        assert_eq!(c.el, None);
        assert_eq!(Cmdline::parse("svelt.el=1").el, Some(1));
        assert_eq!(Cmdline::parse("svelt.el=2 x").el, Some(2));
        assert_eq!(Cmdline::parse("svelt.el=3").el, None);
    }

    #[test]
    fn linux_levels_and_later_words_win() {
        assert_eq!(Cmdline::parse("loglevel=3").log, LogLevel::Error);
        assert_eq!(Cmdline::parse("loglevel=7").log, LogLevel::Info);
        assert_eq!(Cmdline::parse("loglevel=8").log, LogLevel::Debug);
        assert_eq!(Cmdline::parse("quiet").log, LogLevel::Error);
        assert_eq!(LogLevel::Error.console_level(), 4);
        assert_eq!(LogLevel::Info.console_level(), 7);
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
