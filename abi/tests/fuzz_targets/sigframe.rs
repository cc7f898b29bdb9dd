//! rt_sigreturn over a user-supplied frame, and signal delivery followed by rt_sigreturn.

use super::util::FromSlice;

/// Sigreturn restores the frame's mask without SIGKILL (bit 8) and SIGSTOP (bit 18).
const UNBLOCKABLE_CLEARED: u64 = !((1 << 8) | (1 << 18));
use super::util::{offset_in, span, Rng, Take};
use std::cell::RefCell;
use std::vec;
use std::vec::Vec;
use svelt_abi::fp::sigframe::*;
use svelt_abi::uapi::signal::{
    Sigaction, Siginfo, Sigset, StackT, SA_RESTORER, SA_SIGINFO, SIGSEGV,
};
use svelt_abi::util::bytes::{get_u32, get_u64, put_u16, put_u32};

/// Where the fuzzed frame sits (16-aligned, far from zero and from the top).
const SP: u64 = 0x0000_7fff_ffe0_0000;

/// User memory: `bytes` at `base`, then zeros up to `end`; anything else faults. Every read is
/// logged so the target can check what the parser looked at.
struct Mem<'a> {
    base: u64,
    bytes: &'a [u8],
    end: u64,
    log: RefCell<Vec<(u64, usize)>>,
}

impl<'a> Mem<'a> {
    fn new(base: u64, bytes: &'a [u8], end: u64) -> Self {
        Mem {
            base,
            bytes,
            end,
            log: RefCell::new(Vec::new()),
        }
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Efault> {
        self.log.borrow_mut().push((addr, buf.len()));
        let len = buf.len() as u64;
        if addr < self.base || addr.checked_add(len).is_none_or(|e| e > self.end) {
            return Err(Efault);
        }
        let off = (addr - self.base) as usize;
        let n = self.bytes.len().saturating_sub(off).min(buf.len());
        if n > 0 {
            buf[..n].copy_from_slice(&self.bytes[off..off + n]);
        }
        buf[n..].fill(0);
        Ok(())
    }

    /// The bytes user memory holds at [addr, addr + len) (zeros past `bytes`).
    fn expect(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        let off = (addr - self.base) as usize;
        let n = self.bytes.len().saturating_sub(off).min(len);
        if n > 0 {
            v[..n].copy_from_slice(&self.bytes[off..off + n]);
        }
        v
    }
}

fn features(b: u8) -> SigFeatures {
    SigFeatures {
        fpsimd: b & 1 != 0,
        sve: b & 2 != 0,
        sme: b & 4 != 0,
        sme2: b & 8 != 0,
        fpmr: b & 16 != 0,
        poe: b & 32 != 0,
        gcs: b & 64 != 0,
    }
}

/// One rt_sigreturn with buffers prefilled with `fill`.
fn parse<'a>(
    mem: &Mem,
    sp: u64,
    f: &SigFeatures,
    frame: &'a mut [u8; RT_SIGFRAME_SIZE],
    extra: &'a mut [u8],
) -> SigreturnResult<'a> {
    let mut read2 = |a: u64, b: &mut [u8]| mem.read(a, b);
    let mut read_extra = extra_in(extra, &mut read2);
    parse_sigreturn(sp, &mut |a, b| mem.read(a, b), f, frame, &mut read_extra)
}

