//! rt_sigreturn's quick path: the frame is read once, each record is checked where the walk
//! meets it (the generic rules of `parse_sigreturn` and its own rules of `check_records` at
//! once) and the result points into the frame bytes, so the kernel restores from them with no
//! table of record places and no copy of the V registers in between.
//!
//! It only accepts: a frame it can read whole, whose records are all good. For anything else
//! (a fault, a bad record, a GCS or POE record, a zt_context without za_context) it answers
//! `None` before anything is restored, and the caller runs `parse_sigreturn` and
//! `check_records`, which decide what a bad frame gets. So the two agree by construction on
//! every frame this path accepts, and the host tests check exactly that.

use super::*;

/// fpsimd_context as it lies in the frame: V0-V31 are its 512 bytes, not a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FpsimdBytes<'a> {
    pub vregs: &'a [u8; 512],
    pub fpsr: u32,
    pub fpcr: u32,
}

impl FpsimdState {
    /// The registers as fpsimd_context holds them (V0-V31 as 512 little-endian bytes).
    pub fn as_frame_bytes(&self) -> FpsimdBytes<'_> {
        FpsimdBytes {
            vregs: zerocopy::transmute_ref!(&self.vregs),
            fpsr: self.fpsr,
            fpcr: self.fpcr,
        }
    }
}

impl FpsimdBytes<'_> {
    /// The same registers as an `FpsimdState`.
    pub fn to_state(&self) -> FpsimdState {
        let mut s = FpsimdState {
            fpsr: self.fpsr,
            fpcr: self.fpcr,
            ..FpsimdState::default()
        };
        s.vregs.as_mut_bytes().copy_from_slice(self.vregs);
        s
    }
}

/// A good frame, checked in place: what `parse_sigreturn` and `check_records` would have the
/// kernel install.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InPlace<'a> {
    /// The restored mask, SIGKILL and SIGSTOP removed.
    pub sigmask: Sigset,
    /// x0..x30, sp and pc as the frame holds them (little-endian, 8 bytes each): the kernel
    /// copies them straight into its trap frame.
    pub regs: &'a [u8; REGS_PC_SIZE],
    /// The sanitised PSTATE.
    pub pstate: u64,
    pub uc_stack: StackT,
    pub fpsimd: FpsimdBytes<'a>,
    /// Never `gcs` (frames with a gcs_context take the general path).
    pub records: FpRecords<'a>,
}

/// x0..x30, sp and pc: the bytes from `REGS_OFFSET` up to PSTATE.
pub const REGS_PC_SIZE: usize = PSTATE_OFFSET - REGS_OFFSET;

impl InPlace<'_> {
    /// The registers as a `UserRegs` (what `parse_sigreturn` returns for the same frame).
    pub fn user_regs(&self) -> UserRegs {
        let mut r = UserRegs {
            sp: get_u64(self.regs, SP_OFFSET - REGS_OFFSET),
            pc: get_u64(self.regs, PC_OFFSET - REGS_OFFSET),
            pstate: self.pstate,
            ..UserRegs::default()
        };
        r.regs
            .as_mut_bytes()
            .copy_from_slice(&self.regs[..SP_OFFSET - REGS_OFFSET]);
        r
    }
}

/// Records met so far, one bit per kind (a second one is a duplicate).
const SEEN_FPSIMD: u32 = 1;
const SEEN_SVE: u32 = 2;
const SEEN_TPIDR2: u32 = 4;
const SEEN_ZA: u32 = 8;
const SEEN_ZT: u32 = 16;
const SEEN_FPMR: u32 = 32;

/// The walk's state: the records checked so far.
struct Walk<'a, 'f> {
    f: &'f SigFeatures,
    task: &'f SigreturnTask,
    seen: u32,
    fpsimd: Option<FpsimdBytes<'a>>,
    zt: Option<&'a [u8]>,
    rec: FpRecords<'a>,
}

