use super::*;

#[test]
fn header_round_trip_and_layout() {
    let h = VecHeader {
        size: 0x1122_3344,
        max_size: 0x5566_7788,
        vl: 0x99aa,
        max_vl: 0xbbcc,
        flags: 0xddee,
        reserved: 0xff00,
    };
    let b = h.as_bytes();
    assert_eq!(&b[0..4], &0x1122_3344u32.to_le_bytes());
    assert_eq!(&b[4..8], &0x5566_7788u32.to_le_bytes());
    assert_eq!(&b[8..10], &0x99aau16.to_le_bytes());
    assert_eq!(&b[10..12], &0xbbccu16.to_le_bytes());
    assert_eq!(&b[12..14], &0xddeeu16.to_le_bytes());
    assert_eq!(&b[14..16], &0xff00u16.to_le_bytes());
    let decode = |d: &[u8]| VecHeader::read_from_prefix(d).ok().map(|(h, _)| h);
    assert_eq!(decode(b), Some(h));
    let mut long = [0u8; 40];
    long[..16].copy_from_slice(b);
    assert_eq!(decode(&long), Some(h));
    assert_eq!(decode(&b[..15]), None);
    assert_eq!(decode(&[]), None);
}

#[test]
fn flag_values() {
    assert_eq!(SVE_PT_VL_INHERIT, 2);
    assert_eq!(SVE_PT_VL_ONEXEC, 4);
    assert_eq!(ZA_PT_VL_INHERIT, 2);
    assert_eq!(ZA_PT_VL_ONEXEC, 4);
}

/// The table of spec §7.
#[test]
fn sve_and_za_sizes_per_vq() {
    let rows = [
        // vq, pregs, ffr, fpsr, fpcr, sve size, za size
        (1, 528, 560, 576, 580, 592, 272),
        (4, 2064, 2192, 2208, 2212, 2224, 4112),
        (16, 8208, 8720, 8752, 8756, 8768, 65552),
    ];
    for (vq, p, ffr, fpsr, fpcr, sz, za) in rows {
        assert_eq!(sve_pt_pregs_offset(vq), p, "vq {vq}");
        assert_eq!(sve_pt_ffr_offset(vq), ffr, "vq {vq}");
        assert_eq!(sve_pt_fpsr_offset(vq), fpsr, "vq {vq}");
        assert_eq!(sve_pt_fpcr_offset(vq), fpcr, "vq {vq}");
        assert_eq!(sve_pt_size(vq, SVE_PT_REGS_SVE), sz, "vq {vq}");
        assert_eq!(sve_pt_size(vq, SVE_PT_REGS_SVE | SVE_PT_VL_INHERIT), sz);
        assert_eq!(sve_pt_size(vq, SVE_PT_REGS_FPSIMD), 544);
        assert_eq!(sve_pt_size(vq, SVE_PT_VL_INHERIT), 544);
        assert_eq!(za_pt_size(vq), za, "vq {vq}");
        assert_eq!(sve_pt_zreg_offset(vq, 0), 16);
        assert_eq!(sve_pt_zreg_offset(vq, 31), 16 + 16 * vq * 31);
        assert_eq!(sve_regs_size(vq) + 16, ffr + 2 * vq);
    }
    // Every VQ: FPSR is 16-aligned and the size is a multiple of 16.
    for vq in 1..=16 {
        assert_eq!(sve_pt_fpsr_offset(vq) % 16, 0);
        assert_eq!(sve_pt_size(vq, SVE_PT_REGS_SVE) % 16, 0);
        assert!(sve_pt_fpsr_offset(vq) >= sve_pt_ffr_offset(vq) + 2 * vq);
    }
}

