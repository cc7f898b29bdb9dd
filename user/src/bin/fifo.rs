//! FIFOs (named pipes): mknod(S_IFIFO) and what stat shows, Linux's open rules (a reader waits
//! for a writer and a writer for a reader; O_NONBLOCK readers open at once and writers without
//! a reader fail with ENXIO; O_RDWR never waits; a signal ends the wait), bytes through the
//! pipe buffer, POLLHUP only after a writer came, and the bytes gone with the last close;
//! make's jobserver (mkfifo, every process opens it O_RDWR and passes tokens through it).
//!
//! Built with `FIFO_ROUNDS=N` in the environment, the blocking opens also race their partner N
//! times at varied delays with a CPU hog on each CPU (a stress run; the default is one round).
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const MS: u64 = 1_000_000;
const MKNODAT: usize = 33;
const UMASK: usize = 166;
const S_IFIFO: u32 = 0o010000;
const DT_FIFO: u8 = 1;

fn mknod(path: &str, mode: u32) -> SysResult {
    let p = CPath::new(path);
    sys::syscall(MKNODAT, &[AT_FDCWD as usize, p.ptr(), mode as usize, 0])
}

/// A fresh FIFO in /tmp, named after the test.
fn fifo(name: &str) -> Result<String, String> {
    let path = format!("/tmp/fifo-{name}-{}", sys::getpid());
    let _ = sys::unlinkat(AT_FDCWD, &path, 0);
    mknod(&path, S_IFIFO | 0o666).map_err(|e| format!("mknod {path}: {e:?}"))?;
    Ok(path)
}

