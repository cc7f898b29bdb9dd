//! A WFI whose guest timer fires while KVM looks at it: the guest arms its virtual timer a
//! little ahead and executes WFI, again and again, the lead growing in small steps from zero
//! until a WFI has to sleep. Somewhere along each sweep the timer fires between the moment
//! KVM finds it not yet fired and the moment it works out how long the vCPU may sleep; the
//! WFI must still end (Linux's kvm_timer_earliest_exp counts a timer already due as a delay
//! of zero, kvm_timer_compute_delta), never become a sleep with no deadline.

use super::*;
use svelt_abi::uapi::kvm_vgic as v;

/// Sweeps of the lead; each ends at its first WFI that slept.
const SWEEPS: u64 = 100;
/// Wall time without a finished WFI after which the vCPU is taken for lost.
const STUCK_NS: u64 = 10_000_000_000;
/// The shared words, from RAM_IPA + DATA_OFF (the guest's offsets are these): WFIs done, the
/// lead of the current one (CNTVCT_EL0 ticks), sweeps that ended in a sleep, SWEEPS.
const DONE: usize = 0;
const LEAD: usize = 8;
const SLEPT: usize = 16;
const SWEEPS_AT: usize = 24;

core::arch::global_asm!(
    ".section .rodata.guests, \"a\"",
    ".balign 2048",
    ".global guest_wfi_timer, guest_wfi_timer_end",
    "guest_wfi_timer:",
    "movz x1, #0x1000, lsl #16", // MMIO
    "movz x2, #0x1, lsl #16",
    "add x2, x2, #0x8000", // the shared words
    // The virtual timer's PPI 27 enabled in the redistributor's SGI frame (vCPU 0's, at
    // 0x80b_0000), Group 1 on in the distributor and the CPU interface, any priority: the
    // WFI's wake-up condition is the vGIC's pending interrupt. IRQs stay masked at PSTATE.
    "movz x3, #0x80b, lsl #16",
    "mov w0, #(1 << 27)",
    "str w0, [x3, #0x100]", // GICR_ISENABLER0
    "movz x3, #0x800, lsl #16",
    "mov w0, #2",
    "str w0, [x3]", // GICD_CTLR.EnableGrp1
    "mov x0, #0xf0",
    "msr S3_0_C4_C6_0, x0", // ICC_PMR_EL1
    "mov x0, #1",
    "msr S3_0_C12_C12_7, x0", // ICC_IGRPEN1_EL1
    "isb",
    // x10 = the step (about a quarter of a microsecond, at least one tick), x11 = the time
    // beyond which a WFI slept (about 120 us), x12 = the largest lead (about a millisecond).
    "mrs x0, cntfrq_el0",
    "lsr x10, x0, #22",
    "cbnz x10, 1f",
    "mov x10, #1",
    "1: lsr x11, x0, #13",
    "lsr x12, x0, #10",
    // x4 = WFIs, x5 = sweeps, x6 = SWEEPS, x13 = sweeps that ended in a sleep.
    "mov x4, #0",
    "mov x5, #0",
    "mov x13, #0",
    "ldr x6, [x2, #24]",
    // A sweep: x7 = the lead.
    "2: mov x7, #0",
    "3: str x7, [x2, #8]",
    "isb",
    "mrs x8, cntvct_el0",
    "add x3, x8, x7",
    "msr S3_3_C14_C3_2, x3", // CNTV_CVAL_EL0
    "mov x3, #1",
    "msr S3_3_C14_C3_1, x3", // CNTV_CTL_EL0: enabled, not masked
    "isb",
    // Until the timer has fired (a WFI may end early).
    "4: wfi",
    "mrs x3, S3_3_C14_C3_1",
    "tbz x3, #2, 4b", // ISTATUS
    // Acknowledged, the timer off, then ended: a PPI left pending in a list register would
    // make the next WFIs end at once without a trap, until the next exit.
    "mrs x3, S3_0_C12_C12_0", // ICC_IAR1_EL1
    "msr S3_3_C14_C3_1, xzr",
    "isb",
    "and x3, x3, #0xffffff",
    "cmp x3, #1020",
    "b.hs 7f",
    "msr S3_0_C12_C12_1, x3", // ICC_EOIR1_EL1
    "isb",
    "7: ",
    "mrs x9, cntvct_el0",
    "sub x9, x9, x8",
    "add x4, x4, #1",
    "str x4, [x2]",
    "cmp x9, x11",
    "b.hi 5f",
    "add x7, x7, x10",
    "cmp x7, x12",
    "b.lo 3b",
    "b 6f",
    "5: add x13, x13, #1",
    "str x13, [x2, #16]",
    "6: add x5, x5, #1",
    "cmp x5, x6",
    "b.lo 2b",
    "str x4, [x1]", // done
    "b .",
    "guest_wfi_timer_end:",
    ".text",
);

unsafe extern "C" {
    static guest_wfi_timer: u8;
    static guest_wfi_timer_end: u8;
}

