//! Svelt's test init: mounts the usual file systems, runs every program in /bin/tests (sorted)
//! with its output nested in KTAP, and reports the total. On Svelt (uname release contains
//! "svelt") it exits with the run's status, which Svelt turns into the run's status; on Linux it
//! powers the machine off.
#![no_std]
#![no_main]

use svelt_abi::format::ktap::{Tally, Verdict};
use svelt_user::ktap::{self, Totals};
use svelt_user::proc::{describe, wexitstatus, wifexited};
use svelt_user::sig::SIGKILL;
use svelt_user::sys::{self, Pollfd, Timespec};
use svelt_user::*;

const TEST_DIR: &str = "/bin/tests";
/// Per-program time limit, generous for QEMU's emulation of the slowest configurations.
const TIMEOUT_NS: u64 = 300_000_000_000;
/// Present in the archive of the self-checking image (`./qemu-run.sh --build-selfcheck`).
const SELFCHECK_MARKER: &str = "/etc/svelt-selfcheck";
const ENV: &[&str] = &["PATH=/bin/tests:/bin", "HOME=/", "TERM=linux"];

/// Mounts proc, sysfs, devtmpfs, devpts (with the options a Debian system gives it) and
/// tmpfs; returns the failures as text.
fn mount_all() -> Result<(), String> {
    let mut errors = String::new();
    for (src, target, fstype, data) in [
        ("proc", "/proc", "proc", ""),
        ("sysfs", "/sys", "sysfs", ""),
        ("devtmpfs", "/dev", "devtmpfs", ""),
        (
            "devpts",
            "/dev/pts",
            "devpts",
            "gid=5,mode=620,ptmxmode=000",
        ),
        ("tmpfs", "/tmp", "tmpfs", ""),
    ] {
        let _ = sys::mkdirat(sys::AT_FDCWD, target, 0o755);
        match sys::mount_data(src, target, fstype, 0, data) {
            Ok(_) => {}
            // devtmpfs may already be mounted by the kernel (CONFIG_DEVTMPFS_MOUNT).
            Err(sys::EBUSY) if fstype == "devtmpfs" => {}
            Err(e) => errors += &format!("mount {fstype} on {target}: {e:?}\n"),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The names in `dir`, sorted, without "." and "..".
fn list_dir(dir: &str) -> Vec<String> {
    let mut names = Vec::new();
    let Ok(fd) = sys::open(dir, sys::O_RDONLY | sys::O_DIRECTORY | sys::O_CLOEXEC) else {
        return names;
    };
    let mut buf = [0u8; 4096];
    while let Ok(n) = sys::getdents64(fd, &mut buf) {
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off + 19 <= n {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            let name = sys::field_str(&buf[off + 19..off + reclen]);
            if name != "." && name != ".." {
                names.push(String::from(name));
            }
            off += reclen;
        }
    }
    let _ = sys::close(fd);
    names.sort();
    names
}

/// Re-emits complete lines of `pending`, indented four spaces (KTAP nesting), counting the
/// program's results in `tally`.
fn emit_lines(pending: &mut Vec<u8>, flush: bool, tally: &mut Tally) {
    let mut emit = |text: &[u8]| {
        tally.program_line(&String::from_utf8_lossy(text));
        let mut line = Vec::from(&b"    "[..]);
        line.extend_from_slice(text);
        line.push(b'\n');
        let _ = sys::write_all(1, &line);
    };
    while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
        emit(&pending[..nl]);
        pending.drain(..=nl);
    }
    if flush && !pending.is_empty() {
        emit(pending);
        pending.clear();
    }
}

/// The number of cases each fuzzer runs in the full userland.
const FUZZ_CASES: &str = "100";

/// Runs one program with its output captured; returns its wait status (or a message).
fn run_one(name: &str, tally: &mut Tally) -> Result<i32, String> {
    let path = format!("{TEST_DIR}/{name}");
    let [r, w] = sys::pipe2(sys::O_CLOEXEC).map_err(|e| format!("pipe2: {e:?}"))?;
    let pid = proc::spawn(|| {
        // Its own process group, so that a timeout can kill whatever it started.
        let _ = sys::setpgid(0, 0);
        let _ = sys::dup3(w, 1, 0);
        let _ = sys::dup3(w, 2, 0);
        // The fuzzers run at a third of their default budget here, in every configuration of
        // the matrix; tests/tests/fuzzers.rs runs the whole budget on Svelt and on Linux.
        let e = if name.starts_with("fuzz_") {
            sys::execve(&path, &[name, "--cases", FUZZ_CASES], ENV)
        } else {
            sys::execve(&path, &[name], ENV)
        };
        eprintln!("# svelt-init: execve {path}: {e:?}");
        127
    })
    .map_err(|e| format!("fork: {e:?}"))?;
    let _ = sys::setpgid(pid, pid);
    let _ = sys::close(w);

    let start = sys::now_ns();
    let mut deadline = start + TIMEOUT_NS;
    let mut timed_out = false;
    let mut pending = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let now = sys::now_ns();
        if now >= deadline {
            if timed_out {
                println!("    # svelt-init: output still open after the kill; giving up");
                break;
            }
            timed_out = true;
            println!(
                "    # svelt-init: {name} timed out after {}s; killing it",
                TIMEOUT_NS / 1_000_000_000
            );
            let _ = sys::kill(-pid, SIGKILL);
            let _ = sys::kill(pid, SIGKILL);
            // As the first process, also everything else still alive: a program's children in
            // groups of their own (a tracer left running would otherwise kill later programs'
            // children with its pending SIGTRAPs). kill(-1) spares the first process itself.
            if sys::getpid() == 1 {
                let _ = sys::kill(-1, SIGKILL);
            }
            deadline = now + 5_000_000_000;
            continue;
        }
        let mut fds = [Pollfd {
            fd: r,
            events: sys::POLLIN,
            revents: 0,
        }];
        let t = Timespec::from_ns(deadline - now);
        match sys::ppoll(&mut fds, Some(&t)) {
            Ok(0) | Err(sys::EINTR) => continue,
            Ok(_) => {}
            Err(e) => {
                println!("    # svelt-init: ppoll: {e:?}");
                break;
            }
        }
        match sys::read(r, &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                pending.extend_from_slice(&buf[..n]);
                emit_lines(&mut pending, false, tally);
            }
            Err(sys::EINTR) | Err(sys::EAGAIN) => {}
            Err(e) => {
                println!("    # svelt-init: read: {e:?}");
                break;
            }
        }
    }
    emit_lines(&mut pending, true, tally);
    let _ = sys::close(r);
    let (_, status) = sys::waitpid(pid, 0).map_err(|e| format!("wait4: {e:?}"))?;
    // Reap whatever the program left behind (orphans are re-parented to PID 1).
    while let Ok((p, _)) = sys::waitpid(-1, sys::WNOHANG) {
        if p <= 0 {
            break;
        }
    }
    if timed_out {
        return Err(format!("timed out ({})", describe(status)));
    }
    Ok(status)
}

