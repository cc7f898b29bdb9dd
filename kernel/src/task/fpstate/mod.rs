//! Lazy FPSIMD/SVE/SME state: carries out the decisions of `svelt_abi::fp::fpstate` with the
//! register primitives, keeps per-CPU ownership, and counts what it moves.
//!
//! A task's registers are saved when it is switched out holding them, and loaded on its way
//! back to user mode only if this CPU's registers are not already its own. Everything here runs
//! on the task itself (or the CPU switching it) with IRQs masked where ownership changes.
//!
//! This file is the state machine (ownership, the switch, first-use traps, the return to user
//! mode, fork and exec); `vl` controls vector lengths, `signal` serves signal frames and
//! sigreturn, `regset` the ptrace and core-dump register sets.

mod regset;
mod signal;
mod vl;

pub use regset::{
    regset_fpmr, regset_fpsimd, regset_set_fpmr, regset_set_fpsimd, regset_set_tpidr2,
    regset_sve_get, regset_sve_set, regset_tpidr2, regset_za_get, regset_za_set, regset_zt_get,
    regset_zt_set,
};
pub use signal::{for_signal, for_sigreturn, from_sigreturn, signal_entered, sigreturn_lengths};
pub use vl::{
    init_default_vls, sme_default_read, sme_default_write, sve_default_read, sve_default_write,
    vec_get_current_vl, vec_set_current_vl,
};

use crate::arch::cpu;
use crate::arch::fpsimd::{fpsimd, sme, sve};
use crate::percpu::{self, PerCpuArray};
use crate::task::{work, CurrentTask, Task, TaskLocal};
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{RefMut, UnsafeCell};
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use fpsimd::FpsimdState;
use svelt_abi::fp::fppolicy::Policy;
use svelt_abi::fp::fpstate::{self as fps, CpuFp, Format, Regs, Save, SmeTrapError, Svcr, TaskFp};
use svelt_abi::fp::vlctl;
use vl::{sme_ctl, sve_ctl, SME_DEFAULT_VL, SVE_DEFAULT_VL};

/// Each CPU's record of whose registers it holds. Only that CPU touches it, with IRQs masked,
/// so it needs no lock.
struct CpuCell(UnsafeCell<CpuFp>);
// SAFETY: see `with_cpu`: one CPU, IRQs masked, no reentrancy.
unsafe impl Sync for CpuCell {}

static CPU_FP: PerCpuArray<CpuCell> =
    PerCpuArray::new(|_| CpuCell(UnsafeCell::new(CpuFp::new(0, false))));