#[test]
fn regset_units_and_sizes() {
    let all = Caps {
        sve: true,
        sme: true,
        sme2: true,
        pauth: true,
        fpmr: true,
        gcs: true,
    };
    assert_eq!(info(NT_PRSTATUS, all), Some((8, 272)));
    assert_eq!(info(NT_PRFPREG, all), Some((4, 528)));
    assert_eq!(info(NT_ARM_TLS, all), Some((8, 16)));
    assert_eq!(info(NT_ARM_GCS, all), Some((8, 24)));
    assert_eq!(info(NT_ARM_HW_BREAK, all), Some((4, 264)));
    assert_eq!(info(NT_ARM_HW_WATCH, all), Some((4, 264)));
    assert_eq!(info(NT_ARM_SYSTEM_CALL, all), Some((4, 4)));
    assert_eq!(info(NT_ARM_SVE, all), Some((16, 8768)));
    assert_eq!(info(NT_ARM_SSVE, all), Some((16, 8768)));
    assert_eq!(info(NT_ARM_ZA, all), Some((16, 65552)));
    assert_eq!(info(NT_ARM_ZT, all), Some((64, 64)));
    assert_eq!(info(NT_ARM_PAC_MASK, all), Some((8, 16)));
    assert_eq!(info(NT_ARM_FPMR, all), Some((8, 8)));
    // NT_ARM_GCS (0x410): struct user_gcs, three u64s.
    assert_eq!(info(NT_ARM_GCS, all), Some((8, 24)));
    // NT_ARM_TAGGED_ADDR_CTRL (0x409): one long, on every arm64 system.
    assert_eq!(info(NT_ARM_TAGGED_ADDR_CTRL, all), Some((8, 8)));
    assert_eq!(info(NT_ARM_TAGGED_ADDR_CTRL, Caps::default()), Some((8, 8)));
    for nt in [0, 3, 4, 6, 0x400, 0x407, 0x408, 0x40a, 0x40f, 0x411] {
        assert_eq!(info(nt, all), None, "{nt:#x}");
    }
    // Linux's table: every regset's size rules, whether or not the CPU has it (a write's
    // buffer is range-checked before the regset says EINVAL).
    for nt in [0x407, 0x408, 0x40a, 0x40f] {
        assert!(layout(nt).is_some(), "{nt:#x}");
    }
    for nt in [NT_ARM_ZT, NT_ARM_FPMR, NT_ARM_GCS, NT_ARM_SVE, NT_ARM_ZA] {
        assert_eq!(layout(nt), info(nt, all), "{nt:#x}");
    }
    assert_eq!(layout(NT_ARM_POE), Some((8, 8)));
    for nt in [0, 3, 4, 6, 0x400, 0x411] {
        assert_eq!(layout(nt), None, "{nt:#x}");
    }
    let none = Caps::default();
    for nt in [
        NT_ARM_GCS,
        NT_ARM_SVE,
        NT_ARM_SSVE,
        NT_ARM_ZA,
        NT_ARM_ZT,
        NT_ARM_PAC_MASK,
        NT_ARM_FPMR,
    ] {
        assert_eq!(info(nt, none), None, "{nt:#x}");
    }
    assert!(info(NT_PRSTATUS, none).is_some());
    // SME without SVE: NT_ARM_SVE exists (to leave streaming mode); ZT needs SME2.
    let sme_only = Caps { sme: true, ..none };
    assert!(info(NT_ARM_SVE, sme_only).is_some());
    assert!(info(NT_ARM_ZA, sme_only).is_some());
    assert_eq!(info(NT_ARM_ZT, sme_only), None);
}

#[test]
fn copyin_takes_only_what_data_covers() {
    let mut f = [9u8; 4];
    copyin(&mut f, &[1, 2, 3, 4, 5, 6], 4);
    assert_eq!(f, [5, 6, 9, 9]);
    copyin(&mut f, &[1, 2], 4);
    assert_eq!(f, [5, 6, 9, 9], "nothing at that position");
    copyin(&mut f, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 2);
    assert_eq!(f, [3, 4, 5, 6]);
}

