use super::*;
use crate::uapi::signal::*;
use std::vec;
use std::vec::Vec;

/// A flat piece of user memory at `base`.
struct Mem {
    base: u64,
    bytes: Vec<u8>,
}

impl Mem {
    fn new(base: u64, len: usize) -> Mem {
        Mem {
            base,
            bytes: vec![0; len],
        }
    }
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Efault> {
        let o = addr.checked_sub(self.base).ok_or(Efault)? as usize;
        let src = self.bytes.get(o..o + buf.len()).ok_or(Efault)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) {
        let o = (addr - self.base) as usize;
        self.bytes[o..o + data.len()].copy_from_slice(data);
    }
    fn at(&mut self, addr: u64) -> &mut [u8] {
        let o = (addr - self.base) as usize;
        &mut self.bytes[o..]
    }
}

const ALL: SigFeatures = SigFeatures {
    fpsimd: true,
    sve: true,
    sme: true,
    sme2: true,
    fpmr: true,
    poe: true,
    gcs: true,
};
const FP_ONLY: SigFeatures = SigFeatures {
    fpsimd: true,
    sve: false,
    sme: false,
    sme2: false,
    fpmr: false,
    poe: false,
    gcs: false,
};

fn sample_regs() -> UserRegs {
    let mut r = UserRegs::default();
    for (i, x) in r.regs.iter_mut().enumerate() {
        *x = 0x1000 + i as u64;
    }
    r.sp = 0x7fff_0000;
    r.pc = 0x40_1234;
    r.pstate = 0x6000_0000 | PSR_TCO_BIT; // Z, C, TCO
    r
}

fn sample_fp() -> FpsimdState {
    let mut f = FpsimdState {
        fpsr: 0x0800_009f,
        fpcr: 0x0300_0000,
        ..FpsimdState::default()
    };
    for (i, v) in f.vregs.iter_mut().enumerate() {
        *v = ((i as u128) << 120) | (0xabcd_0000 + i as u128);
    }
    f
}

struct Fixture {
    regs: UserRegs,
    fp: FpsimdState,
    info: Siginfo,
    act: Sigaction,
}

fn fixture(flags: u64) -> Fixture {
    Fixture {
        regs: sample_regs(),
        fp: sample_fp(),
        info: Siginfo::fault(SIGSEGV, SEGV_MAPERR, 0xdead_0000),
        act: Sigaction {
            sa_handler: 0x40_2000,
            sa_flags: flags,
            sa_restorer: 0x40_3000,
            sa_mask: Sigset::EMPTY,
        },
    }
}

fn delivery<'a>(
    f: &'a Fixture,
    records: &'a [RecordSpec<'a>],
    esr: Option<u64>,
) -> SigDelivery<'a> {
    SigDelivery {
        sp_top: 0x7fff_0000,
        signo: SIGSEGV,
        info: &f.info,
        action: &f.act,
        uc_stack: StackT::new(0, SS_DISABLE, 0),
        sigmask: Sigset::of(SIGUSR1),
        regs: &f.regs,
        fault_address: 0xdead_0000,
        esr,
        fpsimd: Some(&f.fp),
        records,
        bti: false,
        sigtramp: 0xffff_0000_0800,
    }
}

#[test]
fn sigframe_offsets_match_spec() {
    assert_eq!(RT_SIGFRAME_SIZE, 0x1250);
    assert_eq!(UC_OFFSET, 128);
    assert_eq!(UC_STACK_OFFSET, 144);
    assert_eq!(UC_SIGMASK_OFFSET, 168);
    assert_eq!(MCONTEXT_OFFSET, 128 + 176);
    assert_eq!(REGS_OFFSET, 312);
    assert_eq!(SP_OFFSET, 560);
    assert_eq!(PC_OFFSET, 568);
    assert_eq!(PSTATE_OFFSET, 576);
    assert_eq!(RESERVED_OFFSET, 0x250);
    assert_eq!(sve_sig_context_size(4), 2200);
    assert_eq!(sve_sig_context_size(16), 8752);
    assert_eq!(za_sig_context_size(2), 1040);
    assert_eq!(za_sig_context_size(16), 65552);
    assert_eq!(zt_sig_context_size(1), 80);
}

#[test]
fn layouts_of_spec_section_4() {
    // FPSIMD only.
    let l = FrameLayout::compute(&[528]).unwrap();
    assert_eq!(
        (l.record_offset(0), l.end_offset, l.used, l.size),
        (Some(592), 1120, 1136, 4688)
    );
    assert_eq!(l.extra_offset, None);
    // SVE live at VL64: head.size 2208.
    let l = FrameLayout::compute(&[528, 2208]).unwrap();
    assert_eq!(
        (l.record_offset(1), l.end_offset, l.used, l.size),
        (Some(1120), 3328, 3344, 4688)
    );
    // SVE live at VL256: spills into extra space.
    let l = FrameLayout::compute(&[528, 8752]).unwrap();
    assert_eq!(l.extra_offset, Some(1120));
    assert_eq!(l.extra_area(), Some((1168, 9936 - 1168)));
    assert_eq!(
        (l.record_offset(1), l.end_offset, l.used, l.size),
        (Some(1168), 9920, 9936, 9936)
    );
    // SME hardware, nothing live, SVL 32: sve 16, tpidr2, za 16.
    let l = FrameLayout::compute(&[528, 16, 16, 16]).unwrap();
    let offs: Vec<_> = (0..4).map(|i| l.record_offset(i).unwrap()).collect();
    assert_eq!(offs, [592, 1120, 1136, 1152]);
    assert_eq!((l.end_offset, l.used, l.size), (1168, 1184, 4688));
    // Too big for any frame.
    assert_eq!(FrameLayout::compute(&[528, 300_000]), Err(Errno::ENOMEM));
}

#[test]
fn minsigstksz_table_of_spec_section_7() {
    assert_eq!(minsigstksz(&[528, 16]), Ok(4720));
    assert_eq!(minsigstksz(&[528, 16, sve_sig_context_size(4)]), Ok(4720));
    assert_eq!(minsigstksz(&[528, 16, sve_sig_context_size(16)]), Ok(9984));
    let sme256 = [
        528,
        16,
        sve_sig_context_size(16),
        16,
        za_sig_context_size(16),
    ];
    assert_eq!(minsigstksz(&sme256), Ok(75552));
    let sme2 = [
        528,
        16,
        sve_sig_context_size(16),
        16,
        za_sig_context_size(16),
        80,
    ];
    assert_eq!(minsigstksz(&sme2), Ok(75632));
}

#[test]
fn fpsimd_frame_bytes_and_entry_registers() {
    let f = fixture(SA_SIGINFO | SA_RESTORER);
    let d = delivery(&f, &[], None);
    let plan = d.plan().unwrap();
    assert_eq!(plan.frame_record, 0x7fff_0000 - 16);
    assert_eq!(plan.base, 0x7fff_0000 - 16 - 4688);
    assert_eq!(plan.base % 16, 0);
    assert_eq!(plan.image_len, 4688 + 16);
    let e = plan.entry;
    assert_eq!(e.x0, SIGSEGV as u64);
    assert_eq!(e.x1, Some(plan.base));
    assert_eq!(e.x2, Some(plan.base + 128));
    assert_eq!(e.sp, plan.base);
    assert_eq!(e.x29, plan.frame_record);
    assert_eq!(e.x30, 0x40_3000);
    assert_eq!(e.pc, 0x40_2000);
    assert_eq!(e.pstate, 0x6000_0000); // TCO cleared, no BTI

    let mut img = vec![0xEE; plan.image_len];
    d.write(&plan, &mut img).unwrap();
    assert_eq!(&img[0..128], &f.info.0[..]);
    assert_eq!(get_u64(&img, 128), 0); // uc_flags
    assert_eq!(get_u64(&img, 136), 0); // uc_link
    assert_eq!(get_u64(&img, 144), 0); // ss_sp
    assert_eq!(get_i32(&img, 152), SS_DISABLE);
    assert_eq!(get_u64(&img, 160), 0); // ss_size
    assert_eq!(get_u64(&img, 168), 1 << (SIGUSR1 - 1));
    assert!(img[176..304].iter().all(|&b| b == 0)); // __unused + padding
    assert_eq!(get_u64(&img, 304), 0xdead_0000);
    assert_eq!(get_u64(&img, 312), 0x1000);
    assert_eq!(get_u64(&img, 312 + 30 * 8), 0x1000 + 30);
    assert_eq!(get_u64(&img, 560), 0x7fff_0000);
    assert_eq!(get_u64(&img, 568), 0x40_1234);
    assert_eq!(get_u64(&img, 576), 0x6000_0000 | PSR_TCO_BIT); // saved as interrupted
    assert_eq!(get_u32(&img, 592), FPSIMD_MAGIC);
    assert_eq!(get_u32(&img, 596), 528);
    assert_eq!(get_u32(&img, 600), 0x0800_009f);
    assert_eq!(get_u32(&img, 604), 0x0300_0000);
    assert_eq!(get_u128(&img, 608), f.fp.vregs[0]);
    assert_eq!(get_u128(&img, 608 + 31 * 16), f.fp.vregs[31]);
    assert_eq!(get_u64(&img, 1120), 0); // terminator
    assert!(img[1120..4688].iter().all(|&b| b == 0));
    assert_eq!(get_u64(&img, 4688), 0x1000 + 29); // frame record: x29
    assert_eq!(get_u64(&img, 4696), 0x1000 + 30); // x30
}

