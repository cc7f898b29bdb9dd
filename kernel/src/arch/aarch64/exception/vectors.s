// Exception vectors.
//
// EL1: every entry saves a full TrapFrame (x0-x30, SP_EL0, ELR, SPSR, ESR, FAR) on the current
// stack and calls `exception_entry(kind, frame)` in Rust, then restores the frame and ERETs.
// `kind` = 4 * source + type; source 0 EL1t, 1 EL1h, 2 EL0 AArch64, 3 EL0 AArch32; type 0 sync,
// 1 IRQ, 2 FIQ, 3 SError. The layout is pinned by TrapFrame's const assertions in Rust.
//
// EL2 (only when Svelt was entered at EL2): Svelt does not run anything at EL2 yet, so any
// exception taken there is a bug; it is reported on the console (physical address handed over by
// EL1 in el2_report) and the machine stops.

.equ TF_SIZE, 36 * 8
.equ TF_SP_EL0, 31 * 8
.equ TF_ELR, 32 * 8
.equ TF_SPSR, 33 * 8
.equ TF_ESR, 34 * 8
.equ TF_FAR, 35 * 8

.macro VENTRY kind
    .balign 0x80
    sub     sp, sp, #TF_SIZE
    stp     x0, x1, [sp, #0]
    mov     x0, #\kind
    b       el1_common
.endm

.section .text.vectors, "ax"
.balign 2048
.global exception_vectors
exception_vectors:
    VENTRY 0
    VENTRY 1
    VENTRY 2
    VENTRY 3
    VENTRY 4
    VENTRY 5
    VENTRY 6
    VENTRY 7
    // EL0 AArch64 synchronous (syscalls, faults, traps): straight to the kernel's handler,
    // without decoding a kind.
    .balign 0x80
    sub     sp, sp, #TF_SIZE
    stp     x0, x1, [sp, #0]
    b       el0_sync_common
    VENTRY 9
    VENTRY 10
    VENTRY 11
    VENTRY 12
    VENTRY 13
    VENTRY 14
    VENTRY 15

// Saves x2-x19, ELR, SPSR, ESR and FAR into the TrapFrame at sp (x0 and x1 are already
// there); leaves ESR in x1.
.macro SAVE_LOW
    stp     x2, x3, [sp, #2 * 8]
    stp     x4, x5, [sp, #4 * 8]
    stp     x6, x7, [sp, #6 * 8]
    stp     x8, x9, [sp, #8 * 8]
    stp     x10, x11, [sp, #10 * 8]
    stp     x12, x13, [sp, #12 * 8]
    stp     x14, x15, [sp, #14 * 8]
    stp     x16, x17, [sp, #16 * 8]
    stp     x18, x19, [sp, #18 * 8]
    mrs     x1, elr_el1
    mrs     x2, spsr_el1
    stp     x1, x2, [sp, #TF_ELR]
    mrs     x1, esr_el1
    mrs     x2, far_el1
    stp     x1, x2, [sp, #TF_ESR]
.endm

// Saves x20-x30 and SP_EL0 into the TrapFrame at sp + \off (clobbers x2).
.macro SAVE_HIGH off
    stp     x20, x21, [sp, #\off + 20 * 8]
    stp     x22, x23, [sp, #\off + 22 * 8]
    stp     x24, x25, [sp, #\off + 24 * 8]
    stp     x26, x27, [sp, #\off + 26 * 8]
    stp     x28, x29, [sp, #\off + 28 * 8]
    mrs     x2, sp_el0
    stp     x30, x2, [sp, #\off + 30 * 8]
.endm

// Saves x2-x30, SP_EL0, ELR, SPSR, ESR and FAR into the TrapFrame at sp (x0 and x1 are
// already there); leaves ESR in x1.
.macro SAVE_REST
    SAVE_LOW
    SAVE_HIGH 0
.endm

// From EL0 the frame record below the TrapFrame ends the chain (x29 = 0): a backtrace of a
// kernel fault under a syscall stops at the handler, never walking into user memory.
// A syscall (ESR.EC SVC64) goes to its own handler; an SVE or SME access trap (EC 0x19 or
// 0x1D: bit 2 tells them apart) to svelt_el0_fp with x20-x28 and SP_EL0 left unsaved (the
// Rust code it runs keeps them, and reads no register of the frame); the rest to
// svelt_el0_sync.
el0_sync_common:
    SAVE_LOW
    lsr     x1, x1, #26
    cmp     x1, #0x15
    b.ne    1f
    SAVE_HIGH 0
    stp     xzr, xzr, [sp, #-16]!
    mov     x29, xzr
    add     x0, sp, #16
    bl      svelt_el0_svc
    b       exception_return
1:  orr     x2, x1, #4
    cmp     x2, #0x1d
    b.eq    el0_fp
    SAVE_HIGH 0
    stp     xzr, xzr, [sp, #-16]!
    mov     x29, xzr
    add     x0, sp, #16
    bl      svelt_el0_sync
    b       exception_return

// An SVE or SME access trap. svelt_el0_fp returns 0 when the task goes straight back to user
// mode: only what the call may have changed (x0-x18, x29, x30) is restored. Otherwise the rest
// of the frame is saved (x20-x28 still hold the user's values) and svelt_el0_fp_return, given
// the code, takes the full way back.
el0_fp:
    stp     x29, x30, [sp, #29 * 8]
    stp     xzr, xzr, [sp, #-16]!
    mov     x29, xzr
    add     x0, sp, #16
    bl      svelt_el0_fp
    cbnz    w0, 2f
    add     sp, sp, #16
    ldp     x1, x2, [sp, #TF_ELR]
    msr     elr_el1, x1
    msr     spsr_el1, x2
    ldp     x0, x1, [sp, #0]
    ldp     x2, x3, [sp, #2 * 8]
    ldp     x4, x5, [sp, #4 * 8]
    ldp     x6, x7, [sp, #6 * 8]
    ldp     x8, x9, [sp, #8 * 8]
    ldp     x10, x11, [sp, #10 * 8]
    ldp     x12, x13, [sp, #12 * 8]
    ldp     x14, x15, [sp, #14 * 8]
    ldp     x16, x17, [sp, #16 * 8]
    ldr     x18, [sp, #18 * 8]
    ldp     x29, x30, [sp, #29 * 8]
    add     sp, sp, #TF_SIZE
    eret
2:  mov     w1, w0
    stp     x20, x21, [sp, #16 + 20 * 8]
    stp     x22, x23, [sp, #16 + 22 * 8]
    stp     x24, x25, [sp, #16 + 24 * 8]
    stp     x26, x27, [sp, #16 + 26 * 8]
    str     x28, [sp, #16 + 28 * 8]
    mrs     x2, sp_el0
    str     x2, [sp, #16 + TF_SP_EL0]
    add     x0, sp, #16
    bl      svelt_el0_fp_return
    b       exception_return

el1_common:
    SAVE_REST
    // A frame record so backtraces walk from the handler into the interrupted code.
    stp     x29, x1, [sp, #-16]!
    ldr     x1, [sp, #16 + TF_ELR]
    str     x1, [sp, #8]
    mov     x29, sp
    add     x1, sp, #16
    bl      exception_entry
.global exception_return
exception_return:                       // also where new tasks leave ret_from_fork
    add     sp, sp, #16

    ldp     x1, x2, [sp, #TF_ELR]
    msr     elr_el1, x1
    msr     spsr_el1, x2
    ldp     x30, x1, [sp, #30 * 8]
    msr     sp_el0, x1
    ldp     x0, x1, [sp, #0]
    ldp     x2, x3, [sp, #2 * 8]
    ldp     x4, x5, [sp, #4 * 8]
    ldp     x6, x7, [sp, #6 * 8]
    ldp     x8, x9, [sp, #8 * 8]
    ldp     x10, x11, [sp, #10 * 8]
    ldp     x12, x13, [sp, #12 * 8]
    ldp     x14, x15, [sp, #14 * 8]
    ldp     x16, x17, [sp, #16 * 8]
    ldp     x18, x19, [sp, #18 * 8]
    ldp     x20, x21, [sp, #20 * 8]
    ldp     x22, x23, [sp, #22 * 8]
    ldp     x24, x25, [sp, #24 * 8]
    ldp     x26, x27, [sp, #26 * 8]
    ldp     x28, x29, [sp, #28 * 8]
    add     sp, sp, #TF_SIZE
    eret

// ---------------------------------------------------------------------------------------------
// EL2: report and halt. Runs with the EL2 MMU off, so adr gives physical addresses.
// ---------------------------------------------------------------------------------------------
.macro VENTRY2 kind
    .balign 0x80
    mov     x18, #\kind
    b       el2_fault
.endm

.balign 2048
.global el2_vectors
el2_vectors:
    VENTRY2 0
    VENTRY2 1
    VENTRY2 2
    VENTRY2 3
    VENTRY2 4
    VENTRY2 5
    VENTRY2 6
    VENTRY2 7
    VENTRY2 8
    VENTRY2 9
    VENTRY2 10
    VENTRY2 11
    VENTRY2 12
    VENTRY2 13
    VENTRY2 14
    VENTRY2 15

// el2_report: (u64 uart_pa, u64 exit_semihosting, u64 lsr_offset, u64 io_width) written by EL1
// and cleaned to memory; lsr_offset 0 means a PL011, else a 16550 with that LSR offset and
// registers io_width (1 or 4) bytes wide.
el2_fault:
    adr     x17, el2_report_ptr
    ldr     x17, [x17]                  // link-time VA of el2_report
    adr     x16, _start
    ldr     x15, =_start
    sub     x17, x17, x15
    add     x17, x17, x16               // its physical address
    ldr     x16, [x17]                  // UART PA (0: unknown)
    ldr     x15, [x17, #16]             // 16550 LSR offset (0: PL011)
    ldr     x14, [x17, #24]             // 16550 access width
    adr     x1, el2_msg
    bl      el2_puts
    mov     x0, x18
    bl      el2_puthex
    adr     x1, el2_msg_esr
    bl      el2_puts
    mrs     x0, esr_el2
    bl      el2_puthex
    adr     x1, el2_msg_elr
    bl      el2_puts
    mrs     x0, elr_el2
    bl      el2_puthex
    adr     x1, el2_msg_far
    bl      el2_puts
    mrs     x0, far_el2
    bl      el2_puthex
    adr     x1, el2_msg_end
    bl      el2_puts
    ldr     x0, [x17, #8]
    cbz     x0, 1f
    adr     x1, el2_exit_block          // semihosting SYS_EXIT (ApplicationExit, 101)
    mov     w0, #0x18
    hlt     #0xf000
1:  ldr     x0, =0x84000008             // PSCI SYSTEM_OFF through EL3 firmware
    smc     #0
2:  wfe
    b       2b

// w0 = byte, out through the UART at x16 (x15, x14: el2_report's 16550 fields). Clobbers x2.
el2_putc:
    cbnz    x15, 2f
1:  ldr     w2, [x16, #0x18]            // PL011 FR
    tbnz    w2, #5, 1b                  // TXFF
    str     w0, [x16]
    ret
2:  cmp     x14, #4
    b.ne    4f
3:  ldr     w2, [x16, x15]              // 16550 LSR, 32-bit registers
    tbz     w2, #5, 3b                  // THRE
    str     w0, [x16]                   // THR
    ret
4:  ldrb    w2, [x16, x15]              // 16550 LSR, byte registers
    tbz     w2, #5, 4b
    strb    w0, [x16]
    ret

// x1 = NUL-terminated string, x16 = UART PA (skipped when 0). Clobbers x0-x2, x13.
el2_puts:
    cbz     x16, 3f
    mov     x13, x30
1:  ldrb    w0, [x1], #1
    cbz     w0, 2f
    bl      el2_putc
    b       1b
2:  mov     x30, x13
3:  ret

// x0 = value, printed as 16 hex digits. Clobbers x0-x4, x13.
el2_puthex:
    cbz     x16, 3f
    mov     x13, x30
    mov     x1, x0
    mov     x3, #60
1:  lsr     x4, x1, x3
    and     x4, x4, #0xf
    cmp     x4, #10
    add     x2, x4, #'0'
    add     x4, x4, #('a' - 10)
    csel    x0, x2, x4, lo
    bl      el2_putc
    subs    x3, x3, #4
    b.pl    1b
    mov     x30, x13
3:  ret

.balign 8
el2_report_ptr:
    .quad   el2_report
el2_exit_block:
    .quad   0x20026, 101
el2_msg:
    .asciz  "\nsvelt: EL2 exception vector=0x"
el2_msg_esr:
    .asciz  " esr=0x"
el2_msg_elr:
    .asciz  " elr=0x"
el2_msg_far:
    .asciz  " far=0x"
el2_msg_end:
    .asciz  "\nsvelt: exit status 101\n"
.balign 4
.ltorg
