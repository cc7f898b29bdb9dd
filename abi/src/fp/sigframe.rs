//! The arm64 `rt_sigframe`: building it for signal delivery and checking it in rt_sigreturn,
//! as Linux's arch/arm64/kernel/signal.c builds and checks it (setup_sigframe_layout,
//! parse_user_sigframe) and its uapi asm/sigcontext.h lays it out.
//!
//! Delivery is a pure function of the interrupted state: `FrameLayout::compute` places the
//! records, `SigDelivery::plan` chooses addresses, `SigDelivery::write` fills the image the
//! kernel copies to [base, base + image_len), and `HandlerEntry` holds the registers the
//! handler starts with. Records other than fpsimd/esr (SVE, TPIDR2, ZA, ZT, FPMR, POE, GCS)
//! are passed in as generic `RecordSpec`s, so they only need their bytes built elsewhere.
//! The kernel delivers through `Delivery` (sigframe/deliver.rs), which names Linux's records
//! and writes the same bytes in one pass; its host tests compare it with `SigDelivery::emit`.
//!
//! rt_sigreturn is `parse_sigreturn`: it reads the frame and any extra space through a
//! user-copy callback and applies every generic rule of §6 plus the FPSIMD ones. Feature records
//! come back raw (whole record, head included); `check_records` then applies the SVE, ZA, ZT and
//! TPIDR2 rules against the task's vector lengths. A frame either of them refuses is answered
//! with SIGSEGV (`bad_frame_siginfo`). The kernel only copies bytes and installs the result.
//! It first tries `parse_in_place` (sigframe/inplace.rs), which takes only frames whose records
//! are all good, checks them where they lie and hands back views of the frame bytes; any other
//! frame goes through `parse_sigreturn` and `check_records` as above.

use crate::uapi::errno::Errno;
use crate::uapi::signal::{Sigaction, Siginfo, Sigset, StackT, SA_RESTORER, SA_SIGINFO};
use crate::uapi::signal::{SEGV_ACCERR, SEGV_MAPERR, SIGSEGV};
use crate::util::bytes::*;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// ---- rt_sigframe offsets ----

/// `sizeof(struct rt_sigframe)`.
pub const RT_SIGFRAME_SIZE: usize = 4688;
pub const INFO_OFFSET: usize = 0;
pub const UC_OFFSET: usize = 128;
pub const UC_FLAGS_OFFSET: usize = UC_OFFSET;
pub const UC_LINK_OFFSET: usize = UC_OFFSET + 8;
pub const UC_STACK_OFFSET: usize = UC_OFFSET + 16;
pub const UC_SIGMASK_OFFSET: usize = UC_OFFSET + 40;
/// `uc_mcontext` (struct sigcontext).
pub const MCONTEXT_OFFSET: usize = 304;
pub const FAULT_ADDRESS_OFFSET: usize = MCONTEXT_OFFSET;
pub const REGS_OFFSET: usize = MCONTEXT_OFFSET + 8;
pub const SP_OFFSET: usize = MCONTEXT_OFFSET + 256;
pub const PC_OFFSET: usize = MCONTEXT_OFFSET + 264;
pub const PSTATE_OFFSET: usize = MCONTEXT_OFFSET + 272;
/// `uc_mcontext.__reserved`: the record area.
pub const RESERVED_OFFSET: usize = 592;
pub const RESERVED_SIZE: usize = 4096;
const _: () = assert!(RESERVED_OFFSET + RESERVED_SIZE == RT_SIGFRAME_SIZE);
const _: () = assert!(PSTATE_OFFSET + 8 + 8 == RESERVED_OFFSET); // pstate, then 8 bytes pad

/// Room kept for the terminator at the end of a record area.
pub const TERMINATOR_SIZE: usize = 16;
/// Frames beyond this are refused (not ABI: Linux's sanity limit).
pub const SIGFRAME_MAXSZ: usize = 256 * 1024;
/// `struct frame_record { u64 fp, lr; }` placed above the frame.
pub const FRAME_RECORD_SIZE: usize = 16;

// ---- record magics and sizes ----

pub const FPSIMD_MAGIC: u32 = 0x4650_8001;
pub const ESR_MAGIC: u32 = 0x4553_5201;
pub const EXTRA_MAGIC: u32 = 0x4558_5401;
pub const SVE_MAGIC: u32 = 0x5356_4501;
pub const TPIDR2_MAGIC: u32 = 0x5450_4902;
pub const ZA_MAGIC: u32 = 0x5436_6345;
pub const ZT_MAGIC: u32 = 0x5a54_4e01;
pub const FPMR_MAGIC: u32 = 0x4650_4d52;
pub const POE_MAGIC: u32 = 0x504f_4530;
pub const GCS_MAGIC: u32 = 0x4743_5300;

pub const FPSIMD_CONTEXT_SIZE: u32 = 528;
pub const ESR_CONTEXT_SIZE: u32 = 16;
pub const EXTRA_CONTEXT_SIZE: u32 = 32;
pub const SVE_CONTEXT_HEAD_SIZE: u32 = 16;
pub const TPIDR2_CONTEXT_SIZE: u32 = 16;
pub const ZA_CONTEXT_HEAD_SIZE: u32 = 16;
pub const ZT_CONTEXT_HEAD_SIZE: u32 = 16;
pub const FPMR_CONTEXT_SIZE: u32 = 16;
pub const POE_CONTEXT_SIZE: u32 = 16;
pub const GCS_CONTEXT_SIZE: u32 = 32;

/// `sve_context.flags`: the payload is streaming-mode state and `vl` the SME VL.
pub const SVE_SIG_FLAG_SM: u16 = 0x1;

/// Record sizes by vector quadwords (vq = VL / 16), spec §3.
pub const fn sve_sig_regs_size(vq: u32) -> u32 {
    546 * vq
}
pub const fn sve_sig_context_size(vq: u32) -> u32 {
    16 + sve_sig_regs_size(vq)
}
pub const fn za_sig_regs_size(vq: u32) -> u32 {
    (16 * vq) * (16 * vq)
}
pub const fn za_sig_context_size(vq: u32) -> u32 {
    16 + za_sig_regs_size(vq)
}
pub const fn zt_sig_context_size(nregs: u32) -> u32 {
    16 + 64 * nregs
}

/// The name of a record magic, for logs.
pub const fn magic_name(magic: u32) -> &'static str {
    match magic {
        0 => "terminator",
        FPSIMD_MAGIC => "fpsimd_context",
        ESR_MAGIC => "esr_context",
        EXTRA_MAGIC => "extra_context",
        SVE_MAGIC => "sve_context",
        TPIDR2_MAGIC => "tpidr2_context",
        ZA_MAGIC => "za_context",
        ZT_MAGIC => "zt_context",
        FPMR_MAGIC => "fpmr_context",
        POE_MAGIC => "poe_context",
        GCS_MAGIC => "gcs_context",
        _ => "unknown",
    }
}

// ---- PSTATE bits ----

pub const PSR_MODE_MASK: u64 = 0xf;
pub const PSR_MODE_EL0T: u64 = 0;
pub const PSR_MODE32_BIT: u64 = 1 << 4;
pub const PSR_F_BIT: u64 = 1 << 6;
pub const PSR_I_BIT: u64 = 1 << 7;
pub const PSR_A_BIT: u64 = 1 << 8;
pub const PSR_D_BIT: u64 = 1 << 9;
pub const PSR_BTYPE_MASK: u64 = 3 << 10;
/// BTYPE = 0b10: the handler is entered as if by a BLR-style call (BTI "c" landing pad).
pub const PSR_BTYPE_C: u64 = 2 << 10;
pub const PSR_SSBS_BIT: u64 = 1 << 12;
pub const PSR_TCO_BIT: u64 = 1 << 25;
pub const PSR_NZCV_MASK: u64 = 0xf << 28;
/// SPSR bits a user frame may not set (63:32, 27:26, 23:22, 20:13, 5): cleared, not rejected.
pub const SPSR_EL1_AARCH64_RES0_BITS: u64 =
    (0xffff_ffff << 32) | (3 << 26) | (3 << 22) | (0xff << 13) | (1 << 5);

