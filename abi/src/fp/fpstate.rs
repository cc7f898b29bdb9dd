//! The lazy FP/SVE/SME state machine: what the kernel must do with a task's vector registers
//! at each event, decided on plain data so that every rule is tested on the host.
//!
//! # Theory of operation
//!
//! **What a task has.** Every task has FPSIMD state: V0-V31, FPSR and FPCR (and FPMR where the
//! CPU has it). A task that has used SVE also has Z0-Z31, P0-P15 and FFR at its SVE vector
//! length. A task that has used SME has PSTATE.SM and PSTATE.ZA (together, the SVCR register),
//! the streaming Z/P registers (FFR too with FA64) at its SME vector length while SM is set, and
//! ZA (and ZT0 with SME2) while ZA is set. Each task also has its own SVE and SME lengths.
//!
//! **Where it is.** While a task runs, its state is in the CPU's registers. While it does not,
//! the state is either still in the registers of the CPU it last ran on, untouched, or in memory
//! (the kernel's `TaskFpState`). The memory copy has one [`Format`]: FPSIMD only, full SVE at the
//! task's SVE VL, or streaming SVE at its SME VL; ZA (and ZT0) is kept beside it, and only while
//! PSTATE.ZA is set. Registers are never saved in a fuller format than what is live, and state
//! that is not live is never saved, loaded or put in a signal frame.
//!
//! **Who holds what.** Two records, one on each side, say whether the registers still hold a
//! task's state (Linux keeps the same pair: `fpsimd_last_state` per CPU, `fpsimd_cpu` per task).
//! A CPU remembers the task whose state its registers hold ([`CpuFp::owner`]); a task remembers
//! the CPU that last held its state ([`TaskFp::last_cpu`]). The state is *live* on CPU c when
//! both name each other ([`CpuFp::holds`]), and neither alone is enough: c may still name a task
//! that has since run on another CPU and changed its registers there, and a task's `last_cpu`
//! may name a CPU that has since loaded another task. Task ids are never reused, so a CPU's
//! record cannot be taken for a newer task. Cutting the task's side ([`invalidate`]) is how the
//! kernel says the registers are stale: after it edits the saved copy (sigreturn, ptrace, a
//! vector-length change, exec), the task's next return to user mode reloads.
//!
//! **Saving and loading happen at different times.** A context switch ([`context_switch`],
//! Linux's `fpsimd_thread_switch`) saves the outgoing task's state only if it is live, and only
//! the parts that are (FPSIMD, SVE or streaming, ZA); it loads nothing. A task's state is loaded
//! on its way back to user mode ([`return_to_user`], Linux's `fpsimd_restore_current_state`),
//! and only when it is not live on that CPU. Hence:
//! - a syscall, an interrupt or a sleep after which the task returns to a CPU nobody else used
//!   in between reloads nothing;
//! - a task that alternates with another on a *different* CPU never reloads;
//! - tasks that take turns on one CPU save and load once per switch each.
//!
//! The CPU's record also remembers the last ZCR/SMCR length and the CPACR EL0 enables it wrote,
//! so those registers are written only when a load changes them.
//!
//! **First use traps.** After exec a task has FPSIMD state only, and EL0 SVE and SME accesses
//! trap (CPACR_EL1.ZEN and SMEN; the task's [`TaskFp::sve`] and [`TaskFp::sme`] are clear,
//! Linux's TIF_SVE and TIF_SME). The first SVE instruction ([`sve_trap`], Linux's `do_sve_acc`)
//! enables SVE for the task and zeroes every SVE bit beyond V0-V31: in the registers if they are
//! live, else in the saved copy, which becomes SVE format and loads on return. The first SME
//! instruction ([`sme_trap`], `do_sme_acc`) enables SME and leaves SVCR alone: the SMSTART that
//! trapped runs again. An SME trap that reports an illegal instruction
//! for the current mode (SMTC not 0) is SIGILL, not first use. Once SME is enabled, the task sets
//! and clears PSTATE.SM and PSTATE.ZA itself without trapping, so every save reads SVCR from the
//! CPU (the caller passes it in as [`Svcr`]).
//!
//! **Syscalls** (Linux 6.16's rules). A syscall ends streaming mode (SMSTOP SM, which zeroes
//! the Z, P and FFR registers and keeps ZA), and the SVE bits beyond V0-V31 do not survive it:
//! [`syscall_entry`] zeroes them in place and keeps SVE enabled. Until the task is back in user
//! mode the CPU's record says only FPSIMD (and ZA) needs saving ([`ToSave::FpsimdOnly`], Linux's
//! `to_save`), so a switch during the syscall saves only that, and the load from that FPSIMD
//! copy turns SVE off for the task until it traps again. A task that keeps its CPU through its
//! syscalls keeps SVE without trapping; one whose state was reloaded from such a copy pays one
//! trap when it uses SVE again.
//!
//! **Signals.** Delivery first saves what is live without giving up the registers
//! ([`sync_to_memory`]), so the frame's records hold the real values: an SVE record with a
//! payload only when SVE or streaming state is live, a ZA record with a payload only while ZA is
//! on, ZT0 with SME2, TPIDR2. The handler then starts with SM and ZA off ([`signal_entry`]).
//! sigreturn first saves only what a frame may leave as it is ([`sigreturn_entry`]: SVCR and
//! ZA), checks every record (the `sigframe` module), writes the saved copy and cuts the task's
//! side of the link, so the registers reload lazily on the way out.
//!
//! **fork, exec and vector-length changes** ([`fork`], [`exec`], [`change_vl`],
//! [`change_sme_vl`]) all act on the memory copy and leave the task to reload on return.
//!
//! **What the kernel counts.** The kernel counts traps, saves, restores and bytes moved, per
//! task and for the system (/proc/svelt/fpstat, /proc/PID/fpstat; the repository's
//! docs/vector-state.md shows how to read them). A save or load refused because the CPU's vector
//! length is not the owner's, or an access trap taken while that access was already enabled
//! ([`AlreadyEnabled`], [`SmeTrapError::AlreadyEnabled`]), is a kernel bug: it is logged and
//! counted as `mismatch`, which should stay 0.
//!
//! **Who does what.** Each function here returns a plan (a small struct of things to do); the
//! kernel's fpstate module carries it out with the save, load and flush primitives under
//! `arch/aarch64/fpsimd/`, the only kernel code that touches the vector registers. The kernel
//! itself never uses them (it is built for a soft-float target), so, unlike Linux, it has no
//! kernel-mode NEON state competing with the user's.
//!
//! **Policies.** The switches of `fppolicy` enter at four points: [`context_switch`]
//! (`svelt.fp`), [`syscall_entry`] (`svelt.sve_syscall`), [`exec`] and [`fork`]
//! (`svelt.sme_trap`). With the defaults every decision is Linux's.

