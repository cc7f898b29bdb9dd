//! The vGICv3's CPU interface registers as a VMM saves and restores them
//! (`KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS`, Documentation/virt/kvm/devices/arm-vgic-v3.rst): each
//! ICC_*_EL1 register of a vCPU is a view of its ICH_VMCR_EL2, its active-priority registers
//! or a constant, with Linux's rules (arch/arm64/kvm/vgic-sys-reg-v3.c). QEMU reads and writes
//! them when it resets and synchronises its GICv3 model (hw/intc/arm_gicv3_kvm.c).
//!
//! The attribute's bits 63:32 name the vCPU by affinity (as GRP_REDIST_REGS), bits 15:0 the
//! register's encoding (Op0, Op1, CRn, CRm, Op2, as KVM_REG_ARM64_SYSREG without its prefix).

use super::errno::Errno;

/// The register encoding's bits in the attribute.
pub const SYSREG_MASK: u64 = 0xffff;

const fn enc(crn: u64, crm: u64, op2: u64) -> u16 {
    ((3 << 14) | (crn << 7) | (crm << 3) | op2) as u16
}
pub const ICC_PMR_EL1: u16 = enc(4, 6, 0);
pub const ICC_BPR0_EL1: u16 = enc(12, 8, 3);
pub const ICC_AP0R0_EL1: u16 = enc(12, 8, 4);
pub const ICC_AP1R0_EL1: u16 = enc(12, 9, 0);
pub const ICC_BPR1_EL1: u16 = enc(12, 12, 3);
pub const ICC_CTLR_EL1: u16 = enc(12, 12, 4);
pub const ICC_SRE_EL1: u16 = enc(12, 12, 5);
pub const ICC_IGRPEN0_EL1: u16 = enc(12, 12, 6);
pub const ICC_IGRPEN1_EL1: u16 = enc(12, 12, 7);

// ICH_VMCR_EL2 fields.
const VMCR_ENG0: u64 = 1 << 0;
const VMCR_ENG1: u64 = 1 << 1;
const VMCR_ACKCTL: u64 = 1 << 2;
const VMCR_FIQEN: u64 = 1 << 3;
const VMCR_CBPR: u64 = 1 << 4;
const VMCR_EOIM: u64 = 1 << 9;
const VMCR_BPR1_SHIFT: u32 = 18;
const VMCR_BPR0_SHIFT: u32 = 21;
const VMCR_PMR_SHIFT: u32 = 24;

// ICC_CTLR_EL1 fields.
const CTLR_CBPR: u64 = 1 << 0;
const CTLR_EOIMODE: u64 = 1 << 1;
const CTLR_PRI_BITS_SHIFT: u32 = 8;
const CTLR_ID_BITS_SHIFT: u32 = 11;
const CTLR_SEIS: u64 = 1 << 14;
const CTLR_A3V: u64 = 1 << 15;

// ICH_VTR_EL2 fields.
const VTR_SEIS: u64 = 1 << 22;
const VTR_A3V: u64 = 1 << 21;

/// ICC_SRE_EL1 as a GICv3 guest always sees it: SRE, DFB and DIB set.
pub const GUEST_SRE: u64 = 0b111;

/// One vCPU's CPU interface as these registers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuIf {
    /// ICH_VMCR_EL2.
    pub vmcr: u64,
    pub ap0r: [u64; 4],
    pub ap1r: [u64; 4],
    /// The priority and interrupt-ID bits ICC_CTLR_EL1 reports (the host's ICH_VTR_EL2 until
    /// a VMM restores fewer).
    pub pri_bits: u32,
    pub id_bits: u32,
}

impl CpuIf {
    /// A new vCPU's, on a CPU with this ICH_VTR_EL2 (vgic_v3_enable).
    pub fn new(vtr: u64) -> CpuIf {
        CpuIf {
            vmcr: 0,
            ap0r: [0; 4],
            ap1r: [0; 4],
            pri_bits: ((vtr >> 29) & 7) as u32 + 1,
            id_bits: ((vtr >> 23) & 7) as u32,
        }
    }

    /// The last active-priority register index (vgic_v3_max_apr_idx): one register for 5
    /// priority bits, two for 6, four for 7.
    fn max_apr_idx(&self) -> u16 {
        match self.pri_bits {
            7 => 3,
            6 => 1,
            _ => 0,
        }
    }

    fn field(&self, shift: u32, mask: u64) -> u64 {
        (self.vmcr >> shift) & mask
    }

