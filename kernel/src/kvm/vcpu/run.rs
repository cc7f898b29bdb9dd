//! KVM_RUN and the run loop, and what sends a vCPU round it again: kicks and the IRQ lines.
//!
//! The loop enters the guest with interrupts masked and comes back on the guest's next
//! exception to EL2; a host interrupt (the tick, an IPI) ends the entry, is taken as soon as
//! the loop unmasks, and the loop then reschedules or returns EINTR for a pending signal as the
//! return to user mode would. Exits the kernel can finish (PSCI calls, WFI, trapped system
//! registers, stage-2 faults on RAM) go straight back in; MMIO and system events return to
//! the VMM with the `kvm_run` page filled in.

use super::{Vcpu, VcpuState, NOT_IN_GUEST};
use crate::arch::guest;
use crate::kvm::vm::Vm;
use crate::kvm::{exit, pauth, pvtime, sme, vgic, EXITS};
use crate::task::{self, sched};
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use spin::Mutex;
use svelt_abi::isa::esr::Esr;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm as k;
use svelt_abi::uapi::kvm_stats::vcpu as stat;

impl Vcpu {
    /// Wakes the vCPU from WFI or power-off, and makes it leave the guest if it runs guest
    /// code on another CPU (Linux's kvm_vcpu_kick): the reschedule IPI ends the entry, and the
    /// run loop looks at what changed before it enters again.
    pub fn kick(&self) {
        self.kicked.store(true, Ordering::Release);
        self.wake.wake_all();
        // SeqCst pairs with the run loop's store to `running_on` before it takes `request`:
        // either it sees the request, or this sees the CPU it is about to enter on.
        self.request.store(true, Ordering::SeqCst);
        let cpu = self.running_on.load(Ordering::SeqCst);
        if cpu != NOT_IN_GUEST && cpu != crate::percpu::cpu_id() {
            crate::irq::send_reschedule(cpu);
        }
    }

    /// KVM_IRQ_LINE for the vCPU's IRQ (`num` 0) or FIQ (1) input (vcpu_interrupt_line): a
    /// change wakes the vCPU and makes a running one enter again with the new level.
    pub fn set_irq_line(&self, num: u32, level: bool) {
        let bit = 1 << num;
        let old = if level {
            self.irq_lines.fetch_or(bit, Ordering::SeqCst)
        } else {
            self.irq_lines.fetch_and(!bit, Ordering::SeqCst)
        };
        if (old & bit != 0) != level {
            self.kick();
        }
    }

    /// One of the vCPU's IRQ and FIQ inputs is raised (a WFI wakes for it, whatever the
    /// guest's PSTATE masks: kvm_arch_vcpu_runnable).
    pub fn irq_line_raised(&self) -> bool {
        self.irq_lines.load(Ordering::SeqCst) != 0
    }

    /// HCR_EL2.VI and VF for the vCPU's raised inputs.
    fn irq_line_hcr(&self) -> u64 {
        let l = self.irq_lines.load(Ordering::SeqCst);
        (if l & 1 != 0 { guest::hcr::VI } else { 0 })
            | (if l & 2 != 0 { guest::hcr::VF } else { 0 })
    }

