//! Small process-wide calls: ids, process groups, set_tid_address, set_robust_list, prlimit64,
//! getrandom, uname, sched_yield and sched_getaffinity, personality, the prctl options Debian's
//! QEMU calls at start (PR_CAPBSET_READ, PR_SET/GET_TIMERSLACK, PR_MCE_KILL/_GET).
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sys::*;
use svelt_user::*;

fn ids_are_root() -> TestResult {
    for n in [nr::GETUID, nr::GETEUID, nr::GETGID, nr::GETEGID] {
        check_eq!(sys::syscall(n, &[]), Ok(0), "syscall {}", n);
    }
    Ok(())
}

fn process_groups() -> TestResult {
    let me = sys::getpid();
    let pg = t!(sys::getpgid(0));
    check_eq!(sys::getpgid(me), Ok(pg));
    check_eq!(sys::getpgid(0x3fff_fff0), Err(ESRCH));
    let shared = Shared::new([0i32; 3]);
    let child = t!(spawn(|| {
        let before = sys::getpgid(0).unwrap_or(-1);
        let r = sys::setpgid(0, 0).map(|_| 0).unwrap_or(-1);
        shared.set([before, r, sys::getpgid(0).unwrap_or(-1)]);
        0
    }));
    let (_, st) = t!(sys::waitpid(child, 0));
    check_eq!(st, 0);
    check_eq!(
        shared.get(),
        [pg, 0, child],
        "child: inherited group, setpgid(0,0), own group"
    );
    check_eq!(sys::setpgid(0, -1), Err(EINVAL));
    Ok(())
}

fn set_tid_address_returns_tid() -> TestResult {
    let mut word = 0i32;
    check_eq!(
        sys::syscall(nr::SET_TID_ADDRESS, &[&mut word as *mut i32 as usize]),
        Ok(sys::gettid() as usize)
    );
    check_eq!(
        sys::syscall(nr::SET_TID_ADDRESS, &[0]),
        Ok(sys::gettid() as usize)
    );
    Ok(())
}

fn robust_list() -> TestResult {
    // struct robust_list_head is 24 bytes; any other length is EINVAL.
    let head: [usize; 3] = [0, 0, 0];
    let mut h = head;
    h[0] = &h as *const _ as usize; // an empty circular list points at itself
    check_eq!(
        sys::syscall(nr::SET_ROBUST_LIST, &[h.as_ptr() as usize, 24]),
        Ok(0)
    );
    check_eq!(
        sys::syscall(nr::SET_ROBUST_LIST, &[h.as_ptr() as usize, 16]),
        Err(EINVAL)
    );
    let mut got: usize = 0;
    let mut len: usize = 0;
    check_eq!(
        sys::syscall(
            nr::GET_ROBUST_LIST,
            &[
                0,
                &mut got as *mut usize as usize,
                &mut len as *mut usize as usize
            ]
        ),
        Ok(0)
    );
    check_eq!((got, len), (h.as_ptr() as usize, 24));
    Ok(())
}

fn prlimit64() -> TestResult {
    let mut old = Rlimit::default();
    let p = &mut old as *mut Rlimit as usize;
    t!(sys::syscall(
        nr::PRLIMIT64,
        &[0, RLIMIT_NOFILE as usize, 0, p]
    ));
    check!(old.cur > 0 && old.cur <= old.max, "RLIMIT_NOFILE {old:?}");
    t!(sys::syscall(
        nr::PRLIMIT64,
        &[0, RLIMIT_STACK as usize, 0, p]
    ));
    check!(old.cur >= 128 * 1024, "RLIMIT_STACK {old:?}");
    // Lower the soft file limit and read it back; then restore it.
    let mut nofile = Rlimit::default();
    let np = &mut nofile as *mut Rlimit as usize;
    t!(sys::syscall(
        nr::PRLIMIT64,
        &[0, RLIMIT_NOFILE as usize, 0, np]
    ));
    let lower = Rlimit {
        cur: 64,
        max: nofile.max,
    };
    let mut prev = Rlimit::default();
    t!(sys::syscall(
        nr::PRLIMIT64,
        &[
            0,
            RLIMIT_NOFILE as usize,
            &lower as *const Rlimit as usize,
            &mut prev as *mut Rlimit as usize
        ]
    ));
    check_eq!(prev.cur, nofile.cur);
    t!(sys::syscall(
        nr::PRLIMIT64,
        &[0, RLIMIT_NOFILE as usize, 0, p]
    ));
    check_eq!(old.cur, 64);
    t!(sys::syscall(
        nr::PRLIMIT64,
        &[
            0,
            RLIMIT_NOFILE as usize,
            &nofile as *const Rlimit as usize,
            0
        ]
    ));
    check_eq!(
        sys::syscall(nr::PRLIMIT64, &[0, 999, 0, p]),
        Err(EINVAL),
        "unknown resource"
    );
    let bad = Rlimit { cur: 10, max: 5 };
    check_eq!(
        sys::syscall(
            nr::PRLIMIT64,
            &[0, RLIMIT_NOFILE as usize, &bad as *const Rlimit as usize, 0]
        ),
        Err(EINVAL),
        "cur > max"
    );
    Ok(())
}