    /// Writes one VMCR field; the bits Linux does not keep (AckCtl, FIQEn: RES1 views for a
    /// guest with SRE set) go, as vgic_v3_set_vmcr rebuilds the register.
    fn set_field(&mut self, shift: u32, mask: u64, val: u64) {
        self.vmcr &= !((mask << shift) | VMCR_ACKCTL | VMCR_FIQEN);
        self.vmcr |= (val & mask) << shift;
    }
}

/// Whether `reg` is one of the registers (vgic_v3_has_cpu_sysregs_attr; the EL2 views are
/// hidden without nested virtualization).
pub fn known(reg: u16) -> bool {
    matches!(
        reg,
        ICC_PMR_EL1
            | ICC_BPR0_EL1
            | ICC_BPR1_EL1
            | ICC_CTLR_EL1
            | ICC_SRE_EL1
            | ICC_IGRPEN0_EL1
            | ICC_IGRPEN1_EL1
    ) || (ICC_AP0R0_EL1..ICC_AP0R0_EL1 + 4).contains(&reg)
        || (ICC_AP1R0_EL1..ICC_AP1R0_EL1 + 4).contains(&reg)
}

/// The value of `reg` (ENOENT for another register; EINVAL for an active-priority register
/// past the vCPU's priority bits).
pub fn get(c: &CpuIf, vtr: u64, reg: u16) -> Result<u64, Errno> {
    Ok(match reg {
        ICC_PMR_EL1 => c.field(VMCR_PMR_SHIFT, 0xff),
        ICC_BPR0_EL1 => c.field(VMCR_BPR0_SHIFT, 7),
        ICC_BPR1_EL1 => {
            if c.vmcr & VMCR_CBPR == 0 {
                c.field(VMCR_BPR1_SHIFT, 7)
            } else {
                (c.field(VMCR_BPR0_SHIFT, 7) + 1).min(7)
            }
        }
        ICC_CTLR_EL1 => {
            let mut v = ((c.pri_bits as u64 - 1) << CTLR_PRI_BITS_SHIFT)
                | ((c.id_bits as u64) << CTLR_ID_BITS_SHIFT);
            if vtr & VTR_SEIS != 0 {
                v |= CTLR_SEIS;
            }
            if vtr & VTR_A3V != 0 {
                v |= CTLR_A3V;
            }
            if c.vmcr & VMCR_CBPR != 0 {
                v |= CTLR_CBPR;
            }
            if c.vmcr & VMCR_EOIM != 0 {
                v |= CTLR_EOIMODE;
            }
            v
        }
        ICC_SRE_EL1 => GUEST_SRE,
        ICC_IGRPEN0_EL1 => c.vmcr & VMCR_ENG0,
        ICC_IGRPEN1_EL1 => (c.vmcr & VMCR_ENG1) >> 1,
        r if (ICC_AP0R0_EL1..ICC_AP0R0_EL1 + 4).contains(&r) => {
            let i = r - ICC_AP0R0_EL1;
            if i > c.max_apr_idx() {
                return Err(Errno::EINVAL);
            }
            c.ap0r[i as usize]
        }
        r if (ICC_AP1R0_EL1..ICC_AP1R0_EL1 + 4).contains(&r) => {
            let i = r - ICC_AP1R0_EL1;
            if i > c.max_apr_idx() {
                return Err(Errno::EINVAL);
            }
            c.ap1r[i as usize]
        }
        _ => return Err(Errno::ENOENT),
    })
}

