//! Guarded control stacks for user space, as Linux 7.3 offers them: the per-thread state, the
//! PR_*_SHADOW_STACK_STATUS rules, map_shadow_stack's checks and tokens, the gcs_context record
//! and what rt_sigreturn does with it. The kernel supplies the registers and the memory.

use crate::fp::sigframe::BadFrame;
use crate::uapi::errno::Errno;

pub const PR_SHADOW_STACK_ENABLE: u32 = 1 << 0;
pub const PR_SHADOW_STACK_WRITE: u32 = 1 << 1;
pub const PR_SHADOW_STACK_PUSH: u32 = 1 << 2;
/// The mode bits Linux knows.
pub const PR_SHADOW_STACK_SUPPORTED: u64 = 0x7;

/// map_shadow_stack flags.
pub const SHADOW_STACK_SET_TOKEN: u64 = 1 << 0;
pub const SHADOW_STACK_SET_MARKER: u64 = 1 << 1;

/// One thread's GCS: the PR_SHADOW_STACK_* mode and locked bits (32 bits, as Linux keeps
/// them), GCSPR_EL0 while the thread is switched out, and the GCS the kernel allocated for it
/// (0: none; map_shadow_stack regions and a fork's inherited stack are not the thread's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcsState {
    pub mode: u32,
    pub locked: u32,
    pub gcspr: u64,
    pub base: u64,
    pub size: u64,
}

impl GcsState {
    pub fn enabled(&self) -> bool {
        self.mode & PR_SHADOW_STACK_ENABLE != 0
    }

    /// Whether taking `mode` would change a locked bit.
    fn changes_locked(&self, mode: u32) -> bool {
        self.mode & self.locked != mode & self.locked
    }

    /// Whether taking `mode` would turn GCS on.
    fn turns_on(&self, mode: u32) -> bool {
        mode & PR_SHADOW_STACK_ENABLE != 0 && !self.enabled()
    }
}

/// The size of a GCS the kernel allocates: `requested` rounded up to pages, or without one
/// half of RLIMIT_STACK's soft limit, at most 2 GiB and at least a page.
pub fn gcs_size(requested: u64, rlimit_stack: u64, page: u64) -> u64 {
    let up = |v: u64| v.div_ceil(page) * page;
    if requested != 0 {
        return up(requested);
    }
    up((rlimit_stack / 2).min(1 << 31)).max(page)
}

/// A cap token for the slot at `addr`: its 4 KiB-aligned address with the valid bit.
pub fn cap_token(addr: u64) -> u64 {
    (addr & !0xfff) | 1
}

/// The token signal delivery leaves above the handler's return address: the slot's 4 KiB
/// aligned address without the valid bit, so it cannot be switched to.
pub fn signal_cap(addr: u64) -> u64 {
    addr & !0xfff
}

/// What a PR_SET_SHADOW_STACK_STATUS does, once allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetStatus {
    /// The mode becomes this (enable kept, or turned off: the GCS stays mapped).
    Mode(u32),
    /// Turning it on for the first time: allocate a GCS, point GCSPR_EL0 at its top slot,
    /// then take the mode.
    Enable(u32),
}

/// PR_SET_SHADOW_STACK_STATUS(arg) for a thread in `cur`: EINVAL for unknown bits, EBUSY
/// when a locked bit would change, EINVAL when enabling a thread that already had a GCS
/// (turned off before, or inherited through fork).
pub fn set_status(cur: &GcsState, arg: u64) -> Result<SetStatus, Errno> {
    if arg & !PR_SHADOW_STACK_SUPPORTED != 0 {
        return Err(Errno::EINVAL);
    }
    let mode = arg as u32;
    if cur.changes_locked(mode) {
        return Err(Errno::EBUSY);
    }
    if cur.turns_on(mode) {
        if cur.base != 0 || cur.gcspr != 0 {
            return Err(Errno::EINVAL);
        }
        return Ok(SetStatus::Enable(mode));
    }
    Ok(SetStatus::Mode(mode))
}

/// map_shadow_stack's request, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapRequest {
    /// Bytes to map (the size rounded up to pages).
    pub len: u64,
    /// Where the cap token goes, relative to the start (SET_TOKEN): below the top slot, or
    /// below the marker with SET_MARKER too. Placed by the requested size, not the rounded one.
    pub token_at: Option<u64>,
}

