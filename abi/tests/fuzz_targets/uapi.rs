//! Small structures and arguments system calls take from user space: clone3's clone_args,
//! sigaltstack's stack_t, rt_sigaction, iovecs, futex operations, timespecs, mmap
//! arguments, getdents64 records and trapped MRS instructions.

use super::util::Take;
use super::util::{FromSlice, ToBytes};
use std::vec;
use std::vec::Vec;
use svelt_abi::isa::cpu::{IdReg, IdRegs};
use svelt_abi::isa::hwcap::{self, Offer};
use svelt_abi::isa::idregs::{self, SysRegAccess};
use svelt_abi::uapi::errno::Errno;
use svelt_abi::uapi::fs::{self, Dirent64Writer, Iovec};
use svelt_abi::uapi::futex;
use svelt_abi::uapi::mm;
use svelt_abi::uapi::sched::{self, CloneArgs};
use svelt_abi::uapi::signal::*;
use svelt_abi::uapi::time::{Timespec, Timeval};

/// Dispatches on the first byte to one of the structures.
///
/// Asserts, per structure:
/// - clone_args: the fields are what copy_struct_from_user would give (bytes past the end of
///   a short struct read as zero, a partly supplied field keeps the bytes given), accepted
///   only with a known size and clone3's rules met, and the child SP is stack + size;
/// - sigaltstack: a new stack is refused exactly by Linux's rules, and what is reported
///   afterwards is what was set;
/// - rt_sigaction: unknown flags and SIGKILL/SIGSTOP in the mask are dropped, and the two
///   signals cannot be changed;
/// - iovec: the total equals a saturating sum clamped to MAX_RW_COUNT, with the count and
///   length limits;
/// - futex: decode accepts exactly the known commands with Linux's clock, bitset and count
///   rules, reads the timeout only where Linux does, and WAKE_OP computes what the uapi
///   says;
/// - timespec/timeval: validation and the nanosecond conversions agree;
/// - mmap: an accepted request is page-aligned, covers the length, and follows the flags;
/// - getdents64: every record the writer packs parses back, and parsing arbitrary bytes
///   stays inside them;
/// - MRS emulation: only reads of the ID space answer, and the answer does not depend on
///   the target register;
/// - core-file notes built from user strings (command name, argument block, mapped file
///   paths): pr_fname/pr_psargs stay NUL-terminated prefixes, and notes and NT_FILE parse
///   back to what was put in.
pub fn uapi(data: &[u8]) {
    let mut t = Take::new(data);
    match t.u8() % 10 {
        0 => clone3(t.rest()),
        1 => altstack(&mut t),
        2 => sigaction(&mut t),
        3 => iovec(t.rest()),
        4 => futex(&mut t),
        5 => time(&mut t),
        6 => mmap(&mut t),
        7 => dirent(&mut t),
        8 => mrs(&mut t),
        _ => core_notes(&mut t),
    }
}

