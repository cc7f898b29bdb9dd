//! memcpy, memmove and memset for the kernel: the CPY*/SET* instructions (FEAT_MOPS) once
//! every CPU is known to have them, else 16 bytes a step through general-purpose register
//! pairs (compiler_builtins' generic versions are far slower, and the kernel must not use the
//! FP/SIMD registers that a faster library would). Normal memory only: never MMIO.
//!
//! A MOPS sequence interrupted and resumed on a CPU that runs the other algorithm option
//! raises EC 0x27, which `exception` answers with `svelt_abi::isa::mops::restart`.

use core::sync::atomic::{AtomicBool, Ordering};

/// Whether the kernel's copies (these and the user-access primitives) use CPY*/SET*. Read by
/// the assembly below as a byte; set once, after every CPU has been checked.
#[unsafe(no_mangle)]
static svelt_mops: AtomicBool = AtomicBool::new(false);

/// Turns the CPY*/SET* paths on: every online CPU implements FEAT_MOPS and may use it at EL1
/// (HCRX_EL2.MSCEn set by head.s, or no EL2).
pub fn use_mops() {
    svelt_mops.store(true, Ordering::Release);
}

/// Whether the CPY*/SET* paths are on.
pub fn mops_in_use() -> bool {
    svelt_mops.load(Ordering::Relaxed)
}

core::arch::global_asm!(
    r#"
.section .text.mem, "ax"
.arch_extension mops
.global memcpy
.global memmove
.global memset

// memcpy(dst x0, src x1, n x2) -> dst
memcpy:
    mov     x3, x0
    adrp    x16, svelt_mops
    ldrb    w16, [x16, :lo12:svelt_mops]
    cbz     w16, 16f
    cpyfp   [x3]!, [x1]!, x2!
    cpyfm   [x3]!, [x1]!, x2!
    cpyfe   [x3]!, [x1]!, x2!
    ret
16:
    // 64 bytes a step, then 32, 8 and single bytes.
    subs    x2, x2, #64
    b.lo    14f
1:  ldp     x4, x5, [x1]
    ldp     x6, x7, [x1, #16]
    ldp     x8, x9, [x1, #32]
    ldp     x10, x11, [x1, #48]
    stp     x4, x5, [x3]
    stp     x6, x7, [x3, #16]
    stp     x8, x9, [x3, #32]
    stp     x10, x11, [x3, #48]
    add     x1, x1, #64
    add     x3, x3, #64
    subs    x2, x2, #64
    b.hs    1b
14: add     x2, x2, #64
15: cmp     x2, #32
    b.lo    2f
    ldp     x4, x5, [x1], #16
    ldp     x6, x7, [x1], #16
    stp     x4, x5, [x3], #16
    stp     x6, x7, [x3], #16
    sub     x2, x2, #32
    b       15b
2:  cmp     x2, #8
    b.lo    3f
    ldr     x4, [x1], #8
    str     x4, [x3], #8
    sub     x2, x2, #8
    b       2b
3:  cbz     x2, 4f
    ldrb    w4, [x1], #1
    strb    w4, [x3], #1
    sub     x2, x2, #1
    b       3b
4:  ret

// memmove(dst x0, src x1, n x2) -> dst: forwards unless dst lies inside [src, src + n).
memmove:
    adrp    x16, svelt_mops
    ldrb    w16, [x16, :lo12:svelt_mops]
    cbz     w16, 17f
    mov     x3, x0
    cpyp    [x3]!, [x1]!, x2!
    cpym    [x3]!, [x1]!, x2!
    cpye    [x3]!, [x1]!, x2!
    ret
17: sub     x3, x0, x1
    cmp     x3, x2
    b.hs    memcpy
    add     x3, x0, x2
    add     x1, x1, x2
5:  cmp     x2, #8
    b.lo    6f
    ldr     x4, [x1, #-8]!
    str     x4, [x3, #-8]!
    sub     x2, x2, #8
    b       5b
6:  cbz     x2, 7f
    ldrb    w4, [x1, #-1]!
    strb    w4, [x3, #-1]!
    sub     x2, x2, #1
    b       6b
7:  ret

// memset(dst x0, c w1, n x2) -> dst
memset:
    mov     x3, x0
    adrp    x16, svelt_mops
    ldrb    w16, [x16, :lo12:svelt_mops]
    cbz     w16, 18f
    setp    [x3]!, x2!, x1
    setm    [x3]!, x2!, x1
    sete    [x3]!, x2!, x1
    ret
18:
    and     x4, x1, #0xff
    mov     x5, #0x0101010101010101
    mul     x4, x4, x5
    // 64 bytes a step (one compare-and-branch per four pairs), then 16, 8 and single bytes.
    subs    x2, x2, #64
    b.lo    12f
8:  stp     x4, x4, [x3]
    stp     x4, x4, [x3, #16]
    stp     x4, x4, [x3, #32]
    stp     x4, x4, [x3, #48]
    add     x3, x3, #64
    subs    x2, x2, #64
    b.hs    8b
12: add     x2, x2, #64
13: cmp     x2, #16
    b.lo    9f
    stp     x4, x4, [x3], #16
    sub     x2, x2, #16
    b       13b
9:  cmp     x2, #8
    b.lo    10f
    str     x4, [x3], #8
    sub     x2, x2, #8
    b       9b
10: cbz     x2, 11f
    strb    w4, [x3], #1
    sub     x2, x2, #1
    b       10b
11: ret
"#
);
