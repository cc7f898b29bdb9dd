//! The vGICv3's interrupts and their delivery: each interrupt's state (enabled, pending,
//! active, group, priority, trigger, route), what KVM_IRQ_LINE, SGIs and the guest's timers
//! make pending, and the list registers (Linux's vgic.c: vgic_flush_lr_state before entry,
//! vgic_fold_lr_state after exit, kvm_vgic_vcpu_pending_irq for WFI).
//!
//! The list registers are rebuilt from this state on every entry and folded back into it on
//! every exit, so nothing but this state outlives an exit; the guest's acknowledgement
//! (pending to active) and deactivation (active to nothing) come back through the registers'
//! state bits.

use super::Vgic;
use crate::arch::guest::{ich_hcr, VgicCpu};
use svelt_abi::uapi::kvm_vgic as g;

/// The private interrupts' numbers: SGIs below 16, PPIs up to 32.
pub const NR_SGIS: u32 = 16;
const NR_PRIVATE: usize = g::NR_PRIVATE_IRQS as usize;
/// The guest timers' PPIs (virtual, physical EL1), as KVM gives them by default.
pub const VTIMER_PPI: u32 = 27;
pub const PTIMER_PPI: u32 = 30;

/// One interrupt's state.
#[derive(Clone, Copy, Debug, Default)]
pub struct Irq {
    pub enabled: bool,
    /// Pending by an edge, an SGI, a write to ISPENDR (cleared when the guest acknowledges).
    pub latch: bool,
    /// The input line's level (level-triggered interrupts are pending while it is high).
    pub line: bool,
    pub active: bool,
    /// Edge-triggered (ICFGR 0b10); level-triggered otherwise.
    pub edge: bool,
    pub group1: bool,
    pub priority: u8,
    /// An SPI's route (GICD_IROUTER: Aff3.Aff2.Aff1.Aff0 in MPIDR's layout).
    pub route: u64,
    /// Deactivated by a trapped ICC_DIR_EL1 while it may sit in a list register (another
    /// vCPU's acknowledgement not yet folded back): that fold must not make it active again.
    /// Made pending anew, it is forgotten.
    pub deactivated: bool,
    /// How many times it was latched pending (wrapping). A list register loaded with it
    /// pending keeps the count of then (`VgicCpu::lr_latches`): if the guest takes that
    /// instance and the count has moved on, a newer one came meanwhile and the latch stays
    /// (Linux moves the pending bit into the register and back instead: vgic_v3_populate_lr
    /// clears an edge's pending_latch, vgic_v3_fold_lr_state sets it again only if the
    /// register still holds it pending).
    pub latches: u32,
}

impl Irq {
    pub fn pending(&self) -> bool {
        self.latch || (!self.edge && self.line)
    }

    /// Pending or active: worth a list register (no short cuts: one test per interrupt in the
    /// walks at each entry).
    #[inline]
    fn busy(&self) -> bool {
        self.active | self.latch | (self.line & !self.edge)
    }

    /// Made pending by an edge, an SGI or a write to a set-pending register: a fresh
    /// instance, which may come while an earlier one sits in a list register.
    pub fn latch_pending(&mut self) {
        self.latch = true;
        self.latches = self.latches.wrapping_add(1);
        self.deactivated = false;
    }

    /// Its input set to `level` (see `Vgic::set_line`); whether it is pending now.
    pub fn set_level(&mut self, level: bool) -> bool {
        if level {
            self.deactivated = false;
        }
        if self.edge {
            if level {
                self.latch_pending();
            }
        } else {
            self.line = level;
        }
        self.pending()
    }
}

/// The private interrupts of a vCPU at reset: SGIs edge-triggered and enabled-by-nobody, PPIs
/// level-triggered, every one in Group 1 (vgic_v3 defaults).
pub fn private_reset() -> [Irq; NR_PRIVATE] {
    core::array::from_fn(|i| Irq {
        edge: (i as u32) < NR_SGIS,
        group1: true,
        ..Irq::default()
    })
}

/// Each vCPU's SGIs and PPIs, by vCPU id: a vector kept in id order. The run loop finds its
/// vCPU's several times per entry and exit, where a BTreeMap's search and `entry` cost more.
#[derive(Default)]
pub struct Privates(alloc::vec::Vec<(u32, [Irq; NR_PRIVATE])>);

