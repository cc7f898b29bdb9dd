//! `Delivery::write` against `SigDelivery::emit`: the same bytes, the same untouched bytes, the
//! same handler registers and the same errors, over every mix of records.

use super::*;
use crate::uapi::signal::*;
use crate::util::rng::XorShift64 as Rng;
use std::vec;
use std::vec::Vec;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(7) ^ seed).collect()
}

/// Frame memory below `top`, filled with 0xEE; each writer's calls land in it.
struct Mem {
    base: u64,
    bytes: Vec<u8>,
    calls: Vec<(usize, usize)>,
}

impl Mem {
    fn new() -> Mem {
        Mem {
            base: 0,
            bytes: vec![0xEE; SIGFRAME_MAXSZ + 64],
            calls: Vec::new(),
        }
    }
    fn put(&mut self, off: usize, b: &[u8]) -> Result<(), Efault> {
        self.calls.push((off, b.len()));
        let dst = self.bytes.get_mut(off..off + b.len()).ok_or(Efault)?;
        dst.copy_from_slice(b);
        Ok(())
    }
}

struct Case {
    regs: UserRegs,
    fp: FpsimdState,
    info: Siginfo,
    act: Sigaction,
    sp_top: u64,
    esr: Option<u64>,
    gcs: Option<[u8; 24]>,
    sve: Option<(u16, u16, Option<Vec<u8>>)>,
    tpidr2: Option<u64>,
    za: Option<(u16, Option<Vec<u8>>)>,
    zt0: Option<[u8; 64]>,
    fpmr: Option<u64>,
    poe: Option<u64>,
}

fn case(r: &mut Rng) -> Case {
    let mut regs = UserRegs::default();
    for x in regs.regs.iter_mut() {
        *x = r.next();
    }
    regs.sp = r.next();
    regs.pc = r.next();
    regs.pstate = r.next();
    let mut fp = FpsimdState {
        fpsr: r.next() as u32,
        fpcr: r.next() as u32,
        ..FpsimdState::default()
    };
    for v in fp.vregs.iter_mut() {
        *v = u128::from(r.next()) << 64 | u128::from(r.next());
    }
    let mut info = Siginfo([0; 128]);
    for (i, b) in info.0.iter_mut().enumerate() {
        *b = i as u8 ^ 0x5a;
    }
    let vls = [16u16, 32, 64, 128, 256];
    let on = |r: &mut Rng| r.below(2) == 0;
    let sve = on(r).then(|| {
        let vl = vls[r.below(5) as usize];
        let payload = on(r).then(|| pattern(546 * usize::from(vl / 16), 1));
        (vl, r.below(2) as u16, payload)
    });
    let za = on(r).then(|| {
        let vl = vls[r.below(5) as usize];
        let payload = on(r).then(|| pattern(usize::from(vl) * usize::from(vl), 2));
        (vl, payload)
    });
    Case {
        regs,
        fp,
        info,
        act: Sigaction {
            sa_handler: r.next(),
            sa_flags: [0, SA_SIGINFO, SA_RESTORER, SA_SIGINFO | SA_RESTORER][r.below(4) as usize],
            sa_restorer: r.next(),
            sa_mask: Sigset::EMPTY,
        },
        // Mostly room for any frame; sometimes too little.
        sp_top: if r.below(8) == 0 {
            r.below(8192)
        } else {
            0x7fff_0000_0000 + r.below(1 << 20)
        },
        esr: on(r).then(|| r.next()),
        gcs: on(r).then(|| {
            let mut g = [0u8; 24];
            g.copy_from_slice(&pattern(24, 3));
            g
        }),
        sve,
        tpidr2: on(r).then(|| r.next()),
        za,
        zt0: on(r).then(|| {
            let mut z = [0u8; 64];
            z.copy_from_slice(&pattern(64, 4));
            z
        }),
        fpmr: on(r).then(|| r.next()),
        poe: on(r).then(|| r.next()),
    }
}

/// One writer's outcome: its result and the frame memory it left.
type Outcome = (Result<HandlerEntry, Errno>, Mem);

/// A record for the general writer that is all body.
fn small(magic: u32, size: u32, body: &[u8]) -> RecordSpec<'_> {
    RecordSpec {
        magic,
        size,
        body,
        payload: &[],
    }
}

/// A vector record for the general writer: the whole context (`whole` bytes) with a payload,
/// only its head (`head_only` bytes) without.
fn vec_spec<'a>(
    magic: u32,
    head: &'a [u8],
    payload: &'a Option<Vec<u8>>,
    whole: u32,
    head_only: u32,
) -> RecordSpec<'a> {
    RecordSpec {
        magic,
        size: if payload.is_some() { whole } else { head_only },
        body: head,
        payload: payload.as_deref().unwrap_or(&[]),
    }
}

