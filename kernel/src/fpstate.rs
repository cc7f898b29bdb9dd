//! Lazy FPSIMD/SVE state: carries out the decisions of `svelt_abi::fpstate` with the register
//! primitives, keeps per-CPU ownership, and counts what it moves.
//!
//! A task's registers are saved when it is switched out holding them, and loaded on its way
//! back to user mode only if this CPU's registers are not already its own. Everything here runs
//! on the task itself (or the CPU switching it) with IRQs masked where ownership changes.

use crate::arch::aarch64::cpu;
use crate::arch::aarch64::fpsimd::{fpsimd, sve};
use crate::percpu::{self, MAX_CPUS};
use crate::sync::IrqLock;
use crate::task::{Process, Task};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use fpsimd::FpsimdState;
use svelt_abi::errno::SysResult;
use svelt_abi::fpstate::{self as fps, CpuFp, Format, Save, TaskFp};
use svelt_abi::vlctl::{self, TaskVl, VecKind};

static CPU_FP: [IrqLock<CpuFp>; MAX_CPUS] = {
    let mut a = [const { IrqLock::new(CpuFp::new(0)) }; MAX_CPUS];
    let mut i = 0;
    while i < MAX_CPUS {
        a[i] = IrqLock::new(CpuFp::new(i as u32));
        i += 1;
    }
    a
};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub fn new_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
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
}

pub const COUNTER_NAMES: [&str; 10] = [
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
];

pub type Counters = [AtomicU64; 10];
pub const ZERO_COUNTERS: Counters = [const { AtomicU64::new(0) }; 10];
pub static TOTALS: Counters = ZERO_COUNTERS;

fn count(p: &Process, c: Counter, n: u64) {
    TOTALS[c as usize].fetch_add(n, Ordering::Relaxed);
    p.fpstat[c as usize].fetch_add(n, Ordering::Relaxed);
}

/// The system's default SVE vector length for new programs (/proc/sys/abi).
pub static SVE_DEFAULT_VL: AtomicU32 = AtomicU32::new(16);

/// A task's FP state: the bookkeeping, the FPSIMD registers and, once SVE was used, the
/// SVE registers at the task's VL (signal-frame payload layout).
pub struct TaskFpState {
    pub st: TaskFp,
    pub fp: FpsimdState,
    pub sve: Vec<u8>,
    /// VL to take at the next execve (0: none), and whether that survives exec (INHERIT).
    pub sve_onexec: u32,
    pub sve_inherit: bool,
}

fn vl_ctl(f: &TaskFpState) -> TaskVl {
    TaskVl {
        cur: f.st.sve_vl,
        onexec: f.sve_onexec,
        inherit: f.sve_inherit,
    }
}

impl TaskFpState {
    pub fn new(vl: u32) -> TaskFpState {
        TaskFpState {
            st: TaskFp::new(new_id(), vl),
            fp: FpsimdState::default(),
            sve: Vec::new(),
            sve_onexec: 0,
            sve_inherit: false,
        }
    }

    fn vq(&self) -> usize {
        self.st.sve_vl as usize / 16
    }

    /// Makes the SVE buffer the right size for the current VL.
    fn sve_buf(&mut self) -> &mut [u8] {
        let n = sve::state_size(self.vq());
        if self.sve.len() != n {
            self.sve = alloc::vec![0u8; n];
        }
        &mut self.sve
    }

    /// The FPSIMD view of the saved state (V0-V31 are the low 128 bits of Z0-Z31).
    pub fn fpsimd_view(&self) -> FpsimdState {
        let mut f = self.fp;
        if self.st.format == Format::Sve && !self.sve.is_empty() {
            let zl = 16 * self.vq();
            for (n, v) in f.vregs.iter_mut().enumerate() {
                *v = u128::from_le_bytes(self.sve[n * zl..n * zl + 16].try_into().unwrap());
            }
        }
        f
    }

    /// Rewrites the saved copy as FPSIMD only (SVE extras dropped).
    pub fn to_fpsimd_format(&mut self) {
        self.fp = self.fpsimd_view();
        self.st.format = Format::Fpsimd;
    }

    /// Rewrites the saved copy as SVE: zero everything but the V bits from `fp`.
    fn fpsimd_to_sve(&mut self) {
        let vq = self.vq();
        let fp = self.fp;
        let buf = self.sve_buf();
        buf.fill(0);
        for (n, v) in fp.vregs.iter().enumerate() {
            buf[n * 16 * vq..n * 16 * vq + 16].copy_from_slice(&v.to_le_bytes());
        }
        self.st.format = Format::Sve;
    }
}

