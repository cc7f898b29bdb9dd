//! AArch32 EL1 guests (KVM_ARM_VCPU_EL1_32BIT): the pure rules KVM applies to a vCPU whose EL1
//! runs in AArch32 — its reset CPSR, the modes KVM_SET_ONE_REG accepts for its PSTATE, whether
//! a trapped conditional instruction passed its condition, how the PC moves past an
//! instruction (with Thumb's IT state), and how CP15 accesses name the AArch64 registers
//! (Linux's arch/arm64/kvm/reset.c, guest.c, hyp/aarch32.c and sys_regs.c).

/// KVM_CAP_ARM_EL1_32BIT: 1 where every CPU implements AArch32 at EL1.
pub const KVM_CAP_ARM_EL1_32BIT: u64 = 93;

/// CPSR bits (as SPSR_EL2 holds an AArch32 state).
pub const PSR_AA32_MODE_MASK: u64 = 0x1f;
pub const PSR_AA32_MODE_USR: u64 = 0x10;
pub const PSR_AA32_MODE_FIQ: u64 = 0x11;
pub const PSR_AA32_MODE_IRQ: u64 = 0x12;
pub const PSR_AA32_MODE_SVC: u64 = 0x13;
pub const PSR_AA32_MODE_ABT: u64 = 0x17;
pub const PSR_AA32_MODE_UND: u64 = 0x1b;
pub const PSR_AA32_MODE_SYS: u64 = 0x1f;
pub const PSR_AA32_T_BIT: u64 = 1 << 5;
pub const PSR_AA32_F_BIT: u64 = 1 << 6;
pub const PSR_AA32_I_BIT: u64 = 1 << 7;
pub const PSR_AA32_A_BIT: u64 = 1 << 8;
pub const PSR_AA32_E_BIT: u64 = 1 << 9;
/// IT[7:2] in bits 15:10, IT[1:0] in bits 26:25.
pub const PSR_AA32_IT_MASK: u64 = 0x0600_fc00;

/// A 32-bit vCPU out of reset: Supervisor mode, A32, asynchronous aborts, IRQs and FIQs
/// masked (reset.c's VCPU_RESET_PSTATE_SVC).
pub const PSTATE_RESET_SVC: u64 =
    PSR_AA32_MODE_SVC | PSR_AA32_A_BIT | PSR_AA32_I_BIT | PSR_AA32_F_BIT;

/// Whether KVM_SET_ONE_REG may put this PSTATE in a vCPU (`set_core_reg`): a 32-bit vCPU takes
/// the AArch32 modes, a 64-bit one EL0t, EL1t and EL1h.
pub fn pstate_mode_ok(el1_32bit: bool, pstate: u64) -> bool {
    match pstate & PSR_AA32_MODE_MASK {
        PSR_AA32_MODE_USR | PSR_AA32_MODE_FIQ | PSR_AA32_MODE_IRQ | PSR_AA32_MODE_SVC
        | PSR_AA32_MODE_ABT | PSR_AA32_MODE_UND | PSR_AA32_MODE_SYS => el1_32bit,
        0b00000 | 0b00100 | 0b00101 => !el1_32bit,
        _ => false,
    }
}

/// How many of x0.. hold AArch32 registers to narrow to 32 bits after a core register write
/// in this AArch32 mode (`set_core_reg`): r0-r14 for User and System, every banked copy
/// (all 31) otherwise.
pub fn narrowed_regs(pstate: u64) -> usize {
    match pstate & PSR_AA32_MODE_MASK {
        PSR_AA32_MODE_USR | PSR_AA32_MODE_SYS => 15,
        _ => 31,
    }
}

/// The IT state, IT[7:0], of a CPSR.
fn itstate(cpsr: u64) -> u64 {
    ((cpsr >> 8) & 0xfc) | ((cpsr >> 25) & 3)
}

fn with_itstate(cpsr: u64, it: u64) -> u64 {
    (cpsr & !PSR_AA32_IT_MASK) | ((it & 0xfc) << 8) | ((it & 3) << 25)
}

/// Whether a condition code passes with these NZCV flags (the Arm ARM's ConditionHolds;
/// 0b1111 always passes).
pub fn condition_holds(cond: u64, cpsr: u64) -> bool {
    let (n, z, c, v) = (
        cpsr & (1 << 31) != 0,
        cpsr & (1 << 30) != 0,
        cpsr & (1 << 29) != 0,
        cpsr & (1 << 28) != 0,
    );
    let base = match cond >> 1 {
        0 => z,
        1 => c,
        2 => n,
        3 => v,
        4 => c && !z,
        5 => n == v,
        6 => !z && n == v,
        _ => return true,
    };
    if cond & 1 != 0 {
        !base
    } else {
        base
    }
}

