//! The soak run (`./qemu-run.sh --soak MINUTES`), the first process of an archive that also holds
//! Linux's fp-stress and its helpers in /soak/fp (tests/selftests/build.sh builds them): runs
//! fp-stress (FPSIMD, SVE at every vector length, streaming SVE and ZA at every SME length, ZT0
//! with SME2, on every CPU, each checking its registers while it is signalled and preempted)
//! for MINUTES, with the fuzzers of /bin/tests (fuzz_sigframe, fuzz_regset, fuzz_exec, those
//! present) run back to back beside it, then prints the context switches (/proc/stat `ctxt`)
//! and Svelt's FP counters (/proc/svelt/fpstat) before and after, fp-stress's verdict and
//! `svelt-soak: exit status S`. S is 0 when fp-stress passed, every fuzzer run passed and no
//! FP state mismatch was counted (the `mismatch` line of /proc/svelt/fpstat, Svelt only).
//!
//! Under a round-robin scheduler with a 10 ms slice, CPU-bound tasks switch 100 times a second
//! per CPU, so fp-stress alone takes over an hour to reach a million switches. Beside it run
//! switchers: pairs of processes passing a byte through two pipes, each switch a block and a
//! wake-up, one pair with FPSIMD state only and, with SME, one pair holding ZA (and ZT0 with
//! SME2) on across every switch, checking ZA after each wake-up (ZA survives syscalls; SVE and
//! streaming state do not, so those switch only by preemption, which fp-stress covers). With
//! more than one CPU the switchers have the last CPU to themselves and fp-stress the others
//! (affinity), so that neither waits behind the other's slices. The fuzzers run on a CPU of
//! their own with three CPUs or more (`--smp 4`), else beside fp-stress.
//!
//! With guests (`./qemu-run.sh --soak MINUTES --guest linux --guest-vms N`, Svelt's KVM or
//! Linux's) the archive also holds the project's VMM, a Linux Image and a guest archive whose
//! first process is this program (`rdinit=/bin/soak`): N VMMs (N from /etc/soak-vms, VM i's
//! arguments from /etc/vmm-args.i, else /etc/vmm-args) boot N guests that each run the same
//! soak inside; the host's own run starts once every guest's soak has begun and keeps going
//! until the last VMM has ended (each console in /tmp/vmN.log). The run then also needs each VMM's and each guest's status 0 and,
//! on Svelt, every VM, VMID and stage-2 page given back (/proc/svelt/kvm).
//!
//! The minutes come from the first argument or /etc/soak-minutes (qemu-run.sh writes it: the
//! first process gets no arguments on Svelt); default 1. Not in /bin/tests: it is no test of the
//! ordinary suite. On Svelt it exits with the status (the kernel makes it the run's); on Linux it
//! powers the machine off.
#![no_std]
#![no_main]

use svelt_user::proc::{describe, wexitstatus, wifexited};
use svelt_user::sig::{SIGKILL, SIGTERM};
use svelt_user::sme::{self, Op, A_SVC, F_KEEP_ZA, F_ZA};
use svelt_user::sys;
use svelt_user::*;

const FP_DIR: &str = "/soak/fp";
const FUZZERS: [&str; 3] = ["fuzz_sigframe", "fuzz_regset", "fuzz_exec"];
/// Cases per fuzzer run: a run of seconds, so that the loop comes round to the deadline soon
/// after it passes (fuzz_sigframe's 200 took a minute beside fp-stress on QEMU 10).
const FUZZ_CASES: &str = "50";
/// How long one fuzzer run may take before it counts as hung (QEMU's emulation beside fp-stress).
const FUZZ_TIMEOUT_NS: u64 = 600_000_000_000;
/// How long fp-stress may take to stop its children and report after SIGTERM.
const STOP_TIMEOUT_NS: u64 = 600_000_000_000;
const ENV: &[&str] = &["PATH=/bin/tests:/bin", "HOME=/", "TERM=linux"];