/// The records of an accepted frame, with the magic each must carry and the feature it needs.
fn records<'a>(s: &Sigreturn<'a>, f: &SigFeatures) -> [(Option<&'a [u8]>, u32, bool); 7] {
    [
        (s.sve, SVE_MAGIC, f.sve || f.sme),
        (s.tpidr2, TPIDR2_MAGIC, f.tpidr2()),
        (s.za, ZA_MAGIC, f.sme),
        (s.zt, ZT_MAGIC, f.sme2),
        (s.fpmr, FPMR_MAGIC, f.fpmr),
        (s.poe, POE_MAGIC, f.poe),
        (s.gcs, GCS_MAGIC, f.gcs),
    ]
}

/// rt_sigreturn on arbitrary user memory.
///
/// Input: feature bits, a shape byte (bit 7: misaligned SP; bit 0: memory continues as zeros
/// after the input instead of faulting), the extra-buffer size, then the memory at SP.
///
/// Asserts: every user read stays inside the frame or the extra space and no byte is read
/// twice (no double fetch); the result does not depend on what the kernel buffers held
/// before; an accepted frame's registers, mask, stack and records are exactly the user's
/// bytes, each record is 16-aligned, at least 8 bytes, has its magic and head.size, and its
/// feature; and a frame rebuilt by the delivery code from the parsed state parses back to
/// the same state.
pub fn sigreturn(data: &[u8]) {
    let mut t = Take::new(data);
    let f = features(t.u8());
    let shape = t.u8();
    let cap_sel = t.u8();
    let image = t.rest();
    let sp = SP
        + if shape & 0x80 != 0 {
            u64::from(shape & 15)
        } else {
            0
        };
    let end = if shape & 1 != 0 {
        SP + SIGFRAME_MAXSZ as u64
    } else {
        SP + image.len() as u64
    };
    let cap = if cap_sel & 0x80 == 0 {
        SIGFRAME_MAXSZ
    } else {
        usize::from(cap_sel & 0x7f) * 256
    };
    let mem = Mem::new(SP, image, end);

    let mut frame_a = [0u8; RT_SIGFRAME_SIZE];
    let mut extra_a = vec![0u8; cap];
    let (frame_span, extra_span) = (span(&frame_a), span(&extra_a));
    let a = parse(&mem, sp, &f, &mut frame_a, &mut extra_a);
    let reads = mem.log.take();

    // Reads: inside [sp, sp + SIGFRAME_MAXSZ), the frame ones inside the 4688 bytes, no byte
    // twice.
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for &(addr, len) in &reads {
        assert!(addr >= sp, "read below SP: {addr:#x}");
        let e = addr + len as u64;
        assert!(
            e <= sp + SIGFRAME_MAXSZ as u64,
            "read past the largest frame"
        );
        spans.push((addr, e));
    }
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "user bytes read twice: {:x?}", w);
    }

    // Same input, dirty buffers: same answer.
    let mut frame_b = [0xa5u8; RT_SIGFRAME_SIZE];
    let mut extra_b = vec![0x5au8; cap];
    let b = parse(&mem, sp, &f, &mut frame_b, &mut extra_b);
    assert_eq!(a, b, "result depends on stale buffer contents");
    in_place_agrees(&mem, sp, &f, cap, &a);

    if sp & 15 != 0 {
        assert_eq!(a.frame, Err(BadFrame::SpMisaligned));
        assert!(reads.is_empty());
        return;
    }
    let Ok(s) = a.frame else {
        if a.sigmask.is_some() {
            assert_eq!(
                a.sigmask,
                Some(Sigset(
                    get_u64(&image_at(&mem, sp), UC_SIGMASK_OFFSET) & UNBLOCKABLE_CLEARED
                ))
            );
        }
        return;
    };
    let hdr = mem.expect(sp, RESERVED_OFFSET);
    assert_eq!(
        a.sigmask,
        Some(Sigset(
            get_u64(&hdr, UC_SIGMASK_OFFSET) & UNBLOCKABLE_CLEARED
        ))
    );
    let ss = StackT::from_bytes(
        hdr[UC_STACK_OFFSET..UC_STACK_OFFSET + 24]
            .try_into()
            .unwrap(),
    );
    assert_eq!(a.uc_stack, Some(ss));
    for i in 0..31 {
        assert_eq!(s.regs.regs[i], get_u64(&hdr, REGS_OFFSET + 8 * i));
    }
    assert_eq!(s.regs.sp, get_u64(&hdr, SP_OFFSET));
    assert_eq!(s.regs.pc, get_u64(&hdr, PC_OFFSET));
    assert_eq!(
        Some(s.regs.pstate),
        valid_user_pstate(get_u64(&hdr, PSTATE_OFFSET))
    );
    assert_eq!(valid_user_pstate(s.regs.pstate), Some(s.regs.pstate));
    assert_eq!(s.fault_address, get_u64(&hdr, FAULT_ADDRESS_OFFSET));

    if let Some((addr, len)) = s.extra {
        assert!(addr.is_multiple_of(16) && len.is_multiple_of(16));
        assert!(addr >= sp + RESERVED_OFFSET as u64);
        assert!(addr + len as u64 <= sp + SIGFRAME_MAXSZ as u64);
        assert!(len <= cap);
    }
    // Where a record's bytes came from: the frame buffer or the extra buffer.
    let addr_of = |r: &[u8]| -> u64 {
        if let Some(o) = offset_in(frame_span, r) {
            assert!(o >= RESERVED_OFFSET && (o - RESERVED_OFFSET).is_multiple_of(16));
            sp + o as u64
        } else {
            let o = offset_in(extra_span, r).expect("record outside both buffers");
            assert!(o.is_multiple_of(16));
            s.extra
                .expect("record in the extra buffer without extra space")
                .0
                + o as u64
        }
    };
    let mut fp = None;
    if f.fpsimd {
        // The FPSIMD state must be the user's record.
        let rec = find_record(&mem, sp, &s, FPSIMD_MAGIC).expect("accepted without fpsimd");
        assert_eq!(get_u32(&rec, 4), FPSIMD_CONTEXT_SIZE);
        assert_eq!(s.fpsimd.fpsr, get_u32(&rec, 8));
        assert_eq!(s.fpsimd.fpcr, get_u32(&rec, 12));
        for n in 0..32 {
            let v = u128::from_le_bytes(rec[16 + 16 * n..32 + 16 * n].try_into().unwrap());
            assert_eq!(s.fpsimd.vregs[n], v);
        }
        fp = Some(&s.fpsimd);
    } else {
        assert_eq!(s.fpsimd, FpsimdState::default());
    }
    for (rec, magic, feature) in records(&s, &f) {
        let Some(rec) = rec else { continue };
        assert!(feature, "record {magic:#x} accepted without its feature");
        assert!(rec.len() >= 8 && rec.len().is_multiple_of(16));
        assert_eq!(get_u32(rec, 0), magic);
        assert_eq!(get_u32(rec, 4) as usize, rec.len());
        assert_eq!(rec, &mem.expect(addr_of(rec), rec.len())[..]);
    }
    rebuild(&s, a.sigmask.unwrap(), ss, &f, fp);
}