/// `valid_user_regs` for a native task: clear the RES0 bits, then accept only EL0t, AArch64,
/// and D/A/I/F all clear. Returns the sanitised PSTATE, or None (the frame is rejected).
pub fn valid_user_pstate(pstate: u64) -> Option<u64> {
    let p = pstate & !SPSR_EL1_AARCH64_RES0_BITS;
    let ok = p & PSR_MODE_MASK == PSR_MODE_EL0T
        && p & PSR_MODE32_BIT == 0
        && p & (PSR_D_BIT | PSR_A_BIT | PSR_I_BIT | PSR_F_BIT) == 0;
    ok.then_some(p)
}

/// The PSTATE `valid_user_regs` leaves in the registers: the sanitised value when it is valid,
/// else a plain EL0t one that keeps only the condition flags.
pub fn forced_user_pstate(pstate: u64) -> u64 {
    valid_user_pstate(pstate).unwrap_or(pstate & PSR_NZCV_MASK)
}

// ---- state carried in and out ----

/// The user registers a frame saves and restores (`#[repr(C)]`: the kernel views its trap
/// frame's first 34 words as one, without a copy).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct UserRegs {
    pub regs: [u64; 31],
    pub sp: u64,
    pub pc: u64,
    pub pstate: u64,
}

/// FPSIMD state as `fpsimd_context` holds it (`#[repr(C)]`: the kernel views a task's saved
/// registers as one, without a copy).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, Immutable, KnownLayout)]
pub struct FpsimdState {
    pub vregs: [u128; 32],
    pub fpsr: u32,
    pub fpcr: u32,
}

/// A record to place after fpsimd/esr, in the order given (Linux's: gcs, sve, tpidr2, za, zt,
/// fpmr, poe). `size` is the head.size written (the 8-byte head included) and the record takes
/// `size` rounded up to 16. `body` is written right after the head, then `payload` (register
/// contents, handed to the writer without a copy). Without a payload the rest of the record is
/// zero; with one, the bytes after it are left alone (Linux copies exactly the register bytes).
#[derive(Clone, Copy, Debug)]
pub struct RecordSpec<'a> {
    pub magic: u32,
    pub size: u32,
    pub body: &'a [u8],
    pub payload: &'a [u8],
}

/// The most records one frame holds (fpsimd, esr and the eight feature records, with room).
pub const MAX_RECORDS: usize = 12;

/// Where the records of one frame go, offsets from the frame base (Linux's
/// `setup_sigframe_layout` and `sigframe_alloc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLayout {
    /// u32: every offset is under SIGFRAME_MAXSZ, and the plan is copied on every delivery.
    offsets: [u32; MAX_RECORDS],
    count: usize,
    /// The extra_context record, when the records overflowed `__reserved`.
    pub extra_offset: Option<usize>,
    /// The final terminator.
    pub end_offset: usize,
    /// Bytes used (end of the final terminator's 16 bytes).
    pub used: usize,
    /// `sigframe_size`: round_up(max(used, 4688), 16).
    pub size: usize,
}

impl FrameLayout {
    /// Lay out records with these head sizes, in order. ENOMEM when they exceed
    /// SIGFRAME_MAXSZ or MAX_RECORDS.
    pub fn compute(sizes: &[u32]) -> Result<FrameLayout, Errno> {
        let mut b = LayoutBuilder::new();
        for &s in sizes {
            b.push(s)?;
        }
        Ok(b.finish())
    }

    /// The offset of the `i`-th record passed to `compute`.
    pub fn record_offset(&self, i: usize) -> Option<usize> {
        (i < self.count).then(|| self.offsets[i] as usize)
    }

    /// With extra_context: the offset `datap` points at (just after the __reserved terminator)
    /// and the extra `size` (to the end of the frame, final terminator included).
    pub fn extra_area(&self) -> Option<(usize, usize)> {
        let e = self.extra_offset?;
        let start = e + EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE;
        Some((start, self.used.next_multiple_of(16) - start))
    }
}

/// `FrameLayout::compute` one record at a time, so that delivery places its records as it
/// names them (no list of sizes first).
struct LayoutBuilder {
    l: FrameLayout,
    /// Where the records placed so far may end: inside `__reserved` (room kept for the
    /// terminator and a possible extra_context), then, after a spill, SIGFRAME_MAXSZ.
    limit: usize,
}

impl LayoutBuilder {
    fn new() -> LayoutBuilder {
        LayoutBuilder {
            l: FrameLayout {
                offsets: [0; MAX_RECORDS],
                count: 0,
                extra_offset: None,
                end_offset: 0,
                used: RESERVED_OFFSET,
                size: 0,
            },
            limit: RESERVED_OFFSET + RESERVED_SIZE - TERMINATOR_SIZE - EXTRA_CONTEXT_SIZE as usize,
        }
    }

    /// Places the next record (head size `s`); ENOMEM past MAX_RECORDS or SIGFRAME_MAXSZ.
    #[inline]
    fn push(&mut self, s: u32) -> Result<(), Errno> {
        let l = &mut self.l;
        let slot = l.offsets.get_mut(l.count).ok_or(Errno::ENOMEM)?;
        let padded = (s as usize).next_multiple_of(16);
        if padded > self.limit - l.used {
            if l.extra_offset.is_none() {
                // Spill: extra_context here, a terminator after it, the rest beyond.
                l.extra_offset = Some(l.used);
                l.used += EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE;
                self.limit = SIGFRAME_MAXSZ - TERMINATOR_SIZE;
            }
            if padded > self.limit - l.used {
                return Err(Errno::ENOMEM);
            }
        }
        *slot = l.used as u32;
        l.count += 1;
        l.used += padded;
        Ok(())
    }

    fn finish(mut self) -> FrameLayout {
        let l = &mut self.l;
        // The terminator may use the space kept for it.
        l.end_offset = l.used;
        l.used += TERMINATOR_SIZE;
        l.size = l.used.max(RT_SIGFRAME_SIZE).next_multiple_of(16);
        self.l
    }
}

/// AT_MINSIGSTKSZ for a system whose largest records have these sizes, in delivery order with
/// esr_context included (spec §7): the frame size plus the frame record plus 16 bytes of
/// alignment slack.
pub fn minsigstksz(max_sizes: &[u32]) -> Result<usize, Errno> {
    Ok(FrameLayout::compute(max_sizes)?.size + FRAME_RECORD_SIZE + 16)
}

/// The registers the handler starts with. Registers not named keep their interrupted values;
/// x1/x2 are only set with SA_SIGINFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandlerEntry {
    pub x0: u64,
    pub x1: Option<u64>,
    pub x2: Option<u64>,
    pub sp: u64,
    /// Address of the frame record, which holds the interrupted x29/x30.
    pub x29: u64,
    /// sa_restorer with SA_RESTORER, else the kernel's signal trampoline.
    pub x30: u64,
    pub pc: u64,
    /// Interrupted PSTATE with TCO cleared and, with BTI, BTYPE = 0b10.
    pub pstate: u64,
}