/// Runs `f` on this CPU's record; `_irqs` proves IRQs are masked, so neither a handler nor a
/// switch to another task (which would use the record) can come between.
fn with_cpu<R>(_irqs: &cpu::IrqGuard, f: impl FnOnce(&mut CpuFp) -> R) -> R {
    // SAFETY: only this CPU accesses its cell, IRQs are masked so no handler interleaves, and
    // `f` does not call back into this module.
    f(unsafe { &mut *CPU_FP.this().0.get() })
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub fn new_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The FP policy (`svelt.fp`, `svelt.sve_syscall`, `svelt.sme_trap`), set once at boot before
/// the first task runs; `Policy::to_bits` form.
static POLICY: AtomicU8 = AtomicU8::new(Policy::LINUX.to_bits());

pub fn set_policy(p: Policy) {
    POLICY.store(p.to_bits(), Ordering::Relaxed);
}

pub fn policy() -> Policy {
    Policy::from_bits(POLICY.load(Ordering::Relaxed))
}

/// The counters, per process and in total (/proc/svelt/fpstat, /proc/<pid>/fpstat).
#[derive(Clone, Copy)]
#[repr(usize)]
pub enum Counter {
    SveTraps,
    SmeTraps,
    FpsimdSaves,
    FpsimdRestores,
    SveSaves,
    SveRestores,
    ZaSaves,
    ZaRestores,
    BytesSaved,
    BytesRestored,
    /// A saved or live state found not to match its owner: a save or load refused because the
    /// CPU's vector length is not the task's, or an access trap taken with the access already
    /// enabled. Each is a kernel bug; the checks are the ones the paths make anyway (the save
    /// and load primitives compare the hardware VL before touching the buffer), so counting
    /// costs nothing until one fails.
    Mismatch,
}

/// How many counters there are.
pub const NR_COUNTERS: usize = 11;

pub const COUNTER_NAMES: [&str; NR_COUNTERS] = [
    "sve_traps",
    "sme_traps",
    "fpsimd_saves",
    "fpsimd_restores",
    "sve_saves",
    "sve_restores",
    "za_saves",
    "za_restores",
    "bytes_saved",
    "bytes_restored",
    "mismatch",
];

pub type Counters = [AtomicU64; NR_COUNTERS];
/// The initial value of every counter set (a const so static and per-process arrays start
/// from it; each use is a fresh array).
#[allow(clippy::declare_interior_mutable_const)]
pub const ZERO_COUNTERS: Counters = [const { AtomicU64::new(0) }; NR_COUNTERS];

/// Adds `n` to counter `c` of task `t`. A task's counters have one writer, the holder of its FP
/// state (the task on its CPU, or whoever parked it), so this is a plain load and store, not an
/// atomic read-modify-write: the switch and return paths count for free. Readers sum the live
/// tasks' counters with what exited threads left (`thread_exit`).
fn count(t: &Task, c: Counter, n: u64) {
    let a = &t.fpstat[c as usize];
    a.store(a.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

/// What exited threads counted, system-wide (each process keeps its own).
static EXITED: Counters = ZERO_COUNTERS;

/// An exiting thread's counters move to `owner` (its process's) and to the system's exited
/// total. Called by the thread itself, with IRQs masked, just before it is marked dead (a dead
/// task's state is never saved again, so nothing counts for it afterwards).
pub fn thread_exit(t: &Task, owner: &Counters) {
    for (i, a) in t.fpstat.iter().enumerate() {
        let v = a.swap(0, Ordering::Relaxed);
        if v != 0 {
            owner[i].fetch_add(v, Ordering::Relaxed);
            EXITED[i].fetch_add(v, Ordering::Relaxed);
        }
    }
}

/// What exited threads counted, system-wide.
pub fn exited_counters() -> [u64; NR_COUNTERS] {
    load_counters(&EXITED)
}

pub fn load_counters(c: &Counters) -> [u64; NR_COUNTERS] {
    core::array::from_fn(|i| c[i].load(Ordering::Relaxed))
}

pub fn add_counters(sum: &mut [u64; NR_COUNTERS], c: &Counters) {
    for (s, a) in sum.iter_mut().zip(c) {
        *s += a.load(Ordering::Relaxed);
    }
}

/// FPSR after leaving streaming mode (SMSTOP), as the architecture sets it.
const FPSR_AFTER_SMSTOP: u32 = 0x0800_009f;

/// A task's FP state: the bookkeeping, the FPSIMD registers, once SVE or SME was used the
/// Z/P/FFR registers (non-streaming at the SVE VL or streaming at the SME VL, signal-payload
/// layout), ZA (and ZT0), TPIDR2_EL0, FPMR, and the VL settings.
pub struct TaskFpState {
    pub st: TaskFp,
    pub fp: FpsimdState,
    pub sve: Vec<u8>,
    pub za: Vec<u8>,
    pub tpidr2: u64,
    /// FPMR (FEAT_FPMR; 0 without): saved and loaded with the FP registers, as Linux does.
    pub fpmr: u64,
    /// VL to take at the next execve (0: none), and whether that survives exec (INHERIT).
    pub sve_onexec: u32,
    pub sve_inherit: bool,
    pub sme_onexec: u32,
    pub sme_inherit: bool,
}

/// The features the switch and return paths test, decoded once (`cpu_init` on the boot CPU,
/// before any task runs): a relaxed load and a bit test each, where `cpufeature::features()`
/// checks a `Once` and copies the decoded set.
static CAPS: AtomicU8 = AtomicU8::new(0);
const CAP_SME: u8 = 1;
const CAP_FA64: u8 = 2;
const CAP_SME2: u8 = 4;
const CAP_FPMR: u8 = 8;
const CAP_SVE: u8 = 16;

fn cap(bit: u8) -> bool {
    CAPS.load(Ordering::Relaxed) & bit != 0
}

/// SVE is offered to user space (its access trap means first use).
pub fn has_sve() -> bool {
    cap(CAP_SVE)
}

/// SME is offered to user space (its access trap with SMTC 0 means first use).
pub fn has_sme() -> bool {
    cap(CAP_SME)
}

fn fa64() -> bool {
    cap(CAP_FA64)
}

fn sme2() -> bool {
    cap(CAP_SME2)
}

/// FEAT_FPMR: FPMR is part of every task's FP state (and of a guest's, kvm::fpmr).
pub fn has_fpmr() -> bool {
    cap(CAP_FPMR)
}

impl TaskFpState {
    /// A new task's state, as a program starts it (`fps::exec`: with `svelt.sme_trap=eager`
    /// SME is already enabled).
    pub fn new() -> TaskFpState {
        let (sve_vl, sme_vl) = (
            SVE_DEFAULT_VL.load(Ordering::Relaxed),
            SME_DEFAULT_VL.load(Ordering::Relaxed),
        );
        let mut st = TaskFp::new(new_id(), sve_vl, sme_vl);
        fps::exec(&mut st, sve_vl, sme_vl, policy().sme_trap);
        TaskFpState {
            st,
            fp: FpsimdState::default(),
            sve: Vec::new(),
            za: Vec::new(),
            tpidr2: 0,
            fpmr: 0,
            sve_onexec: 0,
            sve_inherit: false,
            sme_onexec: 0,
            sme_inherit: false,
        }
    }

    /// Quadwords of the Z registers in the saved copy's format.
    fn regs_vq(&self) -> usize {
        let vl = if self.st.format == Format::Streaming {
            self.st.sme_vl
        } else {
            self.st.sve_vl
        };
        vl as usize / 16
    }

    /// The Z/P/FFR buffer, sized for the saved copy's format.
    fn regs_buf(&mut self) -> &mut [u8] {
        let n = sve::state_size(self.regs_vq());
        if self.sve.len() != n {
            self.sve = alloc::vec![0u8; n];
        }
        &mut self.sve
    }

    /// The ZA (+ZT0) buffer at the SME VL.
    fn za_buf(&mut self) -> &mut [u8] {
        let n = sme::za_size(self.st.sme_vl as usize) + if sme2() { 64 } else { 0 };
        if self.za.len() != n {
            self.za = alloc::vec![0u8; n];
        }
        &mut self.za
    }

    /// The FPSIMD view of the saved state (V0-V31 are the low 128 bits of Z0-Z31).
    pub fn fpsimd_view(&self) -> FpsimdState {
        let mut f = self.fp;
        self.vregs_from_regs(&mut f.vregs);
        f
    }

    /// When the saved copy is SVE or streaming state, V0-V31 are the low 128 bits of Z0-Z31
    /// there, not `fp.vregs`: copies them into `vregs`.
    fn vregs_from_regs(&self, vregs: &mut [u128; 32]) {
        if self.st.format != Format::Fpsimd && !self.sve.is_empty() {
            let zl = 16 * self.regs_vq();
            for (v, z) in vregs.iter_mut().zip(self.sve.chunks_exact(zl)) {
                if let Some(low) = z.first_chunk::<16>() {
                    *v = u128::from_le_bytes(*low);
                }
            }
        }
    }

    /// Rewrites the saved copy in `format` (SVE or streaming) from the FPSIMD registers: V0-V31
    /// in the low bits of Z0-Z31, everything else zero.
    fn fpsimd_to_regs(&mut self, format: Format) {
        let fp = self.fp;
        self.st.format = format;
        let vq = self.regs_vq();
        let buf = self.regs_buf();
        buf.fill(0);
        put_vregs(buf, vq, &fp.vregs);
    }
}

/// Writes V0-V31 into the low 128 bits of Z0-Z31 of a Z/P/FFR buffer of `vq` quadwords.
fn put_vregs(buf: &mut [u8], vq: usize, vregs: &[u128; 32]) {
    for (z, v) in buf.chunks_exact_mut(16 * vq.max(1)).zip(vregs) {
        if let Some(low) = z.first_chunk_mut::<16>() {
            *low = v.to_le_bytes();
        }
    }
}

impl Default for TaskFpState {
    fn default() -> Self {
        Self::new()
    }
}

/// PSTATE.SM/ZA from the CPU, for a task that may have changed them (SME enabled).
fn hw_svcr(f: &TaskFpState) -> Svcr {
    if f.st.sme {
        sme::read_svcr()
    } else {
        Svcr::default()
    }
}

fn do_save(t: &Task, f: &mut TaskFpState, save: Save) {
    if save.regs != Regs::Nothing && has_fpmr() {
        f.fpmr = fpsimd::fpmr::read();
    }
    match save.regs {
        Regs::Nothing => {}
        Regs::Fpsimd => {
            fpsimd::save(&mut f.fp);
            count(t, Counter::FpsimdSaves, 1);
            count(t, Counter::BytesSaved, 528);
        }
        Regs::Sve { .. } | Regs::Streaming { .. } => {
            fpsimd::save_control(&mut f.fp);
            let streaming = matches!(save.regs, Regs::Streaming { .. });
            let with_ffr = !streaming || fa64();
            let vq = f.regs_vq();
            let buf = f.regs_buf();
            if !with_ffr {
                buf[544 * vq..546 * vq].fill(0);
            }
            // The CPU's VL (ZCR, or SMCR in streaming mode) follows the task's while its state
            // is live; anything else is a kernel bug, and the save refuses to run past buf.
            if let Err(e) = sve::save(buf, vq, with_ffr) {
                log::error!(
                    "SVE save skipped: VL {} is not the task's {}",
                    e.hw,
                    e.expected
                );
                count(t, Counter::Mismatch, 1);
                return;
            }
            count(t, Counter::SveSaves, 1);
            count(t, Counter::BytesSaved, 8 + sve::state_size(vq) as u64);
        }
    }
    if let Some(svl) = save.za {
        // The hardware's streaming VL must be the task's (SMCR follows it while the task
        // owns the registers); anything else is a kernel bug, and the save refuses to overrun.
        let buf = f.za_buf();
        if let Err(e) = sme::save_za(buf, svl as usize) {
            log::error!(
                "ZA save skipped: streaming VL {} is not the task's {}",
                e.hw,
                e.expected
            );
            count(t, Counter::Mismatch, 1);
            return;
        }
        if sme2() {
            // SME2 (EZT0 set at boot) with ZA on; ZT0's 64 bytes follow ZA.
            if let Some(zt0) = buf[sme::za_size(svl as usize)..].first_chunk_mut() {
                sme::save_zt0(zt0);
            }
        }
        count(t, Counter::ZaSaves, 1);
        count(t, Counter::BytesSaved, buf.len() as u64);
    }
}

/// Context switch away from task `t`, whose locals these are, under the scheduler's
/// interrupt mask.
/// The task's FP state, to change: its `work::FP` bit is set, so its next return to user mode
/// (and, while SVE or SME is enabled, each syscall entry) runs the FP hooks.
fn fpu_mut<'a>(t: &Task, l: &'a TaskLocal) -> RefMut<'a, TaskFpState> {
    // Only the task itself, or the holder of a task that is not running, sets or clears this
    // bit: a plain look first saves the atomic update when it is already set.
    if t.work.get() & work::FP == 0 {
        t.work.set(work::FP);
    }
    l.fpu.borrow_mut()
}

/// A switch to task `next`: its return to user mode loads its state if this CPU no longer
/// holds it (one bit: cheaper than asking the CPU here, and every switch used to ask).
pub fn fpsimd_thread_switch_in(next: &Task) {
    // An SVE or SME task keeps the bit: a load, not an atomic OR, when it is there already.
    if next.work.get() & work::FP == 0 {
        next.work.set(work::FP);
    }
}

pub fn fpsimd_thread_switch(t: &Task, l: &TaskLocal, irqs: &cpu::IrqGuard) {
    let f = &mut *l.fpu.borrow_mut();
    let hw = hw_svcr(f);
    let fp = policy().fp;
    let save = with_cpu(irqs, |c| fps::context_switch(c, &mut f.st, hw, fp));
    do_save(t, f, save);
}

/// A guest is about to load its own FP registers on this CPU (a vCPU's first FP access in
/// KVM_RUN, on the task's kernel stack): what the task has live is saved, streaming mode and ZA
/// end, and its return to user mode reloads its state.
pub fn lend_to_guest(cur: &CurrentTask) {
    let irqs = cpu::IrqGuard::new();
    // The registers will not hold the task's state: its return to user mode must look.
    let f = &mut *fpu_mut(cur.task(), cur.local());
    let hw = hw_svcr(f);
    let save = with_cpu(&irqs, |c| fps::lend_to_guest(c, &mut f.st, hw));
    do_save(cur.task(), f, save);
    // Streaming mode and ZA end whoever left them on: this task, or another that ran here
    // since the vCPU last had the registers (its state already went to memory when it was
    // switched out). The guest's loads need the non-streaming VL.
    if has_sme() && sme::read_svcr() != Svcr::default() {
        sme::write_svcr(Svcr::default());
    }
}

/// Before a vCPU thread enters its guest after being away from the CPU: when another task left
/// streaming mode on here, the registers go to the guest's side (`lend_to_guest`), which ends
/// it. Rare: one SVCR read otherwise.
pub fn leave_foreign_streaming(cur: &CurrentTask) {
    if has_sme() && sme::read_svcr().sm {
        lend_to_guest(cur);
    }
}

/// On the way back to user mode (IRQs masked): load the task's state unless the registers
/// hold it.
pub fn fpsimd_restore_current_state(cur: &CurrentTask) {
    let f = &mut *cur.local().fpu.borrow_mut();
    // Held (the common case) is told apart before a `Restore` is built.
    let r = with_cpu(&cpu::IrqGuard::new(), |c| {
        (!fps::resume_held(c, &f.st)).then(|| fps::return_to_user(c, &mut f.st))
    });
    // Loaded: the bit stays only for an SVE or SME task, whose syscalls discard state and
    // whose returns reset `to_save`. Nobody else sets it while this task runs here. The held
    // case (nearly every return) leaves straight from its own copy of the check, and the
    // work word is looked at first: it is clear on most returns of a task without SVE or SME.
    let t = cur.task();
    let drop_fp_bit = |f: &TaskFpState| {
        if t.work.get() & work::FP != 0 && !f.st.sve && !f.st.sme {
            t.work.clear(work::FP);
        }
    };
    let Some(r) = r else {
        drop_fp_bit(f);
        return;
    };
    drop_fp_bit(f);
    let Some(format) = r.load else { return };
    if let Some(len) = r.set_zcr {
        sve::set_len(len);
    }
    if let Some(len) = r.set_smcr {
        sme::set_len(len);
    }
    if let Some(on) = r.set_zen_el0 {
        sve::set_el0_access(on);
    }
    if let Some(on) = r.set_smen_el0 {
        sme::set_el0_access(on);
    }
    if let Some(s) = r.svcr {
        sme::write_svcr(s);
    }
    // After SVCR: a change of streaming mode zeroes FPMR.
    if has_fpmr() {
        fpsimd::fpmr::write(f.fpmr);
    }
    match format {
        Format::Fpsimd => {
            fpsimd::load(&f.fp);
            count(t, Counter::FpsimdRestores, 1);
            count(t, Counter::BytesRestored, 528);
        }
        Format::Sve | Format::Streaming => {
            let with_ffr = format == Format::Sve || fa64();
            let vq = f.regs_vq();
            let buf = f.regs_buf();
            // The VL was set above (or already was) and SVCR.SM matches the format.
            if let Err(e) = sve::load(buf, vq, with_ffr) {
                log::error!(
                    "SVE load skipped: VL {} is not the task's {}",
                    e.hw,
                    e.expected
                );
                count(t, Counter::Mismatch, 1);
            }
            fpsimd::load_control(&f.fp);
            count(t, Counter::SveRestores, 1);
            count(t, Counter::BytesRestored, 8 + sve::state_size(vq) as u64);
        }
    }
    if r.load_za {
        let svl = f.st.sme_vl as usize;
        let buf = f.za_buf();
        // SVCR.ZA was set above and SMCR gives the task's SVL.
        if let Err(e) = sme::load_za(buf, svl) {
            log::error!(
                "ZA load skipped: streaming VL {} is not the task's {}",
                e.hw,
                e.expected
            );
            count(t, Counter::Mismatch, 1);
        }
        if sme2() {
            if let Some(zt0) = buf[sme::za_size(svl)..].first_chunk() {
                sme::load_zt0(zt0);
            }
        }
        count(t, Counter::ZaRestores, 1);
        count(t, Counter::BytesRestored, buf.len() as u64);
    }
}

/// How an SVE or SME access trap from EL0 ended (the codes the vector acts on: 0 goes
/// straight back to user mode).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum AccessTrap {
    /// First use, with the registers still holding the task's state: its return to user mode
    /// has nothing to load.
    Live = 0,
    /// First use (or a trap the state machine refused, counted as a mismatch); the return to
    /// user mode must go the full way.
    Reload,
    /// Not first use: an SME instruction illegal in the current mode (SIGILL).
    Illegal,
}

