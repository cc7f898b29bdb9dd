//! Guest debugging from the VMM (KVM_SET_GUEST_DEBUG, KVM_EXIT_DEBUG), as QEMU's gdbstub uses
//! it with `-accel kvm`: the capabilities, the ioctl's errors, single step (across a trapped
//! register and MMIO accesses, with the guest's own MDSCR_EL1 and PSTATE.SS left as they
//! were), a BRK with KVM_GUESTDBG_USE_SW_BP, a hardware breakpoint and watchpoint with
//! KVM_GUESTDBG_USE_HW, and the guest running on once debugging is off.

use super::*;
use svelt_abi::uapi::kvm_debug as kd;

core::arch::global_asm!(
    ".pushsection .rodata.guests, \"a\"",
    ".balign 4",
    // Single step: arithmetic, a trapped MDSCR_EL1 read (x5), an MMIO store (x0 at +0), an
    // MMIO load (x2 from +8), more arithmetic, x0 stored at +0x10.
    ".global guest_gdebug_step, guest_gdebug_step_end",
    "guest_gdebug_step:",
    "movz x1, #0x1000, lsl #16",
    "mov x0, #1",
    "add x0, x0, #2",
    "mrs x5, mdscr_el1",
    "str x0, [x1]",
    "add x0, x0, #4",
    "ldr x2, [x1, #8]",
    "add x0, x0, #8",
    "add x0, x0, #16",
    "add x0, x0, #32",
    "str x0, [x1, #16]",
    "b .",
    "guest_gdebug_step_end:",
    // Breakpoints: BRK #0x1234 at +0xc, the instruction at +0x14 for a hardware breakpoint,
    // a store to RAM's data page (IPA 0x18000) at +0x18 for a watchpoint, x0 by MMIO at +0x20.
    ".global guest_gdebug_bp, guest_gdebug_bp_end",
    "guest_gdebug_bp:",
    "movz x1, #0x1000, lsl #16",
    "mov x3, #0x18000",
    "mov x0, #1",
    "brk #0x1234",
    "nop",
    "add x0, x0, #2",
    "str x0, [x3]",
    "add x0, x0, #4",
    "str x0, [x1]",
    "b .",
    "guest_gdebug_bp_end:",
    // The guest's own debugging: VBAR_EL1 at +0x800; breakpoint 0 (EL1, PMC 0b01) on
    // `guest_gdebug_own_bp`, watchpoint 0 on stores to the data page (IPA 0x18000), MDSCR_EL1
    // MDE and KDE, PSTATE.D clear; then a BRK. Its handler (current EL, SP_ELx, synchronous:
    // +0xa00) reports ESR_EL1, ELR_EL1 and FAR_EL1 by MMIO stores at +0, +8, +0x10, turns off
    // what fired (or steps over the BRK) and returns; at the end the stored value is read back
    // and reported at +0x18.
    ".global guest_gdebug_own, guest_gdebug_own_bp, guest_gdebug_own_wp",
    ".global guest_gdebug_own_brk, guest_gdebug_own_end",
    "guest_gdebug_own:",
    "movz x1, #0x1000, lsl #16",
    "adr x9, guest_gdebug_own",
    "add x9, x9, #0x800",
    "msr vbar_el1, x9",
    "mov x3, #0x18000",
    "adr x4, guest_gdebug_own_bp",
    "msr dbgbvr0_el1, x4",
    "mov x4, #0x1e3", // E, PMC 0b01 (EL1), BAS 0b1111
    "msr dbgbcr0_el1, x4",
    "msr dbgwvr0_el1, x3",
    "mov x4, #0x1ff3", // E, PAC 0b01, LSC stores, BAS all eight bytes
    "msr dbgwcr0_el1, x4",
    "mrs x4, mdscr_el1",
    "orr x4, x4, #0x8000", // MDE
    "orr x4, x4, #0x2000", // KDE
    "msr mdscr_el1, x4",
    "isb",
    "msr daifclr, #8",
    "mov x0, #1",
    "guest_gdebug_own_bp:",
    "nop",
    "guest_gdebug_own_wp:",
    "str x0, [x3]",
    "guest_gdebug_own_brk:",
    "brk #0x42",
    "ldr x8, [x3]",
    "str x8, [x1, #24]",
    "b .",
    ".skip 0xa00 - (. - guest_gdebug_own)",
    "mrs x5, esr_el1",
    "mrs x6, elr_el1",
    "mrs x7, far_el1",
    "str x5, [x1]",
    "str x6, [x1, #8]",
    "str x7, [x1, #16]",
    "lsr x8, x5, #26",
    "cmp x8, #0x31",
    "b.ne 2f",
    "msr dbgbcr0_el1, xzr",
    "b 4f",
    "2: cmp x8, #0x35",
    "b.ne 3f",
    "msr dbgwcr0_el1, xzr",
    "b 4f",
    "3: add x6, x6, #4",
    "msr elr_el1, x6",
    "4: isb",
    "eret",
    "guest_gdebug_own_end:",
    ".popsection",
);