/// Everything a delivery needs.
#[derive(Clone, Copy, Debug)]
pub struct SigDelivery<'a> {
    /// The user SP or the alternate-stack top (`AltStack::frame_top`).
    pub sp_top: u64,
    pub signo: u32,
    /// Copied into the frame only with SA_SIGINFO (the area is zero otherwise).
    pub info: &'a Siginfo,
    pub action: &'a Sigaction,
    /// `AltStack::saved()` before delivery.
    pub uc_stack: StackT,
    /// The blocked mask to restore on return (the one in force before delivery).
    pub sigmask: Sigset,
    pub regs: &'a UserRegs,
    pub fault_address: u64,
    /// The ESR to report: `Some` only when the signal comes from a fault (thread.fault_code≠0).
    pub esr: Option<u64>,
    /// None only on a CPU without FP (never on Linux-capable arm64).
    pub fpsimd: Option<&'a FpsimdState>,
    pub records: &'a [RecordSpec<'a>],
    pub bti: bool,
    /// Handler return address when the action has no SA_RESTORER (Linux: the vDSO sigtramp).
    pub sigtramp: u64,
}

/// Where a delivery puts the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryPlan {
    /// Frame base = the handler's SP (16-aligned).
    pub base: u64,
    /// The frame record {fp, lr}, directly above the frame.
    pub frame_record: u64,
    /// Bytes to copy to [base, base + image_len): the frame and the frame record.
    pub image_len: usize,
    pub layout: FrameLayout,
    pub entry: HandlerEntry,
}

impl SigDelivery<'_> {
    /// The frame's records laid out in order: fpsimd, esr, then `records`. ENOMEM when there
    /// are too many, one is smaller than its head, or they exceed SIGFRAME_MAXSZ.
    fn layout(&self) -> Result<FrameLayout, Errno> {
        let mut b = LayoutBuilder::new();
        if self.fpsimd.is_some() {
            b.push(FPSIMD_CONTEXT_SIZE)?;
        }
        if self.esr.is_some() {
            b.push(ESR_CONTEXT_SIZE)?;
        }
        for r in self.records {
            if r.size < 8 {
                return Err(Errno::ENOMEM);
            }
            b.push(r.size)?;
        }
        Ok(b.finish())
    }

    /// Lay out the frame and choose its address (`get_sigframe`). EFAULT when the frame would
    /// not fit below `sp_top` (the kernel then forces SIGSEGV); ENOMEM when the records are too
    /// large for any frame.
    pub fn plan(&self) -> Result<DeliveryPlan, Errno> {
        let layout = self.layout()?;
        let entry = deliver::handler_entry(
            self.sp_top,
            layout.size,
            self.signo,
            self.action,
            self.regs,
            self.bti,
            self.sigtramp,
        )?;
        let (base, frame_record) = (entry.sp, entry.x29);
        Ok(DeliveryPlan {
            base,
            frame_record,
            image_len: layout.size + FRAME_RECORD_SIZE,
            layout,
            entry,
        })
    }

    /// Write the image of [plan.base, plan.base + plan.image_len) into `buf` (at least
    /// `image_len` bytes; ENOMEM otherwise). Bytes `emit` leaves unwritten are zero here.
    pub fn write(&self, plan: &DeliveryPlan, buf: &mut [u8]) -> Result<(), Errno> {
        let buf = buf.get_mut(..plan.image_len).ok_or(Errno::ENOMEM)?;
        buf.fill(0);
        self.emit(plan, &mut |off, bytes| {
            let dst = buf.get_mut(off..off + bytes.len()).ok_or(Efault)?;
            dst.copy_from_slice(bytes);
            Ok(())
        })
    }

    /// Write the frame as `out(offset from plan.base, bytes)` calls in ascending, non-overlapping
    /// order, touching only what Linux's setup_rt_frame writes, give or take a few padding bytes:
    /// the header up to `__reserved` (siginfo zero without SA_SIGINFO, padding zero), every
    /// record (payload-less ones in full; a payload's tail padding is left alone), extra_context
    /// and its terminator, a 16-byte final terminator, and the frame record. The rest of
    /// `__reserved` and of the extra space keeps whatever the stack held, as on Linux. Small
    /// pieces are gathered so that a typical frame takes two `out` calls; payloads go out as
    /// given. EFAULT when `out` fails, EINVAL when a record's body and payload overflow it.
    pub fn emit(&self, plan: &DeliveryPlan, out: &mut WriteUser<'_>) -> Result<(), Errno> {
        let l = &plan.layout;
        let mut w = Stage::new(out);
        // The header: fields at fixed offsets, the rest (padding, uc_flags, uc_link, siginfo
        // without SA_SIGINFO) zero.
        let h = w.take(RESERVED_OFFSET)?;
        if self.action.sa_flags & SA_SIGINFO != 0 {
            h[INFO_OFFSET..INFO_OFFSET + Siginfo::SIZE].copy_from_slice(&self.info.0);
        } else {
            h[INFO_OFFSET..INFO_OFFSET + Siginfo::SIZE].fill(0);
        }
        put_u64(h, UC_FLAGS_OFFSET, 0);
        put_u64(h, UC_LINK_OFFSET, 0);
        h[UC_STACK_OFFSET..UC_STACK_OFFSET + StackT::SIZE]
            .copy_from_slice(self.uc_stack.as_bytes());
        put_u64(h, UC_SIGMASK_OFFSET, self.sigmask.0);
        h[UC_SIGMASK_OFFSET + 8..MCONTEXT_OFFSET].fill(0);
        put_u64(h, FAULT_ADDRESS_OFFSET, self.fault_address);
        h[REGS_OFFSET..SP_OFFSET].copy_from_slice(self.regs.regs.as_bytes());
        put_u64(h, SP_OFFSET, self.regs.sp);
        put_u64(h, PC_OFFSET, self.regs.pc);
        put_u64(h, PSTATE_OFFSET, self.regs.pstate);
        put_u64(h, PSTATE_OFFSET + 8, 0);

        let mut i = 0;
        if let Some(fp) = self.fpsimd {
            w.at(l.offsets[i] as usize)?;
            let r = w.take(FPSIMD_CONTEXT_SIZE as usize)?;
            put_u32(r, 0, FPSIMD_MAGIC);
            put_u32(r, 4, FPSIMD_CONTEXT_SIZE);
            put_u32(r, 8, fp.fpsr);
            put_u32(r, 12, fp.fpcr);
            r[16..].copy_from_slice(fp.vregs.as_bytes());
            i += 1;
        }
        if let Some(esr) = self.esr {
            w.at(l.offsets[i] as usize)?;
            let r = w.take(ESR_CONTEXT_SIZE as usize)?;
            put_u32(r, 0, ESR_MAGIC);
            put_u32(r, 4, ESR_CONTEXT_SIZE);
            put_u64(r, 8, esr);
            i += 1;
        }
        let mut extra = l.extra_offset.zip(l.extra_area());
        for r in self.records {
            let o = l.offsets[i] as usize;
            if let Some((e, (start, size))) = extra.filter(|&(e, _)| e < o) {
                w.at(e)?;
                let r = w.take(EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE)?;
                r.fill(0);
                put_u32(r, 0, EXTRA_MAGIC);
                put_u32(r, 4, EXTRA_CONTEXT_SIZE);
                put_u64(r, 8, plan.base + start as u64);
                put_u32(r, 16, size as u32);
                extra = None;
            }
            if let (16, true, Ok(body)) =
                (r.size, r.payload.is_empty(), <&[u8; 8]>::try_from(r.body))
            {
                // Most records are a head and one 8-byte field (a vector record's vl and
                // flags, tpidr2, fpmr): straight stores.
                w.at(o)?;
                let b = w.take_array::<16>()?;
                put_u32(b, 0, r.magic);
                put_u32(b, 4, r.size);
                b[8..16].copy_from_slice(body);
                i += 1;
                continue;
            }
            let room = (r.size as usize).saturating_sub(8);
            if r.body.len() + r.payload.len() > room {
                return Err(Errno::EINVAL);
            }
            w.at(o)?;
            let padded = (r.size as usize).next_multiple_of(16);
            if r.payload.is_empty() && padded <= STAGE_SIZE {
                // The common small record (a header, a register value): one piece of the stage.
                let b = w.take(padded)?;
                put_u32(b, 0, r.magic);
                put_u32(b, 4, r.size);
                let (body, rest) = b[8..].split_at_mut(r.body.len());
                body.copy_from_slice(r.body);
                rest.fill(0);
                i += 1;
                continue;
            }
            let h = w.take(8)?;
            put_u32(h, 0, r.magic);
            put_u32(h, 4, r.size);
            w.bytes(r.body)?;
            if r.payload.is_empty() {
                w.zeros(padded - 8 - r.body.len())?;
            } else {
                w.direct(o + 8 + r.body.len(), r.payload)?;
            }
            i += 1;
        }
        w.at(l.end_offset)?;
        w.take(TERMINATOR_SIZE)?.fill(0);
        w.at(l.size)?;
        let r = w.take(FRAME_RECORD_SIZE)?;
        put_u64(r, 0, self.regs.regs[29]);
        put_u64(r, 8, self.regs.regs[30]);
        w.flush()
    }
}