/// rt_sigreturn's quick path on the same memory, for a few tasks' vector lengths: a frame it
/// takes is one the general path (`a`) and `check_records` take, with the same registers,
/// mask, stack, FP registers and records.
fn in_place_agrees(mem: &Mem, sp: u64, f: &SigFeatures, cap: usize, a: &SigreturnResult) {
    for (sve_vl, sme_vl) in [(16, 16), (32, 64), (256, 256)] {
        let task = SigreturnTask {
            sve_vl,
            sme_vl,
            ..SigreturnTask::default()
        };
        let mut frame = [0x3cu8; RT_SIGFRAME_SIZE];
        let mut extra = vec![0xc3u8; cap];
        let mut read2 = |a: u64, b: &mut [u8]| mem.read(a, b);
        let mut read_extra = extra_in(&mut extra, &mut read2);
        let q = parse_in_place(
            sp,
            &mut |a, b| mem.read(a, b),
            f,
            &task,
            &mut frame,
            &mut read_extra,
        );
        mem.log.take();
        let Some(q) = q else { continue };
        let s = a
            .frame
            .expect("the quick path took a frame the general one refused");
        assert_eq!(a.sigmask, Some(q.sigmask));
        assert_eq!(a.regs, Some(q.user_regs()));
        assert_eq!(s.regs, q.user_regs());
        assert_eq!(a.uc_stack, Some(q.uc_stack));
        assert_eq!(s.fpsimd, q.fpsimd.to_state());
        for za_on in [false, true] {
            let t = SigreturnTask { za_on, ..task };
            assert_eq!(check_records(&s, f, &t), Ok(q.records));
        }
    }
}

