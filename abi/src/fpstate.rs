//! The lazy FP/SVE state machine: what the kernel must do with a task's vector registers at
//! each event, decided on plain data so every rule is tested on the host.
//!
//! Model (the same ownership idea as Linux's `fpsimd_last_state` + `fpsimd_cpu`):
//! - a task's state is *live on CPU c* when c's registers hold it: `cpu.owner == task.id` and
//!   `task.last_cpu == Some(c)`. Both are needed: a task that ran elsewhere since (and changed
//!   its registers there) is not live on c even though c still names it as owner;
//! - the in-memory copy has a `Format` (FPSIMD only, or full SVE at the task's VL);
//! - registers are saved when a live task is switched out, restored only on the way back to
//!   user mode and only if they are not live there ("foreign");
//! - `sve` (Linux's TIF_SVE) says EL0 may use SVE without trapping; the first SVE use traps.
//!
//! Each function returns a plan (a small struct of things to do); the arch code carries it out.
//! Streaming SVE, ZA and ZT0 extend `Format` and the plans with the SME work.

/// What the saved copy of a task's state holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// V0-V31, FPSR, FPCR only; Z bits above 128, P and FFR are zero.
    Fpsimd,
    /// Z0-Z31, P0-P15, FFR at the task's SVE VL (plus FPSR/FPCR).
    Sve,
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
}

impl TaskFp {
    pub const fn new(id: u64, sve_vl: u32) -> TaskFp {
        TaskFp {
            id,
            last_cpu: None,
            format: Format::Fpsimd,
            sve: false,
            sve_vl,
        }
    }
}

/// What a switch-out may discard (Linux's `to_save`): after a syscall entry the SVE upper
/// bits are dead, so only FPSIMD needs saving.
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
    /// ZCR_EL1.LEN as last written (None: unknown), so it is written only when it changes.
    pub zcr_len: Option<u32>,
    /// Whether EL0 SVE access is currently enabled in CPACR_EL1.
    pub zen_el0: bool,
}