unsafe extern "C" {
    static guest_gdebug_step: u8;
    static guest_gdebug_step_end: u8;
    static guest_gdebug_bp: u8;
    static guest_gdebug_bp_end: u8;
    static guest_gdebug_own: u8;
    static guest_gdebug_own_bp: u8;
    static guest_gdebug_own_wp: u8;
    static guest_gdebug_own_brk: u8;
    static guest_gdebug_own_end: u8;
}

const MDSCR_EL1: u64 = k::sysreg_id(2, 0, 0, 2, 2);
const ID_AA64DFR0_EL1: u64 = k::sysreg_id(3, 0, 0, 5, 0);
const PSTATE_SS: u128 = 1 << 21;

fn set_debug(vcpu: i32, control: u32, arch: kd::KvmGuestDebugArch) -> SysResult<()> {
    let d = kd::KvmGuestDebug {
        control,
        pad: 0,
        arch,
    };
    ioctl(vcpu, kd::KVM_SET_GUEST_DEBUG, &d as *const _ as usize).map(|_| ())
}

/// Runs to the next exit, which must be KVM_EXIT_DEBUG with exception class `ec`: (PC, ESR).
fn run_to_debug(g: &Guest, ec: u8) -> Result<(u64, u64), String> {
    t!(g.run());
    check_eq!(g.exit_reason(), kd::KVM_EXIT_DEBUG, "exit reason");
    let hsr = g.run_u32(kd::run::DEBUG_HSR) as u64;
    let high = g.run_u32(kd::run::DEBUG_HSR_HIGH) as u64;
    let flags = g.run_u32(k::run::FLAGS & !3) >> ((k::run::FLAGS & 3) * 8) & 0xffff;
    check_eq!(
        flags as u16 & kd::KVM_DEBUG_ARCH_HSR_HIGH_VALID,
        kd::KVM_DEBUG_ARCH_HSR_HIGH_VALID,
        "flags"
    );
    let esr = hsr | high << 32;
    check_eq!((esr >> 26) & 0x3f, ec as u64, "EC of ESR {esr:#x}");
    Ok((t!(get_reg(g.vcpu, CoreReg::Pc.id())) as u64, esr))
}

/// The capabilities, and KVM_SET_GUEST_DEBUG's errors (kvm_arch_vcpu_ioctl_set_guest_debug).
pub fn guest_debug_caps_and_errors() -> TestResult {
    let kvm = kvm!();
    let cap = |c: u64| ioctl(kvm, k::KVM_CHECK_EXTENSION, c as usize);
    check_eq!(cap(kd::KVM_CAP_SET_GUEST_DEBUG), Ok(1));
    check_eq!(cap(kd::KVM_CAP_SET_GUEST_DEBUG2), Ok(0x3_0003));
    let g = t!(Guest::new(
        kvm,
        code!(guest_gdebug_step, guest_gdebug_step_end)
    ));
    // The CPU's counts, which the vCPU's ID_AA64DFR0_EL1 shows as well.
    let dfr0 = t!(get_reg(g.vcpu, ID_AA64DFR0_EL1)) as u64;
    let bps = ((dfr0 >> 12) & 0xf) as usize + 1;
    let wps = ((dfr0 >> 20) & 0xf) as usize + 1;
    check_eq!(cap(kd::KVM_CAP_GUEST_DEBUG_HW_BPS), Ok(bps));
    check_eq!(cap(kd::KVM_CAP_GUEST_DEBUG_HW_WPS), Ok(wps));
    check!(bps >= 2 && wps >= 2, "{bps} breakpoints, {wps} watchpoints");
    let none = kd::KvmGuestDebugArch::default();
    check_eq!(set_debug(g.vcpu, 1 << 2, none), Err(EINVAL), "unknown flag");
    check_eq!(
        set_debug(g.vcpu, kd::KVM_GUESTDBG_ENABLE | 1 << 18, none),
        Err(EINVAL),
        "unknown flag with ENABLE"
    );
    check_eq!(
        ioctl(g.vcpu, kd::KVM_SET_GUEST_DEBUG, 8),
        Err(EFAULT),
        "unreadable argument"
    );
    check_eq!(set_debug(g.vcpu, kd::KVM_GUESTDBG_SINGLESTEP, none), Ok(()));
    check_eq!(set_debug(g.vcpu, kd::KVM_GUESTDBG_VALID_MASK, none), Ok(()));
    check_eq!(set_debug(g.vcpu, 0, none), Ok(()));
    Ok(())
}

