//! A PMU for guests (KVM_ARM_VCPU_PMU_V3): the vCPU attributes' errors in Linux's order, and a
//! guest that counts cycles with the cycle counter and an event counter, whose counts another
//! VM never sees, and whose counter overflow raises the PPI its VMM chose.

use super::*;
use svelt_abi::uapi::kvm_pmu as p;
use svelt_abi::uapi::kvm_vgic as v;

const PMU_FEATURE: u32 = 1 << k::KVM_ARM_VCPU_PMU_V3;
const PMU_PPI: u32 = 23;
const PMCR_EL0: u64 = k::sysreg_id(3, 3, 9, 12, 0);
const PMCCNTR_EL0: u64 = k::sysreg_id(3, 3, 9, 13, 0);
const PMEVCNTR0_EL0: u64 = k::sysreg_id(3, 3, 14, 8, 0);

fn pmu_attr(vcpu: i32, cmd: u32, attr: u64, val: &mut [u8]) -> SysResult {
    dev_attr(
        vcpu,
        cmd,
        p::KVM_ARM_VCPU_PMU_V3_CTRL,
        attr,
        val.as_mut_ptr() as usize,
    )
}

fn set_u32_attr(vcpu: i32, attr: u64, v: u32) -> SysResult {
    let mut b = v.to_le_bytes();
    pmu_attr(vcpu, k::KVM_SET_DEVICE_ATTR, attr, &mut b)
}

fn filter(vcpu: i32, base_event: u16, nevents: u16, action: u8) -> SysResult {
    let f = p::KvmPmuEventFilter {
        base_event,
        nevents,
        action,
        pad: [0; 3],
    };
    dev_attr(
        vcpu,
        k::KVM_SET_DEVICE_ATTR,
        p::KVM_ARM_VCPU_PMU_V3_CTRL,
        p::KVM_ARM_VCPU_PMU_V3_FILTER,
        &f as *const _ as usize,
    )
}

fn offered(kvm: i32) -> bool {
    ioctl(kvm, k::KVM_CHECK_EXTENSION, p::KVM_CAP_ARM_PMU_V3 as usize) == Ok(1)
}

/// The attributes' errors, in the order Linux's kvm_arm_pmu_v3_{set,get,has}_attr and
/// kvm_arm_pmu_v3_init check them, and KVM_RUN refused until INIT.
pub fn pmu_attributes() -> TestResult {
    let kvm = kvm!();
    if !offered(kvm) {
        return ktap::skip("KVM_CAP_ARM_PMU_V3 is 0");
    }
    let mut irq = PMU_PPI.to_le_bytes();
    // A vCPU without the feature: no such device.
    let g = t!(Guest::new(kvm, code!(guest_idregs, guest_idregs_end)));
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_HAS_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_INIT,
            &mut irq
        ),
        Err(ENXIO),
        "HAS without the feature"
    );
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_IRQ, PMU_PPI),
        Err(ENODEV),
        "SET without the feature"
    );
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_GET_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_IRQ,
            &mut irq
        ),
        Err(EINVAL),
        "GET IRQ without an irqchip"
    );
    drop(g);
    // With the feature, without a vGIC.
    let g = t!(Guest::another(
        code!(guest_idregs, guest_idregs_end),
        PMU_FEATURE
    ));
    for a in 0..=4 {
        check_eq!(
            pmu_attr(g.vcpu, k::KVM_HAS_DEVICE_ATTR, a, &mut irq),
            Ok(0),
            "HAS {a}"
        );
    }
    check_eq!(
        pmu_attr(g.vcpu, k::KVM_HAS_DEVICE_ATTR, 5, &mut irq),
        Err(ENXIO),
        "HAS 5"
    );
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_IRQ, PMU_PPI),
        Err(EINVAL),
        "IRQ without an irqchip"
    );
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_GET_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_INIT,
            &mut irq
        ),
        Err(ENXIO),
        "GET INIT"
    );
    let pmcr = t!(get_reg(g.vcpu, PMCR_EL0)) as u64;
    let n = ((pmcr & p::PMCR_N_MASK) >> p::PMCR_N_SHIFT) as u32;
    check!(n >= 1, "PMCR_EL0.N {n} from {pmcr:#x}");
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_SET_NR_COUNTERS, n + 1),
        Err(EINVAL),
        "more counters than the CPU's {n}"
    );
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_SET_NR_COUNTERS, 1),
        Ok(0),
        "one counter"
    );
    let pmcr = t!(get_reg(g.vcpu, PMCR_EL0)) as u64;
    check_eq!((pmcr & p::PMCR_N_MASK) >> p::PMCR_N_SHIFT, 1, "PMCR_EL0.N");
    check_eq!(filter(g.vcpu, 0, 1, 2), Err(EINVAL), "filter action 2");
    check_eq!(
        filter(g.vcpu, 0xffff, 2, 0),
        Err(EINVAL),
        "filter past the events"
    );
    check_eq!(
        filter(g.vcpu, 0x11, 1, p::KVM_PMU_EVENT_ALLOW),
        Ok(0),
        "allow CPU_CYCLES"
    );
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_SET_PMU, 0x7fff_ffff),
        Err(ENXIO),
        "no such PMU"
    );
    check_eq!(g.run(), Err(EINVAL), "KVM_RUN before INIT");
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_SET_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_INIT,
            &mut irq
        ),
        Ok(0),
        "INIT without an irqchip"
    );
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_SET_NR_COUNTERS, 1),
        Err(EBUSY),
        "after INIT"
    );
    drop(g);
    // With a vGIC: the IRQ, once, and INIT only after the vGIC's.
    let kvm = kvm!();
    let g = t!(Guest::with_features(
        kvm,
        code!(guest_idregs, guest_idregs_end),
        PMU_FEATURE
    ));
    let gic_fd = Fd(t!(create_vgic(g.vm)));
    let gic = gic_fd.0;
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_IRQ, 15),
        Err(EINVAL),
        "SGI 15"
    );
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_GET_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_IRQ,
            &mut irq
        ),
        Err(ENXIO),
        "GET IRQ before it is set"
    );
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_SET_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_INIT,
            &mut irq
        ),
        Err(ENODEV),
        "INIT before the vGIC's, without an IRQ"
    );
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_IRQ, PMU_PPI),
        Ok(0),
        "PPI 23"
    );
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_IRQ, 22),
        Err(EINVAL),
        "another PPI than the VM's"
    );
    check_eq!(
        set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_IRQ, PMU_PPI),
        Err(EBUSY),
        "the same PPI again"
    );
    let mut got = [0u8; 4];
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_GET_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_IRQ,
            &mut got
        ),
        Ok(0)
    );
    check_eq!(u32::from_le_bytes(got), PMU_PPI, "GET IRQ");
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_SET_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_INIT,
            &mut irq
        ),
        Err(ENODEV),
        "INIT before the vGIC's"
    );
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    t!(init_vgic(gic));
    check_eq!(
        pmu_attr(
            g.vcpu,
            k::KVM_SET_DEVICE_ATTR,
            p::KVM_ARM_VCPU_PMU_V3_INIT,
            &mut irq
        ),
        Ok(0),
        "INIT"
    );
    Ok(())
}