pub fn map_shadow_stack_check(
    addr: u64,
    size: u64,
    flags: u64,
    page: u64,
) -> Result<MapRequest, Errno> {
    if flags & !(SHADOW_STACK_SET_TOKEN | SHADOW_STACK_SET_MARKER) != 0 {
        return Err(Errno::EINVAL);
    }
    if !addr.is_multiple_of(page) || size == 8 || !size.is_multiple_of(8) {
        return Err(Errno::EINVAL);
    }
    let len = size
        .checked_next_multiple_of(page)
        .ok_or(Errno::EOVERFLOW)?;
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let below = if flags & SHADOW_STACK_SET_MARKER != 0 {
        16
    } else {
        8
    };
    let token_at = (flags & SHADOW_STACK_SET_TOKEN != 0).then(|| size - below);
    Ok(MapRequest { len, token_at })
}

/// The gcs_context record (head included), 32 bytes: GCSPR_EL0 as the interrupted code had it
/// and its mode.
pub fn record_body(gcspr: u64, mode: u32) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[..8].copy_from_slice(&gcspr.to_le_bytes());
    b[8..16].copy_from_slice(&u64::from(mode).to_le_bytes());
    b
}

/// What rt_sigreturn's gcs_context asks for: the new mode and GCSPR_EL0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restore {
    pub mode: u32,
    pub gcspr: u64,
}

/// Checks a gcs_context against the thread: size 32, known bits, locked bits unchanged, and
/// no enabling (sigreturn can only keep GCS on, change WRITE/PUSH, or turn it off — then every
/// bit goes).
pub fn restore_record(rec: &[u8], cur: &GcsState) -> Result<Restore, BadFrame> {
    if rec.len() != 32 {
        return Err(BadFrame::BadGcs);
    }
    let u = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().unwrap());
    let (gcspr, features) = (u(8), u(16));
    if features & !PR_SHADOW_STACK_SUPPORTED != 0 {
        return Err(BadFrame::BadGcs);
    }
    let mode = features as u32;
    if cur.changes_locked(mode) || cur.turns_on(mode) {
        return Err(BadFrame::BadGcs);
    }
    let mode = if mode & PR_SHADOW_STACK_ENABLE == 0 {
        0
    } else {
        mode
    };
    Ok(Restore { mode, gcspr })
}

/// NT_ARM_GCS: features_enabled, features_locked, gcspr_el0.
pub fn regset_encode(s: &GcsState) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[..8].copy_from_slice(&u64::from(s.mode).to_le_bytes());
    b[8..16].copy_from_slice(&u64::from(s.locked).to_le_bytes());
    b[16..].copy_from_slice(&s.gcspr.to_le_bytes());
    b
}

