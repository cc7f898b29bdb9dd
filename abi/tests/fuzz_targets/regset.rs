//! PTRACE_SETREGSET: every regset write, as the kernel's regset_request and regset::set drive
//! the parsers, over arbitrary payloads, headers, VLs and flags.

use super::util::{FromSlice, ToBytes};
use super::util::{Rng, Take};
use std::vec;
use std::vec::Vec;
use svelt_abi::fp::regset::*;
use svelt_abi::fp::sigframe::{valid_user_pstate, FpsimdState, UserRegs};
use svelt_abi::fp::vl::VlSet;
use svelt_abi::fp::vlctl::{self, TaskVl, VecKind};
use svelt_abi::uapi::errno::Errno;
use svelt_abi::util::bytes::{get_u32, get_u64};

/// Every note type the kernel knows, then a few it does not.
const NOTES: [u32; 14] = [
    NT_PRSTATUS,
    NT_PRFPREG,
    NT_ARM_TLS,
    NT_ARM_HW_BREAK,
    NT_ARM_HW_WATCH,
    NT_ARM_SYSTEM_CALL,
    NT_ARM_SVE,
    NT_ARM_PAC_MASK,
    NT_ARM_SSVE,
    NT_ARM_ZA,
    NT_ARM_ZT,
    NT_ARM_FPMR,
    svelt_abi::format::elf::NT_ARM_POE,
    0,
];

/// The VL state of one kind, consistent with the system as the kernel keeps it.
fn task_vl(kind: VecKind, set: VlSet, t: &mut Take) -> TaskVl {
    let (want, later, deferred, inherit) = (t.u8(), t.u8(), t.bool(), t.bool());
    let round = |v: u8| vlctl::find_supported_vector_length(kind, set, u32::from(v % 17) * 16);
    TaskVl {
        cur: round(want).unwrap_or(0),
        onexec: round(later).filter(|_| deferred).unwrap_or(0),
        inherit,
    }
}

/// The bytes of `data` that land in a field at `start..start+len` of the regset (a write
/// covers a prefix of the regset).
fn covered(data: &[u8], start: usize, len: usize) -> &[u8] {
    if start >= data.len() {
        &[]
    } else {
        &data[start..data.len().min(start + len)]
    }
}

