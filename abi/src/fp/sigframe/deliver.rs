//! Delivery's frame writer for the records the kernel sends: the same bytes as
//! `SigDelivery::emit` (its host tests compare the two), in one pass over named records.
//!
//! `SigDelivery` takes any list of records and lays them out with `FrameLayout`, which the
//! tests and fuzzers build frames with. A delivery only ever carries Linux's records in Linux's
//! order (fpsimd, esr, gcs, sve, tpidr2, za, zt, fpmr, poe: `setup_sigframe_layout`), so
//! `Delivery` names them. Its header and fpsimd_context are one `#[repr(C)]` image filled field
//! by field; the small records follow in that image; a register payload goes out straight from
//! the caller's memory and the records after it start a new piece. The layout is a running
//! offset and the one place `__reserved` may overflow into the extra space.

use super::*;

/// A vector record (sve_context, za_context) as delivered: its `vl` and `flags` fields, and the
/// register payload when the state is live (without one the record is its 16-byte head).
#[derive(Clone, Copy, Debug)]
pub struct VecRecord<'a> {
    pub vl: u16,
    pub flags: u16,
    pub payload: Option<&'a [u8]>,
}

/// The records after fpsimd_context, each present or not, written in this (Linux's) order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Records<'a> {
    /// esr_context: the ESR of the fault that raised the signal.
    pub esr: Option<u64>,
    /// gcs_context: the 24 bytes after its head.
    pub gcs: Option<[u8; 24]>,
    pub sve: Option<VecRecord<'a>>,
    pub tpidr2: Option<u64>,
    pub za: Option<VecRecord<'a>>,
    /// zt_context: ZT0 (nregs 1).
    pub zt0: Option<&'a [u8; 64]>,
    pub fpmr: Option<u64>,
    pub poe: Option<u64>,
}

/// Everything a delivery needs: `SigDelivery` with the records named and fpsimd_context always
/// present (every arm64 CPU Linux runs on has FP).
#[derive(Clone, Copy, Debug)]
pub struct Delivery<'a> {
    pub sp_top: u64,
    pub signo: u32,
    pub info: &'a Siginfo,
    pub action: &'a Sigaction,
    pub uc_stack: StackT,
    pub sigmask: Sigset,
    pub regs: &'a UserRegs,
    pub fault_address: u64,
    pub fpsimd: &'a FpsimdState,
    pub records: Records<'a>,
    pub bti: bool,
    pub sigtramp: u64,
}

/// The frame from its start to the end of fpsimd_context, then room for the small records that
/// follow in the same piece. Every field lies at its uapi offset (checked below), so filling it
/// is stores at fixed places.
#[repr(C)]
#[derive(IntoBytes, Immutable)]
struct Image {
    info: [u8; Siginfo::SIZE],
    uc_flags: u64,
    uc_link: u64,
    uc_stack: StackT,
    sigmask: u64,
    /// The rest of the kernel's sigset and the padding before uc_mcontext.
    sigmask_pad: [u8; MCONTEXT_OFFSET - UC_SIGMASK_OFFSET - 8],
    fault_address: u64,
    regs: [u64; 31],
    sp: u64,
    pc: u64,
    pstate: u64,
    mcontext_pad: u64,
    /// fpsimd_context: magic, size, fpsr, fpcr.
    fp_head: [u32; 4],
    vregs: [u128; 32],
    /// The records after fpsimd_context up to the first payload (then reused for each piece).
    recs: [u8; RECS],
}

/// Staged record bytes in one piece at most: esr, gcs, the vector heads, tpidr2, zt, fpmr, poe,
/// the terminator, extra_context with its terminator and the frame record (288).
const RECS: usize = 288;

