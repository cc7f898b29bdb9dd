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
1:  cmp     x2, #32
    b.lo    2f
    ldp     x4, x5, [x1], #16
    ldp     x6, x7, [x1], #16
    stp     x4, x5, [x3], #16
    stp     x6, x7, [x3], #16
    sub     x2, x2, #32
    b       1b
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
8:  cmp     x2, #32
    b.lo    9f
    stp     x4, x4, [x3], #16
    stp     x4, x4, [x3], #16
    sub     x2, x2, #32
    b       8b
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