use crate::fp::fppolicy::{Restore as RestorePolicy, SmeAccess, SveSyscall};

/// What the saved copy of a task's vector registers holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// V0-V31, FPSR, FPCR only; Z bits above 128, P and FFR are zero.
    Fpsimd,
    /// Z0-Z31, P0-P15, FFR at the task's SVE VL (plus FPSR/FPCR).
    Sve,
    /// Streaming-mode Z0-Z31, P0-P15 (FFR with FA64) at the task's SME VL (PSTATE.SM = 1).
    Streaming,
}

/// PSTATE.SM and PSTATE.ZA (the SVCR register).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Svcr {
    pub sm: bool,
    pub za: bool,
}

/// Per-task FP state bookkeeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskFp {
    /// Never reused (unlike addresses), so a CPU's owner cannot be mistaken for a newer task.
    pub id: u64,
    /// CPU whose registers last held this task's state.
    pub last_cpu: Option<u32>,
    pub format: Format,
    /// EL0 SVE access enabled and SVE state tracked (TIF_SVE).
    pub sve: bool,
    /// The task's SVE vector length in bytes.
    pub sve_vl: u32,
    /// EL0 SME access enabled; ZA and streaming storage exist (TIF_SME).
    pub sme: bool,
    /// The task's streaming (SME) vector length in bytes (0 without SME).
    pub sme_vl: u32,
    /// Saved PSTATE.SM / PSTATE.ZA (meaningful while the state is not live).
    pub svcr: Svcr,
}

impl TaskFp {
    pub const fn new(id: u64, sve_vl: u32, sme_vl: u32) -> TaskFp {
        TaskFp {
            id,
            last_cpu: None,
            format: Format::Fpsimd,
            sve: false,
            sve_vl,
            sme: false,
            sme_vl,
            svcr: Svcr {
                sm: false,
                za: false,
            },
        }
    }
}