/// A top-level result's verdict, as the KTAP line for it says.
fn verdict(r: &ktap::TestResult) -> Verdict {
    match r {
        Ok(()) => Verdict::Pass,
        Err(m) if ktap::is_skip(m) => Verdict::Skip,
        Err(_) => Verdict::Fail,
    }
}

fn main(_args: &rt::Args) -> i32 {
    svelt_user::io::ensure_console();
    let mounted = mount_all();
    let tests = list_dir(TEST_DIR);

    ktap::header(tests.len() + 1);
    let mut totals = Totals::default();
    let mut tally = Tally::default();
    ktap::report(&mut totals, 1, "init_mounts", &mounted);
    tally.program_done(verdict(&mounted));
    for (i, name) in tests.iter().enumerate() {
        let r = match run_one(name, &mut tally) {
            Ok(st) if wifexited(st) && wexitstatus(st) == 0 => Ok(()),
            Ok(st) => Err(format!("{name}: {}", describe(st))),
            Err(m) => Err(format!("{name}: {m}")),
        };
        ktap::report(&mut totals, i + 2, name, &r);
        tally.program_done(verdict(&r));
    }
    totals.print();
    let status = i32::from(totals.fail > 0);
    // The self-checking image's archive carries the marker: one summary line for a person
    // (or a board's console log) to read.
    if sys::faccessat(sys::AT_FDCWD, SELFCHECK_MARKER, 0).is_ok() {
        println!("{tally}");
    }
    println!("svelt-init: exit status {status}");

    let u = sys::uname();
    if sys::field_str(&u.release).contains("svelt") {
        return status;
    }
    sys::sync();
    let _ = sys::reboot(sys::LINUX_REBOOT_CMD_POWER_OFF);
    // Not PID 1 or not allowed to power off: just report.
    status
}

entry!(main);
