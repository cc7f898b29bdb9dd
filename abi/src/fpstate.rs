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
    if t.format == Format::Sve {
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
pub fn syscall_entry(cpu: &mut CpuFp, t: &TaskFp, hw_sm: bool) -> SyscallEntry {
    if !cpu.holds(t) {
        return SyscallEntry {
            smstop_sm: false,
            flush_sve: false,
        };
    }
    cpu.to_save = ToSave::FpsimdOnly;
    let smstop_sm = t.sme && hw_sm;
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

/// execve: a fresh FPSIMD-only, zeroed state at the new VLs; SVE and SME trap again.
pub fn exec(t: &mut TaskFp, sve_vl: u32, sme_vl: u32) {
    t.format = Format::Fpsimd;
    t.sve = false;
    t.sme = false;
    t.svcr = Svcr::default();
    t.sve_vl = sve_vl;
    t.sme_vl = sme_vl;
    t.last_cpu = None;
}

/// fork/clone: the child starts FPSIMD-only, out of streaming mode, with the parent's VLs.
/// Without CLONE_VM it inherits ZA (and with it SME access); with CLONE_VM ZA is off. The
/// caller saves the parent with `sync_to_memory` and builds the child's V registers (zero if
/// the parent was streaming).
pub fn fork(parent: &TaskFp, child_id: u64, clone_vm: bool) -> TaskFp {
    let za = parent.svcr.za && !clone_vm;
    TaskFp {
        id: child_id,
        last_cpu: None,
        format: Format::Fpsimd,
        sve: false,
        sve_vl: parent.sve_vl,
        sme: za,
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
mod tests {
    use super::*;

    const OFF: Svcr = Svcr {
        sm: false,
        za: false,
    };

    fn live(cpu: u32, id: u64) -> (CpuFp, TaskFp) {
        let mut c = CpuFp::new(cpu, false);
        let mut t = TaskFp::new(id, 64, 0);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(r.load, Some(Format::Fpsimd));
        (c, t)
    }

    fn live_sme(cpu: u32, id: u64) -> (CpuFp, TaskFp) {
        let mut c = CpuFp::new(cpu, true);
        let mut t = TaskFp::new(id, 64, 32);
        return_to_user(&mut c, &mut t);
        (c, t)
    }

    #[test]
    fn first_return_loads_then_nothing_while_live() {
        let (mut c, mut t) = live(0, 1);
        assert!(c.holds(&t));
        assert_eq!(return_to_user(&mut c, &mut t), NO_RESTORE);
    }

    #[test]
    fn same_cpu_nobody_else_reloads_nothing() {
        let (mut c, mut t) = live(0, 1);
        assert_eq!(switch_out(&mut c, &mut t, OFF).regs, Regs::Fpsimd);
        // Idle in between: nobody touched the registers.
        assert_eq!(return_to_user(&mut c, &mut t).load, None);
    }

    #[test]
    fn another_task_on_the_cpu_makes_it_foreign() {
        let (mut c, mut a) = live(0, 1);
        switch_out(&mut c, &mut a, OFF);
        let mut b = TaskFp::new(2, 64, 0);
        assert_eq!(return_to_user(&mut c, &mut b).load, Some(Format::Fpsimd));
        assert_eq!(switch_out(&mut c, &mut b, OFF).regs, Regs::Fpsimd);
        assert_eq!(return_to_user(&mut c, &mut a).load, Some(Format::Fpsimd));
    }

    #[test]
    fn migration_back_and_forth_reloads() {
        let mut c0 = CpuFp::new(0, false);
        let mut c1 = CpuFp::new(1, false);
        let mut t = TaskFp::new(7, 64, 0);
        return_to_user(&mut c0, &mut t);
        switch_out(&mut c0, &mut t, OFF);
        assert_eq!(return_to_user(&mut c1, &mut t).load, Some(Format::Fpsimd));
        assert_eq!(switch_out(&mut c1, &mut t, OFF).regs, Regs::Fpsimd);
        // CPU 0 still names the task as owner, but the task ran on CPU 1 since.
        assert_eq!(c0.owner, 7);
        assert_eq!(return_to_user(&mut c0, &mut t).load, Some(Format::Fpsimd));
    }

    #[test]
    fn not_live_saves_nothing() {
        let mut c = CpuFp::new(0, false);
        let mut t = TaskFp::new(3, 64, 0);
        assert_eq!(switch_out(&mut c, &mut t, OFF), Save::NOTHING);
    }

    #[test]
    fn sve_trap_live_zeroes_in_registers_once() {
        let (mut c, mut t) = live(0, 1);
        let p = sve_trap(&mut c, &mut t).unwrap();
        assert_eq!(
            p,
            SveTrap {
                set_zcr: Some(3),
                flush_live: true,
                convert_saved: false,
                enable_zen_el0: true
            }
        );
        assert!(t.sve);
        assert!(sve_trap(&mut c, &mut t).is_err(), "a second trap is a bug");
        // Saved as SVE from now on.
        assert_eq!(switch_out(&mut c, &mut t, OFF).regs, Regs::Sve { vl: 64 });
        assert_eq!(t.format, Format::Sve);
    }

    #[test]
    fn sve_trap_not_live_converts_in_memory() {
        let mut c = CpuFp::new(0, false);
        let mut t = TaskFp::new(1, 32, 0);
        let p = sve_trap(&mut c, &mut t).unwrap();
        assert!(p.convert_saved && !p.flush_live);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(r.load, Some(Format::Sve));
        assert_eq!((r.set_zcr, r.set_zen_el0), (Some(1), Some(true)));
    }

    #[test]
    fn syscall_discards_sve_only_if_switched_out() {
        let (mut c, mut t) = live(0, 1);
        sve_trap(&mut c, &mut t).unwrap();
        // Not switched out: zero the upper bits live, SVE stays enabled.
        assert_eq!(
            syscall_entry(&mut c, &t, false),
            SyscallEntry {
                smstop_sm: false,
                flush_sve: true
            }
        );
        assert_eq!(return_to_user(&mut c, &mut t).load, None);
        assert!(t.sve);
        // A signal delivered on the way out of a syscall sees FPSIMD only (as Linux's frames).
        syscall_entry(&mut c, &t, false);
        assert_eq!(sync_to_memory(&mut c, &mut t, OFF).regs, Regs::Fpsimd);
        assert_eq!(return_to_user(&mut c, &mut t).load, None, "still live");
        assert_eq!(
            switch_out(&mut c, &mut t, OFF).regs,
            Regs::Sve { vl: 64 },
            "full again after"
        );
        // Switched out during the syscall: only FPSIMD is saved, and SVE is dropped on reload.
        syscall_entry(&mut c, &t, false);
        assert_eq!(switch_out(&mut c, &mut t, OFF).regs, Regs::Fpsimd);
        let mut other = TaskFp::new(2, 16, 0);
        return_to_user(&mut c, &mut other);
        switch_out(&mut c, &mut other, OFF);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(r.load, Some(Format::Fpsimd));
        // EL0 SVE access is off (the other task already turned it off on this CPU).
        assert!(!c.zen_el0);
        assert!(!t.sve);
    }

    #[test]
    fn zcr_written_only_when_it_changes() {
        let mut c = CpuFp::new(0, false);
        let mut a = TaskFp::new(1, 64, 0);
        let mut b = TaskFp::new(2, 64, 0);
        let mut d = TaskFp::new(3, 32, 0);
        for t in [&mut a, &mut b, &mut d] {
            t.sve = true;
            t.format = Format::Sve;
        }
        assert_eq!(return_to_user(&mut c, &mut a).set_zcr, Some(3));
        switch_out(&mut c, &mut a, OFF);
        assert_eq!(return_to_user(&mut c, &mut b).set_zcr, None);
        switch_out(&mut c, &mut b, OFF);
        assert_eq!(return_to_user(&mut c, &mut d).set_zcr, Some(1));
    }

    #[test]
    fn exec_fork_vl_change_and_edits_invalidate() {
        let (mut c, mut t) = live(0, 1);
        sve_trap(&mut c, &mut t).unwrap();
        let child = fork(&t, 9, false);
        assert_eq!(
            (child.format, child.sve, child.last_cpu, child.sve_vl),
            (Format::Fpsimd, false, None, 64)
        );
        switch_out(&mut c, &mut t, OFF);
        return_to_user(&mut c, &mut t);
        change_vl(&mut t, 32);
        assert!(!c.holds(&t));
        assert_eq!(return_to_user(&mut c, &mut t).load, Some(Format::Fpsimd));
        invalidate(&mut t);
        assert!(!c.holds(&t));
        exec(&mut t, 64, 0);
        assert!(!t.sve && t.format == Format::Fpsimd);
    }

    #[test]
    fn sync_to_memory_keeps_the_state_live() {
        let (mut c, mut t) = live(0, 1);
        sve_trap(&mut c, &mut t).unwrap();
        assert_eq!(
            sync_to_memory(&mut c, &mut t, OFF).regs,
            Regs::Sve { vl: 64 }
        );
        assert!(c.holds(&t));
        assert_eq!(return_to_user(&mut c, &mut t).load, None);
    }

    // ---- SME ----

    #[test]
    fn sme_trap_codes() {
        let (mut c, mut t) = live_sme(0, 1);
        for smtc in 1..=4 {
            assert_eq!(sme_trap(&mut c, &mut t, smtc), Err(SmeTrapError::Illegal));
        }
        assert!(!t.sme);
        assert_eq!(
            sme_trap(&mut c, &mut t, 0),
            Ok(SmeTrap {
                set_smcr: Some(1),
                enable_smen_el0: true
            })
        );
        assert_eq!(
            sme_trap(&mut c, &mut t, 0),
            Err(SmeTrapError::AlreadyEnabled)
        );
    }

    #[test]
    fn sme_trap_not_live_enables_on_return() {
        let mut c = CpuFp::new(0, true);
        let mut t = TaskFp::new(1, 64, 64);
        assert_eq!(
            sme_trap(&mut c, &mut t, 0),
            Ok(SmeTrap {
                set_smcr: None,
                enable_smen_el0: false
            })
        );
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(r.set_smen_el0, Some(true));
        assert_eq!(r.svcr, Some(OFF));
    }

    #[test]
    fn streaming_and_za_are_saved_from_hardware_svcr() {
        let (mut c, mut t) = live_sme(0, 1);
        sme_trap(&mut c, &mut t, 0).unwrap();
        let s = switch_out(&mut c, &mut t, Svcr { sm: true, za: true });
        assert_eq!(
            s,
            Save {
                regs: Regs::Streaming { vl: 32 },
                za: Some(32)
            }
        );
        assert_eq!(t.format, Format::Streaming);
        // Another task runs; coming back sets SVCR before loading, then ZA.
        let mut o = TaskFp::new(2, 64, 32);
        let ro = return_to_user(&mut c, &mut o);
        assert_eq!(ro.svcr, Some(OFF));
        assert!(!ro.load_za);
        switch_out(&mut c, &mut o, OFF);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(r.load, Some(Format::Streaming));
        assert_eq!(r.svcr, Some(Svcr { sm: true, za: true }));
        assert!(r.load_za);
    }

    #[test]
    fn za_alone_survives_syscalls_and_switches() {
        let (mut c, mut t) = live_sme(0, 1);
        sme_trap(&mut c, &mut t, 0).unwrap();
        // In streaming mode at the syscall: SMSTOP SM, no SVE flush needed.
        assert_eq!(
            syscall_entry(&mut c, &t, true),
            SyscallEntry {
                smstop_sm: true,
                flush_sve: false
            }
        );
        // Switched out during the syscall with ZA on: FPSIMD + ZA saved.
        let s = switch_out(
            &mut c,
            &mut t,
            Svcr {
                sm: false,
                za: true,
            },
        );
        assert_eq!(
            s,
            Save {
                regs: Regs::Fpsimd,
                za: Some(32)
            }
        );
        let mut o = TaskFp::new(2, 64, 32);
        return_to_user(&mut c, &mut o);
        switch_out(&mut c, &mut o, OFF);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!((r.load, r.load_za), (Some(Format::Fpsimd), true));
        assert_eq!(
            r.svcr,
            Some(Svcr {
                sm: false,
                za: true
            })
        );
    }

    #[test]
    fn tasks_without_sme_read_as_zero_svcr() {
        let (mut c, mut t) = live_sme(0, 1);
        // Even if the caller passed garbage, a task without SME has SM = ZA = 0.
        let s = switch_out(&mut c, &mut t, Svcr { sm: true, za: true });
        assert_eq!(
            s,
            Save {
                regs: Regs::Fpsimd,
                za: None
            }
        );
    }

    #[test]
    fn signal_entry_leaves_streaming_and_za_off() {
        let (mut c, mut t) = live_sme(0, 1);
        sme_trap(&mut c, &mut t, 0).unwrap();
        sync_to_memory(&mut c, &mut t, Svcr { sm: true, za: true });
        assert!(c.holds(&t));
        assert_eq!(
            signal_entry(&mut t),
            SignalEntry {
                left_streaming: true
            }
        );
        assert_eq!((t.svcr, t.format), (OFF, Format::Fpsimd));
        assert!(!c.holds(&t), "the registers no longer match");
        // Nothing streaming or ZA: the state stays live.
        let (mut c2, mut u) = live_sme(1, 2);
        sync_to_memory(&mut c2, &mut u, OFF);
        assert_eq!(
            signal_entry(&mut u),
            SignalEntry {
                left_streaming: false
            }
        );
        assert!(c2.holds(&u));
    }

    #[test]
    fn fork_rules_for_za() {
        let mut p = TaskFp::new(1, 64, 32);
        p.sme = true;
        p.svcr = Svcr { sm: true, za: true };
        let child = fork(&p, 2, false);
        assert_eq!(
            (child.sme, child.svcr),
            (
                true,
                Svcr {
                    sm: false,
                    za: true
                }
            )
        );
        let thread = fork(&p, 3, true);
        assert_eq!((thread.sme, thread.svcr), (false, OFF));
    }

    #[test]
    fn sme_vl_change_drops_za_keeps_sm() {
        let mut t = TaskFp::new(1, 64, 32);
        t.sme = true;
        t.svcr = Svcr { sm: true, za: true };
        assert!(change_sme_vl(&mut t, 64));
        assert_eq!(
            t.svcr,
            Svcr {
                sm: true,
                za: false
            }
        );
        assert_eq!(t.sme_vl, 64);
        // SVE VL changes leave ZA alone.
        t.svcr.za = true;
        change_vl(&mut t, 32);
        assert!(t.svcr.za);
    }

    #[test]
    fn smcr_written_only_for_sme_state_and_on_change() {
        let mut c = CpuFp::new(0, true);
        let mut a = TaskFp::new(1, 64, 32);
        a.sme = true;
        a.svcr.za = true;
        assert_eq!(return_to_user(&mut c, &mut a).set_smcr, Some(1));
        switch_out(
            &mut c,
            &mut a,
            Svcr {
                sm: false,
                za: true,
            },
        );
        let mut b = TaskFp::new(2, 64, 64);
        b.sme = true;
        // SM and ZA are off, but the task may enter streaming mode without trapping.
        assert_eq!(return_to_user(&mut c, &mut b).set_smcr, Some(3));
        switch_out(&mut c, &mut b, OFF);
        assert_eq!(return_to_user(&mut c, &mut a).set_smcr, Some(1));
        switch_out(&mut c, &mut a, OFF);
        let mut d = TaskFp::new(3, 64, 32);
        d.sme = true;
        assert_eq!(return_to_user(&mut c, &mut d).set_smcr, None, "unchanged");
        let mut plain = TaskFp::new(4, 64, 64);
        assert_eq!(
            return_to_user(&mut c, &mut plain).set_smcr,
            None,
            "no SME: SMCR unused"
        );
    }
}