/// Where fpsimd_context ends and the staged records begin.
const RECS_OFFSET: usize = RESERVED_OFFSET + FPSIMD_CONTEXT_SIZE as usize;

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(Image, info) == INFO_OFFSET);
    assert!(offset_of!(Image, uc_flags) == UC_FLAGS_OFFSET);
    assert!(offset_of!(Image, uc_link) == UC_LINK_OFFSET);
    assert!(offset_of!(Image, uc_stack) == UC_STACK_OFFSET);
    assert!(offset_of!(Image, sigmask) == UC_SIGMASK_OFFSET);
    assert!(offset_of!(Image, fault_address) == FAULT_ADDRESS_OFFSET);
    assert!(offset_of!(Image, regs) == REGS_OFFSET);
    assert!(offset_of!(Image, sp) == SP_OFFSET);
    assert!(offset_of!(Image, pc) == PC_OFFSET);
    assert!(offset_of!(Image, pstate) == PSTATE_OFFSET);
    assert!(offset_of!(Image, fp_head) == RESERVED_OFFSET);
    assert!(offset_of!(Image, recs) == RECS_OFFSET);
    assert!(size_of::<Image>() == RECS_OFFSET + RECS);
};

/// The running layout: `LayoutBuilder`'s rule for records that come in order.
#[derive(Clone, Copy)]
struct Place {
    /// Frame offset of the next record.
    used: usize,
    /// Where records may end: inside `__reserved` until the spill, then SIGFRAME_MAXSZ.
    limit: usize,
    /// Frame offset of extra_context, once the records have spilled.
    extra: Option<usize>,
}

impl Place {
    const START: Place = Place {
        used: RECS_OFFSET,
        limit: RESERVED_OFFSET + RESERVED_SIZE - TERMINATOR_SIZE - EXTRA_CONTEXT_SIZE as usize,
        extra: None,
    };

    /// Places a record taking `padded` bytes; true when extra_context goes just before it.
    #[inline(always)]
    fn push(&mut self, padded: usize) -> Result<bool, Errno> {
        let mut spill = false;
        if padded > self.limit - self.used {
            if self.extra.is_none() {
                self.extra = Some(self.used);
                self.used += EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE;
                self.limit = SIGFRAME_MAXSZ - TERMINATOR_SIZE;
                spill = true;
            }
            if padded > self.limit - self.used {
                return Err(Errno::ENOMEM);
            }
        }
        self.used += padded;
        Ok(spill)
    }
}

/// A record's head.size and payload: a vector record is its head alone unless it is live.
#[inline(always)]
fn vec_size(v: &VecRecord<'_>, full: u32) -> u32 {
    if v.payload.is_some() {
        full
    } else {
        SVE_CONTEXT_HEAD_SIZE
    }
}

impl Records<'_> {
    /// The sizes of the sve and za records (0: absent).
    #[inline(always)]
    fn vec_sizes(&self) -> (u32, u32) {
        let sve = self.sve.as_ref().map_or(0, |v| {
            vec_size(
                v,
                sve_sig_context_size(u32::from(v.vl) / 16).next_multiple_of(16),
            )
        });
        let za = self.za.as_ref().map_or(0, |v| {
            vec_size(v, za_sig_context_size(u32::from(v.vl) / 16))
        });
        (sve, za)
    }

    /// The layout pass: where the records end (the final terminator's offset) and where
    /// extra_context goes, if anywhere.
    fn place(&self) -> Result<Place, Errno> {
        let (sve, za) = self.vec_sizes();
        let mut p = Place::START;
        let small = |on: bool| if on { 16 } else { 0 };
        for s in [
            small(self.esr.is_some()),
            if self.gcs.is_some() {
                GCS_CONTEXT_SIZE as usize
            } else {
                0
            },
            sve as usize,
            small(self.tpidr2.is_some()),
            za as usize,
            if self.zt0.is_some() {
                zt_sig_context_size(1) as usize
            } else {
                0
            },
            small(self.fpmr.is_some()),
            small(self.poe.is_some()),
        ] {
            if s != 0 {
                p.push(s.next_multiple_of(16))?;
            }
        }
        Ok(p)
    }
}

/// The pieces of the frame after the header, in ascending order.
struct Pieces<'o, 'w> {
    out: &'o mut WriteAt<'w>,
    /// The frame's user address.
    base: u64,
    img: Image,
    /// Frame offset of `img.recs[0]` (RECS_OFFSET: the first piece starts at the frame's base).
    start: usize,
    /// Bytes staged in `img.recs`.
    n: usize,
    /// The layout, replayed as the records go out.
    place: Place,
    /// extra_context's datap and size.
    extra: (u64, u32),
}