    /// KVM_RUN.
    pub(super) fn run_ioctl(
        &self,
        vm: &Arc<Vm>,
        mm: &Mutex<crate::mm::aspace::AddrSpace>,
        cur: &task::CurrentTask,
    ) -> SysResult<usize> {
        if !crate::arch::el::vhe() {
            return Err(Errno::ENXIO);
        }
        let mut st = self.lock()?;
        if !st.inited {
            return Err(Errno::ENOEXEC);
        }
        sme::check_finalized(&st)?;
        // A vGIC must be placed and initialised (kvm_vgic_map_resources).
        vgic::first_run(vm)?;
        crate::kvm::pmu::check_run(vm, self.id, &mut st)?;
        // From here on the VM's configuration (ID registers, firmware bitmaps) is fixed
        // (kvm_arch_vcpu_run_pid_change marks the VM as having run, immediate_exit or not).
        vm.ran.store(true, Ordering::Relaxed);
        // The controls that follow from the VM's ID registers, now fixed: worked out once.
        vm.run_controls.call_once(|| {
            // ID_AA64ISAR2_EL1 (MOPS) and ID_AA64PFR2_EL1 (FPMR).
            let hcrx = k::guest_hcrx(vm.id_reg(6, 2), vm.id_reg(4, 2));
            // ID_AA64MMFR3_EL1 (TCRX, S1PIE, S1POE: kvm::poe).
            let (s1_hcrx, s1_fgt_clear) = crate::kvm::poe::controls(vm);
            let hcrx = hcrx | s1_hcrx;
            vm.hcrx.store(hcrx, Ordering::Relaxed);
            let hfgitr = if guest::has_fgt() {
                // ID_AA64ISAR0_EL1: the CPU's and the VM's.
                k::guest_hfgitr(guest::read_id_reg(6, 0), vm.id_reg(6, 0))
            } else {
                0
            };
            vm.hfgitr.store(hfgitr, Ordering::Relaxed);
            let pfr1 = guest::read_id_reg(4, 1); // ID_AA64PFR1_EL1: the CPU's
            vm.hfgrtr_clear.store(
                k::guest_fgt_read_write_clear(guest::has_fgt(), pfr1) | s1_fgt_clear,
                Ordering::Relaxed,
            );
        });
        crate::kvm::poe::run_start(vm, &mut st);
        crate::kvm::debug::run_start(&mut st);
        if let Some(p) = st.mmio.take() {
            let (pc0, pstate0) = (st.regs.pc, st.regs.pstate);
            exit::complete_mmio(self, &mut st, p);
            crate::kvm::aarch32::after_sync(&mut st, pc0, pstate0);
        }
        // immediate_exit leaves `kvm_run` as it was; otherwise each run starts with no exit
        // reason and no flags (kvm_arch_vcpu_ioctl_run).
        if self.run_read::<1>(k::run::IMMEDIATE_EXIT)[0] != 0 {
            crate::kvm::debug::run_end(&mut st);
            return Err(Errno::EINTR);
        }
        self.set_exit_reason(k::KVM_EXIT_UNKNOWN);
        self.run_write(k::run::FLAGS, &0u16.to_le_bytes());
        // From here this thread's dirtying writes go to the vCPU's ring, if it has one.
        let _running = crate::kvm::dirty_ring::Running::new(self);
        pvtime::update(vm, &mut st, cur.task());
        let r = self.run_loop(vm, mm, &mut st, cur);
        crate::kvm::debug::run_end(&mut st);
        st.put_fp();
        r
    }

