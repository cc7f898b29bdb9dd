//! FP policies for experiments: three switches on the kernel command line that change how the
//! lazy FP/SVE/SME model (`fpstate`) behaves. The defaults are Linux's ABI; each is reported
//! in the boot log (`svelt: fp policy ...`) and in /proc/svelt/fpstat (a `policy ...` line),
//! both in the fixed form [`Policy::write`] gives and [`Policy::parse`] reads back.
//!
//! - `svelt.fp=lazy|eager`: `lazy` (default) loads a task's registers at return to user mode
//!   only when this CPU does not already hold them. `eager` trusts no ownership across a
//!   context switch: switching a task out saves it and forgets that the CPU holds it, so the
//!   first return to user mode after every switch reloads it, even when nothing else used the
//!   registers in between (the pre-lazy model). Syscalls and exceptions that do not switch
//!   reload nothing under either policy (the registers are the task's; nothing was saved).
//! - `svelt.sve_syscall=discard|keep`: `discard` (default, Linux 6.16) zeroes the SVE state
//!   beyond V0-V31 at every syscall. `keep` preserves Z/P/FFR across syscalls in
//!   non-streaming mode — NOT the Linux ABI, for measurement only (marked `abi=NON-LINUX`).
//!   Streaming mode still ends at a syscall as on Linux (SMSTOP SM; ZA kept) under both.
//! - `svelt.sme_trap=lazy|eager`: `lazy` (default) traps the first SME use of a program and
//!   enables SME then. `eager` enables SME for every program at exec (and for fork/clone
//!   children), so no SME access trap is taken; SVCR starts at 0 and ZA/streaming state read
//!   as zero on first use, as under `lazy` (the architecture zeroes them on SMSTART).

use core::fmt;

/// `svelt.fp=`: when the task's registers are reloaded on the way back to user mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restore {
    /// Only if this CPU does not already hold them (default).
    #[default]
    Lazy,
    /// After every context switch away from the task.
    Eager,
}

/// `svelt.sve_syscall=`: what a syscall does to SVE state beyond V0-V31 (non-streaming).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SveSyscall {
    /// Zeroed (Linux 6.16+; default).
    #[default]
    Discard,
    /// Preserved: a deliberate non-Linux mode for measurement.
    Keep,
}

/// `svelt.sme_trap=`: when a program gets EL0 SME access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SmeAccess {
    /// At its first SME instruction, which traps (default).
    #[default]
    Lazy,
    /// At exec (and fork/clone): no SME access trap.
    Eager,
}

/// The three switches together. `Default` is Linux's ABI.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    pub fp: Restore,
    pub sve_syscall: SveSyscall,
    pub sme_trap: SmeAccess,
}

/// A `svelt.*` policy word whose value is not one of the names: the default stays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadValue<'a> {
    pub key: &'a str,
    pub value: &'a str,
}

impl Restore {
    fn name(self) -> &'static str {
        match self {
            Restore::Lazy => "lazy",
            Restore::Eager => "eager",
        }
    }
    fn from_name(s: &str) -> Option<Restore> {
        [Restore::Lazy, Restore::Eager]
            .into_iter()
            .find(|v| v.name() == s)
    }
}

impl SveSyscall {
    fn name(self) -> &'static str {
        match self {
            SveSyscall::Discard => "discard",
            SveSyscall::Keep => "keep",
        }
    }
    fn from_name(s: &str) -> Option<SveSyscall> {
        [SveSyscall::Discard, SveSyscall::Keep]
            .into_iter()
            .find(|v| v.name() == s)
    }
}

impl SmeAccess {
    fn name(self) -> &'static str {
        match self {
            SmeAccess::Lazy => "lazy",
            SmeAccess::Eager => "eager",
        }
    }
    fn from_name(s: &str) -> Option<SmeAccess> {
        [SmeAccess::Lazy, SmeAccess::Eager]
            .into_iter()
            .find(|v| v.name() == s)
    }
}

impl Policy {
    /// Linux's behaviour (the default).
    pub const LINUX: Policy = Policy {
        fp: Restore::Lazy,
        sve_syscall: SveSyscall::Discard,
        sme_trap: SmeAccess::Lazy,
    };

    /// Whether a program sees exactly Linux's ABI (`eager` restores and SME enables do not
    /// change what a program can observe, only what they cost; `keep` does).
    pub fn keeps_abi(&self) -> bool {
        self.sve_syscall == SveSyscall::Discard
    }