fn mount_all() {
    for (src, target, fstype) in [
        ("proc", "/proc", "proc"),
        ("sysfs", "/sys", "sysfs"),
        ("devtmpfs", "/dev", "devtmpfs"),
        ("tmpfs", "/tmp", "tmpfs"),
    ] {
        let _ = sys::mkdirat(sys::AT_FDCWD, target, 0o755);
        // Already mounted (run by hand, or devtmpfs by the kernel) is fine.
        let _ = sys::mount(src, target, fstype, 0);
    }
}

fn minutes(args: &rt::Args) -> u64 {
    let from_file = io::read_file("/etc/soak-minutes").ok();
    let word = args
        .arg(1)
        .map(String::from)
        .or_else(|| from_file.map(|t| String::from(String::from_utf8_lossy(&t).trim())));
    word.and_then(|w| w.parse().ok()).unwrap_or(1)
}

/// The counters the run reports: `ctxt` from /proc/stat, then every `key value` line of
/// /proc/svelt/fpstat (none on Linux).
fn counters() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    if let Ok(t) = io::read_file("/proc/stat") {
        for line in String::from_utf8_lossy(&t).lines() {
            if let Some(v) = line.strip_prefix("ctxt ") {
                out.push((String::from("ctxt"), v.trim().parse().unwrap_or(0)));
            }
        }
    }
    if let Ok(t) = io::read_file("/proc/svelt/fpstat") {
        for line in String::from_utf8_lossy(&t).lines() {
            let mut w = line.split_whitespace();
            if let (Some(k), Some(v), None) = (w.next(), w.next(), w.next()) {
                if let Ok(v) = v.parse() {
                    out.push((String::from(k), v));
                }
            }
        }
    }
    out
}

