// Entering a guest and coming back (a kernel at EL2 with VHE).
//
// guest_enter(regs: *mut GuestRegs) -> u64: saves the host's callee-saved registers and the
// regs pointer on the kernel stack, points VBAR_EL2 at guest_vectors, loads the guest's
// X0-X30, SP_EL1, ELR_EL2 (PC) and SPSR_EL2 (PSTATE) and ERETs to it. The guest's next
// exception to EL2 lands in guest_vectors on the same stack (SP_EL2 is where the ERET left
// it), which stores the guest's registers and syndrome back into *regs, restores VBAR_EL2 and
// the host's registers, and returns the exception's kind: 0 synchronous, 1 IRQ, 2 FIQ,
// 3 SError. The caller has masked interrupts and loaded everything else (HCR_EL2, the
// stage-2 tables, the guest's EL1 system registers).
//
// GuestRegs, pinned by const assertions in guest.rs: x[31] at 0, sp_el1 248, pc 256,
// pstate 264, esr 272, far 280, hpfar 288.

.equ GR_SP_EL1, 248
.equ GR_PC, 256
.equ GR_ESR, 272
.equ GR_HPFAR, 288
.equ HOST_FRAME, 112

.section .text.guest, "ax"
.global guest_enter
guest_enter:
    stp     x29, x30, [sp, #-HOST_FRAME]!
    stp     x19, x20, [sp, #16]
    stp     x21, x22, [sp, #32]
    stp     x23, x24, [sp, #48]
    stp     x25, x26, [sp, #64]
    stp     x27, x28, [sp, #80]
    str     x0, [sp, #96]
    adr     x1, guest_vectors
    msr     vbar_el1, x1                // VBAR_EL2 under E2H
    ldr     x1, [x0, #GR_SP_EL1]
    msr     sp_el1, x1
    ldp     x1, x2, [x0, #GR_PC]
    msr     elr_el1, x1                 // ELR_EL2
    msr     spsr_el1, x2                // SPSR_EL2
    isb
    ldp     x2, x3, [x0, #2 * 8]
    ldp     x4, x5, [x0, #4 * 8]
    ldp     x6, x7, [x0, #6 * 8]
    ldp     x8, x9, [x0, #8 * 8]
    ldp     x10, x11, [x0, #10 * 8]
    ldp     x12, x13, [x0, #12 * 8]
    ldp     x14, x15, [x0, #14 * 8]
    ldp     x16, x17, [x0, #16 * 8]
    ldp     x18, x19, [x0, #18 * 8]
    ldp     x20, x21, [x0, #20 * 8]
    ldp     x22, x23, [x0, #22 * 8]
    ldp     x24, x25, [x0, #24 * 8]
    ldp     x26, x27, [x0, #26 * 8]
    ldp     x28, x29, [x0, #28 * 8]
    ldr     x30, [x0, #30 * 8]
    ldp     x0, x1, [x0]
    eret

// An exception from the guest: x0 and x1 are pushed, x1 = kind.
guest_exit:
    ldr     x0, [sp, #16 + 96]          // regs
    stp     x2, x3, [x0, #2 * 8]
    stp     x4, x5, [x0, #4 * 8]
    stp     x6, x7, [x0, #6 * 8]
    stp     x8, x9, [x0, #8 * 8]
    stp     x10, x11, [x0, #10 * 8]
    stp     x12, x13, [x0, #12 * 8]
    stp     x14, x15, [x0, #14 * 8]
    stp     x16, x17, [x0, #16 * 8]
    stp     x18, x19, [x0, #18 * 8]
    stp     x20, x21, [x0, #20 * 8]
    stp     x22, x23, [x0, #22 * 8]
    stp     x24, x25, [x0, #24 * 8]
    stp     x26, x27, [x0, #26 * 8]
    stp     x28, x29, [x0, #28 * 8]
    str     x30, [x0, #30 * 8]
    ldp     x2, x3, [sp], #16           // the guest's x0, x1
    stp     x2, x3, [x0]
    mrs     x2, sp_el1
    str     x2, [x0, #GR_SP_EL1]
    mrs     x2, elr_el1                 // ELR_EL2
    mrs     x3, spsr_el1                // SPSR_EL2
    stp     x2, x3, [x0, #GR_PC]
    mrs     x2, esr_el1                 // ESR_EL2
    mrs     x3, far_el1                 // FAR_EL2
    stp     x2, x3, [x0, #GR_ESR]
    mrs     x2, S3_4_C6_C0_4            // HPFAR_EL2
    str     x2, [x0, #GR_HPFAR]
    adr     x2, exception_vectors
    msr     vbar_el1, x2
    isb
    mov     x0, x1
    ldp     x19, x20, [sp, #16]
    ldp     x21, x22, [sp, #32]
    ldp     x23, x24, [sp, #48]
    ldp     x25, x26, [sp, #64]
    ldp     x27, x28, [sp, #80]
    ldp     x29, x30, [sp], #HOST_FRAME
    ret

// The kernel's own exceptions while these vectors are installed (between the VBAR write and
// the ERET, or the exit and the VBAR restore: IRQs masked, so only a kernel bug) go to the
// kernel's vectors as usual.
.macro GVENTRY_HOST off
    .balign 0x80
    b       exception_vectors + \off
.endm

.macro GVENTRY_GUEST kind
    .balign 0x80
    stp     x0, x1, [sp, #-16]!
    mov     x1, #\kind
    b       guest_exit
.endm

.balign 2048
.global guest_vectors
guest_vectors:
    GVENTRY_HOST 0x000
    GVENTRY_HOST 0x080
    GVENTRY_HOST 0x100
    GVENTRY_HOST 0x180
    GVENTRY_HOST 0x200
    GVENTRY_HOST 0x280
    GVENTRY_HOST 0x300
    GVENTRY_HOST 0x380
    GVENTRY_GUEST 0
    GVENTRY_GUEST 1
    GVENTRY_GUEST 2
    GVENTRY_GUEST 3
    // AArch32 guests are not offered (KVM_ARM_VCPU_EL1_32BIT is refused): an exception from
    // one cannot happen, and would be reported as a synchronous exit.
    GVENTRY_GUEST 0
    GVENTRY_GUEST 1
    GVENTRY_GUEST 2
    GVENTRY_GUEST 3