/// The first SVE instruction from EL0 trapped (EC 0x19); `irqs` proves IRQs are masked.
pub fn do_sve_acc(cur: &CurrentTask, irqs: &cpu::IrqGuard) -> AccessTrap {
    let t = cur.task();
    let f = &mut *fpu_mut(t, cur.local());
    let done = match with_cpu(irqs, |c| fps::sve_trap(c, &mut f.st)) {
        Ok(p) => {
            if let Some(len) = p.set_zcr {
                sve::set_len(len);
            }
            if p.flush_live {
                sve::flush_live();
            }
            if p.convert_saved {
                f.fpsimd_to_regs(Format::Sve);
            }
            if p.enable_zen_el0 {
                sve::set_el0_access(true);
            }
            if p.flush_live {
                AccessTrap::Live
            } else {
                AccessTrap::Reload
            }
        }
        Err(fps::AlreadyEnabled) => {
            log::error!("SVE trap with SVE already enabled for tid {}", cur.tid);
            count(t, Counter::Mismatch, 1);
            AccessTrap::Reload
        }
    };
    count(t, Counter::SveTraps, 1);
    done
}

/// An SME trap from EL0 (EC 0x1D); `irqs` proves IRQs are masked. First use (SMTC 0) enables
/// SME; any other trap code is `Illegal` (SIGILL).
pub fn do_sme_acc(cur: &CurrentTask, irqs: &cpu::IrqGuard, smtc: u8) -> AccessTrap {
    let t = cur.task();
    let f = &mut *fpu_mut(t, cur.local());
    let done = match with_cpu(irqs, |c| fps::sme_trap(c, &mut f.st, smtc)) {
        Ok(p) => {
            if let Some(len) = p.set_smcr {
                sme::set_len(len);
            }
            if p.enable_smen_el0 {
                sme::set_el0_access(true);
                AccessTrap::Live
            } else {
                AccessTrap::Reload
            }
        }
        Err(SmeTrapError::Illegal) => return AccessTrap::Illegal,
        Err(SmeTrapError::AlreadyEnabled) => {
            log::error!("SME trap with SME already enabled for tid {}", cur.tid);
            count(t, Counter::Mismatch, 1);
            AccessTrap::Reload
        }
    };
    count(t, Counter::SmeTraps, 1);
    done
}