fn clone3(b: &[u8]) {
    let b = &b[..b.len().min(200)];
    // copy_struct_from_user into the 88-byte struct.
    let mut k = [0u8; sched::CLONE_ARGS_SIZE_VER2];
    let n = b.len().min(k.len());
    k[..n].copy_from_slice(&b[..n]);
    let f = |i: usize| u64::from_le_bytes(k[8 * i..8 * i + 8].try_into().unwrap());
    let r = CloneArgs::from_clone3(b);
    if b.len() < sched::CLONE_ARGS_SIZE_VER0 {
        assert_eq!(r, Err(Errno::EINVAL));
        return;
    }
    if b.len() > sched::CLONE_ARGS_SIZE_VER2
        && b[sched::CLONE_ARGS_SIZE_VER2..].iter().any(|&c| c != 0)
    {
        assert_eq!(r, Err(Errno::E2BIG));
        return;
    }
    let want = CloneArgs {
        flags: f(0),
        pidfd: f(1),
        child_tid: f(2),
        parent_tid: f(3),
        exit_signal: f(4),
        stack: f(5),
        stack_size: f(6),
        tls: f(7),
        set_tid: f(8),
        set_tid_size: f(9),
        cgroup: f(10),
    };
    // clone3_args_valid and the copy checks, spelled out.
    let ok = want.set_tid_size <= sched::MAX_PID_NS_LEVEL
        && (want.set_tid == 0) == (want.set_tid_size == 0)
        && want.exit_signal <= 64
        && want.exit_signal & !0xff == 0
        && !(want.flags & sched::CLONE_INTO_CGROUP != 0
            && (want.cgroup > i32::MAX as u64 || b.len() < sched::CLONE_ARGS_SIZE_VER2))
        && want.flags & !(0xffff_ffff | sched::CLONE_CLEAR_SIGHAND | sched::CLONE_INTO_CGROUP) == 0
        && want.flags & (sched::CLONE_DETACHED | 0x7f) == 0
        && want.flags & (sched::CLONE_SIGHAND | sched::CLONE_CLEAR_SIGHAND)
            != sched::CLONE_SIGHAND | sched::CLONE_CLEAR_SIGHAND
        && !(want.flags & (sched::CLONE_THREAD | sched::CLONE_PARENT) != 0
            && want.exit_signal != 0)
        && (want.stack == 0) == (want.stack_size == 0);
    match r {
        Ok(a) => {
            assert!(ok, "clone3 accepted {want:?}");
            assert_eq!(a, want);
            let sp = a.child_sp();
            assert_eq!(
                sp,
                (a.stack != 0).then(|| a.stack.wrapping_add(a.stack_size))
            );
        }
        Err(e) => {
            assert_eq!(e, Errno::EINVAL);
            assert!(!ok, "clone3 refused {want:?}");
        }
    }
}

fn altstack(t: &mut Take) {
    let cur = AltStack {
        sp: t.u64() & 0xffff_ffff_f000,
        size: u64::from(t.u32()),
        flags: if t.bool() { SS_AUTODISARM } else { 0 },
    };
    let sp = if t.bool() {
        cur.sp.wrapping_add(u64::from(t.u16()))
    } else {
        t.u64()
    };
    let new = StackT::from_bytes(t.bytes(24));
    assert_eq!(StackT::from_bytes(&new.to_bytes()), new);
    let mut a = cur;
    let r = a.set(new, sp, MINSIGSTKSZ);
    let mode = new.ss_flags & !SS_AUTODISARM;
    let want = if cur.on_stack(sp) {
        Err(Errno::EPERM)
    } else if mode != 0 && mode != SS_ONSTACK && mode != SS_DISABLE {
        Err(Errno::EINVAL)
    } else if mode != SS_DISABLE && new.ss_size < MINSIGSTKSZ {
        Err(Errno::ENOMEM)
    } else {
        Ok(())
    };
    assert_eq!(r, want);
    if r.is_err() {
        assert_eq!(a, cur, "a refused sigaltstack changed the stack");
        return;
    }
    let rep = a.report(sp);
    if mode == SS_DISABLE {
        assert_eq!((rep.ss_sp, rep.ss_size), (0, 0));
        assert_eq!(rep.ss_flags & !SS_AUTODISARM, SS_DISABLE);
    } else {
        assert_eq!((rep.ss_sp, rep.ss_size), (new.ss_sp, new.ss_size));
        assert_eq!(rep.ss_flags & SS_AUTODISARM, new.ss_flags & SS_AUTODISARM);
        let top = a.frame_top(sp, SA_ONSTACK);
        if !a.on_stack(sp) && a.size != 0 {
            assert_eq!(top, new.ss_sp.wrapping_add(new.ss_size));
        } else {
            assert_eq!(top, sp);
        }
    }
    assert_eq!(a.saved().ss_flags, a.flags);
}

