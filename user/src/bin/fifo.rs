//! FIFOs (named pipes): mknod(S_IFIFO) and what stat shows, Linux's open rules (a reader waits
//! for a writer and a writer for a reader; O_NONBLOCK readers open at once and writers without
//! a reader fail with ENXIO; O_RDWR never waits; a signal ends the wait), bytes through the
//! pipe buffer, POLLHUP only after a writer came, and the bytes gone with the last close.
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

/// A blocking open waits for its partner: the child opens `child_flags` and writes or reads;
/// the parent checks it is still waiting after 100 ms, then opens the other side.
fn blocking_open_waits(child_writes: bool) -> TestResult {
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
    sys::sleep_ns(100 * MS);
    check_eq!(
        sys::waitpid(pid, WNOHANG),
        Ok((0, 0)),
        "the child's open did not wait"
    );
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
    blocking_open_waits(true)
}

fn reader_waits_for_writer() -> TestResult {
    blocking_open_waits(false)
}

extern "C" fn noop(_sig: i32, _info: *mut SigInfo, _uc: *mut u8) {}

/// A signal with a handler (no SA_RESTART) ends a waiting open with EINTR.
fn waiting_open_is_interrupted() -> TestResult {
    let path = t!(fifo("eintr"));
    t!(set_handler(SIGALRM, noop, 0, 0));
    t!(sys::setitimer_real(50 * MS, 0));
    let t0 = sys::now_ns();
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

/// As the first process (a lone boot), mounts what the tests use.
fn mount_when_init() {
    if sys::getpid() != 1 {
        return;
    }
    for (target, fstype) in [("/dev", "devtmpfs"), ("/proc", "proc"), ("/tmp", "tmpfs")] {
        let _ = sys::mkdirat(AT_FDCWD, target, 0o755);
        let _ = sys::mount(fstype, target, fstype, 0);
    }
}

fn main(_a: &rt::Args) -> i32 {
    mount_when_init();
    ktap::run(&[
        ("mknod_makes_a_fifo", mknod_makes_a_fifo),
        ("nonblocking_opens", nonblocking_opens),
        ("writer_waits_for_reader", writer_waits_for_reader),
        ("reader_waits_for_writer", reader_waits_for_writer),
        ("waiting_open_is_interrupted", waiting_open_is_interrupted),
        (
            "rdwr_never_waits_and_bytes_go_with_last_close",
            rdwr_never_waits_and_bytes_go_with_last_close,
        ),
    ])
}

entry!(main);
