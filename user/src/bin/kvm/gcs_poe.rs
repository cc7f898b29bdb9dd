//! Permission overlays (FEAT_S1POE), permission indirection (FEAT_S1PIE) and TCR2_EL1
//! (FEAT_TCR2) for guests, and GCS's absence: what Linux 7.3's KVM gives. The registers follow
//! the VM's ID_AA64MMFR3_EL1 (sys_regs.c's s1poe/s1pie/tcr2_visibility): listed, reachable by
//! ONE_REG and by the guest while the field shows the feature; ENOENT, unlisted and UNDEFINED
//! once the VMM lowered it. GCS is hidden from every VM (sanitise_id_aa64pfr1_el1), so its
//! registers are never listed.

use super::*;

const MMFR3: u64 = k::sysreg_id(3, 0, 0, 7, 3);
const PFR1: u64 = k::sysreg_id(3, 0, 0, 4, 1);
const TCR2_EL1: u64 = k::sysreg_id(3, 0, 2, 0, 3);
const PIRE0_EL1: u64 = k::sysreg_id(3, 0, 10, 2, 2);
const PIR_EL1: u64 = k::sysreg_id(3, 0, 10, 2, 3);
const POR_EL1: u64 = k::sysreg_id(3, 0, 10, 2, 4);
const POR_EL0: u64 = k::sysreg_id(3, 3, 10, 2, 4);
/// GCSCR_EL1, GCSPR_EL1, GCSCRE0_EL1, GCSPR_EL0.
const GCS_REGS: [u64; 4] = [
    k::sysreg_id(3, 0, 2, 5, 0),
    k::sysreg_id(3, 0, 2, 5, 1),
    k::sysreg_id(3, 0, 2, 5, 2),
    k::sysreg_id(3, 3, 2, 5, 1),
];
const TCRX: u64 = 0xf;
const S1PIE: u64 = 0xf << 8;
const S1POE: u64 = 0xf << 16;

// Reads TCR2_EL1, PIR_EL1 and PIRE0_EL1 and stores them (+0x10, +0x18, +0x20: one exit
// each), writes x2, x4 and x5 to them, and stores what it reads back (+0x28, +0x30, +0x38),
// then spins (its MMU is off: the values steer nothing). Its EL1h synchronous vector stores
// ESR_EL1 (+8) and returns past the instruction.
core::arch::global_asm!(
    ".balign 2048",
    ".global guest_poe, guest_poe_end",
    "guest_poe:",
    "adr x0, 1f",
    "msr vbar_el1, x0",
    "isb",
    "movz x1, #0x1000, lsl #16",
    "mrs x3, S3_0_C2_C0_3",
    "str x3, [x1, #0x10]",
    "mrs x3, S3_0_C10_C2_3",
    "str x3, [x1, #0x18]",
    "mrs x3, S3_0_C10_C2_2",
    "str x3, [x1, #0x20]",
    "msr S3_0_C2_C0_3, x2",
    "msr S3_0_C10_C2_3, x4",
    "msr S3_0_C10_C2_2, x5",
    "isb",
    "mrs x3, S3_0_C2_C0_3",
    "str x3, [x1, #0x28]",
    "mrs x3, S3_0_C10_C2_3",
    "str x3, [x1, #0x30]",
    "mrs x3, S3_0_C10_C2_2",
    "str x3, [x1, #0x38]",
    "b .",
    ".balign 2048",
    "1:",
    ".skip 0x200",
    "mrs x2, esr_el1",
    "str x2, [x1, #8]",
    "mrs x2, elr_el1",
    "add x2, x2, #4",
    "msr elr_el1, x2",
    "eret",
    "guest_poe_end:",
);

unsafe extern "C" {
    static guest_poe: u8;
    static guest_poe_end: u8;
}

fn poe_code() -> &'static [u8] {
    code!(guest_poe, guest_poe_end)
}

fn mmfr3(g: &Guest) -> Result<u64, String> {
    Ok(t!(get_reg(g.vcpu, MMFR3)) as u64)
}