fn sigaction(t: &mut Take) {
    let sig = u32::from(t.u8());
    let size = if t.bool() { 8 } else { usize::from(t.u8()) };
    let raw = t.bytes(32);
    let act = (raw.len() == 32).then(|| Sigaction::from_bytes(raw));
    if let Some(a) = act {
        assert_eq!(&a.to_bytes()[..], raw);
    }
    let r = sigaction_check(sig, act, size);
    if size != 8 || !(1..=64).contains(&sig) {
        assert_eq!(r, Err(Errno::EINVAL));
        return;
    }
    match (act, r) {
        (None, r) => assert_eq!(r, Ok(None)),
        (Some(_), Err(e)) => {
            assert_eq!(e, Errno::EINVAL);
            assert!(sig == SIGKILL || sig == SIGSTOP);
        }
        (Some(a), Ok(Some(s))) => {
            assert!(sig != SIGKILL && sig != SIGSTOP);
            assert_eq!(s.sa_flags, a.sa_flags & UAPI_SA_FLAGS);
            assert_eq!((s.sa_handler, s.sa_restorer), (a.sa_handler, a.sa_restorer));
            assert!(!s.sa_mask.contains(SIGKILL) && !s.sa_mask.contains(SIGSTOP));
            assert_eq!(sigaction_report(&s), s);
            let m = s.handler_mask(sig, Sigset(a.sa_mask.0));
            assert!(!m.contains(SIGKILL) && !m.contains(SIGSTOP));
            assert_eq!(
                m.contains(sig),
                s.sa_flags & SA_NODEFER == 0 || a.sa_mask.contains(sig)
            );
        }
        (Some(_), Ok(None)) => panic!("a new action vanished"),
    }
}

fn iovec(b: &[u8]) {
    let iov: Vec<Iovec> = b.chunks_exact(16).map(Iovec::from_bytes).collect();
    for (v, c) in iov.iter().zip(b.chunks_exact(16)) {
        assert_eq!(&v.to_bytes()[..], c);
    }
    // Also a long array of the first entry, past UIO_MAXIOV.
    for list in [
        iov.clone(),
        vec![iov.first().copied().unwrap_or_default(); fs::UIO_MAXIOV + (b.len() % 2)],
    ] {
        let r = fs::iovec_total(&list);
        if list.len() > fs::UIO_MAXIOV || list.iter().any(|v| v.iov_len > i64::MAX as u64) {
            assert_eq!(r, Err(Errno::EINVAL));
        } else {
            let sum: u128 = list.iter().map(|v| u128::from(v.iov_len)).sum();
            assert_eq!(r, Ok(sum.min(fs::MAX_RW_COUNT as u128) as usize));
        }
    }
}