fn local(t: &Task) -> &mut TaskFpState {
    // SAFETY: callers are the task itself or the CPU switching it (see TaskLocal).
    unsafe { &mut t.local().fpu }
}

fn this_cpu() -> &'static IrqLock<CpuFp> {
    &CPU_FP[percpu::cpu_id()]
}

fn do_save(p: &Process, f: &mut TaskFpState, save: Save) {
    match save {
        Save::Nothing => {}
        Save::Fpsimd => {
            fpsimd::save(&mut f.fp);
            count(p, Counter::FpsimdSaves, 1);
            count(p, Counter::BytesSaved, 528);
        }
        Save::Sve { .. } => {
            fpsimd::save(&mut f.fp); // FPSR/FPCR (and V, harmlessly)
            let vq = f.vq();
            let buf = f.sve_buf();
            // SAFETY: ZCR holds the task's VL while its state is live; buf has state_size(vq).
            unsafe { sve::save(buf.as_mut_ptr(), vq) };
            count(p, Counter::SveSaves, 1);
            count(p, Counter::BytesSaved, 8 + sve::state_size(vq) as u64);
        }
    }
}

/// Context switch away from `t` (IRQs masked).
pub fn switch_out(t: &Task) {
    let f = local(t);
    let mut c = this_cpu().lock();
    let save = fps::switch_out(&mut c, &mut f.st);
    drop(c);
    do_save(&t.process(), f, save);
}

/// On the way back to user mode (IRQs masked): load the task's state unless the registers
/// hold it.
pub fn return_to_user(t: &Task) {
    let f = local(t);
    let r = {
        let mut c = this_cpu().lock();
        fps::return_to_user(&mut c, &mut f.st)
    };
    let Some(format) = r.load else { return };
    if let Some(len) = r.set_zcr {
        sve::set_len(len);
    }
    if let Some(on) = r.set_zen_el0 {
        sve::set_el0_access(on);
    }
    let p = t.process();
    match format {
        Format::Fpsimd => {
            fpsimd::load(&f.fp);
            count(&p, Counter::FpsimdRestores, 1);
            count(&p, Counter::BytesRestored, 528);
        }
        Format::Sve => {
            let vq = f.vq();
            let buf = f.sve_buf();
            // SAFETY: ZCR was set to the task's VL above (or already was); the buffer is sized.
            unsafe { sve::load(buf.as_ptr(), vq) };
            fpsimd::load_control(&f.fp);
            count(&p, Counter::SveRestores, 1);
            count(&p, Counter::BytesRestored, 8 + sve::state_size(vq) as u64);
        }
    }
}

/// The first SVE instruction from EL0 trapped (EC 0x19).
pub fn sve_trap(t: &Task) {
    let f = local(t);
    let daif = cpu::irq_save();
    let plan = {
        let mut c = this_cpu().lock();
        fps::sve_trap(&mut c, &mut f.st)
    };
    match plan {
        Ok(p) => {
            if let Some(len) = p.set_zcr {
                sve::set_len(len);
            }
            if p.flush_live {
                sve::flush_live();
            }
            if p.convert_saved {
                f.fpsimd_to_sve();
            }
            if p.enable_zen_el0 {
                sve::set_el0_access(true);
            }
        }
        Err(()) => log::error!("SVE trap with SVE already enabled for tid {}", t.tid),
    }
    cpu::irq_restore(daif);
    count(&t.process(), Counter::SveTraps, 1);
}

/// Syscall entry: SVE state beyond V0-V31 becomes zero.
pub fn syscall_entry(t: &Task) {
    let f = local(t);
    let daif = cpu::irq_save();
    let flush = fps::syscall_entry(&mut this_cpu().lock(), &f.st);
    if flush {
        sve::flush_live();
    }
    cpu::irq_restore(daif);
}

pub fn syscall_exit(t: &Task) {
    let f = local(t);
    fps::syscall_exit(&mut this_cpu().lock(), &f.st);
}

/// Saves the running task's live registers to memory, keeping them live (signal delivery,
/// fork). Returns the task's FP state for reading.
pub fn sync_current(t: &Task) -> &mut TaskFpState {
    let f = local(t);
    let daif = cpu::irq_save();
    let save = fps::sync_to_memory(&mut this_cpu().lock(), &mut f.st);
    do_save(&t.process(), f, save);
    cpu::irq_restore(daif);
    f
}

/// The saved state was edited (sigreturn, exec, VL change): load it on return to user.
pub fn invalidate(t: &Task) {
    fps::invalidate(&mut local(t).st);
}

