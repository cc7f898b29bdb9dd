//! Vector-length control: the rules behind prctl(PR_{SVE,SME}_{SET,GET}_VL), the VL fields of the
//! ptrace regsets and /proc/sys/abi/{sve,sme}_default_vector_length.
//!
//! Each task has a current VL, a deferred VL for its next execve (0 = none) and an INHERIT flag,
//! separately for SVE and for SME. The functions here decide what a request does to that state;
//! the caller carries out a live VL change (saving and converting the register state) and only
//! then commits `SetVl::new`, so a failed change (ENOMEM) leaves the task untouched.
//!
//! ptrace passes the same request with the regset header's flags moved up: `vl | flags << 16`
//! (SVE_PT_VL_INHERIT / SVE_PT_VL_ONEXEC are the PR_ flags shifted right by 16).

use crate::fp::vl::VlSet;
use crate::uapi::errno::Errno;
use crate::uapi::sys::{PR_SVE_SET_VL_ONEXEC, PR_SVE_VL_INHERIT, PR_SVE_VL_LEN_MASK};

/// The smallest vector length the ABI can express, in bytes.
pub const SVE_VL_MIN: u32 = 16;
/// The largest vector length the ABI can express (512 quadwords), in bytes.
pub const SVE_VL_MAX: u32 = 8192;
/// The largest length the architecture defines today; larger requests are clamped to it.
pub const VL_ARCH_MAX: u32 = 256;

/// Which vector length: SVE's, or SME's streaming one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VecKind {
    Sve,
    Sme,
}

impl VecKind {
    /// The sysctl under /proc/sys/abi.
    pub const fn sysctl_name(self) -> &'static str {
        match self {
            VecKind::Sve => "sve_default_vector_length",
            VecKind::Sme => "sme_default_vector_length",
        }
    }

    /// The boot default aims at the largest length that keeps signal frames at their pre-SVE
    /// bound: 64 bytes for SVE, 32 for SME (whose frames also carry ZA).
    const fn boot_target(self) -> u32 {
        match self {
            VecKind::Sve => 64,
            VecKind::Sme => 32,
        }
    }
}

/// One task's state for one `VecKind`, lengths in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskVl {
    /// The length in force now.
    pub cur: u32,
    /// The length the next execve installs; 0 means the system default.
    pub onexec: u32,
    /// Keep `onexec` across execve (PR_SVE_VL_INHERIT).
    pub inherit: bool,
}

/// What a SET_VL request decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetVl {
    /// The task's state once the request has been carried out.
    pub new: TaskVl,
    /// `Some(vl)` when the current length changes now: the caller must convert the live state
    /// before committing `new`.
    pub live_change: Option<u32>,
    /// The prctl return value.
    pub ret: u64,
}

/// `sve_vl_valid`: a multiple of 16 bytes within what the ABI can express.
pub const fn sve_vl_valid(vl: u32) -> bool {
    vl.is_multiple_of(16) && vl >= SVE_VL_MIN && vl <= SVE_VL_MAX
}

/// The lengths requests round to. SVE always implements 16 bytes, so it is assumed even if the
/// probe missed it (Linux patches its map the same way); SME has no mandatory length.
fn usable(kind: VecKind, supported: VlSet) -> VlSet {
    let mut set = supported;
    if kind == VecKind::Sve && !set.is_empty() {
        set.insert_bytes(SVE_VL_MIN);
    }
    set
}

/// Linux's `find_supported_vector_length`: clamp into [min, max], then round down to the largest
/// supported length. `None` when the extension is unsupported.
pub fn find_supported_vector_length(kind: VecKind, supported: VlSet, vl: u32) -> Option<u32> {
    // round_bytes already clamps: above the maximum gives the maximum, below the minimum the
    // minimum.
    usable(kind, supported).round_bytes(vl)
}

/// The largest supported length, if the extension is supported.
pub fn max_vl(kind: VecKind, supported: VlSet) -> Option<u32> {
    usable(kind, supported).max_bytes()
}

