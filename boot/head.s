// Svelt entry: Linux arm64 Image header (also a PE/COFF header: UEFI firmware can start the Image
// as an EFI application, whose stub comes back to primary_entry like any loader), EL2 set-up (the
// kernel stays at EL2 with VHE, or drops to EL1), BSS, early page tables, MMU on.
//
// Entered at EL2 on a CPU with FEAT_VHE, the kernel stays there with HCR_EL2.E2H and TGE set:
// its EL1 register names (SCTLR_EL1, TTBR0/1_EL1, TCR_EL1, VBAR_EL1, ESR_EL1, CPACR_EL1,
// ZCR_EL1, SMCR_EL1, CNTKCTL_EL1, ...) then reach the EL2 registers, so the same code serves both.
// The few registers with no such redirection (TPIDR_EL1, and the EL1 virtual timer, whose EL2
// counterpart is the EL2 physical timer) are read and written by instructions listed in the
// .svelt.el2_patch section, which `el2_patch` rewrites once, on the boot CPU, before the MMU is
// on. `svelt.el=1` on the command line (found in the DTB by `dtb_wants_el1`) keeps the EL1 kernel.
//
// A loader places the image at a 2 MiB-aligned physical address P and jumps to its first byte with
// the MMU off and x0 = DTB physical address. Everything here runs at P with the MMU off, so it uses
// only PC-relative addressing (adr/adrp) until `mmu_on` has mapped the image at its link address
// (KIMAGE_VADDR, see linker.ld). The early tables map:
//   TTBR0: an identity map of the image (only needed at the instant the MMU turns on)
//   TTBR1: the image at KIMAGE_VADDR, and the DTB's 2 MiB block(s) in the linear map
// with 2 MiB RWX blocks. Rust replaces TTBR1 with W^X tables as soon as it has read the DTB.
// Secondary CPUs enter at `secondary_entry` (PSCI CPU_ON) or `spin_table_entry` (released from
// a spin table) and reuse the same steps.
//
// This file is included by kernel/src/arch/aarch64/boot.rs with global_asm!, which supplies the
// constants named in braces.

.section .head.text, "ax"
.global _start
_start:
    add     x13, x18, #0x16             // code0: a no-op whose low half is "MZ" (the DOS magic)
    b       primary_entry               // code1
    .quad   0                           // text_offset: 0, so a 2 MiB-aligned base
    .quad   __image_size                // image_size, BSS included
    .quad   0xa                         // flags: little-endian, 4 KiB pages, anywhere in memory
    .quad   0, 0, 0                     // res2..res4
    .long   0x644d5241                  // magic "ARM\x64"
    .long   pe_header - _start          // res5: where the PE header starts (DOS e_lfanew)

// The same file is a PE32+ EFI application, so UEFI firmware can start it (efi_pe_entry, the
// EFI stub in kernel/src/boot/efi.rs). Every section's address relative to the image (RVA)
// equals its offset in the file, so the firmware's copy looks like the flat Image plus zeroed
// BSS. There is no relocation directory and the "relocations stripped" flag is clear: the
// firmware may load it anywhere and has nothing to patch (the stub only uses PC-relative
// addressing). The sizes come from linker.ld.
pe_header:
    .ascii  "PE\0\0"
    .short  0xaa64                      // Machine: AArch64
    .short  2                           // NumberOfSections
    .long   0, 0, 0                     // TimeDateStamp, PointerToSymbolTable, NumberOfSymbols
    .short  pe_sections - pe_optional   // SizeOfOptionalHeader
    .short  0x0206                      // executable, line numbers and debug info stripped