/// Writes `val` to `reg`, with Linux's checks: ICC_CTLR_EL1 may not claim more priority or ID
/// bits than the vCPU has, nor other SEIS/A3V than the host's (EINVAL); ICC_SRE_EL1 must keep
/// SRE (EINVAL) and is otherwise ignored; ICC_BPR1_EL1 is ignored while CBPR is set.
pub fn set(c: &mut CpuIf, vtr: u64, reg: u16, val: u64) -> Result<(), Errno> {
    match reg {
        ICC_PMR_EL1 => c.set_field(VMCR_PMR_SHIFT, 0xff, val),
        ICC_BPR0_EL1 => c.set_field(VMCR_BPR0_SHIFT, 7, val),
        ICC_BPR1_EL1 => {
            if c.vmcr & VMCR_CBPR == 0 {
                c.set_field(VMCR_BPR1_SHIFT, 7, val);
            }
        }
        ICC_CTLR_EL1 => {
            let pri = ((val >> CTLR_PRI_BITS_SHIFT) & 7) as u32 + 1;
            if pri > c.pri_bits {
                return Err(Errno::EINVAL);
            }
            c.pri_bits = pri;
            let id = ((val >> CTLR_ID_BITS_SHIFT) & 7) as u32;
            if id > c.id_bits {
                return Err(Errno::EINVAL);
            }
            c.id_bits = id;
            if (val & CTLR_SEIS != 0) != (vtr & VTR_SEIS != 0)
                || (val & CTLR_A3V != 0) != (vtr & VTR_A3V != 0)
            {
                return Err(Errno::EINVAL);
            }
            c.set_field(4, 1, val & CTLR_CBPR);
            c.set_field(9, 1, (val & CTLR_EOIMODE) >> 1);
        }
        ICC_SRE_EL1 => {
            if val & 1 == 0 {
                return Err(Errno::EINVAL);
            }
        }
        ICC_IGRPEN0_EL1 => c.set_field(0, 1, val),
        ICC_IGRPEN1_EL1 => c.set_field(1, 1, val),
        r if (ICC_AP0R0_EL1..ICC_AP0R0_EL1 + 4).contains(&r) => {
            let i = r - ICC_AP0R0_EL1;
            if i > c.max_apr_idx() {
                return Err(Errno::EINVAL);
            }
            c.ap0r[i as usize] = val;
        }
        r if (ICC_AP1R0_EL1..ICC_AP1R0_EL1 + 4).contains(&r) => {
            let i = r - ICC_AP1R0_EL1;
            if i > c.max_apr_idx() {
                return Err(Errno::EINVAL);
            }
            c.ap1r[i as usize] = val;
        }
        _ => return Err(Errno::ENOENT),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ICH_VTR_EL2 of QEMU's GICv3 CPU interface: 5 priority bits, 16-bit IDs, 4 LRs.
    const VTR: u64 = (4 << 29) | 3;

    #[test]
    fn encodings_match_linux() {
        assert_eq!(ICC_CTLR_EL1, 0xc664);
        assert_eq!(ICC_PMR_EL1, 0xc230);
        assert_eq!(ICC_AP1R0_EL1, 0xc648);
        assert!(known(ICC_AP0R0_EL1 + 3) && !known(ICC_AP1R0_EL1 + 4));
    }

    #[test]
    fn vmcr_views() {
        let mut c = CpuIf::new(VTR);
        assert_eq!(get(&c, VTR, ICC_CTLR_EL1), Ok(4 << 8));
        set(&mut c, VTR, ICC_PMR_EL1, 0xf0).unwrap();
        set(&mut c, VTR, ICC_IGRPEN1_EL1, 1).unwrap();
        set(&mut c, VTR, ICC_BPR1_EL1, 3).unwrap();
        assert_eq!(c.vmcr, (0xf0 << 24) | (3 << 18) | 2);
        assert_eq!(get(&c, VTR, ICC_BPR1_EL1), Ok(3));
        // With CBPR, BPR1 reads BPR0 + 1 and ignores writes.
        set(
            &mut c,
            VTR,
            ICC_CTLR_EL1,
            (4 << 8) | CTLR_CBPR | CTLR_EOIMODE,
        )
        .unwrap();
        set(&mut c, VTR, ICC_BPR1_EL1, 6).unwrap();
        assert_eq!(get(&c, VTR, ICC_BPR1_EL1), Ok(1));
        assert_eq!(get(&c, VTR, ICC_CTLR_EL1), Ok((4 << 8) | 3));
        assert_eq!(get(&c, VTR, ICC_SRE_EL1), Ok(7));
    }

    #[test]
    fn linux_errors() {
        let mut c = CpuIf::new(VTR);
        // More priority bits than the CPU has, a SEIS the host lacks.
        assert_eq!(set(&mut c, VTR, ICC_CTLR_EL1, 5 << 8), Err(Errno::EINVAL));
        assert_eq!(
            set(&mut c, VTR, ICC_CTLR_EL1, (4 << 8) | CTLR_SEIS),
            Err(Errno::EINVAL)
        );
        assert_eq!(set(&mut c, VTR, ICC_SRE_EL1, 0), Err(Errno::EINVAL));
        // 5 priority bits: only AP0R0/AP1R0.
        assert_eq!(get(&c, VTR, ICC_AP1R0_EL1 + 1), Err(Errno::EINVAL));
        assert_eq!(get(&c, VTR, 0xc000), Err(Errno::ENOENT));
    }
}
