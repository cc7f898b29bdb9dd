//! The kernel log: syslog(2) (klogctl: READ_ALL, READ_CLEAR, CLEAR, READ, SIZE_BUFFER,
//! SIZE_UNREAD, CONSOLE_OFF/ON/LEVEL and their errors), /dev/kmsg writes (LOG_USER, `<N>`
//! levels) and reads (`prio,seq,usec,flags;text`, one record per read, EINVAL for a short
//! buffer, EAGAIN at the end when non-blocking).
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::sys::*;
use svelt_user::*;

const SYSLOG: usize = 116;
const READ: usize = 2;
const READ_ALL: usize = 3;
const READ_CLEAR: usize = 4;
const CLEAR: usize = 5;
const CONSOLE_OFF: usize = 6;
const CONSOLE_ON: usize = 7;
const CONSOLE_LEVEL: usize = 8;
const SIZE_UNREAD: usize = 9;
const SIZE_BUFFER: usize = 10;

fn syslog(action: usize, buf: &mut [u8]) -> SysResult {
    sys::syscall(SYSLOG, &[action, buf.as_mut_ptr() as usize, buf.len()])
}

fn syslog_n(action: usize, n: usize) -> SysResult {
    sys::syscall(SYSLOG, &[action, 0, n])
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The whole log from the last CLEAR on, as syslog gives it.
fn read_all() -> Result<Vec<u8>, String> {
    let size = syslog_n(SIZE_BUFFER, 0).map_err(|e| format!("SIZE_BUFFER: {e:?}"))?;
    let mut buf = vec![0u8; size];
    let n = syslog(READ_ALL, &mut buf).map_err(|e| format!("READ_ALL: {e:?}"))?;
    buf.truncate(n);
    Ok(buf)
}

/// A line to /dev/kmsg at KERN_DEBUG (kept in the log, not printed on the console).
fn kmsg_write(text: &str) -> TestResult {
    let fd = t!(sys::open("/dev/kmsg", O_WRONLY | O_CLOEXEC));
    let line = format!("<7>{text}\n");
    check_eq!(sys::write(fd, line.as_bytes()), Ok(line.len()));
    t!(sys::close(fd));
    Ok(())
}

fn syslog_reads_the_log() -> TestResult {
    let size = t!(syslog_n(SIZE_BUFFER, 0));
    check!(size >= 4096, "SIZE_BUFFER {size}");
    let marker = format!("klogtest: marker {}", sys::getpid());
    t!(kmsg_write(&marker));
    let log = t!(read_all());
    check!(!log.is_empty());
    // Every line `<prio>[sssss.uuuuuu] text`.
    for line in log.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let ok = line.first() == Some(&b'<') && contains(line, b">[") && contains(line, b"] ");
        check!(ok, "line {:?}", core::str::from_utf8(line));
    }
    // LOG_USER (1 << 3) at KERN_DEBUG (7): <15>.
    let tail = format!("] {marker}\n");
    check!(
        contains(&log, tail.as_bytes()) && contains(&log, b"<15>["),
        "marker missing"
    );
    // A buffer smaller than the log gets its newest lines, whole.
    let mut small = [0u8; 200];
    let n = t!(syslog(READ_ALL, &mut small));
    check!(n > 0 && n <= 200 && small[n - 1] == b'\n' && small[0] == b'<');
    Ok(())
}

fn syslog_errors_and_console_level() -> TestResult {
    check_eq!(syslog_n(11, 0), Err(EINVAL));
    check_eq!(syslog_n(-1i64 as usize, 0), Err(EINVAL));
    check_eq!(syslog_n(READ_ALL, 10), Err(EINVAL), "NULL buffer");
    let mut b = [0u8; 8];
    check_eq!(
        sys::syscall(SYSLOG, &[READ_ALL, b.as_mut_ptr() as usize, 0]),
        Ok(0)
    );
    check_eq!(
        sys::syscall(
            SYSLOG,
            &[READ_ALL, b.as_mut_ptr() as usize, -1i32 as u32 as usize]
        ),
        Err(EINVAL)
    );
    check_eq!(syslog_n(CONSOLE_LEVEL, 0), Err(EINVAL));
    check_eq!(syslog_n(CONSOLE_LEVEL, 9), Err(EINVAL));
    check_eq!(syslog_n(CONSOLE_OFF, 0), Ok(0));
    check_eq!(syslog_n(CONSOLE_ON, 0), Ok(0));
    check_eq!(syslog_n(0, 0), Ok(0), "CLOSE");
    check_eq!(syslog_n(1, 0), Ok(0), "OPEN");
    Ok(())
}

