//! Exception entry: the vector table (vectors.s), the trap frame, dispatch, and the report a
//! kernel bug ends with (register dump, decoded ESR, backtrace, failure status).

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};
use svelt_abi::isa::esr::{Ec, Esr};

pub mod provoke;

core::arch::global_asm!(include_str!("vectors.s"));

/// Registers saved on exception entry. Layout shared with vectors.s.
#[repr(C)]
#[derive(Clone, Copy, Debug, zerocopy::IntoBytes, zerocopy::Immutable)]
pub struct TrapFrame {
    pub x: [u64; 31],
    pub sp_el0: u64,
    pub elr: u64,
    pub spsr: u64,
    pub esr: u64,
    pub far: u64,
}
const _: () = assert!(core::mem::size_of::<TrapFrame>() == 36 * 8);
const _: () = assert!(core::mem::offset_of!(TrapFrame, sp_el0) == 31 * 8);
const _: () = assert!(core::mem::offset_of!(TrapFrame, elr) == 32 * 8);
const _: () = assert!(core::mem::offset_of!(TrapFrame, esr) == 34 * 8);
const _: () = assert!(core::mem::size_of::<TrapFrame>().is_multiple_of(16));

/// PSTATE.SSBS (SPSR bit 12).
const PSR_SSBS: u64 = 1 << 12;

/// Whether programs start with PSTATE.SSBS set (see `set_program_ssbs`).
static PROGRAM_SSBS: AtomicBool = AtomicBool::new(false);

/// Programs start with PSTATE.SSBS set (speculative store bypass allowed), on a CPU that has
/// FEAT_SSBS: Linux does so for user tasks under its default Spectre-v4 policy
/// (arch/arm64/kernel/proton-pack.c, spectre_v4_enable_task_mitigation), and a program sees it
/// in its signal frames, ptrace registers and core files. Set once at boot.
pub fn set_program_ssbs(on: bool) {
    PROGRAM_SSBS.store(on, Ordering::Relaxed);
}

impl TrapFrame {
    /// A program's first user registers: PC at `entry`, SP at `sp`, everything else zero
    /// (EL0t, interrupts unmasked), but PSTATE.SSBS where `set_program_ssbs` asked for it.
    pub fn program_start(entry: u64, sp: u64) -> TrapFrame {
        TrapFrame {
            x: [0; 31],
            sp_el0: sp,
            elr: entry,
            spsr: if PROGRAM_SSBS.load(Ordering::Relaxed) {
                PSR_SSBS
            } else {
                0
            },
            esr: 0,
            far: 0,
        }
    }
}

/// Where an exception came from and what it is, from the vector offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub source: Source,
    pub ty: Type,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    El1Sp0,
    El1,
    El0Aarch64,
    El0Aarch32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Sync,
    Irq,
    Fiq,
    SError,
}

impl Kind {
    fn from_index(i: u64) -> Kind {
        let source = [
            Source::El1Sp0,
            Source::El1,
            Source::El0Aarch64,
            Source::El0Aarch32,
        ][(i as usize >> 2) & 3];
        let ty = [Type::Sync, Type::Irq, Type::Fiq, Type::SError][i as usize & 3];
        Kind { source, ty }
    }
}

#[unsafe(no_mangle)]
extern "C" fn exception_entry(kind: u64, tf: &mut TrapFrame) {
    let kind = Kind::from_index(kind);
    match (kind.source, kind.ty) {
        (Source::El1, Type::Irq) => super::entry::irq(),
        (Source::El0Aarch64, Type::Irq) => super::entry::el0_irq(tf),
        _ => el1_sync_or_fatal(kind, tf),
    }
}

/// How many CPY*/SET* sequences the kernel restarted (EC 0x27 at EL1).
pub static MOPS_RESTARTS: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// A user access that faulted is resolved and retried, or sent to its fixup; anything else is
/// a kernel bug. Kept out of `exception_entry` so the syscall path does not pay for it.
#[inline(never)]
fn el1_sync_or_fatal(kind: Kind, tf: &mut TrapFrame) {
    if (kind.source, kind.ty) == (Source::El1, Type::Sync) {
        if super::uaccess::handle_kernel_abort(tf) {
            return;
        }
        // A kernel copy or set moved to a CPU with the other CPY*/SET* option: start the
        // sequence again from its prologue with what is left.
        if Esr(tf.esr).ec() == Ec::Mops {
            MOPS_RESTARTS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            let negative = tf.spsr & (1 << 31) != 0;
            tf.elr = svelt_abi::isa::mops::restart(tf.esr, &mut tf.x, tf.elr, negative);
            return;
        }
    }
    super::entry::fatal(kind, tf)
}

/// Writes the report of an exception the kernel cannot handle, taken on CPU `cpu`: the
/// exception, the decoded ESR (and FAR for aborts), the registers, and a backtrace through the
/// frame records that lie in `stack` (the bounds of the stack the exception was taken on).
///
/// # Safety
/// `stack` is mapped and readable.
pub unsafe fn report(
    out: &mut impl Write,
    cpu: usize,
    kind: Kind,
    tf: &TrapFrame,
    stack: (usize, usize),
) {
    let esr = Esr(tf.esr);
    let _ = writeln!(
        out,
        "\nsvelt: unexpected exception on cpu {cpu}: {:?} {:?}",
        kind.source, kind.ty
    );
    let _ = writeln!(out, "  ESR {:#018x}: {}", tf.esr, esr);
    if esr.ec().is_abort() || matches!(esr.ec(), Ec::PcAlignment | Ec::Unknown) {
        let _ = writeln!(out, "  FAR {:#018x}", tf.far);
    }
    dump_registers(out, tf);
    // SAFETY: the caller's promise that `stack` is mapped.
    unsafe { backtrace(out, tf.elr as usize, tf.x[29] as usize, stack) };
}

fn dump_registers(out: &mut impl Write, tf: &TrapFrame) {
    for row in 0..8 {
        for col in 0..4 {
            let r = row * 4 + col;
            if r < 31 {
                let _ = write!(out, "  x{r:<2} {:016x}", tf.x[r]);
            }
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "  elr {:016x}  spsr {:016x}  sp_el0 {:016x}  sp {:016x}",
        tf.elr,
        tf.spsr,
        tf.sp_el0,
        tf as *const TrapFrame as usize + core::mem::size_of::<TrapFrame>()
    );
}

/// Prints `pc` and then the return addresses found by walking frame records (x29 chain) from
/// `fp`, as long as they stay inside `stack`.
///
/// # Safety
/// `stack` is mapped and readable.
pub unsafe fn backtrace(out: &mut impl Write, pc: usize, mut fp: usize, stack: (usize, usize)) {
    let _ = writeln!(out, "  backtrace:\n    #0  {pc:#018x}");
    let (lo, hi) = stack;
    for depth in 1..32 {
        if fp < lo || fp + 16 > hi || !fp.is_multiple_of(16) {
            break;
        }
        // SAFETY: fp is 16-aligned and the record lies within `stack`, which the caller promises
        // is mapped.
        let (next, lr) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
        if lr == 0 {
            break;
        }
        let _ = writeln!(out, "    #{depth:<2} {lr:#018x}");
        if next <= fp {
            break;
        }
        fp = next;
    }
    let _ = writeln!(out, "  (addresses resolve with: addr2line -e <target dir>/aarch64-unknown-none-softfloat/release/svelt)");
}
