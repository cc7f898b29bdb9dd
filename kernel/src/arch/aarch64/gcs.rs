//! Guarded control stacks (FEAT_GCS) for EL0, and the stage-1 permission indirection
//! (FEAT_S1PIE) their pages need: the registers a task's GCS lives in, the one unprivileged GCS
//! store the kernel makes (signal delivery and map_shadow_stack tokens), and the permission
//! tables, which give every page kind Svelt makes the rights the direct encoding gave it.

/// PTE bits that choose a page's permission index when indirection is on:
/// UXN (54) << 3 | PXN (53) << 2 | bit 51 << 1 | AP[1] (6). Svelt sets bit 51 (the DBM bit,
/// unused otherwise: TCR_EL1.HD is clear) on writable pages, so the index says everything.
const fn index(uxn: bool, pxn: bool, w: bool, user: bool) -> u32 {
    (uxn as u32) << 3 | (pxn as u32) << 2 | (w as u32) << 1 | user as u32
}

/// Permission encodings (without overlays: POE is not enabled).
const NONE: u64 = 0x0;
const R: u64 = 0x8;
const GCS: u64 = 0x9;
const RX: u64 = 0xa;
const RW: u64 = 0xc;
const RWX: u64 = 0xe;

/// (index, EL1 rights, EL0 rights) for every page kind Svelt makes. User pages always have
/// PXN; shadow-stack pages are the only user pages without it. Kernel pages have UXN and no
/// AP[1].
const KINDS: [(u32, u64, u64); 10] = [
    // Kernel text, read-only data, read-write data and devices.
    (index(true, false, false, false), RX, NONE),
    (index(true, true, false, false), R, NONE),
    (index(true, true, true, false), RW, NONE),
    // User pages: executable or not, read-only (or copy-on-write) or writable. The kernel
    // reaches them only through LDTR/STTR, which use the EL0 rights.
    (index(false, true, false, true), R, RX),
    (index(false, true, true, true), RW, RWX),
    (index(true, true, false, true), R, R),
    (index(true, true, true, true), RW, RW),
    // Shadow-stack pages: GCS reads and writes (and ordinary reads) from EL0; read-only while
    // copy-on-write, so that a GCS access faults and copies. EL1 may only read them.
    (index(true, false, true, true), R, GCS),
    (index(true, false, false, true), R, R),
    // PROT_NONE user pages share the kernel read-only index: nothing from EL0.
    (index(true, true, false, false), R, NONE),
];

const fn pir(el0: bool) -> u64 {
    let mut v = 0u64;
    let mut i = 0;
    while i < KINDS.len() {
        let (idx, el1, e0) = KINDS[i];
        v |= (if el0 { e0 } else { el1 }) << (4 * idx);
        i += 1;
    }
    v
}

/// PIR_EL1 and PIRE0_EL1.
pub const PIR_EL1: u64 = pir(false);
pub const PIRE0_EL1: u64 = pir(true);

/// Turns permission indirection on for this CPU (TCR2_EL1.PIE), with the tables above. Only
/// on a CPU with FEAT_S1PIE, after the kernel map (whose writable entries carry bit 51) is
/// live; TLB entries made before are dropped.
pub fn enable_pie() {
    // SAFETY: the tables give every page Svelt maps the rights it had under the direct
    // encoding (see KINDS), so nothing the kernel relies on changes; TCR2_EL1 holds nothing
    // else Svelt uses.
    unsafe {
        core::arch::asm!(
            "msr S3_0_C10_C2_3, {pir}",   // PIR_EL1
            "msr S3_0_C10_C2_2, {pire0}", // PIRE0_EL1
            "isb",
            "mrs {t}, S3_0_C2_C0_3",      // TCR2_EL1
            "orr {t}, {t}, #2",           // PIE
            "msr S3_0_C2_C0_3, {t}",
            "isb",
            "tlbi vmalle1",
            "dsb nsh",
            "isb",
            pir = in(reg) PIR_EL1,
            pire0 = in(reg) PIRE0_EL1,
            t = out(reg) _,
            options(nostack),
        )
    };
}

/// GCSCR_EL1 := 0 (no kernel GCS) and GCSCRE0_EL1 := the disabled EL0 mode.
pub fn cpu_init() {
    // SAFETY: GCS control registers only; the kernel itself runs without a GCS.
    unsafe {
        core::arch::asm!(
            "msr S3_0_C2_C5_0, xzr", // GCSCR_EL1
            "msr S3_0_C2_C5_2, {v}", // GCSCRE0_EL1
            "isb",
            v = in(reg) el0_control(0),
            options(nomem, nostack),
        )
    };
}

/// PR_SHADOW_STACK_* mode bits → GCSCRE0_EL1: GCSPR_EL0 always readable (nTR), checks on
/// with ENABLE, GCSSTR with WRITE, GCSPUSHM with PUSH.
pub const fn el0_control(mode: u32) -> u64 {
    let mut v = 1 << 10; // nTR
    if mode & 1 != 0 {
        v |= 1 | 1 << 5; // PCRSEL, RVCHKEN
    }
    if mode & 2 != 0 {
        v |= 1 << 9; // STREn
    }
    if mode & 4 != 0 {
        v |= 1 << 8; // PUSHMEn
    }
    v
}

pub fn set_el0_mode(mode: u32) {
    // SAFETY: the EL0 GCS controls of the running task.
    unsafe {
        core::arch::asm!("msr S3_0_C2_C5_2, {}", "isb", in(reg) el0_control(mode), options(nomem, nostack))
    };
}

pub fn read_gcspr_el0() -> u64 {
    let v: u64;
    // SAFETY: reads the EL0 GCS pointer.
    unsafe { core::arch::asm!("mrs {}, S3_3_C2_C5_1", out(reg) v, options(nomem, nostack)) };
    v
}

pub fn write_gcspr_el0(v: u64) {
    // SAFETY: the EL0 GCS pointer of the running task; the kernel does not use it.
    unsafe { core::arch::asm!("msr S3_3_C2_C5_1, {}", in(reg) v, options(nomem, nostack)) };
}

/// GCSB DSYNC: GCS accesses before it are ordered before ordinary ones after it.
pub fn barrier() {
    // SAFETY: a barrier.
    unsafe { core::arch::asm!("hint #0x13", options(nostack)) };
}