/// Copies bytes to user memory at an address, or fails with `Efault`.
pub type WriteAt<'w> = dyn FnMut(u64, &[u8]) -> Result<(), Efault> + 'w;

impl Pieces<'_, '_> {
    /// The staged bytes: from the frame's base for the first piece, else from `start`.
    fn flush(&mut self) -> Result<(), Errno> {
        let (off, bytes) = if self.start == RECS_OFFSET {
            (0, &self.img.as_bytes()[..RECS_OFFSET + self.n])
        } else {
            (self.start, &self.img.recs[..self.n])
        };
        (self.out)(self.base + off as u64, bytes).map_err(|_| Errno::EFAULT)
    }

    /// The next record's first 16 bytes, with extra_context first when it goes there.
    #[inline(always)]
    fn head(&mut self, magic: u32, size: u32, value: u64) -> Result<(), Errno> {
        if self.place.push((size as usize).next_multiple_of(16))? {
            let (datap, esize) = self.extra;
            let r: &mut [u8; 48] = self
                .img
                .recs
                .get_mut(self.n..self.n + 48)
                .and_then(|r| r.try_into().ok())
                .ok_or(Errno::EINVAL)?;
            *r = [0; 48];
            put_u32(r, 0, EXTRA_MAGIC);
            put_u32(r, 4, EXTRA_CONTEXT_SIZE);
            put_u64(r, 8, datap);
            put_u32(r, 16, esize);
            self.n += 48;
        }
        let r: &mut [u8; 16] = self
            .img
            .recs
            .get_mut(self.n..self.n + 16)
            .and_then(|r| r.try_into().ok())
            .ok_or(Errno::EINVAL)?;
        put_u32(r, 0, magic);
        put_u32(r, 4, size);
        put_u64(r, 8, value);
        self.n += 16;
        Ok(())
    }

    /// A register payload right after its record's head: the staged bytes go out, the payload
    /// from the caller's memory, and the next piece starts after the record's padding.
    fn payload(&mut self, p: &[u8], size: u32) -> Result<(), Errno> {
        if p.len() > size as usize - 16 {
            return Err(Errno::EINVAL);
        }
        self.flush()?;
        let at = self.start + self.n;
        (self.out)(self.base + at as u64, p).map_err(|_| Errno::EFAULT)?;
        // `place.used` is already past this record.
        self.start = self.place.used;
        self.n = 0;
        Ok(())
    }

    fn vec(&mut self, magic: u32, v: &VecRecord<'_>, size: u32) -> Result<(), Errno> {
        let value = u64::from(v.vl) | u64::from(v.flags) << 16;
        self.head(magic, size, value)?;
        match v.payload {
            Some(p) => self.payload(p, size),
            None => Ok(()),
        }
    }
}

impl Delivery<'_> {
    /// Where the handler starts for a frame of `size` bytes below `sp_top` (`handler_entry`).
    fn entry(&self, size: usize) -> Result<HandlerEntry, Errno> {
        handler_entry(
            self.sp_top,
            size,
            self.signo,
            self.action,
            self.regs,
            self.bti,
            self.sigtramp,
        )
    }
}