/// The case's delivery for `Delivery::write`.
fn delivery(c: &Case) -> Delivery<'_> {
    Delivery {
        sp_top: c.sp_top,
        signo: SIGUSR1,
        info: &c.info,
        action: &c.act,
        uc_stack: StackT::new(0x1234_0000, SS_ONSTACK, 0x8000),
        sigmask: Sigset(0x1234_5678),
        regs: &c.regs,
        fault_address: 0xdead_beef,
        fpsimd: &c.fp,
        records: Records {
            esr: c.esr,
            gcs: c.gcs,
            sve: c.sve.as_ref().map(|(vl, flags, p)| VecRecord {
                vl: *vl,
                flags: *flags,
                payload: p.as_deref(),
            }),
            tpidr2: c.tpidr2,
            za: c.za.as_ref().map(|(vl, p)| VecRecord {
                vl: *vl,
                flags: 0,
                payload: p.as_deref(),
            }),
            zt0: c.zt0.as_ref(),
            fpmr: c.fpmr,
            poe: c.poe,
        },
        bti: false,
        sigtramp: 0xffff_0800,
    }
}

/// The same delivery for `SigDelivery::emit`, with its records given as `specs`.
fn general<'a>(d: &Delivery<'a>, specs: &'a [RecordSpec<'a>]) -> SigDelivery<'a> {
    SigDelivery {
        sp_top: d.sp_top,
        signo: d.signo,
        info: d.info,
        action: d.action,
        uc_stack: d.uc_stack,
        sigmask: d.sigmask,
        regs: d.regs,
        fault_address: d.fault_address,
        esr: d.records.esr,
        fpsimd: Some(d.fpsimd),
        records: specs,
        bti: d.bti,
        sigtramp: d.sigtramp,
    }
}

/// The case through both writers: (result, memory relative to the frame base).
fn both(c: &Case) -> (Outcome, Outcome) {
    let vec_head = |vl: u16, flags: u16| {
        let mut h = [0u8; 8];
        h[0..2].copy_from_slice(&vl.to_le_bytes());
        h[2..4].copy_from_slice(&flags.to_le_bytes());
        h
    };
    let gcs_body = c.gcs.unwrap_or_default();
    let sve_head = c.sve.as_ref().map_or([0; 8], |s| vec_head(s.0, s.1));
    let za_head = c.za.as_ref().map_or([0; 8], |z| vec_head(z.0, 0));
    let zt_head = vec_head(1, 0);
    let tp = c.tpidr2.unwrap_or(0).to_le_bytes();
    let fpmr = c.fpmr.unwrap_or(0).to_le_bytes();
    let poe = c.poe.unwrap_or(0).to_le_bytes();
    let mut specs = Vec::new();
    if c.gcs.is_some() {
        specs.push(small(GCS_MAGIC, GCS_CONTEXT_SIZE, &gcs_body));
    }
    if let Some((vl, _, p)) = &c.sve {
        let whole = sve_sig_context_size(u32::from(*vl) / 16).next_multiple_of(16);
        specs.push(vec_spec(
            SVE_MAGIC,
            &sve_head,
            p,
            whole,
            SVE_CONTEXT_HEAD_SIZE,
        ));
    }
    if c.tpidr2.is_some() {
        specs.push(small(TPIDR2_MAGIC, 16, &tp));
    }
    if let Some((vl, p)) = &c.za {
        let whole = za_sig_context_size(u32::from(*vl) / 16);
        specs.push(vec_spec(ZA_MAGIC, &za_head, p, whole, ZA_CONTEXT_HEAD_SIZE));
    }
    if let Some(z) = &c.zt0 {
        specs.push(RecordSpec {
            magic: ZT_MAGIC,
            size: zt_sig_context_size(1),
            body: &zt_head,
            payload: z,
        });
    }
    for (v, magic, b) in [(c.fpmr, FPMR_MAGIC, &fpmr), (c.poe, POE_MAGIC, &poe)] {
        if v.is_some() {
            specs.push(small(magic, 16, b));
        }
    }
    let fast = delivery(c);
    let d = general(&fast, &specs);
    let mut old = Mem::new();
    let r_old = d.plan().and_then(|plan| {
        old.base = plan.base;
        d.emit(&plan, &mut |o, b| old.put(o, b))?;
        Ok(plan.entry)
    });
    let mut writes: Vec<(u64, Vec<u8>)> = Vec::new();
    let r_new = fast.write(&mut |a, b| {
        writes.push((a, b.to_vec()));
        Ok(())
    });
    let mut new = Mem::new();
    if let Ok(e) = &r_new {
        new.base = e.sp;
        for (a, b) in &writes {
            new.put((a - e.sp) as usize, b).unwrap();
        }
    }
    ((r_old, old), (r_new, new))
}