impl Privates {
    /// Where vCPU `vcpu`'s are, or would go. VMMs number their vCPUs from 0 up, so the id is
    /// nearly always the position, tried first.
    #[inline]
    fn find(&self, vcpu: u32) -> Result<usize, usize> {
        match self.0.get(vcpu as usize) {
            Some(e) if e.0 == vcpu => Ok(vcpu as usize),
            _ => self.0.binary_search_by_key(&vcpu, |e| e.0),
        }
    }

    pub fn get(&self, vcpu: u32) -> Option<&[Irq; NR_PRIVATE]> {
        let i = self.find(vcpu).ok()?;
        Some(&self.0[i].1)
    }

    /// vCPU `vcpu`'s, made (at their reset state) if it had none yet.
    #[inline]
    pub fn get_or_reset(&mut self, vcpu: u32) -> &mut [Irq; NR_PRIVATE] {
        let i = match self.find(vcpu) {
            Ok(i) => i,
            Err(i) => self.add(i, vcpu),
        };
        &mut self.0[i].1
    }

    /// Out of line: the reset state is a large value to build, which the lookups above should
    /// not pay for.
    #[cold]
    #[inline(never)]
    fn add(&mut self, at: usize, vcpu: u32) -> usize {
        self.0.insert(at, (vcpu, private_reset()));
        at
    }
}

/// A list register's fields.
const LR_STATE_SHIFT: u32 = 62;
const LR_GROUP: u64 = 1 << 60;
const LR_PRIO_SHIFT: u32 = 48;
/// ICH_VMCR_EL2.VEOIM: the guest's EOImode (EOI drops priority, DIR deactivates).
const VMCR_VEOIM: u64 = 1 << 9;

/// The level-triggered SPIs the guest deactivated during one entry (what Linux's
/// kvm_notify_acked_irq hears of), as SPI pins (INTID - 32); at most one per list register
/// and EOI, and the first 16 only.
#[derive(Default)]
pub struct Acked {
    pins: [u32; 16],
    n: usize,
}

impl Acked {
    fn push(&mut self, intid: u32) {
        if intid >= g::NR_PRIVATE_IRQS && self.n < self.pins.len() {
            self.pins[self.n] = intid - g::NR_PRIVATE_IRQS;
            self.n += 1;
        }
    }

    pub fn pins(&self) -> &[u32] {
        &self.pins[..self.n]
    }
}

impl Vgic {
    /// The SPIs' state, made at the initialisation (NR_IRQS is fixed then).
    pub fn alloc_spis(&mut self) {
        if self.spis.is_empty() {
            // Edge-triggered until the guest says otherwise: KVM's SPIs start zeroed, and its
            // zero configuration is edge (kvm_vgic_dist_init).
            let irq = Irq {
                group1: true,
                edge: true,
                ..Irq::default()
            };
            self.spis = alloc::vec![irq; self.cfg.nr_spis as usize];
        }
    }

    /// Interrupt `intid` as vCPU `vcpu` sees it (its own private ones, or an SPI).
    pub fn irq_mut(&mut self, vcpu: u32, intid: u32) -> Option<&mut Irq> {
        if intid < g::NR_PRIVATE_IRQS {
            Some(&mut self.private.get_or_reset(vcpu)[intid as usize])
        } else if intid >= svelt_abi::uapi::kvm_vgic_its::LPI_OFFSET {
            self.lpis.get_mut(&intid)
        } else {
            self.spis_busy = true;
            self.spis.get_mut((intid - g::NR_PRIVATE_IRQS) as usize)
        }
    }

    /// Clears `spis_busy` if no SPI is pending or active (one walk, only after an SPI was
    /// reached through `irq_mut`).
    pub fn settle_spis(&mut self) {
        if self.spis_busy {
            self.spis_busy = self.spis.iter().any(|q| q.active || q.pending());
        }
    }

    /// Sets an interrupt's input (kvm_vgic_inject_irq): a level-triggered one follows the
    /// line; an edge-triggered one latches on a rising level. Says whether it is pending now.
    pub fn set_line(&mut self, vcpu: u32, intid: u32, level: bool) -> Option<bool> {
        Some(self.irq_mut(vcpu, intid)?.set_level(level))
    }

    /// vCPU `vcpu`'s SGIs and PPIs.
    pub fn private_mut(&mut self, vcpu: u32) -> &mut [Irq; NR_PRIVATE] {
        self.private.get_or_reset(vcpu)
    }