    /// Applies one command-line word if it is a policy key: `Ok(true)` when it was one,
    /// `Err` for a policy key with an unknown value (the setting is left as it was).
    pub fn apply<'a>(&mut self, key: &'a str, value: &'a str) -> Result<bool, BadValue<'a>> {
        let bad = BadValue { key, value };
        match key {
            "svelt.fp" => self.fp = Restore::from_name(value).ok_or(bad)?,
            "svelt.sve_syscall" => self.sve_syscall = SveSyscall::from_name(value).ok_or(bad)?,
            "svelt.sme_trap" => self.sme_trap = SmeAccess::from_name(value).ok_or(bad)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The fixed text form: `fp=lazy sve_syscall=discard sme_trap=lazy abi=linux`
    /// (`abi=NON-LINUX` when a program can tell the difference).
    pub fn write(&self, out: &mut impl fmt::Write) -> fmt::Result {
        write!(
            out,
            "fp={} sve_syscall={} sme_trap={} abi={}",
            self.fp.name(),
            self.sve_syscall.name(),
            self.sme_trap.name(),
            if self.keeps_abi() {
                "linux"
            } else {
                "NON-LINUX"
            }
        )
    }

    /// Reads the text form back (the `abi=` word is checked against the rest); None if any
    /// word is missing, unknown or inconsistent.
    pub fn parse(text: &str) -> Option<Policy> {
        let mut p = Policy::LINUX;
        let (mut fp, mut sve, mut sme, mut abi) = (false, false, false, None);
        for word in text.split_ascii_whitespace() {
            let (k, v) = word.split_once('=')?;
            match k {
                "fp" => (p.fp, fp) = (Restore::from_name(v)?, true),
                "sve_syscall" => (p.sve_syscall, sve) = (SveSyscall::from_name(v)?, true),
                "sme_trap" => (p.sme_trap, sme) = (SmeAccess::from_name(v)?, true),
                "abi" => abi = Some(v),
                _ => return None,
            }
        }
        let abi_ok = match abi? {
            "linux" => p.keeps_abi(),
            "NON-LINUX" => !p.keeps_abi(),
            _ => false,
        };
        (fp && sve && sme && abi_ok).then_some(p)
    }

    /// A compact encoding for one atomic word (bit 0 fp, bit 1 sve_syscall, bit 2 sme_trap).
    pub const fn to_bits(self) -> u8 {
        (matches!(self.fp, Restore::Eager) as u8)
            | (matches!(self.sve_syscall, SveSyscall::Keep) as u8) << 1
            | (matches!(self.sme_trap, SmeAccess::Eager) as u8) << 2
    }

    pub const fn from_bits(b: u8) -> Policy {
        Policy {
            fp: if b & 1 != 0 {
                Restore::Eager
            } else {
                Restore::Lazy
            },
            sve_syscall: if b & 2 != 0 {
                SveSyscall::Keep
            } else {
                SveSyscall::Discard
            },
            sme_trap: if b & 4 != 0 {
                SmeAccess::Eager
            } else {
                SmeAccess::Lazy
            },
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f)
    }
}

/// The /proc/svelt/fpstat line naming the policy: `policy ` and the text form.
pub const FPSTAT_KEY: &str = "policy";

/// Finds the policy in an fpstat file's text (None: no well-formed `policy` line).
pub fn from_fpstat(text: &str) -> Option<Policy> {
    text.lines()
        .find_map(|l| l.strip_prefix(FPSTAT_KEY)?.strip_prefix(' '))
        .and_then(Policy::parse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::{String, ToString};

    fn all() -> impl Iterator<Item = Policy> {
        (0..8).map(Policy::from_bits)
    }

    #[test]
    fn default_is_linux_and_its_text() {
        assert_eq!(Policy::default(), Policy::LINUX);
        assert_eq!(
            Policy::LINUX.to_string(),
            "fp=lazy sve_syscall=discard sme_trap=lazy abi=linux"
        );
        assert!(Policy::LINUX.keeps_abi());
    }

    #[test]
    fn keep_is_marked_non_linux() {
        let p = Policy {
            sve_syscall: SveSyscall::Keep,
            ..Policy::LINUX
        };
        assert!(!p.keeps_abi());
        assert_eq!(
            p.to_string(),
            "fp=lazy sve_syscall=keep sme_trap=lazy abi=NON-LINUX"
        );
        // The eager switches cost differently but keep the ABI.
        let e = Policy {
            fp: Restore::Eager,
            sme_trap: SmeAccess::Eager,
            ..Policy::LINUX
        };
        assert!(e.keeps_abi());
    }

    #[test]
    fn text_and_bits_round_trip() {
        for p in all() {
            assert_eq!(Policy::from_bits(p.to_bits()), p);
            assert_eq!(Policy::parse(&p.to_string()), Some(p), "{p}");
            let fpstat = String::from("sve_traps 3\npolicy ") + &p.to_string() + "\nza_saves 0\n";
            assert_eq!(from_fpstat(&fpstat), Some(p));
        }
    }

    #[test]
    fn parse_rejects_junk_and_inconsistent_abi() {
        for bad in [
            "",
            "fp=lazy sve_syscall=discard sme_trap=lazy",
            "fp=lazy sve_syscall=discard sme_trap=lazy abi=NON-LINUX",
            "fp=lazy sve_syscall=keep sme_trap=lazy abi=linux",
            "fp=slow sve_syscall=discard sme_trap=lazy abi=linux",
            "fp=lazy sve_syscall=discard sme_trap=lazy abi=linux extra=1",
            "fp=lazy sve_syscall=discard sme_trap abi=linux",
        ] {
            assert_eq!(Policy::parse(bad), None, "{bad:?}");
        }
        assert_eq!(from_fpstat("sve_traps 1\n"), None);
        assert_eq!(from_fpstat("policyfp=lazy\n"), None);
    }

    #[test]
    fn apply_sets_known_values_and_reports_bad_ones() {
        let mut p = Policy::LINUX;
        assert_eq!(p.apply("svelt.fp", "eager"), Ok(true));
        assert_eq!(p.apply("svelt.sve_syscall", "keep"), Ok(true));
        assert_eq!(p.apply("svelt.sme_trap", "eager"), Ok(true));
        assert_eq!(p, Policy::from_bits(7));
        assert_eq!(p.apply("svelt.mops", "off"), Ok(false));
        assert_eq!(
            p.apply("svelt.fp", "fast"),
            Err(BadValue {
                key: "svelt.fp",
                value: "fast"
            })
        );
        assert_eq!(
            p.apply("svelt.sme_trap", ""),
            Err(BadValue {
                key: "svelt.sme_trap",
                value: ""
            })
        );
        // A bad value leaves the earlier setting alone.
        assert_eq!(p, Policy::from_bits(7));
        assert_eq!(p.apply("svelt.fp", "lazy"), Ok(true));
        assert_eq!(p.fp, Restore::Lazy);
    }
}