/// What the vCPU's thread and the main thread share.
struct Shared {
    vcpu: i32,
    run: usize,
    /// Set by the main thread when the vCPU is taken for lost: a signal's EINTR then ends the
    /// thread.
    give_up: AtomicU32,
    /// 1 when the thread has ended.
    ended: AtomicU32,
    /// The guest's last MMIO store (its WFI count), or the first unexpected thing (an errno,
    /// or an exit reason << 32 | address) with bit 63 set.
    result: AtomicU64,
}

extern "C" fn timer_vcpu(arg: usize) -> i32 {
    // SAFETY: `arg` is the Shared the main thread keeps until it joined this thread.
    let s = unsafe { &*(arg as *const Shared) };
    let word = |off: usize| {
        // SAFETY: the kvm_run page stays mapped until the main thread joined this thread.
        unsafe { ((s.run + off) as *const u64).read_volatile() }
    };
    let r = loop {
        let r = ioctl(s.vcpu, k::KVM_RUN, 0);
        let reason = word(k::run::EXIT_REASON) as u32;
        let addr = word(k::run::MMIO_PHYS_ADDR);
        match r {
            Err(EINTR) if s.give_up.load(Ordering::Acquire) != 0 => break 1 << 63,
            Err(EINTR) => continue,
            Ok(_) if reason == k::KVM_EXIT_MMIO && addr == MMIO => break word(k::run::MMIO_DATA),
            Err(e) => break 1 << 63 | e.0 as u64,
            Ok(_) => break 1 << 63 | (reason as u64) << 32 | addr,
        }
    };
    s.result.store(r, Ordering::Release);
    s.ended.store(1, Ordering::Release);
    0
}

/// The guest's WFIs with a timer armed a little ahead, the lead swept from zero up in steps
/// of about a quarter of a microsecond: every WFI ends, each with its timer fired; none sleeps
/// with no deadline because the timer fired while KVM was deciding how long to sleep.
pub fn wfi_timer_fires_while_deciding() -> TestResult {
    let kvm = kvm!();
    let g = Guest::new(kvm, code!(guest_wfi_timer, guest_wfi_timer_end));
    let _ = sys::close(kvm);
    let g = g?;
    let mut d = k::KvmCreateDevice {
        ty: v::KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: 0,
    };
    t!(ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize));
    let gic = d.fd as i32;
    let placed =
        place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000).and_then(|_| init_vgic(gic));
    if let Err(e) = placed {
        let _ = sys::close(gic);
        return Err(format!("the vGIC: {e:?}"));
    }
    let shared_word = |off: usize| {
        // SAFETY: inside the guest's RAM mapping, which `g` keeps; the guest may be writing.
        unsafe { (g.ram.add(DATA_OFF + off) as *const u64).read_volatile() }
    };
    // SAFETY: as above.
    unsafe { (g.ram.add(DATA_OFF + SWEEPS_AT) as *mut u64).write_volatile(SWEEPS) };
    t!(set_handler(SIGUSR1, on_kick, 0, 0));
    let s = Shared {
        vcpu: g.vcpu,
        run: g.run as usize,
        give_up: AtomicU32::new(0),
        ended: AtomicU32::new(0),
        result: AtomicU64::new(0),
    };
    let t0 = sys::now_ns();
    let th = t!(spawn_thread(timer_vcpu, &s as *const _ as usize, 0));
    let pid = sys::getpid();
    let pause = || sys::nanosleep(&Timespec::from_ns(50_000_000), None);
    let (mut last, mut since) = (0, t0);
    let mut stuck = None;
    while s.ended.load(Ordering::Acquire) == 0 {
        let _ = pause();
        let now = sys::now_ns();
        let done = shared_word(DONE);
        if done != last {
            (last, since) = (done, now);
        } else if stuck.is_none() && now - since > STUCK_NS {
            // Lost: signals end its KVM_RUN (sent again until its thread has seen one).
            stuck = Some((done, shared_word(LEAD)));
            s.give_up.store(1, Ordering::Release);
        }
        if stuck.is_some() {
            let _ = sys::tgkill(pid, th.tid, SIGUSR1);
        }
    }
    th.join();
    let _ = sys::close(gic);
    let ms = (sys::now_ns() - t0) / 1_000_000;
    let slept = shared_word(SLEPT);
    if let Some((done, lead)) = stuck {
        return Err(format!(
            "WFI {} (timer {lead} ticks ahead) never ended: 10 s without one ({done} done, \
             {slept} of the sweeps reached a sleep)",
            done + 1
        ));
    }
    let r = s.result.load(Ordering::Acquire);
    check!(r & 1 << 63 == 0, "the vCPU's thread: {:#x}", r & !(1 << 63));
    println!("    # {r} WFIs in {SWEEPS} sweeps, {slept} ending in a sleep, in {ms} ms");
    check_eq!(r, shared_word(DONE));
    check!(
        slept > 0,
        "no WFI slept: the sweeps never got past the timer"
    );
    Ok(())
}
