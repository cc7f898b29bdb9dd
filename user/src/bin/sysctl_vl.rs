//! /proc/sys/abi/{sve,sme}_default_vector_length as files, the way Linux's proc_sys_call_handler
//! and proc_dointvec treat them: `fopen(path, "w")` (O_CREAT|O_TRUNC) and ftruncate succeed and
//! change nothing; a read formats the value at position 0 only (a second read, or a read after a
//! short one, is end of file); a write at position 0 parses one number and returns the bytes it
//! consumed (trailing white space included, a second word not), a write anywhere else is ignored
//! and reported fully written, an invalid one fails with EINVAL and leaves the position alone;
//! the value read is the current one, not the one at open. Each test puts the value back.
#![no_std]
#![no_main]

use svelt_user::ktap::{skip, TestResult};
use svelt_user::sys::*;
use svelt_user::*;

const SVE: &str = "/proc/sys/abi/sve_default_vector_length";
const SME: &str = "/proc/sys/abi/sme_default_vector_length";

/// One of the two files, with the lengths its extension supports (ascending).
struct Knob {
    path: &'static str,
    vls: Vec<usize>,
}

fn knobs() -> Vec<Knob> {
    let mut v = Vec::new();
    if svelt_user::sme::has_sve() {
        if let Ok(vls) = svelt_user::sve::supported_vls() {
            v.push(Knob { path: SVE, vls });
        }
    }
    if svelt_user::sme::has_sme() {
        v.push(Knob {
            path: SME,
            vls: svelt_user::sme::sme_vls(),
        });
    }
    v
}

/// Runs `f` on each file the system has; skips without any.
fn each(f: fn(&Knob) -> TestResult) -> TestResult {
    let ks = knobs();
    if ks.is_empty() {
        return skip("neither SVE nor SME");
    }
    for k in &ks {
        let _r = Restore::new(k.path)?;
        f(k).map_err(|e| format!("{}: {e}", k.path))?;
    }
    Ok(())
}

fn read_value(path: &str) -> Result<usize, String> {
    let b = io::read_file(path).map_err(|e| format!("read {path}: {e:?}"))?;
    let s = core::str::from_utf8(&b).map_err(|_| format!("{path}: not UTF-8"))?;
    s.trim()
        .parse()
        .map_err(|_| format!("{path}: {s:?} is not a number"))
}

/// Writes `text` at position 0 of a fresh open file description.
fn write_fresh(path: &str, text: &str) -> SysResult {
    let fd = sys::open(path, O_WRONLY | O_CLOEXEC)?;
    let r = sys::write(fd, text.as_bytes());
    let _ = sys::close(fd);
    r
}

/// Puts the value a test started with back when it ends, however it ends.
struct Restore {
    path: &'static str,
    value: usize,
}

impl Restore {
    fn new(path: &'static str) -> Result<Restore, String> {
        Ok(Restore {
            path,
            value: read_value(path)?,
        })
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = write_fresh(self.path, &format!("{}\n", self.value));
    }
}

/// Two values to move between (equal when only one length is supported).
fn lo_hi(k: &Knob) -> (usize, usize) {
    (k.vls[0], *k.vls.last().unwrap_or(&k.vls[0]))
}

fn fopen_w_truncates_nothing(k: &Knob) -> TestResult {
    let (lo, hi) = lo_hi(k);
    t!(write_fresh(k.path, &format!("{hi}")));
    // fopen(path, "w"), then fprintf(f, "%d", lo) and fclose: one write of the digits.
    let fd = t!(sys::openat(
        AT_FDCWD,
        k.path,
        O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
        0o666
    ));
    check_eq!(read_value(k.path)?, hi, "O_TRUNC changed the value");
    let text = format!("{lo}");
    let r = sys::write(fd, text.as_bytes());
    let _ = sys::close(fd);
    check_eq!(r, Ok(text.len()), "write {text:?}");
    check_eq!(read_value(k.path)?, lo);
    // ftruncate to any length succeeds and keeps the value; the size stays 0.
    let fd = t!(sys::open(k.path, O_RDWR | O_CLOEXEC));
    let r0 = sys::ftruncate(fd, 0);
    let r1 = sys::ftruncate(fd, 4096);
    let st = sys::fstat(fd);
    let _ = sys::close(fd);
    check_eq!(r0, Ok(0), "ftruncate 0");
    check_eq!(r1, Ok(0), "ftruncate 4096");
    check_eq!(t!(st).st_size, 0, "st_size");
    check_eq!(read_value(k.path)?, lo);
    Ok(())
}

fn reads_format_at_position_zero_only(k: &Knob) -> TestResult {
    let (_, hi) = lo_hi(k);
    t!(write_fresh(k.path, &format!("{hi}")));
    let want = format!("{hi}\n");
    let fd = t!(sys::open(k.path, O_RDONLY | O_CLOEXEC));
    let mut buf = [0u8; 64];
    let r = (|| {
        check_eq!(sys::read(fd, &mut buf), Ok(want.len()));
        check_eq!(&buf[..want.len()], want.as_bytes());
        check_eq!(sys::read(fd, &mut buf), Ok(0), "second read: end of file");
        // A short read takes the first byte; the rest is gone (position 1 is end of file).
        check_eq!(sys::lseek(fd, 0, SEEK_SET), Ok(0));
        check_eq!(sys::read(fd, &mut buf[..1]), Ok(1));
        check_eq!(buf[0], want.as_bytes()[0]);
        check_eq!(sys::read(fd, &mut buf), Ok(0), "read after a 1-byte read");
        check_eq!(sys::pread(fd, &mut buf, 1), Ok(0), "pread at 1");
        // Without room for the newline, the digits alone.
        let digits = want.len() - 1;
        check_eq!(sys::pread(fd, &mut buf[..digits], 0), Ok(digits));
        check_eq!(&buf[..digits], &want.as_bytes()[..digits]);
        check_eq!(sys::read(fd, &mut buf[..0]), Ok(0), "empty read");
        // Back at 0, the whole text again.
        check_eq!(sys::lseek(fd, 0, SEEK_SET), Ok(0));
        check_eq!(sys::read(fd, &mut buf), Ok(want.len()));
        Ok(())
    })();
    let _ = sys::close(fd);
    r
}