/// Single step: each instruction ends KVM_RUN with EC 0x32 at the next PC; a trapped register
/// read and an MMIO access completed by the kernel count as the instruction they are; the
/// guest's MDSCR_EL1 (as the VMM set it, and as the guest reads it) and PSTATE.SS stay its own;
/// with debugging off the guest runs on.
pub fn guest_debug_single_step() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(
        kvm,
        code!(guest_gdebug_step, guest_gdebug_step_end)
    ));
    const OWN_MDSCR: u128 = 1 << 12; // TDCC: nothing this guest uses
    t!(set_reg(g.vcpu, MDSCR_EL1, OWN_MDSCR));
    let step = kd::KVM_GUESTDBG_ENABLE | kd::KVM_GUESTDBG_SINGLESTEP;
    t!(set_debug(g.vcpu, step, Default::default()));
    let base = RAM_IPA;
    let x0 = |g: &Guest| -> Result<u64, String> { Ok(t!(get_reg(g.vcpu, x(0))) as u64) };
    for (pc, want_x0) in [(4, None), (8, Some(1)), (0xc, Some(3))] {
        let (at, esr) = t!(run_to_debug(&g, kd::EC_SOFTSTP_LOW));
        check_eq!(at, base + pc, "step");
        check_eq!(esr >> 32, 0, "ESR's high word");
        if let Some(v) = want_x0 {
            check_eq!(t!(x0(&g)), v, "x0 at {pc:#x}");
        }
        check_eq!(
            t!(get_reg(g.vcpu, CoreReg::Pstate.id())) & PSTATE_SS,
            0,
            "the guest's PSTATE.SS"
        );
        check_eq!(get_reg(g.vcpu, MDSCR_EL1), Ok(OWN_MDSCR), "MDSCR_EL1");
    }
    // The trapped MDSCR_EL1 read: the guest sees its own value, and the step ends after it.
    let (at, _) = t!(run_to_debug(&g, kd::EC_SOFTSTP_LOW));
    check_eq!(at, base + 0x10, "step past the MDSCR_EL1 read");
    check_eq!(
        get_reg(g.vcpu, x(5)),
        Ok(OWN_MDSCR),
        "the guest's MDSCR_EL1"
    );
    // The MMIO store exits as MMIO; the next KVM_RUN completes it and stops at once.
    let (addr, data, _, write) = t!(g.run_to_mmio());
    check_eq!((addr, data, write), (0x1000_0000, 3, true), "MMIO store");
    let (at, _) = t!(run_to_debug(&g, kd::EC_SOFTSTP_LOW));
    check_eq!(at, base + 0x14, "step past the MMIO store");
    check_eq!(t!(x0(&g)), 3, "nothing after the store ran");
    let (at, _) = t!(run_to_debug(&g, kd::EC_SOFTSTP_LOW));
    check_eq!(at, base + 0x18);
    check_eq!(t!(x0(&g)), 7);
    let (addr, _, _, write) = t!(g.run_to_mmio());
    check_eq!((addr, write), (0x1000_0008, false), "MMIO load");
    g.set_run_u64(k::run::MMIO_DATA, 0x55);
    let (at, _) = t!(run_to_debug(&g, kd::EC_SOFTSTP_LOW));
    check_eq!(at, base + 0x1c, "step past the MMIO load");
    check_eq!(get_reg(g.vcpu, x(2)), Ok(0x55), "the load's data");
    // Debugging off: the guest runs on to its last store.
    t!(set_debug(g.vcpu, 0, Default::default()));
    let (addr, data, _, _) = t!(g.run_to_mmio());
    check_eq!((addr, data), (0x1000_0010, 63), "ran on");
    check_eq!(
        get_reg(g.vcpu, MDSCR_EL1),
        Ok(OWN_MDSCR),
        "MDSCR_EL1 at the end"
    );
    Ok(())
}