/// Syscall entry: streaming mode ends; SVE state beyond V0-V31 becomes zero (kept under
/// `svelt.sve_syscall=keep`).
pub fn fp_user_discard(cur: &CurrentTask) {
    // A copy: read once, not again after each system-register access below.
    let st = cur.local().fpu.borrow().st;
    // Nothing beyond V0-V31 to discard for a task that never used SVE or SME (its next save
    // is FPSIMD-only whatever `to_save` says).
    if !st.sve && !st.sme {
        return;
    }
    let irqs = cpu::IrqGuard::new();
    let hw_sm = st.sme && sme::read_svcr().sm;
    let keep = policy().sve_syscall;
    let plan = with_cpu(&irqs, |c| fps::syscall_entry(c, &st, hw_sm, keep));
    if plan.smstop_sm {
        sme::smstop_sm();
    }
    if plan.flush_sve {
        sve::flush_live();
    }
    drop(irqs);
}

/// Saves the running task's live registers to memory, keeping them live (signal delivery,
/// fork). Returns the task's FP state.
fn fpsimd_preserve_current_state<'a>(t: &Task, l: &'a TaskLocal) -> RefMut<'a, TaskFpState> {
    let mut f = fpu_mut(t, l);
    let irqs = cpu::IrqGuard::new();
    let hw = hw_svcr(&f);
    let save = with_cpu(&irqs, |c| fps::sync_to_memory(c, &mut f.st, hw));
    do_save(t, &mut f, save);
    drop(irqs);
    f
}

