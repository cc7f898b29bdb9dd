//! Text a user (or the boot loader) hands the kernel: the command line, path names and tmpfs
//! mount options.

use super::util::{offset_in, span, Take};
use std::borrow::ToOwned;
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;
use svelt_abi::boot::cmdline::{Cmdline, ExitVia, LogLevel};
use svelt_abi::uapi::errno::Errno;
use svelt_abi::uapi::mount::{self, TmpfsOptions};
use svelt_abi::uapi::path::{self, Component, PATH_MAX};

fn text_of(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// The kernel command line.
///
/// Asserts: every value returned is a non-empty piece of the line without white space; the
/// line is kept as given; words appended later win (`init=`, `quiet`, `log=`,
/// `svelt.exit=`), and an unknown word changes nothing.
pub fn cmdline(data: &[u8]) {
    let raw = text_of(data);
    let c = Cmdline::parse(&raw);
    assert_eq!(c.raw(), &*raw);
    let whole = span(raw.as_bytes());
    for v in [c.init, c.selftest, c.coredump_dir].into_iter().flatten() {
        assert!(!v.is_empty());
        assert!(!v.chars().any(|ch| ch.is_ascii_whitespace()));
        assert!(
            offset_in(whole, v.as_bytes()).is_some(),
            "value not borrowed from the line"
        );
    }
    let with = |extra: &str| format!("{raw} {extra}");
    let s = with("svelt.unknown=1 zzz");
    let u = Cmdline::parse(&s);
    assert_eq!(
        (
            u.log,
            u.init,
            u.exit,
            u.selftest,
            u.coredump_semihosting,
            u.coredump_dir
        ),
        (
            c.log,
            c.init,
            c.exit,
            c.selftest,
            c.coredump_semihosting,
            c.coredump_dir
        )
    );
    let s = with("init=/sbin/x");
    assert_eq!(Cmdline::parse(&s).init, Some("/sbin/x"));
    let s = with("quiet");
    assert_eq!(Cmdline::parse(&s).log, LogLevel::Error);
    let s = with("log=trace\tsvelt.exit=semihosting");
    let t = Cmdline::parse(&s);
    assert_eq!((t.log, t.exit), (LogLevel::Trace, ExitVia::Semihosting));
    let s = with("loglevel=0");
    assert_eq!(Cmdline::parse(&s).log, LogLevel::Off);
    let s = with("svelt.coredump=semihosting svelt.coredump_dir=/tmp/c");
    let t = Cmdline::parse(&s);
    assert!(t.coredump_semihosting);
    assert_eq!(t.coredump_dir, Some("/tmp/c"));
    // A bad value leaves the earlier one.
    let s = with("log=loud loglevel=x");
    assert_eq!(Cmdline::parse(&s).log, c.log);
}

/// Lexical normalisation, as a list of components.
fn reference_normalize(cwd: &[u8], p: &[u8], cap: usize) -> Result<Vec<u8>, Errno> {
    let mut stack: Vec<&[u8]> = Vec::new();
    let mut len = 0usize;
    let comps = if path::is_absolute(p) {
        path::components(p).collect::<Vec<_>>()
    } else {
        path::components(cwd).chain(path::components(p)).collect()
    };
    for c in comps {
        match c {
            Component::Parent => {
                if let Some(n) = stack.pop() {
                    len -= n.len() + 1;
                }
            }
            Component::Normal(n) => {
                len += n.len() + 1;
                if len >= PATH_MAX || len > cap {
                    return Err(Errno::ENAMETOOLONG);
                }
                stack.push(n);
            }
        }
    }
    if stack.is_empty() {
        return if cap == 0 {
            Err(Errno::ENAMETOOLONG)
        } else {
            Ok(b"/".to_vec())
        };
    }
    let mut out = Vec::new();
    for n in stack {
        out.push(b'/');
        out.extend_from_slice(n);
    }
    Ok(out)
}

/// Path checks, components, normalisation against a working directory, and the last-part
/// split.
///
/// Input: the out-buffer size, then cwd and path separated by a NUL.
///
/// Asserts: `check` is exactly "non-empty, under PATH_MAX, no component over NAME_MAX";
/// components are non-empty, slash-free and never "."; `normalize` equals a separate
/// stack-based normaliser (result absolute, no empty, "." or ".." parts, no trailing slash,
/// inside the buffer) and is idempotent; `split_last` gives a parent and last part whose
/// components rebuild the path's.
pub fn path(data: &[u8]) {
    let mut t = Take::new(data);
    let cap = match t.u8() % 4 {
        0 => 0,
        1 => usize::from(t.u8()),
        _ => PATH_MAX,
    };
    let rest = t.rest();
    let (cwd_raw, p) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (&b"/"[..], rest),
    };

    let ok = !p.is_empty() && p.len() < PATH_MAX && p.split(|&c| c == b'/').all(|c| c.len() <= 255);
    match path::check(p) {
        Ok(()) => assert!(ok),
        Err(e) => {
            assert!(!ok);
            assert_eq!(
                e,
                if p.is_empty() {
                    Errno::ENOENT
                } else {
                    Errno::ENAMETOOLONG
                }
            );
        }
    }
    for c in path::components(p) {
        if let Component::Normal(n) = c {
            assert!(!n.is_empty() && n != b"." && n != b".." && !n.contains(&b'/'));
        }
    }
    assert_eq!(
        path::must_be_dir(p),
        p.ends_with(b"/") || p == b"." || p == b".." || p.ends_with(b"/.") || p.ends_with(b"/..")
    );

    // A normalised cwd, as the kernel keeps it.
    let mut cwd_buf = vec![0u8; PATH_MAX];
    let cwd = match path::normalize(b"/", cwd_raw, &mut cwd_buf) {
        Ok(n) => cwd_buf[..n.len].to_vec(),
        Err(_) => b"/".to_vec(),
    };
    let mut out = vec![0xeeu8; cap];
    let got = path::normalize(&cwd, p, &mut out);
    let want = if ok {
        reference_normalize(&cwd, p, cap)
    } else {
        Err(Errno::ENAMETOOLONG)
    };
    match (got, want) {
        (Ok(n), Ok(w)) => {
            let s = &out[..n.len];
            assert_eq!(s, &w[..]);
            assert_eq!(n.must_be_dir, path::must_be_dir(p));
            assert!(s[0] == b'/' && (s.len() == 1 || !s.ends_with(b"/")));
            assert!(!s.windows(2).any(|w| w == b"//"));
            for part in s.split(|&c| c == b'/').skip(1) {
                assert!(part != b"." && part != b".." && (s.len() == 1 || !part.is_empty()));
            }
            let mut again = vec![0u8; PATH_MAX];
            let n2 = path::normalize(b"/", s, &mut again).unwrap();
            assert_eq!(&again[..n2.len], s, "normalize not idempotent");
        }
        (Err(e), Err(w)) => {
            if p.is_empty() {
                assert_eq!(e, Errno::ENOENT);
            } else {
                assert_eq!(e, w);
            }
        }
        (g, w) => panic!("normalize {g:?}, reference {w:?}"),
    }

    match path::split_last(p) {
        Err(_) => assert!(!ok),
        Ok((parent, last, trailing)) => {
            assert!(ok);
            let whole = span(p);
            assert!(offset_in(whole, last).is_some() || last.is_empty());
            assert!(!last.contains(&b'/'));
            assert_eq!(trailing, p.ends_with(b"/"));
            assert!(offset_in(whole, parent).is_some() || parent.is_empty());
            let mut want: Vec<Component> = path::components(parent).collect();
            if !last.is_empty() {
                want.extend(path::components(last));
            }
            let have: Vec<Component> = path::components(p).collect();
            assert_eq!(have, want, "split_last lost a component");
            if path::is_absolute(p) && !last.is_empty() {
                assert!(
                    path::is_absolute(parent),
                    "parent of an absolute path lost its root"
                );
            } else if !path::is_absolute(p) {
                assert!(!path::is_absolute(parent));
            }
        }
    }
}