impl Delivery<'_> {
    /// Lays out and writes the frame as `out(user address, bytes)` calls in ascending order, the same bytes `SigDelivery::emit` writes for these records, and
    /// returns the registers the handler starts with. EFAULT when the frame does not fit below
    /// `sp_top` or `out` fails (the kernel then forces SIGSEGV), ENOMEM when the records are
    /// too large for any frame, EINVAL when a payload overflows its record.
    pub fn write(&self, out: &mut WriteAt<'_>) -> Result<HandlerEntry, Errno> {
        let r = &self.records;
        if r.heads_only() {
            return self.write_heads_only(out);
        }
        let end = r.place()?;
        let used = end.used + TERMINATOR_SIZE;
        let size = used.max(RT_SIGFRAME_SIZE).next_multiple_of(16);
        let entry = self.entry(size)?;
        let base = entry.sp;
        let extra = match end.extra {
            Some(e) => {
                let start = e + EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE;
                (
                    base + start as u64,
                    (used.next_multiple_of(16) - start) as u32,
                )
            }
            None => (0, 0),
        };
        let mut w = Pieces {
            out,
            base,
            img: self.image(),
            start: RECS_OFFSET,
            n: 0,
            place: Place::START,
            extra,
        };
        if let Some(esr) = r.esr {
            w.head(ESR_MAGIC, ESR_CONTEXT_SIZE, esr)?;
        }
        if let Some(g) = &r.gcs {
            w.head(GCS_MAGIC, GCS_CONTEXT_SIZE, get_u64(g, 0))?;
            // The gcs record's last 16 bytes, staged after its head.
            let rest = w.img.recs.get_mut(w.n..w.n + 16).ok_or(Errno::EINVAL)?;
            rest.copy_from_slice(&g[8..]);
            w.n += 16;
        }
        let (sve_size, za_size) = r.vec_sizes();
        if let Some(v) = &r.sve {
            w.vec(SVE_MAGIC, v, sve_size)?;
        }
        if let Some(v) = r.tpidr2 {
            w.head(TPIDR2_MAGIC, TPIDR2_CONTEXT_SIZE, v)?;
        }
        if let Some(v) = &r.za {
            w.vec(ZA_MAGIC, v, za_size)?;
        }
        if let Some(zt) = r.zt0 {
            // Head, nregs 1, then ZT0, all staged.
            w.head(ZT_MAGIC, zt_sig_context_size(1), 1)?;
            let rest = w.img.recs.get_mut(w.n..w.n + 64).ok_or(Errno::EINVAL)?;
            rest.copy_from_slice(zt);
            w.n += 64;
        }
        if let Some(v) = r.fpmr {
            w.head(FPMR_MAGIC, FPMR_CONTEXT_SIZE, v)?;
        }
        if let Some(v) = r.poe {
            w.head(POE_MAGIC, POE_CONTEXT_SIZE, v)?;
        }
        // The terminator.
        let t = w.img.recs.get_mut(w.n..w.n + 16).ok_or(Errno::EINVAL)?;
        t.fill(0);
        w.n += 16;
        // The frame record above the frame: in the same piece when the frame ends there.
        let mut rec = [0u8; FRAME_RECORD_SIZE];
        put_u64(&mut rec, 0, self.regs.regs[29]);
        put_u64(&mut rec, 8, self.regs.regs[30]);
        if w.start + w.n == size {
            let r = w.img.recs.get_mut(w.n..w.n + 16).ok_or(Errno::EINVAL)?;
            r.copy_from_slice(&rec);
            w.n += 16;
            w.flush()?;
        } else {
            w.flush()?;
            (w.out)(base + size as u64, &rec).map_err(|_| Errno::EFAULT)?;
        }
        Ok(entry)
    }
}

impl Records<'_> {
    /// Whether every record is a 16-byte head (no register payload, no gcs or zt record): the
    /// usual frame of a task whose SVE and ZA state is not live. They always fit in
    /// `__reserved` after fpsimd_context, so the frame is `RT_SIGFRAME_SIZE` bytes.
    #[inline(always)]
    fn heads_only(&self) -> bool {
        self.gcs.is_none()
            && self.zt0.is_none()
            && self.sve.is_none_or(|v| v.payload.is_none())
            && self.za.is_none_or(|v| v.payload.is_none())
    }
}

/// The most records a frame of heads alone carries (esr, sve, tpidr2, za, fpmr, poe) and its
/// terminator: they fit in the image's staging room and in `__reserved`.
const HEADS_MAX: usize = 7 * 16;
const _: () = assert!(HEADS_MAX <= RECS);
const _: () = assert!(RECS_OFFSET + HEADS_MAX <= RT_SIGFRAME_SIZE);