/// What a switch-out may discard (Linux's `to_save`): after a syscall entry the SVE upper
/// bits are dead, so only FPSIMD needs saving (ZA, kept across syscalls, still counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToSave {
    Current,
    FpsimdOnly,
}

/// Per-CPU bookkeeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuFp {
    pub cpu: u32,
    /// Task id whose state the registers hold (0: none).
    pub owner: u64,
    pub to_save: ToSave,
    /// ZCR_EL1.LEN / SMCR_EL1.LEN as last written (None: unknown): written only on change.
    pub zcr_len: Option<u32>,
    pub smcr_len: Option<u32>,
    /// Whether EL0 SVE / SME access is currently enabled in CPACR_EL1.
    pub zen_el0: bool,
    pub smen_el0: bool,
    /// The CPU implements SME (so SVCR is written whenever a state is loaded).
    pub has_sme: bool,
}

impl CpuFp {
    pub const fn new(cpu: u32, has_sme: bool) -> CpuFp {
        CpuFp {
            cpu,
            owner: 0,
            to_save: ToSave::Current,
            zcr_len: None,
            smcr_len: None,
            zen_el0: false,
            smen_el0: false,
            has_sme,
        }
    }

    /// The task's registers are in this CPU's register file.
    pub fn holds(&self, t: &TaskFp) -> bool {
        self.owner == t.id && t.last_cpu == Some(self.cpu)
    }
}

/// LEN field for a vector length in bytes.
pub const fn len_for_vl(vl: u32) -> u32 {
    vl / 16 - 1
}

/// Which vector registers to save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regs {
    Nothing,
    Fpsimd,
    /// Z/P/FFR at this VL (the CPU's ZCR is already at it) plus FPSR/FPCR.
    Sve {
        vl: u32,
    },
    /// Streaming Z/P (FFR with FA64) at this SVL plus FPSR/FPCR.
    Streaming {
        vl: u32,
    },
}

/// Saving a live task's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Save {
    pub regs: Regs,
    /// Save ZA (and ZT0 with SME2) at this SVL.
    pub za: Option<u32>,
}

impl Save {
    pub const NOTHING: Save = Save {
        regs: Regs::Nothing,
        za: None,
    };
}

/// Context switch away from `t` on `cpu`: save what is live. `hw` is SVCR as read from the
/// CPU (callers read it only for tasks with `sme`; it is zero otherwise).
pub fn switch_out(cpu: &mut CpuFp, t: &mut TaskFp, hw: Svcr) -> Save {
    if !cpu.holds(t) {
        return Save::NOTHING;
    }
    let hw = if t.sme { hw } else { Svcr::default() };
    t.svcr = hw;
    let regs = if hw.sm {
        t.format = Format::Streaming;
        Regs::Streaming { vl: t.sme_vl }
    } else if t.sve && cpu.to_save == ToSave::Current {
        t.format = Format::Sve;
        Regs::Sve { vl: t.sve_vl }
    } else {
        t.format = Format::Fpsimd;
        Regs::Fpsimd
    };
    cpu.to_save = ToSave::Current;
    Save {
        regs,
        za: hw.za.then_some(t.sme_vl),
    }
}

/// The scheduler switches away from `t` on `cpu` (`svelt.fp`): save what is live, as
/// `switch_out`. Under `eager` the CPU then forgets it holds the task's registers, so the
/// task's next return to user mode reloads them from memory wherever it runs, even if nothing
/// used the registers in between; under `lazy` it reloads only if something did.
pub fn context_switch(cpu: &mut CpuFp, t: &mut TaskFp, hw: Svcr, policy: RestorePolicy) -> Save {
    let save = switch_out(cpu, t, hw);
    if policy == RestorePolicy::Eager && cpu.owner == t.id {
        cpu.owner = 0;
        t.last_cpu = None;
    }
    save
}

/// Loading a task's state on the way back to user mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restore {
    /// None when the registers already hold the state.
    pub load: Option<Format>,
    /// Write ZCR_EL1.LEN / SMCR_EL1.LEN first.
    pub set_zcr: Option<u32>,
    pub set_smcr: Option<u32>,
    /// Change CPACR_EL1's EL0 SVE / SME enables to these.
    pub set_zen_el0: Option<bool>,
    pub set_smen_el0: Option<bool>,
    /// Write SVCR (PSTATE.SM, PSTATE.ZA) before loading any register.
    pub svcr: Option<Svcr>,
    /// Load ZA (and ZT0) after SVCR.ZA is set.
    pub load_za: bool,
}

