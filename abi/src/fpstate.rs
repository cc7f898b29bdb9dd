//! The lazy FP/SVE/SME state machine: what the kernel must do with a task's vector registers
//! at each event, decided on plain data so every rule is tested on the host.
//!
//! Model (the same ownership idea as Linux's `fpsimd_last_state` + `fpsimd_cpu`):
//! - a task's state is *live on CPU c* when c's registers hold it: `cpu.owner == task.id` and
//!   `task.last_cpu == Some(c)`. Both are needed: a task that ran elsewhere since (and changed
//!   its registers there) is not live on c even though c still names it as owner;
//! - the in-memory copy has a `Format`: FPSIMD only, full SVE at the task's SVE VL, or
//!   streaming SVE at its SME VL; ZA is saved separately, only while PSTATE.ZA is set;
//! - registers are saved when a live task is switched out, restored only on the way back to
//!   user mode and only if they are not live there ("foreign");
//! - `sve` / `sme` (Linux's TIF_SVE / TIF_SME) say EL0 may use the extension without trapping;
//!   the first use traps. With SME enabled, user code changes PSTATE.SM and PSTATE.ZA itself,
//!   so the kernel reads SVCR when it saves (`Svcr`, passed in by the caller).
//!
//! Each function returns a plan (a small struct of things to do); the arch code carries it out.
//!
//! The policy switches of `fppolicy` enter at four points: `context_switch` (`svelt.fp`),
//! `syscall_entry` (`svelt.sve_syscall`), `exec` and `fork` (`svelt.sme_trap`). With the
//! defaults every decision is Linux's.

use crate::fppolicy::{Restore as RestorePolicy, SmeAccess, SveSyscall};

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

/// Return to user mode: reload the task's state if this CPU does not hold it.
pub fn return_to_user(cpu: &mut CpuFp, t: &mut TaskFp) -> Restore {
    if cpu.holds(t) {
        // The syscall (if any) is over: what is live counts in full again.
        cpu.to_save = ToSave::Current;
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