fn futex(t: &mut Take) {
    use futex::*;
    let op = t.u32();
    let (val, utime, val3) = (t.u32(), t.u64() as usize, t.u32());
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    let realtime = op & FUTEX_CLOCK_REALTIME != 0;
    let is_int = |v: u32| v <= i32::MAX as u32;
    match FutexOp::decode(op, val, utime, 0x2000, val3) {
        Ok(f) => {
            assert!(cmd <= FUTEX_LOCK_PI2 && cmd != FUTEX_FD);
            assert_eq!(f.private, op & FUTEX_PRIVATE_FLAG != 0);
            assert_eq!(f.clock_realtime, realtime);
            if realtime {
                assert!(matches!(cmd, 9 | 11 | 13));
            }
            match f.cmd {
                FutexCmd::Wait { val: v, bitset } => {
                    assert!(matches!(cmd, FUTEX_WAIT | FUTEX_WAIT_BITSET) && v == val);
                    assert_eq!(bitset, if cmd == FUTEX_WAIT { u32::MAX } else { val3 });
                    assert_ne!(bitset, 0);
                }
                FutexCmd::Wake { count, bitset } => {
                    assert!(count >= 1 && is_int(count));
                    assert_eq!(count, if is_int(val) { val.max(1) } else { 1 });
                    assert_ne!(bitset, 0);
                }
                FutexCmd::Requeue {
                    wake, requeue, cmp, ..
                } => {
                    assert_eq!((wake, requeue), (val, utime as u32));
                    assert!(is_int(wake) && is_int(requeue));
                    assert_eq!(cmp, (cmd == FUTEX_CMP_REQUEUE).then_some(val3));
                }
                FutexCmd::WakeOp { op: w, .. } => {
                    assert_eq!(FutexWakeOp::decode(val3), Ok(w));
                }
                FutexCmd::CmpRequeuePi { wake, requeue, .. } => {
                    assert!(is_int(wake) && is_int(requeue));
                }
                _ => assert!(matches!(cmd, 6 | 7 | 8 | 11 | 13)),
            }
        }
        Err(e) => {
            let enosys = cmd > FUTEX_LOCK_PI2
                || cmd == FUTEX_FD
                || (realtime && !matches!(cmd, 9 | 11 | 13))
                || (cmd == FUTEX_WAKE_OP && FutexWakeOp::decode(val3).is_err());
            assert_eq!(e, if enosys { Errno::ENOSYS } else { Errno::EINVAL });
            if !enosys {
                let bad_bitset = matches!(cmd, 9 | 10) && val3 == 0;
                let bad_count = matches!(cmd, 3 | 4 | 12) && !(is_int(val) && is_int(utime as u32));
                assert!(bad_bitset || bad_count, "op {op:#x} refused");
            }
        }
    }
    let timeout = FutexOp::timeout(op, utime);
    assert_eq!(
        timeout.is_some(),
        utime != 0 && matches!(cmd, 0 | 6 | 9 | 11 | 13)
    );

    let enc = t.u32();
    let old = t.u32();
    let opn = enc >> 28;
    let cmp = (enc >> 24) & 0xf;
    let mut arg = ((enc >> 12) & 0xfff) as i32;
    if arg & 0x800 != 0 {
        arg -= 0x1000;
    }
    let mut carg = (enc & 0xfff) as i32;
    if carg & 0x800 != 0 {
        carg -= 0x1000;
    }
    if opn & 8 != 0 {
        arg = 1i32.wrapping_shl(arg as u32 & 31);
    }
    let arg = arg as u32;
    let new = match opn & 7 {
        0 => Some(arg),
        1 => Some(old.wrapping_add(arg)),
        2 => Some(old | arg),
        3 => Some(old & !arg),
        4 => Some(old ^ arg),
        _ => None,
    };
    let o = old as i32;
    let hit = match cmp {
        0 => Some(o == carg),
        1 => Some(o != carg),
        2 => Some(o < carg),
        3 => Some(o <= carg),
        4 => Some(o > carg),
        5 => Some(o >= carg),
        _ => None,
    };
    let want = match (new, hit) {
        (Some(n), Some(h)) => Ok((n, h)),
        _ => Err(Errno::ENOSYS),
    };
    assert_eq!(FutexWakeOp::decode(enc).map(|w| w.apply(old)), want);
    let back = futex_op(opn, (enc >> 12) & 0xfff, cmp, enc & 0xfff);
    assert_eq!(back, enc);
}

fn time(t: &mut Take) {
    let ts = Timespec::from_bytes(t.bytes(16));
    assert_eq!(Timespec::from_bytes(&ts.to_bytes()), ts);
    let valid = ts.tv_sec >= 0 && (0..1_000_000_000).contains(&ts.tv_nsec);
    assert_eq!(ts.validate().is_ok(), valid);
    match ts.to_nanos() {
        Some(n) => {
            assert!(valid);
            let want = (ts.tv_sec as u128) * 1_000_000_000 + ts.tv_nsec as u128;
            assert_eq!(u128::from(n), want.min(u64::MAX as u128));
            if want <= u64::MAX as u128 {
                assert_eq!(Timespec::from_nanos(n), ts);
            }
        }
        None => assert!(!valid),
    }
    let tv = Timeval::from_bytes(t.bytes(16));
    assert_eq!(Timeval::from_bytes(&tv.to_bytes()), tv);
    let valid = tv.tv_sec >= 0 && (0..1_000_000).contains(&tv.tv_usec);
    assert_eq!(tv.is_valid(), valid);
    if let Some(n) = tv.to_nanos() {
        assert!(valid);
        let want = (tv.tv_sec as u128) * 1_000_000_000 + tv.tv_usec as u128 * 1000;
        assert_eq!(u128::from(n), want.min(u64::MAX as u128));
    }
}