/// sigreturn's save (`fps::sigreturn_entry`): of the live state only SVCR, ZA and FPMR, which a
/// frame may leave as they are. Returns the task's FP state.
fn sigreturn_preserve<'a>(t: &Task, l: &'a TaskLocal) -> RefMut<'a, TaskFpState> {
    let mut f = fpu_mut(t, l);
    let irqs = cpu::IrqGuard::new();
    let hw = hw_svcr(&f);
    let (save, live) = with_cpu(&irqs, |c| {
        let live = c.holds(&f.st);
        (fps::sigreturn_entry(c, &mut f.st, hw), live)
    });
    if live && has_fpmr() {
        f.fpmr = fpsimd::fpmr::read();
    }
    do_save(t, &mut f, save);
    drop(irqs);
    f
}

/// A new task's FP state: the parent's V registers (zero if it was streaming), FPSIMD only,
/// same VLs and VL settings; ZA and TPIDR2 copied unless the child shares the address space.
pub fn fork_state(cur: &CurrentTask, clone_vm: bool) -> TaskFpState {
    let mut pf = fpsimd_preserve_current_state(cur.task(), cur.local());
    if has_sme() {
        pf.tpidr2 = sme::read_tpidr2();
    }
    let mut c = TaskFpState::new();
    c.st = fps::fork(&pf.st, c.st.id, clone_vm, policy().sme_trap);
    c.fp = pf.fpsimd_view();
    if pf.st.svcr.sm {
        c.fp.vregs = [0; 32];
        c.fp.fpsr = FPSR_AFTER_SMSTOP;
    }
    if c.st.svcr.za {
        c.za = pf.za.clone();
    }
    c.tpidr2 = if clone_vm { 0 } else { pf.tpidr2 };
    // Leaving streaming mode zeroes FPMR, as it zeroes the vector registers.
    c.fpmr = if pf.st.svcr.sm { 0 } else { pf.fpmr };
    c.sve_onexec = pf.sve_onexec;
    c.sve_inherit = pf.sve_inherit;
    c.sme_onexec = pf.sme_onexec;
    c.sme_inherit = pf.sme_inherit;
    c
}