/// A new task's FP state: the parent's V registers, FPSIMD only, same VL and VL settings.
pub fn fork_state(parent: &Task) -> TaskFpState {
    let pf = sync_current(parent);
    let mut c = TaskFpState::new(pf.st.sve_vl);
    c.st = fps::fork(&pf.st, c.st.id);
    c.fp = pf.fpsimd_view();
    c.sve_onexec = pf.sve_onexec;
    c.sve_inherit = pf.sve_inherit;
    c
}

/// execve: zeroed FPSIMD state; VL from a pending ONEXEC request or the system default.
pub fn exec_reset(t: &Task) {
    let f = local(t);
    let v = vlctl::on_exec(&vl_ctl(f), SVE_DEFAULT_VL.load(Ordering::Relaxed));
    f.sve_onexec = v.onexec;
    f.sve_inherit = v.inherit;
    f.fp = FpsimdState::default();
    f.sve = Vec::new();
    fps::exec(&mut f.st, v.cur);
}

/// Signal delivery: the FPSIMD view and, if SVE is live, the SVE payload, after saving.
pub fn for_signal(t: &Task) -> (FpsimdState, u32, Option<&[u8]>) {
    let f = sync_current(t);
    let view = f.fpsimd_view();
    let vl = f.st.sve_vl;
    let sve = (f.st.sve && f.st.format == Format::Sve).then_some(&f.sve[..]);
    (view, vl, sve)
}

/// sigreturn: install the restored state. `sve` is the payload when the frame had one (the
/// caller checked its VL and size); V0-V31 then come from `fpsimd` on top of it.
pub fn from_sigreturn(t: &Task, fp: FpsimdState, sve: Option<&[u8]>) {
    let f = local(t);
    f.fp = fp;
    match sve {
        Some(payload) => {
            let vq = f.vq();
            let buf = f.sve_buf();
            buf.copy_from_slice(&payload[..sve::state_size(vq)]);
            for (n, v) in fp.vregs.iter().enumerate() {
                buf[n * 16 * vq..n * 16 * vq + 16].copy_from_slice(&v.to_le_bytes());
            }
            f.st.format = Format::Sve;
            f.st.sve = true;
        }
        None => {
            f.st.format = Format::Fpsimd;
            f.st.sve = false;
        }
    }
    fps::invalidate(&mut f.st);
}

/// The current SVE VL of `t`.
pub fn sve_vl(t: &Task) -> u32 {
    local(t).st.sve_vl
}

/// Live VL change of the current task: V0-V31 kept, the rest zero.
fn change_sve_vl(t: &Task, vl: u32) {
    let f = sync_current(t);
    f.to_fpsimd_format();
    f.sve = Vec::new();
    fps::change_vl(&mut f.st, vl);
}

/// PR_SVE_SET_VL for the current task.
pub fn prctl_sve_set_vl(t: &Task, arg: u64) -> SysResult<usize> {
    let f = local(t);
    let r = vlctl::set_vl(VecKind::Sve, arg, crate::cpufeature::sve_vls(), &vl_ctl(f))?;
    if let Some(vl) = r.live_change {
        change_sve_vl(t, vl);
    }
    let f = local(t);
    f.sve_onexec = r.new.onexec;
    f.sve_inherit = r.new.inherit;
    Ok(r.ret as usize)
}

/// PR_SVE_GET_VL for the current task.
pub fn prctl_sve_get_vl(t: &Task) -> SysResult<usize> {
    if crate::cpufeature::sve_vls().is_empty() {
        return Err(svelt_abi::errno::Errno::EINVAL);
    }
    Ok(vlctl::get_vl(&vl_ctl(local(t))) as usize)
}

/// /proc/sys/abi/sve_default_vector_length.
pub fn sve_default_read(_: Option<u32>) -> alloc::string::String {
    let mut buf = [0u8; 12];
    let n = vlctl::default_vl_read(SVE_DEFAULT_VL.load(Ordering::Relaxed), &mut buf);
    alloc::string::String::from_utf8_lossy(&buf[..n]).into_owned()
}

pub fn sve_default_write(text: &[u8]) -> SysResult<()> {
    let vl = vlctl::default_vl_write(VecKind::Sve, text, crate::cpufeature::sve_vls())?;
    SVE_DEFAULT_VL.store(vl, Ordering::Relaxed);
    Ok(())
}

/// The counters as `key value` lines.
pub fn format_counters(c: &Counters) -> alloc::string::String {
    let mut s = alloc::string::String::new();
    for (name, v) in COUNTER_NAMES.iter().zip(c.iter()) {
        s += &alloc::format!("{name} {}\n", v.load(Ordering::Relaxed));
    }
    s
}

/// Per-CPU set-up at boot: EL0 SVE access off, ZCR unknown.
pub fn cpu_init() {
    let mut c = this_cpu().lock();
    *c = CpuFp::new(percpu::cpu_id() as u32);
}