    fn run_loop(
        &self,
        vm: &Arc<Vm>,
        mm: &Mutex<crate::mm::aspace::AddrSpace>,
        st: &mut VcpuState,
        cur: &task::CurrentTask,
    ) -> SysResult<usize> {
        // Fixed while KVM_RUN holds the vCPU: a vCPU without a PMU tests this one flag, and
        // one with none of the PMU, AArch32 EL1 and the stage-1 extensions (poe.rs) tests
        // `extras` once on each side of the guest's run.
        let has_pmu = st.pmu.is_some();
        let mut extras =
            has_pmu || crate::kvm::aarch32::is32(st) || st.s1.ext.any() || st.gdebug.is_some();
        let dring = self.dring.get();
        // Whether the VM has an in-kernel vGIC: fixed once it has run (vm.ran is set before
        // this), so a VM without one skips the vGIC's hooks at every entry and exit.
        let has_vgic = vgic::run_start(vm, st);
        // The first round asks the signal layer; later rounds only when the work word says a
        // signal or a stop may have come since (its setters store their state first and the
        // bit after, as the check before each entry relies on too).
        let mut ask = true;
        loop {
            let asked = ask || cur.work.get() & (task::work::SIGPENDING | task::work::KILLED) != 0;
            ask = false;
            if cur.killed.load(Ordering::Acquire) || (asked && task::hooks::interrupted(cur.task()))
            {
                self.set_exit_reason(k::KVM_EXIT_INTR);
                self.stats.inc(stat::SIGNAL_EXITS);
                return Err(Errno::EINTR);
            }
            // One look at the power state per round: off, suspended, or a CPU_ON to apply.
            let (off, suspended, on) = {
                let mut p = self.power.lock();
                let on = if p.off || p.suspended {
                    None
                } else {
                    p.on.take()
                };
                (p.off, p.suspended, on)
            };
            if off {
                st.put_fp();
                self.wait_for_kick(|| !self.power.lock().off)?;
                continue;
            }
            if suspended {
                // Sleeps as a WFI (a signal ends KVM_RUN from inside); then the VMM hears of
                // a pending interrupt, and the vCPU stays suspended until it says otherwise.
                exit::wfi(self, vm, st)?;
                let still = self.power.lock().suspended;
                if still && (vgic::wfi_wake(vm, self.id, st).0 || self.irq_line_raised()) {
                    self.run_write(k::run::SYSTEM_EVENT_TYPE, &[0; 16]);
                    self.run_write(
                        k::run::SYSTEM_EVENT_TYPE,
                        &k::KVM_SYSTEM_EVENT_WAKEUP.to_le_bytes(),
                    );
                    self.set_exit_reason(k::KVM_EXIT_SYSTEM_EVENT);
                    return Ok(0);
                }
                continue;
            }
            if let Some((entry, context)) = on {
                self.apply_cpu_on(st, entry, context);
            }
            // A ring at its soft limit keeps the vCPU out until the VMM resets it
            // (kvm_dirty_ring_check_request).
            if dring.is_some_and(|r| r.soft_full()) {
                self.set_exit_reason(svelt_abi::uapi::kvm_dirty_ring::KVM_EXIT_DIRTY_RING_FULL);
                return Ok(0);
            }
            if sched::need_resched() {
                st.put_fp();
                sched::schedule();
                // Loaded again: the wait for the CPU is the guest's stolen time.
                pvtime::update(vm, st, cur.task());
                continue;
            }
            if st.put_away {
                st.put_away = false;
                // A task that ran here in between may have left PSTATE.SM on (its state is in
                // memory already); the guest must not run in someone else's streaming mode.
                crate::task::fpstate::leave_foreign_streaming(cur);
            }
            // A vCPU in streaming mode enters with its registers loaded. Which trap an
            // instruction takes depends on PSTATE.SM (streaming SVE answers to SMEN alone,
            // non-streaming SVE to ZEN), and the guest's own CPACR_EL1 traps come before
            // CPTR_EL2's: run outside streaming mode while its state is in memory, a guest
            // task's streaming SVE instruction would become an SVE access trap in the guest
            // kernel, which then clears the task's high Z bits and P registers as for a task
            // without SVE (Linux's do_sve_acc).
            if !st.fp_live && st.sme.as_ref().is_some_and(sme::GuestSme::streaming) {
                exit::load_fp(vm, st, cur);
            }
            let mut controls = {
                guest::Controls {
                    hcr: exit::GUEST_HCR | if st.vse { guest::hcr::VSE } else { 0 },
                    vsesr: st.vsesr,
                    vttbr: vm.s2_root,
                    vtcr: vm.vtcr,
                    vmpidr: st.mpidr,
                    vpidr: vm.impl_regs.lock()[0],
                    cntvoff: vm.cntvoff.load(Ordering::Relaxed),
                    cptr: match (st.fp_live, st.sve.is_some()) {
                        (false, _) => 0,
                        (true, false) => guest::CPTR_FP_ON,
                        (true, true) => guest::CPTR_FP_ON | guest::CPTR_SVE_ON,
                    } | sme::cptr(st),
                    mdcr_traps: exit::GUEST_MDCR_TRAPS
                        | if has_pmu {
                            crate::kvm::pmu::hpmn(st)
                        } else {
                            0
                        },
                    hcrx: vm.hcrx.load(Ordering::Relaxed),
                    hfgitr: vm.hfgitr.load(Ordering::Relaxed),
                    hfgrtr_clear: vm.hfgrtr_clear.load(Ordering::Relaxed),
                }
            };
            if has_vgic {
                vgic::before_entry(vm, self.id, st);
            }
            let kind = {
                let _irqs = crate::arch::cpu::IrqGuard::new();
                controls.vttbr = vm.vttbr(vm.vmid.enter());
                // From here a kick interrupts this CPU, and the IPI, masked, ends the entry
                // at once; what happened before is looked at now (Linux's IN_GUEST_MODE and
                // the request and signal checks with interrupts disabled).
                self.running_on
                    .store(crate::percpu::cpu_id(), Ordering::SeqCst);
                // A signal or a kill arriving since the loop's first check set the work word
                // after its state (task/work.rs), so the word decides whether the real state
                // (the signal layer's hook, which takes its locks) must be asked again.
                let leave = self.request.swap(false, Ordering::SeqCst)
                    || sched::need_resched()
                    || (cur.work.get() & (task::work::SIGPENDING | task::work::KILLED) != 0
                        && (cur.killed.load(Ordering::Acquire)
                            || task::hooks::interrupted(cur.task())));
                let kind = (!leave).then(|| {
                    controls.hcr |= self.irq_line_hcr() | pauth::hcr(st);
                    let tpidr2 = sme::enter(st);
                    let a32 = if extras {
                        extras_enter(vm, st, &mut controls)
                    } else {
                        None
                    };
                    let VcpuState {
                        el1,
                        regs,
                        gic,
                        pauth,
                        ..
                    } = st;
                    let kind = guest::world_switch(&mut controls, el1, regs, gic, pauth.as_mut());
                    if extras {
                        extras_exit(st, a32);
                    }
                    sme::exit(st, tpidr2);
                    kind
                });
                self.running_on.store(NOT_IN_GUEST, Ordering::Relaxed);
                kind
            };
            if has_vgic {
                vgic::after_exit(vm, self.id, st);
            }
            // An overflow while it ran: the line goes up before a WFI looks for interrupts.
            if has_pmu {
                crate::kvm::pmu::update_irq(vm, self.id, st);
            }
            // Not entered: back to the checks at the top (the list registers are folded
            // back as they were built).
            let Some(kind) = kind else { continue };
            st.vse = controls.hcr & guest::hcr::VSE != 0;
            EXITS.fetch_add(1, Ordering::Relaxed);
            self.stats.inc(stat::EXITS);
            match kind {
                guest::Exit::Irq | guest::Exit::Fiq => continue,
                guest::Exit::SError => {
                    // Nothing the host caused; the guest goes on (its own SError, if it had
                    // one, it sees through its own handling of virtual SError later).
                    continue;
                }
                guest::Exit::Sync => {}
            }
            let (pc0, pstate0) = (st.regs.pc, st.regs.pstate);
            let next = exit::handle_sync(self, vm, mm, st, cur, Esr(st.regs.esr));
            crate::kvm::aarch32::after_sync(st, pc0, pstate0);
            match next? {
                exit::Next::Enter => {}
                exit::Next::ToVmm => return Ok(0),
                exit::Next::Reconfigure => extras = true,
            }
        }
    }