/// execve: zeroed FPSIMD state; VLs from pending ONEXEC requests or the system defaults.
pub fn fpsimd_flush_thread(cur: &CurrentTask) {
    let f = &mut *fpu_mut(cur.task(), cur.local());
    let sv = vlctl::on_exec(&sve_ctl(f), SVE_DEFAULT_VL.load(Ordering::Relaxed));
    let sm = vlctl::on_exec(&sme_ctl(f), SME_DEFAULT_VL.load(Ordering::Relaxed));
    f.sve_onexec = sv.onexec;
    f.sve_inherit = sv.inherit;
    f.sme_onexec = sm.onexec;
    f.sme_inherit = sm.inherit;
    f.fp = FpsimdState::default();
    f.sve = Vec::new();
    f.za = Vec::new();
    f.tpidr2 = 0;
    f.fpmr = 0;
    fps::exec(&mut f.st, sv.cur, sm.cur, policy().sme_trap);
    if has_sme() {
        sme::write_tpidr2(0);
    }
}

/// /proc/svelt/fpstat: the system's counters, then `policy fp=... sve_syscall=... sme_trap=...
/// abi=...`.
pub fn format_system_fpstat(sum: &[u64; NR_COUNTERS]) -> String {
    alloc::format!(
        "{}{} {}\n",
        format_counters(sum),
        svelt_abi::fp::fppolicy::FPSTAT_KEY,
        policy()
    )
}