/// The first 4688 bytes at `sp` (zeros past the input).
fn image_at(mem: &Mem, sp: u64) -> Vec<u8> {
    mem.expect(sp, RT_SIGFRAME_SIZE)
}

/// Walks the record chain of an accepted frame (whose layout the parser vouched for) to find
/// a record the result does not return raw.
fn find_record(mem: &Mem, sp: u64, s: &Sigreturn, want: u32) -> Option<Vec<u8>> {
    let mut areas = vec![(sp + RESERVED_OFFSET as u64, RESERVED_SIZE)];
    if let Some((a, l)) = s.extra {
        areas.push((a, l));
    }
    for (base, limit) in areas {
        let mut off = 0usize;
        while off + 8 <= limit {
            let head = mem.expect(base + off as u64, 8);
            let (magic, size) = (get_u32(&head, 0), get_u32(&head, 4) as usize);
            if magic == 0 || size < 8 {
                break;
            }
            if magic == want {
                return Some(mem.expect(base + off as u64, size));
            }
            if magic == EXTRA_MAGIC {
                break;
            }
            off += size;
        }
    }
    None
}

fn handler() -> Sigaction {
    Sigaction {
        sa_handler: 0x40_0000,
        sa_flags: SA_SIGINFO | SA_RESTORER,
        sa_restorer: 0x40_1000,
        sa_mask: Sigset(0),
    }
}

/// Delivers a frame holding what `s` holds and parses it again: the same state must come out.
fn rebuild(
    s: &Sigreturn,
    sigmask: Sigset,
    uc_stack: StackT,
    f: &SigFeatures,
    fp: Option<&FpsimdState>,
) {
    let recs: Vec<RecordSpec> = records(s, f)
        .iter()
        .filter_map(|&(r, _, _)| r)
        .map(|r| RecordSpec {
            magic: get_u32(r, 0),
            size: r.len() as u32,
            body: &r[8..],
            payload: &[],
        })
        .collect();
    let info = Siginfo([7; 128]);
    let action = handler();
    let d = SigDelivery {
        sp_top: SP,
        signo: SIGSEGV,
        info: &info,
        action: &action,
        uc_stack,
        sigmask,
        regs: &s.regs,
        fault_address: s.fault_address,
        esr: None,
        fpsimd: fp,
        records: &recs,
        bti: false,
        sigtramp: 0x1000,
    };
    // Only a frame right at the size limit can fail to fit the delivery layout.
    let Ok(plan) = d.plan() else { return };
    let mut img = vec![0u8; plan.image_len];
    d.write(&plan, &mut img).expect("write of a planned frame");
    let mem = Mem::new(plan.base, &img, plan.base + img.len() as u64);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = vec![0u8; SIGFRAME_MAXSZ];
    let r = parse(&mem, plan.base, f, &mut frame, &mut extra);
    assert_eq!(r.sigmask, Some(sigmask));
    assert_eq!(r.uc_stack, Some(uc_stack));
    let s2 = r
        .frame
        .expect("a delivered copy of an accepted frame was refused");
    assert_eq!(
        Sigreturn {
            extra: s.extra,
            ..s2
        },
        *s
    );
}