fn getrandom() -> TestResult {
    let mut a = [0u8; 32];
    let mut b = [0u8; 32];
    check_eq!(sys::getrandom(&mut a, 0), Ok(32));
    check_eq!(sys::getrandom(&mut b, 0), Ok(32));
    check!(a != b, "two getrandom calls returned the same bytes");
    check!(a.iter().any(|&x| x != 0));
    check_eq!(sys::getrandom(&mut a[..0], 0), Ok(0));
    check_eq!(sys::getrandom(&mut a, 0x1000), Err(EINVAL), "unknown flag");
    const GRND_NONBLOCK: u32 = 1;
    check_eq!(sys::getrandom(&mut a, GRND_NONBLOCK), Ok(32));
    Ok(())
}

fn uname() -> TestResult {
    let u = sys::uname();
    check_eq!(sys::field_str(&u.sysname), "Linux");
    check_eq!(sys::field_str(&u.machine), "aarch64");
    check!(!sys::field_str(&u.release).is_empty());
    println!("# release {}", sys::field_str(&u.release));
    Ok(())
}

fn sched() -> TestResult {
    check_eq!(sys::sched_yield(), Ok(0));
    let mut mask = [0u64; 16];
    let n = t!(sys::syscall(
        nr::SCHED_GETAFFINITY,
        &[0, core::mem::size_of_val(&mask), mask.as_mut_ptr() as usize]
    ));
    check!(n >= 8 && n % 8 == 0, "returned size {n}");
    let cpus: u32 = mask.iter().map(|m| m.count_ones()).sum();
    check!(cpus >= 1);
    check!(mask[0] & 1 != 0, "CPU 0 in the mask {:#x}", mask[0]);
    println!("# {cpus} cpus in the affinity mask");
    // Every CPU that is online is in the mask, as /sys counts them ("0-N" or "0"); the
    // buffer size rule below goes by the CPUs possible (more, on a machine where some CPUs
    // could not be started).
    let last_cpu = |path: &str| -> Result<usize, String> {
        let bytes = io::read_file(path).map_err(|e| format!("{path}: {e:?}"))?;
        let text = core::str::from_utf8(&bytes).unwrap_or("").trim_end();
        text.rsplit(['-', ','])
            .next()
            .and_then(|v| v.parse::<usize>().ok())
            .ok_or_else(|| format!("{path} reads {text:?}"))
    };
    let online = last_cpu("/sys/devices/system/cpu/online");
    check!(online.is_ok(), "{online:?}");
    check_eq!(
        cpus as usize,
        online.unwrap_or(0) + 1,
        "CPUs in the mask against /sys/devices/system/cpu/online"
    );
    let possible = last_cpu("/sys/devices/system/cpu/possible");
    check!(possible.is_ok(), "{possible:?}");
    let nr = possible.unwrap_or(0) + 1;
    // A buffer must hold nr_cpu_ids bits: one word does only up to 64 CPUs.
    let one_word = sys::syscall(nr::SCHED_GETAFFINITY, &[0, 8, mask.as_mut_ptr() as usize]);
    check_eq!(one_word, if nr > 64 { Err(EINVAL) } else { Ok(8) });
    // A buffer smaller than the kernel's cpumask is EINVAL; unaligned size too.
    check_eq!(
        sys::syscall(nr::SCHED_GETAFFINITY, &[0, 4, mask.as_mut_ptr() as usize]),
        Err(EINVAL)
    );
    check_eq!(
        sys::syscall(
            nr::SCHED_GETAFFINITY,
            &[0x3fff_fff0, 128, mask.as_mut_ptr() as usize]
        ),
        Err(ESRCH)
    );
    Ok(())
}

const PERSONALITY_QUERY: u32 = 0xffff_ffff;
const ADDR_NO_RANDOMIZE: u32 = 0x0040000;

/// personality: 0xffffffff only asks; a set returns the old persona; fork inherits it and
/// execve keeps it.
fn personality() -> TestResult {
    check_eq!(sys::personality(PERSONALITY_QUERY), Ok(0), "PER_LINUX");
    check_eq!(
        sys::personality(ADDR_NO_RANDOMIZE),
        Ok(0),
        "the old persona"
    );
    let r: TestResult = (|| {
        check_eq!(
            sys::personality(PERSONALITY_QUERY),
            Ok(ADDR_NO_RANDOMIZE as usize)
        );
        let st = t!(in_child(|| {
            if sys::personality(PERSONALITY_QUERY) != Ok(ADDR_NO_RANDOMIZE as usize) {
                return 2;
            }
            let e = sys::execve("/bin/tests/sysmisc", &["sysmisc", "--persona"], &[]);
            eprintln!("# execve: {e:?}");
            3
        }));
        check_eq!(st, 0, "child: {}", describe(st));
        Ok(())
    })();
    check_eq!(sys::personality(0), Ok(ADDR_NO_RANDOMIZE as usize));
    r?;
    check_eq!(sys::personality(PERSONALITY_QUERY), Ok(0));
    Ok(())
}

