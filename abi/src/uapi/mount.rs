//! mount(2)/umount2(2) flags and the tmpfs option string (`size=8m,mode=755`), read the way
//! Linux's tmpfs reads it, and the option text /proc/mounts shows for a mount.

use crate::uapi::errno::Errno;
use core::fmt::{self, Write};

pub const MS_RDONLY: u64 = 1;
pub const MS_NOSUID: u64 = 2;
pub const MS_NODEV: u64 = 4;
pub const MS_NOEXEC: u64 = 8;
pub const MS_SYNCHRONOUS: u64 = 16;
pub const MS_REMOUNT: u64 = 32;
pub const MS_MANDLOCK: u64 = 64;
pub const MS_DIRSYNC: u64 = 128;
pub const MS_NOSYMFOLLOW: u64 = 256;
pub const MS_NOATIME: u64 = 1024;
pub const MS_NODIRATIME: u64 = 2048;
pub const MS_BIND: u64 = 4096;
pub const MS_MOVE: u64 = 8192;
pub const MS_PRIVATE: u64 = 1 << 18;
pub const MS_SLAVE: u64 = 1 << 19;
pub const MS_SHARED: u64 = 1 << 20;
pub const MS_UNBINDABLE: u64 = 1 << 17;
pub const MS_STRICTATIME: u64 = 1 << 24;
pub const MS_LAZYTIME: u64 = 1 << 25;

pub const MNT_FORCE: u32 = 1;
pub const MNT_DETACH: u32 = 2;
pub const MNT_EXPIRE: u32 = 4;
pub const UMOUNT_NOFOLLOW: u32 = 8;

const PAGE: u64 = 4096;

/// What a tmpfs option string asked for; `None` is "not given" (the default applies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TmpfsOptions {
    /// Size limit in pages; `Some(0)` is no limit.
    pub blocks: Option<u64>,
    pub nr_inodes: Option<u64>,
    /// Permission bits of the root directory (default 01777).
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

/// `nr_blocks=` above this is refused (Linux keeps the page count in a signed long).
pub const MAX_NR_BLOCKS: u64 = i64::MAX as u64;
/// `nr_inodes=` above this is refused (Linux reserves 1 KiB of accounting per inode in a u64).
pub const MAX_NR_INODES: u64 = u64::MAX / 1024;

/// A number with an optional binary suffix (K, M, G, T, P, E, either case), read as Linux's
/// `memparse` reads it: the base follows C's rules (0x hex, leading 0 octal), and a value too
/// big for 64 bits, in its digits or once scaled, becomes `u64::MAX` rather than an error.
/// Returns the value and what follows it.
fn memparse(s: &str) -> Option<(u64, &str)> {
    let (digits_at, radix) = if s.starts_with("0x") || s.starts_with("0X") {
        (2, 16)
    } else if s.starts_with('0') && s.len() > 1 {
        (1, 8)
    } else {
        (0, 10)
    };
    let body = &s[digits_at..];
    let end = body
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(body.len());
    if end == 0 && digits_at != 1 {
        return None;
    }
    let mut v: u64 = 0;
    for c in body[..end].chars() {
        let d = u64::from(c.to_digit(radix)?);
        v = v
            .checked_mul(radix.into())
            .and_then(|v| v.checked_add(d))
            .unwrap_or(u64::MAX);
    }
    let rest = &body[end..];
    let shift = match rest.chars().next() {
        Some('k' | 'K') => 10,
        Some('m' | 'M') => 20,
        Some('g' | 'G') => 30,
        Some('t' | 'T') => 40,
        Some('p' | 'P') => 50,
        Some('e' | 'E') => 60,
        _ => return Some((v, rest)),
    };
    let scaled = v.saturating_mul(1 << shift);
    Some((scaled, &rest[1..]))
}

fn number(s: &str, radix: u32) -> Result<u32, Errno> {
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.is_empty() {
        return Err(Errno::EINVAL);
    }
    u32::from_str_radix(s, radix).map_err(|_| Errno::EINVAL)
}

fn id(s: &str) -> Result<u32, Errno> {
    number(s, 10).and_then(|n| {
        if n == u32::MAX {
            Err(Errno::EINVAL)
        } else {
            Ok(n)
        }
    })
}