/// A SETREGSET of note `nt` with the tracer's iov_len and payload.
///
/// Input: note selector, capability bits, iov_len, the SVE and SME VL sets, the task's VL
/// state and mode, then the payload.
///
/// Asserts: `info` gives a unit that divides the maximum; each write changes exactly the
/// bytes it covers (GPRs, FPSIMD, TLS, syscall number, SVE/ZA/ZT registers) and nothing
/// else; PSTATE comes out valid with SS as the single-step state says; a VL change follows
/// the prctl rules and a payload for another VL is refused with EIO; hardware breakpoint
/// slots stay in user space, EL0, inside the CPU's slot count, and what GETREGSET shows is
/// always accepted back; and an SVE/SSVE/ZA image built by the GET side writes back to the
/// same registers.
pub fn regset(data: &[u8]) {
    let mut t = Take::new(data);
    let sel = t.u8();
    let nt = if sel >= 0xf0 {
        t.u32()
    } else {
        NOTES[usize::from(sel) % NOTES.len()]
    };
    let cb = t.u8();
    let caps = Caps {
        sve: cb & 1 != 0,
        sme: cb & 2 != 0,
        sme2: cb & 6 == 6,
        pauth: cb & 8 != 0,
        fpmr: cb & 16 != 0,
        gcs: cb & 32 != 0,
    };
    let iov_len = usize::from(t.u16()) * if cb & 0x80 != 0 { 4 } else { 1 };
    // The VL sets as the kernel has them: empty without the extension, never empty with it.
    let mut sve_set = VlSet::from_bits(if caps.sve { t.u16() } else { 0 });
    if caps.sve && sve_set.is_empty() {
        sve_set.insert_bytes(16);
    }
    let mut sme_set = VlSet::from_bits(if caps.sme { t.u16() } else { 0 });
    if caps.sme && sme_set.is_empty() {
        sme_set.insert_bytes(32);
    }
    let sve_task = task_vl(VecKind::Sve, sve_set, &mut t);
    let sme_task = task_vl(VecKind::Sme, sme_set, &mut t);
    let mode_bits = t.u8();
    let mut rng = Rng(t.u64());
    let payload = t.rest();

    let Some((unit, max)) = info(nt, caps) else {
        return;
    };
    assert!(
        unit > 0 && max >= unit && max.is_multiple_of(unit),
        "{nt:#x}"
    );
    if !iov_len.is_multiple_of(unit) {
        return; // EINVAL in the kernel before anything is read
    }
    let n = iov_len.min(max);
    let mut data = vec![0u8; n];
    let k = n.min(payload.len());
    data[..k].copy_from_slice(&payload[..k]);
    let data = &data[..];

    match nt {
        NT_PRSTATUS => {
            let mut cur = UserRegs::default();
            for r in cur.regs.iter_mut() {
                *r = rng.next();
            }
            cur.sp = rng.next();
            cur.pc = rng.next();
            cur.pstate = rng.next() & (0xf000_0000 | DBG_SPSR_SS);
            let stepping = cur.pstate & DBG_SPSR_SS != 0;
            let before = gpr_encode(&cur);
            let mut want = before;
            let c = covered(data, 0, USER_PT_REGS_SIZE);
            want[..c.len()].copy_from_slice(c);
            let raw = get_u64(&want, 264);
            let raw = if stepping {
                raw | DBG_SPSR_SS
            } else {
                raw & !DBG_SPSR_SS
            };
            match gpr_set(&cur, data, stepping) {
                Ok(r) => {
                    let got = gpr_encode(&r);
                    assert_eq!(&got[..264], &want[..264]);
                    assert_eq!(Some(r.pstate), valid_user_pstate(raw));
                    assert_eq!(r.pstate & DBG_SPSR_SS != 0, stepping);
                    assert_eq!(gpr_decode(&got), r);
                }
                Err(e) => {
                    assert_eq!(e, Errno::EINVAL);
                    assert_eq!(valid_user_pstate(raw), None);
                }
            }
        }
        NT_PRFPREG => {
            let cur = random_fpsimd(&mut rng);
            let new = fpsimd_set(&cur, data, 0);
            let mut want = fpsimd_encode(&cur);
            let c = covered(data, 0, 520);
            want[..c.len()].copy_from_slice(c);
            assert_eq!(&fpsimd_encode(&new)[..520], &want[..520]);
            assert_eq!(fpsimd_decode(&fpsimd_encode(&new)), new);
        }
        NT_ARM_TLS => {
            let (tp, tp2) = (rng.next(), rng.next());
            let (a, b) = tls_set(tp, tp2, data, caps.sme);
            let mut want = tls_encode(tp, tp2);
            let c = covered(data, 0, 16);
            want[..c.len()].copy_from_slice(c);
            assert_eq!(a, get_u64(&want, 0));
            assert_eq!(b, if caps.sme { get_u64(&want, 8) } else { tp2 });
        }
        NT_ARM_SYSTEM_CALL => {
            let cur = rng.next() as i32;
            let mut want = cur.to_le_bytes();
            let c = covered(data, 0, 4);
            want[..c.len()].copy_from_slice(c);
            assert_eq!(syscall_set(cur, data), i32::from_le_bytes(want));
        }
        NT_ARM_HW_BREAK | NT_ARM_HW_WATCH => hw_debug(nt, data, &mut rng),
        NT_ARM_PAC_MASK => {
            // No setter; the mask is what a 48-bit VA leaves for the PAC.
            let m = pac_mask_encode(48);
            assert_eq!(get_u64(&m, 0), get_u64(&m, 8));
            assert_eq!(get_u64(&m, 0), ((1u64 << 55) - 1) & !((1u64 << 48) - 1));
        }
        NT_ARM_SVE | NT_ARM_SSVE => {
            let mode = if nt == NT_ARM_SVE {
                VecMode::Sve
            } else {
                VecMode::Streaming
            };
            let (kind, set, task) = match mode {
                VecMode::Sve => (VecKind::Sve, sve_set, sve_task),
                VecMode::Streaming => (VecKind::Sme, sme_set, sme_task),
            };
            sve_write(mode, kind, set, &task, caps.sve, data, &mut rng);
            sve_round_trip(mode, kind, set, &task, mode_bits, max, caps.sve, &mut rng);
        }
        NT_ARM_ZA => {
            za_write(sme_set, &sme_task, data, &mut rng);
            za_round_trip(sme_set, &sme_task, max, &mut rng);
        }
        NT_ARM_ZT => {
            // ZT0 takes the bytes the write covers (64 at most), after ZA's rows.
            let vl = sme_task.cur as usize;
            let mut buf: Vec<u8> = (0..vl * vl + 64).map(|_| rng.next() as u8).collect();
            let before = buf.clone();
            copyin(&mut buf[vl * vl..], data, 0);
            let c = covered(data, 0, 64);
            assert_eq!(&buf[vl * vl..vl * vl + c.len()], c);
            assert_eq!(&buf[vl * vl + c.len()..], &before[vl * vl + c.len()..]);
            assert_eq!(&buf[..vl * vl], &before[..vl * vl]);
        }
        _ => {}
    }
}

