//! What the init mounted: /proc (self/status, cpuinfo), /sys (cpu online/possible), devtmpfs
//! and tmpfs, as a program sees them.
#![no_std]
#![no_main]

use svelt_user::io::read_file;
use svelt_user::ktap::TestResult;
use svelt_user::sys::*;
use svelt_user::*;

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

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("mounted_proc_sys_devtmpfs_tmpfs", mounted_filesystems),
        ("proc_self_status", proc_self_status),
        ("sys_cpu_online_possible", sys_cpu_online_possible),
        ("proc_cpuinfo_features", proc_cpuinfo),
        ("dev_nodes", devtmpfs_nodes),
    ])
}

entry!(main);