/// A descriptor closed when dropped (a failed check must not keep its VM alive).
struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        let _ = sys::close(self.0);
    }
}

fn create_vgic(vm: i32) -> SysResult<i32> {
    let mut d = k::KvmCreateDevice {
        ty: v::KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: 0,
    };
    ioctl(vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize)?;
    Ok(d.fd as i32)
}

/// A VM whose vCPU has a PMU with PPI 23, its vGIC placed and initialised, running `code`.
fn pmu_guest(code: &[u8]) -> Result<(Guest, Fd), String> {
    let g = t!(Guest::another(code, PMU_FEATURE));
    let gic_fd = Fd(t!(create_vgic(g.vm)));
    let gic = gic_fd.0;
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    t!(init_vgic(gic));
    t!(set_u32_attr(g.vcpu, p::KVM_ARM_VCPU_PMU_V3_IRQ, PMU_PPI));
    let mut none = [0u8; 4];
    t!(pmu_attr(
        g.vcpu,
        k::KVM_SET_DEVICE_ATTR,
        p::KVM_ARM_VCPU_PMU_V3_INIT,
        &mut none
    ));
    Ok((g, gic_fd))
}

/// The guest counts: the cycle counter and event counter 0 (CPU_CYCLES) run over a loop and
/// again; a second VM that reset its counters reads zero from both meanwhile; counter 0 set just below its 32-bit
/// overflow with its interrupt enabled raises PPI 23 in the guest.
pub fn pmu_guest_counts() -> TestResult {
    let kvm = kvm!();
    if !offered(kvm) {
        return ktap::skip("KVM_CAP_ARM_PMU_V3 is 0");
    }
    let (a, _gic_a) = t!(pmu_guest(code!(guest_pmu, guest_pmu_end)));
    let (b, _gic_b) = t!(pmu_guest(code!(guest_pmu_idle, guest_pmu_idle_end)));
    let (addr, c1, _, _) = t!(a.run_to_mmio());
    check_eq!(addr, MMIO, "first cycle count");
    let (_, e1, _, _) = t!(a.run_to_mmio());
    check!(
        c1 > 0 && e1 > 0,
        "counts after one loop: cycles {c1}, event {e1}"
    );
    // The other VM: nothing counted for it, though A's counters are enabled.
    check_eq!(t!(b.run_to_mmio()), (MMIO, 0, 8, true), "B's cycle counter");
    check_eq!(
        t!(b.run_to_mmio()),
        (MMIO + 8, 0, 8, true),
        "B's event counter 0"
    );
    check_eq!(
        t!(get_reg(b.vcpu, PMCCNTR_EL0)),
        0,
        "B's PMCCNTR_EL0 to its VMM"
    );
    let (_, c2, _, _) = t!(a.run_to_mmio());
    let (_, e2, _, _) = t!(a.run_to_mmio());
    check!(
        c2 > c1 && e2 > e1,
        "counts grow: cycles {c1} -> {c2}, event {e1} -> {e2}"
    );
    let vmm_view = t!(get_reg(a.vcpu, PMEVCNTR0_EL0)) as u64;
    check!(
        vmm_view >= e2,
        "A's PMEVCNTR0_EL0 to its VMM {vmm_view} >= {e2}"
    );
    // The overflow: the guest waits in WFI for the interrupt and reports its INTID and
    // PMOVSSET_EL0.
    check_eq!(
        t!(a.run_to_mmio()),
        (MMIO + 32, u64::from(PMU_PPI), 8, true),
        "INTID"
    );
    let (addr, ovs, _, _) = t!(a.run_to_mmio());
    check_eq!(addr, MMIO + 40);
    check_eq!(ovs & 1, 1, "PMOVSSET_EL0 {ovs:#x}");
    let (addr, ovs, _, _) = t!(a.run_to_mmio());
    check_eq!(addr, MMIO + 48);
    check_eq!(ovs & 1, 0, "PMOVSSET_EL0 after PMOVSCLR_EL0 {ovs:#x}");
    println!("    # guest cycles {c1} -> {c2}, CPU_CYCLES {e1} -> {e2}");
    Ok(())
}