fn random_fpsimd(rng: &mut Rng) -> FpsimdState {
    let mut f = FpsimdState::default();
    for v in f.vregs.iter_mut() {
        *v = u128::from(rng.next()) << 64 | u128::from(rng.next());
    }
    f.fpsr = rng.next() as u32;
    f.fpcr = rng.next() as u32;
    f
}

/// The VL request a vector regset header makes, carried out as the kernel does (prctl rules).
fn apply_vl(kind: VecKind, arg: u64, set: VlSet, task: &TaskVl) -> Result<TaskVl, Errno> {
    let r = vlctl::set_vl(kind, arg, set, task)?;
    let onexec = arg & svelt_abi::uapi::sys::PR_SVE_SET_VL_ONEXEC != 0;
    match r.live_change {
        Some(vl) => {
            assert!(!onexec && vl != task.cur);
            assert!(set.contains_bytes(vl) || (kind == VecKind::Sve && vl == 16));
        }
        None => assert!(onexec || r.new.cur == task.cur),
    }
    Ok(r.new)
}

#[allow(clippy::too_many_arguments)]
fn sve_write(
    mode: VecMode,
    kind: VecKind,
    set: VlSet,
    task: &TaskVl,
    has_sve: bool,
    data: &[u8],
    rng: &mut Rng,
) {
    let s = match sve_set_parse(mode, data, has_sve) {
        Ok(s) => s,
        Err(e) => {
            assert_eq!(e, Errno::EINVAL);
            return;
        }
    };
    assert!(data.len() >= HEADER_SIZE);
    assert_eq!(
        Some(s.header),
        (data.len() >= 16).then(|| VecHeader::from_bytes(data))
    );
    assert_eq!(
        s.fpsimd,
        s.header.flags & SVE_PT_REGS_MASK == SVE_PT_REGS_FPSIMD
    );
    if s.fpsimd {
        assert_eq!(
            mode,
            VecMode::Sve,
            "FPSIMD data accepted for streaming mode"
        );
    }
    let task = match s.vl_arg {
        Some(arg) => {
            assert_eq!(arg & 0xffff, u64::from(s.header.vl));
            assert_ne!(s.header.vl, 0);
            match apply_vl(kind, arg, set, task) {
                Ok(t) => t,
                Err(_) => return,
            }
        }
        None => {
            // Only the bare FPSIMD write that leaves streaming mode on an SME-only system.
            assert!(!has_sve && mode == VecMode::Sve && s.header.vl == 0 && s.fpsimd);
            *task
        }
    };
    let vq = task.cur / 16;
    if s.fpsimd {
        let new = fpsimd_set(&FpsimdState::default(), data, HEADER_SIZE);
        let c = covered(data, HEADER_SIZE, 520);
        assert_eq!(&fpsimd_encode(&new)[..c.len()], c);
        assert!(fpsimd_encode(&new)[c.len()..].iter().all(|&b| b == 0));
        return;
    }
    match payload_vl_check(data, s.header.vl, vq) {
        Ok(()) => assert!(data.len() <= HEADER_SIZE || vq == u32::from(s.header.vl) / 16),
        Err(e) => {
            assert_eq!(e, Errno::EIO);
            assert!(data.len() > HEADER_SIZE && vq != u32::from(s.header.vl) / 16);
            return;
        }
    }
    assert!((1..=16).contains(&vq), "SVE payload at VQ {vq}");
    let n = sve_regs_size(vq) as usize;
    // The kernel's buffer is sized for the largest VL: only the first n bytes may change.
    let mut regs = vec![0u8; sve_regs_size(16) as usize];
    let (mut fpsr, mut fpcr) = (0u32, 0u32);
    let junk = rng.next();
    regs[n..].fill(junk as u8);
    sve_payload_decode(data, vq, &mut regs, &mut fpsr, &mut fpcr);
    let c = covered(data, HEADER_SIZE, n);
    assert_eq!(&regs[..c.len()], c);
    assert!(regs[c.len()..n].iter().all(|&b| b == 0));
    assert!(
        regs[n..].iter().all(|&b| b == junk as u8),
        "wrote past VQ's registers"
    );
    let mut ctl = [0u8; 8];
    let c = covered(data, sve_pt_fpsr_offset(vq) as usize, 8);
    ctl[..c.len()].copy_from_slice(c);
    assert_eq!((fpsr, fpcr), (get_u32(&ctl, 0), get_u32(&ctl, 4)));
}

