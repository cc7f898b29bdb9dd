//! Debian's own arm64 programs as the userland: `./qemu-run.sh --debian PACKAGES` unpacks
//! trixie's busybox-static, bash, coreutils, bsdutils, strace and gdb (dynamically linked, with glibc's
//! ld.so) under the test programs, and one test program runs as the first process, on Svelt at
//! 1 and 2 CPUs and on Linux 7.3.4:
//! - /bin/tests/debian_userland (user/c/debian_userland.c): busybox sh and bash (with `-c` and
//!   as a `#!` script) run one script with pipes, redirections, globbing, subshells,
//!   substitution, background jobs and wait, trap and ulimit; coreutils list /proc/self/, sort,
//!   hash a file and run dd; util-linux's `script -q -c 'echo hi; tty' LOG` (bsdutils: a pty,
//!   signalfd and poll) prints and logs the command's output. Every test must pass (none may
//!   skip).
//! - /bin/tests/debug_tools (user/c/debug_tools.c): `strace -f` of a program that forks, execs
//!   itself and uses SVE, and `gdb --batch` stopping an SVE/SME program at a breakpoint, printing
//!   VG, SVG, SVCR, Z0, P0, FFR and ZA, setting Z0 and ZA and continuing (the program reports
//!   what it saw); and gdb's `bt` from a breakpoint in two signal handlers (one returning
//!   through glibc's restorer, one installed without SA_RESTORER, returning through the vDSO's
//!   `__kernel_rt_sigreturn`) shows the interrupted frame below `<signal handler called>`. All
//!   pass, and the tools' output (`# strace: `, `# gdb: `, `# gdb-signal: ` lines) is the same
//!   on Svelt as on Linux line for line once addresses, pids, random bytes and column padding
//!   are normalised.
//!
//! - /bin/tests/debian_programs (user/c/debian_programs.c), over python3, make, iproute2,
//!   util-linux, procps, bash and coreutils: a Python script with socketpair, an asyncio TCP
//!   echo on 127.0.0.1, multiprocessing's Pipe, Manager and Pool, pty.fork and os.mkfifo;
//!   `make -j2` whose two recipes must run at once (the FIFO jobserver); `ip link set lo up`
//!   and `ip addr`; dmesg; bash's `time` of a busy loop; the exit status of ps, top, vmstat,
//!   free, uptime, pmap, lscpu, nice, chrt, ionice, taskset, df, findmnt and nproc. All pass,
//!   and every `# TAG: ` line is the same as on Linux (on 2 CPUs).
//! - /bin/tests/shell_session (user/c/shell_session.c): an interactive busybox sh on the serial
//!   line (a session whose controlling terminal is /dev/ttyAMA0), driven by the harness typing:
//!   the terminal echoes a command and the shell runs it, ^C interrupts `sleep 100` (status
//!   130), ^Z stops a `sleep 6` that `bg` resumes (still Running in `jobs`, then waited for
//!   with status 0), ^D ends the shell. The transcript, from the first prompt on, is the same on both
//!   kernels.
//!
//! Skipped, with the reason printed, when the packages or Linux cannot be downloaded.

use std::sync::OnceLock;
use std::time::Duration;
use svelt_tests::{boot, ready, Config, Console, Initrd, Run};

const PACKAGES: &str = "busybox-static,bash,coreutils,bsdutils,strace,gdb";
/// What debian_programs runs: Python, make, iproute2, util-linux and procps (with bash for
/// `time`, coreutils for the makefile's recipes).
const PROGRAMS: &str = "python3,make,iproute2,util-linux,bash,coreutils,procps";

fn config(init: &str, smp: u32, linux: bool) -> Config {
    let packages = if init == "debian_programs" {
        PROGRAMS
    } else {
        PACKAGES
    };
    Config {
        smp,
        linux,
        initrd: Initrd::Default,
        init: Some(format!("/bin/tests/{init}")),
        debian: Some(packages.into()),
        timeout: Duration::from_secs(300),
        ..Config::default()
    }
}

/// Boots `cfg` and checks its KTAP: `tests` tests, all passed, none skipped. `None`: skipped.
fn run_all(cfg: &Config, tests: usize) -> Option<Run> {
    if !ready(cfg) {
        return None;
    }
    let run = boot(cfg);
    let ctx = || format!("config {:?}\n--- output ---\n{}", cfg.args(), run.output);
    let lines = || run.output.lines();
    let passed: Vec<&str> = lines()
        .filter(|l| l.starts_with("ok ") && !l.contains("# SKIP"))
        .collect();
    let failed: Vec<&str> = lines()
        .filter(|l| l.starts_with("not ok ") || (l.starts_with("ok ") && l.contains("# SKIP")))
        .collect();
    assert!(
        failed.is_empty(),
        "failed or skipped: {failed:?}\n{}",
        ctx()
    );
    assert_eq!(passed.len(), tests, "passed: {passed:?}\n{}", ctx());
    let totals = format!("# Totals: pass:{tests} fail:0");
    assert!(run.output.contains(&totals), "no '{totals}'\n{}", ctx());
    assert_eq!(run.status, Some(0), "run status\n{}", ctx());
    Some(run)
}