pe_optional:
    .short  0x20b                       // PE32+
    .byte   0, 0                        // linker version
    .long   __pe_text_size              // SizeOfCode
    .long   __pe_data_vsize             // SizeOfInitializedData (with BSS: the loader zeroes it)
    .long   0                           // SizeOfUninitializedData
    .long   __pe_entry_rva              // AddressOfEntryPoint
    .long   __pe_text_rva               // BaseOfCode
    .quad   0                           // ImageBase
    .long   0x1000                      // SectionAlignment
    .long   0x1000                      // FileAlignment
    .short  0, 0                        // OS version
    // Image version 1.1, the number Linux's stub gives itself: 1.0 tells loaders to start the
    // image with LoadImage/StartImage and hand the initrd over through the
    // LINUX_EFI_INITRD_MEDIA_GUID LoadFile2 protocol (GRUB's `linux` and `initrd` do so only
    // when the major version is 1 or more), 1.1 that `initrd=` words are read too.
    .short  1, 1                        // MajorImageVersion, MinorImageVersion
    .short  0, 0                        // subsystem version
    .long   0                           // Win32VersionValue
    .long   __image_size                // SizeOfImage
    .long   __pe_text_rva               // SizeOfHeaders: this page
    .long   0                           // CheckSum
    .short  10                          // Subsystem: EFI application
    .short  0                           // DllCharacteristics
    .quad   0, 0, 0, 0                  // stack and heap reserve/commit
    .long   0                           // LoaderFlags
    .long   6                           // NumberOfRvaAndSizes: up to the (empty) relocation entry
    .quad   0, 0, 0, 0, 0, 0            // export, import, resource, exception, security, base relocation
pe_sections:
    .ascii  ".text\0\0\0"
    .long   __pe_text_size              // VirtualSize
    .long   __pe_text_rva               // VirtualAddress
    .long   __pe_text_size              // SizeOfRawData
    .long   __pe_text_rva               // PointerToRawData
    .long   0, 0                        // relocations, line numbers
    .short  0, 0
    .long   0x60000020                  // code, execute, read
    .ascii  ".data\0\0\0"
    .long   __pe_data_vsize             // VirtualSize: read-only data, data and BSS
    .long   __pe_data_rva
    .long   __pe_data_fsize             // SizeOfRawData: up to the end of the file
    .long   __pe_data_rva
    .long   0, 0
    .short  0, 0
    .long   0xc0000040                  // initialised data, read, write
    .balign 4096                        // the headers end here; .text follows
.global __head_end
__head_end:

.section .text.boot, "ax"

// EFI entry (x0 = image handle, x1 = system table, x30 = return to the firmware): the stub
// gathers what the kernel needs, leaves the firmware and comes back to primary_entry.
efi_pe_entry:
    b       {efi_main}
.global efi_pe_entry

// ---------------------------------------------------------------------------------------------
// Primary CPU.  x0 = DTB physical address.
// ---------------------------------------------------------------------------------------------
primary_entry:
    mov     x19, x0                     // x19 = DTB PA (callee-saved across the helpers)
    bl      dtb_wants_el1
    eor     x0, x0, #1                  // VHE allowed unless the command line says svelt.el=1
    bl      el_setup                    // x0 = the EL we were entered at, x1 = 1 if still at EL2
    mov     x20, x0
    cbz     x1, 1f
    bl      el2_patch
1:  adr     x21, _start                 // x21 = image PA

    // Zero BSS (page tables and the boot stack live there).
    adrp    x0, __bss_start
    add     x0, x0, :lo12:__bss_start
    adrp    x1, __bss_end
    add     x1, x1, :lo12:__bss_end
1:  cmp     x0, x1
    b.hs    2f
    stp     xzr, xzr, [x0], #16
    b       1b
2:
    bl      create_early_tables
    adrp    x0, {early} + 0 * 4096      // TTBR0: identity L0
    adrp    x1, {early} + 3 * 4096      // TTBR1: upper-half L0
    bl      mmu_on
    ldr     x0, =primary_high
    br      x0

primary_high:                           // now at KIMAGE_VADDR
    adrp    x0, {boot_stack} + {boot_stack_size}
    add     x0, x0, :lo12:{boot_stack} + {boot_stack_size}
    mov     sp, x0
    mov     x29, xzr
    mov     x30, xzr
    adrp    x0, exception_vectors
    add     x0, x0, :lo12:exception_vectors
    msr     vbar_el1, x0
    isb
    mov     x0, x19                     // dtb_pa
    mov     x1, x20                     // entry EL
    mov     x2, x21                     // image_pa
    bl      {kernel_main}