/// GETREGSET of NT_ARM_SVE/SSVE at the task's VL, then SETREGSET of that image: the
/// registers come back unchanged and the VL stays.
#[allow(clippy::too_many_arguments)]
fn sve_round_trip(
    mode: VecMode,
    kind: VecKind,
    set: VlSet,
    task: &TaskVl,
    mode_bits: u8,
    max: usize,
    has_sve: bool,
    rng: &mut Rng,
) {
    if task.cur == 0 {
        return;
    }
    let sve_format = mode == VecMode::Streaming || mode_bits & 1 != 0;
    let vt = VecTask {
        streaming: mode == VecMode::Streaming,
        sve_format,
        vl: task.cur,
        max_vl: vlctl::max_vl(kind, set).unwrap(),
        inherit: task.inherit,
    };
    let (h, payload) = sve_header(mode, &vt);
    let vq = task.cur / 16;
    assert_eq!(h.vl as u32, task.cur);
    assert_eq!(h.max_size, sve_pt_size(vt.max_vl / 16, SVE_PT_REGS_SVE));
    assert!(h.size as usize <= max && h.max_size as usize <= max);
    assert_eq!(h.flags & SVE_PT_VL_INHERIT != 0, task.inherit);
    let mut img = vec![0u8; h.size as usize];
    img[..HEADER_SIZE].copy_from_slice(&h.to_bytes());
    let n = sve_regs_size(vq) as usize;
    let regs: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
    let (fpsr, fpcr) = (rng.next() as u32, rng.next() as u32);
    let fp = random_fpsimd(rng);
    match payload {
        SvePayload::Sve => {
            assert_eq!(h.size, sve_pt_size(vq, SVE_PT_REGS_SVE));
            sve_payload_encode(&mut img, vq, &regs, fpsr, fpcr);
        }
        SvePayload::Fpsimd => {
            assert_eq!(mode, VecMode::Sve);
            img[HEADER_SIZE..HEADER_SIZE + USER_FPSIMD_SIZE].copy_from_slice(&fpsimd_encode(&fp));
        }
        SvePayload::None => unreachable!("the requested mode is the active one"),
    }
    let s = sve_set_parse(mode, &img, has_sve).expect("GETREGSET output refused");
    let arg = s.vl_arg.expect("GETREGSET output has a VL");
    let t2 = vlctl::set_vl(kind, arg, set, task).expect("the task's own VL refused");
    assert_eq!(t2.live_change, None);
    assert_eq!(t2.new.cur, task.cur);
    if s.fpsimd {
        let got = fpsimd_set(&FpsimdState::default(), &img, HEADER_SIZE);
        assert_eq!(
            (got.vregs, got.fpsr, got.fpcr),
            (fp.vregs, fp.fpsr, fp.fpcr)
        );
        return;
    }
    payload_vl_check(&img, s.header.vl, vq).expect("GETREGSET output at the wrong VL");
    let mut back = vec![0u8; n];
    let (mut s1, mut c1) = (0, 0);
    sve_payload_decode(&img, vq, &mut back, &mut s1, &mut c1);
    assert_eq!(back, regs);
    assert_eq!((s1, c1), (fpsr, fpcr));
}