/// A BRK with KVM_GUESTDBG_USE_SW_BP (EC 0x3c, its immediate, the PC at the BRK); a hardware
/// breakpoint (EC 0x30 at its address) and watchpoint (EC 0x34, FAR the address written,
/// before the store) with KVM_GUESTDBG_USE_HW; then the guest runs on without debugging.
pub fn guest_debug_breakpoints() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_gdebug_bp, guest_gdebug_bp_end)));
    let base = RAM_IPA;
    let en = kd::KVM_GUESTDBG_ENABLE;
    t!(set_debug(
        g.vcpu,
        en | kd::KVM_GUESTDBG_USE_SW_BP,
        Default::default()
    ));
    let (at, esr) = t!(run_to_debug(&g, kd::EC_BRK64));
    check_eq!(at, base + 0xc, "at the BRK");
    check_eq!(esr & 0xffff, 0x1234, "BRK's immediate");
    t!(set_reg(g.vcpu, CoreReg::Pc.id(), (at + 4) as u128));
    // Breakpoint 0 on +0x14 (enabled, EL1 and EL0, all four bytes); watchpoint 0 on stores
    // to the eight bytes at DATA_OFF.
    let mut arch = kd::KvmGuestDebugArch::default();
    arch.dbg_bvr[0] = base + 0x14;
    arch.dbg_bcr[0] = 1 | 3 << 1 | 0xf << 5;
    let data = base + DATA_OFF as u64;
    arch.dbg_wvr[0] = data;
    arch.dbg_wcr[0] = 1 | 3 << 1 | 2 << 3 | 0xff << 5;
    t!(set_debug(g.vcpu, en | kd::KVM_GUESTDBG_USE_HW, arch));
    let (at, _) = t!(run_to_debug(&g, kd::EC_BREAKPT_LOW));
    check_eq!(at, base + 0x14, "hardware breakpoint");
    check_eq!(get_reg(g.vcpu, x(0)), Ok(1));
    arch.dbg_bcr[0] = 0;
    t!(set_debug(g.vcpu, en | kd::KVM_GUESTDBG_USE_HW, arch));
    let (at, esr) = t!(run_to_debug(&g, kd::EC_WATCHPT_LOW));
    check_eq!(at, base + 0x18, "watchpoint, at the store");
    check_eq!(g.run_u64(kd::run::DEBUG_FAR), data, "FAR");
    check!(esr & 1 << 6 != 0, "WnR in ESR {esr:#x}");
    check_eq!(g.data(0), 0, "the store has not happened");
    t!(set_debug(g.vcpu, 0, Default::default()));
    let (addr, v, _, _) = t!(g.run_to_mmio());
    check_eq!((addr, v), (0x1000_0000, 7), "ran on");
    check_eq!(g.data(0), 3, "the store");
    Ok(())
}

/// The guest's own hardware breakpoint, watchpoint and BRK, with no VMM debugging: each ends
/// in its own EL1 handler (ESR EC 0x31; 0x35 with WnR and FAR the address written, before
/// the store; 0x3c with the immediate), which the VMM hears of only through its MMIO reports.
pub fn guest_debug_own_breakpoints() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(
        kvm,
        code!(guest_gdebug_own, guest_gdebug_own_end)
    ));
    let off = |sym: *const u8| sym as u64 - (&raw const guest_gdebug_own) as u64;
    let base = RAM_IPA;
    let report = |g: &Guest| -> Result<[u64; 3], String> {
        let mut r = [0; 3];
        for (i, v) in r.iter_mut().enumerate() {
            let (addr, data, _, write) = t!(g.run_to_mmio());
            check_eq!(
                (addr, write),
                (0x1000_0000 + 8 * i as u64, true),
                "report {i}"
            );
            *v = data;
        }
        Ok(r)
    };
    let [esr, elr, _] = t!(report(&g));
    check_eq!(esr >> 26, 0x31, "breakpoint's EC (ESR {esr:#x})");
    check_eq!(
        elr,
        base + off(&raw const guest_gdebug_own_bp),
        "breakpoint's ELR"
    );
    let [esr, elr, far] = t!(report(&g));
    check_eq!(esr >> 26, 0x35, "watchpoint's EC (ESR {esr:#x})");
    check!(esr & 1 << 6 != 0, "WnR in ESR {esr:#x}");
    check_eq!(
        elr,
        base + off(&raw const guest_gdebug_own_wp),
        "watchpoint's ELR"
    );
    check_eq!(far, base + DATA_OFF as u64, "watchpoint's FAR");
    check_eq!(g.data(0), 0, "the store has not happened");
    let [esr, elr, _] = t!(report(&g));
    check_eq!(esr >> 26, 0x3c, "BRK's EC (ESR {esr:#x})");
    check_eq!(esr & 0xffff, 0x42, "BRK's immediate");
    check_eq!(
        elr,
        base + off(&raw const guest_gdebug_own_brk),
        "BRK's ELR"
    );
    let (addr, data, _, _) = t!(g.run_to_mmio());
    check_eq!(
        (addr, data),
        (0x1000_0018, 1),
        "the store, after the watchpoint"
    );
    Ok(())
}