/// Whether a trapped AArch32 instruction with this ESR_EL2 passed its condition
/// (`kvm_condition_valid32`): exception classes 0x10 and above are unconditional; else the
/// syndrome's COND when CV is set, else the Thumb IT state's, else it passed.
pub fn condition_passed(esr: u64, cpsr: u64) -> bool {
    if (esr >> 30) & 3 != 0 {
        return true;
    }
    let cond = if esr & (1 << 24) != 0 {
        (esr >> 20) & 0xf
    } else {
        let it = itstate(cpsr);
        if it == 0 {
            return true;
        }
        it >> 4
    };
    condition_holds(cond, cpsr)
}

/// The PC and CPSR after skipping the instruction at `pc` (`kvm_skip_instr32`): 4 bytes if
/// ESR_EL2.IL says a 32-bit instruction, else 2; inside a Thumb IT block the IT state moves
/// on (ITAdvance).
pub fn skip_instr(pc: u64, cpsr: u64, il32: bool) -> (u64, u64) {
    let pc = pc.wrapping_add(if il32 { 4 } else { 2 }) & 0xffff_ffff;
    let it = itstate(cpsr);
    if cpsr & PSR_AA32_T_BIT == 0 || it == 0 {
        return (pc, cpsr);
    }
    let it = if it & 7 == 0 {
        0
    } else {
        (it & 0xe0) | ((it << 1) & 0x1f)
    };
    (pc, with_itstate(cpsr, it))
}

/// The CPSR an exception to AArch32 `mode` leaves (hyp/exception.c's get_except32_cpsr):
/// flags, GE, DIT and PAN kept (PAN set when SCTLR.SPAN is 0), SSBS from SCTLR.DSSBS, E from
/// SCTLR.EE, T from SCTLR.TE, IT cleared, I set, A set but for Undefined and Supervisor, F set
/// for FIQ.
pub fn exception_cpsr(old: u64, sctlr: u64, mode: u64) -> u64 {
    const KEPT: u64 = 0xf800_0000 | 0xf << 16 | 1 << 24; // NZCVQ, GE, DIT
    let mut new = old & KEPT;
    new |= old & (1 << 22); // PAN
    if sctlr & (1 << 23) == 0 {
        new |= 1 << 22;
    }
    if sctlr & (1 << 31) != 0 {
        new |= 1 << 23; // SSBS
    }
    if sctlr & (1 << 25) != 0 {
        new |= PSR_AA32_E_BIT;
    }
    new |= old & (PSR_AA32_A_BIT | PSR_AA32_F_BIT);
    if mode != PSR_AA32_MODE_UND && mode != PSR_AA32_MODE_SVC {
        new |= PSR_AA32_A_BIT;
    }
    if mode == PSR_AA32_MODE_FIQ {
        new |= PSR_AA32_F_BIT;
    }
    if sctlr & (1 << 30) != 0 {
        new |= PSR_AA32_T_BIT;
    }
    new | PSR_AA32_I_BIT | mode
}

/// An SPSR_EL2 image of AArch32 state as the AArch32 SPSR holds it (host_spsr_to_spsr32):
/// DIT moves from bit 24 to bit 21 (where SPSR_EL2 keeps SS).
pub fn spsr_to_spsr32(spsr: u64) -> u64 {
    let dit = (spsr >> 24) & 1;
    (spsr & 0xffff_ffff & !(1 << 24) & !(1 << 21)) | (dit << 21)
}

/// The fields of an MCR/MRC (EC 0x03, 0x05) or VMRS (EC 0x08) trap's ISS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cp32 {
    pub opc1: u64,
    pub crn: u64,
    pub crm: u64,
    pub opc2: u64,
    /// The AArch64 view of the transfer register.
    pub rt: usize,
    pub read: bool,
}

impl Cp32 {
    pub fn from_iss(iss: u64) -> Cp32 {
        Cp32 {
            opc2: (iss >> 17) & 7,
            opc1: (iss >> 14) & 7,
            crn: (iss >> 10) & 0xf,
            rt: ((iss >> 5) & 0x1f) as usize,
            crm: (iss >> 1) & 0xf,
            read: iss & 1 != 0,
        }
    }
}

/// The fields of an MCRR/MRRC trap's ISS (EC 0x04, 0x0c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cp64 {
    pub opc1: u64,
    pub crm: u64,
    pub rt: usize,
    pub rt2: usize,
    pub read: bool,
}

impl Cp64 {
    pub fn from_iss(iss: u64) -> Cp64 {
        Cp64 {
            opc1: (iss >> 16) & 0xf,
            rt2: ((iss >> 10) & 0x1f) as usize,
            rt: ((iss >> 5) & 0x1f) as usize,
            crm: (iss >> 1) & 0xf,
            read: iss & 1 != 0,
        }
    }
}