fn za_write(set: VlSet, task: &TaskVl, data: &[u8], rng: &mut Rng) {
    let (h, arg) = match za_set_parse(data) {
        Ok(v) => v,
        Err(e) => {
            assert_eq!(e, Errno::EINVAL);
            assert!(data.len() < HEADER_SIZE);
            return;
        }
    };
    assert_eq!(arg & 0xffff, u64::from(h.vl));
    assert_eq!(arg >> 16, u64::from(h.flags));
    let Ok(task) = apply_vl(VecKind::Sme, arg, set, task) else {
        return;
    };
    let vl = task.cur;
    match za_set_action(data, h.vl, vl / 16) {
        Ok(ZaSet::Disable) => assert!(data.len() <= HEADER_SIZE),
        Ok(ZaSet::Load) => {
            assert!(data.len() > HEADER_SIZE && vl / 16 == u32::from(h.vl) / 16);
            let n = (vl * vl) as usize;
            let mut za: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            let before = za.clone();
            copyin(&mut za, data, HEADER_SIZE);
            let c = covered(data, HEADER_SIZE, n);
            assert_eq!(&za[..c.len()], c);
            assert_eq!(&za[c.len()..], &before[c.len()..]);
        }
        Err(e) => {
            assert_eq!(e, Errno::EIO);
            assert!(data.len() > HEADER_SIZE && vl / 16 != u32::from(h.vl) / 16);
        }
    }
}

fn za_round_trip(set: VlSet, task: &TaskVl, max: usize, rng: &mut Rng) {
    if task.cur == 0 {
        return;
    }
    let vl = task.cur;
    let h = za_header(
        vl,
        vlctl::max_vl(VecKind::Sme, set).unwrap(),
        task.inherit,
        true,
    );
    assert_eq!(h.size, za_pt_size(vl / 16));
    assert!(h.size as usize <= max);
    let n = (vl * vl) as usize;
    let rows: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
    let mut img = vec![0u8; h.size as usize];
    img[..HEADER_SIZE].copy_from_slice(&h.to_bytes());
    img[HEADER_SIZE..].copy_from_slice(&rows);
    let (h2, arg) = za_set_parse(&img).unwrap();
    assert_eq!(h2, h);
    let t2 = apply_vl(VecKind::Sme, arg, set, task).expect("ZA GETREGSET output refused");
    assert_eq!(t2.cur, vl);
    assert_eq!(za_set_action(&img, h2.vl, vl / 16), Ok(ZaSet::Load));
    let mut za = vec![0u8; n];
    copyin(&mut za, &img, HEADER_SIZE);
    assert_eq!(za, rows);
    // Header only: ZA off.
    let off = za_header(vl, h.max_vl.into(), task.inherit, false);
    assert_eq!(off.size as usize, HEADER_SIZE);
    assert_eq!(
        za_set_action(&off.to_bytes(), off.vl, vl / 16),
        Ok(ZaSet::Disable)
    );
}

fn hw_debug(nt: u32, data: &[u8], rng: &mut Rng) {
    let dfr0 = rng.next();
    let info = HwDebugInfo::from_dfr0(dfr0, 48);
    let mut d = HwDebug::default();
    // Sometimes start from slots an earlier write set up.
    if rng.chance(2) {
        let mut pre = vec![0u8; USER_HWDEBUG_SIZE];
        for i in 0..ARM_MAX_BRP {
            let addr = rng.next() & 0xffff_ffff_ffff;
            let ctrl = rng.next() as u32 & 0x1ff;
            pre[8 + 16 * i..16 + 16 * i].copy_from_slice(&addr.to_le_bytes());
            pre[16 + 16 * i..20 + 16 * i].copy_from_slice(&ctrl.to_le_bytes());
        }
        let _ = d.set(nt, &pre, &info);
    }
    let other = if nt == NT_ARM_HW_BREAK {
        NT_ARM_HW_WATCH
    } else {
        NT_ARM_HW_BREAK
    };
    let other_before = d.encode(other, &info);
    let r = d.set(nt, data, &info);
    if let Err(e) = r {
        assert!(e == Errno::EINVAL || e == Errno::ENOSPC, "{e:?}");
    }
    assert_eq!(
        d.encode(other, &info),
        other_before,
        "a write touched the other note"
    );
    for (slots, count, brk) in [(&d.brk, info.brps, true), (&d.wpt, info.wrps, false)] {
        for (i, s) in slots.iter().enumerate() {
            let Some(s) = s else { continue };
            assert!(i < usize::from(count), "slot {i} beyond the CPU's {count}");
            let align = if s.ctrl.kind == 0 { 3 } else { 7 };
            assert_eq!(s.address & align, 0);
            assert!(s.address < info.task_size, "slot in kernel space");
            assert_eq!(s.ctrl.privilege, 2, "not an EL0 slot");
            assert!(s.ctrl.len != 0 && s.ctrl.len <= 0xff);
            assert!((1..=8).contains(&s.attr.len));
            if brk {
                assert_eq!(s.attr.kind, HW_BREAKPOINT_X);
            } else {
                assert!(matches!(s.attr.kind, 1..=3));
            }
            assert_eq!(s.ctrl.enabled, !s.attr.disabled);
            assert_eq!(HwCtrl::decode(s.ctrl.encode()), s.ctrl);
        }
    }
    // What GETREGSET shows for the CPU's slots is accepted back, unchanged where the slots
    // are enabled. (Slots past the CPU's count are ENOSPC, as on Linux.)
    let shown = d.encode(nt, &info);
    assert_eq!(get_u32(&shown, 0), info.dbg_info(nt));
    let count = usize::from(if nt == NT_ARM_HW_BREAK {
        info.brps
    } else {
        info.wrps
    });
    let mut again = d;
    again
        .set(nt, &shown[..8 + 16 * count], &info)
        .expect("GETREGSET output of the debug regs refused");
    let back = again.encode(nt, &info);
    for i in 0..count {
        let ctrl = get_u32(&shown, 16 + 16 * i);
        if ctrl & 1 != 0 {
            assert_eq!(
                &back[8 + 16 * i..24 + 16 * i],
                &shown[8 + 16 * i..24 + 16 * i]
            );
        }
    }
}