/// Signal delivery (layout, address, handler registers, the image) followed by rt_sigreturn
/// of what was written.
///
/// Input: feature bits, flags, record descriptions, registers and FPSIMD state.
///
/// Asserts: the layout keeps records 16-aligned, ascending, inside the frame, with the extra
/// space placed as `extra_area` says; `emit` writes in ascending, non-overlapping pieces
/// inside the image and `write` is exactly those pieces over zeros; the handler registers
/// point at the frame as the ABI says; and parsing the image gives back the registers,
/// FPSIMD state and every record byte for byte (or refuses exactly the frames it must:
/// bad PSTATE, a record the CPU lacks, duplicates, sizes that break 16-byte alignment).
pub fn sigdeliver(data: &[u8]) {
    let mut t = Take::new(data);
    let f = features(t.u8());
    let flags = t.u8();
    let nrec = usize::from(t.u8() % 8);
    let mut rng = Rng(u64::from(t.u32()));
    let magics = [
        GCS_MAGIC,
        SVE_MAGIC,
        TPIDR2_MAGIC,
        ZA_MAGIC,
        ZT_MAGIC,
        FPMR_MAGIC,
        POE_MAGIC,
    ];
    struct Rec {
        magic: u32,
        size: u32,
        body: Vec<u8>,
        payload: Vec<u8>,
    }
    let mut recs = Vec::new();
    for _ in 0..nrec {
        let sel = t.u8();
        let magic = magics[usize::from(sel & 0x3f) % 7];
        let units = t.u16();
        // Mostly 16-byte multiples, as the kernel writes them; sometimes not.
        let size = if sel & 0x80 != 0 {
            8 + u32::from(units % 64)
        } else {
            16 * (1 + u32::from(units % 1100))
        };
        let room = size as usize - 8;
        let body_len = usize::from(t.u8() % 9).min(room);
        let body = t.bytes(body_len).to_vec();
        let body = [body, vec![0; body_len]].concat()[..body_len].to_vec();
        let pay_len = if sel & 0x40 != 0 {
            rng.below(room - body_len + 1)
        } else {
            0
        };
        let payload: Vec<u8> = (0..pay_len).map(|_| rng.next() as u8).collect();
        recs.push(Rec {
            magic,
            size,
            body,
            payload,
        });
    }
    let esr = (flags & 1 != 0).then(|| t.u64());
    let mut regs = UserRegs::default();
    for r in regs.regs.iter_mut() {
        *r = t.u64();
    }
    regs.sp = t.u64();
    regs.pc = t.u64();
    regs.pstate = if flags & 2 != 0 {
        t.u64()
    } else {
        t.u64() & 0xf000_0000
    };
    let mut fpsimd = FpsimdState::default();
    for v in fpsimd.vregs.iter_mut() {
        *v = u128::from(t.u64()) | u128::from(t.u64()) << 64;
    }
    fpsimd.fpsr = t.u32();
    fpsimd.fpcr = t.u32();
    let mut info = Siginfo([0; 128]);
    info.0[..].iter_mut().for_each(|b| *b = rng.next() as u8);
    let action = Sigaction {
        sa_handler: t.u64(),
        sa_flags: if flags & 4 != 0 { SA_SIGINFO } else { 0 }
            | if flags & 8 != 0 { SA_RESTORER } else { 0 },
        sa_restorer: t.u64(),
        sa_mask: Sigset(0),
    };
    let sp_top = if flags & 16 != 0 {
        t.u64()
    } else {
        SP + u64::from(t.u8())
    };
    let uc_stack = StackT::new(t.u64(), t.u32() as i32, t.u64());
    let sigmask = Sigset(t.u64());
    let with_fp = flags & 32 == 0;
    let bti = flags & 64 != 0;

    let specs: Vec<RecordSpec> = recs
        .iter()
        .map(|r| RecordSpec {
            magic: r.magic,
            size: r.size,
            body: &r.body,
            payload: &r.payload,
        })
        .collect();
    let d = SigDelivery {
        sp_top,
        signo: SIGSEGV,
        info: &info,
        action: &action,
        uc_stack,
        sigmask,
        regs: &regs,
        fault_address: 0xfa17,
        esr,
        fpsimd: with_fp.then_some(&fpsimd),
        records: &specs,
        bti,
        sigtramp: 0x1000,
    };

    let mut sizes: Vec<u32> = Vec::new();
    if with_fp {
        sizes.push(FPSIMD_CONTEXT_SIZE);
    }
    if esr.is_some() {
        sizes.push(ESR_CONTEXT_SIZE);
    }
    sizes.extend(recs.iter().map(|r| r.size));
    let layout = FrameLayout::compute(&sizes);
    let plan = match d.plan() {
        Ok(p) => p,
        Err(e) => {
            // Too big for any frame, or no room below sp_top.
            if let Ok(l) = layout {
                assert!(
                    (sp_top as u128) < (l.size + FRAME_RECORD_SIZE + 16) as u128,
                    "{e:?}"
                );
            }
            return;
        }
    };
    let l = plan.layout;
    assert_eq!(Ok(l), layout);
    check_layout(&l, &sizes);
    assert!(minsigstksz(&sizes).unwrap() >= l.size + FRAME_RECORD_SIZE);

    // Handler registers.
    let e = plan.entry;
    assert_eq!(plan.frame_record, (sp_top - 16) & !15);
    assert_eq!(plan.base + l.size as u64, plan.frame_record);
    assert_eq!(e.sp, plan.base);
    assert!(plan.base.is_multiple_of(16));
    assert_eq!(e.x29, plan.frame_record);
    assert_eq!(e.x0, u64::from(SIGSEGV));
    let siginfo = action.sa_flags & SA_SIGINFO != 0;
    assert_eq!(e.x1, siginfo.then_some(plan.base));
    assert_eq!(e.x2, siginfo.then_some(plan.base + UC_OFFSET as u64));
    let restorer = action.sa_flags & SA_RESTORER != 0;
    assert_eq!(e.x30, if restorer { action.sa_restorer } else { 0x1000 });
    assert_eq!(e.pc, action.sa_handler);
    let mut want_pstate = regs.pstate & !PSR_TCO_BIT;
    if bti {
        want_pstate = (want_pstate & !PSR_BTYPE_MASK) | PSR_BTYPE_C;
    }
    assert_eq!(e.pstate, want_pstate);
    assert_eq!(plan.image_len, l.size + FRAME_RECORD_SIZE);

    // emit: ascending, disjoint, inside; write() = those pieces over zeros.
    let mut pieces: Vec<(usize, Vec<u8>)> = Vec::new();
    d.emit(&plan, &mut |off, b| {
        pieces.push((off, b.to_vec()));
        Ok(())
    })
    .expect("emit of a planned frame");
    let mut img2 = vec![0u8; plan.image_len];
    let mut at = 0;
    for (off, b) in &pieces {
        assert!(*off >= at, "emit went backwards or overlapped");
        assert!(off + b.len() <= plan.image_len, "emit past the image");
        img2[*off..off + b.len()].copy_from_slice(b);
        at = off + b.len();
    }
    let mut img = vec![0x33u8; plan.image_len + 8];
    d.write(&plan, &mut img).expect("write of a planned frame");
    assert_eq!(&img[..plan.image_len], &img2[..]);
    assert!(
        img[plan.image_len..].iter().all(|&b| b == 0x33),
        "write past image_len"
    );
    let img = &img[..plan.image_len];

    // Fixed parts of the image.
    let want_info = if siginfo { info.0 } else { [0; 128] };
    assert_eq!(&img[..128], &want_info[..]);
    assert_eq!(get_u64(img, l.size), regs.regs[29]);
    assert_eq!(get_u64(img, l.size + 8), regs.regs[30]);

    // And back.
    let mem = Mem::new(plan.base, img, plan.base + img.len() as u64);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = vec![0u8; SIGFRAME_MAXSZ];
    let r = parse(&mem, plan.base, &f, &mut frame, &mut extra);
    assert_eq!(r.sigmask, Some(Sigset(sigmask.0 & UNBLOCKABLE_CLEARED)));
    let mut seen = Vec::new();
    let dup = recs.iter().any(|r| {
        let d = seen.contains(&r.magic);
        seen.push(r.magic);
        d
    });
    let gated = |m: u32| match m {
        SVE_MAGIC => f.sve || f.sme,
        TPIDR2_MAGIC => f.tpidr2(),
        ZA_MAGIC => f.sme,
        ZT_MAGIC => f.sme2,
        FPMR_MAGIC => f.fpmr,
        POE_MAGIC => f.poe,
        GCS_MAGIC => f.gcs,
        _ => false,
    };
    let ok = valid_user_pstate(regs.pstate).is_some()
        && with_fp == f.fpsimd
        && !dup
        && recs
            .iter()
            .all(|r| gated(r.magic) && r.size.is_multiple_of(16));
    let s = match (ok, r.frame) {
        (true, Ok(s)) => s,
        (false, Err(_)) => return,
        (want, got) => panic!("expected ok={want}, got {got:?}"),
    };
    assert_eq!(r.uc_stack, Some(uc_stack));
    assert_eq!(s.regs.regs, regs.regs);
    assert_eq!((s.regs.sp, s.regs.pc), (regs.sp, regs.pc));
    assert_eq!(Some(s.regs.pstate), valid_user_pstate(regs.pstate));
    assert_eq!(s.fault_address, 0xfa17);
    if with_fp {
        assert_eq!(s.fpsimd, fpsimd);
    }
    assert_eq!(s.extra.is_some(), l.extra_offset.is_some());
    let got = records(&s, &f);
    for r in &recs {
        let rec = got
            .iter()
            .find(|g| g.1 == r.magic)
            .and_then(|g| g.0)
            .expect("delivered record missing");
        assert_eq!(rec.len(), r.size as usize);
        let n = r.body.len();
        assert_eq!(&rec[8..8 + n], &r.body[..]);
        let p = r.payload.len();
        if p > 0 {
            assert_eq!(&rec[8 + n..8 + n + p], &r.payload[..]);
        }
        assert!(rec[8 + n + p..].iter().all(|&b| b == 0));
    }
    assert_eq!(got.iter().filter(|g| g.0.is_some()).count(), recs.len());
}