fn prctl(op: u32, a: [usize; 4]) -> SysResult {
    sys::syscall(nr::PRCTL, &[op as usize, a[0], a[1], a[2], a[3]])
}

/// The prctl options QEMU calls at start, as Linux answers them: PR_CAPBSET_READ is 1 for
/// each capability root holds up to CAP_LAST_CAP (40), EINVAL past it; PR_SET_TIMERSLACK
/// sets the thread's slack (0: back to its default, which a child takes from its creator's
/// slack at fork); PR_MCE_KILL's policy reads back through PR_MCE_KILL_GET (late 0, early 1,
/// default 2), with its argument rules.
fn prctl_qemu_options() -> TestResult {
    use svelt_abi::uapi::sys::{
        PR_CAPBSET_READ, PR_GET_TIMERSLACK, PR_MCE_KILL, PR_MCE_KILL_GET, PR_SET_TIMERSLACK,
    };
    for cap in [0, 21, 40] {
        check_eq!(prctl(PR_CAPBSET_READ, [cap, 0, 0, 0]), Ok(1), "cap {cap}");
    }
    check_eq!(prctl(PR_CAPBSET_READ, [41, 0, 0, 0]), Err(EINVAL));
    let slack = t!(prctl(PR_GET_TIMERSLACK, [0; 4]));
    check!(slack > 0, "slack {slack}");
    t!(prctl(PR_SET_TIMERSLACK, [123_456, 0, 0, 0]));
    check_eq!(prctl(PR_GET_TIMERSLACK, [0; 4]), Ok(123_456));
    let st = t!(in_child(|| {
        // The child's slack and default are its creator's slack.
        let a = prctl(PR_GET_TIMERSLACK, [0; 4]);
        let _ = prctl(PR_SET_TIMERSLACK, [7, 0, 0, 0]);
        let _ = prctl(PR_SET_TIMERSLACK, [0, 0, 0, 0]);
        let b = prctl(PR_GET_TIMERSLACK, [0; 4]);
        i32::from(a != Ok(123_456)) | (i32::from(b != Ok(123_456)) << 1)
    }));
    check_eq!(st, 0, "child: {}", describe(st));
    t!(prctl(PR_SET_TIMERSLACK, [0, 0, 0, 0]));
    check_eq!(
        prctl(PR_GET_TIMERSLACK, [0; 4]),
        Ok(slack),
        "the default again"
    );
    // PR_MCE_KILL: CLEAR 0, SET 1; PR_MCE_KILL_LATE 0, _EARLY 1, _DEFAULT 2.
    check_eq!(prctl(PR_MCE_KILL_GET, [0; 4]), Ok(2));
    t!(prctl(PR_MCE_KILL, [1, 1, 0, 0]));
    check_eq!(prctl(PR_MCE_KILL_GET, [0; 4]), Ok(1), "early");
    let st = t!(in_child(|| i32::from(
        prctl(PR_MCE_KILL_GET, [0; 4]) != Ok(1)
    )));
    check_eq!(st, 0, "inherited: {}", describe(st));
    t!(prctl(PR_MCE_KILL, [1, 0, 0, 0]));
    check_eq!(prctl(PR_MCE_KILL_GET, [0; 4]), Ok(0), "late");
    check_eq!(prctl(PR_MCE_KILL, [1, 3, 0, 0]), Err(EINVAL));
    check_eq!(prctl(PR_MCE_KILL, [0, 1, 0, 0]), Err(EINVAL));
    check_eq!(prctl(PR_MCE_KILL, [2, 0, 0, 0]), Err(EINVAL));
    check_eq!(prctl(PR_MCE_KILL, [1, 1, 1, 0]), Err(EINVAL));
    check_eq!(prctl(PR_MCE_KILL_GET, [1, 0, 0, 0]), Err(EINVAL));
    check_eq!(
        prctl(PR_MCE_KILL_GET, [0; 4]),
        Ok(0),
        "refusals change nothing"
    );
    t!(prctl(PR_MCE_KILL, [0, 0, 0, 0]));
    check_eq!(prctl(PR_MCE_KILL_GET, [0; 4]), Ok(2), "cleared");
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--persona") {
        return i32::from(sys::personality(PERSONALITY_QUERY) != Ok(ADDR_NO_RANDOMIZE as usize));
    }
    ktap::run(&[
        ("uid_gid_getters_are_root", ids_are_root),
        ("setpgid_getpgid", process_groups),
        ("set_tid_address", set_tid_address_returns_tid),
        ("set_get_robust_list", robust_list),
        ("prlimit64", prlimit64),
        ("getrandom", getrandom),
        ("uname", uname),
        ("sched_yield_getaffinity", sched),
        ("personality", personality),
        ("prctl_qemu_options", prctl_qemu_options),
    ])
}

entry!(main);