/// Seeds: one valid write per note type, with SVE and SME present.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, &nt) in NOTES.iter().enumerate().take(11) {
        let (unit, max) = info(
            nt,
            Caps {
                sve: true,
                sme: true,
                sme2: true,
                pauth: true,
                fpmr: true,
                gcs: true,
            },
        )
        .unwrap();
        let len = match nt {
            NT_ARM_SVE | NT_ARM_SSVE => sve_pt_size(4, SVE_PT_REGS_SVE) as usize,
            NT_ARM_ZA => za_pt_size(4) as usize,
            _ => max,
        };
        assert!(len.is_multiple_of(unit));
        let mut v = vec![i as u8, 0x07 | 0x08, 0, 0];
        v[2..4].copy_from_slice(&(len as u16).to_le_bytes());
        v.extend_from_slice(&0xffffu16.to_le_bytes()); // SVE: every VL
        v.extend_from_slice(&0x000bu16.to_le_bytes()); // SME: 16, 32, 64
        v.extend_from_slice(&[4, 0, 0, 0, 4, 0, 0, 0, 1]); // VLs 64, no onexec; mode bits
        v.extend_from_slice(&0x0123_4567_89ab_cdefu64.to_le_bytes());
        let mut body = vec![0u8; len];
        match nt {
            NT_ARM_SVE | NT_ARM_SSVE => {
                let h = VecHeader {
                    size: len as u32,
                    max_size: sve_pt_size(16, SVE_PT_REGS_SVE),
                    vl: 64,
                    max_vl: 256,
                    flags: SVE_PT_REGS_SVE,
                    reserved: 0,
                };
                body[..16].copy_from_slice(&h.to_bytes());
                for (k, b) in body[16..].iter_mut().enumerate() {
                    *b = k as u8;
                }
            }
            NT_ARM_ZA => {
                body[..16].copy_from_slice(&za_header(64, 64, false, true).to_bytes());
                for (k, b) in body[16..].iter_mut().enumerate() {
                    *b = (k * 7) as u8;
                }
            }
            NT_ARM_HW_BREAK | NT_ARM_HW_WATCH => {
                // Slot 0: an enabled 4-byte breakpoint / 8-byte watchpoint at 0x40_1000.
                body[8..16].copy_from_slice(&0x40_1000u64.to_le_bytes());
                let ctrl: u32 = if nt == NT_ARM_HW_BREAK {
                    0xf << 5 | 2 << 1 | 1
                } else {
                    0xff << 5 | 3 << 3 | 2 << 1 | 1
                };
                body[16..20].copy_from_slice(&ctrl.to_le_bytes());
            }
            _ => {
                for (k, b) in body.iter_mut().enumerate() {
                    *b = k as u8;
                }
                if nt == NT_PRSTATUS {
                    body[264..272].fill(0);
                }
            }
        }
        v.extend_from_slice(&body);
        out.push(v);
    }
    out
}