fn get(c: &[(String, u64)], key: &str) -> Option<u64> {
    c.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// One switcher: `first` writes the first byte; then each reads a byte (blocking: a switch) and
/// writes one back, until `deadline_ns` or its peer is gone. With `za`, ZA holds a pattern
/// loaded before every read and is checked after it. Exit status 0, or 1 after a ZA mismatch.
fn switcher(rfd: i32, wfd: i32, first: bool, za: bool, deadline_ns: u64) -> i32 {
    let svl = if za { sme::svl() } else { 0 };
    let pattern = sme::pattern(if first { 11 } else { 13 }, svl * svl);
    let mut got = vec![0u8; svl * svl];
    let mut byte = [1u8; 1];
    if first && sys::write(wfd, &byte).is_err() {
        return 0;
    }
    let mut n: u64 = 0;
    loop {
        let r = if za {
            let mut op = Op {
                flags: F_ZA | F_KEEP_ZA,
                za_in: pattern.as_ptr() as usize,
                action: A_SVC,
                x8: sys::nr::READ as u64,
                args: [rfd as u64, byte.as_mut_ptr() as u64, 1, 0, 0, 0],
                za_out: got.as_mut_ptr() as usize,
                ..Op::default()
            };
            sme::run(&mut op);
            if got != pattern {
                println!("# svelt-soak: ZA changed across a blocking read (switch {n})");
                return 1;
            }
            op.ret as i64
        } else {
            sys::read(rfd, &mut byte).map_or(-1, |v| v as i64)
        };
        if r <= 0 {
            return 0;
        }
        n += 1;
        if n.is_multiple_of(256) && sys::now_ns() >= deadline_ns {
            return 0;
        }
        if sys::write(wfd, &byte).is_err() {
            return 0;
        }
    }
}

/// Starts the switcher pairs on CPU `cpu`; returns their pids.
fn start_switchers(cpu: Option<u32>, deadline_ns: u64) -> Vec<i32> {
    let mut pids = Vec::new();
    let mut kinds = vec![false];
    if sme::has_sme() {
        kinds.push(true);
    }
    for za in kinds {
        let (Ok([r1, w1]), Ok([r2, w2])) = (sys::pipe2(0), sys::pipe2(0)) else {
            println!("# svelt-soak: pipe2 failed: no switchers");
            break;
        };
        for (first, rfd, wfd) in [(true, r2, w1), (false, r1, w2)] {
            let r = proc::spawn(|| {
                if let Some(c) = cpu {
                    let _ = sys::sched_setaffinity(0, 1 << c);
                }
                for fd in [r1, w1, r2, w2] {
                    if fd != rfd && fd != wfd {
                        let _ = sys::close(fd);
                    }
                }
                switcher(rfd, wfd, first, za, deadline_ns)
            });
            match r {
                Ok(pid) => pids.push(pid),
                Err(e) => println!("# svelt-soak: fork for a switcher: {e:?}"),
            }
        }
        for fd in [r1, w1, r2, w2] {
            let _ = sys::close(fd);
        }
    }
    pids
}

/// Forks and execs `path` with `argv` in `dir`, its output to `out` (a path) when given.
fn start(
    dir: &str,
    path: &str,
    argv: &[&str],
    out: Option<&str>,
    cpus: Option<u64>,
) -> sys::SysResult<i32> {
    match sys::fork()? {
        0 => {
            if let Some(m) = cpus {
                let _ = sys::sched_setaffinity(0, m);
            }
            let _ = sys::chdir(dir);
            if let Some(o) = out {
                if let Ok(fd) = sys::openat(
                    sys::AT_FDCWD,
                    o,
                    sys::O_WRONLY | sys::O_CREAT | sys::O_TRUNC,
                    0o644,
                ) {
                    let _ = sys::dup3(fd, 1, 0);
                    let _ = sys::dup3(fd, 2, 0);
                    let _ = sys::close(fd);
                }
            }
            let e = sys::execve(path, argv, ENV);
            eprintln!("# soak: exec {path}: {e:?}");
            sys::exit_group(127)
        }
        pid => Ok(pid),
    }
}

/// Waits for `pid` until `deadline_ns`; then kills it. (status, timed out)
fn wait_until(pid: i32, deadline_ns: u64) -> (i32, bool) {
    loop {
        match sys::waitpid(pid, sys::WNOHANG) {
            Ok((0, _)) => {}
            Ok((_, st)) => return (st, false),
            Err(sys::EINTR) => {}
            Err(_) => return (-1, false),
        }
        if sys::now_ns() >= deadline_ns {
            let _ = sys::kill(pid, SIGKILL);
            let st = sys::waitpid(pid, 0).map_or(-1, |(_, s)| s);
            return (st, true);
        }
        sys::sleep_ns(20_000_000);
    }
}

/// The VMMs of a soak with guests, with their statuses once they ended.
struct Guests {
    vms: Vec<(i32, Option<i32>)>,
}

/// How long the guests may take to boot before the host's own run starts anyway.
const GUEST_BOOT_NS: u64 = 900_000_000_000;
/// How long the guests may take beyond the host's minutes (a guest's soak under a loaded TCG
/// host runs slower than the host's).
const GUEST_GRACE_NS: u64 = 1_800_000_000_000;

impl Guests {
    /// Starts the VMMs /etc/soak-vms asks for (none without it), each console to /tmp/vmN.log.
    /// VM i's arguments come from /etc/vmm-args.i, else /etc/vmm-args.
    fn start() -> Guests {
        let n: usize = io::read_file("/etc/soak-vms")
            .ok()
            .and_then(|t| String::from_utf8_lossy(&t).trim().parse().ok())
            .unwrap_or(0);
        let mut vms = Vec::new();
        for i in 0..n {
            let text = io::read_file(&format!("/etc/vmm-args.{i}"))
                .or_else(|_| io::read_file("/etc/vmm-args"))
                .unwrap_or_default();
            let text = String::from_utf8_lossy(&text);
            let mut argv: Vec<&str> = vec!["vmm"];
            argv.extend(text.lines());
            println!("# svelt-soak: VM {i}: {}", argv.join(" "));
            match start("/", "/bin/tests/vmm", &argv, Some(&Self::log(i)), None) {
                Ok(pid) => vms.push((pid, None)),
                Err(e) => println!("# svelt-soak: fork for VM {i}: {e:?}"),
            }
        }
        Guests { vms }
    }

    /// Waits (at most `limit_ns`) until every guest's own soak has started (its console shows
    /// the soak's first line) or its VMM has ended, so that the host's run overlaps theirs
    /// rather than slowing their boots.
    fn wait_started(&mut self, limit_ns: u64) {
        let give_up = sys::now_ns() + limit_ns;
        loop {
            let running = self.running(u64::MAX);
            let booted = self.vms.iter().enumerate().all(|(i, (_, st))| {
                st.is_some()
                    || io::read_file(&Self::log(i))
                        .is_ok_and(|t| String::from_utf8_lossy(&t).contains("# svelt-soak: kernel"))
            });
            if booted || !running || sys::now_ns() >= give_up {
                return;
            }
            sys::sleep_ns(1_000_000_000);
        }
    }

    fn log(i: usize) -> String {
        format!("/tmp/vm{i}.log")
    }

    /// Reaps the VMMs that ended; true while one still runs. Past `give_up_ns` the rest are
    /// killed (and count as failed).
    fn running(&mut self, give_up_ns: u64) -> bool {
        let late = sys::now_ns() >= give_up_ns;
        let mut any = false;
        for (i, (pid, st)) in self.vms.iter_mut().enumerate() {
            if st.is_some() {
                continue;
            }
            match sys::waitpid(*pid, sys::WNOHANG) {
                Ok((0, _)) if late => {
                    println!("# svelt-soak: VM {i} still running after the grace period: killed");
                    let _ = sys::kill(*pid, SIGKILL);
                    *st = Some(sys::waitpid(*pid, 0).map_or(-1, |(_, s)| s));
                }
                Ok((0, _)) | Err(sys::EINTR) => any = true,
                Ok((_, s)) => *st = Some(s),
                Err(_) => *st = Some(-1),
            }
        }
        any
    }

    /// Reports each guest (its soak summary and status) and the KVM counters; true when every
    /// VMM and every guest ended with status 0 and, on Svelt, nothing of a VM is left.
    fn report(&self) -> bool {
        let mut ok = true;
        for (i, (_, st)) in self.vms.iter().enumerate() {
            let st = st.unwrap_or(-1);
            let text = io::read_file(&Self::log(i)).unwrap_or_default();
            let text = String::from_utf8_lossy(&text);
            for line in text.lines() {
                if line.starts_with("# svelt-soak:") || line.starts_with("svelt-soak:") {
                    println!("# vm{i} | {line}");
                }
            }
            let last = |prefix: &str| {
                text.lines()
                    .filter_map(|l| l.strip_prefix(prefix))
                    .next_back()
                    .map(String::from)
            };
            let guest = last("svelt-soak: exit status ");
            let vmm = last("svelt-vmm: exit status ");
            let good = passed(st) && guest.as_deref() == Some("0") && vmm.as_deref() == Some("0");
            println!(
                "# svelt-soak: VM {i}: {} (VMM {}, guest soak status {}, VMM status {})",
                if good { "pass" } else { "FAIL" },
                describe(st),
                guest.as_deref().unwrap_or("none"),
                vmm.as_deref().unwrap_or("none")
            );
            if !good {
                show_log(&Self::log(i));
            }
            ok &= good;
        }
        if self.vms.is_empty() {
            return ok;
        }
        match io::read_file("/proc/svelt/kvm") {
            Ok(t) => {
                let t = String::from_utf8_lossy(&t);
                println!("# svelt-soak: kvm: {}", t.trim_end().replace('\n', ", "));
                for key in ["vms", "vmids", "stage2_pages", "stage2_tables"] {
                    let v = t
                        .lines()
                        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
                        .unwrap_or("missing");
                    if v != "0" {
                        println!("# svelt-soak: kvm: {key} {v} after every VM ended");
                        ok = false;
                    }
                }
            }
            Err(_) => println!("# svelt-soak: no /proc/svelt/kvm (not Svelt)"),
        }
        ok
    }
}

fn passed(st: i32) -> bool {
    wifexited(st) && wexitstatus(st) == 0
}

/// Prints what a failed fuzzer run wrote (its last 4 KiB).
fn show_log(path: &str) {
    if let Ok(t) = io::read_file(path) {
        let tail = &t[t.len().saturating_sub(4096)..];
        for line in String::from_utf8_lossy(tail).lines() {
            println!("# | {line}");
        }
    }
}

fn main(args: &rt::Args) -> i32 {
    svelt_user::io::ensure_console();
    mount_all();
    let u = sys::uname();
    let release = sys::field_str(&u.release);
    let svelt = release.contains("svelt");
    let mins = minutes(args);
    println!("# svelt-soak: kernel {release}, {mins} minute(s)");
    let status = i32::from(!soak(mins));
    println!("svelt-soak: exit status {status}");
    if svelt {
        return status;
    }
    sys::sync();
    let _ = sys::reboot(sys::LINUX_REBOOT_CMD_POWER_OFF);
    status
}

/// The whole run; true when it passed.
fn soak(mins: u64) -> bool {
    let fp_stress = format!("{FP_DIR}/fp-stress");
    if sys::stat(&fp_stress).is_err() {
        println!("# svelt-soak: no {fp_stress} (the archive of ./qemu-run.sh --soak has it)");
        return false;
    }
    let fuzzers: Vec<(&str, String)> = FUZZERS
        .iter()
        .map(|n| (*n, format!("/bin/tests/{n}")))
        .filter(|(n, p)| {
            let here = sys::stat(p).is_ok();
            if !here {
                println!("# svelt-soak: no /bin/tests/{n} in this archive: skipped");
            }
            here
        })
        .collect();
    let logs: Vec<String> = fuzzers
        .iter()
        .map(|(n, _)| format!("/tmp/{n}.log"))
        .collect();

    // The last CPU for the switchers, the one before it for the fuzzers when there are three
    // or more, the others for fp-stress (its children inherit the mask) and, with two CPUs, the
    // fuzzers too: a fuzzer beside the switchers would hold them to one switch per slice.
    let online = sys::sched_getaffinity(0).unwrap_or(1);
    let ncpus = online.count_ones();
    let highest = |m: u64| 63 - m.leading_zeros();
    let (switch_cpu, fp_cpus, fuzz_cpus) = if ncpus > 1 {
        let last = highest(online);
        let rest = online & !(1u64 << last);
        if ncpus > 2 {
            let f = 1u64 << highest(rest);
            (Some(last), Some(rest & !f), Some(f))
        } else {
            (Some(last), Some(rest), Some(rest))
        }
    } else {
        (None, None, None)
    };
    println!(
        "# svelt-soak: {ncpus} CPUs; fp-stress on mask {:#x}, fuzzers on mask {:#x}, switchers on {}",
        fp_cpus.unwrap_or(online),
        fuzz_cpus.unwrap_or(online),
        switch_cpu.map_or(String::from("any"), |c| format!("CPU {c}"))
    );

    let mut guests = Guests::start();
    guests.wait_started(GUEST_BOOT_NS);
    let before = counters();
    let t0 = sys::now_ns();
    let deadline = t0 + mins * 60_000_000_000;
    let give_up = deadline + GUEST_GRACE_NS;
    let switchers = start_switchers(switch_cpu, deadline);
    // fp-stress runs until told to stop (-t -1); SIGTERM ends it as its own timeout does.
    let fp = match start(
        FP_DIR,
        &fp_stress,
        &["fp-stress", "-t", "-1"],
        None,
        fp_cpus,
    ) {
        Ok(pid) => pid,
        Err(e) => {
            println!("# svelt-soak: fork: {e:?}");
            return false;
        }
    };
    let mut ok = true;
    let mut runs = [0u32; FUZZERS.len()];
    let mut fails = [0u32; FUZZERS.len()];
    let mut fp_status = None;
    // With guests, the host's fp-stress goes on until the last of them has ended.
    'outer: while sys::now_ns() < deadline || guests.running(give_up) {
        if fuzzers.is_empty() {
            // Nothing beside fp-stress: wake up now and then to see whether it ended early.
            sys::sleep_ns(1_000_000_000);
        }
        for (i, (name, path)) in fuzzers.iter().enumerate() {
            if sys::now_ns() >= deadline && !guests.running(give_up) {
                break;
            }
            let r = start(
                "/",
                path,
                &[name, "--cases", FUZZ_CASES],
                Some(&logs[i]),
                fuzz_cpus,
            );
            let st = match r {
                Ok(pid) => wait_until(pid, sys::now_ns() + FUZZ_TIMEOUT_NS),
                Err(e) => {
                    println!("# svelt-soak: fork for {name}: {e:?}");
                    ok = false;
                    break 'outer;
                }
            };
            runs[i] += 1;
            if !passed(st.0) || st.1 {
                fails[i] += 1;
                ok = false;
                let why = if st.1 {
                    String::from("timed out")
                } else {
                    describe(st.0)
                };
                println!("# svelt-soak: {name} run {} failed: {why}", runs[i]);
                show_log(&logs[i]);
            }
        }
        // fp-stress ending on its own is a failure to report now.
        if let Ok((pid, st)) = sys::waitpid(fp, sys::WNOHANG) {
            if pid == fp {
                println!("# svelt-soak: fp-stress ended early: {}", describe(st));
                fp_status = Some(st);
                break;
            }
        }
    }
    let fp_status = match fp_status {
        Some(st) => st,
        None => {
            let _ = sys::kill(fp, SIGTERM);
            let (st, hung) = wait_until(fp, sys::now_ns() + STOP_TIMEOUT_NS);
            if hung {
                println!("# svelt-soak: fp-stress did not stop within 600 s of SIGTERM");
            }
            st
        }
    };
    let mut switchers_ok = true;
    for pid in switchers {
        let (st, hung) = wait_until(pid, sys::now_ns() + STOP_TIMEOUT_NS);
        if hung || !passed(st) {
            println!("# svelt-soak: switcher {pid}: {}", describe(st));
            switchers_ok = false;
        }
    }
    while guests.running(give_up) {
        sys::sleep_ns(200_000_000);
    }
    let secs = (sys::now_ns() - t0) / 1_000_000_000;
    let after = counters();

    println!("# svelt-soak: {secs} s");
    println!(
        "# svelt-soak: {:<16} {:>14} {:>14} {:>14}",
        "counter", "before", "after", "delta"
    );
    for (k, a) in &after {
        let b = get(&before, k).unwrap_or(0);
        println!(
            "# svelt-soak: {k:<16} {b:>14} {a:>14} {:>14}",
            a.saturating_sub(b)
        );
    }
    if let (Some(b), Some(a)) = (get(&before, "ctxt"), get(&after, "ctxt")) {
        println!(
            "# svelt-soak: {} context switches in {secs} s ({} per second)",
            a - b,
            (a - b) / secs.max(1)
        );
    }
    for (i, (name, _)) in fuzzers.iter().enumerate() {
        println!(
            "# svelt-soak: {name}: {} runs of {FUZZ_CASES} cases, {} failed",
            runs[i], fails[i]
        );
    }
    println!(
        "# svelt-soak: switchers: {}",
        if switchers_ok { "pass" } else { "FAIL" }
    );
    ok &= switchers_ok;
    let fp_ok = passed(fp_status);
    println!(
        "# svelt-soak: fp-stress: {} ({})",
        if fp_ok { "pass" } else { "FAIL" },
        describe(fp_status)
    );
    ok &= fp_ok;
    match get(&after, "mismatch") {
        Some(0) => println!("# svelt-soak: FP state mismatches: 0"),
        Some(n) => {
            println!("# svelt-soak: FP state mismatches: {n} (see the kernel log)");
            ok = false;
        }
        None => println!("# svelt-soak: no mismatch counter (not Svelt)"),
    }
    ok &= guests.report();
    ok
}

entry!(main);