#[test]
fn entry_without_siginfo_or_restorer_and_with_bti() {
    let f = fixture(0);
    let mut d = delivery(&f, &[], None);
    d.bti = true;
    d.sp_top = 0x1_0008; // unaligned top: the record goes at round_down(top - 16, 16)
    let plan = d.plan().unwrap();
    assert_eq!(plan.frame_record, 0xfff0);
    assert_eq!(plan.base, 0xfff0 - 4688);
    assert_eq!((plan.entry.x1, plan.entry.x2), (None, None));
    assert_eq!(plan.entry.x30, 0xffff_0000_0800);
    assert_eq!(plan.entry.pstate, 0x6000_0000 | PSR_BTYPE_C);
    let mut img = vec![0; plan.image_len];
    d.write(&plan, &mut img).unwrap();
    assert!(img[..128].iter().all(|&b| b == 0));
    d.sp_top = 4000;
    assert_eq!(d.plan(), Err(Errno::EFAULT));
    assert_eq!(d.write(&plan, &mut img[..100]), Err(Errno::ENOMEM));
}

#[test]
fn esr_record_follows_fpsimd() {
    let f = fixture(SA_SIGINFO);
    let d = delivery(&f, &[], Some(0x9200_0046));
    let plan = d.plan().unwrap();
    let mut img = vec![0; plan.image_len];
    d.write(&plan, &mut img).unwrap();
    assert_eq!(get_u32(&img, 1120), ESR_MAGIC);
    assert_eq!(get_u32(&img, 1124), 16);
    assert_eq!(get_u64(&img, 1128), 0x9200_0046);
    assert_eq!(get_u64(&img, 1136), 0);
    assert_eq!(plan.layout.end_offset, 1136);
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

#[test]
fn large_record_goes_to_extra_space() {
    let f = fixture(SA_SIGINFO);
    let body = pattern(8752 - 8);
    let recs = [RecordSpec {
        magic: SVE_MAGIC,
        size: 8752,
        body: &body,
        payload: &[],
    }];
    let d = delivery(&f, &recs, None);
    let plan = d.plan().unwrap();
    assert_eq!(plan.layout.size, 9936);
    assert_eq!(plan.base, 0x7fff_0000 - 16 - 9936);
    let mut img = vec![0xEE; plan.image_len];
    d.write(&plan, &mut img).unwrap();
    assert_eq!(get_u32(&img, 1120), EXTRA_MAGIC);
    assert_eq!(get_u32(&img, 1124), 32);
    assert_eq!(get_u64(&img, 1128), plan.base + 1168);
    assert_eq!(get_u32(&img, 1136), 9936 - 1168);
    assert_eq!(get_u64(&img, 1152), 0);
    assert_eq!(get_u64(&img, 1160), 0);
    assert_eq!(get_u32(&img, 1168), SVE_MAGIC);
    assert_eq!(get_u32(&img, 1172), 8752);
    assert_eq!(&img[1176..1168 + 8752], &body[..]);
    assert_eq!(get_u64(&img, 9920), 0);
    assert_eq!(get_u64(&img, 9936), 0x1000 + 29);

    // And back through rt_sigreturn.
    let mut mem = Mem::new(plan.base, plan.image_len);
    mem.write(plan.base, &img);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = vec![0u8; SIGFRAME_MAXSZ];
    let r = parse_sigreturn(
        plan.base,
        &mut |a, b| mem.read(a, b),
        &ALL,
        &mut frame,
        &mut extra_in(&mut extra, &mut |a, b| mem.read(a, b)),
    );
    assert_eq!(r.sigmask, Some(Sigset::of(SIGUSR1)));
    let s = r.frame.unwrap();
    assert_eq!(s.extra, Some((plan.base + 1168, 8768)));
    let sve = s.sve.unwrap();
    assert_eq!(sve.len(), 8752);
    assert_eq!(get_u32(sve, 0), SVE_MAGIC);
    assert_eq!(&sve[8..], &body[..]);
    assert_eq!(s.fpsimd, f.fp);
}

#[test]
fn every_record_kind_round_trips() {
    let f = fixture(SA_SIGINFO);
    let tp = 0x1234u64.to_le_bytes();
    let za_body = [0x16u8, 0, 0, 0, 0, 0, 0, 0];
    let recs = [
        RecordSpec {
            magic: SVE_MAGIC,
            size: 16,
            body: &[0x40, 0, 0, 0],
            payload: &[],
        },
        RecordSpec {
            magic: TPIDR2_MAGIC,
            size: 16,
            body: &tp,
            payload: &[],
        },
        RecordSpec {
            magic: ZA_MAGIC,
            size: 16,
            body: &za_body,
            payload: &[],
        },
        RecordSpec {
            magic: ZT_MAGIC,
            size: 80,
            body: &[1, 0],
            payload: &[],
        },
        RecordSpec {
            magic: FPMR_MAGIC,
            size: 16,
            body: &[],
            payload: &[],
        },
        RecordSpec {
            magic: POE_MAGIC,
            size: 16,
            body: &[7],
            payload: &[],
        },
        RecordSpec {
            magic: GCS_MAGIC,
            size: 32,
            body: &[],
            payload: &[],
        },
    ];
    let d = delivery(&f, &recs, Some(0x5600_0000));
    let plan = d.plan().unwrap();
    let mut mem = Mem::new(plan.base, plan.image_len);
    d.write(&plan, mem.at(plan.base)).unwrap();
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = [0u8; 0];
    let r = parse_sigreturn(
        plan.base,
        &mut |a, b| mem.read(a, b),
        &ALL,
        &mut frame,
        &mut extra_in(&mut extra, &mut |a, b| mem.read(a, b)),
    );
    let s = r.frame.unwrap();
    assert_eq!(s.regs.regs, f.regs.regs);
    assert_eq!((s.regs.sp, s.regs.pc), (f.regs.sp, f.regs.pc));
    assert_eq!(s.regs.pstate, f.regs.pstate);
    assert_eq!(s.fault_address, 0xdead_0000);
    assert_eq!(get_u16(s.sve.unwrap(), 8), 0x40);
    assert_eq!(u64_record_value(s.tpidr2.unwrap()), Some(0x1234));
    assert_eq!(s.za.unwrap().len(), 16);
    assert_eq!(s.zt.unwrap().len(), 80);
    assert_eq!(u64_record_value(s.poe.unwrap()), Some(7));
    assert_eq!(s.fpmr.unwrap().len(), 16);
    assert_eq!(s.gcs.unwrap().len(), 32);
    assert_eq!(s.extra, None);
    assert_eq!(r.uc_stack, Some(StackT::new(0, SS_DISABLE, 0)));
    // Same frame on an FPSIMD-only CPU: the first feature record is refused.
    let r = parse_sigreturn(
        plan.base,
        &mut |a, b| mem.read(a, b),
        &FP_ONLY,
        &mut frame,
        &mut extra_in(&mut extra, &mut |a, b| mem.read(a, b)),
    );
    assert_eq!(r.frame.err(), Some(BadFrame::FeatureAbsent(SVE_MAGIC)));
    assert_eq!(r.sigmask, Some(Sigset::of(SIGUSR1)));
}

/// A frame whose end would wrap around the address space is a fault, not an overflow.
#[test]
fn frame_at_the_top_of_the_address_space_is_a_fault() {
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = vec![0u8; 16];
    let mut never = |_: u64, _: &mut [u8]| -> Result<(), Efault> { panic!("nothing is read") };
    let r = parse_sigreturn(
        u64::MAX - 15,
        &mut never,
        &FP_ONLY,
        &mut frame,
        &mut extra_in(&mut extra, &mut |_, _| Err(Efault)),
    );
    assert_eq!(r.frame.err(), Some(BadFrame::Fault));
    assert_eq!(r.regs, None);
}

// ---- rejections: build a good FPSIMD frame, then break one thing ----

const SP: u64 = 0x10_0000;

fn good_frame() -> Mem {
    let f = fixture(SA_SIGINFO);
    let mut d = delivery(&f, &[], None);
    d.sp_top = SP + 16 + 4688;
    let plan = d.plan().unwrap();
    assert_eq!(plan.base, SP);
    let mut mem = Mem::new(SP, SIGFRAME_MAXSZ + 4096);
    d.write(&plan, mem.at(SP)).unwrap();
    mem
}

fn parse_with(mem: &Mem, features: &SigFeatures, extra_len: usize) -> Result<(), BadFrame> {
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = vec![0u8; extra_len];
    let r = parse_sigreturn(
        SP,
        &mut |a, b| mem.read(a, b),
        features,
        &mut frame,
        &mut extra_in(&mut extra, &mut |a, b| mem.read(a, b)),
    )
    .frame
    .map(|_| ());
    r
}

/// For frames without an extra_context: the extra space is never asked for.
fn no_extra<'a>(_: u64, _: usize) -> Result<&'a [u8], BadFrame> {
    Err(BadFrame::Fault)
}

/// parse_sigreturn at `sp` on an FPSIMD-only system, for frames without extra space.
fn parse_fp_only<'a>(
    sp: u64,
    mem: &Mem,
    frame: &'a mut [u8; RT_SIGFRAME_SIZE],
) -> SigreturnResult<'a> {
    parse_sigreturn(
        sp,
        &mut |a, b| mem.read(a, b),
        &FP_ONLY,
        frame,
        &mut no_extra,
    )
}