fn mknod_makes_a_fifo() -> TestResult {
    let old = t!(sys::syscall(UMASK, &[0o022]));
    let path = t!(fifo("stat"));
    sys::syscall(UMASK, &[old]).ok();
    let st = t!(sys::stat(&path));
    check_eq!(st.st_mode, S_IFIFO | 0o644, "mode {:o}", st.st_mode);
    check_eq!(st.st_size, 0);
    check_eq!(st.st_nlink, 1);
    check_eq!(mknod(&path, S_IFIFO | 0o600), Err(EEXIST));
    // An open end's fstat shows the FIFO too.
    let fd = t!(sys::open(&path, O_RDWR | O_CLOEXEC));
    let fst = t!(sys::fstat(fd));
    check_eq!(fst.st_ino, st.st_ino);
    check_eq!(fst.st_mode & S_IFMT, S_IFIFO);
    check_eq!(sys::lseek(fd, 0, 0), Err(ESPIPE));
    t!(sys::close(fd));
    // getdents names it DT_FIFO.
    let dir = t!(sys::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    let mut buf = [0u8; 4096];
    let name = &path["/tmp/".len()..];
    let mut dtype = None;
    loop {
        let n = t!(sys::getdents64(dir, &mut buf));
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off < n {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if sys::field_str(&buf[off + 19..off + reclen]) == name {
                dtype = Some(buf[off + 18]);
            }
            off += reclen;
        }
    }
    t!(sys::close(dir));
    check_eq!(dtype, Some(DT_FIFO));
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    check_eq!(sys::stat(&path).map(|_| ()), Err(ENOENT));
    Ok(())
}

fn nonblocking_opens() -> TestResult {
    let path = t!(fifo("nonblock"));
    // A writer with no reader: ENXIO; a reader opens at once.
    check_eq!(sys::open(&path, O_WRONLY | O_NONBLOCK), Err(ENXIO));
    let r = t!(sys::open(&path, O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    // No writer yet: nothing to read, and no hang-up either (none has come).
    let mut buf = [0u8; 16];
    check_eq!(sys::read(r, &mut buf), Ok(0));
    let mut pfd = [Pollfd {
        fd: r,
        events: POLLIN,
        revents: 0,
    }];
    check_eq!(sys::ppoll(&mut pfd, Some(&Timespec::default())), Ok(0));
    let w = t!(sys::open(&path, O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    check_eq!(sys::read(r, &mut buf), Err(EAGAIN));
    check_eq!(sys::write(w, b"bytes"), Ok(5));
    t!(sys::close(w));
    // The writer came and went: data, then hang-up.
    check_eq!(sys::ppoll(&mut pfd, Some(&Timespec::default())), Ok(1));
    check_eq!(pfd[0].revents, POLLIN | POLLHUP);
    check_eq!(sys::read(r, &mut buf), Ok(5));
    check_eq!(&buf[..5], b"bytes");
    check_eq!(sys::read(r, &mut buf), Ok(0));
    t!(sys::close(r));
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    Ok(())
}

/// Readers that opened while a writer was there (blocking or not) see POLLHUP once the
/// writers are gone; only a nonblocking reader that found none waits for one to come and go.
fn hangup_once_the_writers_are_gone() -> TestResult {
    let path = t!(fifo("hup"));
    let early = t!(sys::open(&path, O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    let w = t!(sys::open(&path, O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    // A writer is there: neither open waits.
    let blocking = t!(sys::open(&path, O_RDONLY | O_CLOEXEC));
    let nonblocking = t!(sys::open(&path, O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    let poll = |fd| {
        let mut pfd = [Pollfd {
            fd,
            events: POLLIN,
            revents: 0,
        }];
        sys::ppoll(&mut pfd, Some(&Timespec::default())).map(|_| pfd[0].revents)
    };
    for fd in [early, blocking, nonblocking] {
        check_eq!(poll(fd), Ok(0), "fd {fd} with a writer open");
    }
    t!(sys::close(w));
    for fd in [early, blocking, nonblocking] {
        check_eq!(poll(fd), Ok(POLLHUP), "fd {fd} after the writer closed");
    }
    // A nonblocking reader that comes now finds no writer: no hang-up until the next one.
    let late = t!(sys::open(&path, O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    check_eq!(poll(late), Ok(0));
    let w = t!(sys::open(&path, O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    t!(sys::close(w));
    check_eq!(poll(late), Ok(POLLHUP));
    for fd in [early, blocking, nonblocking, late] {
        t!(sys::close(fd));
    }
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    Ok(())
}

/// A blocking open waits for its partner: the child opens one side and writes or reads; the
/// parent waits `delay_ns`, checks the child is still waiting (when the delay is long enough
/// to be sure it got there), then opens the other side.
fn blocking_open_waits(child_writes: bool, delay_ns: u64) -> TestResult {
    let path = t!(fifo(if child_writes { "bw" } else { "br" }));
    let p2 = path.clone();
    let pid = t!(spawn(move || {
        let flags = if child_writes { O_WRONLY } else { O_RDONLY };
        let Ok(fd) = sys::open(&p2, flags) else {
            return 2;
        };
        if child_writes {
            if sys::write(fd, b"hello") != Ok(5) {
                return 3;
            }
        } else {
            let mut b = [0u8; 8];
            if sys::read(fd, &mut b) != Ok(5) || &b[..5] != b"world" {
                return 4;
            }
        }
        0
    }));
    if delay_ns > 0 {
        sys::sleep_ns(delay_ns);
    }
    if delay_ns >= 100 * MS {
        check_eq!(
            sys::waitpid(pid, WNOHANG),
            Ok((0, 0)),
            "the child's open did not wait"
        );
    }
    let fd = t!(sys::open(
        &path,
        if child_writes { O_RDONLY } else { O_WRONLY } | O_CLOEXEC
    ));
    if child_writes {
        let mut b = [0u8; 8];
        check_eq!(sys::read(fd, &mut b), Ok(5));
        check_eq!(&b[..5], b"hello");
    } else {
        check_eq!(sys::write(fd, b"world"), Ok(5));
    }
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    t!(sys::close(fd));
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    Ok(())
}

fn writer_waits_for_reader() -> TestResult {
    blocking_open_waits(true, 100 * MS)
}

fn reader_waits_for_writer() -> TestResult {
    blocking_open_waits(false, 100 * MS)
}

extern "C" fn noop(_sig: i32, _info: *mut SigInfo, _uc: *mut u8) {}

/// A signal with a handler (no SA_RESTART) ends a waiting open with EINTR.
fn waiting_open_is_interrupted() -> TestResult {
    let path = t!(fifo("eintr"));
    t!(set_handler(SIGALRM, noop, 0, 0));
    // The clock is read before the timer is armed: read after it, a host that stalls the guest
    // in between makes less than 50 ms seem to pass (seen once on Linux in the matrix).
    let t0 = sys::now_ns();
    t!(sys::setitimer_real(50 * MS, 0));
    check_eq!(sys::open(&path, O_RDONLY | O_CLOEXEC), Err(EINTR));
    check!(sys::now_ns() - t0 >= 50 * MS);
    t!(set_disposition(SIGALRM, SIG_DFL));
    // The interrupted reader left no trace: a nonblocking writer still finds no reader.
    check_eq!(sys::open(&path, O_WRONLY | O_NONBLOCK), Err(ENXIO));
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    Ok(())
}

/// O_RDWR opens at once, reads back its own bytes; the bytes go with the last close.
fn rdwr_never_waits_and_bytes_go_with_last_close() -> TestResult {
    let path = t!(fifo("rdwr"));
    let fd = t!(sys::open(&path, O_RDWR | O_NONBLOCK | O_CLOEXEC));
    check_eq!(sys::write(fd, b"abc"), Ok(3));
    let w = t!(sys::open(&path, O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    let mut b = [0u8; 8];
    check_eq!(sys::read(fd, &mut b), Ok(3));
    check_eq!(&b[..3], b"abc");
    check_eq!(sys::write(w, b"left"), Ok(4));
    t!(sys::close(w));
    t!(sys::close(fd));
    let fd = t!(sys::open(&path, O_RDWR | O_NONBLOCK | O_CLOEXEC));
    check_eq!(
        sys::read(fd, &mut b),
        Err(EAGAIN),
        "bytes survived the last close"
    );
    t!(sys::close(fd));
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    Ok(())
}

/// make's jobserver (`--jobserver-style=fifo`): make opens the FIFO O_RDWR and puts its tokens
/// in; each sub-make opens the path O_RDWR for its own description, takes a token (a blocking
/// read, or poll then a nonblocking read that another may win) and puts it back. No token is
/// lost or made up.
fn jobserver_tokens_go_round() -> TestResult {
    const TOKENS: usize = 3;
    const JOBS: usize = 4;
    let path = t!(fifo("jobs"));
    let fd = t!(sys::open(&path, O_RDWR | O_CLOEXEC));
    check_eq!(sys::write(fd, &[b'+'; TOKENS]), Ok(TOKENS));
    let mut pids = Vec::new();
    for job in 0..JOBS {
        let p2 = path.clone();
        pids.push(t!(spawn(move || {
            let polls = job % 2 == 1;
            let flags = O_RDWR | if polls { O_NONBLOCK } else { 0 };
            let Ok(fd) = sys::open(&p2, flags) else {
                return 2;
            };
            for _ in 0..20 {
                let mut b = [0u8; 1];
                loop {
                    if polls {
                        let mut pfd = [Pollfd {
                            fd,
                            events: POLLIN,
                            revents: 0,
                        }];
                        if sys::ppoll(&mut pfd, None) != Ok(1) || pfd[0].revents != POLLIN {
                            return 3;
                        }
                    }
                    match sys::read(fd, &mut b) {
                        Ok(1) if b[0] == b'+' => break,
                        Err(EAGAIN) if polls => continue,
                        _ => return 4,
                    }
                }
                let _ = sys::sched_yield();
                if sys::write(fd, &b) != Ok(1) {
                    return 5;
                }
            }
            0
        })));
    }
    for pid in pids {
        let (_, st) = t!(sys::waitpid(pid, 0));
        check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    }
    t!(sys::fcntl(fd, F_SETFL, O_NONBLOCK as usize));
    let mut b = [0u8; 8];
    check_eq!(sys::read(fd, &mut b), Ok(TOKENS));
    check_eq!(sys::read(fd, &mut b), Err(EAGAIN));
    t!(sys::close(fd));
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    Ok(())
}

/// Rounds of `open_races_its_partner`: FIFO_ROUNDS at build time, else a few.
const ROUNDS: u32 = match option_env!("FIFO_ROUNDS") {
    Some(n) => parse_u32(n),
    None => 20,
};

const fn parse_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut n = 0u32;
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    n
}

/// A pause of the kind `k` picks: none, a short spin, a yield, or a sleep.
fn pause(k: u64) {
    match k % 5 {
        0 => {}
        1 => {
            for i in 0..(k % 4096) {
                core::hint::black_box(i);
            }
        }
        2 => {
            let _ = sys::sched_yield();
        }
        3 => sys::sleep_ns(k % 200_000),
        _ => sys::sleep_ns(MS + k % (2 * MS)),
    }
}

/// Each end's blocking open races the other's, at varied delays on both sides (the waiting
/// open that sleeps, and the partner's open that must wake it), reader and writer taking
/// turns at going first. Each round runs in a child bounded in time: a lost wake-up fails the
/// test (saying how far each side got, with every process's /proc stat line) instead of
/// hanging it. With FIFO_ROUNDS set at build time, the second half of the rounds runs with a
/// hog per CPU that spins and sleeps by turns (a CPU that is always busy would hide the race:
/// the partner must run while the opener is between its steps).
fn open_races_its_partner() -> TestResult {
    let stress = option_env!("FIFO_ROUNDS").is_some();
    let mut hogs = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut result = Ok(());
    // How far each side of a round got: [round child, its child].
    let steps = [Shared::new(0u32), Shared::new(0u32)];
    let steps = &steps;
    for round in 0..ROUNDS {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let (mine, theirs) = (seed >> 7, seed >> 29);
        let child_writes = round % 2 == 0;
        if stress && round == ROUNDS / 2 {
            for i in 0..2u64 {
                hogs.push(t!(spawn(move || {
                    let mut x = i + 1;
                    loop {
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        let until = sys::now_ns() + (x >> 33) % (3 * MS);
                        while sys::now_ns() < until {
                            core::hint::spin_loop();
                        }
                        sys::sleep_ns((x >> 13) % (2 * MS));
                    }
                })));
            }
        }
        steps[0].set(0);
        steps[1].set(0);
        let body = move || {
            let path = match fifo("race") {
                Ok(p) => p,
                Err(_) => return 10,
            };
            let p2 = path.clone();
            let Ok(pid) = spawn(move || {
                pause(theirs);
                let flags = if child_writes { O_WRONLY } else { O_RDONLY };
                steps[1].set(1);
                let Ok(fd) = sys::open(&p2, flags) else {
                    return 2;
                };
                steps[1].set(2);
                let mut b = [b'x'; 1];
                let ok = if child_writes {
                    sys::write(fd, &b) == Ok(1)
                } else {
                    sys::read(fd, &mut b) == Ok(1)
                };
                steps[1].set(3);
                if ok {
                    0
                } else {
                    3
                }
            }) else {
                return 11;
            };
            pause(mine);
            let flags = if child_writes { O_RDONLY } else { O_WRONLY };
            steps[0].set(1);
            let Ok(fd) = sys::open(&path, flags) else {
                return 12;
            };
            steps[0].set(2);
            let mut b = [b'x'; 1];
            let ok = if child_writes {
                sys::read(fd, &mut b) == Ok(1)
            } else {
                sys::write(fd, &b) == Ok(1)
            };
            if !ok {
                return 13;
            }
            steps[0].set(3);
            match sys::waitpid(pid, 0) {
                Ok((_, 0)) => {}
                _ => return 14,
            }
            let _ = sys::unlinkat(AT_FDCWD, &path, 0);
            0
        };
        let pid = match spawn(body) {
            Ok(p) => p,
            Err(e) => {
                result = Err(format!("round {round}: fork: {e:?}"));
                break;
            }
        };
        let deadline = sys::now_ns() + 20_000 * MS;
        let st = loop {
            match sys::waitpid(pid, WNOHANG) {
                Ok((0, _)) => {}
                Ok((_, st)) => break Some(st),
                Err(_) => break None,
            }
            if sys::now_ns() >= deadline {
                break None;
            }
            sys::sleep_ns(MS);
        };
        let Some(st) = st else {
            println!(
                "# round {round} hung (child writes {child_writes}, mine {mine:#x}, theirs {theirs:#x}, steps {:?}):",
                [steps[0].get(), steps[1].get()]
            );
            dump_procs();
            let _ = sys::kill(pid, SIGKILL);
            let _ = sys::waitpid(pid, 0);
            result = Err(format!("round {round} hung"));
            break;
        };
        if !(wifexited(st) && wexitstatus(st) == 0) {
            result = Err(format!("round {round}: {}", describe(st)));
            break;
        }
        if stress && round % 100 == 99 {
            println!("# {} rounds", round + 1);
        }
    }
    for pid in hogs {
        let _ = sys::kill(pid, SIGKILL);
        let _ = sys::waitpid(pid, 0);
    }
    result
}

/// Prints every process's /proc stat line (what a hung round's processes were doing).
fn dump_procs() {
    let Ok(dir) = sys::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC) else {
        return;
    };
    let mut buf = [0u8; 4096];
    while let Ok(n) = sys::getdents64(dir, &mut buf) {
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off < n {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let name = sys::field_str(&buf[off + 19..off + reclen]);
            if name.bytes().all(|c| c.is_ascii_digit()) {
                for f in ["stat", "wchan"] {
                    if let Ok(b) = io::read_file(&format!("/proc/{name}/{f}")) {
                        println!("# {name} {f}: {}", String::from_utf8_lossy(&b).trim_end());
                    }
                }
            }
            off += reclen;
        }
    }
    let _ = sys::close(dir);
}

fn main(_a: &rt::Args) -> i32 {
    mount_when_init();
    ktap::run(&[
        ("mknod_makes_a_fifo", mknod_makes_a_fifo),
        ("nonblocking_opens", nonblocking_opens),
        (
            "hangup_once_the_writers_are_gone",
            hangup_once_the_writers_are_gone,
        ),
        ("writer_waits_for_reader", writer_waits_for_reader),
        ("reader_waits_for_writer", reader_waits_for_writer),
        ("waiting_open_is_interrupted", waiting_open_is_interrupted),
        (
            "rdwr_never_waits_and_bytes_go_with_last_close",
            rdwr_never_waits_and_bytes_go_with_last_close,
        ),
        ("jobserver_tokens_go_round", jobserver_tokens_go_round),
        ("open_races_its_partner", open_races_its_partner),
    ])
}

entry!(main);
