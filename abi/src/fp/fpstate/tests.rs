use super::*;
use crate::fp::fppolicy::{Restore as RestorePolicy, SmeAccess, SveSyscall};

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
        syscall_entry(&mut c, &t, false, SveSyscall::Discard),
        SyscallEntry {
            smstop_sm: false,
            flush_sve: true
        }
    );
    assert_eq!(return_to_user(&mut c, &mut t).load, None);
    assert!(t.sve);
    // A signal delivered on the way out of a syscall sees FPSIMD only (as Linux's frames).
    syscall_entry(&mut c, &t, false, SveSyscall::Discard);
    assert_eq!(sync_to_memory(&mut c, &mut t, OFF).regs, Regs::Fpsimd);
    assert_eq!(return_to_user(&mut c, &mut t).load, None, "still live");
    assert_eq!(
        switch_out(&mut c, &mut t, OFF).regs,
        Regs::Sve { vl: 64 },
        "full again after"
    );
    // Switched out during the syscall: only FPSIMD is saved, and SVE is dropped on reload.
    syscall_entry(&mut c, &t, false, SveSyscall::Discard);
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
    let child = fork(&t, 9, false, SmeAccess::Lazy);
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
    exec(&mut t, 64, 0, SmeAccess::Lazy);
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
        syscall_entry(&mut c, &t, true, SveSyscall::Discard),
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
    let child = fork(&p, 2, false, SmeAccess::Lazy);
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
    let thread = fork(&p, 3, true, SmeAccess::Lazy);
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

// ---- the policies (fppolicy) ----

#[test]
fn lazy_switch_back_to_an_untouched_cpu_reloads_nothing_eager_reloads() {
    for (policy, reload) in [
        (RestorePolicy::Lazy, None),
        (RestorePolicy::Eager, Some(Format::Sve)),
    ] {
        let (mut c, mut t) = live(0, 1);
        sve_trap(&mut c, &mut t).unwrap();
        // Switched out (the full SVE state is saved either way), idle in between.
        let s = context_switch(&mut c, &mut t, OFF, policy);
        assert_eq!(s.regs, Regs::Sve { vl: 64 }, "{policy:?}");
        assert_eq!(c.holds(&t), policy == RestorePolicy::Lazy);
        let r = return_to_user(&mut c, &mut t);
        assert_eq!(r.load, reload, "{policy:?}");
        // The state survives either way: the reload is the saved SVE copy, SVE stays on.
        assert!(t.sve && c.holds(&t));
        // No switch: a syscall's return reloads nothing under either policy.
        syscall_entry(&mut c, &t, false, SveSyscall::Discard);
        assert_eq!(return_to_user(&mut c, &mut t).load, None, "{policy:?}");
    }
}

#[test]
fn eager_context_switch_of_a_task_not_live_changes_nothing() {
    let (mut c, mut a) = live(0, 1);
    let mut b = TaskFp::new(2, 64, 0);
    context_switch(&mut c, &mut a, OFF, RestorePolicy::Eager);
    return_to_user(&mut c, &mut b);
    // a is not live: switching it out again saves nothing and leaves b's ownership alone.
    assert_eq!(
        context_switch(&mut c, &mut a, OFF, RestorePolicy::Eager),
        Save::NOTHING
    );
    assert!(c.holds(&b));
    // Lazy and eager save exactly the same things.
    let (mut c1, mut t1) = live_sme(0, 1);
    let (mut c2, mut t2) = live_sme(0, 1);
    sme_trap(&mut c1, &mut t1, 0).unwrap();
    sme_trap(&mut c2, &mut t2, 0).unwrap();
    let hw = Svcr { sm: true, za: true };
    assert_eq!(
        context_switch(&mut c1, &mut t1, hw, RestorePolicy::Lazy),
        context_switch(&mut c2, &mut t2, hw, RestorePolicy::Eager)
    );
    assert_eq!(return_to_user(&mut c1, &mut t1).load, None);
    let r = return_to_user(&mut c2, &mut t2);
    assert_eq!((r.load, r.load_za), (Some(Format::Streaming), true));
}

#[test]
fn keep_leaves_sve_registers_and_saves_them_in_full() {
    let (mut c, mut t) = live(0, 1);
    sve_trap(&mut c, &mut t).unwrap();
    assert_eq!(
        syscall_entry(&mut c, &t, false, SveSyscall::Keep),
        SyscallEntry {
            smstop_sm: false,
            flush_sve: false
        }
    );
    // A signal on the way out, or a switch during the syscall, saves Z/P/FFR in full.
    assert_eq!(
        sync_to_memory(&mut c, &mut t, OFF).regs,
        Regs::Sve { vl: 64 }
    );
    syscall_entry(&mut c, &t, false, SveSyscall::Keep);
    assert_eq!(switch_out(&mut c, &mut t, OFF).regs, Regs::Sve { vl: 64 });
    let mut other = TaskFp::new(2, 16, 0);
    return_to_user(&mut c, &mut other);
    switch_out(&mut c, &mut other, OFF);
    // Reloaded as SVE, SVE still enabled: nothing was dropped.
    assert_eq!(return_to_user(&mut c, &mut t).load, Some(Format::Sve));
    assert!(t.sve);
}