/// The registers' ONE_REG and reg-list presence follow ID_AA64MMFR3_EL1; GCS's never appear.
pub fn poe_registers_follow_the_vm() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, poe_code()));
    let list = t!(reg_list(g.vcpu));
    let pfr1 = t!(get_reg(g.vcpu, PFR1)) as u64;
    check_eq!((pfr1 >> 44) & 0xf, 0, "ID_AA64PFR1_EL1.GCS shown");
    for id in GCS_REGS {
        check!(!list.contains(&id), "GCS register {id:#x} listed");
        check_eq!(get_reg(g.vcpu, id), Err(ENOENT), "GCS register {id:#x}");
        check_eq!(
            set_reg(g.vcpu, id, 0),
            Err(ENOENT),
            "GCS register {id:#x} set"
        );
    }
    let m = t!(mmfr3(&g));
    let feats = [
        (TCRX, &[TCR2_EL1][..]),
        (S1PIE, &[PIRE0_EL1, PIR_EL1][..]),
        (S1POE, &[POR_EL1, POR_EL0][..]),
    ];
    for (field, ids) in feats {
        let shown = m & field != 0;
        for &id in ids {
            check_eq!(
                list.contains(&id),
                shown,
                "{id:#x} listed, field {field:#x}"
            );
            if !shown {
                check_eq!(
                    get_reg(g.vcpu, id),
                    Err(ENOENT),
                    "{id:#x} without its feature"
                );
            }
        }
    }
    // Round trips: each register the VM has keeps what the VMM writes.
    let vals: Vec<(u64, u64)> = [
        (TCRX, TCR2_EL1, 0x2u64),
        (S1PIE, PIRE0_EL1, 0x0123_4567_89ab_cdef),
        (S1PIE, PIR_EL1, 0xfedc_ba98_7654_3210),
        (S1POE, POR_EL1, 0x7654_3210_0123_4567),
        (S1POE, POR_EL0, 0x0011_2233_4455_6677),
    ]
    .into_iter()
    .filter(|&(f, _, _)| m & f != 0)
    .map(|(_, id, v)| (id, v))
    .collect();
    if vals.is_empty() {
        return ktap::skip("the VM has none of TCR2, S1PIE and S1POE");
    }
    for &(id, v) in &vals {
        t!(set_reg(g.vcpu, id, v as u128));
    }
    for &(id, v) in &vals {
        check_eq!(get_reg(g.vcpu, id), Ok(v as u128), "{id:#x} round trip");
    }
    // Lowered to 0 by the VMM: ENOENT and unlisted; raised again: the values are back.
    t!(set_reg(
        g.vcpu,
        MMFR3,
        (m & !(TCRX | S1PIE | S1POE)) as u128
    ));
    let list = t!(reg_list(g.vcpu));
    for &(id, _) in &vals {
        check!(!list.contains(&id), "{id:#x} listed once hidden");
        check_eq!(get_reg(g.vcpu, id), Err(ENOENT), "{id:#x} hidden");
        check_eq!(set_reg(g.vcpu, id, 0), Err(ENOENT), "{id:#x} hidden set");
    }
    t!(set_reg(g.vcpu, MMFR3, m as u128));
    let list = t!(reg_list(g.vcpu));
    for &(id, v) in &vals {
        check!(list.contains(&id), "{id:#x} listed again");
        check_eq!(get_reg(g.vcpu, id), Ok(v as u128), "{id:#x} shown again");
    }
    Ok(())
}

/// Runs `g` to its next MMIO write and returns its offset from MMIO and its value.
fn next_store(g: &Guest) -> Result<(u64, u64), String> {
    let (addr, data, _, write) = t!(g.run_to_mmio());
    check!(write, "not a write");
    Ok((addr - MMIO, data))
}

