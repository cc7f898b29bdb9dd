// Svelt's vDSO (linux-vdso.so.1): clock_gettime, gettimeofday and clock_getres answered in user
// space from the counter (CNTVCT_EL0) and the [vvar] page, and the signal-return trampoline.
// Integer-only, leaf functions: no stack, x0-x17 only. The names in braces are constants vdso.rs
// passes in (layout.rs: the [vvar] layout the kernel writes, kernel/src/vdso.rs).

    .cfi_sections .eh_frame

// read_ns addresses the sequence count as [x9] and the offsets as [x9, kind, lsl #3].
.if {VVAR_SEQ} != 0 || {VVAR_OFFSET} != 0
    .error "the [vvar] sequence count and offsets must start the page"
.endif

// In: x9 = [vvar], x2 = the clock's kind. Out: x12 = the clock's time in nanoseconds.
// Retries while the kernel updates the page (odd or changed sequence count).
.macro read_ns
2:  ldar    w10, [x9]
    tbnz    w10, #0, 2b
    ldr     w5, [x9, #{VVAR_SHIFT}]
    ldr     x6, [x9, #{VVAR_MULT}]
    ldr     x7, [x9, x2, lsl #3]
    // The counter is read after the instructions before it (else two reads may go back).
    isb
    mrs     x8, cntvct_el0
    dmb     ishld
    ldr     w11, [x9]
    cmp     w10, w11
    b.ne    2b
    // (counter * MULT) >> SHIFT over 128 bits (0 < SHIFT < 64), plus the clock's offset.
    mul     x12, x8, x6
    umulh   x13, x8, x6
    lsr     x12, x12, x5
    neg     x5, x5
    lsl     x13, x13, x5
    orr     x12, x12, x13
    add     x12, x12, x7
.endm

// x15 = 1e9.
.macro nsec_per_sec
    mov     w15, #0xca00
    movk    w15, #0x3b9a, lsl #16
.endm

    .text
    .balign 16
    .globl  __kernel_clock_gettime
    .type   __kernel_clock_gettime, %function
// int __kernel_clock_gettime(clockid_t clk, struct timespec *ts)
__kernel_clock_gettime:
    .cfi_startproc
    cmp     w0, #{CLOCK_IDS}
    b.hs    9f
    adr     x2, clock_kind
    ldrb    w2, [x2, w0, uxtw]
    cbz     w2, 9f
    adrp    x9, _vvar
    read_ns
    nsec_per_sec
    udiv    x16, x12, x15
    msub    x17, x16, x15, x12
    stp     x16, x17, [x1]
    mov     w0, #0
    ret
    // Clocks served by the kernel alone (CPU time, alarms, bad ids): the syscall's answer.
9:  mov     x8, #{NR_GETTIME}
    svc     #0
    ret
    .cfi_endproc
    .size   __kernel_clock_gettime, . - __kernel_clock_gettime

    .balign 16
    .globl  __kernel_gettimeofday
    .type   __kernel_gettimeofday, %function
// int __kernel_gettimeofday(struct timeval *tv, struct timezone *tz)
__kernel_gettimeofday:
    .cfi_startproc
    adrp    x9, _vvar
    mov     x2, #{KIND_REAL}
    read_ns
    cbz     x0, 3f
    nsec_per_sec
    udiv    x16, x12, x15
    msub    x17, x16, x15, x12
    mov     w15, #1000
    udiv    x17, x17, x15
    stp     x16, x17, [x0]
    // The time zone settimeofday set: one word, no sequence needed.
3:  cbz     x1, 4f
    ldr     x3, [x9, #{VVAR_TZ}]
    str     x3, [x1]
4:  mov     w0, #0
    ret
    .cfi_endproc
    .size   __kernel_gettimeofday, . - __kernel_gettimeofday

    .balign 16
    .globl  __kernel_clock_getres
    .type   __kernel_clock_getres, %function
// int __kernel_clock_getres(clockid_t clk, struct timespec *res)
__kernel_clock_getres:
    .cfi_startproc
    cmp     w0, #{CLOCK_IDS}
    b.hs    9f
    adr     x2, clock_kind
    ldrb    w2, [x2, w0, uxtw]
    cbz     w2, 9f
    cbz     x1, 5f
    adrp    x9, _vvar
    ldr     x3, [x9, #{VVAR_RES}]
    stp     xzr, x3, [x1]
5:  mov     w0, #0
    ret
9:  mov     x8, #{NR_GETRES}
    svc     #0
    ret
    .cfi_endproc
    .size   __kernel_clock_getres, . - __kernel_clock_getres

// The return address of a handler installed without SA_RESTORER. The kernel points x29 at the
// frame record it put above the signal frame (the interrupted x29 and x30), so the CFI says:
// the caller's frame is that record. The range starts one instruction early: unwinders look up
// the return address minus one, which must still be inside, and the frame is a signal frame
// (no "minus one" for the frame below). gdb also knows the two instructions themselves.
    .balign 16
    .cfi_startproc
    .cfi_signal_frame
    .cfi_def_cfa x29, 0
    .cfi_offset x29, 0
    .cfi_offset x30, 8
    nop
    .globl  __kernel_rt_sigreturn
    .type   __kernel_rt_sigreturn, %function
__kernel_rt_sigreturn:
    mov     x8, #{NR_RT_SIGRETURN}
    svc     #0
    .cfi_endproc
    .size   __kernel_rt_sigreturn, . - __kernel_rt_sigreturn

    .section .rodata
// The kind of each clock id below CLOCK_IDS: 0 for the syscall, else an index into the [vvar]
// offsets. REALTIME(0), MONOTONIC(1), MONOTONIC_RAW(4), REALTIME_COARSE(5), MONOTONIC_COARSE(6),
// BOOTTIME(7), TAI(11): Svelt's syscall answers the coarse and raw clocks, BOOTTIME and TAI
// from the same counter and offset.
clock_kind:
    .byte {KIND_REAL}, {KIND_MONO}, 0, 0, {KIND_MONO}, {KIND_REAL}, {KIND_MONO}, {KIND_MONO}
    .byte 0, 0, 0, {KIND_REAL}, 0, 0, 0, 0
