//! User-memory access primitives: loads and stores to user virtual addresses through the MMU,
//! with an exception-fixup table so that a bad user pointer ends a copy early instead of
//! ending the kernel.
//!
//! Every user access is an unprivileged LDTR/STTR (LDTRB/STTRB for byte tails), or, once
//! every CPU has FEAT_MOPS, the unprivileged CPY*RT/CPY*WT/SET*T sequences (a fault part-way
//! through one goes on in the byte loop from where the copy stands). The MMU checks
//! those against the EL0 permissions of the page, whatever PSTATE.PAN says, so a read-only or
//! PROT_NONE user page cannot be written (or read) on a program's behalf, the kernel's own
//! mappings (no EL0 access) cannot be reached through them, and no PAN toggling is needed around
//! a copy. (PSTATE.UAO would turn them into privileged accesses; Svelt never sets it, and
//! taking an exception clears it.) The kernel side of each copy is an ordinary load or store.
//! No FP/SIMD register is used.
//!
//! The fixup table holds (first instruction, end, landing) triples, one per loop that may
//! fault (64-byte, 8-byte and byte loops), rather than one `__uaccess_start..__uaccess_end`
//! range with a shared landing: each primitive keeps its own "how much is left" register, and a
//! fault in a word loop lands in the same primitive's byte loop, which copies up to the exact
//! faulting byte, so partial counts are byte-exact. The EL1 data-abort path
//! (`exception::exception_entry`) calls [`handle_kernel_abort`]: a fault on a user address at
//! an instruction the table covers is first resolved like an EL0 fault (demand paging) and
//! retried, and otherwise resumes at the landing.

use super::exception::TrapFrame;
use svelt_abi::isa::esr::{Ec, Esr};

/// One past the highest user address (TTBR0, 48-bit VAs).
pub const USER_END: usize = 1 << 48;