#[test]
fn shells_and_coreutils_svelt_1cpu() {
    run_all(&config("debian_userland", 1, false), 8);
}

#[test]
fn shells_and_coreutils_svelt_2cpus() {
    run_all(&config("debian_userland", 2, false), 8);
}

#[test]
fn shells_and_coreutils_linux() {
    run_all(&config("debian_userland", 2, true), 8);
}

/// `0x` and five or more hex digits (an address) becomes `0xADDR`.
fn hide_addresses(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        let digits = rest[i + 2..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        if digits >= 5 {
            out.push_str("0xADDR");
        } else {
            out.push_str(&rest[i..i + 2 + digits]);
        }
        rest = &rest[i + 2 + digits..];
    }
    out.push_str(rest);
    out
}

/// The number after the last `= ` becomes `PID`.
fn hide_result(line: &str) -> String {
    match line.rfind("= ") {
        Some(i) if line[i + 2..].trim().parse::<u32>().is_ok() => format!("{}= PID", &line[..i]),
        _ => line.to_string(),
    }
}

/// One tool's output line, normalised for comparison between kernels: addresses, pids (what
/// set_tid_address, clone and wait4 return, wait4's argument, gdb's "process N"), getrandom's
/// bytes, and strace's column padding.
fn normalise(line: &str) -> String {
    let mut l = hide_addresses(line);
    if let Some(r) = l.strip_prefix("getrandom(\"") {
        let end = r.find("\",").map_or(r.len(), |e| e);
        l = format!("getrandom(\"RANDOM{}", &r[end..]);
    }
    if ["set_tid_address(", "clone(", "wait4("]
        .iter()
        .any(|p| l.starts_with(p))
    {
        l = hide_result(&l);
    }
    if let Some(r) = l.strip_prefix("wait4(") {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        l = format!("wait4(PID{}", &r[n..]);
    }
    if let Some(i) = l.find("(process ") {
        let n = l[i + 9..].bytes().take_while(u8::is_ascii_digit).count();
        l = format!("{}(process PID{}", &l[..i], &l[i + 9 + n..]);
    }
    l.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn tool_lines(run: &Run, tag: &str) -> Vec<String> {
    let prefix = format!("# {tag}: ");
    run.output
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(normalise)
        .collect()
}

fn linux_tools() -> Option<&'static Run> {
    static LINUX: OnceLock<Option<Run>> = OnceLock::new();
    LINUX
        .get_or_init(|| run_all(&config("debug_tools", 2, true), 4))
        .as_ref()
}

/// Checks that Svelt's `# TAG: ` lines are Linux's for each of `tags`, line for line once
/// normalised; Linux must have printed some of each.
fn compare_tagged_lines(svelt: &Run, linux: &Run, tags: &[&str]) {
    for tag in tags {
        let (s, l) = (tool_lines(svelt, tag), tool_lines(linux, tag));
        assert!(
            !l.is_empty(),
            "Linux printed no {tag} output:\n{}",
            linux.output
        );
        if s != l {
            let first = s
                .iter()
                .zip(&l)
                .position(|(a, b)| a != b)
                .unwrap_or(s.len().min(l.len()));
            panic!(
                "{tag} output differs from Linux's at line {} (of {} on Svelt, {} on Linux):\n\
                 Svelt: {:?}\nLinux: {:?}\n--- Svelt ---\n{}\n--- Linux ---\n{}",
                first + 1,
                s.len(),
                l.len(),
                s.get(first),
                l.get(first),
                s.join("\n"),
                l.join("\n")
            );
        }
    }
}

fn check_tools_against_linux(smp: u32) {
    let Some(svelt) = run_all(&config("debug_tools", smp, false), 4) else {
        return;
    };
    let Some(linux) = linux_tools() else { return };
    compare_tagged_lines(&svelt, linux, &["strace", "gdb", "gdb-signal"]);
}

#[test]
fn strace_and_gdb_match_linux_1cpu() {
    check_tools_against_linux(1);
}

#[test]
fn strace_and_gdb_match_linux_2cpus() {
    check_tools_against_linux(2);
}

fn linux_programs() -> Option<&'static Run> {
    static LINUX: OnceLock<Option<Run>> = OnceLock::new();
    LINUX
        .get_or_init(|| run_all(&config("debian_programs", 2, true), 6))
        .as_ref()
}

/// Each program's output, line by line, as Linux's (dmesg and time by what they showed, the
/// procps and util-linux tools by their exit statuses).
fn check_programs_against_linux(smp: u32) {
    let Some(svelt) = run_all(&config("debian_programs", smp, false), 6) else {
        return;
    };
    let Some(linux) = linux_programs() else {
        return;
    };
    let tags = ["python", "make", "ip", "dmesg", "time", "df", "tools"];
    compare_tagged_lines(&svelt, linux, &tags);
}