3:  wfe
    b       3b

// ---------------------------------------------------------------------------------------------
// Secondary CPUs.  x0 = physical address of a SecondaryBoot (ttbr1, stack_top, arg, vhe).
// ---------------------------------------------------------------------------------------------
.global secondary_entry
secondary_entry:
    mov     x19, x0
    ldr     x0, [x19, #24]              // VHE: 1 when the boot CPU's kernel runs at EL2
    mov     x22, x0
    bl      el_setup
    mov     x20, x0
    cmp     x1, x22                     // a CPU that cannot run the kernel where the boot CPU
    b.ne    el_mismatch                 // does (EL2 without FEAT_VHE) stays out
    ldr     x1, [x19, #0]               // TTBR1 (the final kernel tables)
    ldr     x21, [x19, #8]              // stack top (VA)
    ldr     x22, [x19, #16]             // argument for secondary_main
    adrp    x0, {early} + 0 * 4096      // identity map, kept for this moment
    bl      mmu_on
    ldr     x0, =secondary_high
    br      x0

// Secondary CPUs released from a spin table (Raspberry Pi firmware, many U-Boot boards, QEMU's
// raspi machines): MMU off, at the boot EL, and no argument. The boot CPU listed each CPU it
// released in SPIN_BOOT_TABLE (16-byte entries: MPIDR affinity, then the record's physical
// address; a zero record ends the table) and cleaned it to the point of coherency. A CPU it
// did not list waits here for good.
.global spin_table_entry
spin_table_entry:
    mrs     x1, mpidr_el1
    ldr     x2, ={affinity_mask}
    and     x1, x1, x2
    adrp    x3, {spin_table}
    add     x3, x3, :lo12:{spin_table}
    mov     x4, #{spin_entries}
1:  cbz     x4, 2f
    ldp     x5, x0, [x3], #16
    cbz     x0, 2f
    cmp     x5, x1
    b.eq    secondary_entry
    sub     x4, x4, #1
    b       1b
2:  wfe
    b       2b

secondary_high:
    mov     sp, x21
    mov     x29, xzr
    mov     x30, xzr
    adrp    x0, exception_vectors
    add     x0, x0, :lo12:exception_vectors
    msr     vbar_el1, x0
    isb
    mov     x0, x22
    mov     x1, x20
    bl      {secondary_main}
4:  wfe
    b       4b

// ---------------------------------------------------------------------------------------------
// el_setup: x0 = 1 if the kernel may stay at EL2 (VHE). Returns x0 = entry EL (1 or 2) and
// x1 = 1 if it returns at EL2 (VHE), 0 at EL1. Clobbers x0-x5.
// At EL2 with FEAT_VHE (ID_AA64MMFR1_EL1.VH) and x0 = 1: HCR_EL2.E2H and TGE, so the EL2&0
// regime takes the kernel and its EL0 tasks, and return at EL2. Otherwise: give EL1 an
// AArch64, untrapped, full-length view of FP/SVE/SME, timers and the GIC system registers,
// install report-and-halt vectors, then ERET to EL1. Either way FP/SVE/SME are untrapped at
// full length and the features below are let through.
// ---------------------------------------------------------------------------------------------
el_setup:
    mov     x5, x0
    mrs     x0, CurrentEL
    lsr     x0, x0, #2
    cmp     x0, #1
    b.ne    1f
    mov     x1, #0
    ret
1:  cmp     x0, #2
    b.ne    el_unsupported
    mrs     x1, ID_AA64MMFR1_EL1
    ubfx    x1, x1, #8, #4              // VH
    cmp     x1, #0
    csel    x5, xzr, x5, eq             // x5 = 1: stay at EL2

    // HCR_EL2: EL1 is AArch64; pointer authentication and MTE tags do not trap when implemented;
    // with VHE, E2H and TGE.
    mov     x1, #(1 << 31)              // RW
    cbz     x5, 1f
    orr     x1, x1, #(1 << 34)          // E2H
    orr     x1, x1, #(1 << 27)          // TGE
1:
    mrs     x2, ID_AA64ISAR1_EL1
    mov     x3, #0x0ff0                 // APA, API
    movk    x3, #0xff00, lsl #16        // GPA, GPI
    tst     x2, x3
    b.ne    2f
    mrs     x2, S3_0_C0_C6_2            // ID_AA64ISAR2_EL1
    tst     x2, #0xff00                 // APA3, GPA3
    b.eq    3f
2:  orr     x1, x1, #(3 << 40)          // APK, API
3:  mrs     x2, ID_AA64PFR1_EL1
    ubfx    x2, x2, #8, #4              // MTE
    cmp     x2, #2
    b.lo    4f
    orr     x1, x1, #(1 << 56)          // ATA
4:  msr     hcr_el2, x1
    isb
    msr     vttbr_el2, xzr
    // SCTLR_EL2: MMU off, little-endian, RES1 bits (of either layout: with E2H it is SCTLR_EL1's).
    ldr     x1, =0x30c50830
    msr     sctlr_el2, x1

    // EL1 sees the real CPU identity, counters and physical timer.
    mrs     x1, midr_el1
    msr     vpidr_el2, x1
    mrs     x1, mpidr_el1
    msr     vmpidr_el2, x1
    // Without VHE: EL1 may use the physical counter and timer (EL1PCTEN, EL1PCEN, bits 0-1).
    // With E2H those bits move to 10-11 and bits 0-1 become EL0's, which the kernel sets itself
    // through CNTKCTL_EL1 (now CNTHCTL_EL2); EL0 starts with no access.
    mov     x1, #3
    cbz     x5, 1f
    lsl     x1, x1, #10
1:  msr     cnthctl_el2, x1
    msr     cntvoff_el2, xzr

    // GICv3 system registers usable at EL1.
    mrs     x2, ID_AA64PFR0_EL1
    ubfx    x1, x2, #24, #4             // GIC
    cbz     x1, 5f
    mov     x1, #0x9                    // ICC_SRE_EL2.Enable | SRE
    msr     S3_4_C12_C9_5, x1
    isb
    msr     S3_4_C12_C11_0, xzr         // ICH_HCR_EL2
5:
    // CPTR_EL2: no FP, SVE or SME traps. Bit 12 (TSM) is RES1 on CPUs without SME. With E2H
    // the register has CPACR_EL1's layout: FPEN, ZEN and SMEN all 0b11.
    mrs     x3, ID_AA64PFR1_EL1
    ubfx    x3, x3, #24, #4             // SME
    mov     x1, #0x32ff
    cbz     x3, 6f
    mov     x1, #0x22ff
6:  cbz     x5, 61f
    mov     x1, #0x03330000
61: msr     cptr_el2, x1
    isb
    ubfx    x1, x2, #32, #4             // ID_AA64PFR0_EL1.SVE
    cbz     x1, 7f
    mov     x1, #0x1ff                  // ZCR_EL2.LEN: the maximum
    msr     S3_4_C1_C2_0, x1
7:  cbz     x3, 9f
    mov     x1, #0x1ff                  // SMCR_EL2.LEN: the maximum
    mrs     x2, S3_0_C0_C4_5            // ID_AA64SMFR0_EL1
    tbz     x2, #63, 8f
    orr     x1, x1, #(1 << 31)          // FA64
8:  ubfx    x2, x2, #56, #4             // SMEver
    cmp     x3, #2
    ccmp    x2, #0, #0, lo              // SME2 if PFR1.SME >= 2 or SMEver >= 1
    b.eq    81f
    orr     x1, x1, #(1 << 30)          // EZT0
81: msr     S3_4_C1_C2_6, x1
9:
    // Fine-grained traps (their bits are "n": 0 traps): TPIDR2_EL0 and SMPRI_EL1 with SME,
    // PIR_EL1 and PIRE0_EL1 with S1PIE, POR_EL1 and POR_EL0 with S1POE, the GCS registers (EL0
    // and EL1) with GCS, and the GCS instructions EL1 uses (GCSSTTR; GCSPUSHX/GCSPOPCX and
    // GCSPUSHM at EL1 untrapped too).
    mrs     x1, ID_AA64MMFR0_EL1
    ubfx    x1, x1, #56, #4             // FGT
    cbz     x1, 11f
    mov     x1, xzr
    mov     x4, xzr
    cbz     x3, 10f
    orr     x1, x1, #(3 << 54)
10: mrs     x2, S3_0_C0_C7_3            // ID_AA64MMFR3_EL1
    ubfx    x2, x2, #8, #4              // S1PIE
    cbz     x2, 14f
    orr     x1, x1, #(3 << 57)
14: mrs     x2, S3_0_C0_C7_3            // ID_AA64MMFR3_EL1
    ubfx    x2, x2, #16, #4             // S1POE: POR_EL1 and POR_EL0 (for guests that have it)
    cbz     x2, 18f
    orr     x1, x1, #(3 << 59)
18: mrs     x2, ID_AA64PFR1_EL1
    ubfx    x2, x2, #44, #4             // GCS
    cbz     x2, 15f
    orr     x1, x1, #(3 << 52)
    mov     x4, #(7 << 57)
15: msr     S3_4_C1_C1_4, x1            // HFGRTR_EL2
    msr     S3_4_C1_C1_5, x1            // HFGWTR_EL2
    msr     S3_4_C1_C1_6, x4            // HFGITR_EL2
    msr     S3_4_C3_C1_4, xzr           // HDFGRTR_EL2
    msr     S3_4_C3_C1_5, xzr           // HDFGWTR_EL2
11:
    // HCRX_EL2: EL1 and EL0 may use FPMR (EnFPM, bit 23) and TCR2_EL1 (TCR2En, bit 14), and
    // guarded control stacks (GCSEn, bit 22) and the CPY*/SET* instructions (MSCEn, bit 11)
    // where the CPU has them. The first two are RES0 without their features, which ignore them.
    mrs     x1, ID_AA64MMFR1_EL1
    ubfx    x1, x1, #40, #4             // HCX
    cbz     x1, 12f
    mov     x1, #(1 << 23)
    orr     x1, x1, #(1 << 14)
    mrs     x2, S3_0_C0_C6_2            // ID_AA64ISAR2_EL1
    ubfx    x2, x2, #16, #4             // MOPS
    cbz     x2, 16f
    orr     x1, x1, #(1 << 11)
16: mrs     x2, ID_AA64PFR1_EL1
    ubfx    x2, x2, #44, #4             // GCS
    cbz     x2, 13f
    orr     x1, x1, #(1 << 22)
13: msr     S3_4_C1_C2_2, x1            // HCRX_EL2
12:
    cbz     x5, 17f
    // Staying at EL2: the kernel installs its own vectors (VBAR_EL1 is now VBAR_EL2).
    msr     daifset, #0xf
    mov     x0, #2
    mov     x1, #1
    isb
    ret
17: adr     x1, el2_vectors
    msr     vbar_el2, x1
    mov     x1, #0x3c5                  // EL1h, DAIF masked
    msr     spsr_el2, x1
    msr     elr_el2, x30
    mov     x0, #2
    mov     x1, #0
    isb
    eret

// A secondary CPU that would run at another EL than the boot CPU (no FEAT_VHE where the boot CPU
// has it): it never comes online, which the boot CPU reports.
el_mismatch:
    wfe
    b       el_mismatch

// ---------------------------------------------------------------------------------------------
// dtb_wants_el1: x0 = DTB PA (or 0). Returns x0 = 1 if the DTB's structure block holds the word
// "svelt.el=1" (only /chosen/bootargs, the command line, can), standing alone: a NUL or a space
// on each side. MMU off, so byte loads only. Clobbers x0-x7.
// ---------------------------------------------------------------------------------------------
dtb_wants_el1:
    cbz     x0, 8f
    ldr     w1, [x0]
    rev     w1, w1
    movz    w2, #0xfeed
    movk    w2, #0xd00d, lsl #16
    cmp     w1, w2                      // FDT magic
    b.ne    8f
    ldr     w1, [x0, #8]                // off_dt_struct
    rev     w1, w1
    ldr     w2, [x0, #36]               // size_dt_struct
    rev     w2, w2
    add     x1, x0, x1                  // x1: the byte before a candidate
    add     x2, x1, x2
    sub     x2, x2, #12                 // room for the byte before, the word and the byte after
1:  cmp     x1, x2
    b.hi    8f
    ldrb    w3, [x1], #1
    cmp     w3, #' '
    ccmp    w3, #0, #4, ne
    b.ne    1b
    adr     x4, el1_word
    mov     x5, x1
2:  ldrb    w6, [x4], #1
    cbz     w6, 3f
    ldrb    w7, [x5], #1
    cmp     w6, w7
    b.eq    2b
    b       1b
3:  ldrb    w7, [x5]
    cmp     w7, #' '
    ccmp    w7, #0, #4, ne
    b.ne    1b
    mov     x0, #1
    ret
8:  mov     x0, #0
    ret

// ---------------------------------------------------------------------------------------------
// el2_patch: for a kernel at EL2, rewrites each instruction .svelt.el2_patch lists. An entry is
// the instruction's offset from the entry (32 bits) and its EL2 form with register field 31;
// the instruction keeps its own register (bits 0-4). MMU off: the stores go to memory, and any
// stale cached copy of the line is dropped. Clobbers x0-x4.
// ---------------------------------------------------------------------------------------------
el2_patch:
    adrp    x0, __el2_patch_start
    add     x0, x0, :lo12:__el2_patch_start
    adrp    x1, __el2_patch_end
    add     x1, x1, :lo12:__el2_patch_end
1:  cmp     x0, x1
    b.hs    2f
    ldrsw   x2, [x0]
    add     x2, x0, x2
    ldr     w3, [x0, #4]
    ldr     w4, [x2]
    bfi     w3, w4, #0, #5
    str     w3, [x2]
    dc      ivac, x2
    add     x0, x0, #8
    b       1b
2:  dsb     sy
    ic      iallu
    dsb     sy
    isb
    ret

// Entered at EL3 (or EL0): nothing here can run there. Say so through semihosting, which is all
// that can be reached without a DTB-described console, and stop.
el_unsupported:
    adr     x1, el_unsupported_msg
    mov     w0, #0x04                   // SYS_WRITE0
    hlt     #0xf000
5:  wfe
    b       5b

// ---------------------------------------------------------------------------------------------
// create_early_tables: uses x19 (DTB PA), x21 (image PA). Clobbers x0-x12.
// ---------------------------------------------------------------------------------------------
create_early_tables:
    adrp    x0, {early}                 // page 0..8: id L0, id L1, id L2, up L0, up L1, up L2,
                                        //            lin L1, lin L2, lin L2 past a 1 GiB line
    ldr     x9, ={block}                // block attributes: normal WB, inner shareable, AF
    ldr     x10, =__image_size
    mov     x11, #0x1fffff
    add     x10, x10, x11
    lsr     x10, x10, #21               // number of 2 MiB blocks in the image

    // Identity map of the image: L0[P>>39] -> L1, L1[P>>30] -> L2, L2[P>>21 ...] = blocks.
    add     x1, x0, #4096
    ubfx    x2, x21, #39, #9
    orr     x3, x1, #3
    str     x3, [x0, x2, lsl #3]
    add     x4, x0, #2 * 4096
    ubfx    x2, x21, #30, #9
    orr     x3, x4, #3
    str     x3, [x1, x2, lsl #3]
    ubfx    x2, x21, #21, #9
    mov     x5, x21
    mov     x6, x10
1:  orr     x3, x5, x9
    str     x3, [x4, x2, lsl #3]
    add     x2, x2, #1
    add     x5, x5, #0x200000
    subs    x6, x6, #1
    b.ne    1b

    // Upper half: L0[511] -> L1, L1[0] -> L2, L2[0 ...] = the image's blocks at KIMAGE_VADDR.
    add     x1, x0, #3 * 4096
    add     x4, x0, #4 * 4096
    orr     x3, x4, #3
    str     x3, [x1, #511 * 8]
    add     x5, x0, #5 * 4096
    orr     x3, x5, #3
    str     x3, [x4]
    mov     x2, xzr
    mov     x6, x21
    mov     x7, x10
2:  orr     x3, x6, x9
    str     x3, [x5, x2, lsl #3]
    add     x2, x2, #1
    add     x6, x6, #0x200000
    subs    x7, x7, #1
    b.ne    2b

    // Linear map of the DTB (at LINEAR_BASE + PA): L0[0] -> L1, L1[PA>>30] -> L2, and one or
    // two 2 MiB blocks as its header's totalsize requires (a DTB is at most 2 MiB).
    cbz     x19, 4f
    add     x4, x0, #6 * 4096
    orr     x3, x4, #3
    str     x3, [x1]                    // L0[0]: the linear map starts at the bottom of TTBR1
    add     x5, x0, #7 * 4096
    ubfx    x2, x19, #30, #9
    orr     x3, x5, #3
    str     x3, [x4, x2, lsl #3]
    ubfx    x2, x19, #21, #9
    and     x6, x19, #~0x1fffff
    orr     x3, x6, x9
    str     x3, [x5, x2, lsl #3]
    ldr     w7, [x19, #4]               // fdt header totalsize, big-endian
    rev     w7, w7
    add     x7, x19, x7
    sub     x7, x7, #1
    lsr     x7, x7, #21
    cmp     x7, x19, lsr #21
    b.eq    4f
    cmp     x2, #511
    b.ne    3f
    // The second block lies past a 1 GiB line: it is the first entry of the next L2 table
    // (page 8), which the next L1 entry points to (none past a 512 GiB line: not mapped).
    ubfx    x2, x19, #30, #9
    cmp     x2, #511
    b.eq    4f
    add     x2, x2, #1
    add     x5, x0, #8 * 4096
    orr     x3, x5, #3
    str     x3, [x4, x2, lsl #3]
    mov     x2, #-1
3:  add     x2, x2, #1
    add     x6, x6, #0x200000
    orr     x3, x6, x9
    str     x3, [x5, x2, lsl #3]
4:
    // The tables were written with the MMU (and caches) off; drop any stale cached copies.
    mov     x1, x0
    add     x2, x0, #9 * 4096
5:  dc      ivac, x1
    add     x1, x1, #64
    cmp     x1, x2
    b.lo    5b
    dsb     sy
    ret

// ---------------------------------------------------------------------------------------------
// mmu_on: x0 = TTBR0, x1 = TTBR1. Programs MAIR/TCR/SCTLR for 4 KiB pages, 48-bit VAs in both
// halves, and turns the MMU and caches on. Returns to x30 (which the identity map covers).
// ---------------------------------------------------------------------------------------------
mmu_on:
    ldr     x2, ={mair}
    msr     mair_el1, x2
    ldr     x2, ={tcr}
    mrs     x3, ID_AA64MMFR0_EL1
    and     x4, x3, #0xf                // PARange, capped at 48 bits (no LPA2)
    cmp     x4, #5
    mov     x5, #5
    csel    x4, x4, x5, lo
    bfi     x2, x4, #32, #3             // IPS
    ubfx    x4, x3, #4, #4              // ASIDBits: 2 means 16-bit ASIDs
    cmp     x4, #2
    b.ne    1f
    orr     x2, x2, #(1 << 36)          // AS
1:  msr     tcr_el1, x2
    msr     ttbr0_el1, x0
    msr     ttbr1_el1, x1
    isb
    tlbi    vmalle1
    dsb     nsh
    isb
    ldr     x2, ={sctlr}
    msr     sctlr_el1, x2
    isb
    ret

.ltorg

el_unsupported_msg:
    .asciz  "svelt: entered at an exception level other than EL1 or EL2; Svelt runs at EL2 (VHE) or EL1. Halting.\n"
el1_word:
    .asciz  "svelt.el=1"
    .balign 4