impl CpuFp {
    pub const fn new(cpu: u32) -> CpuFp {
        CpuFp {
            cpu,
            owner: 0,
            to_save: ToSave::Current,
            zcr_len: None,
            zen_el0: false,
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

/// Saving a live task's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Save {
    Nothing,
    Fpsimd,
    /// Z/P/FFR at this VL (the CPU's ZCR is already at it) plus FPSR/FPCR.
    Sve {
        vl: u32,
    },
}

/// Context switch away from `t` on `cpu`: save what is live.
pub fn switch_out(cpu: &mut CpuFp, t: &mut TaskFp) -> Save {
    if !cpu.holds(t) {
        return Save::Nothing;
    }
    let save = if t.sve && cpu.to_save == ToSave::Current {
        t.format = Format::Sve;
        Save::Sve { vl: t.sve_vl }
    } else {
        t.format = Format::Fpsimd;
        Save::Fpsimd
    };
    cpu.to_save = ToSave::Current;
    save
}

/// Loading a task's state on the way back to user mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restore {
    /// None when the registers already hold the state.
    pub load: Option<Format>,
    /// Write ZCR_EL1.LEN first.
    pub set_zcr: Option<u32>,
    /// Change CPACR_EL1's EL0 SVE enable to this.
    pub set_zen_el0: Option<bool>,
}

/// Return to user mode: reload the task's state if this CPU does not hold it.
pub fn return_to_user(cpu: &mut CpuFp, t: &mut TaskFp) -> Restore {
    if cpu.holds(t) {
        return Restore {
            load: None,
            set_zcr: None,
            set_zen_el0: None,
        };
    }
    // A task whose state was last saved as FPSIMD only stops using SVE until it traps again.
    if t.format == Format::Fpsimd {
        t.sve = false;
    }
    let mut set_zcr = None;
    if t.format == Format::Sve {
        let len = len_for_vl(t.sve_vl);
        if cpu.zcr_len != Some(len) {
            cpu.zcr_len = Some(len);
            set_zcr = Some(len);
        }
    }
    let set_zen_el0 = (cpu.zen_el0 != t.sve).then_some(t.sve);
    cpu.zen_el0 = t.sve;
    cpu.owner = t.id;
    cpu.to_save = ToSave::Current;
    t.last_cpu = Some(cpu.cpu);
    Restore {
        load: Some(t.format),
        set_zcr,
        set_zen_el0,
    }
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

/// `do_sve_acc`. Err if SVE was already enabled (a kernel bug: the trap should be off).
pub fn sve_trap(cpu: &mut CpuFp, t: &mut TaskFp) -> Result<SveTrap, ()> {
    if t.sve {
        return Err(());
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

/// Syscall entry: SVE state beyond V0-V31 is discarded. Returns whether to zero it in the
/// registers now (the task's state is live and SVE is enabled).
pub fn syscall_entry(cpu: &mut CpuFp, t: &TaskFp) -> bool {
    if !cpu.holds(t) {
        return false;
    }
    cpu.to_save = ToSave::FpsimdOnly;
    t.sve
}

/// Syscall exit: anything live again counts in full.
pub fn syscall_exit(cpu: &mut CpuFp, t: &TaskFp) {
    if cpu.holds(t) {
        cpu.to_save = ToSave::Current;
    }
}

/// Before the kernel reads a running task's state from memory (signal delivery, fork):
/// save what is live, keeping it live.
pub fn sync_to_memory(cpu: &mut CpuFp, t: &mut TaskFp) -> Save {
    let s = switch_out(cpu, t);
    // The registers still hold exactly what was saved.
    s
}

/// After the kernel edits a task's saved state (sigreturn, VL change, ptrace, exec): the
/// registers no longer hold it.
pub fn invalidate(t: &mut TaskFp) {
    t.last_cpu = None;
}

/// execve: a fresh FPSIMD-only, zeroed state at the new VL; SVE traps again.
pub fn exec(t: &mut TaskFp, new_vl: u32) {
    t.format = Format::Fpsimd;
    t.sve = false;
    t.sve_vl = new_vl;
    t.last_cpu = None;
}

/// fork/clone: the child starts FPSIMD-only with the parent's effective V registers (the
/// caller saves the parent with `sync_to_memory` and converts an SVE copy to FPSIMD).
pub fn fork(parent: &TaskFp, child_id: u64) -> TaskFp {
    TaskFp {
        id: child_id,
        last_cpu: None,
        format: Format::Fpsimd,
        sve: false,
        sve_vl: parent.sve_vl,
    }
}

/// A live change of the SVE vector length: the caller has saved the state; V0-V31 are kept
/// (converted to FPSIMD format), everything else reads as zero at the new length.
pub fn change_vl(t: &mut TaskFp, new_vl: u32) {
    t.format = Format::Fpsimd;
    t.sve_vl = new_vl;
    t.last_cpu = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(cpu: u32, id: u64) -> (CpuFp, TaskFp) {
        let mut c = CpuFp::new(cpu);
        let mut t = TaskFp::new(id, 64);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(r.load, Some(Format::Fpsimd));
        (c, t)
    }

    #[test]
    fn first_return_loads_then_nothing_while_live() {
        let (mut c, mut t) = live(0, 1);
        assert!(c.holds(&t));
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(
            r,
            Restore {
                load: None,
                set_zcr: None,
                set_zen_el0: None
            }
        );
    }

    #[test]
    fn same_cpu_nobody_else_reloads_nothing() {
        let (mut c, mut t) = live(0, 1);
        assert_eq!(switch_out(&mut c, &mut t), Save::Fpsimd);
        // Idle in between: nobody touched the registers.
        assert_eq!(return_to_user(&mut c, &mut t).load, None);
    }

    #[test]
    fn another_task_on_the_cpu_makes_it_foreign() {
        let (mut c, mut a) = live(0, 1);
        switch_out(&mut c, &mut a);
        let mut b = TaskFp::new(2, 64);
        assert_eq!(return_to_user(&mut c, &mut b).load, Some(Format::Fpsimd));
        assert_eq!(switch_out(&mut c, &mut b), Save::Fpsimd);
        assert_eq!(return_to_user(&mut c, &mut a).load, Some(Format::Fpsimd));
    }

    #[test]
    fn migration_back_and_forth_reloads() {
        let mut c0 = CpuFp::new(0);
        let mut c1 = CpuFp::new(1);
        let mut t = TaskFp::new(7, 64);
        return_to_user(&mut c0, &mut t);
        switch_out(&mut c0, &mut t);
        assert_eq!(return_to_user(&mut c1, &mut t).load, Some(Format::Fpsimd));
        assert_eq!(switch_out(&mut c1, &mut t), Save::Fpsimd);
        // CPU 0 still names the task as owner, but the task ran on CPU 1 since.
        assert_eq!(c0.owner, 7);
        assert_eq!(return_to_user(&mut c0, &mut t).load, Some(Format::Fpsimd));
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
        assert_eq!(switch_out(&mut c, &mut t), Save::Sve { vl: 64 });
        assert_eq!(t.format, Format::Sve);
    }

    #[test]
    fn sve_trap_not_live_converts_in_memory() {
        let mut c = CpuFp::new(0);
        let mut t = TaskFp::new(1, 32);
        let p = sve_trap(&mut c, &mut t).unwrap();
        assert!(p.convert_saved && !p.flush_live);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(
            r,
            Restore {
                load: Some(Format::Sve),
                set_zcr: Some(1),
                set_zen_el0: Some(true)
            }
        );
    }

    #[test]
    fn syscall_discards_sve_only_if_switched_out() {
        let (mut c, mut t) = live(0, 1);
        sve_trap(&mut c, &mut t).unwrap();
        // Not switched out: zero the upper bits live, SVE stays enabled.
        assert!(syscall_entry(&mut c, &t));
        syscall_exit(&mut c, &t);
        assert_eq!(return_to_user(&mut c, &mut t).load, None);
        assert!(t.sve);
        // Switched out during the syscall: only FPSIMD is saved, and SVE is dropped on reload.
        assert!(syscall_entry(&mut c, &t));
        assert_eq!(switch_out(&mut c, &mut t), Save::Fpsimd);
        let mut other = TaskFp::new(2, 16);
        return_to_user(&mut c, &mut other);
        switch_out(&mut c, &mut other);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(r.load, Some(Format::Fpsimd));
        // EL0 SVE access is off (the other task already turned it off on this CPU).
        assert!(!c.zen_el0);
        assert!(!t.sve);
    }

    #[test]
    fn zcr_written_only_when_it_changes() {
        let mut c = CpuFp::new(0);
        let mut a = TaskFp::new(1, 64);
        let mut b = TaskFp::new(2, 64);
        let mut d = TaskFp::new(3, 32);
        for t in [&mut a, &mut b, &mut d] {
            t.sve = true;
            t.format = Format::Sve;
        }
        assert_eq!(return_to_user(&mut c, &mut a).set_zcr, Some(3));
        switch_out(&mut c, &mut a);
        assert_eq!(return_to_user(&mut c, &mut b).set_zcr, None);
        switch_out(&mut c, &mut b);
        assert_eq!(return_to_user(&mut c, &mut d).set_zcr, Some(1));
    }

    #[test]
    fn exec_fork_vl_change_and_edits_invalidate() {
        let (mut c, mut t) = live(0, 1);
        sve_trap(&mut c, &mut t).unwrap();
        let child = fork(&t, 9);
        assert_eq!(
            (child.format, child.sve, child.last_cpu, child.sve_vl),
            (Format::Fpsimd, false, None, 64)
        );
        change_vl(&mut t, 32);
        assert!(!c.holds(&t));
        assert_eq!(return_to_user(&mut c, &mut t).load, Some(Format::Fpsimd));
        invalidate(&mut t);
        assert!(!c.holds(&t));
        exec(&mut t, 64);
        assert!(!t.sve && t.format == Format::Fpsimd);
    }

    #[test]
    fn sync_to_memory_keeps_the_state_live() {
        let (mut c, mut t) = live(0, 1);
        sve_trap(&mut c, &mut t).unwrap();
        assert_eq!(sync_to_memory(&mut c, &mut t), Save::Sve { vl: 64 });
        assert!(c.holds(&t));
        assert_eq!(return_to_user(&mut c, &mut t).load, None);
    }
}