const NO_RESTORE: Restore = Restore {
    load: None,
    set_zcr: None,
    set_smcr: None,
    set_zen_el0: None,
    set_smen_el0: None,
    svcr: None,
    load_za: false,
};

/// The common case of `return_to_user`, for callers that want it without building a
/// `Restore`: true when this CPU's registers hold the task's state, which then counts in full
/// again (the syscall, if any, is over) and needs no load.
#[inline]
pub fn resume_held(cpu: &mut CpuFp, t: &TaskFp) -> bool {
    if cpu.holds(t) {
        cpu.to_save = ToSave::Current;
        true
    } else {
        false
    }
}

/// Return to user mode: reload the task's state if this CPU does not hold it.
pub fn return_to_user(cpu: &mut CpuFp, t: &mut TaskFp) -> Restore {
    if resume_held(cpu, t) {
        return NO_RESTORE;
    }
    // A task whose state was last saved as FPSIMD only stops using SVE until it traps again.
    if t.format == Format::Fpsimd {
        t.sve = false;
    }
    let mut r = NO_RESTORE;
    // With SVE enabled, ZCR must hold the task's VL even when its state is streaming: the task
    // can leave streaming mode itself (SMSTOP) and use SVE without trapping.
    if t.sve {
        let len = len_for_vl(t.sve_vl);
        if cpu.zcr_len != Some(len) {
            cpu.zcr_len = Some(len);
            r.set_zcr = Some(len);
        }
    }
    // With SME enabled the task can enter streaming mode or turn ZA on (and read RDSVL)
    // without trapping, so SMCR must hold its VL whenever its state is loaded.
    if t.sme {
        let len = len_for_vl(t.sme_vl);
        if cpu.smcr_len != Some(len) {
            cpu.smcr_len = Some(len);
            r.set_smcr = Some(len);
        }
    }
    r.set_zen_el0 = (cpu.zen_el0 != t.sve).then_some(t.sve);
    cpu.zen_el0 = t.sve;
    if cpu.has_sme {
        r.set_smen_el0 = (cpu.smen_el0 != t.sme).then_some(t.sme);
        cpu.smen_el0 = t.sme;
        r.svcr = Some(t.svcr);
    }
    r.load_za = t.svcr.za;
    cpu.owner = t.id;
    cpu.to_save = ToSave::Current;
    t.last_cpu = Some(cpu.cpu);
    r.load = Some(t.format);
    r
}

/// The first SVE instruction from EL0 trapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SveTrap {
    /// Program ZCR_EL1.LEN (state live: before zeroing the upper bits).
    pub set_zcr: Option<u32>,
    /// The state is live: zero Z bits above 128, P and FFR in the registers.
    pub flush_live: bool,
    /// The state is in memory: turn the saved FPSIMD copy into a zeroed SVE copy with the V
    /// bits kept (it is loaded on return to user).
    pub convert_saved: bool,
    /// Enable EL0 SVE access now (live case).
    pub enable_zen_el0: bool,
}

/// SVE was already enabled when its access trap fired: a kernel bug (the trap should be off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyEnabled;

/// `do_sve_acc`.
pub fn sve_trap(cpu: &mut CpuFp, t: &mut TaskFp) -> Result<SveTrap, AlreadyEnabled> {
    if t.sve {
        return Err(AlreadyEnabled);
    }
    t.sve = true;
    if cpu.holds(t) {
        let len = len_for_vl(t.sve_vl);
        let set_zcr = (cpu.zcr_len != Some(len)).then_some(len);
        cpu.zcr_len = Some(len);
        cpu.zen_el0 = true;
        Ok(SveTrap {
            set_zcr,
            flush_live: true,
            convert_saved: false,
            enable_zen_el0: true,
        })
    } else {
        t.format = Format::Sve;
        t.last_cpu = None;
        Ok(SveTrap {
            set_zcr: None,
            flush_live: false,
            convert_saved: true,
            enable_zen_el0: false,
        })
    }
}

/// Why an SME trap is delivered as SIGILL rather than enabling SME.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmeTrapError {
    /// SMTC ≠ 0: the instruction is illegal in the current PSTATE.SM/ZA (or ZT0 is off).
    Illegal,
    /// SME was already enabled for the task (a kernel bug).
    AlreadyEnabled,
}