core::arch::global_asm!(
    r#"
.section .text.uaccess, "ax"
.arch_extension mops

// After a fault in the main or epilogue part of a CPY* sequence (x0 destination, x1 source,
// x2 size): puts the registers in the form "where the copy stands, bytes left". PSTATE.C,
// set by the prologue, says the option: set is option B, already in that form; clear is
// option A, which keeps the ends and minus the bytes left. A fault in the prologue leaves
// the registers as they were given.
.macro mops_where_it_stands
    b.cs    1f
    add     x0, x0, x2
    add     x1, x1, x2
    neg     x2, x2
1:
.endm
.global __uaccess_start
__uaccess_start:

// __copy_from_user(dst x0, usrc x1, n x2) -> x0 = bytes not copied. The 64-byte loop runs
// with x2 = bytes left - 64; its fixup adds the 64 back.
.global __copy_from_user
__copy_from_user:
    adrp    x16, svelt_mops
    ldrb    w16, [x16, :lo12:svelt_mops]
    cbz     w16, .Lcfu_plain
.Lcfu_mp:
    cpyfprt [x0]!, [x1]!, x2!
.Lcfu_mm:
    cpyfmrt [x0]!, [x1]!, x2!
    cpyfert [x0]!, [x1]!, x2!
.Lcfu_mops_end:
    mov     x0, #0
    ret
.Lcfu_mops_fault:
    mops_where_it_stands
    b       .Lcfu_1
.Lcfu_plain:
    subs    x2, x2, #64
    b.lo    .Lcfu_64_done
.Lcfu_64:
    ldtr    x3, [x1]
    ldtr    x4, [x1, #8]
    ldtr    x5, [x1, #16]
    ldtr    x6, [x1, #24]
    ldtr    x7, [x1, #32]
    ldtr    x8, [x1, #40]
    ldtr    x9, [x1, #48]
    ldtr    x10, [x1, #56]
    add     x1, x1, #64
    stp     x3, x4, [x0], #16
    stp     x5, x6, [x0], #16
    stp     x7, x8, [x0], #16
    stp     x9, x10, [x0], #16
    subs    x2, x2, #64
    b.hs    .Lcfu_64
.Lcfu_64_end:
.Lcfu_64_done:
    add     x2, x2, #64
.Lcfu_8:
    cmp     x2, #8
    b.lo    .Lcfu_1
    ldtr    x3, [x1]
    add     x1, x1, #8
    str     x3, [x0], #8
    sub     x2, x2, #8
    b       .Lcfu_8
.Lcfu_1:
    cbz     x2, .Lcfu_out
    ldtrb   w3, [x1]
    add     x1, x1, #1
    strb    w3, [x0], #1
    sub     x2, x2, #1
    b       .Lcfu_1
.Lcfu_out:
    mov     x0, x2
    ret
.Lcfu_64_fault:
    add     x2, x2, #64
    b       .Lcfu_1

// __copy_to_user(udst x0, src x1, n x2) -> x0 = bytes not copied. A fault part-way through a
// 64-byte step leaves the pointers where the step began (x2 = bytes left - 64), so the byte loop
// rewrites the same bytes before reaching the faulting one.
.global __copy_to_user
__copy_to_user:
    adrp    x16, svelt_mops
    ldrb    w16, [x16, :lo12:svelt_mops]
    cbz     w16, .Lctu_plain
.Lctu_mp:
    cpyfpwt [x0]!, [x1]!, x2!
.Lctu_mm:
    cpyfmwt [x0]!, [x1]!, x2!
    cpyfewt [x0]!, [x1]!, x2!
.Lctu_mops_end:
    mov     x0, #0
    ret
.Lctu_mops_fault:
    mops_where_it_stands
    b       .Lctu_1
.Lctu_plain:
    subs    x2, x2, #64
    b.lo    .Lctu_64_done
.Lctu_64:
    ldp     x3, x4, [x1]
    ldp     x5, x6, [x1, #16]
    ldp     x7, x8, [x1, #32]
    ldp     x9, x10, [x1, #48]
    sttr    x3, [x0]
    sttr    x4, [x0, #8]
    sttr    x5, [x0, #16]
    sttr    x6, [x0, #24]
    sttr    x7, [x0, #32]
    sttr    x8, [x0, #40]
    sttr    x9, [x0, #48]
    sttr    x10, [x0, #56]
    add     x0, x0, #64
    add     x1, x1, #64
    subs    x2, x2, #64
    b.hs    .Lctu_64
.Lctu_64_end:
.Lctu_64_done:
    add     x2, x2, #64
.Lctu_8:
    cmp     x2, #8
    b.lo    .Lctu_1
    ldr     x3, [x1]
    sttr    x3, [x0]
    add     x0, x0, #8
    add     x1, x1, #8
    sub     x2, x2, #8
    b       .Lctu_8
.Lctu_1:
    cbz     x2, .Lctu_out
    ldrb    w3, [x1], #1
    sttrb   w3, [x0]
    add     x0, x0, #1
    sub     x2, x2, #1
    b       .Lctu_1
.Lctu_out:
    mov     x0, x2
    ret
.Lctu_64_fault:
    add     x2, x2, #64
    b       .Lctu_1

// __clear_user(udst x0, n x1) -> x0 = bytes not cleared
.global __clear_user
__clear_user:
    adrp    x16, svelt_mops
    ldrb    w16, [x16, :lo12:svelt_mops]
    cbz     w16, .Lclr_32
.Lclr_mp:
    setpt   [x0]!, x1!, xzr
.Lclr_mm:
    setmt   [x0]!, x1!, xzr
    setet   [x0]!, x1!, xzr
.Lclr_mops_end:
    mov     x0, #0
    ret
.Lclr_mops_fault:
    b.cs    .Lclr_1
    add     x0, x0, x1
    neg     x1, x1
    b       .Lclr_1
.Lclr_32:
    cmp     x1, #32
    b.lo    .Lclr_8
    sttr    xzr, [x0]
    sttr    xzr, [x0, #8]
    sttr    xzr, [x0, #16]
    sttr    xzr, [x0, #24]
    add     x0, x0, #32
    sub     x1, x1, #32
    b       .Lclr_32
.Lclr_8:
    cmp     x1, #8
    b.lo    .Lclr_1
    sttr    xzr, [x0]
    add     x0, x0, #8
    sub     x1, x1, #8
    b       .Lclr_8
.Lclr_1:
    cbz     x1, .Lclr_out
    sttrb   wzr, [x0]
    add     x0, x0, #1
    sub     x1, x1, #1
    b       .Lclr_1
.Lclr_out:
    mov     x0, x1
    ret

// __strncpy_from_user(dst x0, usrc x1, n x2) -> x0 = the string's length when its NUL is among
// the first n bytes (the NUL is copied too), n when it is not, -1 on a fault.
.global __strncpy_from_user
__strncpy_from_user:
    mov     x3, #0
.Lstr_loop:
    cmp     x3, x2
    b.hs    .Lstr_out
    ldtrb   w4, [x1]
    add     x1, x1, #1
    strb    w4, [x0, x3]
    cbz     w4, .Lstr_out
    add     x3, x3, #1
    b       .Lstr_loop
.Lstr_out:
    mov     x0, x3
    ret
.Lstr_fault:
    mov     x0, #-1
    ret

// __gcs_store_user(uaddr x0, value x1) -> x0 = 0, or 1 if it faulted: GCSSTTR, the
// unprivileged GCS store (EL0's rights: only a shadow-stack page takes it).
.global __gcs_store_user
__gcs_store_user:
.Lgcs_st:
    .inst   0xd91f1c01                  // gcssttr x1, [x0]
.Lgcs_st_end:
    mov     x0, #0
    ret
.Lgcs_fault:
    mov     x0, #1
    ret

.global __uaccess_end
__uaccess_end:

// (start, end, landing): a fault at an instruction in [start, end) resumes at landing.
.section .rodata.uaccess, "a"
.balign 8
.global __uaccess_fixups
__uaccess_fixups:
    .quad   .Lcfu_mp, .Lcfu_mm, .Lcfu_1
    .quad   .Lcfu_mm, .Lcfu_mops_end, .Lcfu_mops_fault
    .quad   .Lctu_mp, .Lctu_mm, .Lctu_1
    .quad   .Lctu_mm, .Lctu_mops_end, .Lctu_mops_fault
    .quad   .Lclr_mp, .Lclr_mm, .Lclr_1
    .quad   .Lclr_mm, .Lclr_mops_end, .Lclr_mops_fault
    .quad   .Lcfu_64, .Lcfu_64_end, .Lcfu_64_fault
    .quad   .Lcfu_8, .Lcfu_1, .Lcfu_1
    .quad   .Lcfu_1, .Lcfu_out, .Lcfu_out
    .quad   .Lctu_64, .Lctu_64_end, .Lctu_64_fault
    .quad   .Lctu_8, .Lctu_1, .Lctu_1
    .quad   .Lctu_1, .Lctu_out, .Lctu_out
    .quad   .Lclr_32, .Lclr_1, .Lclr_1
    .quad   .Lclr_1, .Lclr_out, .Lclr_out
    .quad   .Lstr_loop, .Lstr_out, .Lstr_fault
    .quad   .Lgcs_st, .Lgcs_st_end, .Lgcs_fault
.global __uaccess_fixups_end
__uaccess_fixups_end:
"#
);

#[repr(C)]
struct Fixup {
    start: usize,
    end: usize,
    landing: usize,
}

extern "C" {
    fn __copy_from_user(dst: *mut u8, usrc: usize, n: usize) -> usize;
    fn __copy_to_user(udst: usize, src: *const u8, n: usize) -> usize;
    fn __clear_user(udst: usize, n: usize) -> usize;
    fn __strncpy_from_user(dst: *mut u8, usrc: usize, n: usize) -> isize;
    fn __gcs_store_user(udst: usize, value: u64) -> usize;
    static __uaccess_fixups: [Fixup; 0];
    static __uaccess_fixups_end: [Fixup; 0];
}

// The contract the wrappers below share: the user range lies below USER_END, so every LDTR/STTR
// touches TTBR0 addresses only; a fault there is the caller's EFAULT, never a kernel bug.

/// Copies `n` bytes from user address `usrc` to `dst`; returns how many were not copied.
///
/// # Safety
/// `dst` is valid for `n` bytes of writes; `usrc + n <= USER_END` (no overflow).
pub unsafe fn copy_from_user(dst: *mut u8, usrc: usize, n: usize) -> usize {
    // SAFETY: `dst` is writable for `n` bytes and the user range does not wrap (this function's
    // contract); the primitive touches only those and recovers from user faults.
    unsafe { __copy_from_user(dst, usrc, n) }
}

/// Copies `n` bytes from `src` to user address `udst`; returns how many were not copied.
///
/// # Safety
/// `src` is valid for `n` bytes of reads; `udst + n <= USER_END` (no overflow).
pub unsafe fn copy_to_user(udst: usize, src: *const u8, n: usize) -> usize {
    // SAFETY: `src` is readable for `n` bytes and the user range does not wrap (this function's
    // contract); the primitive touches only those and recovers from user faults.
    unsafe { __copy_to_user(udst, src, n) }
}

/// Zeroes `n` bytes at user address `udst`; returns how many were not zeroed.
///
/// # Safety
/// `udst + n <= USER_END` (no overflow).
pub unsafe fn clear_user(udst: usize, n: usize) -> usize {
    // SAFETY: the user range does not wrap (this function's contract); only user memory is
    // written, and a fault stops the primitive.
    unsafe { __clear_user(udst, n) }
}

/// Copies a NUL-terminated string of at most `n` bytes from `usrc` to `dst`: `Some(len)` when
/// the NUL is among the first `n` bytes (copied too), `Some(n)` when it is not, None on a fault.
///
/// # Safety
/// `dst` is valid for `n` bytes of writes; `usrc + n <= USER_END` (no overflow).
pub unsafe fn strncpy_from_user(dst: *mut u8, usrc: usize, n: usize) -> Option<usize> {
    // SAFETY: `dst` is writable for `n` bytes and the user range does not wrap (this function's
    // contract); only those and user memory are touched.
    let r = unsafe { __strncpy_from_user(dst, usrc, n) };
    usize::try_from(r).ok()
}

/// The landing for a fault at `pc`, if `pc` is a user-access instruction.
fn fixup_for(pc: usize) -> Option<usize> {
    // SAFETY: the two symbols bracket the table of `Fixup` triples emitted above, in .rodata.
    let table = unsafe {
        let start = core::ptr::addr_of!(__uaccess_fixups) as *const Fixup;
        let end = core::ptr::addr_of!(__uaccess_fixups_end) as *const Fixup;
        core::slice::from_raw_parts(start, end.offset_from(start) as usize)
    };
    table
        .iter()
        .find(|f| (f.start..f.end).contains(&pc))
        .map(|f| f.landing)
}

extern "Rust" {
    /// Resolves a fault on user address `va` for the current task the way an EL0 fault would
    /// be (demand paging): true if the access may be retried. Defined in `entry.rs`; may take
    /// the address-space lock, so no user access may run while that lock is held.
    fn svelt_resolve_user_fault(va: usize, esr: u64) -> bool;
}

/// A synchronous exception from EL1: if it is a data abort on a user address at a
/// user-access instruction, resolves it (`tf` then retries the access) or redirects `tf` to
/// the instruction's fixup landing, and returns true. False: a kernel bug.
pub fn handle_kernel_abort(tf: &mut TrapFrame) -> bool {
    let esr = Esr(tf.esr);
    if esr.ec() != Ec::DataAbortSame {
        return false;
    }
    let Some(landing) = fixup_for(tf.elr as usize) else {
        return false;
    };
    // A fault on the kernel side of a copy (a bad kernel buffer) is a bug like any other.
    let far = tf.far as usize;
    if esr.fnv() || far >= USER_END {
        return false;
    }
    // Translation, access-flag and permission faults may be demand paging; anything else
    // (alignment, external abort) cannot be fixed by mapping a page.
    let retry = matches!(esr.fsc(), 0x04..=0x0f) && {
        // The interrupted code ran with IRQs as SPSR.I says; resolve with the same.
        let irqs_were_on = tf.spsr & (1 << 7) == 0;
        if irqs_were_on {
            super::cpu::irq_enable();
        }
        // SAFETY: svelt_resolve_user_fault is defined (entry.rs) with exactly this signature.
        let ok = unsafe { svelt_resolve_user_fault(far, esr.0) };
        if irqs_were_on {
            super::cpu::irq_disable();
        }
        ok
    };
    if !retry {
        tf.elr = landing as u64;
    }
    true
}

/// Stores `value` at user address `udst` with GCSSTTR (a shadow-stack page of the current
/// task, 8-aligned); Err if that faults. Only on a CPU with FEAT_GCS.
pub fn gcs_store_user(udst: usize, value: u64) -> Result<(), ()> {
    // SAFETY: the store checks EL0's rights at `udst` and a fault lands in the fixup.
    match unsafe { __gcs_store_user(udst, value) } {
        0 => Ok(()),
        _ => Err(()),
    }
}