fn reject(edit: impl Fn(&mut Mem), want: BadFrame) {
    reject_on(edit, &FP_ONLY, want)
}

fn reject_on(edit: impl Fn(&mut Mem), f: &SigFeatures, want: BadFrame) {
    let mut m = good_frame();
    edit(&mut m);
    assert_eq!(parse_with(&m, f, SIGFRAME_MAXSZ), Err(want));
    // The quick path leaves every refused frame to the general one.
    assert!(!in_place_agrees(&m, SP, f, &TASK_32_64), "{want:?}");
}

fn rec(m: &mut Mem, off: usize, magic: u32, size: u32) {
    let b = m.at(SP + off as u64);
    put_u32(b, 0, magic);
    put_u32(b, 4, size);
}

#[test]
fn good_frame_parses() {
    assert_eq!(parse_with(&good_frame(), &FP_ONLY, 0), Ok(()));
}

#[test]
fn reject_misaligned_sp_and_fault() {
    let m = good_frame();
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let r = parse_sigreturn(
        SP + 8,
        &mut |a, b| m.read(a, b),
        &FP_ONLY,
        &mut frame,
        &mut |_, _| Err(BadFrame::Fault),
    );
    assert_eq!(
        (r.frame.err(), r.sigmask),
        (Some(BadFrame::SpMisaligned), None)
    );
    let r = parse_sigreturn(
        SP,
        &mut |_, _| Err(Efault),
        &FP_ONLY,
        &mut frame,
        &mut no_extra,
    );
    assert_eq!(r.frame.err(), Some(BadFrame::Fault));
}

#[test]
fn reject_bad_pstate_but_clear_res0() {
    for bad in [
        0x4,
        0x5,
        PSR_MODE32_BIT,
        PSR_D_BIT,
        PSR_A_BIT,
        PSR_I_BIT,
        PSR_F_BIT,
    ] {
        reject(
            |m| put_u64(m.at(SP), PSTATE_OFFSET, bad),
            BadFrame::BadPstate,
        );
    }
    assert_eq!(
        valid_user_pstate(0xffff_0000_0000_0020 | (1 << 20) | 0xf000_0000),
        Some(0xf000_0000)
    );
    assert_eq!(
        valid_user_pstate(PSR_SSBS_BIT | PSR_BTYPE_C | PSR_TCO_BIT),
        Some(0x200_1800)
    );
    // The mask is still reported for a frame refused on its registers.
    let mut m = good_frame();
    put_u64(m.at(SP), PSTATE_OFFSET, PSR_I_BIT);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let r = parse_fp_only(SP, &m, &mut frame);
    assert_eq!(r.sigmask, Some(Sigset::of(SIGUSR1)));
}

#[test]
fn reject_generic_record_rules() {
    // A record size that leaves the next offset unaligned.
    reject(|m| rec(m, 1120, ESR_MAGIC, 24), BadFrame::RecordMisaligned);
    // Records fill __reserved exactly: no room for the terminator's head.
    reject(
        |m| rec(m, 1120, ESR_MAGIC, 4096 - 528),
        BadFrame::NoRoomForHead,
    );
    reject(
        |m| rec(m, 1120, ESR_MAGIC, 4096 - 528 + 16),
        BadFrame::RecordOverrun,
    );
    reject(|m| rec(m, 1120, 0, 16), BadFrame::BadTerminator);
    reject(
        |m| rec(m, 1120, 0x1234_5678, 16),
        BadFrame::UnknownMagic(0x1234_5678),
    );
    reject(
        |m| rec(m, 1120, ESR_MAGIC, 4),
        BadFrame::RecordTooSmall(ESR_MAGIC),
    );
    reject(
        |m| rec(m, 1120, ESR_MAGIC, 0),
        BadFrame::RecordTooSmall(ESR_MAGIC),
    );
    reject(
        |m| rec(m, 1120, FPSIMD_MAGIC, 528),
        BadFrame::Duplicate(FPSIMD_MAGIC),
    );
    let all = ALL;
    for magic in [
        SVE_MAGIC,
        TPIDR2_MAGIC,
        ZA_MAGIC,
        ZT_MAGIC,
        FPMR_MAGIC,
        POE_MAGIC,
        GCS_MAGIC,
    ] {
        reject(|m| rec(m, 1120, magic, 16), BadFrame::FeatureAbsent(magic));
        reject_on(
            |m| {
                rec(m, 1120, magic, 16);
                rec(m, 1136, magic, 16);
            },
            &all,
            BadFrame::Duplicate(magic),
        );
    }
    // ZT needs SME2, not just SME; SVE records are fine with SME alone.
    let sme1 = SigFeatures {
        sme: true,
        ..FP_ONLY
    };
    reject_on(
        |m| rec(m, 1120, ZT_MAGIC, 80),
        &sme1,
        BadFrame::FeatureAbsent(ZT_MAGIC),
    );
    let mut m = good_frame();
    rec(&mut m, 1120, SVE_MAGIC, 16);
    assert_eq!(parse_with(&m, &sme1, 0), Ok(()));
    // Duplicate ESR records are ignored.
    let mut m = good_frame();
    rec(&mut m, 1120, ESR_MAGIC, 16);
    rec(&mut m, 1136, ESR_MAGIC, 16);
    assert_eq!(parse_with(&m, &FP_ONLY, 0), Ok(()));
}

#[test]
fn reject_fpsimd_rules() {
    // No fpsimd record at all.
    reject(|m| rec(m, 592, 0, 0), BadFrame::MissingFpsimd);
    // fpsimd present but of the wrong (aligned) size.
    reject(
        |m| {
            rec(m, 592, FPSIMD_MAGIC, 544);
            rec(m, 1136, 0, 0);
        },
        BadFrame::BadFpsimdSize,
    );
    // On a CPU without FP the record is refused and its absence is fine.
    let nofp = SigFeatures::default();
    reject_on(|_| {}, &nofp, BadFrame::FeatureAbsent(FPSIMD_MAGIC));
    let mut m = good_frame();
    rec(&mut m, 592, 0, 0);
    assert_eq!(parse_with(&m, &nofp, 0), Ok(()));
}

/// Put extra_context at 1120 pointing at a correct extra space holding `inner`, a list of
/// (magic, size) records, then a terminator.
fn with_extra(m: &mut Mem, inner: &[(u32, u32)]) {
    let datap = SP + 1168;
    let mut off = 0usize;
    for &(magic, size) in inner {
        rec(m, 1168 + off, magic, size);
        off += size as usize;
    }
    rec(m, 1168 + off, 0, 0);
    let size = (off + 16) as u32;
    rec(m, 1120, EXTRA_MAGIC, 32);
    put_u64(m.at(SP + 1128), 0, datap);
    put_u32(m.at(SP + 1136), 0, size);
    rec(m, 1152, 0, 0);
}