/// PR_SVE_SET_VL / PR_SME_SET_VL: `arg` is the prctl argument (length | flags).
pub fn set_vl(kind: VecKind, arg: u64, supported: VlSet, task: &TaskVl) -> Result<SetVl, Errno> {
    let flags = arg & !PR_SVE_VL_LEN_MASK;
    let requested = (arg & PR_SVE_VL_LEN_MASK) as u32;
    if supported.is_empty()
        || flags & !(PR_SVE_VL_INHERIT | PR_SVE_SET_VL_ONEXEC) != 0
        || !sve_vl_valid(requested)
    {
        return Err(Errno::EINVAL);
    }
    let onexec = flags & PR_SVE_SET_VL_ONEXEC != 0;
    let inherit = flags & PR_SVE_VL_INHERIT != 0;
    let vl = find_supported_vector_length(kind, supported, requested.min(VL_ARCH_MAX))
        .ok_or(Errno::EINVAL)?;

    let live_change = (!onexec && vl != task.cur).then_some(vl);
    let new = TaskVl {
        cur: live_change.unwrap_or(task.cur),
        // Any plain request cancels a pending deferred change.
        onexec: if onexec || inherit { vl } else { 0 },
        inherit,
    };
    let shown = if onexec { new.onexec } else { new.cur };
    Ok(SetVl {
        new,
        live_change,
        ret: u64::from(shown) | if inherit { PR_SVE_VL_INHERIT } else { 0 },
    })
}

/// PR_SVE_GET_VL / PR_SME_GET_VL. A pending deferred length is not reported.
pub fn get_vl(task: &TaskVl) -> u64 {
    u64::from(task.cur) | if task.inherit { PR_SVE_VL_INHERIT } else { 0 }
}

/// execve: the deferred length if one is set, else the system default; the deferred length is
/// then forgotten unless INHERIT is set, which itself survives.
pub fn on_exec(task: &TaskVl, default_vl: u32) -> TaskVl {
    TaskVl {
        cur: if task.onexec != 0 {
            task.onexec
        } else {
            default_vl
        },
        onexec: if task.inherit { task.onexec } else { 0 },
        inherit: task.inherit,
    }
}

/// fork and clone: the child starts with the parent's lengths, deferred length and flag.
pub fn on_fork(task: &TaskVl) -> TaskVl {
    *task
}

/// The system default chosen at boot: SVE's largest length up to 64 bytes; SME's largest up to
/// 32 bytes, else its smallest. 0 when the extension is unsupported.
pub fn boot_default(kind: VecKind, supported: VlSet) -> u32 {
    find_supported_vector_length(kind, supported, kind.boot_target()).unwrap_or(0)
}

/// A write to `/proc/sys/abi/{sve,sme}_default_vector_length`: the new default.
///
/// The text is one integer as `proc_dointvec` reads it (see `parse_dointvec`); -1 asks for the
/// maximum; anything else must pass `sve_vl_valid` and is then rounded like a prctl request.
/// EINVAL when the extension is unsupported (Linux does not create the file then). Returns the
/// new default and the bytes the write consumed (what write() returns: see `parse_dointvec`).
pub fn default_vl_write(
    kind: VecKind,
    text: &[u8],
    supported: VlSet,
) -> Result<(u32, usize), Errno> {
    let (value, used) = parse_dointvec(text)?;
    let vl = if value == -1 {
        max_vl(kind, supported).ok_or(Errno::EINVAL)?
    } else {
        u32::try_from(value).map_err(|_| Errno::EINVAL)?
    };
    if !sve_vl_valid(vl) {
        return Err(Errno::EINVAL);
    }
    let vl = find_supported_vector_length(kind, supported, vl).ok_or(Errno::EINVAL)?;
    Ok((vl, used))
}