/// Copies bytes to the frame at an offset from its base, or fails with `Efault`.
pub type WriteUser<'w> = dyn FnMut(usize, &[u8]) -> Result<(), Efault> + 'w;

/// Bytes of the frame gathered before they go out: the header, fpsimd, esr, the small records
/// and the terminator of a frame without payloads fit in one piece.
const STAGE_SIZE: usize = 1280;

/// Gathers consecutive frame bytes and hands them to the writer in as few pieces as it can.
struct Stage<'o, 'w> {
    out: &'o mut WriteUser<'w>,
    buf: [u8; STAGE_SIZE],
    /// Frame offset of buf[0].
    start: usize,
    len: usize,
}

impl<'o, 'w> Stage<'o, 'w> {
    fn new(out: &'o mut WriteUser<'w>) -> Self {
        Stage {
            out,
            buf: [0; STAGE_SIZE],
            start: 0,
            len: 0,
        }
    }
    fn flush(&mut self) -> Result<(), Errno> {
        if self.len > 0 {
            (self.out)(self.start, &self.buf[..self.len]).map_err(|_| Errno::EFAULT)?;
            self.start += self.len;
            self.len = 0;
        }
        Ok(())
    }
    /// Continue at frame offset `off`: a gap (or a step back) starts a new piece.
    fn at(&mut self, off: usize) -> Result<(), Errno> {
        if off != self.start + self.len {
            self.flush()?;
            self.start = off;
        }
        Ok(())
    }
    fn bytes(&mut self, mut b: &[u8]) -> Result<(), Errno> {
        while !b.is_empty() {
            if self.len == STAGE_SIZE {
                self.flush()?;
            }
            let n = b.len().min(STAGE_SIZE - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
            self.len += n;
            b = &b[n..];
        }
        Ok(())
    }
    fn zeros(&mut self, mut n: usize) -> Result<(), Errno> {
        while n > 0 {
            if self.len == STAGE_SIZE {
                self.flush()?;
            }
            let k = n.min(STAGE_SIZE - self.len);
            self.buf[self.len..self.len + k].fill(0);
            self.len += k;
            n -= k;
        }
        Ok(())
    }
    /// The next `n` (≤ STAGE_SIZE) bytes, to be filled in by the caller.
    fn take(&mut self, n: usize) -> Result<&mut [u8], Errno> {
        if n > STAGE_SIZE - self.len {
            self.flush()?;
        }
        let at = self.len;
        let b = self.buf.get_mut(at..at + n).ok_or(Errno::EINVAL)?;
        self.len += n;
        Ok(b)
    }
    /// `take` for a size known when it compiles.
    fn take_array<const N: usize>(&mut self) -> Result<&mut [u8; N], Errno> {
        self.take(N)?.try_into().map_err(|_| Errno::EINVAL)
    }
    /// `b` at frame offset `off`, straight from the caller's memory.
    fn direct(&mut self, off: usize, b: &[u8]) -> Result<(), Errno> {
        self.at(off)?;
        self.flush()?;
        (self.out)(off, b).map_err(|_| Errno::EFAULT)?;
        self.start = off + b.len();
        Ok(())
    }
}

// ---- rt_sigreturn ----

/// The user copy failed (the kernel's uaccess fault fix-up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Efault;

/// Copies user memory at an address into a buffer, or fails with `Efault`.
pub type ReadUser<'r> = dyn FnMut(u64, &mut [u8]) -> Result<(), Efault> + 'r;

/// What the CPU implements; records of absent features are rejected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigFeatures {
    pub fpsimd: bool,
    pub sve: bool,
    pub sme: bool,
    pub sme2: bool,
    pub fpmr: bool,
    pub poe: bool,
    pub gcs: bool,
}

impl SigFeatures {
    /// TPIDR2_EL0 exists exactly when SME does.
    pub fn tpidr2(&self) -> bool {
        self.sme
    }
}

/// Why a frame was rejected. Every case means: force SIGSEGV (at the current SP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadFrame {
    /// SP not 16-aligned.
    SpMisaligned,
    /// The frame or the extra space could not be read.
    Fault,
    /// valid_user_regs refused the PSTATE.
    BadPstate,
    /// A record offset is not 16-aligned.
    RecordMisaligned,
    /// Fewer than 8 bytes left for a record head.
    NoRoomForHead,
    /// head.size runs past the end of the area.
    RecordOverrun,
    /// magic 0 with a non-zero size.
    BadTerminator,
    UnknownMagic(u32),
    /// head.size < 8 for a non-terminator record.
    RecordTooSmall(u32),
    Duplicate(u32),
    FeatureAbsent(u32),
    ExtraDuplicate,
    /// extra_context head.size < 32.
    ExtraTooSmall,
    /// No 16-byte null terminator right after extra_context inside __reserved.
    ExtraNoTerminator,
    /// datap or size not 16-aligned.
    ExtraMisaligned,
    /// datap is not the address just after that terminator.
    ExtraBadDatap,
    /// The extra space ends beyond frame + SIGFRAME_MAXSZ.
    ExtraTooLarge,
    /// The caller's extra buffer is smaller than the extra space (not a Linux rule: retry with
    /// a buffer of `needed` bytes).
    ExtraBufferTooSmall {
        needed: usize,
    },
    MissingFpsimd,
    /// fpsimd_context head.size ≠ 528.
    BadFpsimdSize,
    /// sve_context head.size < 16.
    SveTooSmall,
    /// sve_context sets SVE_SIG_FLAG_SM on a system without SME.
    SveStreamingWithoutSme,
    /// A non-streaming sve_context with a payload on a system without SVE (SME only).
    SveWithoutSve,
    /// sve_context.vl is not the task's SVE VL (or SME VL, with SVE_SIG_FLAG_SM).
    SveVlMismatch,
    /// Streaming state in an sve_context without register payload.
    SveStreamingWithoutPayload,
    /// sve_context has a payload but head.size < SVE_SIG_CONTEXT_SIZE(vq).
    SvePayloadTooSmall,
    /// za_context head.size < 16.
    ZaTooSmall,
    /// za_context.vl is not the task's SME VL.
    ZaVlMismatch,
    /// za_context has a payload but head.size < ZA_SIG_CONTEXT_SIZE(vq).
    ZaPayloadTooSmall,
    /// tpidr2_context head.size ≠ 16.
    BadTpidr2Size,
    /// fpmr_context head.size ≠ 16.
    BadFpmrSize,
    /// gcs_context: size ≠ 32, unknown or locked bits changed, enabling, or its token check
    /// (abi::isa::gcs).
    BadGcs,
    /// zt_context while PSTATE.ZA is off after the za step (turned off by this frame's
    /// za_context, or off in the task and no za_context).
    ZtWithoutZa,
    /// zt_context head.size ≠ ZT_SIG_CONTEXT_SIZE(1).
    BadZtSize,
    /// zt_context.nregs ≠ 1.
    BadZtNregs,
}