#[test]
fn keep_still_ends_streaming_mode_at_a_syscall() {
    let (mut c, mut t) = live_sme(0, 1);
    sme_trap(&mut c, &mut t, 0).unwrap();
    sve_trap(&mut c, &mut t).unwrap();
    assert_eq!(
        syscall_entry(&mut c, &t, true, SveSyscall::Keep),
        SyscallEntry {
            smstop_sm: true,
            flush_sve: false
        }
    );
    // Everything is zero after SMSTOP SM: a save keeps FPSIMD only, as under discard.
    assert_eq!(switch_out(&mut c, &mut t, OFF).regs, Regs::Fpsimd);
    // Not live: nothing to do under either policy.
    let mut other = TaskFp::new(2, 64, 0);
    assert_eq!(
        syscall_entry(&mut c, &other, true, SveSyscall::Keep),
        syscall_entry(&mut c, &other, true, SveSyscall::Discard)
    );
    return_to_user(&mut c, &mut other);
}

#[test]
fn sme_eager_enables_at_exec_and_fork_without_trap() {
    // exec: SME on (SVCR zero) where the system has SME, off where it has none.
    let mut t = TaskFp::new(1, 64, 32);
    exec(&mut t, 64, 32, SmeAccess::Eager);
    assert!(t.sme && !t.sve);
    assert_eq!(t.svcr, OFF);
    exec(&mut t, 64, 32, SmeAccess::Lazy);
    assert!(!t.sme);
    exec(&mut t, 64, 0, SmeAccess::Eager);
    assert!(!t.sme);
    // The first return to user mode enables EL0 SME with the task's SMCR, SVCR written zero.
    let mut c = CpuFp::new(0, true);
    exec(&mut t, 64, 32, SmeAccess::Eager);
    let r = return_to_user(&mut c, &mut t);
    assert_eq!(r.set_smen_el0, Some(true));
    assert_eq!(c.smcr_len, Some(1));
    assert_eq!(r.svcr, Some(OFF));
    assert!(!r.load_za);
    // A trap then would be a kernel bug (SME already enabled).
    assert_eq!(
        sme_trap(&mut c, &mut t, 0),
        Err(SmeTrapError::AlreadyEnabled)
    );
    // fork and thread children: SME on, ZA only as Linux's rules give it.
    let child = fork(&t, 2, false, SmeAccess::Eager);
    assert_eq!((child.sme, child.svcr), (true, OFF));
    let thread = fork(&t, 3, true, SmeAccess::Eager);
    assert_eq!((thread.sme, thread.svcr), (true, OFF));
    let lazy = fork(&t, 4, true, SmeAccess::Lazy);
    assert!(!lazy.sme);
    let no_sme = TaskFp::new(5, 64, 0);
    assert!(!fork(&no_sme, 6, false, SmeAccess::Eager).sme);
}

#[test]
fn streaming_load_with_sve_enabled_sets_zcr_too() {
    let mut c = CpuFp::new(0, true);
    let mut a = TaskFp::new(1, 64, 32);
    let mut b = TaskFp::new(2, 32, 32);
    for t in [&mut a, &mut b] {
        t.sve = true;
        t.sme = true;
        t.format = Format::Sve;
    }
    assert_eq!(return_to_user(&mut c, &mut b).set_zcr, Some(1));
    switch_out(&mut c, &mut b, OFF);
    // a was switched out in streaming mode: after its own SMSTOP, RDVL must read 64.
    a.format = Format::Streaming;
    a.svcr.sm = true;
    let r = return_to_user(&mut c, &mut a);
    assert_eq!(r.load, Some(Format::Streaming));
    assert_eq!(r.set_zcr, Some(3));
    assert_eq!(c.smcr_len, Some(1));
}

#[test]
fn a_guest_borrowing_the_registers_makes_the_task_reload() {
    let (mut c, mut t) = live_sme(0, 1);
    sme_trap(&mut c, &mut t, 0).unwrap();
    // ZA live when the task enters KVM_RUN: saved once, and reloaded with SVCR afterwards.
    let s = lend_to_guest(
        &mut c,
        &mut t,
        Svcr {
            sm: false,
            za: true,
        },
    );
    assert_eq!(s.za, Some(32));
    assert!(!c.holds(&t));
    // A second lend in the same run has nothing left to save.
    assert_eq!(lend_to_guest(&mut c, &mut t, OFF), Save::NOTHING);
    let r = return_to_user(&mut c, &mut t);
    assert_eq!(
        r.svcr,
        Some(Svcr {
            sm: false,
            za: true
        })
    );
    assert!(r.load_za);
}

#[test]
fn sigreturn_entry_saves_only_what_a_frame_may_keep() {
    // Not live: nothing to save.
    let mut c = CpuFp::new(0, true);
    let mut t = TaskFp::new(1, 64, 32);
    assert_eq!(sigreturn_entry(&mut c, &mut t, OFF), Save::NOTHING);
    // Live SVE task inside a syscall: no register saved, the discard's `to_save` ends.
    let (mut c, mut t) = live(0, 2);
    t.sve = true;
    t.format = Format::Fpsimd;
    c.to_save = ToSave::FpsimdOnly;
    assert_eq!(sigreturn_entry(&mut c, &mut t, OFF), Save::NOTHING);
    assert!(c.holds(&t));
    assert_eq!(c.to_save, ToSave::Current);
    assert_eq!(t.format, Format::Fpsimd);
    // Live SME task with ZA on: ZA (at the SME VL) and SVCR; SM from the CPU as well.
    let (mut c, mut t) = live_sme(1, 3);
    t.sme = true;
    let hw = Svcr { sm: true, za: true };
    assert_eq!(
        sigreturn_entry(&mut c, &mut t, hw),
        Save {
            regs: Regs::Nothing,
            za: Some(32)
        }
    );
    assert_eq!(t.svcr, hw);
    assert!(c.holds(&t));
    // Without SME enabled SVCR reads as zero whatever is passed.
    let (mut c, mut t) = live(2, 4);
    assert_eq!(sigreturn_entry(&mut c, &mut t, hw), Save::NOTHING);
    assert_eq!(t.svcr, OFF);
}