#[test]
fn same_frames_as_the_general_writer() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut spilled = 0;
    for i in 0..3000 {
        let c = case(&mut r);
        let ((r_old, old), (r_new, new)) = both(&c);
        assert_eq!(r_old, r_new, "case {i}");
        if r_new.is_err() {
            continue;
        }
        assert_eq!(old.bytes, new.bytes, "case {i}");
        // Ascending, non-overlapping pieces.
        for w in new.calls.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "case {i}: {:?}", new.calls);
        }
        // No more pieces than the general writer's.
        assert!(
            new.calls.len() <= old.calls.len(),
            "case {i}: {:?} {:?}",
            new.calls,
            old.calls
        );
        spilled += usize::from(
            get_u32(&new.bytes, RECS_OFFSET) != 0 && {
                let mut o = RESERVED_OFFSET;
                let mut seen = false;
                while get_u32(&new.bytes, o) != 0 {
                    seen |= get_u32(&new.bytes, o) == EXTRA_MAGIC;
                    o += get_u32(&new.bytes, o + 4).next_multiple_of(16) as usize;
                }
                seen
            },
        );
    }
    // The mix reaches the extra space often.
    assert!(spilled > 300, "{spilled}");
}

#[test]
fn the_usual_frame_is_two_pieces() {
    let mut r = Rng(7);
    let mut c = case(&mut r);
    c.sp_top = 0x7fff_0000_0000;
    (c.esr, c.gcs, c.sve, c.za, c.zt0, c.poe) = (None, None, Some((64, 0, None)), None, None, None);
    c.tpidr2 = Some(0);
    c.fpmr = None;
    let (_, (r_new, new)) = both(&c);
    r_new.unwrap();
    // Header, fpsimd, sve and tpidr2 heads, terminator; the frame record.
    assert_eq!(new.calls, [(0, 1168), (RT_SIGFRAME_SIZE, 16)]);
}

#[test]
fn a_payload_longer_than_its_record_is_refused() {
    let mut r = Rng(11);
    let mut c = case(&mut r);
    c.sp_top = 0x7fff_0000_0000;
    c.sve = Some((16, 0, Some(pattern(600, 0))));
    let (_, (r_new, _)) = both(&c);
    assert_eq!(r_new, Err(Errno::EINVAL));
    // A failing writer is EFAULT.
    c.sve = None;
    let fast = Delivery {
        signo: 1,
        uc_stack: StackT::default(),
        sigmask: Sigset(0),
        fault_address: 0,
        records: Records::default(),
        sigtramp: 0,
        ..delivery(&c)
    };
    assert_eq!(fast.write(&mut |_, _| Err(Efault)), Err(Errno::EFAULT));
}

#[test]
fn heads_only_frames_match_the_general_writer() {
    // Every mix of 16-byte records (esr, sve and za heads, tpidr2, fpmr, poe), with and
    // without SA_SIGINFO, with room and without: the short path writes what `emit` writes, in
    // two pieces (the frame up to the terminator, the frame record).
    let mut r = Rng(0x5151);
    for mix in 0u32..64 {
        for flags in [0, SA_SIGINFO] {
            for sp_top in [0x7fff_0000_0008, 4000, 4704 + 15, 4704 + 16] {
                let mut c = case(&mut r);
                c.act.sa_flags = flags;
                c.sp_top = sp_top;
                let bit = |b: u32| mix & 1 << b != 0;
                c.esr = bit(0).then_some(0x9200_0045);
                c.sve = bit(1).then_some((64, 1, None));
                c.tpidr2 = bit(2).then_some(0x1122_3344);
                c.za = bit(3).then_some((32, None));
                c.fpmr = bit(4).then_some(7);
                c.poe = bit(5).then_some(9);
                (c.gcs, c.zt0) = (None, None);
                let ((r_old, old), (r_new, new)) = both(&c);
                assert_eq!(r_old, r_new, "mix {mix:#x} sp_top {sp_top:#x}");
                if r_new.is_err() {
                    continue;
                }
                assert_eq!(old.bytes, new.bytes, "mix {mix:#x}");
                let recs = 16 * (mix.count_ones() as usize + 1);
                assert_eq!(
                    new.calls,
                    [(0, RECS_OFFSET + recs), (RT_SIGFRAME_SIZE, 16)],
                    "mix {mix:#x}"
                );
            }
        }
    }
}
