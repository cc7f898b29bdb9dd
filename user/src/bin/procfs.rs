//! What the init mounted: /proc (self/status, cpuinfo), /sys (cpu online/possible), devtmpfs
//! and tmpfs, as a program sees them; and /proc as ps, top, gdb and strace read it: the
//! per-process files (stat's 52 fields, status, maps, smaps, cmdline, environ, auxv, comm,
//! limits, fd/, fdinfo/, task/, links) checked against what the program can observe itself,
//! the system files (meminfo, uptime, loadavg, mountinfo) and /proc/sys/kernel.
#![no_std]
#![no_main]

use svelt_user::io::read_file;
use svelt_user::ktap::TestResult;
use svelt_user::sys::*;
use svelt_user::*;
use svelt_user::{proc, sig};
extern crate alloc;
use alloc::string::ToString;

fn text(path: &str) -> Result<String, String> {
    let b = read_file(path).map_err(|e| format!("{path}: {e:?}"))?;
    String::from_utf8(b).map_err(|_| format!("{path}: not UTF-8"))
}

fn mounted_filesystems() -> TestResult {
    // statfs f_type: PROC_SUPER_MAGIC, SYSFS_MAGIC, TMPFS_MAGIC (devtmpfs is a tmpfs too).
    for (path, magic) in [
        ("/proc", 0x9fa0u64),
        ("/sys", 0x6265_6572),
        ("/tmp", 0x0102_1994),
        ("/dev", 0x0102_1994),
    ] {
        let mut buf = [0u64; 15];
        let p = CPath::new(path);
        t!(sys::syscall(
            nr::STATFS,
            &[p.ptr(), buf.as_mut_ptr() as usize]
        ));
        check_eq!(buf[0], magic, "statfs({}).f_type", path);
    }
    Ok(())
}

fn proc_self_status() -> TestResult {
    let s = text("/proc/self/status")?;
    let pid = sys::getpid();
    let line = s
        .lines()
        .find(|l| l.starts_with("Pid:"))
        .ok_or("no Pid: line")?;
    let want = format!("{pid}");
    check_eq!(
        line.split_whitespace().nth(1),
        Some(want.as_str()),
        "{}",
        line
    );
    check!(
        s.lines().any(|l| l.starts_with("Name:\tprocfs")),
        "Name: line\n{s}"
    );
    let pp = s
        .lines()
        .find(|l| l.starts_with("PPid:"))
        .ok_or("no PPid:")?;
    let want = format!("{}", sys::getppid());
    check_eq!(pp.split_whitespace().nth(1), Some(want.as_str()));
    Ok(())
}

fn cpus_online() -> Result<u32, String> {
    let s = text("/sys/devices/system/cpu/online")?;
    parse_cpu_list(s.trim()).ok_or_else(|| format!("bad cpu list {s:?}"))
}