/// Parses tmpfs's comma-separated `key[=value]` options. `total_pages` is RAM in pages (for
/// `size=N%`). Unknown keys, bad values, a value on a flag or none on a key are EINVAL, and
/// so are `nr_blocks=` and `nr_inodes=` beyond Linux's limits. A `size=` too big for 64 bits
/// is the largest size (2^52 pages), as on Linux; one given in percent of RAM that overflows
/// is EINVAL (Linux wraps it).
pub fn parse_tmpfs(data: &str, total_pages: u64) -> Result<TmpfsOptions, Errno> {
    let mut o = TmpfsOptions::default();
    for word in data.split(',').filter(|w| !w.is_empty()) {
        let (key, value) = match word.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        match (key, value) {
            ("size", Some(v)) => {
                let (n, rest) = memparse(v).ok_or(Errno::EINVAL)?;
                let bytes = match rest {
                    "" => n,
                    "%" => (n as u128 * total_pages as u128 * PAGE as u128 / 100)
                        .try_into()
                        .map_err(|_| Errno::EINVAL)?,
                    _ => return Err(Errno::EINVAL),
                };
                o.blocks = Some(bytes.div_ceil(PAGE));
            }
            ("nr_blocks", Some(v)) => match memparse(v) {
                Some((n, "")) if n <= MAX_NR_BLOCKS => o.blocks = Some(n),
                _ => return Err(Errno::EINVAL),
            },
            ("nr_inodes", Some(v)) => match memparse(v) {
                Some((n, "")) if n <= MAX_NR_INODES => o.nr_inodes = Some(n),
                _ => return Err(Errno::EINVAL),
            },
            ("mode", Some(v)) => o.mode = Some(number(v, 8)? & 0o7777),
            // -1 names nobody.
            ("uid", Some(v)) => o.uid = Some(id(v)?),
            ("gid", Some(v)) => o.gid = Some(id(v)?),
            ("huge", Some("never" | "always" | "within_size" | "advise")) => {}
            ("inode32" | "inode64" | "noswap", None) => {}
            // Flags of the superblock, taken by the VFS before tmpfs sees the options.
            (
                "ro" | "rw" | "sync" | "async" | "dirsync" | "mand" | "nomand" | "lazytime"
                | "nolazytime",
                None,
            ) => {}
            ("source", Some(_)) => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(o)
}

/// What a devpts mount asked for (Linux's pts_mount_opts): the owner and group of new slave
/// nodes (`None`: the opener's), their mode, and the mode of the instance's `ptmx` node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevptsOptions {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub mode: u32,
    pub ptmxmode: u32,
    pub max: u32,
}

/// The most ptys an instance may hold (Linux's NR_UNIX98_PTY_MAX).
pub const NR_UNIX98_PTY_MAX: u32 = 1 << 20;

impl Default for DevptsOptions {
    /// A mount's defaults: slaves 0600 owned by the opener, ptmx 0000.
    fn default() -> Self {
        DevptsOptions {
            uid: None,
            gid: None,
            mode: 0o600,
            ptmxmode: 0,
            max: NR_UNIX98_PTY_MAX,
        }
    }
}

/// Parses devpts's options (`uid=`, `gid=`, `mode=`, `ptmxmode=`, `max=`, `newinstance`) over
/// the defaults, as a fresh mount does. Unknown keys and bad values are EINVAL.
pub fn parse_devpts(data: &str) -> Result<DevptsOptions, Errno> {
    let mut o = DevptsOptions::default();
    for word in data.split(',').filter(|w| !w.is_empty()) {
        let (key, value) = match word.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        match (key, value) {
            ("uid", Some(v)) => o.uid = Some(id(v)?),
            ("gid", Some(v)) => o.gid = Some(id(v)?),
            ("mode", Some(v)) => o.mode = number(v, 8)? & 0o7777,
            ("ptmxmode", Some(v)) => o.ptmxmode = number(v, 8)? & 0o7777,
            ("max", Some(v)) => match number(v, 10)? {
                n if n <= NR_UNIX98_PTY_MAX => o.max = n,
                _ => return Err(Errno::EINVAL),
            },
            ("newinstance", None) => {}
            (
                "ro" | "rw" | "sync" | "async" | "dirsync" | "mand" | "nomand" | "lazytime"
                | "nolazytime",
                None,
            ) => {}
            ("source", Some(_)) => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(o)
}

/// The option field of a /proc/mounts line for a tmpfs (`rw,relatime,size=8192k`):
/// the mount flags, then the tmpfs options that differ from the defaults.
/// `default_blocks` is the size a mount without `size=` gets. A limit whose size in bytes does
/// not fit 64 bits is shown as `nr_blocks=` (Linux shows a `size=` that overflows), so that
/// the text always reads back as the same options.
pub fn write_tmpfs_opts(
    w: &mut impl Write,
    flags: u64,
    o: &TmpfsOptions,
    default_blocks: u64,
) -> fmt::Result {
    write_mount_flags(w, flags)?;
    if let Some(b) = o.blocks.filter(|&b| b != default_blocks) {
        match b.checked_mul(PAGE) {
            Some(bytes) => write!(w, ",size={}k", bytes / 1024)?,
            None => write!(w, ",nr_blocks={b}")?,
        }
    }
    if let Some(n) = o.nr_inodes {
        write!(w, ",nr_inodes={n}")?;
    }
    if let Some(m) = o.mode.filter(|&m| m != 0o1777) {
        write!(w, ",mode={m:03o}")?;
    }
    if let Some(u) = o.uid.filter(|&u| u != 0) {
        write!(w, ",uid={u}")?;
    }
    if let Some(g) = o.gid.filter(|&g| g != 0) {
        write!(w, ",gid={g}")?;
    }
    Ok(())
}

/// `rw` or `ro`, then the per-mount flags in the order Linux prints them.
pub fn write_mount_flags(w: &mut impl Write, flags: u64) -> fmt::Result {
    w.write_str(if flags & MS_RDONLY != 0 { "ro" } else { "rw" })?;
    for (bit, name) in [
        (MS_SYNCHRONOUS, "sync"),
        (MS_DIRSYNC, "dirsync"),
        (MS_MANDLOCK, "mand"),
        (MS_LAZYTIME, "lazytime"),
        (MS_NOSUID, "nosuid"),
        (MS_NODEV, "nodev"),
        (MS_NOEXEC, "noexec"),
        (MS_NOATIME, "noatime"),
        (MS_NODIRATIME, "nodiratime"),
    ] {
        if flags & bit != 0 {
            write!(w, ",{name}")?;
        }
    }
    if flags & (MS_NOATIME | MS_STRICTATIME) == 0 {
        w.write_str(",relatime")?;
    }
    if flags & MS_NOSYMFOLLOW != 0 {
        w.write_str(",nosymfollow")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    const RAM: u64 = 262_144; // 1 GiB in pages

    fn p(s: &str) -> Result<TmpfsOptions, Errno> {
        parse_tmpfs(s, RAM)
    }

    #[test]
    fn devpts_options() {
        let d = parse_devpts("").unwrap();
        assert_eq!(d, DevptsOptions::default());
        assert_eq!((d.mode, d.ptmxmode, d.gid), (0o600, 0, None));
        let o = parse_devpts("gid=5,mode=620,ptmxmode=666,newinstance").unwrap();
        assert_eq!((o.gid, o.mode, o.ptmxmode), (Some(5), 0o620, 0o666));
        assert_eq!(parse_devpts("max=1048577"), Err(Errno::EINVAL));
        assert_eq!(parse_devpts("size=1"), Err(Errno::EINVAL));
        assert_eq!(parse_devpts("mode=9"), Err(Errno::EINVAL));
    }

    #[test]
    fn sizes() {
        assert_eq!(p("size=8m").unwrap().blocks, Some(2048));
        assert_eq!(p("size=8M").unwrap().blocks, Some(2048));
        assert_eq!(p("size=1").unwrap().blocks, Some(1));
        assert_eq!(p("size=4097").unwrap().blocks, Some(2));
        assert_eq!(p("size=0").unwrap().blocks, Some(0));
        assert_eq!(p("size=0x1000").unwrap().blocks, Some(1));
        assert_eq!(p("size=1g").unwrap().blocks, Some(RAM));
        assert_eq!(p("size=50%").unwrap().blocks, Some(RAM / 2));
        assert_eq!(p("size=100k").unwrap().blocks, Some(25));
        assert_eq!(p("nr_blocks=10").unwrap().blocks, Some(10));
        for bad in ["size=", "size=8q", "size=m", "size=8%k", "size"] {
            assert_eq!(p(bad), Err(Errno::EINVAL), "{bad}");
        }
    }

    #[test]
    fn limits_as_linux() {
        // Too big for 64 bits: the largest size, in the digits or in the suffix.
        const MAX_PAGES: u64 = 1 << 52;
        assert_eq!(
            p("size=99999999999999999999").unwrap().blocks,
            Some(MAX_PAGES)
        );
        assert_eq!(p("size=16E").unwrap().blocks, Some(MAX_PAGES));
        assert_eq!(p("size=0x1p").unwrap().blocks, Some(1 << 38));
        assert_eq!(
            p("nr_blocks=0x7fffffffffffffff").unwrap().blocks,
            Some(MAX_NR_BLOCKS)
        );
        assert_eq!(
            p("nr_inodes=0x3fffffffffffff").unwrap().nr_inodes,
            Some(MAX_NR_INODES)
        );
        assert_eq!(p("nr_inodes=15P").unwrap().nr_inodes, Some(15 << 50));
        for bad in [
            "nr_blocks=0x8000000000000000",
            "nr_blocks=8E",
            "nr_blocks=99999999999999999999",
            "nr_inodes=16P",
            "nr_inodes=99999999999999999999",
            "size=99999999999999999999%",
        ] {
            assert_eq!(p(bad), Err(Errno::EINVAL), "{bad}");
        }
    }

    /// Every limit /proc/mounts shows parses back to itself, including those whose size in
    /// bytes does not fit 64 bits (found by fuzzing: the text overflowed).
    #[test]
    fn proc_mounts_reads_back() {
        for text in [
            "nr_blocks=1",
            "nr_blocks=0xfffffffffffff",
            "nr_blocks=0x10000000000000",
            "nr_blocks=1E",
            "nr_blocks=0x4000000000000000",
            "nr_blocks=0x7fffffffffffffff",
            "size=16E",
            "size=0",
        ] {
            let o = p(text).unwrap();
            let mut s = String::new();
            write_tmpfs_opts(&mut s, 0, &o, 7).unwrap();
            let opts = s.strip_prefix("rw,relatime,").unwrap();
            assert_eq!(p(opts), Ok(o), "{text} shown as {s}");
        }
        let mut s = String::new();
        write_tmpfs_opts(&mut s, 0, &p("nr_blocks=1E").unwrap(), 7).unwrap();
        assert_eq!(s, "rw,relatime,nr_blocks=1152921504606846976");
        s.clear();
        write_tmpfs_opts(&mut s, 0, &p("size=16E").unwrap(), 7).unwrap();
        assert_eq!(s, "rw,relatime,nr_blocks=4503599627370496");
        s.clear();
        write_tmpfs_opts(&mut s, 0, &p("nr_blocks=0xfffffffffffff").unwrap(), 7).unwrap();
        assert_eq!(s, "rw,relatime,size=18014398509481980k");
    }

    #[test]
    fn other_options() {
        let o = p("mode=755,uid=1000,gid=100,nr_inodes=1k,,rw,noswap,huge=never").unwrap();
        assert_eq!(o.mode, Some(0o755));
        assert_eq!((o.uid, o.gid), (Some(1000), Some(100)));
        assert_eq!(o.nr_inodes, Some(1024));
        assert_eq!(p(""), Ok(TmpfsOptions::default()));
        for bad in [
            "mode=9",
            "mode",
            "uid=x",
            "bogus",
            "noswap=1",
            "nr_inodes=5%",
            "uid=4294967295",
        ] {
            assert_eq!(p(bad), Err(Errno::EINVAL), "{bad}");
        }
    }

    #[test]
    fn proc_mounts_text() {
        let mut s = String::new();
        let o = p("size=8m").unwrap();
        write_tmpfs_opts(&mut s, 0, &o, RAM / 2).unwrap();
        assert_eq!(s, "rw,relatime,size=8192k");
        s.clear();
        let o = p("mode=755,size=50%").unwrap();
        write_tmpfs_opts(&mut s, MS_NOSUID | MS_NODEV, &o, RAM / 2).unwrap();
        assert_eq!(s, "rw,nosuid,nodev,relatime,mode=755");
        s.clear();
        write_mount_flags(&mut s, MS_RDONLY | MS_NOATIME).unwrap();
        assert_eq!(s, "ro,noatime");
    }
}