#[test]
fn extra_context_rules() {
    let mut m = good_frame();
    with_extra(&mut m, &[(SVE_MAGIC, 2208)]);
    assert_eq!(parse_with(&m, &ALL, SIGFRAME_MAXSZ), Ok(()));
    assert_eq!(
        parse_with(&m, &ALL, 100),
        Err(BadFrame::ExtraBufferTooSmall { needed: 2224 })
    );

    reject_on(
        |m| with_extra(m, &[(EXTRA_MAGIC, 32)]),
        &ALL,
        BadFrame::ExtraDuplicate,
    );
    reject(
        |m| {
            with_extra(m, &[]);
            put_u32(m.at(SP + 1124), 0, 16);
        },
        BadFrame::ExtraTooSmall,
    );
    reject(
        |m| {
            with_extra(m, &[]);
            put_u32(m.at(SP + 1152), 0, ESR_MAGIC);
        },
        BadFrame::ExtraNoTerminator,
    );
    reject(
        |m| {
            with_extra(m, &[]);
            put_u32(m.at(SP + 1156), 0, 16);
        },
        BadFrame::ExtraNoTerminator,
    );
    // extra_context as the very last thing in __reserved: no room for the terminator.
    reject(
        |m| {
            rec(m, 1120, ESR_MAGIC, 4096 - 528 - 32);
            rec(m, 4656, EXTRA_MAGIC, 32);
        },
        BadFrame::ExtraNoTerminator,
    );
    reject(
        |m| {
            with_extra(m, &[]);
            put_u64(m.at(SP + 1128), 0, SP + 1168 + 8);
        },
        BadFrame::ExtraMisaligned,
    );
    reject(
        |m| {
            with_extra(m, &[]);
            put_u32(m.at(SP + 1136), 0, 24);
        },
        BadFrame::ExtraMisaligned,
    );
    reject(
        |m| {
            with_extra(m, &[]);
            put_u64(m.at(SP + 1128), 0, SP + 4096);
        },
        BadFrame::ExtraBadDatap,
    );
    reject(
        |m| {
            with_extra(m, &[]);
            put_u32(m.at(SP + 1136), 0, (SIGFRAME_MAXSZ - 1168 + 16) as u32);
        },
        BadFrame::ExtraTooLarge,
    );
    // The largest allowed size is accepted as far as the size rule goes (the area then has no
    // terminator at its end, which is its own error).
    reject(
        |m| {
            with_extra(m, &[]);
            rec(m, 1168, ESR_MAGIC, (SIGFRAME_MAXSZ - 1168) as u32);
            put_u32(m.at(SP + 1136), 0, (SIGFRAME_MAXSZ - 1168) as u32);
        },
        BadFrame::NoRoomForHead,
    );
    // Extra space without its own terminator.
    reject(
        |m| {
            with_extra(m, &[(ESR_MAGIC, 16)]);
            put_u32(m.at(SP + 1136), 0, 16);
        },
        BadFrame::NoRoomForHead,
    );
    // Feature records in the extra space follow the same rules.
    reject(
        |m| with_extra(m, &[(SVE_MAGIC, 16)]),
        BadFrame::FeatureAbsent(SVE_MAGIC),
    );
    reject(
        |m| with_extra(m, &[(FPSIMD_MAGIC, 528)]),
        BadFrame::Duplicate(FPSIMD_MAGIC),
    );
    // The extra space cannot be read.
    let mut m = good_frame();
    with_extra(&mut m, &[]);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = vec![0u8; 64];
    let r = parse_sigreturn(
        SP,
        &mut |a, b| if a == SP { m.read(a, b) } else { Err(Efault) },
        &FP_ONLY,
        &mut frame,
        &mut extra_in(&mut extra, &mut |_, _| Err(Efault)),
    );
    assert_eq!(r.frame.err(), Some(BadFrame::Fault));
}

#[test]
fn garbage_frames_never_panic() {
    let mut rng = crate::util::rng::XorShift64(0x1234_5678_9abc_def0);
    let mut next = move || rng.next();
    let base = good_frame();
    for round in 0..3000 {
        let mut m = Mem {
            base: base.base,
            bytes: base.bytes.clone(),
        };
        if round % 3 == 0 {
            with_extra(&mut m, &[(SVE_MAGIC, 32)]);
        }
        for _ in 0..1 + next() % 6 {
            // Mostly hit record heads and extra_context fields.
            let off = if next() % 2 == 0 {
                1120 + (next() % 96) as usize
            } else {
                592 + (next() % 4096) as usize
            };
            m.bytes[off] = next() as u8;
        }
        let mut frame = [0u8; RT_SIGFRAME_SIZE];
        let mut extra = vec![0u8; (next() % 4096) as usize];
        let r = parse_sigreturn(
            SP,
            &mut |a, b| m.read(a, b),
            &ALL,
            &mut frame,
            &mut extra_in(&mut extra, &mut |a, b| m.read(a, b)),
        );
        if let Ok(s) = r.frame {
            let task = SigreturnTask {
                sve_vl: 32,
                sme_vl: 64,
                za_on: next() % 2 == 0,
                ..Default::default()
            };
            let _ = check_records(&s, &ALL, &task);
        }
    }
}

/// Every `emit` call: (offset, length).
fn emit_calls(d: &SigDelivery, plan: &DeliveryPlan, mem: &mut Mem) -> Vec<(usize, usize)> {
    let mut calls = Vec::new();
    let base = plan.base;
    d.emit(plan, &mut |off, b| {
        calls.push((off, b.len()));
        mem.write(base + off as u64, b);
        Ok(())
    })
    .unwrap();
    calls
}

#[test]
fn emit_writes_only_what_linux_writes() {
    let f = fixture(SA_SIGINFO);
    let d = delivery(&f, &[], None);
    let plan = d.plan().unwrap();
    let mut mem = Mem::new(plan.base, plan.image_len);
    mem.bytes.fill(0xEE);
    // Header, fpsimd and terminator in one piece; the frame record in another.
    assert_eq!(emit_calls(&d, &plan, &mut mem), [(0, 1136), (4688, 16)]);
    // The unused rest of __reserved keeps what the stack held.
    assert!(mem.bytes[1136..4688].iter().all(|&b| b == 0xEE));
    // What was written matches the zero-filled image.
    let mut img = vec![0; plan.image_len];
    d.write(&plan, &mut img).unwrap();
    assert_eq!(&mem.bytes[..1136], &img[..1136]);
    assert_eq!(&mem.bytes[4688..], &img[4688..]);
    // A failing writer is EFAULT.
    assert_eq!(d.emit(&plan, &mut |_, _| Err(Efault)), Err(Errno::EFAULT));
}

#[test]
fn payloads_go_out_in_place_and_their_padding_is_left_alone() {
    let f = fixture(SA_SIGINFO);
    // SVE live at VL 16: 562 bytes, 576 with padding; then tpidr2.
    let head = [16u8, 0, 0, 0, 0, 0, 0, 0];
    let regs = pattern(546);
    let tp = 0x77u64.to_le_bytes();
    let recs = [
        RecordSpec {
            magic: SVE_MAGIC,
            size: 576,
            body: &head,
            payload: &regs,
        },
        RecordSpec {
            magic: TPIDR2_MAGIC,
            size: 16,
            body: &tp,
            payload: &[],
        },
    ];
    let d = delivery(&f, &recs, Some(0x9200_0046));
    let plan = d.plan().unwrap();
    let mut mem = Mem::new(plan.base, plan.image_len);
    mem.bytes.fill(0xEE);
    // Header + fpsimd + esr + sve head, the payload, tpidr2 + terminator, frame record.
    assert_eq!(
        emit_calls(&d, &plan, &mut mem),
        [(0, 1152), (1152, 546), (1712, 32), (4688, 16)]
    );
    assert_eq!(get_u32(&mem.bytes, 1136), SVE_MAGIC);
    assert_eq!(get_u32(&mem.bytes, 1140), 576);
    assert_eq!(get_u16(&mem.bytes, 1144), 16);
    assert_eq!(&mem.bytes[1152..1698], &regs[..]);
    assert!(mem.bytes[1698..1712].iter().all(|&b| b == 0xEE));
    assert_eq!(get_u32(&mem.bytes, 1712), TPIDR2_MAGIC);
    assert_eq!(get_u64(&mem.bytes, 1720), 0x77);
    assert_eq!(get_u64(&mem.bytes, 1728), 0);
    // A body and payload larger than the record are refused.
    let big = [RecordSpec {
        magic: SVE_MAGIC,
        size: 32,
        body: &head,
        payload: &regs,
    }];
    let d = delivery(&f, &big, None);
    let plan = d.plan().unwrap();
    assert_eq!(d.emit(&plan, &mut |_, _| Ok(())), Err(Errno::EINVAL));
}

#[test]
fn sigreturn_reads_only_the_records_present() {
    // A frame whose memory ends after its last record still parses: the unused rest of
    // __reserved is never read.
    let full = good_frame();
    let short = Mem {
        base: SP,
        bytes: full.bytes[..1136].to_vec(),
    };
    let mut reads = Vec::new();
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let r = parse_sigreturn(
        SP,
        &mut |a, b| {
            reads.push((a - SP, b.len()));
            let end = (a - SP) as usize + b.len();
            // Bytes past the frame's end read as zero, as a fresh stack page would.
            let avail = short
                .bytes
                .len()
                .saturating_sub((a - SP) as usize)
                .min(b.len());
            b[..avail].copy_from_slice(&short.bytes[(a - SP) as usize..(a - SP) as usize + avail]);
            b[avail..].fill(0);
            assert!(end <= 1232, "read past the first piece: {end}");
            Ok(())
        },
        &FP_ONLY,
        &mut frame,
        &mut no_extra,
    );
    assert!(r.frame.is_ok());
    assert_eq!(reads, [(0, 1232)]);

    // A record reaching further in __reserved is read when the walk reaches it.
    let mut m = good_frame();
    rec(&mut m, 1120, ESR_MAGIC, 16);
    rec(&mut m, 1136, SVE_MAGIC, 2208);
    rec(&mut m, 3344, 0, 0);
    let mut reads = Vec::new();
    let r = parse_sigreturn(
        SP,
        &mut |a, b| {
            reads.push((a - SP, b.len()));
            m.read(a, b)
        },
        &ALL,
        &mut frame,
        &mut no_extra,
    );
    assert_eq!(r.frame.unwrap().sve.unwrap().len(), 2208);
    assert_eq!(reads, [(0, 1232), (1232, 592 + 3344 + 8 - 1232 - 592)]);
}