/// "0", "0-1", "0-3,5": the number of CPUs listed.
fn parse_cpu_list(s: &str) -> Option<u32> {
    let mut n = 0;
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                n += b - a + 1;
            }
            None => {
                part.parse::<u32>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

fn sys_cpu_online_possible() -> TestResult {
    let online = cpus_online()?;
    let possible = text("/sys/devices/system/cpu/possible")?;
    let possible = parse_cpu_list(possible.trim()).ok_or("bad possible list")?;
    check!(
        online >= 1 && possible >= online,
        "online {online} possible {possible}"
    );
    let on = text("/sys/devices/system/cpu/online")?;
    check!(on.starts_with('0') && on.ends_with('\n'), "{on:?}");
    let mut mask = [0u64; 16];
    t!(sys::syscall(
        nr::SCHED_GETAFFINITY,
        &[0, 128, mask.as_mut_ptr() as usize]
    ));
    let aff: u32 = mask.iter().map(|m| m.count_ones()).sum();
    check_eq!(aff, online, "affinity mask vs /sys online");
    println!("# {online} online, {possible} possible");
    Ok(())
}

fn proc_cpuinfo() -> TestResult {
    let s = text("/proc/cpuinfo")?;
    let processors = s.lines().filter(|l| l.starts_with("processor")).count();
    let features: Vec<_> = s.lines().filter(|l| l.starts_with("Features")).collect();
    check_eq!(
        features.len(),
        processors,
        "one Features line per processor"
    );
    check_eq!(processors as u32, cpus_online()?);
    for f in &features {
        let words: Vec<_> = f
            .split(':')
            .nth(1)
            .unwrap_or("")
            .split_whitespace()
            .collect();
        check!(words.contains(&"fp") && words.contains(&"asimd"), "{f}");
    }
    Ok(())
}

fn devtmpfs_nodes() -> TestResult {
    for (path, rdev) in [
        ("/dev/null", (1u64 << 8) | 3),
        ("/dev/console", (5 << 8) | 1),
    ] {
        let st = t!(sys::stat(path));
        check_eq!(st.st_mode & S_IFMT, S_IFCHR, "{}", path);
        check_eq!(st.st_rdev, rdev, "{}", path);
    }
    Ok(())
}

const SELF: &str = "/bin/tests/procfs";

/// /proc for a program started as the first process (`--init`), which finds none mounted.
fn ensure_proc() {
    if sys::stat("/proc/self").is_err() {
        let _ = sys::mkdirat(AT_FDCWD, "/proc", 0o755);
        let _ = sys::mount("proc", "/proc", "proc", 0);
    }
}

fn bytes(path: &str) -> Result<Vec<u8>, String> {
    read_file(path).map_err(|e| format!("{path}: {e:?}"))
}

fn readlink(path: &str) -> Result<String, String> {
    let mut buf = [0u8; 512];
    let n =
        sys::readlinkat(AT_FDCWD, path, &mut buf).map_err(|e| format!("readlink {path}: {e:?}"))?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn write_path(path: &str, data: &[u8]) -> SysResult {
    let fd = sys::open(path, O_WRONLY)?;
    let r = sys::write(fd, data);
    let _ = sys::close(fd);
    r
}

/// The fields of a stat line: pid, comm, then the 50 after the comm's closing parenthesis.
fn stat_fields(path: &str) -> Result<(String, Vec<String>), String> {
    let s = text(path)?;
    let open = s.find(" (").ok_or("no ( in stat")?;
    let close = s.rfind(") ").ok_or("no ) in stat")?;
    let mut f: Vec<String> = vec![s[..open].to_string(), s[open + 2..close].to_string()];
    f.extend(
        s[close + 2..]
            .trim_end_matches('\n')
            .split(' ')
            .map(String::from),
    );
    check_eq!(f.len(), 52, "stat fields in {s:?}");
    check!(s.ends_with('\n'), "{s:?}");
    let comm = f[1].clone();
    Ok((comm, f))
}

fn num(s: &str) -> Result<i64, String> {
    s.parse().map_err(|_| format!("not a number: {s:?}"))
}

fn getsid() -> i64 {
    sys::syscall(156, &[0]).map_or(-1, |v| v as i64)
}

fn stat_matches_the_process() -> TestResult {
    let (comm, f) = stat_fields("/proc/self/stat")?;
    // Fields are 1-based in proc(5).
    let n = |i: usize| num(&f[i - 1]);
    check_eq!(n(1)?, sys::getpid() as i64);
    check_eq!(comm.as_str(), "procfs");
    check_eq!(f[2].as_str(), "R", "the reader is running");
    check_eq!(n(4)?, sys::getppid() as i64, "ppid");
    check_eq!(n(5)?, t!(sys::getpgid(0)) as i64, "pgrp");
    check_eq!(n(6)?, getsid(), "session");
    check_eq!(n(20)?, 1, "num_threads");
    check_eq!(n(21)?, 0, "itrealvalue");
    let up = uptime()?.0;
    check!(n(22)? <= up + 1, "starttime {} after uptime {}", n(22)?, up);
    // rss may read 0 on Linux: its RSS counters are per-CPU and read approximately
    // (percpu_counter_read_positive), so a small process's pages can all sit in a CPU's batch.
    check!(n(23)? > 0 && n(24)? >= 0, "vsize {} rss {}", n(23)?, n(24)?);
    // The initial stack and the argument area lie where this program's arguments are.
    let a = rt::args();
    let argv0 = a.argv().next().ok_or("no argv")?.as_ptr() as i64;
    check_eq!(n(48)?, argv0, "arg_start is argv[0]");
    let cmd = bytes("/proc/self/cmdline")?;
    check_eq!(n(49)? - n(48)?, cmd.len() as i64, "arg_end - arg_start");
    check!(n(51)? > n(50)?, "env_start {} env_end {}", n(50)?, n(51)?);
    check!(
        n(28)? > argv0 - 65536 && n(28)? < argv0,
        "startstack {} argv0 {argv0}",
        n(28)?
    );
    check_eq!(n(38)?, 17, "exit_signal SIGCHLD");
    check_eq!(n(52)?, 0, "exit_code");
    Ok(())
}

/// The status lines that Linux prints, in its order (others may come between).
const STATUS_ORDER: [&str; 35] = [
    "Name",
    "Umask",
    "State",
    "Tgid",
    "Ngid",
    "Pid",
    "PPid",
    "TracerPid",
    "Uid",
    "Gid",
    "FDSize",
    "Groups",
    "VmPeak",
    "VmSize",
    "VmLck",
    "VmHWM",
    "VmRSS",
    "VmData",
    "VmStk",
    "VmExe",
    "Threads",
    "SigQ",
    "SigPnd",
    "ShdPnd",
    "SigBlk",
    "SigIgn",
    "SigCgt",
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "Seccomp",
    "Cpus_allowed_list",
    "voluntary_ctxt_switches",
    "nonvoluntary_ctxt_switches",
];

fn status_field<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    s.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
        .map(str::trim)
}

fn status_lines_and_values() -> TestResult {
    let old = t!(sig::sigprocmask(
        sig::SIG_BLOCK,
        Some(1 << (sig::SIGUSR1 - 1))
    ));
    let old_ign = t!(sig::set_disposition(sig::SIGUSR2, 1));
    let s = text("/proc/self/status");
    let _ = sig::sigprocmask(sig::SIG_SETMASK, Some(old));
    let _ = sig::sigaction_raw(sig::SIGUSR2, Some(&old_ign));
    let s = s?;
    let names: Vec<&str> = s.lines().filter_map(|l| l.split(':').next()).collect();
    let mut at = 0;
    for want in STATUS_ORDER {
        match names[at..].iter().position(|n| *n == want) {
            Some(i) => at += i + 1,
            None => return Err(format!("{want}: missing or out of order in\n{s}")),
        }
    }
    let pid = format!("{}", sys::getpid());
    check_eq!(status_field(&s, "Tgid"), Some(pid.as_str()));
    check_eq!(status_field(&s, "Pid"), Some(pid.as_str()));
    check_eq!(status_field(&s, "Threads"), Some("1"));
    check_eq!(status_field(&s, "State"), Some("R (running)"));
    check_eq!(status_field(&s, "Umask"), Some("0022"));
    check_eq!(
        status_field(&s, "SigBlk"),
        Some("0000000000000200"),
        "SIGUSR1 blocked"
    );
    check_eq!(
        status_field(&s, "SigIgn").map(|v| u64::from_str_radix(v, 16).unwrap_or(0) & 0x800),
        Some(0x800),
        "SIGUSR2 ignored"
    );
    for l in s.lines().filter(|l| l.starts_with("Vm")) {
        check!(l.ends_with(" kB"), "{l:?}");
    }
    let uid = format!("{}", sys::getuid());
    let uids: Vec<&str> = status_field(&s, "Uid").unwrap_or("").split('\t').collect();
    check_eq!(uids.len(), 4);
    check_eq!(uids[0], uid.as_str());
    Ok(())
}

/// A maps line: (start, end, perms, offset, dev, inode, name).
fn parse_maps_line(l: &str) -> Option<(usize, usize, &str, u64, &str, u64, &str)> {
    let mut it = l.splitn(6, ' ');
    let (range, perms, off, dev, ino) =
        (it.next()?, it.next()?, it.next()?, it.next()?, it.next()?);
    let name = it.next().unwrap_or("").trim_start();
    let (a, b) = range.split_once('-')?;
    let dev_ok = dev.len() >= 5 && dev.split_once(':').is_some();
    (perms.len() == 4 && dev_ok).then_some(())?;
    Some((
        usize::from_str_radix(a, 16).ok()?,
        usize::from_str_radix(b, 16).ok()?,
        perms,
        u64::from_str_radix(off, 16).ok()?,
        dev,
        ino.parse().ok()?,
        name,
    ))
}

fn maps_lines_parse() -> TestResult {
    let s = text("/proc/self/maps")?;
    let exe = readlink("/proc/self/exe")?;
    let code = maps_lines_parse as *const () as usize;
    let local = 0u8;
    let stack = &local as *const u8 as usize;
    let (mut text_seen, mut stack_seen) = (false, false);
    let mut prev_end = 0;
    for l in s.lines() {
        let (start, end, perms, _off, _dev, ino, name) =
            parse_maps_line(l).ok_or_else(|| format!("bad maps line {l:?}"))?;
        check!(start < end && start >= prev_end, "{l}");
        prev_end = end;
        if (start..end).contains(&code) {
            check!(perms.starts_with("r-x"), "code line {l}");
            check_eq!(name, exe.as_str(), "{}", l);
            check!(ino != 0, "{l}");
            text_seen = true;
        }
        if (start..end).contains(&stack) {
            check_eq!(name, "[stack]", "{}", l);
            check!(perms.starts_with("rw"), "{l}");
            stack_seen = true;
        }
        if name.is_empty() {
            check!(
                l.ends_with(' '),
                "an unnamed line ends after the inode: {l:?}"
            );
        }
    }
    check!(
        text_seen && stack_seen,
        "text {text_seen} stack {stack_seen}\n{s}"
    );
    let sm = text("/proc/self/smaps")?;
    let sizes = sm.lines().filter(|l| l.starts_with("Size:")).count();
    check_eq!(sizes, s.lines().count(), "one Size: per mapping");
    for l in sm
        .lines()
        .filter(|l| l.starts_with("Rss:") || l.starts_with("Pss:"))
    {
        check!(l.ends_with(" kB"), "{l:?}");
    }
    check_eq!(
        sm.lines().filter(|l| l.starts_with("VmFlags:")).count(),
        sizes
    );
    Ok(())
}

fn cmdline_is_argv() -> TestResult {
    let mut want = Vec::new();
    for a in rt::args().argv() {
        want.extend_from_slice(a);
        want.push(0);
    }
    check_eq!(bytes("/proc/self/cmdline")?, want);
    // The parent's is readable too (the first process has none).
    if sys::getppid() != 0 {
        let ppid_cmd = bytes(&format!("/proc/{}/cmdline", sys::getppid()));
        check!(
            ppid_cmd.is_ok_and(|c| c.ends_with(b"\0")),
            "parent's cmdline"
        );
    }
    Ok(())
}

/// Run after execve of this program with a variable set: environ and cmdline show them.
fn env_child(a: &rt::Args) -> i32 {
    let env = bytes("/proc/self/environ").unwrap_or_default();
    let cmd = bytes("/proc/self/cmdline").unwrap_or_default();
    let ok_env = env.split(|&b| b == 0).any(|v| v == b"PROCFS_MARK=42 x") && env.ends_with(b"\0");
    let ok_cmd = cmd == b"procfs\0--env-child\0two words\0";
    let ok_arg = a.arg(2) == Some("two words");
    if ok_env && ok_cmd && ok_arg {
        0
    } else {
        eprintln!("# environ {env:?} cmdline {cmd:?}");
        1
    }
}

fn environ_after_execve() -> TestResult {
    let st = t!(proc::in_child(|| {
        let e = sys::execve(
            SELF,
            &["procfs", "--env-child", "two words"],
            &["A=1", "PROCFS_MARK=42 x"],
        );
        eprintln!("# execve: {e:?}");
        9
    }));
    check_eq!(proc::describe(st), "exited 0");
    Ok(())
}

fn fd_links() -> TestResult {
    let fd = t!(sys::open("/dev/null", O_RDONLY));
    let p = t!(sys::pipe2(0));
    let r = (|| -> TestResult {
        check_eq!(readlink(&format!("/proc/self/fd/{fd}"))?, "/dev/null");
        for end in p {
            let l = readlink(&format!("/proc/self/fd/{end}"))?;
            let ino = t!(sys::fstat(end)).st_ino;
            check_eq!(l, format!("pipe:[{ino}]"));
        }
        // The directory lists every descriptor.
        let list = dir_names("/proc/self/fd")?;
        for want in [0, 1, 2, fd, p[0], p[1]] {
            check!(list.contains(&format!("{want}")), "{want} not in {list:?}");
        }
        t!(sys::lseek(fd, 0, 0));
        let info = text(&format!("/proc/self/fdinfo/{fd}"))?;
        check!(info.starts_with("pos:\t0\nflags:\t0"), "{info:?}");
        check!(info.contains("\nino:\t"), "{info:?}");
        check_eq!(
            sys::readlinkat(AT_FDCWD, "/proc/self/fd/999", &mut [0u8; 16]),
            Err(ENOENT)
        );
        Ok(())
    })();
    let _ = sys::close(fd);
    let _ = sys::close(p[0]);
    let _ = sys::close(p[1]);
    r
}

fn dir_names(path: &str) -> Result<Vec<String>, String> {
    let fd = sys::open(path, O_RDONLY | O_DIRECTORY).map_err(|e| format!("{path}: {e:?}"))?;
    let mut names = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match sys::getdents64(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                let _ = sys::close(fd);
                return Err(format!("getdents {path}: {e:?}"));
            }
        };
        let mut off = 0;
        while off < n {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let name = &buf[off + 19..off + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            let name = String::from_utf8_lossy(name).into_owned();
            if name != "." && name != ".." {
                names.push(name);
            }
            off += reclen;
        }
    }
    let _ = sys::close(fd);
    Ok(names)
}