/// The counters as `key value` lines.
pub fn format_counters(c: &[u64; NR_COUNTERS]) -> String {
    let mut s = String::new();
    for (name, v) in COUNTER_NAMES.iter().zip(c.iter()) {
        s += &alloc::format!("{name} {v}\n");
    }
    s
}

/// Context switch of TPIDR2_EL0 (eager, like TPIDR_EL0), on SME systems.
pub fn switch_tpidr2(prev: Option<&TaskLocal>, next: Option<&TaskLocal>) {
    if !has_sme() {
        return;
    }
    if let Some(p) = prev {
        p.fpu.borrow_mut().tpidr2 = sme::read_tpidr2();
    }
    if let Some(n) = next {
        sme::write_tpidr2(n.fpu.borrow().tpidr2);
    }
}

/// This CPU's FP ownership record, empty (at bring-up, after `cpufeature::init_this_cpu`).
pub fn cpu_init() {
    let f = crate::cpufeature::features();
    let caps = [
        (f.sve, CAP_SVE),
        (crate::cpufeature::offer().sme, CAP_SME),
        (f.sme_fa64, CAP_FA64),
        (f.sme2(), CAP_SME2),
        (f.fpmr, CAP_FPMR),
    ]
    .into_iter()
    .filter(|&(has, _)| has)
    .fold(0, |caps, (_, bit)| caps | bit);
    CAPS.store(caps, Ordering::Relaxed);
    let fresh = CpuFp::new(percpu::cpu_id() as u32, has_sme());
    with_cpu(&cpu::IrqGuard::new(), |c| *c = fresh);
}