#[test]
fn extra_space_is_asked_for_once_with_its_size() {
    let mut m = good_frame();
    with_extra(&mut m, &[(SVE_MAGIC, 2208)]);
    let mut asked = Vec::new();
    let mut store = vec![0u8; 4096];
    let mut slot = Some(&mut store[..]);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let r = parse_sigreturn(
        SP,
        &mut |a, b| m.read(a, b),
        &ALL,
        &mut frame,
        &mut |a, len| {
            asked.push((a, len));
            let b = &mut slot.take().unwrap()[..len];
            m.read(a, b).map_err(|_| BadFrame::Fault)?;
            Ok(b)
        },
    );
    assert_eq!(r.frame.unwrap().extra, Some((SP + 1168, 2224)));
    assert_eq!(asked, [(SP + 1168, 2224)]);
    // When the memory cannot be had, the frame is refused.
    let r = parse_sigreturn(
        SP,
        &mut |a, b| m.read(a, b),
        &ALL,
        &mut frame,
        &mut |_, len| Err(BadFrame::ExtraBufferTooSmall { needed: len }),
    );
    assert_eq!(
        r.frame.err(),
        Some(BadFrame::ExtraBufferTooSmall { needed: 2224 })
    );
}

// ---- the SVE, ZA, ZT and TPIDR2 records against the task (check_records) ----

/// A vector record: head, `vl` (nregs for zt_context) and `flags`, then `size - 16` payload
/// bytes of a pattern.
fn vec_rec(magic: u32, size: usize, vl: u16, flags: u16) -> Vec<u8> {
    let mut r = pattern(size.max(16));
    r.truncate(size);
    let head = VecContextHead {
        magic,
        size: size as u32,
        vl,
        flags,
        __reserved: [0; 2],
    };
    let n = size.min(16);
    r[..n].copy_from_slice(&head.as_bytes()[..n]);
    r
}

const SME_ONLY: SigFeatures = SigFeatures {
    sme: true,
    sve: false,
    ..ALL
};

#[test]
fn sve_record_rules() {
    let (sve_vl, sme_vl) = (32, 64);
    let full = |vl: u32| sve_sig_context_size(vl / 16) as usize;
    // A header alone, not streaming, at the task's SVE VL: restore from fpsimd_context.
    let r = vec_rec(SVE_MAGIC, 16, 32, 0);
    assert_eq!(sve_record(&r, &ALL, sve_vl, sme_vl), Ok(None));
    // SVE registers: exactly Z, P and FFR, even from a record padded beyond them.
    for size in [full(32), full(32).next_multiple_of(16), full(32) + 64] {
        let r = vec_rec(SVE_MAGIC, size, 32, 0);
        assert_eq!(
            sve_record(&r, &ALL, sve_vl, sme_vl),
            Ok(Some((false, &r[16..16 + 546 * 2])))
        );
    }
    // Streaming state is checked against the SME VL.
    let r = vec_rec(SVE_MAGIC, full(64), 64, SVE_SIG_FLAG_SM);
    assert_eq!(
        sve_record(&r, &ALL, sve_vl, sme_vl),
        Ok(Some((true, &r[16..16 + 546 * 4])))
    );
    assert_eq!(
        sve_record(&r, &SME_ONLY, 0, sme_vl),
        Ok(Some((true, &r[16..16 + 546 * 4])))
    );
    // An SME-only system writes a zero-VL header for non-streaming state.
    let r = vec_rec(SVE_MAGIC, 16, 0, 0);
    assert_eq!(sve_record(&r, &SME_ONLY, 0, sme_vl), Ok(None));

    let reject = |r: &[u8], f: &SigFeatures, want: BadFrame| {
        assert_eq!(sve_record(r, f, sve_vl, sme_vl), Err(want), "{:?}", &r[..8]);
    };
    reject(&vec_rec(SVE_MAGIC, 8, 0, 0), &ALL, BadFrame::SveTooSmall);
    reject(&vec_rec(SVE_MAGIC, 12, 32, 0), &ALL, BadFrame::SveTooSmall);
    let sve_only = SigFeatures {
        sme: false,
        sme2: false,
        ..ALL
    };
    reject(
        &vec_rec(SVE_MAGIC, full(64), 64, SVE_SIG_FLAG_SM),
        &sve_only,
        BadFrame::SveStreamingWithoutSme,
    );
    // Either VL is wrong for the other kind of state, and any other VL too.
    reject(
        &vec_rec(SVE_MAGIC, 16, 64, 0),
        &ALL,
        BadFrame::SveVlMismatch,
    );
    reject(
        &vec_rec(SVE_MAGIC, full(32), 32, SVE_SIG_FLAG_SM),
        &ALL,
        BadFrame::SveVlMismatch,
    );
    reject(
        &vec_rec(SVE_MAGIC, 16, 48, 0),
        &ALL,
        BadFrame::SveVlMismatch,
    );
    reject(
        &vec_rec(SVE_MAGIC, 16, 64, SVE_SIG_FLAG_SM),
        &ALL,
        BadFrame::SveStreamingWithoutPayload,
    );
    for size in [32, full(32) - 1] {
        reject(
            &vec_rec(SVE_MAGIC, size, 32, 0),
            &ALL,
            BadFrame::SvePayloadTooSmall,
        );
    }
    // Flag bits other than SM are ignored.
    let r = vec_rec(SVE_MAGIC, 16, 32, 0xfffe);
    assert_eq!(sve_record(&r, &ALL, sve_vl, sme_vl), Ok(None));
}

#[test]
fn za_record_rules() {
    // A header alone turns ZA off; a payload is ZA's vl x vl bytes.
    assert_eq!(za_record(&vec_rec(ZA_MAGIC, 16, 32, 0), 32), Ok(None));
    let size = za_sig_context_size(2) as usize;
    assert_eq!(size, 16 + 32 * 32);
    for len in [size, size + 48] {
        let r = vec_rec(ZA_MAGIC, len, 32, 0);
        assert_eq!(za_record(&r, 32), Ok(Some(&r[16..16 + 1024])));
    }
    assert_eq!(
        za_record(&vec_rec(ZA_MAGIC, 8, 32, 0), 32),
        Err(BadFrame::ZaTooSmall)
    );
    assert_eq!(
        za_record(&vec_rec(ZA_MAGIC, 16, 64, 0), 32),
        Err(BadFrame::ZaVlMismatch)
    );
    assert_eq!(
        za_record(&vec_rec(ZA_MAGIC, size, 32, 0), 64),
        Err(BadFrame::ZaVlMismatch)
    );
    assert_eq!(
        za_record(&vec_rec(ZA_MAGIC, size - 16, 32, 0), 32),
        Err(BadFrame::ZaPayloadTooSmall)
    );
    assert_eq!(
        za_record(&vec_rec(ZA_MAGIC, 32, 32, 0), 32),
        Err(BadFrame::ZaPayloadTooSmall)
    );
    // The reserved half-words after vl are not looked at.
    assert_eq!(za_record(&vec_rec(ZA_MAGIC, 16, 32, 0xffff), 32), Ok(None));
}

#[test]
fn zt_record_rules() {
    let r = vec_rec(ZT_MAGIC, 80, 1, 0);
    assert_eq!(zt_record(&r, true), Ok(&r[16..80]));
    assert_eq!(zt_record(&r, false), Err(BadFrame::ZtWithoutZa));
    for size in [16, 64, 96, 144] {
        assert_eq!(
            zt_record(&vec_rec(ZT_MAGIC, size, 1, 0), true),
            Err(BadFrame::BadZtSize)
        );
    }
    for nregs in [0, 2] {
        assert_eq!(
            zt_record(&vec_rec(ZT_MAGIC, 80, nregs, 0), true),
            Err(BadFrame::BadZtNregs)
        );
    }
}

/// A frame of fpsimd plus these records, delivered and then parsed on a CPU with everything.
fn parse_records<'a>(recs: &[RecordSpec], frame: &'a mut [u8; RT_SIGFRAME_SIZE]) -> Sigreturn<'a> {
    let f = fixture(SA_SIGINFO);
    let d = delivery(&f, recs, None);
    let plan = d.plan().unwrap();
    let mut mem = Mem::new(plan.base, plan.image_len);
    d.write(&plan, mem.at(plan.base)).unwrap();
    parse_sigreturn(
        plan.base,
        &mut |a, b| mem.read(a, b),
        &ALL,
        frame,
        &mut no_extra,
    )
    .frame
    .unwrap()
}