fn check_layout(l: &FrameLayout, sizes: &[u32]) {
    assert!(l.size.is_multiple_of(16) && l.size >= RT_SIGFRAME_SIZE && l.size >= l.used);
    assert!(l.used <= SIGFRAME_MAXSZ);
    let mut at = RESERVED_OFFSET;
    for (i, &s) in sizes.iter().enumerate() {
        let o = l.record_offset(i).unwrap();
        assert!(o.is_multiple_of(16) && o >= at);
        if let Some(e) = l.extra_offset {
            // Records are either wholly before extra_context or after its terminator.
            assert!(o + s as usize <= e || o >= e + EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE);
            if o < e {
                assert!(o + (s as usize).next_multiple_of(16) <= RESERVED_OFFSET + RESERVED_SIZE);
            }
        } else {
            assert!(
                o + (s as usize).next_multiple_of(16) + TERMINATOR_SIZE
                    <= RESERVED_OFFSET + RESERVED_SIZE
            );
        }
        at = o + (s as usize).next_multiple_of(16);
    }
    assert_eq!(l.record_offset(sizes.len()), None);
    assert!(l.end_offset >= at && l.end_offset + TERMINATOR_SIZE == l.used);
    if let Some(e) = l.extra_offset {
        assert!(
            e >= RESERVED_OFFSET
                && e + EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE
                    <= RESERVED_OFFSET + RESERVED_SIZE
        );
        let (start, size) = l.extra_area().unwrap();
        assert_eq!(start, e + EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE);
        assert!(size.is_multiple_of(16) && start + size <= l.size);
        assert!(start + size >= l.used);
    } else {
        assert!(l.used <= RESERVED_OFFSET + RESERVED_SIZE);
    }
}