fn write_returns_what_it_consumed(k: &Knob) -> TestResult {
    let (lo, hi) = lo_hi(k);
    for (text, n, want) in [
        (format!("{lo}\n"), None, lo),
        (format!("{hi}"), None, hi),
        (format!("  {lo}  \n\n"), None, lo),
        // A second word is not read: a short count, the value taken.
        (format!("{hi} junk"), Some(format!("{hi} ").len()), hi),
        (
            format!("{lo}\t\t{hi}\n"),
            Some(format!("{lo}\t\t").len()),
            lo,
        ),
    ] {
        let n = n.unwrap_or(text.len());
        check_eq!(write_fresh(k.path, &text), Ok(n), "write {text:?}");
        check_eq!(read_value(k.path)?, want, "after {text:?}");
    }
    check_eq!(write_fresh(k.path, ""), Ok(0), "empty write");
    check_eq!(read_value(k.path)?, lo);
    Ok(())
}

fn writes_past_position_zero_are_ignored(k: &Knob) -> TestResult {
    let (lo, hi) = lo_hi(k);
    t!(write_fresh(k.path, &format!("{lo}")));
    let fd = t!(sys::open(k.path, O_RDWR | O_CLOEXEC));
    let r = (|| {
        // The first write (position 0) counts; the next one on the same file is at position 2
        // or more: reported written, nothing changes, even for junk.
        let first = format!("{hi}\n");
        check_eq!(sys::write(fd, first.as_bytes()), Ok(first.len()));
        check_eq!(read_value(k.path)?, hi);
        let second = format!("{lo}\n");
        check_eq!(sys::write(fd, second.as_bytes()), Ok(second.len()));
        check_eq!(sys::write(fd, b"junk"), Ok(4), "junk at position > 0");
        check_eq!(
            read_value(k.path)?,
            hi,
            "value after writes at position > 0"
        );
        check_eq!(
            sys::lseek(fd, 0, SEEK_CUR),
            Ok(first.len() + second.len() + 4),
            "position"
        );
        check_eq!(sys::pwrite(fd, second.as_bytes(), 1), Ok(second.len()));
        check_eq!(read_value(k.path)?, hi, "value after pwrite at 1");
        // Back at position 0 the write counts again; the same descriptor reads the new value.
        check_eq!(sys::lseek(fd, 0, SEEK_SET), Ok(0));
        check_eq!(sys::write(fd, second.as_bytes()), Ok(second.len()));
        check_eq!(read_value(k.path)?, lo);
        check_eq!(sys::lseek(fd, 0, SEEK_SET), Ok(0));
        let mut buf = [0u8; 32];
        check_eq!(sys::read(fd, &mut buf), Ok(second.len()));
        check_eq!(&buf[..second.len()], second.as_bytes(), "read after write");
        check_eq!(sys::pwrite(fd, first.as_bytes(), 0), Ok(first.len()));
        check_eq!(read_value(k.path)?, hi, "pwrite at 0");
        Ok(())
    })();
    let _ = sys::close(fd);
    r
}

fn invalid_writes_fail_and_keep_the_position(k: &Knob) -> TestResult {
    let (lo, hi) = lo_hi(k);
    t!(write_fresh(k.path, &format!("{lo}")));
    for text in [
        " \n",
        "abc",
        "+64",
        "-",
        "64abc",
        "64.0",
        "0",
        "-0",
        "-2",
        "17",
        "8208",
        "0x",
        "08",
        "2147483648",
        "64\r",
    ] {
        check_eq!(write_fresh(k.path, text), Err(EINVAL), "write {text:?}");
        check_eq!(read_value(k.path)?, lo, "value after {text:?}");
    }
    // A failed write does not move the position: the next write is still at 0 and counts.
    let fd = t!(sys::open(k.path, O_WRONLY | O_CLOEXEC));
    let text = format!("{hi}\n");
    let r = (
        sys::write(fd, b"abc"),
        sys::lseek(fd, 0, SEEK_CUR),
        sys::write(fd, text.as_bytes()),
    );
    let _ = sys::close(fd);
    check_eq!(r, (Err(EINVAL), Ok(0), Ok(text.len())));
    check_eq!(read_value(k.path)?, hi);
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    // Run as the first process (qemu-run.sh --init), nothing has mounted /proc yet.
    if sys::stat("/proc/sys").is_err() {
        let _ = sys::mkdirat(AT_FDCWD, "/proc", 0o555);
        let _ = sys::mount("proc", "/proc", "proc", 0);
    }
    ktap::run(&[
        ("sysctl_vl_fopen_w_and_ftruncate", || {
            each(fopen_w_truncates_nothing)
        }),
        ("sysctl_vl_read_at_position_zero_only", || {
            each(reads_format_at_position_zero_only)
        }),
        ("sysctl_vl_write_returns_consumed", || {
            each(write_returns_what_it_consumed)
        }),
        ("sysctl_vl_write_past_zero_ignored", || {
            each(writes_past_position_zero_are_ignored)
        }),
        ("sysctl_vl_invalid_writes", || {
            each(invalid_writes_fail_and_keep_the_position)
        }),
    ])
}

entry!(main);