#[test]
fn gcs_context_comes_right_after_the_fp_registers() {
    use crate::isa::gcs::{record_body, GcsState, Restore};
    let tp = 7u64.to_le_bytes();
    let body = record_body(0x7ff8, 1);
    let recs = [
        RecordSpec {
            magic: GCS_MAGIC,
            size: GCS_CONTEXT_SIZE,
            body: &body,
            payload: &[],
        },
        RecordSpec {
            magic: TPIDR2_MAGIC,
            size: 16,
            body: &tp,
            payload: &[],
        },
    ];
    let on = GcsState {
        mode: 1,
        gcspr: 0x8000,
        ..GcsState::default()
    };
    let task = |gcs| SigreturnTask {
        sve_vl: 32,
        sme_vl: 32,
        gcs,
        ..Default::default()
    };
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let s = parse_records(&recs, &mut frame);
    // Kept on: the mode and GCSPR_EL0 to install, then TPIDR2.
    let r = check_records(&s, &ALL, &task(on)).unwrap();
    let want = Restore {
        mode: 1,
        gcspr: 0x7ff8,
    };
    assert_eq!((r.gcs, r.tpidr2), (Some(want), Some(7)));
    // Turning GCS on from a frame is refused after the FP registers, before TPIDR2.
    let e = check_records(&s, &ALL, &task(GcsState::default())).unwrap_err();
    assert_eq!(e.error, BadFrame::BadGcs);
    assert_eq!(
        e.done,
        FpRecords {
            fp: Some(FpRestore::Fpsimd),
            ..FpRecords::default()
        }
    );
}

#[test]
fn check_records_restores_every_record() {
    let (sve_vl, sme_vl) = (32u32, 32u32);
    let sve_regs = pattern(546 * 2);
    let za_regs = pattern(32 * 32);
    let zt_regs = pattern(64);
    let sve_head = [32, 0, 0, 0, 0, 0, 0, 0];
    let za_head = [32, 0, 0, 0, 0, 0, 0, 0];
    let zt_head = [1, 0, 0, 0, 0, 0, 0, 0];
    let tpidr2 = 0x1122_3344_5566_7788u64.to_le_bytes();
    let fpmr = 0x3f_ff7f_c1c0u64.to_le_bytes();
    let recs = [
        RecordSpec {
            magic: SVE_MAGIC,
            size: sve_sig_context_size(2).next_multiple_of(16),
            body: &sve_head,
            payload: &sve_regs,
        },
        RecordSpec {
            magic: TPIDR2_MAGIC,
            size: 16,
            body: &tpidr2,
            payload: &[],
        },
        RecordSpec {
            magic: ZA_MAGIC,
            size: za_sig_context_size(2),
            body: &za_head,
            payload: &za_regs,
        },
        RecordSpec {
            magic: ZT_MAGIC,
            size: zt_sig_context_size(1),
            body: &zt_head,
            payload: &zt_regs,
        },
        RecordSpec {
            magic: FPMR_MAGIC,
            size: FPMR_CONTEXT_SIZE,
            body: &fpmr,
            payload: &[],
        },
    ];
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let s = parse_records(&recs, &mut frame);
    let task = SigreturnTask {
        sve_vl,
        sme_vl,
        za_on: false,
        ..Default::default()
    };
    let r = check_records(&s, &ALL, &task).unwrap();
    let sve = FpRestore::Sve {
        streaming: false,
        regs: &sve_regs[..],
    };
    assert_eq!(r.fp, Some(sve));
    assert_eq!(r.za, Some(Some(&za_regs[..])));
    assert_eq!(r.zt0, Some(&zt_regs[..]));
    assert_eq!(r.tpidr2, Some(0x1122_3344_5566_7788));
    assert_eq!(r.fpmr, Some(0x3f_ff7f_c1c0));

    // The same frame from a task at other VLs: the first record checked (sve) refuses it and
    // nothing is restored.
    let other = SigreturnTask {
        sve_vl: 64,
        sme_vl: 64,
        za_on: false,
        ..Default::default()
    };
    assert_eq!(
        check_records(&s, &ALL, &other),
        Err(PartialRestore {
            done: FpRecords::default(),
            error: BadFrame::SveVlMismatch
        })
    );
    // Only the SME VL differs: za refuses it, after the SVE registers, TPIDR2 and FPMR were
    // restored (Linux goes record by record: fp, gcs, tpidr2, fpmr, za, zt).
    let other = SigreturnTask { sme_vl: 64, ..task };
    assert_eq!(
        check_records(&s, &ALL, &other),
        Err(PartialRestore {
            done: FpRecords {
                fp: Some(sve),
                tpidr2: Some(0x1122_3344_5566_7788),
                za: None,
                zt0: None,
                fpmr: Some(0x3f_ff7f_c1c0),
                gcs: None,
            },
            error: BadFrame::ZaVlMismatch
        })
    );

    // No records beyond fpsimd: the FPSIMD registers and nothing more.
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let s = parse_records(&[], &mut frame);
    assert_eq!(
        check_records(&s, &ALL, &task),
        Ok(FpRecords {
            fp: Some(FpRestore::Fpsimd),
            ..FpRecords::default()
        })
    );
}

#[test]
fn zt_context_follows_the_za_state_after_the_za_step() {
    let zt_regs = pattern(64);
    let zt = RecordSpec {
        magic: ZT_MAGIC,
        size: zt_sig_context_size(1),
        body: &[1, 0, 0, 0, 0, 0, 0, 0],
        payload: &zt_regs,
    };
    let za_off = RecordSpec {
        magic: ZA_MAGIC,
        size: 16,
        body: &[32, 0, 0, 0, 0, 0, 0, 0],
        payload: &[],
    };
    let task = |za_on| SigreturnTask {
        sve_vl: 32,
        sme_vl: 32,
        za_on,
        ..Default::default()
    };
    // No za_context: PSTATE.ZA stays as the task has it (a handler may have turned ZA on).
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let s = parse_records(&[zt], &mut frame);
    let r = check_records(&s, &ALL, &task(true)).unwrap();
    assert_eq!((r.za, r.zt0), (None, Some(&zt_regs[..])));
    assert_eq!(
        check_records(&s, &ALL, &task(false)).map_err(|p| p.error),
        Err(BadFrame::ZtWithoutZa)
    );
    // A header-only za_context turns ZA off first, whatever the task had.
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let s = parse_records(&[za_off, zt], &mut frame);
    let e = check_records(&s, &ALL, &task(true)).unwrap_err();
    assert_eq!((e.error, e.done.za), (BadFrame::ZtWithoutZa, Some(None)));
}

#[test]
fn check_records_rejects_each_bad_record() {
    let za_off = [32, 0, 0, 0, 0, 0, 0, 0];
    let tp = 7u64.to_le_bytes();
    let spec = |magic, size, body: &'static [u8]| RecordSpec {
        magic,
        size,
        body,
        payload: &[],
    };
    let task32 = SigreturnTask {
        sve_vl: 32,
        sme_vl: 32,
        za_on: false,
        ..Default::default()
    };
    let cases: [(Vec<RecordSpec>, BadFrame); 6] = [
        // tpidr2_context and fpmr_context must be exactly 16 bytes.
        (vec![spec(TPIDR2_MAGIC, 32, &[])], BadFrame::BadTpidr2Size),
        (vec![spec(FPMR_MAGIC, 32, &[])], BadFrame::BadFpmrSize),
        // ZT0 without a za_context, or with ZA turned off by it.
        (vec![spec(ZT_MAGIC, 80, &[1, 0])], BadFrame::ZtWithoutZa),
        (
            vec![spec(ZA_MAGIC, 16, &[32, 0]), spec(ZT_MAGIC, 80, &[1, 0])],
            BadFrame::ZtWithoutZa,
        ),
        // A header-only sve_context at the wrong VL.
        (vec![spec(SVE_MAGIC, 16, &[16, 0])], BadFrame::SveVlMismatch),
        // A za_context too short for a payload at its VL.
        (
            vec![spec(ZA_MAGIC, 48, &[32, 0])],
            BadFrame::ZaPayloadTooSmall,
        ),
    ];
    for (i, (recs, want)) in cases.into_iter().enumerate() {
        let mut frame = [0u8; RT_SIGFRAME_SIZE];
        let s = parse_records(&recs, &mut frame);
        assert_eq!(
            check_records(&s, &ALL, &task32).map_err(|p| p.error),
            Err(want),
            "case {i}"
        );
    }
    // The good forms of the same records pass.
    let recs = [
        RecordSpec {
            magic: TPIDR2_MAGIC,
            size: 16,
            body: &tp,
            payload: &[],
        },
        RecordSpec {
            magic: ZA_MAGIC,
            size: 16,
            body: &za_off,
            payload: &[],
        },
    ];
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let s = parse_records(&recs, &mut frame);
    let r = check_records(&s, &ALL, &task32).unwrap();
    assert_eq!((r.tpidr2, r.za, r.zt0), (Some(7), Some(None), None));
}

#[test]
fn garbage_records_never_panic() {
    let mut rng = crate::util::rng::XorShift64(0x0fed_cba9_8765_4321);
    let mut next = move || rng.next();
    let vls = [0u32, 16, 32, 48, 64, 256, 0xffff];
    for _ in 0..20_000 {
        let len = (next() % 1200) as usize;
        let mut r = pattern(len);
        for b in r.iter_mut().take(16) {
            *b = next() as u8;
        }
        let sve_vl = vls[(next() % 7) as usize];
        let sme_vl = vls[(next() % 7) as usize];
        let _ = sve_record(&r, &ALL, sve_vl, sme_vl);
        let _ = za_record(&r, sme_vl);
        let _ = zt_record(&r, next() % 2 == 0);
    }
}

