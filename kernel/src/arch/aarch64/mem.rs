//! memcpy, memmove and memset for the kernel, 16 bytes a step through general-purpose register
//! pairs (compiler_builtins' generic versions are far slower, and the kernel must not use the
//! FP/SIMD registers that a faster library would). Normal memory only: never MMIO.

core::arch::global_asm!(
    r#"
.section .text.mem, "ax"
.global memcpy
.global memmove
.global memset

// memcpy(dst x0, src x1, n x2) -> dst
memcpy:
    mov     x3, x0
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
    sub     x3, x0, x1
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