fn limits_follow_setrlimit() -> TestResult {
    let old = t!(sys::getrlimit(RLIMIT_NOFILE));
    t!(sys::setrlimit(
        RLIMIT_NOFILE,
        &Rlimit {
            cur: 200,
            max: old.max
        }
    ));
    let s = text("/proc/self/limits");
    t!(sys::setrlimit(RLIMIT_NOFILE, &old));
    let s = s?;
    let lines: Vec<&str> = s.lines().collect();
    check_eq!(lines.len(), 17);
    check!(
        lines[0].starts_with(
            "Limit                     Soft Limit           Hard Limit           Units"
        ),
        "{:?}",
        lines[0]
    );
    let nofile = lines
        .iter()
        .find(|l| l.starts_with("Max open files"))
        .ok_or("no open files line")?;
    let hard = if old.max == RLIM_INFINITY {
        "unlimited".to_string()
    } else {
        format!("{}", old.max)
    };
    check_eq!(
        *nofile,
        format!(
            "{:<25} {:<20} {:<20} {:<10}",
            "Max open files", 200, hard, "files"
        )
    );
    check!(s.contains("\nMax realtime timeout      "), "{s}");
    Ok(())
}

fn prctl_name(set: Option<&[u8]>) -> Result<String, String> {
    const PR_SET_NAME: usize = 15;
    const PR_GET_NAME: usize = 16;
    if let Some(n) = set {
        let mut b = n.to_vec();
        b.push(0);
        t!(sys::syscall(nr::PRCTL, &[PR_SET_NAME, b.as_ptr() as usize]));
    }
    let mut out = [0u8; 16];
    t!(sys::syscall(
        nr::PRCTL,
        &[PR_GET_NAME, out.as_mut_ptr() as usize]
    ));
    let n = out.iter().position(|&b| b == 0).unwrap_or(16);
    Ok(String::from_utf8_lossy(&out[..n]).into_owned())
}

