//! The kernel log: a ring of records (priority, sequence number, time, text) that the `log`
//! macros and writes to /dev/kmsg go into, read back by syslog(2) and /dev/kmsg. The console
//! prints a record only when its level is below the console log level (`loglevel=`, `quiet`,
//! syslog's CONSOLE_* actions), as Linux's printk does; the ring keeps it either way.

#![forbid(unsafe_code)]

use crate::sync::IrqLock;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU8, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::klog as k;

/// Bytes the ring holds (records and their headers); the oldest records go to make room.
pub const RING_SIZE: usize = 128 << 10;
/// A record's text is cut at this length.
pub const MAX_TEXT: usize = 1024;
/// A record's header: text length (u16), priority (u8), time in ns (u64).
const HDR: usize = 11;

struct Ring {
    buf: [u8; RING_SIZE],
    /// The oldest record's first byte, and the bytes in use from there (wrapping).
    start: usize,
    len: usize,
    /// Sequence numbers of the oldest record kept and of the next one.
    first_seq: u64,
    next_seq: u64,
    /// syslog(2): where READ goes on from, and where CLEAR moved READ_ALL's start.
    syslog_seq: u64,
    clear_seq: u64,
}

static RING: IrqLock<Ring> = IrqLock::new(Ring {
    buf: [0; RING_SIZE],
    start: 0,
    len: 0,
    first_seq: 0,
    next_seq: 0,
    syslog_seq: 0,
    clear_seq: 0,
});

static CONSOLE_LEVEL: AtomicU8 = AtomicU8::new(k::DEFAULT_CONSOLE_LEVEL);
/// The level CONSOLE_OFF saved for CONSOLE_ON (0: none saved).
static SAVED_CONSOLE_LEVEL: AtomicU8 = AtomicU8::new(0);

impl Ring {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        for (i, &b) in bytes.iter().enumerate() {
            self.buf[(self.start + at + i) % RING_SIZE] = b;
        }
    }

    /// Copies the bytes at offset `at` into `out`, in at most two pieces (the ring wraps once).
    fn get(&self, at: usize, out: &mut [u8]) {
        let from = (self.start + at) % RING_SIZE;
        let first = out.len().min(RING_SIZE - from);
        out[..first].copy_from_slice(&self.buf[from..from + first]);
        let rest = out.len() - first;
        out[first..].copy_from_slice(&self.buf[..rest]);
    }

    /// The header of the record at offset `at`: (text length, priority, time).
    fn header(&self, at: usize) -> (usize, u8, u64) {
        let mut h = [0u8; HDR];
        self.get(at, &mut h);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&h[3..]);
        (
            u16::from_le_bytes([h[0], h[1]]) as usize,
            h[2],
            u64::from_le_bytes(ts),
        )
    }

    fn drop_oldest(&mut self) {
        let (tl, _, _) = self.header(0);
        let total = HDR + tl;
        self.start = (self.start + total) % RING_SIZE;
        self.len -= total;
        self.first_seq += 1;
    }

    fn push(&mut self, prio: u8, ts_ns: u64, text: &[u8]) {
        let text = &text[..text.len().min(MAX_TEXT)];
        let total = HDR + text.len();
        while self.len + total > RING_SIZE {
            self.drop_oldest();
        }
        let mut h = [0u8; HDR];
        h[..2].copy_from_slice(&(text.len() as u16).to_le_bytes());
        h[2] = prio;
        h[3..].copy_from_slice(&ts_ns.to_le_bytes());
        let end = self.len;
        self.put(end, &h);
        self.put(end + HDR, text);
        self.len += total;
        self.next_seq += 1;
    }

    /// The offset of record `seq` (kept, below next_seq).
    fn offset_of(&self, seq: u64) -> usize {
        let mut at = 0;
        for _ in self.first_seq..seq {
            at += HDR + self.header(at).0;
        }
        at
    }
}

/// Adds a record; says whether the console should print it.
pub fn record(prio: u8, ts_ns: u64, text: &[u8]) -> bool {
    // Another CPU may hold the ring for a moment: wait for it, but give up (the record is
    // lost, the console still gets it) rather than hang if this CPU faulted while holding it.
    for _ in 0..1 << 20 {
        if let Some(mut r) = RING.try_lock() {
            r.push(prio, ts_ns, text);
            break;
        }
        core::hint::spin_loop();
    }
    k::reaches_console(prio, CONSOLE_LEVEL.load(Ordering::Relaxed))
}

pub fn set_console_level(level: u8) {
    CONSOLE_LEVEL.store(level, Ordering::Relaxed);
}

/// A reader's wait for new records: the ring wakes nobody (a logger may run anywhere, under
/// any lock), so readers look again every 20 ms, through `sleep_until` (task::wait's, passed
/// in by the reader: the log sits below the tasks). ERESTARTSYS on a signal.
pub fn pause(sleep_until: fn(u64) -> SysResult<()>) -> SysResult<()> {
    sleep_until(crate::time::deadline_after_ns(20_000_000)).map_err(|_| Errno::ERESTARTSYS)
}

/// One record, copied out.
pub struct Record {
    pub seq: u64,
    pub prio: u8,
    pub ts_ns: u64,
    pub text: Vec<u8>,
}

/// What a reader at `seq` finds.
pub enum Next {
    Record(Record),
    /// `seq` was overwritten: the oldest record kept is this one.
    Lost(u64),
    /// Nothing after `seq` yet.
    Empty,
}