fn regs() -> UserRegs {
    let mut r = UserRegs::default();
    for (i, x) in r.regs.iter_mut().enumerate() {
        *x = 0x100 + i as u64;
    }
    r.sp = 0xfff0;
    r.pc = 0x40_0000;
    r.pstate = 0x6000_0000;
    r
}

#[test]
fn gpr_layout_and_partial_write() {
    let r = regs();
    let b = gpr_encode(&r);
    assert_eq!(get_u64(&b, 0), 0x100);
    assert_eq!(get_u64(&b, 240), 0x100 + 30);
    assert_eq!(get_u64(&b, 248), 0xfff0);
    assert_eq!(get_u64(&b, 256), 0x40_0000);
    assert_eq!(get_u64(&b, 264), 0x6000_0000);
    assert_eq!(gpr_decode(&b), r);
    // Only x0 written.
    let n = gpr_set(&r, &7u64.to_le_bytes(), false).unwrap();
    assert_eq!(n.regs[0], 7);
    assert_eq!(n.regs[1..], r.regs[1..]);
    assert_eq!((n.sp, n.pc, n.pstate), (r.sp, r.pc, r.pstate));
    // Empty write changes nothing.
    assert_eq!(gpr_set(&r, &[], false).unwrap(), r);
}

#[test]
fn gpr_pstate_rule_is_sigreturns() {
    let r = regs();
    let with = |p: u64| {
        let mut b = gpr_encode(&r);
        put_u64(&mut b, 264, p);
        gpr_set(&r, &b, false)
    };
    // Raising the exception level, AArch32, any of D/A/I/F: refused.
    for p in [
        0x4, 0x5, 0x8, 0x9, 0xd, 0x10, 0x40, 0x80, 0x100, 0x200, 0x3c0,
    ] {
        assert_eq!(with(p), Err(Errno::EINVAL), "{p:#x}");
    }
    // NZCV, SSBS, BTYPE, TCO kept; RES0 bits (63:32, 27:26, 23:22, 20:13, 5) dropped.
    let ok = with(0xf000_0000 | (1 << 12) | (3 << 10) | (1 << 25) | (1 << 40) | 0x20).unwrap();
    assert_eq!(ok.pstate, 0xf000_0000 | (1 << 12) | (3 << 10) | (1 << 25));
    // SS follows the single-step state, whatever was written.
    assert_eq!(with(DBG_SPSR_SS).unwrap().pstate, 0);
    let mut b = gpr_encode(&r);
    put_u64(&mut b, 264, 0);
    assert_eq!(gpr_set(&r, &b, true).unwrap().pstate, DBG_SPSR_SS);
    // The same rule as sigreturn's.
    for p in [0u64, 0x3c5, 0x1234_5678_9abc_def0, 0x10, 0x2000_0000] {
        let q = p & !DBG_SPSR_SS;
        assert_eq!(
            with(q).ok().map(|r| r.pstate),
            crate::fp::sigframe::valid_user_pstate(q)
        );
    }
}

fn fp() -> FpsimdState {
    let mut f = FpsimdState::default();
    for (i, v) in f.vregs.iter_mut().enumerate() {
        *v = 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f00u128 + i as u128;
    }
    f.fpsr = 0x0800_0010;
    f.fpcr = 0x0300_0000;
    f
}

#[test]
fn fpsimd_layout_and_partial_write() {
    let f = fp();
    let b = fpsimd_encode(&f);
    assert_eq!(&b[16..32], &f.vregs[1].to_le_bytes());
    assert_eq!(get_u32(&b, 512), f.fpsr);
    assert_eq!(get_u32(&b, 516), f.fpcr);
    assert_eq!(&b[520..], &[0; 8]);
    assert_eq!(fpsimd_decode(&b), f);
    // 32 bytes: V0 and V1 only.
    let data = [0xaau8; 32];
    let n = fpsimd_set(&f, &data, 0);
    assert_eq!(n.vregs[0], u128::MAX / 255 * 0xaa);
    assert_eq!(n.vregs[1], u128::MAX / 255 * 0xaa);
    assert_eq!(n.vregs[2..], f.vregs[2..]);
    assert_eq!((n.fpsr, n.fpcr), (f.fpsr, f.fpcr));
    // At +16 (the SVE regset's FPSIMD payload), a full write.
    let mut full = [0u8; 16 + 528];
    full[16..].copy_from_slice(&fpsimd_encode(&fp()));
    assert_eq!(fpsimd_set(&FpsimdState::default(), &full, 16), fp());
}