fn comm_round_trip() -> TestResult {
    let r = (|| -> TestResult {
        check_eq!(text("/proc/self/comm")?, "procfs\n");
        prctl_name(Some(b"renamed-by-prctl-long"))?;
        check_eq!(
            text("/proc/self/comm")?,
            "renamed-by-prct\n",
            "cut to 15 bytes"
        );
        let tid = sys::gettid();
        check_eq!(
            text(&format!("/proc/self/task/{tid}/comm"))?,
            "renamed-by-prct\n"
        );
        check_eq!(t!(write_path("/proc/self/comm", b"via-proc")), 8);
        check_eq!(prctl_name(None)?, "via-proc");
        check_eq!(stat_fields("/proc/self/stat")?.0, "via-proc");
        let st = text("/proc/self/status")?;
        check_eq!(status_field(&st, "Name"), Some("via-proc"));
        // Another process's name is not ours to change.
        let (rd, wr) = {
            let p = t!(sys::pipe2(0));
            (p[0], p[1])
        };
        let child = t!(proc::spawn(|| {
            let _ = sys::close(wr);
            let _ = sys::read(rd, &mut [0u8; 1]);
            0
        }));
        let _ = sys::close(rd);
        let other = write_path(&format!("/proc/{child}/comm"), b"nope");
        let _ = sys::close(wr);
        let _ = sys::waitpid(child, 0);
        check_eq!(other, Err(EINVAL));
        Ok(())
    })();
    prctl_name(Some(b"procfs"))?;
    r
}