/// The record at `seq`.
pub fn read_at(seq: u64) -> SysResult<Next> {
    let mut text = Vec::new();
    text.try_reserve_exact(MAX_TEXT)
        .map_err(|_| Errno::ENOMEM)?;
    let r = RING.lock();
    if seq < r.first_seq {
        return Ok(Next::Lost(r.first_seq));
    }
    if seq >= r.next_seq {
        return Ok(Next::Empty);
    }
    let at = r.offset_of(seq);
    let (tl, prio, ts_ns) = r.header(at);
    text.resize(tl, 0);
    r.get(at + HDR, &mut text);
    Ok(Next::Record(Record {
        seq,
        prio,
        ts_ns,
        text,
    }))
}

/// The first record kept and the next sequence number.
pub fn bounds() -> (u64, u64) {
    let r = RING.lock();
    (r.first_seq, r.next_seq)
}

/// Every record from `seq` on (or from the oldest kept), in order: the ring is copied whole
/// under its lock (into memory taken before), then split.
fn records_from(seq: u64) -> SysResult<Vec<Record>> {
    let mut raw = Vec::new();
    raw.try_reserve_exact(RING_SIZE)
        .map_err(|_| Errno::ENOMEM)?;
    let first = {
        let r = RING.lock();
        raw.resize(r.len, 0);
        r.get(0, &mut raw);
        r.first_seq
    };
    let mut out = Vec::new();
    let (mut at, mut s) = (0, first);
    while at + HDR <= raw.len() {
        let tl = u16::from_le_bytes([raw[at], raw[at + 1]]) as usize;
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&raw[at + 3..at + HDR]);
        if s >= seq {
            let mut text = Vec::new();
            text.try_reserve_exact(tl).map_err(|_| Errno::ENOMEM)?;
            text.extend_from_slice(&raw[at + HDR..at + HDR + tl]);
            out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            out.push(Record {
                seq: s,
                prio: raw[at + 2],
                ts_ns: u64::from_le_bytes(ts),
                text,
            });
        }
        at += HDR + tl;
        s += 1;
    }
    Ok(out)
}

fn syslog_text(r: &Record) -> Vec<u8> {
    let mut v = Vec::new();
    k::syslog_line(&mut v, r.prio, r.ts_ns, &r.text);
    v
}

/// syslog(2) on the ring: the bytes for READ_ALL/READ_CLEAR (the newest lines that fit in
/// `len`, from the last CLEAR on), READ (the unread lines that fit, consumed), the sizes, and
/// the console level.
pub mod syslog {
    use super::*;

    /// READ_ALL and READ_CLEAR: the newest lines from the last CLEAR on that fit in `len`.
    pub fn read_all(len: usize, clear: bool) -> SysResult<Vec<u8>> {
        let (from, next) = {
            let r = RING.lock();
            (r.clear_seq, r.next_seq)
        };
        let lines: Vec<Vec<u8>> = records_from(from)?
            .iter()
            .filter(|r| r.seq < next)
            .map(syslog_text)
            .collect();
        let mut total: usize = lines.iter().map(Vec::len).sum();
        let mut skip = 0;
        while total > len {
            total -= lines[skip].len();
            skip += 1;
        }
        let mut out = Vec::new();
        out.try_reserve_exact(total).map_err(|_| Errno::ENOMEM)?;
        for l in &lines[skip..] {
            out.extend_from_slice(l);
        }
        if clear {
            RING.lock().clear_seq = next;
        }
        Ok(out)
    }

    /// READ: the unread lines that fit in `len` (a first line longer than that, cut), now
    /// read; empty when there is nothing unread.
    pub fn read(len: usize) -> SysResult<Vec<u8>> {
        let from = RING.lock().syslog_seq;
        let mut out = Vec::new();
        let mut last = None;
        for r in records_from(from)? {
            let l = syslog_text(&r);
            if out.len() + l.len() > len {
                if out.is_empty() {
                    out.extend_from_slice(&l[..len]);
                    last = Some(r.seq);
                }
                break;
            }
            out.extend_from_slice(&l);
            last = Some(r.seq);
        }
        if let Some(s) = last {
            let mut r = RING.lock();
            r.syslog_seq = r.syslog_seq.max(s + 1);
        }
        Ok(out)
    }

    /// Whether READ would find something.
    pub fn unread() -> bool {
        let r = RING.lock();
        r.syslog_seq < r.next_seq
    }

    pub fn size_unread() -> SysResult<usize> {
        let from = RING.lock().syslog_seq;
        Ok(records_from(from)?
            .iter()
            .map(|r| syslog_text(r).len())
            .sum())
    }

    pub fn clear() {
        let mut r = RING.lock();
        r.clear_seq = r.next_seq;
    }

    pub fn console_off() {
        if SAVED_CONSOLE_LEVEL.load(Ordering::Relaxed) == 0 {
            SAVED_CONSOLE_LEVEL.store(CONSOLE_LEVEL.load(Ordering::Relaxed), Ordering::Relaxed);
            CONSOLE_LEVEL.store(k::MIN_CONSOLE_LEVEL, Ordering::Relaxed);
        }
    }

    pub fn console_on() {
        let saved = SAVED_CONSOLE_LEVEL.swap(0, Ordering::Relaxed);
        if saved != 0 {
            CONSOLE_LEVEL.store(saved, Ordering::Relaxed);
        }
    }

    pub fn console_level(level: usize) -> SysResult<()> {
        if !(1..=k::MAX_CONSOLE_LEVEL as usize).contains(&level) {
            return Err(Errno::EINVAL);
        }
        CONSOLE_LEVEL.store((level as u8).max(k::MIN_CONSOLE_LEVEL), Ordering::Relaxed);
        SAVED_CONSOLE_LEVEL.store(0, Ordering::Relaxed);
        Ok(())
    }
}