/// An NT_ARM_GCS write over `s` (what `data` covers replaces the fields): EINVAL for unknown
/// mode bits. Nothing is allocated or checked against the locks, as on Linux.
pub fn regset_set(s: &GcsState, data: &[u8]) -> Result<GcsState, Errno> {
    let mut b = regset_encode(s);
    let n = data.len().min(24);
    b[..n].copy_from_slice(&data[..n]);
    let u = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    if u(0) & !PR_SHADOW_STACK_SUPPORTED != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(GcsState {
        mode: u(0) as u32,
        locked: u(8) as u32,
        gcspr: u(16),
        ..*s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    #[test]
    fn sizes_and_tokens() {
        assert_eq!(gcs_size(0, 8 << 20, PAGE), 4 << 20);
        assert_eq!(gcs_size(0, u64::MAX, PAGE), 1 << 31);
        assert_eq!(gcs_size(0, 0, PAGE), PAGE);
        assert_eq!(gcs_size(5000, 8 << 20, PAGE), 8192);
        assert_eq!(cap_token(0x1234_5ff8), 0x1234_5001);
        assert_eq!(signal_cap(0x1234_5ff8), 0x1234_5000);
    }

    #[test]
    fn map_checks() {
        let m = |a, s, f| map_shadow_stack_check(a, s, f, PAGE);
        assert_eq!(m(0, 8, 0), Err(Errno::EINVAL));
        assert_eq!(m(0, 1025, 0), Err(Errno::EINVAL));
        assert_eq!(m(0x1001, 4096, 0), Err(Errno::EINVAL));
        assert_eq!(m(0, 4096, 4), Err(Errno::EINVAL));
        assert_eq!(m(0, 0, 0), Err(Errno::EINVAL));
        assert_eq!(m(0, u64::MAX - 7, 0), Err(Errno::EOVERFLOW));
        // A 2 KiB request maps a page; the token sits by the requested size.
        assert_eq!(
            m(0, 2048, SHADOW_STACK_SET_TOKEN),
            Ok(MapRequest {
                len: 4096,
                token_at: Some(2040)
            })
        );
        assert_eq!(
            m(0, 65536, SHADOW_STACK_SET_TOKEN | SHADOW_STACK_SET_MARKER),
            Ok(MapRequest {
                len: 65536,
                token_at: Some(65520)
            })
        );
        assert_eq!(m(0, 65536, SHADOW_STACK_SET_MARKER).unwrap().token_at, None);
    }

    #[test]
    fn status_rules() {
        let off = GcsState::default();
        assert_eq!(set_status(&off, 8), Err(Errno::EINVAL));
        assert_eq!(set_status(&off, 1), Ok(SetStatus::Enable(1)));
        assert_eq!(set_status(&off, 2), Ok(SetStatus::Mode(2)));
        let on = GcsState {
            mode: 1,
            gcspr: 0x1000,
            base: 0x1000,
            size: 0x1000,
            ..off
        };
        assert_eq!(set_status(&on, 7), Ok(SetStatus::Mode(7)));
        assert_eq!(set_status(&on, 0), Ok(SetStatus::Mode(0)));
        // Turned off, it cannot come back on.
        let was = GcsState { mode: 0, ..on };
        assert_eq!(set_status(&was, 1), Err(Errno::EINVAL));
        // Locked bits stay as they are.
        let locked = GcsState { locked: 1, ..on };
        assert_eq!(set_status(&locked, 0), Err(Errno::EBUSY));
        assert_eq!(set_status(&locked, 7), Ok(SetStatus::Mode(7)));
        let locked_off = GcsState { locked: 1, ..off };
        assert_eq!(set_status(&locked_off, 1), Err(Errno::EBUSY));
    }

    #[test]
    fn sigreturn_record() {
        let on = GcsState {
            mode: 3,
            gcspr: 0x8000,
            ..GcsState::default()
        };
        let rec = |gcspr: u64, f: u64| {
            let mut r = [0u8; 32];
            r[..8].copy_from_slice(&[0, 0x53, 0x43, 0x47, 32, 0, 0, 0]);
            r[8..16].copy_from_slice(&gcspr.to_le_bytes());
            r[16..24].copy_from_slice(&f.to_le_bytes());
            r
        };
        assert_eq!(
            restore_record(&rec(0x7ff0, 1), &on),
            Ok(Restore {
                mode: 1,
                gcspr: 0x7ff0
            })
        );
        // Off turns every bit off; on cannot come from off; unknown bits; wrong size.
        assert_eq!(restore_record(&rec(0, 2), &on).unwrap().mode, 0);
        let off = GcsState::default();
        assert_eq!(restore_record(&rec(0, 1), &off), Err(BadFrame::BadGcs));
        assert_eq!(restore_record(&rec(0, 9), &on), Err(BadFrame::BadGcs));
        assert_eq!(restore_record(&rec(0, 1)[..16], &on), Err(BadFrame::BadGcs));
        let locked = GcsState { locked: 2, ..on };
        assert_eq!(restore_record(&rec(0, 1), &locked), Err(BadFrame::BadGcs));
    }

    #[test]
    fn regset() {
        let s = GcsState {
            mode: 1,
            locked: 4,
            gcspr: 0xabc0,
            base: 7,
            size: 9,
        };
        let b = regset_encode(&s);
        assert_eq!(regset_set(&s, &b), Ok(s));
        assert_eq!(
            regset_set(&s, &[8, 0, 0, 0, 0, 0, 0, 0]),
            Err(Errno::EINVAL)
        );
        let t = regset_set(&s, &[3, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!((t.mode, t.locked, t.gcspr, t.base), (3, 4, 0xabc0, 7));
    }
}