    /// Whether `irq` can be signalled now (enabled, pending, its group on).
    fn deliverable(&self, irq: &Irq) -> bool {
        self.enabled && irq.enabled && irq.pending()
    }

    /// The interrupts routed to vCPU `vcpu` (MPIDR affinity `mpidr`): (INTID, state).
    fn routed(&self, vcpu: u32, mpidr: u64) -> impl Iterator<Item = (u32, &Irq)> {
        // Every caller wants only what is pending or active: the rest is skipped here, over
        // two plain slices.
        let own: &[Irq] = self.private.get(vcpu).map_or(&[], |p| p);
        let spis: &[Irq] = if self.spis_busy { &self.spis } else { &[] };
        let spis = spis
            .iter()
            .zip(g::NR_PRIVATE_IRQS..)
            .filter(move |(q, _)| q.route & 0xff_00ff_ffff == mpidr);
        // LPIs reach a vCPU whose redistributor has them on; their route is exact.
        let on = !self.lpis.is_empty() && self.lpis_on(vcpu);
        let lpis = self
            .lpis
            .iter()
            .filter(move |(_, q)| on && q.route == mpidr)
            .map(|(&i, q)| (q, i));
        own.iter()
            .zip(0u32..)
            .chain(spis)
            .chain(lpis)
            .filter(|(q, _)| q.busy())
            .map(|(q, i)| (i, q))
    }

    /// Whether a WFI of vCPU `vcpu` ends: an interrupt it can take is pending, above the
    /// guest's priority mask (kvm_vgic_vcpu_pending_irq).
    pub fn pending_for(&self, vcpu: u32, mpidr: u64, vmcr: u64) -> bool {
        self.routed(vcpu, mpidr)
            .any(|(_, q)| self.can_take(q, vmcr))
    }

    /// Whether vCPU `vcpu` can take its private interrupt `intid` now (as `pending_for`, for
    /// one interrupt: the timers' PPIs, asked first).
    pub fn can_take_private(&self, vcpu: u32, intid: u32, vmcr: u64) -> bool {
        let own = self.private.get(vcpu);
        own.and_then(|p| p.get(intid as usize))
            .is_some_and(|q| self.can_take(q, vmcr))
    }

    /// Pending, deliverable, not active and above the guest's priority mask (VMCR's VPMR).
    fn can_take(&self, q: &Irq, vmcr: u64) -> bool {
        let pmr = (vmcr >> 24) as u8;
        self.deliverable(q) && !q.active && q.priority < pmr
    }

    /// Fills vCPU `vcpu`'s list registers (up to `nr_lrs`) before it enters: its pending
    /// interrupts first, then the active ones, each by priority (vgic_irq_cmp). When some are
    /// left out, the underflow maintenance condition is asked for; active ones left out are
    /// deactivated by the guest's EOIs counted in EOIcount (`fold`), or with EOImode 1 by its
    /// trapped writes to ICC_DIR_EL1 (`deactivate`).
    pub fn flush(&self, vcpu: u32, mpidr: u64, cpu: &mut VgicCpu, nr_lrs: usize) {
        // The best `cap` candidates so far, in order (pending before active, then by priority
        // and INTID: unique keys), kept by insertion: no allocation at each entry. The last
        // field is the interrupt's count of latchings (for `fold`).
        let cap = nr_lrs.min(cpu.lr.len());
        let mut best = [(false, 0u8, 0u32, 0u64, 0u32); 16];
        let (mut n, mut wanted) = (0, 0);
        let mut consider = |intid: u32, q: &Irq| {
            let pending = self.deliverable(q);
            if !q.active && !pending {
                return;
            }
            wanted += 1;
            let state = (pending as u64) | ((q.active as u64) << 1);
            let lr = (state << LR_STATE_SHIFT)
                | if q.group1 { LR_GROUP } else { 0 }
                | ((q.priority as u64) << LR_PRIO_SHIFT)
                | intid as u64;
            let key = (!pending, q.priority, intid, lr, q.latches);
            if n == cap {
                if n == 0 || key >= best[n - 1] {
                    return;
                }
                n -= 1;
            }
            let mut i = n;
            while i > 0 && best[i - 1] > key {
                best[i] = best[i - 1];
                i -= 1;
            }
            best[i] = key;
            n += 1;
        };
        // What `routed` gives, walked here as three plain loops (this runs at every entry).
        if let Some(own) = self.private.get(vcpu) {
            for (q, intid) in own.iter().zip(0u32..) {
                if q.busy() {
                    consider(intid, q);
                }
            }
        }
        if self.spis_busy {
            for (q, intid) in self.spis.iter().zip(g::NR_PRIVATE_IRQS..) {
                if q.busy() && q.route & 0xff_00ff_ffff == mpidr {
                    consider(intid, q);
                }
            }
        }
        if !self.lpis.is_empty() && self.lpis_on(vcpu) {
            for (&intid, q) in &self.lpis {
                if q.busy() && q.route == mpidr {
                    consider(intid, q);
                }
            }
        }
        for (i, w) in best[..n].iter().enumerate() {
            cpu.lr[i] = w.3;
            cpu.lr_latches[i] = w.4;
        }
        cpu.lr_in = cpu.lr;
        cpu.nr_lr = n;
        let left_out = wanted > n;
        // Every ICC_DIR_EL1 write traps (only EOImode 1 makes them, which the guest may turn
        // on without an exit): one may deactivate an interrupt left out of the list
        // registers, or an SPI another vCPU acknowledged.
        cpu.hcr = ich_hcr::EN | ich_hcr::TDIR | if left_out { ich_hcr::UIE } else { 0 };
    }