/// /proc/uptime as (whole seconds... in hundredths) of uptime and idle.
fn uptime() -> Result<(i64, i64), String> {
    let s = text("/proc/uptime")?;
    let f: Vec<&str> = s.trim_end().split(' ').collect();
    check_eq!(f.len(), 2, "{s:?}");
    check!(s.ends_with('\n'), "{s:?}");
    let hundredths = |v: &str| -> Result<i64, String> {
        let (a, b) = v.split_once('.').ok_or_else(|| format!("{v:?}"))?;
        check_eq!(b.len(), 2, "{v:?}");
        Ok(num(a)? * 100 + num(b)?)
    };
    Ok((hundredths(f[0])?, hundredths(f[1])?))
}

fn uptime_advances() -> TestResult {
    let a = uptime()?.0;
    sys::sleep_ns(60_000_000);
    let b = uptime()?.0;
    check!(b >= a + 5, "uptime {a} then {b} after 60 ms");
    Ok(())
}

/// /proc/interrupts: a CPU column per online CPU, each row's counts right-aligned under them,
/// the timer's row counting (ticks have happened by now), the reschedule IPI's row.
fn interrupts_rows() -> TestResult {
    let s = text("/proc/interrupts")?;
    let header = s.lines().next().unwrap_or("");
    let ncpus = header.split_whitespace().count();
    // The label column's width follows the number of interrupts (Linux's nr_irqs), so only the
    // alignment is checked: the first count ends where "CPU0" does.
    let col = header.find("CPU0").ok_or("no CPU0 column")? + 4;
    check!(header[..col - 4].trim().is_empty(), "{header:?}");
    // /proc/stat has a cpuN line per online CPU too.
    let stat = text("/proc/stat")?;
    let stat_cpus = stat
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    check_eq!(ncpus, stat_cpus, "header {header:?}");
    let counts = |l: &str| -> Result<Vec<u64>, String> {
        let colon = l.find(':').ok_or_else(|| format!("{l:?}"))?;
        check!(
            l.get(..col)
                .is_some_and(|f| f.ends_with(|c: char| c.is_ascii_digit())),
            "{l:?}"
        );
        l[colon + 1..]
            .split_whitespace()
            .take(ncpus)
            .map(|c| c.parse().map_err(|_| format!("{l:?}")))
            .collect()
    };
    let timer = s
        .lines()
        .find(|l| l.ends_with(" arch_timer"))
        .ok_or("no arch_timer row")?;
    check!(timer.contains(" Level "), "{timer:?}");
    check!(counts(timer)?.iter().sum::<u64>() > 0, "{timer:?}");
    let ipi = s
        .lines()
        .find(|l| l.starts_with("IPI0:"))
        .ok_or("no IPI0 row")?;
    check!(ipi.ends_with("  Rescheduling interrupts"), "{ipi:?}");
    check_eq!(counts(ipi)?.len(), ncpus);
    Ok(())
}