impl Delivery<'_> {
    /// The frame's start up to fpsimd_context's end, filled; the staging room zero.
    #[inline(always)]
    fn image(&self) -> Image {
        let fp = self.fpsimd;
        Image {
            info: if self.action.sa_flags & SA_SIGINFO != 0 {
                self.info.0
            } else {
                [0; Siginfo::SIZE]
            },
            uc_flags: 0,
            uc_link: 0,
            uc_stack: self.uc_stack,
            sigmask: self.sigmask.0,
            sigmask_pad: [0; MCONTEXT_OFFSET - UC_SIGMASK_OFFSET - 8],
            fault_address: self.fault_address,
            regs: self.regs.regs,
            sp: self.regs.sp,
            pc: self.regs.pc,
            pstate: self.regs.pstate,
            mcontext_pad: 0,
            fp_head: [FPSIMD_MAGIC, FPSIMD_CONTEXT_SIZE, fp.fpsr, fp.fpcr],
            vregs: fp.vregs,
            recs: [0; RECS],
        }
    }

    /// `write` for a frame whose records are all heads (`Records::heads_only`): no layout
    /// pass, the heads stored one after another behind fpsimd_context, the frame in one copy
    /// and the frame record above it in another.
    fn write_heads_only(&self, out: &mut WriteAt<'_>) -> Result<HandlerEntry, Errno> {
        let r = &self.records;
        let entry = self.entry(RT_SIGFRAME_SIZE)?;
        let mut img = self.image();
        let mut n = 0;
        let mut head = |magic: u32, size: u32, value: u64| {
            if let Some(h) = img.recs.get_mut(n..n + 16) {
                put_u32(h, 0, magic);
                put_u32(h, 4, size);
                put_u64(h, 8, value);
            }
            n += 16;
        };
        let vec_value = |v: &VecRecord<'_>| u64::from(v.vl) | u64::from(v.flags) << 16;
        if let Some(esr) = r.esr {
            head(ESR_MAGIC, ESR_CONTEXT_SIZE, esr);
        }
        if let Some(v) = &r.sve {
            head(SVE_MAGIC, SVE_CONTEXT_HEAD_SIZE, vec_value(v));
        }
        if let Some(v) = r.tpidr2 {
            head(TPIDR2_MAGIC, TPIDR2_CONTEXT_SIZE, v);
        }
        if let Some(v) = &r.za {
            head(ZA_MAGIC, SVE_CONTEXT_HEAD_SIZE, vec_value(v));
        }
        if let Some(v) = r.fpmr {
            head(FPMR_MAGIC, FPMR_CONTEXT_SIZE, v);
        }
        if let Some(v) = r.poe {
            head(POE_MAGIC, POE_CONTEXT_SIZE, v);
        }
        // The terminator: the staging room is zero.
        n += 16;
        let bytes = img.as_bytes().get(..RECS_OFFSET + n).ok_or(Errno::EINVAL)?;
        (out)(entry.sp, bytes).map_err(|_| Errno::EFAULT)?;
        let mut rec = [0u8; FRAME_RECORD_SIZE];
        put_u64(&mut rec, 0, self.regs.regs[29]);
        put_u64(&mut rec, 8, self.regs.regs[30]);
        (out)(entry.x29, &rec).map_err(|_| Errno::EFAULT)?;
        Ok(entry)
    }
}

/// `get_sigframe` and the handler's registers for a frame of `size` bytes below `sp_top`.
#[inline(always)]
pub(super) fn handler_entry(
    sp_top: u64,
    size: usize,
    signo: u32,
    action: &Sigaction,
    regs: &UserRegs,
    bti: bool,
    sigtramp: u64,
) -> Result<HandlerEntry, Errno> {
    let frame_record = sp_top
        .checked_sub(FRAME_RECORD_SIZE as u64)
        .ok_or(Errno::EFAULT)?
        & !15;
    let base = frame_record.checked_sub(size as u64).ok_or(Errno::EFAULT)?;
    let siginfo = action.sa_flags & SA_SIGINFO != 0;
    let mut pstate = regs.pstate & !PSR_TCO_BIT;
    if bti {
        pstate = (pstate & !PSR_BTYPE_MASK) | PSR_BTYPE_C;
    }
    Ok(HandlerEntry {
        x0: signo as u64,
        x1: siginfo.then_some(base + INFO_OFFSET as u64),
        x2: siginfo.then_some(base + UC_OFFSET as u64),
        sp: base,
        x29: frame_record,
        x30: if action.sa_flags & SA_RESTORER != 0 {
            action.sa_restorer
        } else {
            sigtramp
        },
        pc: action.sa_handler,
        pstate,
    })
}

#[cfg(test)]
mod tests;