fn mmap(t: &mut Take) {
    let addr = t.u64() as usize;
    let len = match t.u8() % 3 {
        0 => t.u64() as usize,
        1 => usize::from(t.u16()),
        _ => usize::MAX - usize::from(t.u8()),
    };
    let prot = t.u32();
    let flags = t.u32();
    let offset = if t.bool() {
        t.u64()
    } else {
        u64::from(t.u16()) << 12
    };
    let page = 4096usize;
    match mm::mmap_check(addr, len, prot, flags, offset, page) {
        Ok(r) => {
            assert!(len != 0 && offset.is_multiple_of(page as u64));
            assert!(r.len >= len && r.len.is_multiple_of(page) && r.len - len < page);
            assert!(offset.checked_add(r.len as u64).is_some());
            assert_eq!(r.addr, addr & !(page - 1));
            assert!(matches!(flags & 0xf, 1..=3));
            assert_eq!(r.shared, flags & 0xf != 2);
            assert_eq!(r.fixed, flags & mm::MAP_FIXED != 0);
            if r.fixed || r.noreplace {
                assert!(addr.is_multiple_of(page));
            }
            assert_eq!(r.anonymous, flags & mm::MAP_ANONYMOUS != 0);
            assert_eq!(r.offset, if r.anonymous { 0 } else { offset });
            assert_eq!(r.prot, prot);
        }
        Err(e) => assert!(matches!(
            e,
            Errno::EINVAL | Errno::ENOMEM | Errno::EOVERFLOW | Errno::EOPNOTSUPP
        )),
    }
    match mm::mprotect_prot_check(prot) {
        Ok(p) => assert_eq!(p, prot),
        Err(e) => assert_eq!(e, Errno::EINVAL),
    }
}

fn dirent(t: &mut Take) {
    let cap = usize::from(t.u16() % 2048);
    let raw = t.rest();
    // Arbitrary bytes: a record, if any, lies inside them.
    let mut at = 0;
    while let Some((_, _, _, name, reclen)) = fs::dirent64_parse(&raw[at..]) {
        assert!(reclen >= 20 && at + reclen <= raw.len());
        assert!(19 + name.len() < reclen && !name.contains(&0));
        at += reclen;
    }
    // Names from the input packed by the writer parse back.
    let names: Vec<&[u8]> = raw.split(|&c| c == 0 || c == b'/').collect();
    let mut buf = vec![0u8; cap];
    let mut w = Dirent64Writer::new(&mut buf);
    let mut pushed = 0;
    for (i, n) in names.iter().enumerate() {
        if !w.push(i as u64 + 1, i as i64 * 7, (i % 15) as u8, n) {
            break;
        }
        pushed += 1;
    }
    assert_eq!(w.count(), pushed);
    let len = w.len();
    let fin = w.finish();
    if pushed == 0 && !names.is_empty() {
        assert_eq!(fin, Err(Errno::EINVAL));
    } else {
        assert_eq!(fin, Ok(len));
    }
    let mut at = 0;
    for (i, n) in names.iter().take(pushed).enumerate() {
        let (ino, off, ty, name, reclen) =
            fs::dirent64_parse(&buf[at..len]).expect("written record");
        assert_eq!(
            (ino, off, ty, name),
            (i as u64 + 1, i as i64 * 7, (i % 15) as u8, *n)
        );
        assert_eq!(reclen, fs::dirent64_reclen(n.len()));
        assert!(reclen.is_multiple_of(8));
        at += reclen;
    }
    assert_eq!(at, len);
}