/// /proc/vmstat: "name value" lines, free pages within what meminfo says, no swapping.
fn vmstat_fields() -> TestResult {
    let s = text("/proc/vmstat")?;
    let get = |name: &str| -> Result<u64, String> {
        let l = s
            .lines()
            .find(|l| l.split(' ').next() == Some(name))
            .ok_or_else(|| format!("no {name}"))?;
        l[name.len() + 1..].parse().map_err(|_| format!("{l:?}"))
    };
    let free = get("nr_free_pages")?;
    check!(free > 0, "nr_free_pages {free}");
    for n in [
        "nr_anon_pages",
        "nr_file_pages",
        "nr_kernel_stack",
        "nr_page_table_pages",
    ] {
        get(n)?;
    }
    check_eq!(get("pswpin")?, 0);
    check_eq!(get("pswpout")?, 0);
    check!(s.lines().all(|l| l.split(' ').count() == 2), "{s}");
    Ok(())
}

fn meminfo_fields() -> TestResult {
    let s = text("/proc/meminfo")?;
    let kb = |name: &str| -> Result<u64, String> {
        let l = s
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .ok_or_else(|| format!("no {name}"))?;
        check!(l.ends_with(" kB"), "{l:?}");
        l[name.len() + 1..l.len() - 3]
            .trim()
            .parse()
            .map_err(|_| format!("{l:?}"))
    };
    for n in [
        "MemTotal",
        "MemFree",
        "MemAvailable",
        "Buffers",
        "Cached",
        "SwapTotal",
        "Shmem",
        "Slab",
        "KernelStack",
        "PageTables",
        "CommitLimit",
    ] {
        kb(n)?;
    }
    check!(kb("MemFree")? <= kb("MemTotal")? && kb("MemTotal")? > 0);
    let first = s.lines().next().unwrap_or("");
    check_eq!(first.len(), 27, "{:?}", first);
    Ok(())
}

fn loadavg_fields() -> TestResult {
    let s = text("/proc/loadavg")?;
    let f: Vec<&str> = s.trim_end().split(' ').collect();
    check_eq!(f.len(), 5, "{s:?}");
    let (run, total) = f[3].split_once('/').ok_or("no running/total")?;
    check!(num(run)? >= 1 && num(total)? >= num(run)?, "{s:?}");
    check!(num(f[4])? >= sys::getpid() as i64, "{s:?}");
    Ok(())
}

struct Parked {
    word: core::sync::atomic::AtomicU32,
}

extern "C" fn park(arg: usize) -> i32 {
    // SAFETY: arg is the address of a Parked that outlives the thread (joined before drop).
    let p = unsafe { &*(arg as *const Parked) };
    while p.word.load(core::sync::atomic::Ordering::Acquire) == 0 {
        let _ = sys::futex(p.word.as_ptr(), sys::FUTEX_WAIT, 0, 0);
    }
    0
}

fn task_lists_threads() -> TestResult {
    let parked = Parked {
        word: core::sync::atomic::AtomicU32::new(0),
    };
    let arg = &parked as *const Parked as usize;
    let a = t!(proc::spawn_thread(park, arg, 0));
    let b = proc::spawn_thread(park, arg, 0);
    let r = (|| -> TestResult {
        let b = b.as_ref().map_err(|e| format!("thread: {e:?}"))?;
        let pid = sys::getpid();
        let mut list = dir_names("/proc/self/task")?;
        list.sort();
        let mut want = vec![format!("{pid}"), format!("{}", a.tid), format!("{}", b.tid)];
        want.sort();
        check_eq!(list, want);
        let (_, f) = stat_fields("/proc/self/stat")?;
        check_eq!(f[19].as_str(), "3", "num_threads");
        for tid in [a.tid, b.tid] {
            let (comm, f) = stat_fields(&format!("/proc/self/task/{tid}/stat"))?;
            check_eq!(num(&f[0])?, tid as i64);
            check_eq!(comm.as_str(), "procfs");
            let st = text(&format!("/proc/{pid}/task/{tid}/status"))?;
            check_eq!(
                status_field(&st, "Pid").map(String::from),
                Some(format!("{tid}"))
            );
            check_eq!(
                status_field(&st, "Tgid").map(String::from),
                Some(format!("{pid}"))
            );
        }
        let me = readlink("/proc/thread-self")?;
        check_eq!(me, format!("{pid}/task/{}", sys::gettid()));
        Ok(())
    })();
    parked.word.store(1, core::sync::atomic::Ordering::Release);
    let _ = sys::futex(parked.word.as_ptr(), sys::FUTEX_WAKE, 16, 0);
    a.join();
    if let Ok(b) = b {
        b.join();
    }
    r
}