/// Where a record was found: in the frame (`extra == false`) or the extra space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLoc {
    pub extra: bool,
    /// Offset and size within `__reserved` or the extra space (both under SIGFRAME_MAXSZ);
    /// u32 so that a frame's table of records stays small to set up.
    pub offset: u32,
    pub size: u32,
}

/// A frame that passed every generic and FPSIMD rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sigreturn<'a> {
    /// x0..x30, sp, pc and the sanitised PSTATE.
    pub regs: UserRegs,
    pub fault_address: u64,
    pub fpsimd: FpsimdState,
    /// The raw records (head included) of the features restored elsewhere.
    pub sve: Option<&'a [u8]>,
    pub tpidr2: Option<&'a [u8]>,
    pub za: Option<&'a [u8]>,
    pub zt: Option<&'a [u8]>,
    pub fpmr: Option<&'a [u8]>,
    pub poe: Option<&'a [u8]>,
    pub gcs: Option<&'a [u8]>,
    /// Where the extra space was, if any: (user address, size).
    pub extra: Option<(u64, usize)>,
}

/// The outcome of rt_sigreturn. `sigmask` is reported once it could be read, whatever happens
/// to the rest, because Linux installs the mask (SIGKILL and SIGSTOP already removed) before it
/// checks the frame. `regs` are the registers the task goes on with even when the frame is bad
/// (then with x0 = 0, rt_sigreturn's return value, and SIGSEGV at their SP): Linux loads them
/// from the frame before checking anything but the SP's alignment, a field it cannot read as
/// zero, and `valid_user_regs` forces a refused PSTATE to a plain EL0t one
/// (`forced_user_pstate`); None when the SP is misaligned (nothing was read). `uc_stack` is to
/// be restored only after a good frame, records included (errors ignored:
/// `AltStack::set(uc_stack, restored sp, MINSIGSTKSZ)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SigreturnResult<'a> {
    pub sigmask: Option<Sigset>,
    pub regs: Option<UserRegs>,
    pub uc_stack: Option<StackT>,
    pub frame: Result<Sigreturn<'a>, BadFrame>,
}

/// A 16-byte aligned record value that is one u64 (tpidr2, fpmr, poe): head.size must be 16.
pub fn u64_record_value(rec: &[u8]) -> Option<u64> {
    (rec.len() == 16).then(|| get_u64(rec, 8))
}

// ---- rt_sigreturn: the SVE and SME records against the task ----

/// The first 16 bytes of `sve_context`, `za_context` and `zt_context`: the record head, then
/// the vector length (`nregs` for zt_context), the flags (reserved for za and zt) and reserved
/// space. What follows is the register payload.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct VecContextHead {
    pub magic: u32,
    pub size: u32,
    pub vl: u16,
    pub flags: u16,
    pub __reserved: [u16; 2],
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<VecContextHead>() == SVE_CONTEXT_HEAD_SIZE as usize);
    assert!(size_of::<VecContextHead>() == ZA_CONTEXT_HEAD_SIZE as usize);
    assert!(size_of::<VecContextHead>() == ZT_CONTEXT_HEAD_SIZE as usize);
    assert!(offset_of!(VecContextHead, vl) == 8);
    assert!(offset_of!(VecContextHead, flags) == 10);
};

/// How the FP registers come back: the fpsimd/sve step of Linux's `restore_sigframe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FpRestore<'a> {
    /// fpsimd_context alone (no sve_context, or a header-only non-streaming one): FPSIMD
    /// state, SVE state dropped, streaming mode left.
    Fpsimd,
    /// An sve_context payload: whether it is streaming state, and Z0-Z31, P0-P15 and FFR
    /// (`sve_sig_regs_size(vq)` bytes); V0-V31, FPSR and FPCR then come from fpsimd_context.
    Sve { streaming: bool, regs: &'a [u8] },
}

/// The state the checked records restore, on top of fpsimd_context (which `Sigreturn` holds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FpRecords<'a> {
    /// The FP registers: None when that step refused the frame (they stay as they were).
    pub fp: Option<FpRestore<'a>>,
    /// tpidr2_context: the TPIDR2_EL0 value.
    pub tpidr2: Option<u64>,
    /// za_context: None when absent (PSTATE.ZA and ZA left as they are), Some(None) for a
    /// header alone (ZA off), else ZA's vl·vl bytes (ZA on, ZT0 zero unless zt_context
    /// follows).
    pub za: Option<Option<&'a [u8]>>,
    /// zt_context: ZT0's 64 bytes.
    pub zt0: Option<&'a [u8]>,
    /// fpmr_context: the FPMR value.
    pub fpmr: Option<u64>,
    /// gcs_context: the GCS mode and GCSPR_EL0 to install.
    pub gcs: Option<crate::isa::gcs::Restore>,
}

/// The task rt_sigreturn restores, as it stands once its live state is saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigreturnTask {
    /// Vector lengths in bytes.
    pub sve_vl: u32,
    pub sme_vl: u32,
    /// PSTATE.ZA (the handler may have turned ZA on).
    pub za_on: bool,
    /// The thread's GCS state, GCSPR_EL0 as it is now (gcs_context is checked against it).
    pub gcs: crate::isa::gcs::GcsState,
}

/// A frame refused part-way through its records: Linux restores record by record, so what
/// came before the bad one (`done`) stays restored when the SIGSEGV comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialRestore<'a> {
    pub done: FpRecords<'a>,
    pub error: BadFrame,
}