#[test]
fn esr_records_are_ignored_on_return() {
    // Any value, any size, anywhere: rt_sigreturn skips esr_context.
    let mut m = good_frame();
    rec(&mut m, 1120, ESR_MAGIC, 32);
    put_u64(m.at(SP + 1128), 0, u64::MAX);
    assert_eq!(parse_with(&m, &FP_ONLY, 0), Ok(()));
    let mut m = good_frame();
    rec(&mut m, 592, ESR_MAGIC, 16);
    rec(&mut m, 608, FPSIMD_MAGIC, 528);
    rec(&mut m, 1136, 0, 0);
    assert_eq!(parse_with(&m, &FP_ONLY, 0), Ok(()));
}

#[test]
fn sigmask_loses_sigkill_and_sigstop_even_for_a_bad_frame() {
    let mut m = good_frame();
    let raw = Sigset::of(SIGKILL)
        .union(Sigset::of(SIGSTOP))
        .union(Sigset::of(SIGUSR2));
    put_u64(m.at(SP), UC_SIGMASK_OFFSET, raw.0);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let r = parse_fp_only(SP, &m, &mut frame);
    assert_eq!(r.sigmask, Some(Sigset::of(SIGUSR2)));
    assert!(r.frame.is_ok());
    put_u64(m.at(SP), PSTATE_OFFSET, PSR_I_BIT);
    let r = parse_fp_only(SP, &m, &mut frame);
    assert_eq!(
        (r.sigmask, r.uc_stack, r.frame.err()),
        (Some(Sigset::of(SIGUSR2)), None, Some(BadFrame::BadPstate))
    );
}

#[test]
fn bad_frames_get_sigsegv_at_sp() {
    assert_eq!(
        bad_frame_siginfo(0x7fff_1230, true),
        Siginfo::fault(SIGSEGV, SEGV_ACCERR, 0x7fff_1230)
    );
    assert_eq!(
        bad_frame_siginfo(0x10, false),
        Siginfo::fault(SIGSEGV, SEGV_MAPERR, 0x10)
    );
}

#[test]
fn a_bad_frame_still_loads_the_registers() {
    // A frame whose checks fail after the registers were read: they are the frame's, and a
    // refused PSTATE is forced to EL0t with only NZCV kept.
    let mut m = good_frame();
    let pstate = PSR_I_BIT | PSR_NZCV_MASK | PSR_MODE32_BIT | 5;
    put_u64(m.at(SP), PSTATE_OFFSET, pstate);
    put_u64(m.at(SP), SP_OFFSET, 0x1234_5670);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let r = parse_fp_only(SP, &m, &mut frame);
    assert_eq!(r.frame.err(), Some(BadFrame::BadPstate));
    let regs = r.regs.unwrap();
    assert_eq!((regs.sp, regs.pstate), (0x1234_5670, PSR_NZCV_MASK));
    assert_eq!(regs.pc, get_u64(m.at(SP), PC_OFFSET));
    assert_eq!(regs.regs[7], get_u64(m.at(SP), REGS_OFFSET + 56));
    // A record the walk refuses: the registers were read before it.
    let mut m = good_frame();
    rec(&mut m, 1120, 0x1234, 16);
    let r = parse_fp_only(SP, &m, &mut frame);
    assert_eq!(r.frame.err(), Some(BadFrame::UnknownMagic(0x1234)));
    assert_eq!(r.regs.unwrap().sp, get_u64(m.at(SP), SP_OFFSET));
    // Misaligned SP: nothing read.
    let r = parse_fp_only(SP + 8, &m, &mut frame);
    assert_eq!((r.regs, r.sigmask), (None, None));
}

#[test]
fn unreadable_header_fields_read_as_zero() {
    // Nothing mapped at SP: every register zero, no mask.
    let m = Mem::new(0x9000_0000, 4096);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let r = parse_fp_only(SP, &m, &mut frame);
    assert_eq!(r.frame.err(), Some(BadFrame::Fault));
    assert_eq!((r.regs, r.sigmask), (Some(UserRegs::default()), None));
    // A frame 0x150 bytes below the end of a mapping: the mask and x0..x2 (x2 ends at 0x150)
    // are there, the rest reads as zero.
    let mut good = good_frame();
    let sp = 0x20_0000 - 0x150;
    let mut m = Mem::new(sp, 0x150);
    m.write(sp, &good.at(SP)[..0x150]);
    let r = parse_fp_only(sp, &m, &mut frame);
    let regs = r.regs.unwrap();
    assert_eq!(
        r.sigmask,
        Some(Sigset(get_u64(good.at(SP), UC_SIGMASK_OFFSET)).blockable())
    );
    assert_eq!(regs.regs[2], get_u64(good.at(SP), REGS_OFFSET + 16));
    assert_ne!(regs.regs[2], 0);
    assert_eq!((regs.regs[3], regs.sp, regs.pc, regs.pstate), (0, 0, 0, 0));
}

#[test]
fn at_minsigstksz_is_linux_boot_layout() {
    let sme1 = SigFeatures {
        sme2: false,
        fpmr: false,
        poe: false,
        gcs: false,
        ..ALL
    };
    let sme2 = SigFeatures { sme2: true, ..sme1 };
    // fpsimd and esr only: the 4688-byte frame, its frame record and 16 bytes of slack.
    assert_eq!(at_minsigstksz(0, 0, &FP_ONLY), 4720);
    assert_eq!(at_minsigstksz(64, 0, &sme1), 4720);
    // SVE at 256 bytes: the 8752-byte sve_context goes to the extra space (which starts at
    // 1184), then the terminator.
    assert_eq!(at_minsigstksz(256, 0, &sme1), 1184 + 8752 + 16 + 32);
    assert_eq!(at_minsigstksz(256, 0, &sme1), 9984);
    // SVE and SME at 256: tpidr2 and a header-only za_context (ZA is off at boot) — Linux
    // 7.3's 10016 on QEMU's -cpu max — and with SME2 the 80-byte zt_context too.
    assert_eq!(at_minsigstksz(256, 256, &sme1), 10016);
    assert_eq!(at_minsigstksz(256, 256, &sme2), 10016 + 80);
    // FPMR and GCS (QEMU 11.1's -cpu max): 16 and 32 bytes more, POE another 16.
    let qemu11 = SigFeatures {
        fpmr: true,
        gcs: true,
        ..sme2
    };
    assert_eq!(at_minsigstksz(256, 256, &qemu11), 10016 + 80 + 48);
    assert_eq!(at_minsigstksz(256, 256, &ALL), 10016 + 80 + 64);
    // Small lengths stay in __reserved: 4720 whatever is added.
    assert_eq!(at_minsigstksz(32, 32, &sme2), 4720);
    // An SME-only system sizes sve_context by the SME VL.
    assert_eq!(
        at_minsigstksz(0, 128, &sme2),
        at_minsigstksz(128, 128, &sme2)
    );
}

#[test]
fn extra_space_read_up_to_a_fault_is_enough_when_the_records_lie_before_it() {
    // extra_context says 64 KiB, but only the first `readable` bytes can be read (the stack
    // ends there): Linux walks record by record and never reaches the rest.
    let mut m = good_frame();
    with_extra(&mut m, &[(SVE_MAGIC, 2208)]);
    put_u32(m.at(SP + 1136), 0, 0x1_0000);
    let parse = |readable: usize| {
        let mut frame = [0u8; RT_SIGFRAME_SIZE];
        let mut store = vec![0u8; 0x1_0000];
        let mut slot = Some(&mut store[..]);
        parse_sigreturn(
            SP,
            &mut |a, b| m.read(a, b),
            &ALL,
            &mut frame,
            &mut |a, len| {
                let b = &mut slot.take().unwrap()[..len.min(readable)];
                m.read(a, b).map_err(|_| BadFrame::Fault)?;
                Ok(b)
            },
        )
        .frame
        .map(|f| f.sve.map(<[u8]>::len))
    };
    // The SVE record and the terminator after it are readable.
    assert_eq!(parse(2224), Ok(Some(2208)));
    // The terminator's head is not.
    assert_eq!(parse(2210), Err(BadFrame::Fault));
    // Nor is the end of the SVE record.
    assert_eq!(parse(2000), Err(BadFrame::Fault));
    // Nor the first head.
    assert_eq!(parse(4), Err(BadFrame::Fault));
}

// ---- rt_sigreturn's quick path (parse_in_place) against the general one ----

const TASK_32_64: SigreturnTask = SigreturnTask {
    sve_vl: 32,
    sme_vl: 64,
    za_on: false,
    gcs: crate::isa::gcs::GcsState {
        mode: 0,
        locked: 0,
        gcspr: 0,
        base: 0,
        size: 0,
    },
};