    /// Sleeps until `ready()` or a kick; EINTR (and KVM_EXIT_INTR) on a signal.
    pub fn wait_for_kick(&self, ready: impl Fn() -> bool) -> SysResult<()> {
        self.wait_for_kick_until(ready, None)
    }

    /// Sleeps until `ready()`, a kick or the host counter reaches `deadline`; EINTR (and
    /// KVM_EXIT_INTR) on a signal.
    pub fn wait_for_kick_until(
        &self,
        ready: impl Fn() -> bool,
        deadline: Option<u64>,
    ) -> SysResult<()> {
        let r = self
            .wake
            .wait_deadline(
                || (self.kicked.swap(false, Ordering::AcqRel) || ready()).then_some(()),
                deadline,
            )
            .map(|_| ());
        if r.is_err() {
            self.set_exit_reason(k::KVM_EXIT_INTR);
            self.stats.inc(stat::SIGNAL_EXITS);
        }
        r
    }
}

/// Just before a guest entry, interrupts masked, for a vCPU with a PMU, AArch32 EL1 or the
/// stage-1 extensions: a 32-bit vCPU's EL1 in AArch32 and its AArch32-only registers in
/// (aarch32.rs), the stage-1 extension registers (poe.rs), the PMU's counters (pmu.rs).
#[inline(never)]
fn extras_enter(
    vm: &Vm,
    st: &mut VcpuState,
    controls: &mut guest::Controls,
) -> Option<crate::kvm::aarch32::Entered> {
    let a32 = crate::kvm::aarch32::enter(st);
    if a32.is_some() {
        controls.hcr &= !guest::hcr::RW;
    }
    crate::kvm::poe::enter(st);
    if st.pmu.is_some() {
        crate::kvm::pmu::load(vm, st);
    }
    crate::kvm::debug::enter(st, controls);
    a32
}

/// Right after the guest's exit, interrupts still masked: the same, back (the PMU's first,
/// so that it counts nothing of the host).
#[inline(never)]
fn extras_exit(st: &mut VcpuState, a32: Option<crate::kvm::aarch32::Entered>) {
    if st.pmu.is_some() {
        crate::kvm::pmu::save(st);
    }
    crate::kvm::poe::exit(st);
    crate::kvm::debug::exit(st);
    crate::kvm::aarch32::exit(st, a32);
}