/// The per-record restores of Linux's `restore_sigframe` for the records `parse_sigreturn` left
/// raw, in its order: fpsimd or sve, gcs, tpidr2, fpmr, za, zt. Each record is checked before it is
/// applied; the first bad one ends the walk (SIGSEGV), the earlier ones applied.
// Both outcomes carry the records restored so far; boxing the error would allocate on every
// refused sigreturn for nothing.
#[allow(clippy::result_large_err)]
pub fn check_records<'a>(
    s: &Sigreturn<'a>,
    f: &SigFeatures,
    task: &SigreturnTask,
) -> Result<FpRecords<'a>, PartialRestore<'a>> {
    let mut done = FpRecords::default();
    let fail = |done: FpRecords<'a>, error| Err(PartialRestore { done, error });
    let fp = match s.sve {
        Some(rec) => sve_record(rec, f, task.sve_vl, task.sme_vl),
        None => Ok(None),
    };
    done.fp = match fp {
        Ok(None) => Some(FpRestore::Fpsimd),
        Ok(Some((streaming, regs))) => Some(FpRestore::Sve { streaming, regs }),
        Err(e) => return fail(done, e),
    };
    if let Some(rec) = s.gcs {
        match crate::isa::gcs::restore_record(rec, &task.gcs) {
            Ok(r) => done.gcs = Some(r),
            Err(e) => return fail(done, e),
        }
    }
    if let Some(rec) = s.tpidr2 {
        match u64_record_value(rec) {
            Some(v) => done.tpidr2 = Some(v),
            None => return fail(done, BadFrame::BadTpidr2Size),
        }
    }
    if let Some(rec) = s.fpmr {
        match u64_record_value(rec) {
            Some(v) => done.fpmr = Some(v),
            None => return fail(done, BadFrame::BadFpmrSize),
        }
    }
    if let Some(rec) = s.za {
        match za_record(rec, task.sme_vl) {
            Ok(za) => done.za = Some(za),
            Err(e) => return fail(done, e),
        }
    }
    if let Some(rec) = s.zt {
        // PSTATE.ZA as the za step left it: without za_context, as the task had it.
        let za_on = match done.za {
            None => task.za_on,
            Some(za) => za.is_some(),
        };
        match zt_record(rec, za_on) {
            Ok(zt) => done.zt0 = Some(zt),
            Err(e) => return fail(done, e),
        }
    }
    Ok(done)
}

/// `restore_sve_fpsimd_context` on an sve_context (head included): `Ok(None)` for a
/// non-streaming header without payload (restore from fpsimd_context), else the payload and
/// whether it is streaming state.
pub fn sve_record<'a>(
    rec: &'a [u8],
    f: &SigFeatures,
    sve_vl: u32,
    sme_vl: u32,
) -> Result<Option<(bool, &'a [u8])>, BadFrame> {
    let (head, _) = VecContextHead::read_from_prefix(rec).map_err(|_| BadFrame::SveTooSmall)?;
    let streaming = head.flags & SVE_SIG_FLAG_SM != 0;
    if streaming && !f.sme {
        return Err(BadFrame::SveStreamingWithoutSme);
    }
    let vl = if streaming { sme_vl } else { sve_vl };
    // Without SVE, non-streaming state only ever comes as a header (FPSIMD state).
    if !streaming && !f.sve && rec.len() != SVE_CONTEXT_HEAD_SIZE as usize {
        return Err(BadFrame::SveWithoutSve);
    }
    if u32::from(head.vl) != vl {
        return Err(BadFrame::SveVlMismatch);
    }
    if rec.len() == SVE_CONTEXT_HEAD_SIZE as usize {
        // Streaming state always comes with its registers (Linux 6.16 on).
        return if streaming {
            Err(BadFrame::SveStreamingWithoutPayload)
        } else {
            Ok(None)
        };
    }
    let vq = vl / 16;
    if rec.len() < sve_sig_context_size(vq) as usize {
        return Err(BadFrame::SvePayloadTooSmall);
    }
    let regs = rec
        .get(16..16 + sve_sig_regs_size(vq) as usize)
        .ok_or(BadFrame::SvePayloadTooSmall)?;
    Ok(Some((streaming, regs)))
}

/// `restore_za_context` on a za_context (head included): None for a header alone (ZA off),
/// else ZA's vl·vl bytes.
pub fn za_record(rec: &[u8], sme_vl: u32) -> Result<Option<&[u8]>, BadFrame> {
    let (head, _) = VecContextHead::read_from_prefix(rec).map_err(|_| BadFrame::ZaTooSmall)?;
    let vl = u32::from(head.vl);
    if vl != sme_vl {
        return Err(BadFrame::ZaVlMismatch);
    }
    if rec.len() == ZA_CONTEXT_HEAD_SIZE as usize {
        return Ok(None);
    }
    if rec.len() < za_sig_context_size(vl / 16) as usize {
        return Err(BadFrame::ZaPayloadTooSmall);
    }
    let za = rec
        .get(16..16 + (vl * vl) as usize)
        .ok_or(BadFrame::ZaPayloadTooSmall)?;
    Ok(Some(za))
}

/// `restore_zt_context` on a zt_context (head included): ZT0 needs PSTATE.ZA on after the za
/// step (`za_on`), a record of exactly one register, and nregs = 1. Returns ZT0's bytes.
pub fn zt_record(rec: &[u8], za_on: bool) -> Result<&[u8], BadFrame> {
    if !za_on {
        return Err(BadFrame::ZtWithoutZa);
    }
    if rec.len() != zt_sig_context_size(1) as usize {
        return Err(BadFrame::BadZtSize);
    }
    let (head, zt0) = VecContextHead::read_from_prefix(rec).map_err(|_| BadFrame::BadZtSize)?;
    if head.vl != 1 {
        return Err(BadFrame::BadZtNregs);
    }
    Ok(zt0)
}

/// The signal a bad frame gets (`arm64_notify_segfault(sp)`, with `sp` the SP of the registers
/// the task goes on with: see `SigreturnResult::regs`): SIGSEGV at it, SEGV_ACCERR when some
/// mapping ends above the (untagged) address — Linux asks `find_vma`, which returns the first
/// mapping ending above it, not only one that contains it — else SEGV_MAPERR.
pub fn bad_frame_siginfo(sp: u64, mapping_above: bool) -> Siginfo {
    let code = if mapping_above {
        SEGV_ACCERR
    } else {
        SEGV_MAPERR
    };
    Siginfo::fault(SIGSEGV, code, sp)
}

/// AT_MINSIGSTKSZ for a system whose largest SVE and SME vector lengths are `sve_max_vl` and
/// `sme_max_vl` (0: absent) and whose frames carry the records `f` allows: Linux's
/// `minsigstksz_setup`, the layout of every record this system can deliver, in Linux's order
/// (esr, gcs, sve_context at the larger of the two lengths, tpidr2, za_context as a header —
/// the boot task's ZA is off —, zt_context, fpmr, poe), plus the frame record and 16 bytes of
/// alignment slack. Frames with ZA on can be larger.
pub fn at_minsigstksz(sve_max_vl: u32, sme_max_vl: u32, f: &SigFeatures) -> usize {
    let mut sizes = [0u32; 10];
    let mut n = 0;
    let mut push = |on: bool, s: u32| {
        if on {
            sizes[n] = s;
            n += 1;
        }
    };
    let sme = f.sme && sme_max_vl > 0;
    push(true, FPSIMD_CONTEXT_SIZE);
    push(true, ESR_CONTEXT_SIZE);
    push(f.gcs, GCS_CONTEXT_SIZE);
    let vq = sve_max_vl.max(sme_max_vl) / 16;
    push(sve_max_vl > 0 || sme_max_vl > 0, sve_sig_context_size(vq));
    push(sme, TPIDR2_CONTEXT_SIZE);
    push(sme, ZA_CONTEXT_HEAD_SIZE);
    push(sme && f.sme2, zt_sig_context_size(1));
    push(f.fpmr, FPMR_CONTEXT_SIZE);
    push(f.poe, POE_CONTEXT_SIZE);
    minsigstksz(&sizes[..n]).unwrap_or(SIGFRAME_MAXSZ)
}

/// Reads the extra space an extra_context describes: (user address, size) -> its bytes. The
/// caller finds the memory (allocation failure: `ExtraBufferTooSmall`) and copies the bytes in
/// (a range outside user space: `Fault`). It may return only the part before the first fault:
/// Linux reads the extra space record by record, so a size that runs past mapped memory is bad
/// only when a record the walk reaches lies there. Called at most once per frame.
pub type ReadExtra<'a, 'r> = dyn FnMut(u64, usize) -> Result<&'a [u8], BadFrame> + 'r;

