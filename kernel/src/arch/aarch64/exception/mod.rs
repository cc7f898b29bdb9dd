//! Exception entry: the vector table (vectors.s), the trap frame, dispatch, and the report a
//! kernel bug ends with (register dump, decoded ESR, backtrace, failure status).

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};
use svelt_abi::esr::{Ec, Esr};

core::arch::global_asm!(include_str!("vectors.s"));

/// Registers saved on exception entry. Layout shared with vectors.s.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
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
        (Source::El1, Type::Irq) => crate::irq::handle(),
        (Source::El0Aarch64, Type::Irq) => {
            crate::irq::handle();
            return_to_user(tf);
        }
        (Source::El0Aarch64, Type::Sync) => {
            crate::trap::el0_sync(tf);
            return_to_user(tf);
        }
        _ => el1_sync_or_fatal(kind, tf),
    }
}

/// A user access that faulted is resolved and retried, or sent to its fixup; anything else is
/// a kernel bug. Kept out of `exception_entry` so the syscall path does not pay for it.
#[inline(never)]
fn el1_sync_or_fatal(kind: Kind, tf: &mut TrapFrame) {
    if (kind.source, kind.ty) == (Source::El1, Type::Sync)
        && super::uaccess::handle_kernel_abort(tf)
    {
        return;
    }
    fatal(kind, tf)
}

/// The last step before ERET to user mode.
pub fn return_to_user(tf: &mut TrapFrame) {
    crate::trap::return_to_user(tf);
}

static DYING: AtomicBool = AtomicBool::new(false);

/// Reports an exception the kernel cannot handle and stops the machine with a failure status.
fn fatal(kind: Kind, tf: &TrapFrame) -> ! {
    if DYING.swap(true, Ordering::AcqRel) {
        super::cpu::halt();
    }
    let mut out = crate::console::emergency();
    let esr = Esr(tf.esr);
    let _ = writeln!(
        out,
        "\nsvelt: unexpected exception on cpu {}: {:?} {:?}",
        crate::percpu::cpu_id(),
        kind.source,
        kind.ty
    );
    let _ = writeln!(out, "  ESR {:#018x}: {}", tf.esr, esr);
    if esr.ec().is_abort() || matches!(esr.ec(), Ec::PcAlignment | Ec::Unknown) {
        let _ = writeln!(out, "  FAR {:#018x}", tf.far);
    }
    dump_registers(&mut out, tf);
    backtrace(&mut out, tf.elr as usize, tf.x[29] as usize);
    crate::power::exit_from_fatal(&mut out)
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
/// `fp`, as long as they stay inside this CPU's stack.
pub fn backtrace(out: &mut impl Write, pc: usize, mut fp: usize) {
    let _ = writeln!(out, "  backtrace:\n    #0  {pc:#018x}");
    // The CPU's boot/idle stack, or the running task's kernel stack.
    let (lo, hi) = match crate::task::current_kstack() {
        Some(r) if fp >= r.0 && fp < r.1 => r,
        _ => crate::percpu::stack_range(),
    };
    for depth in 1..32 {
        if fp < lo || fp + 16 > hi || !fp.is_multiple_of(16) {
            break;
        }
        // SAFETY: fp is 16-aligned and lies within this CPU's stack, which is mapped.
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