    /// A guest's ICC_DIR_EL1 write the CPU interface could not do itself: interrupt
    /// `intid` is no longer active.
    pub fn deactivate(&mut self, vcpu: u32, intid: u32) {
        if let Some(q) = self.irq_mut(vcpu, intid) {
            q.active = false;
            q.deactivated = true;
        }
    }

    /// Takes back what the guest did with the list registers after an exit: an interrupt it
    /// acknowledged is no longer pending by latch, one it deactivated is no longer active;
    /// registers it left as they were change nothing.
    pub fn fold(&mut self, vcpu: u32, mpidr: u64, cpu: &mut VgicCpu) -> Acked {
        let mut acked = Acked::default();
        for i in 0..cpu.nr_lr {
            let lr = cpu.lr[i];
            let state = lr >> LR_STATE_SHIFT;
            // Unchanged by the guest: the state may have moved on meanwhile (another vCPU
            // deactivated the SPI, the VMM cleared it) and stays as it is.
            if state == cpu.lr_in[i] >> LR_STATE_SHIFT {
                continue;
            }
            let Some(q) = self.irq_mut(vcpu, lr as u32) else {
                continue;
            };
            let was_active = q.active;
            q.active = state & 2 != 0 && !q.deactivated;
            q.deactivated = false;
            if was_active && !q.active && !q.edge {
                acked.push(lr as u32);
            }
            // The instance loaded into the register was taken; one latched since stays.
            if state & 1 == 0 && q.latches == cpu.lr_latches[i] {
                q.latch = false;
            }
        }
        // EOIs of interrupts in no list register (EOImode 0: each priority drop deactivates
        // too): the highest-priority active ones left out, one per EOI, as the guest drops
        // priorities from the highest down.
        let mut eois = (cpu.hcr >> ich_hcr::EOICOUNT_SHIFT) & 0x1f;
        if cpu.vmcr & VMCR_VEOIM != 0 {
            eois = 0;
        }
        // The INTIDs that were in the list registers (made only when there are such EOIs).
        let mut in_lrs = [u32::MAX; 16];
        if eois > 0 {
            for (slot, lr) in in_lrs.iter_mut().zip(&cpu.lr[..cpu.nr_lr]) {
                *slot = *lr as u32;
            }
        }
        while eois > 0 {
            let next = self
                .routed(vcpu, mpidr)
                .filter(|(i, q)| q.active && !in_lrs.contains(i))
                .min_by_key(|(i, q)| (q.priority, *i))
                .map(|(i, _)| i);
            let Some(intid) = next else {
                break;
            };
            if let Some(q) = self.irq_mut(vcpu, intid) {
                q.active = false;
                if !q.edge {
                    acked.push(intid);
                }
            }
            eois -= 1;
        }
        cpu.hcr &= !(0x1f << ich_hcr::EOICOUNT_SHIFT);
        cpu.nr_lr = 0;
        acked
    }
}