#[test]
fn tls_and_syscall() {
    let b = tls_encode(0x1111, 0x2222);
    assert_eq!((get_u64(&b, 0), get_u64(&b, 8)), (0x1111, 0x2222));
    let mut d = [0u8; 16];
    put_u64(&mut d, 0, 0xaaaa);
    put_u64(&mut d, 8, 0xbbbb);
    assert_eq!(tls_set(1, 2, &d, true), (0xaaaa, 0xbbbb));
    assert_eq!(
        tls_set(1, 2, &d, false),
        (0xaaaa, 2),
        "no TPIDR2 without SME"
    );
    assert_eq!(tls_set(1, 2, &d[..8], true), (0xaaaa, 2), "one register");
    assert_eq!(tls_set(1, 2, &[], true), (1, 2));
    assert_eq!(syscall_set(64, &(-1i32).to_le_bytes()), -1);
    assert_eq!(syscall_set(64, &172i32.to_le_bytes()), 172);
    assert_eq!(syscall_set(64, &[]), 64);
}

#[test]
fn pac_mask_for_48_bit_va() {
    assert_eq!(pac_mask(48), 0x007f_0000_0000_0000);
    assert_eq!(pac_mask(52), 0x0070_0000_0000_0000);
    assert_eq!(pac_mask(39), 0x007f_ff80_0000_0000);
    let b = pac_mask_encode(48);
    assert_eq!(get_u64(&b, 0), 0x007f_0000_0000_0000);
    assert_eq!(get_u64(&b, 8), 0x007f_0000_0000_0000);
}

fn vt(streaming: bool, sve_format: bool, vl: u32, inherit: bool) -> VecTask {
    VecTask {
        streaming,
        sve_format,
        vl,
        max_vl: 256,
        inherit,
    }
}

#[test]
fn sve_get_decision_per_state() {
    use SvePayload as P;
    use VecMode::*;
    // mode, streaming, saved in SVE layout -> flags, payload, size (vl 64: vq 4)
    let cases = [
        (Sve, false, false, SVE_PT_REGS_FPSIMD, P::Fpsimd, 544),
        (Sve, false, true, SVE_PT_REGS_SVE, P::Sve, 2224),
        (Sve, true, true, SVE_PT_REGS_FPSIMD, P::None, 16),
        (Streaming, true, true, SVE_PT_REGS_SVE, P::Sve, 2224),
        (Streaming, false, false, SVE_PT_REGS_FPSIMD, P::None, 16),
        (Streaming, false, true, SVE_PT_REGS_FPSIMD, P::None, 16),
    ];
    for (mode, sm, fmt, flags, payload, size) in cases {
        let (h, p) = sve_header(mode, &vt(sm, fmt, 64, false));
        assert_eq!(
            (h.flags, p, h.size),
            (flags, payload, size),
            "{mode:?} {sm} {fmt}"
        );
        assert_eq!(h.vl, 64);
        assert_eq!(h.max_vl, 256);
        assert_eq!(h.max_size, 8768);
        assert_eq!(h.reserved, 0);
    }
    let (h, p) = sve_header(Sve, &vt(false, true, 32, true));
    assert_eq!(h.flags, SVE_PT_REGS_SVE | SVE_PT_VL_INHERIT);
    assert_eq!((h.size, p), (sve_pt_size(2, SVE_PT_REGS_SVE), P::Sve));
    let (h, _) = sve_header(Streaming, &vt(false, false, 32, true));
    assert_eq!((h.flags, h.size), (SVE_PT_VL_INHERIT, 16));
    // max_size follows the mode's maximum.
    let mut t = vt(true, true, 16, false);
    t.max_vl = 16;
    assert_eq!(sve_header(Streaming, &t).0.max_size, 592);
}