/// `parse_in_place` on `mem` at `sp`; when it takes the frame, `parse_sigreturn` and
/// `check_records` (whatever PSTATE.ZA the task has) must take it too and install the same
/// registers, mask, alternate stack, FP registers and records. Says whether it took it.
fn in_place_agrees(mem: &Mem, sp: u64, f: &SigFeatures, task: &SigreturnTask) -> bool {
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = vec![0u8; SIGFRAME_MAXSZ];
    let mut read = |a: u64, b: &mut [u8]| mem.read(a, b);
    let q = parse_in_place(
        sp,
        &mut |a, b| mem.read(a, b),
        f,
        task,
        &mut frame,
        &mut extra_in(&mut extra, &mut read),
    );
    let Some(q) = q else { return false };
    let mut frame2 = [0u8; RT_SIGFRAME_SIZE];
    let mut extra2 = vec![0u8; SIGFRAME_MAXSZ];
    let mut read2 = |a: u64, b: &mut [u8]| mem.read(a, b);
    let r = parse_sigreturn(
        sp,
        &mut |a, b| mem.read(a, b),
        f,
        &mut frame2,
        &mut extra_in(&mut extra2, &mut read2),
    );
    let s = r
        .frame
        .expect("the general path takes what the quick one takes");
    assert_eq!(r.sigmask, Some(q.sigmask));
    assert_eq!(r.regs, Some(q.user_regs()));
    assert_eq!(s.regs, q.user_regs());
    assert_eq!(r.uc_stack, Some(q.uc_stack));
    assert_eq!(s.fpsimd, q.fpsimd.to_state());
    assert_eq!(s.fpsimd.as_frame_bytes(), q.fpsimd);
    for za_on in [false, true] {
        let t = SigreturnTask { za_on, ..*task };
        assert_eq!(check_records(&s, f, &t), Ok(q.records));
    }
    true
}

/// A delivered frame with the records a task at these vector lengths has (`za`, `zt`: ZA and
/// ZT0 on, with payloads; `sve`: an SVE payload), in memory at its base.
fn usual_frame(sve_vl: u16, sme_vl: u16, sve: bool, za: bool, zt: bool) -> (Mem, u64) {
    let f = fixture(SA_SIGINFO);
    let (svq, zvq) = (u32::from(sve_vl) / 16, u32::from(sme_vl) / 16);
    let sve_regs = pattern(sve_sig_regs_size(svq) as usize);
    let za_regs = pattern(za_sig_regs_size(zvq) as usize);
    let zt_regs = pattern(64);
    let sve_head = u64::from(sve_vl).to_le_bytes();
    let za_head = u64::from(sme_vl).to_le_bytes();
    let zt_head = 1u64.to_le_bytes();
    let tpidr2 = 0x1122_3344_5566_7788u64.to_le_bytes();
    let fpmr = 0x3f_ff7f_c1c0u64.to_le_bytes();
    let mut recs = vec![RecordSpec {
        magic: SVE_MAGIC,
        size: if sve {
            sve_sig_context_size(svq).next_multiple_of(16)
        } else {
            16
        },
        body: &sve_head,
        payload: if sve { &sve_regs } else { &[] },
    }];
    recs.push(RecordSpec {
        magic: TPIDR2_MAGIC,
        size: 16,
        body: &tpidr2,
        payload: &[],
    });
    recs.push(RecordSpec {
        magic: ZA_MAGIC,
        size: if za { za_sig_context_size(zvq) } else { 16 },
        body: &za_head,
        payload: if za { &za_regs } else { &[] },
    });
    if zt {
        recs.push(RecordSpec {
            magic: ZT_MAGIC,
            size: zt_sig_context_size(1),
            body: &zt_head,
            payload: &zt_regs,
        });
    }
    recs.push(RecordSpec {
        magic: FPMR_MAGIC,
        size: 16,
        body: &fpmr,
        payload: &[],
    });
    let d = delivery(&f, &recs, Some(0x5600_0000));
    let plan = d.plan().unwrap();
    let mut mem = Mem::new(plan.base, plan.image_len);
    d.write(&plan, mem.at(plan.base)).unwrap();
    (mem, plan.base)
}

#[test]
fn in_place_takes_the_usual_frames() {
    assert!(in_place_agrees(&good_frame(), SP, &FP_ONLY, &TASK_32_64));
    for (sve_vl, sme_vl) in [(16, 16), (32, 64), (64, 64), (256, 256), (64, 256)] {
        let task = SigreturnTask {
            sve_vl: sve_vl.into(),
            sme_vl: sme_vl.into(),
            ..TASK_32_64
        };
        for (sve, za, zt) in [
            (false, false, false),
            (true, false, false),
            (false, true, false),
            (true, true, true),
        ] {
            let (m, sp) = usual_frame(sve_vl, sme_vl, sve, za, zt);
            assert!(
                in_place_agrees(&m, sp, &ALL, &task),
                "{sve_vl} {sme_vl} {sve} {za} {zt}"
            );
        }
    }
    // An SVE payload at VL 256 lies in the extra space.
    let (m, sp) = usual_frame(256, 256, true, false, false);
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let mut extra = vec![0u8; SIGFRAME_MAXSZ];
    let mut read = |a: u64, b: &mut [u8]| m.read(a, b);
    let task = SigreturnTask {
        sve_vl: 256,
        sme_vl: 256,
        ..TASK_32_64
    };
    let q = parse_in_place(
        sp,
        &mut |a, b| m.read(a, b),
        &ALL,
        &task,
        &mut frame,
        &mut extra_in(&mut extra, &mut read),
    )
    .unwrap();
    let sve_regs = pattern(sve_sig_regs_size(16) as usize);
    assert_eq!(
        q.records.fp,
        Some(FpRestore::Sve {
            streaming: false,
            regs: &sve_regs
        })
    );
    assert_eq!(q.records.tpidr2, Some(0x1122_3344_5566_7788));
    assert_eq!(q.records.za, Some(None));
    assert_eq!(q.fpsimd.to_state(), sample_fp());
}

/// What the quick path leaves to the general one, though the general one may take it.
#[test]
fn in_place_leaves_gcs_poe_and_a_lone_zt_to_the_general_path() {
    let f = fixture(SA_SIGINFO);
    for (magic, size, body) in [
        (GCS_MAGIC, 32, &[][..]),
        (POE_MAGIC, 16, &[7u8][..]),
        (ZT_MAGIC, 80, &[1u8][..]),
    ] {
        let recs = [RecordSpec {
            magic,
            size,
            body,
            payload: &[],
        }];
        let d = delivery(&f, &recs, None);
        let plan = d.plan().unwrap();
        let mut mem = Mem::new(plan.base, plan.image_len);
        d.write(&plan, mem.at(plan.base)).unwrap();
        assert!(!in_place_agrees(&mem, plan.base, &ALL, &TASK_32_64));
    }
    // Unreadable past the records: the general path reads no further, the quick one gives up.
    let (m, sp) = usual_frame(32, 64, false, false, false);
    let short = Mem {
        base: m.base,
        bytes: m.bytes[..RESERVED_OFFSET + 1024].to_vec(),
    };
    assert!(!in_place_agrees(&short, sp, &ALL, &TASK_32_64));
    assert_eq!(parse_with_at(&short, sp), Ok(()));
}

/// `parse_sigreturn` and `check_records` on a frame at `sp` (every feature, TASK_32_64).
fn parse_with_at(mem: &Mem, sp: u64) -> Result<(), BadFrame> {
    let mut frame = [0u8; RT_SIGFRAME_SIZE];
    let s = parse_sigreturn(
        sp,
        &mut |a, b| mem.read(a, b),
        &ALL,
        &mut frame,
        &mut no_extra,
    )
    .frame?;
    check_records(&s, &ALL, &TASK_32_64)
        .map(|_| ())
        .map_err(|p| p.error)
}

/// Random damage to good frames: whenever the quick path takes one, the general path takes it
/// and installs the same; it takes every undamaged one.
#[test]
fn in_place_agrees_with_the_general_path_on_damaged_frames() {
    let mut rng = crate::util::rng::XorShift64(0x0bad_f00d_1234_5678);
    let mut next = move || rng.next();
    let bases = [
        (usual_frame(32, 64, false, false, false), TASK_32_64),
        (usual_frame(32, 64, true, true, true), TASK_32_64),
        (
            usual_frame(256, 256, true, true, true),
            SigreturnTask {
                sve_vl: 256,
                sme_vl: 256,
                ..TASK_32_64
            },
        ),
    ];
    let mut taken = 0;
    for round in 0..3000 {
        let ((base, sp), task) = &bases[round % bases.len()];
        let mut m = Mem {
            base: base.base,
            bytes: base.bytes.clone(),
        };
        let edits = next() % 4;
        for _ in 0..edits {
            // Mostly record heads and the fields the checks read.
            let off = match next() % 4 {
                0 => 592 + (next() % 128) as usize,
                1 => 1120 + (next() % 96) as usize,
                2 => 272 + (next() % 48) as usize,
                _ => (next() % m.bytes.len() as u64) as usize,
            };
            m.bytes[off] = next() as u8;
        }
        let ok = in_place_agrees(&m, *sp, &ALL, task);
        assert!(ok || edits > 0, "round {round}");
        taken += usize::from(ok);
    }
    assert!(taken > 1000, "{taken}");
}