/// A `ReadExtra` over a caller's buffer: the extra space must fit in `buf`.
pub fn extra_in<'a, 'r, 'u: 'r>(
    buf: &'a mut [u8],
    read_user: &'r mut ReadUser<'u>,
) -> impl FnMut(u64, usize) -> Result<&'a [u8], BadFrame> + use<'a, 'r, 'u>
where
    'a: 'r,
{
    let mut buf = Some(buf);
    move |addr, len| {
        let b = buf.take().ok_or(BadFrame::ExtraDuplicate)?;
        if len > b.len() {
            return Err(BadFrame::ExtraBufferTooSmall { needed: len });
        }
        let b = &mut b[..len];
        read_user(addr, b).map_err(|_| BadFrame::Fault)?;
        Ok(b)
    }
}

/// Bytes read with the header on every sigreturn: the header and the start of `__reserved`,
/// enough for fpsimd, esr, the small SVE/SME records and the terminator of a frame without
/// payloads. Further record bytes are read as the walk reaches them.
const FIRST_READ: usize = RESERVED_OFFSET + 640;

/// User memory is readable or not a page at a time, and arm64 pages are at least 4 KiB.
const FAULT_GRANULE: usize = 4096;

/// rt_sigreturn's frame checks. `sp` is the user SP at the syscall, and the caller has
/// checked that the frame's 4688 bytes there lie in user space (Linux's access_ok: when they do
/// not, the frame is bad and nothing is read, the registers included); `read_user(addr, buf)`
/// copies user memory; `frame` receives the bytes of the 4688-byte frame that are looked at
/// (the header, then `__reserved` up to the last record found there; the rest of it is not
/// read) and `read_extra` supplies the extra space.
pub fn parse_sigreturn<'a>(
    sp: u64,
    read_user: &mut ReadUser<'_>,
    features: &SigFeatures,
    frame: &'a mut [u8; RT_SIGFRAME_SIZE],
    read_extra: &mut ReadExtra<'a, '_>,
) -> SigreturnResult<'a> {
    let mut out = SigreturnResult {
        sigmask: None,
        regs: None,
        uc_stack: None,
        frame: Err(BadFrame::SpMisaligned),
    };
    if sp & 15 != 0 {
        return out;
    }
    // The kernel refuses a frame outside user space before it gets here; a frame that would wrap
    // around the address space cannot be read either way.
    if sp.checked_add(RT_SIGFRAME_SIZE as u64).is_none() {
        out.frame = Err(BadFrame::Fault);
        return out;
    }
    // Linux reads the header field by field, a field it cannot read as zero. Fields never
    // cross a 4 KiB boundary and user memory faults a page at a time, so reading each 4 KiB
    // piece once, zero where it faults, sees the same values.
    let mut have = FIRST_READ;
    let (mut faulted, mut mask_ok) = (false, true);
    let mut at = 0;
    while at < have {
        let end = ((sp + at as u64) | (FAULT_GRANULE as u64 - 1)) + 1 - sp;
        let end = (end as usize).min(have);
        if read_user(sp + at as u64, &mut frame[at..end]).is_err() {
            frame[at..end].fill(0);
            faulted = true;
            mask_ok &= !(at..end).contains(&UC_SIGMASK_OFFSET);
        }
        at = end;
    }
    out.sigmask = mask_ok.then(|| Sigset(get_u64(frame, UC_SIGMASK_OFFSET)).blockable());
    let mut regs = UserRegs::default();
    regs.regs
        .as_mut_bytes()
        .copy_from_slice(&frame[REGS_OFFSET..SP_OFFSET]);
    regs.sp = get_u64(frame, SP_OFFSET);
    regs.pc = get_u64(frame, PC_OFFSET);
    let pstate = get_u64(frame, PSTATE_OFFSET);
    regs.pstate = forced_user_pstate(pstate);
    out.regs = Some(regs);
    if faulted {
        out.frame = Err(BadFrame::Fault);
        return out;
    }
    if valid_user_pstate(pstate).is_none() {
        out.frame = Err(BadFrame::BadPstate);
        return out;
    }

    let mut reserved = Reserved {
        sp,
        frame,
        have: &mut have,
        read_user,
    };
    let mut locs = Locs::default();
    let extra = match scan_records(sp, &mut reserved, features, read_extra, &mut locs) {
        Ok(e) => e,
        Err(e) => {
            out.frame = Err(e);
            return out;
        }
    };
    let frame: &'a [u8] = frame;
    // The two areas a record may lie in, found once: the lookups below are a branch and a
    // slice each (most records are absent).
    let in_frame: &'a [u8] = &frame[RESERVED_OFFSET..];
    let in_extra: &'a [u8] = extra.map_or(&[], |(_, bytes)| bytes);
    let get = |i: usize| locs.bytes(i, in_frame, in_extra);

    let fpsimd = match get(LOC_FPSIMD) {
        None if features.fpsimd => {
            out.frame = Err(BadFrame::MissingFpsimd);
            return out;
        }
        None => FpsimdState::default(),
        Some(r) if r.len() != FPSIMD_CONTEXT_SIZE as usize => {
            out.frame = Err(BadFrame::BadFpsimdSize);
            return out;
        }
        Some(r) => {
            let mut f = FpsimdState {
                fpsr: get_u32(r, 8),
                fpcr: get_u32(r, 12),
                ..FpsimdState::default()
            };
            f.vregs.as_mut_bytes().copy_from_slice(&r[16..]);
            f
        }
    };
    out.uc_stack = StackT::read_from_prefix(&frame[UC_STACK_OFFSET..])
        .ok()
        .map(|(ss, _)| ss);
    out.frame = Ok(Sigreturn {
        regs,
        fault_address: get_u64(frame, FAULT_ADDRESS_OFFSET),
        fpsimd,
        sve: get(LOC_SVE),
        tpidr2: get(LOC_TPIDR2),
        za: get(LOC_ZA),
        zt: get(LOC_ZT),
        fpmr: get(LOC_FPMR),
        poe: get(LOC_POE),
        gcs: get(LOC_GCS),
        extra: extra.map(|(addr, bytes)| (addr, bytes.len())),
    });
    out
}

/// `__reserved`, read from user memory as far as the record walk needs it.
struct Reserved<'f, 'u, 'r> {
    sp: u64,
    frame: &'f mut [u8; RT_SIGFRAME_SIZE],
    /// frame[..have] holds the user's bytes.
    have: &'f mut usize,
    read_user: &'u mut ReadUser<'r>,
}

impl Reserved<'_, '_, '_> {
    /// Make sure `__reserved[..end]` has been read (`end` ≤ RESERVED_SIZE).
    fn need(&mut self, end: usize) -> Result<(), BadFrame> {
        let end = RESERVED_OFFSET + end;
        let have = *self.have;
        if end > have {
            (self.read_user)(self.sp + have as u64, &mut self.frame[have..end])
                .map_err(|_| BadFrame::Fault)?;
            *self.have = end;
        }
        Ok(())
    }
    fn area(&self) -> &[u8] {
        &self.frame[RESERVED_OFFSET..]
    }
}

/// The extra space, once read: its user address and bytes.
type ExtraSpace<'a> = Option<(u64, &'a [u8])>;

/// Where the walk found each record: (offset, size) in its area, size 0 when absent (a record
/// that is kept is at least 8 bytes: a smaller one ends the walk). The offset's top bit says
/// the extra space. Eight words to clear, one compare to ask.
#[derive(Default)]
struct Locs([(u32, u32); 8]);