fn mrs(t: &mut Take) {
    let insn = t.u32();
    let iss = t.u32();
    let mut r = IdRegs {
        midr: t.u64(),
        ..IdRegs::default()
    };
    for reg in IdReg::ALL {
        r.set(reg, t.u64());
    }
    let offer = Offer {
        sve: t.bool(),
        sme: t.bool(),
        cpuid: t.bool(),
        evtstrm: t.bool(),
        ptr_auth: t.bool(),
        bti: t.bool(),
        mte: t.bool(),
        gcs: t.bool(),
        poe: t.bool(),
        fpmr: t.bool(),
        ls64: t.bool(),
        mops: t.bool(),
    };
    // The hwcaps are decided on what EL0 sees.
    let view = idregs::user_view(&r, offer);
    assert_eq!(hwcap::hwcaps(&view, offer), hwcap::hwcaps(&r, offer));
    let accesses = [
        SysRegAccess::from_mrs_insn(insn),
        Some(SysRegAccess::from_iss(iss & 0x3f_ffff)),
    ];
    for a in accesses.into_iter().flatten() {
        let v = idregs::emulate(&a, &r, offer);
        if v.is_some() {
            assert!(a.read && offer.cpuid);
            assert_eq!((a.op0, a.op1, a.crn), (3, 0, 0));
        }
        for rt in [0u8, 17, 31] {
            let b = SysRegAccess { rt, ..a };
            assert_eq!(idregs::emulate(&b, &r, offer), v);
        }
    }
    if let Some(a) = SysRegAccess::from_mrs_insn(insn) {
        assert!(a.read && a.op0 >= 2);
        assert_eq!(a.rt as u32, insn & 31);
    }
}