#[test]
fn sve_payload_round_trip() {
    for vq in [1u32, 3, 4, 16] {
        let n = sve_regs_size(vq) as usize;
        let regs: std::vec::Vec<u8> = (0..n).map(|i| (i % 251) as u8 + 1).collect();
        let size = sve_pt_size(vq, SVE_PT_REGS_SVE) as usize;
        let mut out = std::vec![0xeeu8; size];
        sve_payload_encode(&mut out, vq, &regs, 0x11, 0x22);
        assert_eq!(&out[16..16 + n], &regs[..]);
        let fpsr = sve_pt_fpsr_offset(vq) as usize;
        assert!(out[16 + n..fpsr].iter().all(|&b| b == 0), "gap is zero");
        assert_eq!(get_u32(&out, fpsr), 0x11);
        assert_eq!(get_u32(&out, fpsr + 4), 0x22);
        assert!(out[fpsr + 8..].iter().all(|&b| b == 0), "tail is zero");
        assert_eq!(&out[..16], &[0xee; 16], "header untouched");
        // Back: the gap is ignored.
        let mut data = out.clone();
        data[16 + n..fpsr].fill(0x5a);
        let mut back = std::vec![0u8; n];
        let (mut s, mut c) = (0, 0);
        sve_payload_decode(&data, vq, &mut back, &mut s, &mut c);
        assert_eq!((back, s, c), (regs, 0x11, 0x22));
    }
    // Partial: only Z0 given; the rest keeps what the caller put there.
    let mut regs = std::vec![0u8; 546];
    let (mut s, mut c) = (5, 6);
    let mut data = std::vec![0u8; 32];
    data[16..].fill(0x77);
    sve_payload_decode(&data, 1, &mut regs, &mut s, &mut c);
    assert_eq!(&regs[..16], &[0x77; 16]);
    assert!(regs[16..].iter().all(|&b| b == 0));
    assert_eq!((s, c), (5, 6));
}

fn hdr(vl: u16, flags: u16) -> [u8; 16] {
    zerocopy::transmute!(VecHeader {
        vl,
        flags,
        ..Default::default()
    })
}

#[test]
fn sve_set_parse_rules() {
    use VecMode::*;
    // Short header.
    for n in [0, 8, 15] {
        assert_eq!(
            sve_set_parse(Sve, &[0u8; 16][..n], true),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            sve_set_parse(Streaming, &[0u8; 16][..n], true),
            Err(Errno::EINVAL)
        );
    }
    // FPSIMD data into streaming mode.
    assert_eq!(
        sve_set_parse(Streaming, &hdr(32, SVE_PT_REGS_FPSIMD), true),
        Err(Errno::EINVAL)
    );
    // Flags other than REGS go to the VL rule, moved up 16 bits.
    let s = sve_set_parse(Sve, &hdr(32, SVE_PT_REGS_SVE | SVE_PT_VL_INHERIT), true).unwrap();
    assert_eq!(s.vl_arg, Some(32 | PR_SVE_VL_INHERIT));
    assert!(!s.fpsimd);
    let s = sve_set_parse(
        Streaming,
        &hdr(64, SVE_PT_REGS_SVE | SVE_PT_VL_ONEXEC),
        true,
    )
    .unwrap();
    assert_eq!(s.vl_arg, Some(64 | PR_SVE_SET_VL_ONEXEC));
    let s = sve_set_parse(Sve, &hdr(16, 0x80 | SVE_PT_REGS_FPSIMD), true).unwrap();
    assert_eq!(
        s.vl_arg,
        Some(16 | 0x80 << 16),
        "unknown flags are the VL rule's to refuse"
    );
    assert!(s.fpsimd);
    // VL 0: only with no SVE, to NT_ARM_SVE, FPSIMD, no flags.
    assert_eq!(sve_set_parse(Sve, &hdr(0, 0), true), Err(Errno::EINVAL));
    assert_eq!(sve_set_parse(Sve, &hdr(0, 0), false).unwrap().vl_arg, None);
    assert_eq!(
        sve_set_parse(Sve, &hdr(0, SVE_PT_VL_INHERIT), false),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        sve_set_parse(Sve, &hdr(0, SVE_PT_REGS_SVE), false),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        sve_set_parse(Streaming, &hdr(0, SVE_PT_REGS_SVE), false),
        Err(Errno::EINVAL)
    );
    // A VL for NT_ARM_SVE on a system without SVE.
    assert_eq!(
        sve_set_parse(Sve, &hdr(16, SVE_PT_REGS_SVE), false),
        Err(Errno::EINVAL)
    );
    assert!(sve_set_parse(Streaming, &hdr(16, SVE_PT_REGS_SVE), false).is_ok());
}