#[test]
fn python_make_ip_dmesg_time_match_linux() {
    check_programs_against_linux(2);
}

#[test]
fn normalising() {
    assert_eq!(
        normalise("brk(0x4b8af0)                           = 0x4b8af0"),
        "brk(0xADDR) = 0xADDR"
    );
    assert_eq!(
        normalise("set_tid_address(0x4b80d0)  = 7"),
        "set_tid_address(0xADDR) = PID"
    );
    assert_eq!(
        normalise("wait4(8, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 8"),
        "wait4(PID, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = PID"
    );
    assert_eq!(
        normalise("getrandom(\"\\x52\\x93\", 8, GRND_NONBLOCK) = 8"),
        "getrandom(\"RANDOM\", 8, GRND_NONBLOCK) = 8"
    );
    assert_eq!(
        normalise("[Inferior 1 (process 13) exited normally]"),
        "[Inferior 1 (process PID) exited normally]"
    );
    assert_eq!(normalise("$5 = {0x55, 0x55}"), "$5 = {0x55, 0x55}");
}

/// Types a short session into busybox sh and returns the transcript from the first prompt to
/// the shell's end (busybox's cursor-position queries, which nobody answers, left out).
fn shell_session(smp: u32, linux: bool) -> Option<String> {
    let cfg = config("shell_session", smp, linux);
    if !ready(&cfg) {
        return None;
    }
    let step = Duration::from_secs(60);
    // busybox asks where the cursor is (ESC [ 6 n) after each prompt.
    let prompt = "$ \x1b[6n";
    let mut c = Console::boot(&cfg);
    c.expect("built-in shell (ash)", cfg.timeout);
    c.expect(prompt, step);
    c.send(b"echo hello\r");
    c.expect("echo hello\r\nhello\r\n", step);
    c.expect(prompt, step);
    c.send(b"sleep 100\r");
    c.expect("sleep 100\r\n", step);
    // Let sleep start before interrupting it.
    std::thread::sleep(Duration::from_secs(2));
    c.send(b"\x03");
    c.expect("^C", step);
    c.expect(prompt, Duration::from_secs(30));
    c.send(b"echo status $?\r");
    c.expect("status 130\r\n", step);
    c.expect(prompt, step);
    // ^Z stops a sleep and `bg` resumes it: it is still running afterwards (an interrupted
    // nanosleep that returned EINTR would be Done at once), and `wait` sees it end well.
    c.send(b"sleep 6\r");
    c.expect("sleep 6\r\n", step);
    std::thread::sleep(Duration::from_secs(1));
    c.send(b"\x1a");
    c.expect("Stopped", step);
    c.expect(prompt, step);
    c.send(b"bg\r");
    c.expect("sleep 6", step);
    // The prompt after `bg` is not awaited: Linux at 2 CPUs once printed its escape sequence
    // without the "$ " before it. The transcripts are compared up to ^Z (see check_session).
    std::thread::sleep(Duration::from_secs(1));
    c.send(b"jobs\r");
    c.expect("Running", step);
    c.expect(prompt, step);
    c.send(b"wait; echo waited $?\r");
    c.expect("waited 0\r\n", step);
    c.expect(prompt, step);
    c.send(b"\x04");
    c.expect(
        "# shell_session: the shell ended with wait status 0\r\n",
        step,
    );
    c.expect("# Totals: pass:1 fail:0", step);
    let all = String::from_utf8_lossy(&c.output).into_owned();
    let banner = all.find("built-in shell (ash)").unwrap_or(0);
    let first = banner + all[banner..].find(prompt).unwrap_or(0);
    let transcript = all[first..].replace("\x1b[6n", "").replace('\r', "");
    let run = c.finish(step);
    assert_eq!(run.status, Some(0), "run status\n{}", run.output);
    Some(transcript)
}

fn linux_session() -> Option<&'static String> {
    static LINUX: OnceLock<Option<String>> = OnceLock::new();
    LINUX.get_or_init(|| shell_session(2, true)).as_ref()
}

fn check_session(smp: u32) {
    let Some(svelt) = shell_session(smp, false) else {
        return;
    };
    let Some(linux) = linux_session() else { return };
    // From ^Z on, the job-control lines are checked by shell_session and not compared: the
    // order in which the shell's prompt and the job's report reach the terminal varies.
    let cut = |t: &str| t[..t.find("^Z").unwrap_or(t.len())].to_string();
    assert_eq!(cut(&svelt), cut(linux), "the sessions differ");
}

#[test]
fn interactive_shell_matches_linux_1cpu() {
    check_session(1);
}

#[test]
fn interactive_shell_matches_linux_2cpus() {
    check_session(2);
}