impl<'a> Walk<'a, '_> {
    /// One record other than the terminator and extra_context (head included, `rec.len()`
    /// its head.size): checked, and noted. None for anything the general path must judge.
    #[inline(always)]
    fn record(&mut self, magic: u32, rec: &'a [u8]) -> Option<()> {
        if rec.len() < 8 {
            return None;
        }
        let f = self.f;
        let (bit, on) = match magic {
            FPSIMD_MAGIC => (SEEN_FPSIMD, f.fpsimd),
            ESR_MAGIC => return Some(()),
            SVE_MAGIC => (SEEN_SVE, f.sve || f.sme),
            TPIDR2_MAGIC => (SEEN_TPIDR2, f.tpidr2()),
            ZA_MAGIC => (SEEN_ZA, f.sme),
            ZT_MAGIC => (SEEN_ZT, f.sme2),
            FPMR_MAGIC => (SEEN_FPMR, f.fpmr),
            _ => return None,
        };
        if !on || self.seen & bit != 0 {
            return None;
        }
        self.seen |= bit;
        match magic {
            FPSIMD_MAGIC => {
                let r: &'a [u8; FPSIMD_CONTEXT_SIZE as usize] = rec.try_into().ok()?;
                let (head, vregs) = r.split_at(16);
                self.fpsimd = Some(FpsimdBytes {
                    vregs: vregs.try_into().ok()?,
                    fpsr: get_u32(head, 8),
                    fpcr: get_u32(head, 12),
                });
            }
            SVE_MAGIC => {
                let t = self.task;
                self.rec.fp = Some(match sve_record(rec, f, t.sve_vl, t.sme_vl).ok()? {
                    None => FpRestore::Fpsimd,
                    Some((streaming, regs)) => FpRestore::Sve { streaming, regs },
                });
            }
            TPIDR2_MAGIC => self.rec.tpidr2 = Some(u64_record_value(rec)?),
            FPMR_MAGIC => self.rec.fpmr = Some(u64_record_value(rec)?),
            ZA_MAGIC => self.rec.za = Some(za_record(rec, self.task.sme_vl).ok()?),
            // Checked at the end, against PSTATE.ZA as the za step leaves it.
            _ => self.zt = Some(rec),
        }
        Some(())
    }

    /// One record area (`__reserved` or the extra space), from its start: the records up to
    /// the terminator, or the extra space an extra_context describes (`in_frame`: only
    /// `__reserved` may hold one; `sp` is the frame's address).
    #[inline(always)]
    fn area(&mut self, area: &'a [u8], in_frame: Option<u64>) -> Option<Option<(u64, usize)>> {
        let mut off = 0usize;
        loop {
            if !off.is_multiple_of(16) {
                return None;
            }
            let h = area.get(off..off + 8)?;
            let magic = get_u32(h, 0);
            let size = get_u32(h, 4) as usize;
            if area.len() - off < size {
                return None;
            }
            match magic {
                0 if size == 0 => return Some(None),
                EXTRA_MAGIC => return Some(Some(extra_space(area, off, size, in_frame?)?)),
                _ => self.record(magic, &area[off..off + size])?,
            }
            off += size;
        }
    }
}

/// An extra_context at `off` of `__reserved` (head.size `size`, inside the area), in a frame
/// at `sp`: the extra space's (user address, size) when it passes `scan_records`' rules.
#[inline(always)]
fn extra_space(area: &[u8], off: usize, size: usize, sp: u64) -> Option<(u64, usize)> {
    if size < EXTRA_CONTEXT_SIZE as usize || area.len() - off - size < TERMINATOR_SIZE {
        return None;
    }
    let term = off + size;
    let datap = get_u64(area, off + 8);
    let esize = get_u32(area, off + 16) as usize;
    let after = RESERVED_OFFSET + term + TERMINATOR_SIZE;
    let good = get_u64(area, term) == 0
        && datap.is_multiple_of(16)
        && esize.is_multiple_of(16)
        && datap == sp.wrapping_add(after as u64)
        && esize <= SIGFRAME_MAXSZ - after;
    good.then_some((datap, esize))
}

/// rt_sigreturn's quick path (see the module's comment): `sp`, `read_user`, `f`, `frame` and
/// `read_extra` as for `parse_sigreturn` (the caller has checked that the frame lies in user
/// space); `task` as for `check_records`, but its `za_on` and `gcs` are not looked at (the
/// frames that need them take the general path). None: the caller goes on with
/// `parse_sigreturn`, which reads the frame again (and the extra space, with a fresh
/// `read_extra`), and nothing here has been restored.
pub fn parse_in_place<'a>(
    sp: u64,
    read_user: &mut ReadUser<'_>,
    f: &SigFeatures,
    task: &SigreturnTask,
    frame: &'a mut [u8; RT_SIGFRAME_SIZE],
    read_extra: &mut ReadExtra<'a, '_>,
) -> Option<InPlace<'a>> {
    if sp & 15 != 0 {
        return None;
    }
    sp.checked_add(RT_SIGFRAME_SIZE as u64)?;
    // The whole frame at once: the part past the terminator costs the copy only (the general
    // path reads no further than the records, which only matters where it faults).
    read_user(sp, frame).ok()?;
    let frame: &'a [u8; RT_SIGFRAME_SIZE] = frame;
    let regs: &'a [u8; REGS_PC_SIZE] = frame[REGS_OFFSET..PSTATE_OFFSET].try_into().ok()?;
    let pstate = valid_user_pstate(get_u64(frame, PSTATE_OFFSET))?;
    let mut w = Walk {
        f,
        task,
        seen: 0,
        fpsimd: None,
        zt: None,
        rec: FpRecords {
            fp: Some(FpRestore::Fpsimd),
            ..FpRecords::default()
        },
    };
    if let Some((datap, esize)) = w.area(&frame[RESERVED_OFFSET..], Some(sp))? {
        let bytes = read_extra(datap, esize).ok()?;
        if bytes.len() != esize || w.area(bytes, None)?.is_some() {
            return None;
        }
    }
    if let Some(zt) = w.zt {
        let za_on = w.rec.za?.is_some();
        w.rec.zt0 = Some(zt_record(zt, za_on).ok()?);
    }
    let (uc_stack, _) = StackT::read_from_prefix(&frame[UC_STACK_OFFSET..]).ok()?;
    Some(InPlace {
        sigmask: Sigset(get_u64(frame, UC_SIGMASK_OFFSET)).blockable(),
        regs,
        pstate,
        uc_stack,
        fpsimd: w.fpsimd?,
        records: w.rec,
    })
}