#[test]
fn payload_vl_check_only_with_data() {
    let mut d = std::vec![0u8; 64];
    d[..16].copy_from_slice(&hdr(64, 1));
    assert_eq!(payload_vl_check(&d[..16], 64, 2), Ok(()), "header only");
    assert_eq!(payload_vl_check(&d, 64, 4), Ok(()));
    assert_eq!(payload_vl_check(&d, 64, 2), Err(Errno::EIO));
    assert_eq!(payload_vl_check(&d, 48, 2), Err(Errno::EIO));
}

#[test]
fn za_header_and_set() {
    let h = za_header(32, 256, false, true);
    assert_eq!(
        (h.size, h.max_size, h.vl, h.max_vl, h.flags),
        (16 + 1024, 1040, 32, 256, 0)
    );
    let h = za_header(64, 128, true, false);
    assert_eq!((h.size, h.max_size, h.flags), (16, 4112, ZA_PT_VL_INHERIT));
    assert_eq!(za_set_parse(&[0u8; 15]), Err(Errno::EINVAL));
    let (h, arg) = za_set_parse(&hdr(32, ZA_PT_VL_INHERIT)).unwrap();
    assert_eq!((h.vl, arg), (32, 32 | PR_SVE_VL_INHERIT));
    let (_, arg) = za_set_parse(&hdr(32, 1)).unwrap();
    assert_eq!(
        arg,
        32 | 1 << 16,
        "no REGS bit here: the VL rule refuses it"
    );
    let mut d = std::vec![0u8; 16 + 256];
    d[..16].copy_from_slice(&hdr(16, 0));
    assert_eq!(za_set_action(&d[..16], 16, 2), Ok(ZaSet::Disable));
    assert_eq!(za_set_action(&d, 16, 1), Ok(ZaSet::Load));
    assert_eq!(za_set_action(&d, 16, 2), Err(Errno::EIO));
}

fn dbg() -> HwDebugInfo {
    // QEMU max: DebugVer 0xb? any; 6 breakpoints, 4 watchpoints.
    HwDebugInfo::from_dfr0(0x0030_5006, 48)
}

fn slot_bytes(addr: u64, ctrl: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    put_u64(&mut b, 0, addr);
    put_u32(&mut b, 8, ctrl);
    b
}

fn write(d: &mut HwDebug, nt: u32, slots: &[(u64, u32)]) -> Result<(), Errno> {
    let mut data = std::vec![0u8; 8];
    for &(a, c) in slots {
        data.extend_from_slice(&slot_bytes(a, c));
    }
    d.set(nt, &data, &dbg())
}