core::arch::global_asm!(
    ".section .rodata.guests, \"a\"",
    ".balign 4",
    // GICD_CTLR.EnableGrp1A, PPI 23 enabled in the redistributor's SGI frame, ICC_PMR_EL1
    // and ICC_IGRPEN1_EL1; event counter 0 counts CPU_CYCLES (0x11) and the cycle counter
    // everything at EL1, both reset and enabled (PMCR_EL0 E, P, C); a loop, PMCCNTR_EL0 and
    // PMEVCNTR0_EL0 to MMIO +0 and +8; the loop again, the same to +16 and +24; then counter
    // 0 set 256 short of its 32-bit overflow with its interrupt on, WFI until ICC_IAR1_EL1
    // gives an INTID (to +32), PMOVSSET_EL0 to +40, the overflow cleared, EOI, and
    // PMOVSSET_EL0 again to +48.
    ".global guest_pmu, guest_pmu_end",
    "guest_pmu:",
    "movz x1, #0x800, lsl #16",
    "mov w2, #2",
    "str w2, [x1]",
    "movz x8, #0x80b, lsl #16",
    "mov w2, #(1 << 23)",
    "str w2, [x8, #0x100]",
    "mov x3, #0xf0",
    "msr S3_0_C4_C6_0, x3",
    "mov x3, #1",
    "msr S3_0_C12_C12_7, x3",
    "movz x4, #0x1000, lsl #16",
    "mov x5, #0x11",
    "msr S3_3_C14_C12_0, x5",
    "msr S3_3_C14_C15_7, xzr",
    "mov x5, #1",
    "orr x5, x5, #(1 << 31)",
    "msr S3_3_C9_C12_1, x5",
    "mov x5, #7",
    "msr S3_3_C9_C12_0, x5",
    "isb",
    "mov x6, #0x4000",
    "1: subs x6, x6, #1",
    "b.ne 1b",
    "mrs x7, S3_3_C9_C13_0",
    "str x7, [x4]",
    "mrs x7, S3_3_C14_C8_0",
    "str x7, [x4, #8]",
    "mov x6, #0x4000",
    "2: subs x6, x6, #1",
    "b.ne 2b",
    "mrs x7, S3_3_C9_C13_0",
    "str x7, [x4, #16]",
    "mrs x7, S3_3_C14_C8_0",
    "str x7, [x4, #24]",
    "mov x5, #1",
    "msr S3_0_C9_C14_1, x5",
    "movz x5, #0xff00",
    "movk x5, #0xffff, lsl #16",
    "msr S3_3_C14_C8_0, x5",
    "isb",
    "3: wfi",
    "mrs x9, S3_0_C12_C12_0",
    "cmp x9, #1023",
    "b.eq 3b",
    "str x9, [x4, #32]",
    "mrs x10, S3_3_C9_C14_3",
    "str x10, [x4, #40]",
    "mov x5, #1",
    "msr S3_3_C9_C12_3, x5",
    "msr S3_0_C12_C12_1, x9",
    "isb",
    "mrs x9, S3_3_C9_C14_3",
    "str x9, [x4, #48]",
    "b .",
    "guest_pmu_end:",
    // The counters reset (PMCR_EL0 P and C: their reset values are UNKNOWN) but not enabled,
    // then PMCCNTR_EL0 and PMEVCNTR0_EL0 to MMIO +0 and +8.
    ".global guest_pmu_idle, guest_pmu_idle_end",
    "guest_pmu_idle:",
    "mov x5, #6",
    "msr S3_3_C9_C12_0, x5",
    "isb",
    "movz x4, #0x1000, lsl #16",
    "mrs x7, S3_3_C9_C13_0",
    "str x7, [x4]",
    "mrs x7, S3_3_C14_C8_0",
    "str x7, [x4, #8]",
    "b .",
    "guest_pmu_idle_end:",
    ".text",
);

unsafe extern "C" {
    static guest_pmu: u8;
    static guest_pmu_end: u8;
    static guest_pmu_idle: u8;
    static guest_pmu_idle_end: u8;
}