fn links_cwd_exe_root() -> TestResult {
    let mut buf = [0u8; 256];
    let n = t!(sys::getcwd(&mut buf));
    let cwd = String::from_utf8_lossy(&buf[..n.saturating_sub(1)]).into_owned();
    check_eq!(readlink("/proc/self/cwd")?, cwd);
    t!(sys::chdir("/proc"));
    let moved = readlink("/proc/self/cwd");
    t!(sys::chdir(&cwd));
    check_eq!(moved?, "/proc");
    check_eq!(readlink("/proc/self/exe")?, SELF);
    check_eq!(readlink("/proc/self/root")?, "/");
    check_eq!(readlink("/proc/self")?, format!("{}", sys::getpid()));
    Ok(())
}

fn mountinfo_lines() -> TestResult {
    let s = text("/proc/self/mountinfo")?;
    let mut points = Vec::new();
    for l in s.lines() {
        let (left, right) = l
            .split_once(" - ")
            .ok_or_else(|| format!("no separator: {l:?}"))?;
        let f: Vec<&str> = left.split(' ').collect();
        check!(f.len() >= 6, "{l:?}");
        num(f[0])?;
        num(f[1])?;
        check!(f[2].split_once(':').is_some(), "{l:?}");
        let r: Vec<&str> = right.split(' ').collect();
        check_eq!(r.len(), 3, "{}", l);
        points.push((f[4].to_string(), r[0].to_string()));
    }
    check!(points.iter().any(|(p, _)| p == "/"), "{s}");
    check!(
        points.iter().any(|(p, t)| p == "/proc" && t == "proc"),
        "{s}"
    );
    Ok(())
}

fn auxv_is_the_programs() -> TestResult {
    let b = bytes("/proc/self/auxv")?;
    check!(b.len() % 16 == 0 && b.len() >= 32, "{} bytes", b.len());
    let pairs: Vec<(usize, usize)> = b
        .chunks(16)
        .map(|c| {
            let w = |i: usize| usize::from_ne_bytes(c[i..i + 8].try_into().unwrap_or([0; 8]));
            (w(0), w(8))
        })
        .collect();
    let end = pairs
        .iter()
        .position(|&(k, _)| k == 0)
        .ok_or("no AT_NULL")?;
    let mine: Vec<(usize, usize)> = rt::args().auxv().filter(|&(k, _)| k != 0).collect();
    check_eq!(&pairs[..end], &mine[..]);
    Ok(())
}

fn sys_kernel_files() -> TestResult {
    let u = sys::uname();
    check_eq!(text("/proc/sys/kernel/ostype")?, "Linux\n");
    check_eq!(
        text("/proc/sys/kernel/osrelease")?,
        format!("{}\n", field_str(&u.release))
    );
    let host = field_str(&u.nodename).to_string();
    check_eq!(text("/proc/sys/kernel/hostname")?, format!("{host}\n"));
    check_eq!(
        t!(write_path("/proc/sys/kernel/hostname", b"procfs-host\n")),
        12
    );
    let seen = field_str(&sys::uname().nodename).to_string();
    let _ = write_path("/proc/sys/kernel/hostname", host.as_bytes());
    check_eq!(seen, "procfs-host");
    let back = sys::uname();
    check_eq!(field_str(&back.nodename), host.as_str());
    let pid_max = num(text("/proc/sys/kernel/pid_max")?.trim_end())?;
    check!(pid_max > 300, "{pid_max}");
    check_eq!(write_path("/proc/sys/kernel/pid_max", b"abc"), Err(EINVAL));
    check_eq!(write_path("/proc/sys/kernel/pid_max", b"100"), Err(EINVAL));
    check_eq!(write_path("/proc/sys/kernel/pid_max", b""), Ok(0));
    // One value is taken; the write reports what it consumed.
    let again = format!(" {pid_max}  7\n");
    check_eq!(
        write_path("/proc/sys/kernel/pid_max", again.as_bytes()),
        Ok(again.len() - 2)
    );
    check_eq!(num(text("/proc/sys/kernel/pid_max")?.trim_end())?, pid_max);
    Ok(())
}