#[test]
fn hw_debug_info_from_dfr0() {
    let i = dbg();
    assert_eq!((i.debug_arch, i.brps, i.wrps), (6, 6, 4));
    assert_eq!(i.task_size, 1 << 48);
    assert_eq!(i.dbg_info(NT_ARM_HW_BREAK), 0x606);
    assert_eq!(i.dbg_info(NT_ARM_HW_WATCH), 0x604);
    let d = HwDebug::default();
    let b = d.encode(NT_ARM_HW_WATCH, &i);
    assert_eq!(get_u32(&b, 0), 0x604);
    assert!(b[4..].iter().all(|&x| x == 0), "no slot written yet");
}

#[test]
fn hw_breakpoint_set_and_get() {
    let i = dbg();
    let mut d = HwDebug::default();
    // Enabled execute breakpoint, 4 bytes, EL0: ctrl = len 0xf << 5 | EL0 2 << 1 | 1.
    let ctrl = 0xf << 5 | 2 << 1 | 1;
    write(&mut d, NT_ARM_HW_BREAK, &[(0x40_1000, ctrl)]).unwrap();
    let b = d.encode(NT_ARM_HW_BREAK, &i);
    assert_eq!(get_u64(&b, 8), 0x40_1000);
    assert_eq!(get_u32(&b, 16), ctrl);
    assert_eq!(get_u32(&b, 20), 0);
    // The privilege written does not matter: user breakpoints are EL0.
    write(&mut d, NT_ARM_HW_BREAK, &[(0x40_1000, 0xf << 5 | 1)]).unwrap();
    assert_eq!(get_u32(&d.encode(NT_ARM_HW_BREAK, &i), 16), ctrl);
    // Disabling keeps the rest.
    write(&mut d, NT_ARM_HW_BREAK, &[(0x40_1000, 0)]).unwrap();
    assert_eq!(get_u32(&d.encode(NT_ARM_HW_BREAK, &i), 16), ctrl & !1);
    // A slot written disabled from scratch reads back with its defaults.
    let mut e = HwDebug::default();
    write(&mut e, NT_ARM_HW_WATCH, &[(0, 0)]).unwrap();
    let b = e.encode(NT_ARM_HW_WATCH, &i);
    assert_eq!(get_u32(&b, 16), 0xf << 5 | 3 << 3 | 2 << 1);
}