/// A valid frame with FPSIMD, ESR, SVE, TPIDR2, ZA and ZT records, built by the crate's own
/// delivery code; `big` gives the SVE/ZA records payloads (so they spill to extra space).
pub fn seed_frame(big: bool) -> Vec<u8> {
    let regs = UserRegs {
        regs: core::array::from_fn(|i| 0x1000 + i as u64),
        sp: 0x7fff_0000,
        pc: 0x40_1000,
        pstate: 0x6000_0000,
    };
    let fp = FpsimdState {
        vregs: core::array::from_fn(|i| i as u128 * 0x0101),
        fpsr: 0x10,
        fpcr: 0x20,
    };
    let vq = 4u32;
    let mut sve_head = [0u8; 8];
    put_u16(&mut sve_head, 0, (vq * 16) as u16);
    let mut za_head = [0u8; 8];
    put_u16(&mut za_head, 0, (vq * 16) as u16);
    let mut zt_head = [0u8; 8];
    put_u16(&mut zt_head, 0, 1);
    let mut tp = [0u8; 8];
    put_u32(&mut tp, 0, 0x1234);
    let sve_payload = vec![0x5e; sve_sig_regs_size(vq) as usize];
    let za_payload = vec![0x7a; za_sig_regs_size(vq) as usize];
    let zt_payload = [0x27u8; 64];
    let recs = [
        RecordSpec {
            magic: SVE_MAGIC,
            size: if big {
                sve_sig_context_size(vq).next_multiple_of(16)
            } else {
                SVE_CONTEXT_HEAD_SIZE
            },
            body: &sve_head,
            payload: if big { &sve_payload } else { &[] },
        },
        RecordSpec {
            magic: TPIDR2_MAGIC,
            size: TPIDR2_CONTEXT_SIZE,
            body: &tp,
            payload: &[],
        },
        RecordSpec {
            magic: ZA_MAGIC,
            size: if big {
                za_sig_context_size(vq)
            } else {
                ZA_CONTEXT_HEAD_SIZE
            },
            body: &za_head,
            payload: if big { &za_payload } else { &[] },
        },
        RecordSpec {
            magic: ZT_MAGIC,
            size: zt_sig_context_size(1),
            body: &zt_head,
            payload: &zt_payload,
        },
    ];
    let info = Siginfo([1; 128]);
    let action = handler();
    let d = SigDelivery {
        sp_top: SP + 0x10_0000,
        signo: SIGSEGV,
        info: &info,
        action: &action,
        uc_stack: StackT::default(),
        sigmask: Sigset(0x4000),
        regs: &regs,
        fault_address: 0xdead_0000,
        esr: Some(0x9200_0046),
        fpsimd: Some(&fp),
        records: &recs,
        bti: false,
        sigtramp: 0x1000,
    };
    let plan = d.plan().unwrap();
    let mut img = vec![0u8; plan.image_len];
    d.write(&plan, &mut img).unwrap();
    // Feature byte (all), shape (aligned, faults past the input), full extra buffer; the
    // frame is re-based at SP by the target, and extra_context's datap is absolute, so fix
    // it up for SP.
    let mut out = vec![0x7f, 0x00, 0x00];
    if let Some(e) = plan.layout.extra_offset {
        let datap = SP + (e + EXTRA_CONTEXT_SIZE as usize + TERMINATOR_SIZE) as u64;
        img[e + 8..e + 16].copy_from_slice(&datap.to_le_bytes());
    }
    out.extend_from_slice(&img);
    out
}

/// A delivery description for `sigdeliver` with every record kind, some with payloads.
pub fn seed_delivery() -> Vec<u8> {
    let mut v = vec![0x7f, 0x04 | 0x08 | 0x01, 7];
    v.extend_from_slice(&0x1234_5678u32.to_le_bytes());
    for (i, units) in [
        (0u8, 1u16),
        (1, 34),
        (2, 0),
        (3, 16),
        (4, 4),
        (5, 0),
        (6, 0),
    ] {
        v.push(i | if units > 0 { 0x40 } else { 0 });
        v.extend_from_slice(&units.to_le_bytes());
        v.push(8);
        v.extend_from_slice(&[i + 1; 8]);
    }
    v.extend_from_slice(&0x9200_0046u64.to_le_bytes());
    for i in 0..34u64 {
        v.extend_from_slice(&(0x1000 + i).to_le_bytes());
    }
    v
}