/// What a trapped CP15 MRC/MCR reaches (sys_regs.c's cp15 handling, which maps the AArch32
/// registers onto the AArch64 ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cp15 {
    /// An ID register of the AArch32 space (CRn 0, opc1 0, CRm 1..=7): the AArch64 register
    /// at op0 3, op1 0, CRn 0, the same CRm and op2 (ID_PFR0_EL1 ..), read-only.
    Id { crm: u64, op2: u64 },
    /// CTR, CCSIDR, CLIDR, AIDR, REVIDR and CSSELR: the AArch64 register of this encoding
    /// (op0 3, op1, CRn 0, CRm 0, op2).
    Ident { op1: u64, op2: u64 },
    /// ACTLR (TACR): the guest's own copy of ACTLR_EL1.
    Actlr,
    /// Data cache maintenance by set/way (TSW): nothing to do.
    SetWay,
    /// Anything else: UNDEFINED.
    Undef,
}

pub fn cp15(c: &Cp32) -> Cp15 {
    match (c.opc1, c.crn, c.crm, c.opc2) {
        (0, 0, 1..=7, op2) => Cp15::Id { crm: c.crm, op2 },
        (0, 0, 0, 1 | 6) | (1, 0, 0, 0 | 1 | 7) | (2, 0, 0, 0) => Cp15::Ident {
            op1: c.opc1,
            op2: c.opc2,
        },
        (0, 1, 0, 1) => Cp15::Actlr,
        (0, 7, 6 | 10 | 14, 2) => Cp15::SetWay,
        _ => Cp15::Undef,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pstate_modes_follow_the_width() {
        assert!(pstate_mode_ok(true, PSTATE_RESET_SVC));
        assert!(!pstate_mode_ok(false, PSTATE_RESET_SVC));
        assert!(pstate_mode_ok(false, 0x3c5));
        assert!(!pstate_mode_ok(true, 0x3c5));
        assert!(!pstate_mode_ok(true, 0x1a)); // Hyp
        assert_eq!(PSTATE_RESET_SVC, 0x1d3);
    }

    #[test]
    fn conditions() {
        let z = 1 << 30;
        // EQ with Z set passes, NE fails; class 0x12 (HVC32) is unconditional.
        assert!(condition_passed(1 << 24, z));
        assert!(!condition_passed((1 << 24) | (1 << 20), z));
        assert!(condition_passed((0x12 << 26) | (1 << 24) | (1 << 20), z));
        // No CV outside an IT block: passed.
        assert!(condition_passed(0, 0));
        assert!(condition_holds(0xe, 0));
    }

    #[test]
    fn it_state_advances() {
        // The last instruction of an IT EQ block (IT[3:0] = 0b1000).
        let cpsr = PSR_AA32_T_BIT | with_itstate(0, 0x08);
        let (pc, c) = skip_instr(0x100, cpsr, false);
        assert_eq!(pc, 0x102);
        assert_eq!(itstate(c), 0);
        let cpsr = PSR_AA32_T_BIT | with_itstate(0, 0x0c); // two left
        let (_, c) = skip_instr(0x100, cpsr, true);
        assert_eq!(itstate(c), 0x18);
        assert_eq!(skip_instr(0x100, 0, true), (0x104, 0));
    }

    #[test]
    fn exception_cpsr_masks() {
        let c = exception_cpsr(
            PSTATE_RESET_SVC & !PSR_AA32_A_BIT,
            0x0080_0000,
            PSR_AA32_MODE_UND,
        );
        assert_eq!(
            c & 0x1ff,
            PSR_AA32_MODE_UND | PSR_AA32_I_BIT | PSR_AA32_F_BIT
        );
        let c = exception_cpsr(0, 0x0080_0000, PSR_AA32_MODE_ABT);
        assert_eq!(
            c & 0x1ff,
            PSR_AA32_MODE_ABT | PSR_AA32_I_BIT | PSR_AA32_A_BIT
        );
    }

    #[test]
    fn cp15_map() {
        let c = |opc1, crn, crm, opc2| Cp32 {
            opc1,
            crn,
            crm,
            opc2,
            rt: 0,
            read: true,
        };
        assert_eq!(cp15(&c(0, 0, 1, 0)), Cp15::Id { crm: 1, op2: 0 });
        assert_eq!(cp15(&c(1, 0, 0, 1)), Cp15::Ident { op1: 1, op2: 1 });
        assert_eq!(cp15(&c(0, 7, 14, 2)), Cp15::SetWay);
        assert_eq!(cp15(&c(0, 2, 0, 0)), Cp15::Undef);
    }
}