#[test]
fn hw_breakpoint_validation() {
    let mut d = HwDebug::default();
    let en = |len: u32, kind: u32| len << 5 | kind << 3 | 2 << 1 | 1;
    // Execute type only for breakpoints, load/store only for watchpoints.
    assert_eq!(
        write(&mut d, NT_ARM_HW_BREAK, &[(0x1000, en(0xf, 1))]),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        write(&mut d, NT_ARM_HW_WATCH, &[(0x1000, en(0xf, 0))]),
        Err(Errno::EINVAL)
    );
    for k in 1..=3 {
        assert_eq!(
            write(&mut d, NT_ARM_HW_WATCH, &[(0x1000, en(0xff, k))]),
            Ok(())
        );
    }
    // Byte select must be non-zero and contiguous.
    assert_eq!(
        write(&mut d, NT_ARM_HW_WATCH, &[(0x1000, en(0, 3))]),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        write(&mut d, NT_ARM_HW_WATCH, &[(0x1000, en(0x5, 3))]),
        Err(Errno::EINVAL)
    );
    // A shifted select moves the address: 2 bytes at +2 of an aligned doubleword.
    let mut w = HwDebug::default();
    write(&mut w, NT_ARM_HW_WATCH, &[(0x1000, en(0xc, 2))]).unwrap();
    let s = w.wpt[0].unwrap();
    assert_eq!((s.attr.addr, s.attr.len), (0x1002, 2));
    assert_eq!((s.address, s.ctrl.len), (0x1000, 0xc));
    // Unaligned watch address: aligned down, select shifted.
    let mut w = HwDebug::default();
    write(&mut w, NT_ARM_HW_WATCH, &[(0x1003, en(0x1, 1))]).unwrap();
    let s = w.wpt[0].unwrap();
    assert_eq!((s.address, s.ctrl.len), (0x1000, 0x8));
    // Breakpoint lengths other than 4 are made 4.
    let mut b = HwDebug::default();
    write(&mut b, NT_ARM_HW_BREAK, &[(0x1000, en(0x3, 0))]).unwrap();
    assert_eq!(b.brk[0].unwrap().ctrl.len, 0xf);
    // Kernel addresses: EINVAL, enabled or not.
    assert_eq!(
        write(&mut d, NT_ARM_HW_BREAK, &[(1 << 48, 0)]),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        write(
            &mut d,
            NT_ARM_HW_BREAK,
            &[(0xffff_0000_0000_1000, en(0xf, 0))]
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        write(&mut d, NT_ARM_HW_BREAK, &[((1 << 48) - 4, en(0xf, 0))]),
        Ok(())
    );
}

#[test]
fn hw_breakpoint_slots_and_short_writes() {
    let i = dbg();
    let mut d = HwDebug::default();
    // Six breakpoint slots: the seventh cannot be had.
    let six = [(0x1000, 0); 6];
    assert_eq!(write(&mut d, NT_ARM_HW_BREAK, &six), Ok(()));
    let seven = [(0x2000, 0); 7];
    assert_eq!(write(&mut d, NT_ARM_HW_BREAK, &seven), Err(Errno::ENOSPC));
    // Earlier slots took the write before the failure.
    assert_eq!(d.brk[5].unwrap().address, 0x2000);
    assert!(d.brk[6].is_none());
    // Only the info words: nothing happens.
    let mut e = HwDebug::default();
    assert_eq!(e.set(NT_ARM_HW_BREAK, &[0xffu8; 8], &i), Ok(()));
    assert_eq!(e, HwDebug::default());
    // A write ending inside an address: EINVAL.
    assert_eq!(e.set(NT_ARM_HW_BREAK, &[0u8; 12], &i), Err(Errno::EINVAL));
    // Address only, no ctrl: the address is set, the slot stays disabled.
    let mut data = std::vec![0u8; 16];
    put_u64(&mut data, 8, 0x3000);
    assert_eq!(e.set(NT_ARM_HW_BREAK, &data, &i), Ok(()));
    assert_eq!(e.brk[0].unwrap().address, 0x3000);
    assert!(!e.brk[0].unwrap().ctrl.enabled);
    // Without the trailing pad.
    let mut data = std::vec![0u8; 20];
    put_u64(&mut data, 8, 0x3000);
    put_u32(&mut data, 16, 0xf << 5 | 1);
    assert_eq!(e.set(NT_ARM_HW_BREAK, &data, &i), Ok(()));
    assert!(e.brk[0].unwrap().ctrl.enabled);
}

#[test]
fn hw_ctrl_encoding() {
    for reg in [0u32, 1, 0x1e5, 0x1fd, 0x1fff] {
        assert_eq!(HwCtrl::decode(reg).encode(), reg & 0x1fff);
    }
    let c = HwCtrl::decode(0xf << 5 | 3 << 3 | 2 << 1 | 1);
    assert_eq!((c.len, c.kind, c.privilege, c.enabled), (0xf, 3, 2, true));
}

#[test]
fn what_a_write_reads_before_checking() {
    // Headers first, then the payload.
    assert_eq!(read_before_check(NT_ARM_SVE, 8768), 16);
    assert_eq!(read_before_check(NT_ARM_ZA, 8), 8);
    // The debug registers slot by slot: a bad slot before the fault is EINVAL.
    assert_eq!(read_before_check(NT_ARM_HW_WATCH, 264), 0);
    // Everything else whole.
    for nt in [
        NT_PRSTATUS,
        NT_ARM_GCS,
        NT_ARM_ZT,
        NT_ARM_FPMR,
        NT_ARM_TAGGED_ADDR_CTRL,
    ] {
        assert_eq!(read_before_check(nt, 24), 24, "{nt:#x}");
    }
}