/// A read of the sysctl: `"64\n"`, truncated to `buf`. Returns the bytes written.
///
/// Linux answers any read at a non-zero file offset with end of file (0 bytes), even after a
/// truncated first read; the caller applies that rule.
pub fn default_vl_read(vl: u32, buf: &mut [u8]) -> usize {
    let mut text = [0u8; 11];
    let mut start = text.len() - 1;
    text[start] = b'\n';
    let mut v = vl;
    loop {
        start -= 1;
        text[start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let n = (text.len() - start).min(buf.len());
    buf[..n].copy_from_slice(&text[start..start + n]);
    n
}

/// Linux's cap on one sysctl write (PAGE_SIZE - 1); bytes past it are not looked at.
pub(crate) const SYSCTL_WRITE_MAX: usize = 4095;
/// `proc_get_long` copies at most this many bytes; a number filling all of them is refused.
const NUMBER_MAX: usize = 21;

/// One `int` as `proc_dointvec` parses a write at file offset 0: leading whitespace (isspace),
/// an optional `-` (no `+`), digits in C notation (`0x40` hex, `0100` octal, else decimal), then
/// end of text or a space, tab or newline. Trailing whitespace is consumed; anything after it is
/// left unread. Returns the value and how many bytes the write consumed (what write() returns).
///
/// Linux ignores a write at a non-zero offset and reports it fully written; the caller applies
/// that rule.
pub fn parse_dointvec(text: &[u8]) -> Result<(i32, usize), Errno> {
    parse_one(text, |neg, magnitude| {
        if neg {
            if magnitude > 1 << 31 {
                return Err(Errno::EINVAL);
            }
            Ok((magnitude as i64).wrapping_neg() as i32)
        } else {
            i32::try_from(magnitude).map_err(|_| Errno::EINVAL)
        }
    })
}

/// One number of a sysctl write at offset 0, as `proc_dointvec`-style handlers read it: blanks,
/// the number (`value` turns its sign and magnitude into the result, or refuses it), blanks.
/// Returns the value and the bytes the write consumed.
pub(crate) fn parse_one<T>(
    text: &[u8],
    value: impl FnOnce(bool, u64) -> Result<T, Errno>,
) -> Result<(T, usize), Errno> {
    let mut rest = &text[..text.len().min(SYSCTL_WRITE_MAX)];
    skip_spaces(&mut rest);
    if rest.is_empty() {
        return Err(Errno::EINVAL);
    }
    let (neg, magnitude, used) = get_long(rest)?;
    let v = value(neg, magnitude)?;
    rest = &rest[used..];
    skip_spaces(&mut rest);
    Ok((v, text.len() - rest.len()))
}

pub(crate) fn skip_spaces(s: &mut &[u8]) {
    // C isspace: space, \t, \n, \v, \f, \r.
    while let [b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r', tail @ ..] = *s {
        *s = tail;
    }
}

/// `proc_get_long`: (negative, magnitude, bytes used).
pub(crate) fn get_long(s: &[u8]) -> Result<(bool, u64, usize), Errno> {
    let window = &s[..s.len().min(NUMBER_MAX)];
    let neg = window[0] == b'-' && s.len() > 1;
    let mut at = usize::from(neg);
    if !window.get(at).is_some_and(u8::is_ascii_digit) {
        return Err(Errno::EINVAL);
    }
    let base = if window[at] == b'0' {
        if matches!(window.get(at + 1), Some(b'x' | b'X'))
            && window.get(at + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            at += 2;
            16
        } else {
            8
        }
    } else {
        10
    };
    let mut magnitude: u64 = 0;
    while let Some(digit) = window.get(at).and_then(|&c| (c as char).to_digit(base)) {
        magnitude = magnitude
            .checked_mul(u64::from(base))
            .and_then(|m| m.checked_add(u64::from(digit)))
            .ok_or(Errno::EINVAL)?;
        at += 1;
    }
    // A number that fills the whole window might continue past it.
    if at == NUMBER_MAX {
        return Err(Errno::EINVAL);
    }
    if at < s.len() && !matches!(s[at], b' ' | b'\t' | b'\n') {
        return Err(Errno::EINVAL);
    }
    Ok((neg, magnitude, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const INHERIT: u64 = PR_SVE_VL_INHERIT;
    const ONEXEC: u64 = PR_SVE_SET_VL_ONEXEC;

    fn set(vls: &[u32]) -> VlSet {
        let mut s = VlSet::EMPTY;
        for &v in vls {
            s.insert_bytes(v);
        }
        s
    }

    /// QEMU's default SVE set: every multiple of 16 up to 256.
    fn all() -> VlSet {
        VlSet::from_bits(0xffff)
    }

    fn task(cur: u32) -> TaskVl {
        TaskVl {
            cur,
            onexec: 0,
            inherit: false,
        }
    }

    fn sve(arg: u64, supported: VlSet, t: &TaskVl) -> Result<SetVl, Errno> {
        set_vl(VecKind::Sve, arg, supported, t)
    }

    #[test]
    fn unknown_flags_are_refused() {
        for flags in [1 << 16, 1 << 19, 1 << 63, INHERIT | 1 << 20, 1 << 32] {
            assert_eq!(sve(64 | flags, all(), &task(64)), Err(Errno::EINVAL));
        }
        assert!(sve(64 | INHERIT | ONEXEC, all(), &task(64)).is_ok());
    }

    #[test]
    fn invalid_lengths_are_refused() {
        for vl in [0, 8, 17, 41, 8192 + 16, 0xffff] {
            assert_eq!(sve(vl, all(), &task(64)), Err(Errno::EINVAL), "{vl}");
        }
        // 8192 (SVE_VL_MAX) is valid and means "the maximum".
        assert_eq!(sve(8192, all(), &task(64)).unwrap().new.cur, 256);
    }

    #[test]
    fn unsupported_extension_is_refused() {
        assert_eq!(
            set_vl(VecKind::Sme, 32, VlSet::EMPTY, &task(0)),
            Err(Errno::EINVAL)
        );
        assert_eq!(sve(16, VlSet::EMPTY, &task(0)), Err(Errno::EINVAL));
    }

    #[test]
    fn lengths_above_the_architecture_clamp_to_256_then_round() {
        assert_eq!(sve(512, all(), &task(64)).unwrap().new.cur, 256);
        assert_eq!(
            sve(4096, set(&[16, 32, 64]), &task(16)).unwrap().new.cur,
            64
        );
    }

    #[test]
    fn requests_round_down_to_a_supported_length() {
        let small = set(&[16, 32, 64]);
        assert_eq!(sve(48, small, &task(16)).unwrap().new.cur, 32);
        assert_eq!(sve(256, small, &task(16)).unwrap().new.cur, 64);
        assert_eq!(sve(80, all(), &task(16)).unwrap().new.cur, 80);
        assert_eq!(sve(16, set(&[16]), &task(16)).unwrap().new.cur, 16);
        let sme = set(&[32, 64, 256]);
        let r = |vl| set_vl(VecKind::Sme, vl, sme, &task(32)).unwrap().new.cur;
        assert_eq!(r(48), 32);
        assert_eq!(r(128), 64);
        assert_eq!(r(240), 64);
        assert_eq!(r(8192), 256);
    }

    #[test]
    fn sme_below_the_smallest_gives_the_smallest() {
        let sme = set(&[32, 64, 256]);
        let got = set_vl(VecKind::Sme, 16, sme, &task(64)).unwrap();
        assert_eq!(got.new.cur, 32);
        assert_eq!(got.live_change, Some(32));
        assert_eq!(got.ret, 32);
    }

    #[test]
    fn sve_always_has_16() {
        // A probe that somehow missed 16 bytes: SVE still rounds to it (the architecture
        // mandates it), SME does not.
        let odd = set(&[32, 64]);
        assert_eq!(sve(16, odd, &task(32)).unwrap().new.cur, 16);
        assert_eq!(
            set_vl(VecKind::Sme, 16, odd, &task(32)).unwrap().new.cur,
            32
        );
    }

    #[test]
    fn a_different_length_changes_live() {
        let got = sve(32, all(), &task(64)).unwrap();
        assert_eq!(got.live_change, Some(32));
        assert_eq!(got.new, task(32));
        assert_eq!(got.ret, 32);
    }

    #[test]
    fn the_same_length_is_not_a_change() {
        let got = sve(64, all(), &task(64)).unwrap();
        assert_eq!(got.live_change, None);
        assert_eq!(got.new, task(64));
        // Rounding to the current length is not a change either.
        let got = sve(48, set(&[16, 32, 64]), &task(32)).unwrap();
        assert_eq!(got.live_change, None);
        assert_eq!(got.ret, 32);
    }

    #[test]
    fn onexec_defers() {
        let got = sve(128 | ONEXEC, all(), &task(64)).unwrap();
        assert_eq!(got.live_change, None);
        assert_eq!(
            got.new,
            TaskVl {
                cur: 64,
                onexec: 128,
                inherit: false
            }
        );
        // The return value is the deferred length, rounded.
        assert_eq!(got.ret, 128);
        let got = sve(208 | ONEXEC, set(&[16, 32, 64]), &task(16)).unwrap();
        assert_eq!(got.ret, 64);
        assert_eq!(got.new.cur, 16);
    }

    #[test]
    fn a_plain_request_cancels_a_deferred_length() {
        let pending = TaskVl {
            cur: 64,
            onexec: 128,
            inherit: false,
        };
        let got = sve(64, all(), &pending).unwrap();
        assert_eq!(got.new, task(64));
        assert_eq!(got.live_change, None);
    }

    #[test]
    fn inherit_sets_the_deferred_length_and_the_flag() {
        let got = sve(32 | INHERIT, all(), &task(64)).unwrap();
        assert_eq!(got.live_change, Some(32));
        assert_eq!(
            got.new,
            TaskVl {
                cur: 32,
                onexec: 32,
                inherit: true
            }
        );
        assert_eq!(got.ret, 32 | INHERIT);
        // A later request without INHERIT clears the flag.
        let got = sve(32, all(), &got.new).unwrap();
        assert_eq!(got.new, task(32));
        assert_eq!(got.ret, 32);
    }

    #[test]
    fn inherit_with_onexec() {
        let got = sve(256 | INHERIT | ONEXEC, set(&[16, 32, 64]), &task(16)).unwrap();
        assert_eq!(got.live_change, None);
        assert_eq!(
            got.new,
            TaskVl {
                cur: 16,
                onexec: 64,
                inherit: true
            }
        );
        assert_eq!(got.ret, 64 | INHERIT);
    }

    #[test]
    fn get_vl_reports_current_and_inherit_only() {
        let t = TaskVl {
            cur: 32,
            onexec: 128,
            inherit: true,
        };
        assert_eq!(get_vl(&t), 32 | INHERIT);
        assert_eq!(get_vl(&task(256)), 256);
    }

    #[test]
    fn exec_uses_the_deferred_length_then_forgets_it() {
        let t = TaskVl {
            cur: 64,
            onexec: 128,
            inherit: false,
        };
        assert_eq!(on_exec(&t, 32), task(128));
        // Nothing deferred: the system default.
        assert_eq!(on_exec(&task(128), 32), task(32));
    }

    #[test]
    fn exec_with_inherit_keeps_the_deferred_length() {
        let t = TaskVl {
            cur: 64,
            onexec: 128,
            inherit: true,
        };
        let after = on_exec(&t, 32);
        assert_eq!(after, t.with_cur(128));
        // And again on the next exec.
        assert_eq!(on_exec(&after, 32), after);
        // INHERIT after an ONEXEC request that the plain path cleared: default, flag kept.
        let flag_only = TaskVl {
            cur: 64,
            onexec: 0,
            inherit: true,
        };
        assert_eq!(on_exec(&flag_only, 16), flag_only.with_cur(16));
    }

    impl TaskVl {
        fn with_cur(self, cur: u32) -> TaskVl {
            TaskVl { cur, ..self }
        }
    }

    #[test]
    fn fork_copies_everything() {
        let t = TaskVl {
            cur: 48,
            onexec: 96,
            inherit: true,
        };
        assert_eq!(on_fork(&t), t);
    }

    #[test]
    fn boot_defaults() {
        assert_eq!(boot_default(VecKind::Sve, all()), 64);
        assert_eq!(boot_default(VecKind::Sve, set(&[16, 32])), 32);
        assert_eq!(boot_default(VecKind::Sve, set(&[16, 128])), 16);
        assert_eq!(boot_default(VecKind::Sme, set(&[16, 32, 64, 128, 256])), 32);
        assert_eq!(boot_default(VecKind::Sme, set(&[16, 64])), 16);
        assert_eq!(boot_default(VecKind::Sme, set(&[64, 128])), 64);
        assert_eq!(boot_default(VecKind::Sme, set(&[32, 64, 256])), 32);
        assert_eq!(boot_default(VecKind::Sme, VlSet::EMPTY), 0);
    }

    #[test]
    fn sysctl_write_accepts_what_proc_dointvec_accepts() {
        let w = |t: &[u8]| default_vl_write(VecKind::Sve, t, all());
        assert_eq!(w(b"64"), Ok((64, 2)));
        assert_eq!(w(b"64\n"), Ok((64, 3)));
        assert_eq!(w(b" \t\n 128 \n\n"), Ok((128, 10)));
        assert_eq!(w(b"0x40"), Ok((64, 4)));
        assert_eq!(w(b"0X20\n"), Ok((32, 5)));
        assert_eq!(w(b"0100"), Ok((64, 4)), "octal");
        assert_eq!(
            w(b"0x000000000000000040"),
            Ok((64, 20)),
            "20 characters fit"
        );
        // A second word is not read: the value is taken, write() returns a short count.
        assert_eq!(w(b"64 junk"), Ok((64, 3)));
    }

    #[test]
    fn sysctl_write_minus_one_is_the_maximum() {
        assert_eq!(default_vl_write(VecKind::Sve, b"-1\n", all()), Ok((256, 3)));
        let sme = set(&[32, 64]);
        assert_eq!(default_vl_write(VecKind::Sme, b"-1", sme), Ok((64, 2)));
    }

    #[test]
    fn sysctl_write_rounds_like_prctl() {
        let small = set(&[16, 32, 64]);
        let w = |t: &[u8]| default_vl_write(VecKind::Sve, t, small).map(|r| r.0);
        assert_eq!(w(b"48"), Ok(32));
        assert_eq!(w(b"512"), Ok(64));
        assert_eq!(w(b"8192"), Ok(64));
        let sme = set(&[32, 64, 256]);
        assert_eq!(default_vl_write(VecKind::Sme, b"16", sme), Ok((32, 2)));
        assert_eq!(default_vl_write(VecKind::Sme, b"128", sme), Ok((64, 3)));
    }

    #[test]
    fn sysctl_write_refuses_invalid_lengths() {
        let w = |t: &[u8]| default_vl_write(VecKind::Sve, t, all());
        for t in [
            &b"0"[..],
            b"-0",
            b"17",
            b"8208",
            b"-16",
            b"-2",
            b"-2147483648",
        ] {
            assert_eq!(w(t), Err(Errno::EINVAL), "{t:?}");
        }
        assert_eq!(
            default_vl_write(VecKind::Sme, b"32", VlSet::EMPTY),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn sysctl_write_refuses_non_numbers() {
        let w = |t: &[u8]| default_vl_write(VecKind::Sve, t, all());
        let bad: [&[u8]; 17] = [
            b"",
            b"   \n",
            b"abc",
            b"+64",
            b"-",
            b"- 1",
            b"64abc",
            b"64.0",
            b"64\r\n",
            b"64\0",
            b"0x",
            b"08",
            b"1e3",
            b"2147483648",
            b"-2147483649",
            b"99999999999999999999",
            b"0x0000000000000000040",
        ];
        for t in bad {
            assert_eq!(w(t), Err(Errno::EINVAL), "{:?}", std::str::from_utf8(t));
        }
    }

    #[test]
    fn dointvec_consumes_one_number_and_trailing_space() {
        assert_eq!(parse_dointvec(b"64\n"), Ok((64, 3)));
        assert_eq!(parse_dointvec(b"  64  "), Ok((64, 6)));
        // A second word is left unread: write() reports a short count, the value is taken.
        assert_eq!(parse_dointvec(b"64 junk"), Ok((64, 3)));
        assert_eq!(parse_dointvec(b"-2147483648"), Ok((i32::MIN, 11)));
        assert_eq!(parse_dointvec(b"2147483647"), Ok((i32::MAX, 10)));
        assert_eq!(parse_dointvec(b"-1"), Ok((-1, 2)));
    }

    #[test]
    fn dointvec_only_reads_one_page() {
        let mut long = Vec::from(&b"64"[..]);
        long.resize(4095, b' ');
        long.resize(5000, b'x');
        // Bytes past the first 4095 are never looked at, yet count as written.
        assert_eq!(parse_dointvec(&long), Ok((64, 5000)));
        long[4094] = b'x';
        assert_eq!(parse_dointvec(&long), Ok((64, 5000 - 1)));
    }

    #[test]
    fn sysctl_read_formats_a_line() {
        let mut buf = [0u8; 16];
        let n = default_vl_read(64, &mut buf);
        assert_eq!(&buf[..n], b"64\n");
        let n = default_vl_read(256, &mut buf);
        assert_eq!(&buf[..n], b"256\n");
        let n = default_vl_read(0, &mut buf);
        assert_eq!(&buf[..n], b"0\n");
        let mut small = [0u8; 2];
        assert_eq!(default_vl_read(256, &mut small), 2);
        assert_eq!(&small, b"25");
        assert_eq!(default_vl_read(16, &mut []), 0);
        let n = default_vl_read(u32::MAX, &mut buf);
        assert_eq!(&buf[..n], b"4294967295\n");
    }

    #[test]
    fn sysctl_names() {
        assert_eq!(VecKind::Sve.sysctl_name(), "sve_default_vector_length");
        assert_eq!(VecKind::Sme.sysctl_name(), "sme_default_vector_length");
    }
}