fn clear_and_read_clear() -> TestResult {
    let before = format!("klogtest: before clear {}", sys::getpid());
    let after = format!("klogtest: after clear {}", sys::getpid());
    t!(kmsg_write(&before));
    check_eq!(syslog_n(CLEAR, 0), Ok(0));
    t!(kmsg_write(&after));
    let log = t!(read_all());
    check!(!contains(&log, before.as_bytes()), "CLEAR kept older lines");
    check!(contains(&log, after.as_bytes()));
    let mut buf = vec![0u8; 1 << 16];
    let n = t!(syslog(READ_CLEAR, &mut buf));
    check!(contains(&buf[..n], after.as_bytes()));
    let log = t!(read_all());
    check!(
        !contains(&log, after.as_bytes()),
        "READ_CLEAR did not clear"
    );
    Ok(())
}

/// READ takes unread lines and they stay read (SIZE_UNREAD shrinks).
fn read_consumes() -> TestResult {
    t!(kmsg_write("klogtest: unread"));
    let unread = t!(syslog_n(SIZE_UNREAD, 0));
    check!(unread > 0);
    let mut buf = vec![0u8; unread + 4096];
    let n = t!(syslog(READ, &mut buf));
    check!(n > 0 && n <= buf.len());
    check!(contains(&buf[..n], b"klogtest: unread"));
    let left = t!(syslog_n(SIZE_UNREAD, 0));
    check!(left < unread, "SIZE_UNREAD {unread} -> {left}");
    Ok(())
}

fn kmsg_reads_records() -> TestResult {
    let marker = format!("klogtest: kmsg {}", sys::getpid());
    t!(kmsg_write(&marker));
    let fd = t!(sys::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    let mut tiny = [0u8; 8];
    check_eq!(
        sys::read(fd, &mut tiny),
        Err(EINVAL),
        "a record longer than the buffer"
    );
    let mut buf = [0u8; 8192];
    let mut last_seq = None;
    let mut found = false;
    let mut records = 0;
    loop {
        let n = match sys::read(fd, &mut buf) {
            Ok(n) => n,
            Err(EAGAIN) => break,
            // Records overwritten while reading: go on from the oldest kept.
            Err(EPIPE) => continue,
            Err(e) => return Err(format!("read: {e:?}")),
        };
        records += 1;
        let rec = &buf[..n];
        check!(rec.last() == Some(&b'\n'));
        let semi = t!(rec.iter().position(|&b| b == b';').ok_or("no ';'"));
        let head = t!(core::str::from_utf8(&rec[..semi]).map_err(|_| "head"));
        let fields: Vec<&str> = head.split(',').collect();
        check!(fields.len() >= 4, "{head}");
        let prio: u32 = t!(fields[0].parse().map_err(|_| head));
        let seq: u64 = t!(fields[1].parse().map_err(|_| head));
        let _usec: u64 = t!(fields[2].parse().map_err(|_| head));
        check!(prio < 1024);
        if let Some(l) = last_seq {
            check!(seq > l, "seq {l} then {seq}");
        }
        last_seq = Some(seq);
        let text_end = rec[semi..].iter().position(|&b| b == b'\n').unwrap() + semi;
        if &rec[semi + 1..text_end] == marker.as_bytes() {
            check_eq!(prio, 15, "LOG_USER | KERN_DEBUG");
            found = true;
        }
    }
    check!(
        records > 0 && found,
        "{records} records, marker found: {found}"
    );
    t!(sys::close(fd));
    Ok(())
}

/// More than the ring holds: the oldest records go; a reader that was at one of them gets
/// EPIPE once, then goes on from the oldest kept; syslog still gives whole lines ending with
/// the newest. (One open per line: Linux rate-limits each open's writes to 10 a burst.)
fn ring_wraps() -> TestResult {
    let reader = t!(sys::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    let pad = "w".repeat(180);
    for i in 0..3000 {
        t!(kmsg_write(&format!("klogtest: wrap {i} {pad}")));
    }
    let mut buf = [0u8; 8192];
    check_eq!(sys::read(reader, &mut buf).map(|_| ()), Err(EPIPE));
    let n = t!(sys::read(reader, &mut buf));
    check!(n > 0 && buf[n - 1] == b'\n');
    t!(sys::close(reader));
    let log = t!(read_all());
    check!(
        !contains(&log, b"klogtest: wrap 0 "),
        "the oldest line stayed"
    );
    let last = format!("klogtest: wrap 2999 {pad}\n");
    check!(log.ends_with(last.as_bytes()) || contains(&log, last.as_bytes()));
    check!(log.first() == Some(&b'<'));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    svelt_user::proc::mount_when_init();
    ktap::run(&[
        ("syslog_reads_the_log", syslog_reads_the_log),
        (
            "syslog_errors_and_console_level",
            syslog_errors_and_console_level,
        ),
        ("clear_and_read_clear", clear_and_read_clear),
        ("read_consumes", read_consumes),
        ("kmsg_reads_records", kmsg_reads_records),
        ("ring_wraps", ring_wraps),
    ])
}

entry!(main);