/// tmpfs option strings.
///
/// Input: RAM size in pages, a default size in pages, mount flags, then the option text.
///
/// Asserts: accepted limits are within Linux's bounds, and an accepted string, printed the
/// way /proc/mounts prints it and parsed again, gives back the same options (the printer
/// leaves out values equal to the defaults), whatever the size.
pub fn mount(data: &[u8]) {
    let mut t = Take::new(data);
    // RAM in pages, as the kernel counts it (up to 4 PiB; `size=N%` multiplies by it).
    let total = t.u64() & ((1 << 40) - 1);
    let default_blocks = t.u32().into();
    let flags = t.u64();
    let text = text_of(t.rest());
    let Ok(o) = mount::parse_tmpfs(&text, total) else {
        return;
    };
    if let Some(m) = o.mode {
        assert!(m <= 0o7777);
    }
    assert!(o.uid != Some(u32::MAX) && o.gid != Some(u32::MAX));
    if let Some(b) = o.blocks {
        assert!(b <= mount::MAX_NR_BLOCKS);
    }
    if let Some(n) = o.nr_inodes {
        assert!(n <= mount::MAX_NR_INODES);
    }
    let mut shown = String::new();
    mount::write_tmpfs_opts(&mut shown, flags, &o, default_blocks).unwrap();
    let mut flags_text = String::new();
    mount::write_mount_flags(&mut flags_text, flags).unwrap();
    let opts = shown
        .strip_prefix(&flags_text)
        .expect("mount flags come first")
        .to_owned();
    let back = mount::parse_tmpfs(opts.trim_start_matches(','), total)
        .unwrap_or_else(|e| panic!("printed options {opts:?} refused: {e:?}"));
    let want = TmpfsOptions {
        blocks: o.blocks.filter(|&b| b != default_blocks),
        nr_inodes: o.nr_inodes,
        mode: o.mode.filter(|&m| m != 0o1777),
        uid: o.uid.filter(|&u| u != 0),
        gid: o.gid.filter(|&g| g != 0),
    };
    assert_eq!(back, want, "{text:?} printed as {shown:?}");
}

pub fn cmdline_seeds() -> Vec<Vec<u8>> {
    vec![
        b"console=ttyAMA0 log=debug init=/init svelt.exit=semihosting".to_vec(),
        b"quiet loglevel=7 svelt.selftest=fault svelt.coredump=semihosting svelt.coredump_dir=/x"
            .to_vec(),
    ]
}

pub fn path_seeds() -> Vec<Vec<u8>> {
    vec![
        b"\x02/home/user/./src\0../lib//x/./y/..".to_vec(),
        b"\x03/\0/usr/bin/".to_vec(),
        b"\x01/a/b\0c/../../../d".to_vec(),
        b"\x02/tmp\0name".to_vec(),
    ]
}

pub fn mount_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for text in [
        &b"size=8m,mode=755,uid=1000,gid=100,nr_inodes=64k"[..],
        b"size=50%,huge=never,inode64",
        b"nr_blocks=0x100,mode=01777,rw,noswap",
        b"size=0",
        b"nr_blocks=1E,nr_inodes=0x3fffffffffffff",
        b"size=16E",
    ] {
        let mut v = Vec::new();
        v.extend_from_slice(&262_144u64.to_le_bytes());
        v.extend_from_slice(&131_072u32.to_le_bytes());
        v.extend_from_slice(&0u64.to_le_bytes());
        v.extend_from_slice(text);
        out.push(v);
    }
    out
}