fn core_notes(t: &mut Take) {
    use svelt_abi::format::coredump::*;
    use svelt_abi::util::bytes::{get_u32, get_u64};
    let n = usize::from(t.u8() % 32);
    let comm = t.bytes(n);
    let f = fname(comm);
    let n = comm.len().min(15);
    assert_eq!(&f[..n], &comm[..n]);
    assert!(f[n..].iter().all(|&c| c == 0));
    let n = usize::from(t.u8());
    let args = t.bytes(n);
    let a = psargs(args);
    assert_eq!(a[79], 0);
    let mut k = args.len().min(79);
    while k > 0 && args[k - 1] == 0 {
        k -= 1;
    }
    for i in 0..79 {
        let want = if i < k {
            if args[i] == 0 {
                b' '
            } else {
                args[i]
            }
        } else {
            0
        };
        assert_eq!(a[i], want);
    }
    // NT_FILE from paths in the input, separated by '\n'.
    let page = 4096;
    let names: Vec<&[u8]> = t.rest().split(|&c| c == b'\n').collect();
    let maps: Vec<FileMap> = names
        .iter()
        .enumerate()
        .map(|(i, n)| FileMap {
            start: 0x40_0000 + 0x1000 * i as u64,
            end: 0x40_1000 + 0x1000 * i as u64,
            pgoff: i as u64,
            name: n,
        })
        .collect();
    let len = file_note_len(&maps).unwrap();
    let mut desc = vec![0u8; len];
    assert!(put_file_note(&mut desc[..len - 1], &maps, page).is_none());
    put_file_note(&mut desc, &maps, page).unwrap();
    assert_eq!(get_u64(&desc, 0), maps.len() as u64);
    assert_eq!(get_u64(&desc, 8), page);
    let mut at = 16 + 24 * maps.len();
    for (i, m) in maps.iter().enumerate() {
        assert_eq!(get_u64(&desc, 16 + 24 * i), m.start);
        assert_eq!(get_u64(&desc, 32 + 24 * i), m.pgoff);
        assert_eq!(&desc[at..at + m.name.len()], m.name);
        assert_eq!(desc[at + m.name.len()], 0);
        at += m.name.len() + 1;
    }
    assert_eq!(at, len);
    // The whole note.
    let nt = NT_FILE;
    let name = note_name(nt);
    let size = note_size(name, len).unwrap();
    assert!(size.is_multiple_of(4));
    let mut out = vec![0xffu8; size + 4];
    assert_eq!(put_note(&mut out[..size - 1], name, nt, &desc), None);
    assert_eq!(put_note(&mut out, name, nt, &desc), Some(size));
    assert_eq!(get_u32(&out, 0) as usize, name.len() + 1);
    assert_eq!(get_u32(&out, 4) as usize, len);
    assert_eq!(get_u32(&out, 8), nt);
    assert_eq!(&out[12..12 + name.len()], name.as_bytes());
    let d = 12 + (name.len() + 1).next_multiple_of(4);
    assert_eq!(&out[d..d + len], &desc[..]);
    assert!(out[d + len..size].iter().all(|&c| c == 0));
    assert!(out[size..].iter().all(|&c| c == 0xff));
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut clone = vec![0u8];
    let mut args = [0u64; 11];
    args[0] = sched::CLONE_VM | sched::CLONE_FS | sched::CLONE_SETTLS;
    args[4] = 17;
    args[5] = 0x7000_0000;
    args[6] = 0x10000;
    for a in args {
        clone.extend_from_slice(&a.to_le_bytes());
    }
    let mut alt = vec![1u8];
    alt.extend_from_slice(&[0; 13]);
    alt.extend_from_slice(&StackT::new(0x7000_0000, 0, 0x4000).to_bytes());
    let mut act = vec![2u8, 10, 1];
    act.extend_from_slice(
        &Sigaction {
            sa_handler: 0x40_0000,
            sa_flags: SA_SIGINFO | SA_RESTORER | 0x400,
            sa_restorer: 0x40_1000,
            sa_mask: Sigset(u64::MAX),
        }
        .to_bytes(),
    );
    let mut iov = vec![3u8];
    for (b, l) in [(0x1000u64, 10u64), (0x2000, 0x7fff_ffff), (0, 1 << 63)] {
        iov.extend_from_slice(
            &Iovec {
                iov_base: b,
                iov_len: l,
            }
            .to_bytes(),
        );
    }
    let mut fut = vec![4u8];
    fut.extend_from_slice(&(9 | 128 | 256u32).to_le_bytes());
    fut.extend_from_slice(&1u32.to_le_bytes()); // val
    fut.extend_from_slice(&0u64.to_le_bytes()); // utime
    fut.extend_from_slice(&u32::MAX.to_le_bytes()); // val3
    fut.extend_from_slice(&futex::futex_op(1 | 8, 5, 2, 0x800).to_le_bytes());
    fut.extend_from_slice(&7u32.to_le_bytes());
    let mut tm = vec![5u8];
    tm.extend_from_slice(
        &Timespec {
            tv_sec: 5,
            tv_nsec: 999_999_999,
        }
        .to_bytes(),
    );
    tm.extend_from_slice(
        &Timeval {
            tv_sec: 1,
            tv_usec: 5,
        }
        .to_bytes(),
    );
    let mut mp = vec![6u8];
    mp.extend_from_slice(&0x1000u64.to_le_bytes());
    mp.push(1);
    mp.extend_from_slice(&5000u16.to_le_bytes());
    mp.extend_from_slice(&3u32.to_le_bytes());
    mp.extend_from_slice(&(mm::MAP_PRIVATE | mm::MAP_ANONYMOUS | mm::MAP_FIXED).to_le_bytes());
    mp.push(0);
    mp.extend_from_slice(&0u16.to_le_bytes());
    let mut de = vec![7u8];
    de.extend_from_slice(&256u16.to_le_bytes());
    de.extend_from_slice(b"hello/.\0..\0a-much-longer-name-than-the-others/x");
    let mut mr = vec![8u8];
    mr.extend_from_slice(&0xd538_0000u32.to_le_bytes()); // mrs x0, midr_el1
    mr.extend_from_slice(&(3u32 << 20 | 1 << 1 | 1).to_le_bytes());
    mr.extend_from_slice(&[0x11; 72]);
    mr.extend_from_slice(&[1, 1, 1]);
    let mut core = vec![9u8, 4];
    core.extend_from_slice(b"init");
    core.push(12);
    core.extend_from_slice(b"init\0-v\0arg\0\0");
    core.extend_from_slice(b"/init\n/lib/libc.so\n");
    vec![clone, alt, act, iov, fut, tm, mp, de, mr, core]
}