/// The first SME instruction from EL0 trapped (SMTC 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmeTrap {
    /// Program SMCR_EL1.LEN now (state live).
    pub set_smcr: Option<u32>,
    /// Enable EL0 SME access now (live case); otherwise on return to user.
    pub enable_smen_el0: bool,
}

/// `do_sme_acc`: SVCR is not touched; the trapping SMSTART simply runs again.
pub fn sme_trap(cpu: &mut CpuFp, t: &mut TaskFp, smtc: u8) -> Result<SmeTrap, SmeTrapError> {
    if smtc != 0 {
        return Err(SmeTrapError::Illegal);
    }
    if t.sme {
        return Err(SmeTrapError::AlreadyEnabled);
    }
    t.sme = true;
    if cpu.holds(t) {
        let len = len_for_vl(t.sme_vl);
        let set_smcr = (cpu.smcr_len != Some(len)).then_some(len);
        cpu.smcr_len = Some(len);
        cpu.smen_el0 = true;
        Ok(SmeTrap {
            set_smcr,
            enable_smen_el0: true,
        })
    } else {
        t.last_cpu = None;
        Ok(SmeTrap {
            set_smcr: None,
            enable_smen_el0: false,
        })
    }
}

/// What syscall entry does to the live registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyscallEntry {
    /// Leave streaming mode (SMSTOP SM: every Z, P, FFR becomes zero; ZA is kept).
    pub smstop_sm: bool,
    /// Zero the SVE state beyond V0-V31.
    pub flush_sve: bool,
}

/// Syscall entry: streaming mode ends and SVE state beyond V0-V31 is discarded. `hw_sm` is
/// PSTATE.SM as read from the CPU (only for tasks with `sme`). Until the task is back in user
/// mode (`return_to_user`), a save, including one for a signal delivered on the way out, keeps
/// only FPSIMD (and ZA), as Linux's frames after a syscall show.
///
/// Under `svelt.sve_syscall=keep` (not Linux) the non-streaming SVE registers are left alone
/// and a save during the syscall keeps them in full; streaming mode still ends (SMSTOP SM
/// zeroes every Z, P and FFR register, so a save then keeps FPSIMD only, as under `discard`).
pub fn syscall_entry(cpu: &mut CpuFp, t: &TaskFp, hw_sm: bool, policy: SveSyscall) -> SyscallEntry {
    if !cpu.holds(t) {
        return SyscallEntry {
            smstop_sm: false,
            flush_sve: false,
        };
    }
    let smstop_sm = t.sme && hw_sm;
    // Out of streaming mode every register is zero: FPSIMD holds all of it (and ZCR, which a
    // streaming task's load did not set, need not match its SVE VL).
    if policy == SveSyscall::Keep && !smstop_sm {
        return SyscallEntry {
            smstop_sm,
            flush_sve: false,
        };
    }
    cpu.to_save = ToSave::FpsimdOnly;
    SyscallEntry {
        smstop_sm,
        flush_sve: t.sve && !smstop_sm,
    }
}

/// Before the kernel reads a running task's state from memory (signal delivery, fork):
/// save what is live, keeping it live (the registers still hold exactly what was saved).
pub fn sync_to_memory(cpu: &mut CpuFp, t: &mut TaskFp, hw: Svcr) -> Save {
    switch_out(cpu, t, hw)
}

/// sigreturn, before the frame's records are checked: sigreturn replaces V0-V31, FPSR, FPCR
/// and the SVE or streaming registers from the frame, so of what is live only what a frame may
/// leave as it is must reach memory: PSTATE.SM/ZA (the records are checked against ZA's state)
/// and ZA's contents (kept when the frame has no za_context). The registers stay live, so a
/// refused frame changes nothing; an accepted one cuts the link (`invalidate`) and the state
/// reloads from memory. Leaves `to_save` as a save would (the syscall's discard is over). The
/// caller reads FPMR too (kept without an fpmr_context) when the state is live.
pub fn sigreturn_entry(cpu: &mut CpuFp, t: &mut TaskFp, hw: Svcr) -> Save {
    if !cpu.holds(t) {
        return Save::NOTHING;
    }
    let hw = if t.sme { hw } else { Svcr::default() };
    t.svcr = hw;
    cpu.to_save = ToSave::Current;
    Save {
        regs: Regs::Nothing,
        za: hw.za.then_some(t.sme_vl),
    }
}