/// Sets the guest's TCR2_EL1, PIR_EL1, PIRE0_EL1 through ONE_REG and the values its writes
/// will take (x2, x4, x5).
fn prime(g: &Guest, before: [u64; 3], after: [u64; 3]) -> TestResult {
    for (id, v) in [TCR2_EL1, PIR_EL1, PIRE0_EL1].into_iter().zip(before) {
        t!(set_reg(g.vcpu, id, v as u128));
    }
    for (n, v) in [2, 4, 5].into_iter().zip(after) {
        t!(set_reg(g.vcpu, x(n), v as u128));
    }
    Ok(())
}

/// A guest reads the TCR2_EL1, PIR_EL1 and PIRE0_EL1 its VMM set, writes its own and reads
/// them back; the VMM then reads the guest's values. Two VMs run interleaved on this thread
/// never see each other's values. A VM whose VMM hid TCRX, S1PIE and S1POE takes an Undefined
/// Instruction exception at its first TCR2_EL1 read.
pub fn poe_guest() -> TestResult {
    let kvm = kvm!();
    let a = t!(Guest::new(kvm, poe_code()));
    let m = t!(mmfr3(&a));
    if m & TCRX == 0 || m & S1PIE == 0 {
        return ktap::skip("the VM has not TCR2 and S1PIE");
    }
    // TCR2_EL1.PIE (bit 1) and any permission-index values.
    let a_before = [0x2u64, 0x1111_2222_3333_4444, 0x0123_4567_89ab_cdef];
    let a_after = [0x0u64, 0x5555_6666_7777_8888, 0x7654_3210_7654_3210];
    let b_before = [0x0u64, 0x9999_aaaa_bbbb_cccc, 0x0000_0007_0000_0007];
    let b_after = [0x2u64, 0x0707_0707_0707_0707, 0x0c0c_0c0c_0c0c_0c0c];
    prime(&a, a_before, a_after)?;
    let b = t!(Guest::another(poe_code(), 0));
    prime(&b, b_before, b_after)?;
    // A reads its first value, then B runs to its end, then A goes on.
    check_eq!(next_store(&a), Ok((0x10, a_before[0])), "A's TCR2_EL1");
    for (i, want) in b_before.iter().chain(b_after.iter()).enumerate() {
        check_eq!(
            next_store(&b),
            Ok((0x10 + 8 * i as u64, *want)),
            "B's register {i}"
        );
    }
    check_eq!(next_store(&a), Ok((0x18, a_before[1])), "A's PIR_EL1");
    check_eq!(next_store(&a), Ok((0x20, a_before[2])), "A's PIRE0_EL1");
    for (i, want) in a_after.iter().enumerate() {
        check_eq!(
            next_store(&a),
            Ok((0x28 + 8 * i as u64, *want)),
            "A's register {i} after its write"
        );
    }
    for (g, vals, who) in [(&a, a_after, "A"), (&b, b_after, "B")] {
        for (id, v) in [TCR2_EL1, PIR_EL1, PIRE0_EL1].into_iter().zip(vals) {
            check_eq!(
                get_reg(g.vcpu, id),
                Ok(v as u128),
                "{who}'s {id:#x} by ONE_REG"
            );
        }
    }
    drop(b);
    drop(a);
    // Hidden: TCR2_EL1 is UNDEFINED, and so are PIR_EL1 and PIRE0_EL1 after it (the vector
    // steps over each and the stores that follow report the ESR again).
    let kvm = kvm!();
    let h = t!(Guest::new(kvm, poe_code()));
    t!(set_reg(
        h.vcpu,
        MMFR3,
        (m & !(TCRX | S1PIE | S1POE)) as u128
    ));
    for what in ["TCR2_EL1", "PIR_EL1", "PIRE0_EL1"] {
        let (addr, esr, _, _) = t!(h.run_to_mmio());
        check_eq!(addr, MMIO + 8, "hidden {what}: no UNDEF");
        check_eq!(esr >> 26, 0, "hidden {what}: ESR_EL1 {esr:#x}");
        // The store of the (unchanged) x3 that follows.
        t!(h.run_to_mmio());
    }
    Ok(())
}