const LOC_FPSIMD: usize = 0;
const LOC_SVE: usize = 1;
const LOC_TPIDR2: usize = 2;
const LOC_ZA: usize = 3;
const LOC_ZT: usize = 4;
const LOC_FPMR: usize = 5;
const LOC_POE: usize = 6;
const LOC_GCS: usize = 7;
const LOC_IN_EXTRA: u32 = 1 << 31;

impl Locs {
    /// Record `i`'s bytes (head included) in `__reserved` or the extra space.
    #[inline(always)]
    fn bytes<'a>(&self, i: usize, in_frame: &'a [u8], in_extra: &'a [u8]) -> Option<&'a [u8]> {
        let (off, size) = self.0[i];
        if size == 0 {
            return None;
        }
        let area = if off & LOC_IN_EXTRA != 0 {
            in_extra
        } else {
            in_frame
        };
        let off = (off & !LOC_IN_EXTRA) as usize;
        area.get(off..off + size as usize)
    }
}

/// What a record's magic means on this system: a slot of `Locs`, or one of the records the
/// walk handles itself.
enum Kind {
    Slot(usize),
    Esr,
    End,
    Extra,
}

/// The magic's kind, or why a frame may not hold it here.
#[inline(always)]
fn kind_of(magic: u32, f: &SigFeatures) -> Result<Kind, BadFrame> {
    let (slot, on) = match magic {
        0 => return Ok(Kind::End),
        ESR_MAGIC => return Ok(Kind::Esr),
        EXTRA_MAGIC => return Ok(Kind::Extra),
        FPSIMD_MAGIC => (LOC_FPSIMD, f.fpsimd),
        SVE_MAGIC => (LOC_SVE, f.sve || f.sme),
        TPIDR2_MAGIC => (LOC_TPIDR2, f.tpidr2()),
        ZA_MAGIC => (LOC_ZA, f.sme),
        ZT_MAGIC => (LOC_ZT, f.sme2),
        FPMR_MAGIC => (LOC_FPMR, f.fpmr),
        POE_MAGIC => (LOC_POE, f.poe),
        GCS_MAGIC => (LOC_GCS, f.gcs),
        _ => return Err(BadFrame::UnknownMagic(magic)),
    };
    if on {
        Ok(Kind::Slot(slot))
    } else {
        Err(BadFrame::FeatureAbsent(magic))
    }
}

/// The 8-byte head at `offset` of `area`: (magic, size). The caller made sure it is there.
#[inline(always)]
fn head_at(area: &[u8], offset: usize) -> Result<(u32, usize), BadFrame> {
    let h: &[u8; 8] = area
        .get(offset..offset + 8)
        .and_then(|h| h.try_into().ok())
        .ok_or(BadFrame::Fault)?;
    let magic = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let size = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    Ok((magic, size as usize))
}

/// `parse_user_sigframe`: walk __reserved, then the extra space if an extra_context says so,
/// each record checked as it is met (the generic rules here, its own in `check_records`).
/// Fills in where each record is (`locs`, which starts empty) and returns the extra space
/// (user address, bytes) if there is one.
fn scan_records<'a>(
    sp: u64,
    reserved: &mut Reserved<'_, '_, '_>,
    f: &SigFeatures,
    read_extra: &mut ReadExtra<'a, '_>,
    locs: &mut Locs,
) -> Result<ExtraSpace<'a>, BadFrame> {
    // __reserved, read as far as the walk goes.
    let mut offset = 0usize;
    let (datap, esize) = loop {
        if RESERVED_SIZE - offset < 8 {
            return Err(BadFrame::NoRoomForHead);
        }
        if !offset.is_multiple_of(16) {
            return Err(BadFrame::RecordMisaligned);
        }
        reserved.need(offset + 8)?;
        let (magic, size) = head_at(reserved.area(), offset)?;
        if RESERVED_SIZE - offset < size {
            return Err(BadFrame::RecordOverrun);
        }
        match kind_of(magic, f)? {
            Kind::End if size != 0 => return Err(BadFrame::BadTerminator),
            Kind::End => return Ok(None),
            Kind::Esr => {}
            Kind::Slot(i) => {
                keep(locs, i, magic, offset as u32, size)?;
                // The record, and the next head with it when there is room for one.
                reserved.need((offset + size + 8).min(RESERVED_SIZE))?;
            }
            Kind::Extra => {
                if size < EXTRA_CONTEXT_SIZE as usize {
                    return Err(BadFrame::ExtraTooSmall);
                }
                if RESERVED_SIZE - offset - size < TERMINATOR_SIZE {
                    return Err(BadFrame::ExtraNoTerminator);
                }
                let term = offset + size;
                reserved.need(term + 8)?;
                let area = reserved.area();
                let datap = get_u64(area, offset + 8);
                let esize = get_u32(area, offset + 16) as usize;
                if get_u64(area, term) != 0 {
                    return Err(BadFrame::ExtraNoTerminator);
                }
                if !datap.is_multiple_of(16) || !esize.is_multiple_of(16) {
                    return Err(BadFrame::ExtraMisaligned);
                }
                // Absolute user address just after the terminator.
                let after = RESERVED_OFFSET + term + TERMINATOR_SIZE;
                if datap != sp.wrapping_add(after as u64) {
                    return Err(BadFrame::ExtraBadDatap);
                }
                if esize > SIGFRAME_MAXSZ - after {
                    return Err(BadFrame::ExtraTooLarge);
                }
                break (datap, esize);
            }
        }
        if size < 8 {
            return Err(BadFrame::RecordTooSmall(magic));
        }
        offset += size;
    };
    // The extra space: read once, walked in place.
    let bytes = read_extra(datap, esize)?;
    if bytes.len() > esize {
        return Err(BadFrame::ExtraBufferTooSmall { needed: esize });
    }
    let mut offset = 0usize;
    loop {
        if esize - offset < 8 {
            return Err(BadFrame::NoRoomForHead);
        }
        if !offset.is_multiple_of(16) {
            return Err(BadFrame::RecordMisaligned);
        }
        // A head past the readable part of the extra space is a fault.
        let (magic, size) = head_at(bytes, offset)?;
        if esize - offset < size {
            return Err(BadFrame::RecordOverrun);
        }
        match kind_of(magic, f)? {
            Kind::End if size != 0 => return Err(BadFrame::BadTerminator),
            Kind::End => return Ok(Some((datap, bytes))),
            Kind::Esr => {}
            Kind::Extra => return Err(BadFrame::ExtraDuplicate),
            Kind::Slot(i) => {
                keep(locs, i, magic, (offset as u32) | LOC_IN_EXTRA, size)?;
                if bytes.len() < offset + size {
                    return Err(BadFrame::Fault);
                }
            }
        }
        if size < 8 {
            return Err(BadFrame::RecordTooSmall(magic));
        }
        offset += size;
    }
}

/// Notes record `i` found at `off` (a second one is a duplicate).
#[inline(always)]
fn keep(locs: &mut Locs, i: usize, magic: u32, off: u32, size: usize) -> Result<(), BadFrame> {
    let slot = &mut locs.0[i];
    if slot.1 != 0 {
        return Err(BadFrame::Duplicate(magic));
    }
    *slot = (off, size as u32);
    Ok(())
}

mod deliver;
pub use deliver::{Delivery, Records, VecRecord, WriteAt};
mod inplace;
pub use inplace::{parse_in_place, FpsimdBytes, InPlace, REGS_PC_SIZE};

#[cfg(test)]
mod tests;