/// A guest takes the registers on `cpu` (a vCPU's first FP access in KVM_RUN, on the task's own
/// kernel stack): save what `t` has live, as a switch away would, and forget that the CPU holds
/// it, so the task's return to user mode reloads it whatever the guest left behind.
pub fn lend_to_guest(cpu: &mut CpuFp, t: &mut TaskFp, hw: Svcr) -> Save {
    let save = switch_out(cpu, t, hw);
    cpu.owner = 0;
    // A guest with SVE runs under its own ZCR_EL2.LEN: the next load writes the task's again.
    cpu.zcr_len = None;
    save
}

/// After the kernel edits a task's saved state (sigreturn, VL change, ptrace, exec): the
/// registers no longer hold it.
pub fn invalidate(t: &mut TaskFp) {
    t.last_cpu = None;
}

/// What signal delivery does to the saved state after the frame holds a copy (6.16+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalEntry {
    /// The task was in streaming mode: the handler starts with SMSTOP semantics (V0-V31 zero,
    /// FPSR = 0x0800009F, FPSIMD format).
    pub left_streaming: bool,
}

/// Signal delivery (call after `sync_to_memory`): the handler runs with SM = 0 and ZA = 0.
pub fn signal_entry(t: &mut TaskFp) -> SignalEntry {
    let left_streaming = t.svcr.sm;
    if left_streaming {
        t.format = Format::Fpsimd;
    }
    let changed = t.svcr != Svcr::default();
    t.svcr = Svcr::default();
    if changed {
        t.last_cpu = None;
    }
    SignalEntry { left_streaming }
}

/// execve: a fresh FPSIMD-only, zeroed state at the new VLs; SVE traps again, and so does SME
/// under `svelt.sme_trap=lazy`. Under `eager` SME is enabled at once when the system has it
/// (`sme_vl` is 0 without SME), with SVCR zero: the first SMSTART finds zeroed state, as after
/// a trap.
pub fn exec(t: &mut TaskFp, sve_vl: u32, sme_vl: u32, policy: SmeAccess) {
    t.format = Format::Fpsimd;
    t.sve = false;
    t.sme = policy == SmeAccess::Eager && sme_vl != 0;
    t.svcr = Svcr::default();
    t.sve_vl = sve_vl;
    t.sme_vl = sme_vl;
    t.last_cpu = None;
}

/// fork/clone: the child starts FPSIMD-only, out of streaming mode, with the parent's VLs.
/// Without CLONE_VM it inherits ZA (and with it SME access); with CLONE_VM ZA is off. The
/// caller saves the parent with `sync_to_memory` and builds the child's V registers (zero if
/// the parent was streaming). Under `svelt.sme_trap=eager` every child has SME access when
/// the system has SME.
pub fn fork(parent: &TaskFp, child_id: u64, clone_vm: bool, policy: SmeAccess) -> TaskFp {
    let za = parent.svcr.za && !clone_vm;
    let sme = za || (policy == SmeAccess::Eager && parent.sme_vl != 0);
    TaskFp {
        id: child_id,
        last_cpu: None,
        format: Format::Fpsimd,
        sve: false,
        sve_vl: parent.sve_vl,
        sme,
        sme_vl: parent.sme_vl,
        svcr: Svcr { sm: false, za },
    }
}

/// A live change of the SVE vector length: the caller has saved the state; V0-V31 are kept
/// (converted to FPSIMD format), everything else reads as zero at the new length. ZA and
/// streaming state (at the SME VL) are untouched.
pub fn change_vl(t: &mut TaskFp, new_vl: u32) {
    if t.format == Format::Sve {
        t.format = Format::Fpsimd;
    }
    t.sve_vl = new_vl;
    t.last_cpu = None;
}

/// A live change of the SME vector length (7.3): ZA is discarded, PSTATE.SM is kept with
/// streaming registers holding only V0-V31 at the new length. Returns whether the task is
/// streaming (the caller then provides that copy).
pub fn change_sme_vl(t: &mut TaskFp, new_vl: u32) -> bool {
    t.sme_vl = new_vl;
    t.svcr.za = false;
    t.last_cpu = None;
    t.svcr.sm
}

#[cfg(test)]
mod tests;