fn dead_process_files() -> TestResult {
    let p = t!(sys::pipe2(0));
    let child = t!(proc::spawn(|| {
        let _ = sys::close(p[1]);
        let _ = sys::read(p[0], &mut [0u8; 1]);
        0
    }));
    let _ = sys::close(p[0]);
    let path = format!("/proc/{child}/stat");
    let fd = sys::open(&path, O_RDONLY);
    let cmd = bytes(&format!("/proc/{child}/cmdline"));
    let _ = sys::close(p[1]);
    let _ = sys::waitpid(child, 0);
    let fd = t!(fd);
    let after = sys::read(fd, &mut [0u8; 512]);
    let _ = sys::close(fd);
    let want: Vec<u8> = rt::args()
        .argv()
        .flat_map(|a| a.iter().copied().chain([0]))
        .collect();
    check_eq!(cmd?, want, "a forked child's cmdline");
    check_eq!(after, Err(ESRCH), "reading a reaped process's stat");
    check_eq!(sys::open(&path, O_RDONLY), Err(ENOENT));
    Ok(())
}

/// An ended, unreaped child (a zombie, as ps shows `<defunct>`): listed in /proc, its stat in
/// state Z with its name, family and no memory, its status `Z (zombie)`, its cmdline empty;
/// all gone once it is reaped.
fn zombie_process_files() -> TestResult {
    let me = sys::getpid() as i64;
    let child = t!(proc::spawn(|| 0));
    // waitid(P_PID, child, WEXITED | WNOWAIT): returns once it is a zombie, leaving it one.
    let mut info = [0u8; 128];
    t!(sys::syscall(
        nr::WAITID,
        &[
            1,
            child as usize,
            info.as_mut_ptr() as usize,
            4 | 0x0100_0000,
            0
        ]
    ));
    let listed = dir_names("/proc")?.contains(&format!("{child}"));
    let (comm, f) = stat_fields(&format!("/proc/{child}/stat"))?;
    let status = text(&format!("/proc/{child}/status"))?;
    let cmdline = bytes(&format!("/proc/{child}/cmdline"));
    let _ = sys::waitpid(child, 0);
    check!(listed, "/proc lists the zombie {child}");
    check_eq!(comm, "procfs");
    check_eq!(f[0], format!("{child}"));
    check_eq!(f[2], "Z", "stat's state");
    check_eq!(num(&f[3])?, me, "stat's ppid");
    check_eq!(
        num(&f[4])?,
        num(text("/proc/self/stat")?.split(' ').nth(4).unwrap_or(""))?
    );
    check_eq!(num(&f[22])?, 0, "a zombie's vsize");
    check_eq!(num(&f[23])?, 0, "a zombie's rss");
    check_eq!(
        status_field(&status, "State"),
        Some("Z (zombie)"),
        "{status}"
    );
    check_eq!(status_field(&status, "Name"), Some("procfs"));
    let ppid = me.to_string();
    check_eq!(status_field(&status, "PPid"), Some(ppid.as_str()));
    check_eq!(
        status_field(&status, "VmRSS"),
        None,
        "a zombie has no memory"
    );
    check_eq!(cmdline?, Vec::<u8>::new(), "a zombie's cmdline");
    check!(!dir_names("/proc")?.contains(&format!("{child}")), "reaped");
    check_eq!(
        sys::open(&format!("/proc/{child}/stat"), O_RDONLY),
        Err(ENOENT)
    );
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    ensure_proc();
    if a.arg(1) == Some("--env-child") {
        return env_child(a);
    }
    ktap::run(&[
        ("mounted_proc_sys_devtmpfs_tmpfs", mounted_filesystems),
        ("proc_self_status", proc_self_status),
        ("sys_cpu_online_possible", sys_cpu_online_possible),
        ("proc_cpuinfo_features", proc_cpuinfo),
        ("dev_nodes", devtmpfs_nodes),
        ("stat_matches_the_process", stat_matches_the_process),
        ("status_lines_and_values", status_lines_and_values),
        ("maps_and_smaps_lines", maps_lines_parse),
        ("cmdline_is_argv", cmdline_is_argv),
        ("environ_after_execve", environ_after_execve),
        ("fd_links_and_fdinfo", fd_links),
        ("limits_follow_setrlimit", limits_follow_setrlimit),
        ("comm_round_trip", comm_round_trip),
        ("uptime_advances", uptime_advances),
        ("meminfo_fields", meminfo_fields),
        ("interrupts_rows", interrupts_rows),
        ("vmstat_fields", vmstat_fields),
        ("loadavg_fields", loadavg_fields),
        ("task_lists_threads", task_lists_threads),
        ("links_cwd_exe_root", links_cwd_exe_root),
        ("mountinfo_lines", mountinfo_lines),
        ("auxv_is_the_programs", auxv_is_the_programs),
        ("sys_kernel_files", sys_kernel_files),
        ("dead_process_files", dead_process_files),
        ("zombie_process_files", zombie_process_files),
    ])
}

entry!(main);
