//! /proc/sys/abi/sve_default_vector_length: mode 0644, the boot value (the largest supported
//! length not above 64), what a write does (the length a later execve starts with, rounded down
//! to a supported one and clamped to the maximum; -1 for the maximum; EINVAL for lengths that
//! are not multiples of 16 in 16..8192), and that INHERIT and running processes ignore it. The
//! original value is restored at the end of every test.
#![no_std]
#![no_main]

use svelt_user::io::read_file;
use svelt_user::ktap::{skip, TestResult};
use svelt_user::sve::{self, PR_SVE_VL_INHERIT as INHERIT};
use svelt_user::sys::*;
use svelt_user::*;

const SELF: &str = "/bin/tests/sve_default_vl";
const PATH: &str = "/proc/sys/abi/sve_default_vector_length";

fn content() -> Result<String, String> {
    let b = read_file(PATH).map_err(|e| format!("read {PATH}: {e:?}"))?;
    String::from_utf8(b).map_err(|_| format!("{PATH}: not UTF-8"))
}

fn current() -> Result<usize, String> {
    let s = content()?;
    s.trim()
        .parse()
        .map_err(|_| format!("{PATH}: {s:?} is not a number"))
}

/// One write(2) of `text` on a fresh open file description.
fn write(text: &str) -> SysResult {
    let fd = sys::open(PATH, O_WRONLY | O_CLOEXEC)?;
    let r = sys::write(fd, text.as_bytes());
    let _ = sys::close(fd);
    r
}

/// Puts the original value back when a test ends, however it ends.
struct Restore(usize);
impl Drop for Restore {
    fn drop(&mut self) {
        let _ = write(&format!("{}\n", self.0));
        let _ = sve::set_vl(sve::rdvl());
    }
}

/// Writes `text`, expects success and the file then to read `want` followed by a newline.
fn write_ok(text: &str, want: usize) -> TestResult {
    check_eq!(write(text), Ok(text.len()), "write {:?}", text);
    check_eq!(
        t!(content()),
        format!("{want}\n"),
        "content after writing {:?}",
        text
    );
    Ok(())
}

/// The length a new execve (no INHERIT, nothing deferred) starts with.
fn exec_vl() -> Result<(usize, usize), String> {
    Ok(sve::exec_report(SELF, 1, || {})?[0])
}

fn largest_not_above(vls: &[usize], vl: usize) -> usize {
    vls.iter()
        .rev()
        .copied()
        .find(|&v| v <= vl)
        .unwrap_or(vls[0])
}

fn boot_value() -> TestResult {
    let vls = sve::need_vls()?;
    let st = t!(sys::stat(PATH));
    check_eq!(st.st_mode & 0o777, 0o644, "mode");
    let s = t!(content());
    let want = largest_not_above(&vls, 64);
    check_eq!(
        s,
        format!("{want}\n"),
        "boot value: the largest supported length <= 64"
    );
    check_eq!(exec_vl()?, (want, want), "(RDVL, GET_VL) of a new execve");
    Ok(())
}

fn valid_writes_set_the_exec_length() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = Restore(current()?);
    let me = sve::rdvl();
    for &vl in vls.iter().rev() {
        write_ok(&format!("{vl}\n"), vl)?;
        check_eq!(exec_vl()?, (vl, vl), "a new execve after writing {}", vl);
        check_eq!(sve::rdvl(), me, "a running process keeps its length");
    }
    // Without the newline too.
    let vl = vls[vls.len() / 2];
    write_ok(&format!("{vl}"), vl)?;
    check_eq!(exec_vl()?, (vl, vl));
    Ok(())
}

fn minus_one_is_the_maximum() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = Restore(current()?);
    let max = *vls.last().unwrap();
    write_ok("16\n", 16)?;
    write_ok("-1\n", max)?;
    check_eq!(exec_vl()?, (max, max));
    Ok(())
}

fn rounding_and_clamping() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = Restore(current()?);
    let max = *vls.last().unwrap();
    for vl in (16..=512).step_by(16).chain([1024, 4096, 8192]) {
        write_ok(&format!("{vl}\n"), largest_not_above(&vls, vl.min(max)))?;
    }
    write_ok("8192\n", max)?;
    check_eq!(exec_vl()?, (max, max), "after writing 8192 (SVE_VL_MAX)");
    Ok(())
}

fn invalid_writes() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = Restore(current()?);
    let before = vls[0];
    write_ok(&format!("{before}\n"), before)?;
    for text in [
        "0\n", "8\n", "15\n", "17\n", "24\n", "40\n", "-16\n", "-2\n", "8208\n", "65536\n", "abc\n",
    ] {
        check_eq!(write(text), Err(EINVAL), "write {:?}", text);
        check_eq!(
            t!(content()),
            format!("{before}\n"),
            "unchanged after {:?}",
            text
        );
    }
    check_eq!(exec_vl()?, (before, before));
    Ok(())
}

fn inherit_ignores_the_default() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = Restore(current()?);
    let (lo, hi) = (vls[0], *vls.last().unwrap());
    if lo == hi {
        return skip("only one vector length");
    }
    write_ok(&format!("{lo}\n"), lo)?;
    let seen = t!(sve::exec_report(SELF, 2, || {
        let _ = sve::set_vl(hi | INHERIT);
    }));
    check_eq!(seen[0], (hi, hi | INHERIT), "INHERIT wins over the default");
    check_eq!(seen[1], (hi, hi | INHERIT));
    Ok(())
}

fn restored_at_the_end() -> TestResult {
    let vls = sve::need_vls()?;
    let want = largest_not_above(&vls, 64);
    check_eq!(t!(content()), format!("{want}\n"), "the boot value is back");
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some(sve::REPORT_ARG) {
        return sve::report_child(SELF, a);
    }
    ktap::run(&[
        ("sve_default_vl_boot_value", boot_value),
        (
            "sve_default_vl_sets_exec_length",
            valid_writes_set_the_exec_length,
        ),
        ("sve_default_vl_minus_one_is_max", minus_one_is_the_maximum),
        ("sve_default_vl_rounds_and_clamps", rounding_and_clamping),
        ("sve_default_vl_invalid_writes", invalid_writes),
        (
            "sve_default_vl_inherit_ignores_it",
            inherit_ignores_the_default,
        ),
        ("sve_default_vl_restored", restored_at_the_end),
    ])
}

entry!(main);
