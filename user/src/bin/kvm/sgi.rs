//! SGIs between two vCPUs of one VM, each run by its own thread: vCPU 0 sends SGI 1 to vCPU 1
//! again and again, each time as soon as vCPU 1's handler has counted the one before, while
//! vCPU 1 keeps running guest code on another host CPU. Each SGI then comes while the previous
//! instance still sits in vCPU 1's list register (active, or already EOIed), and the fold of
//! that register at the exit the new SGI's kick forces must not take the new instance for the
//! old one (Linux's vgic_v3_populate_lr moves an SGI's pending state into the register, and
//! vgic_v3_fold_lr_state only adds back what the register still holds pending, so a latch
//! set in between stays).

use super::*;
use svelt_abi::uapi::kvm_vgic as v;

/// SGIs sent when the vCPUs have a host CPU each; with one host CPU the two take turns at
/// the host's ticks, so each SGI costs a tick or two and fewer are sent.
const ROUNDS: u64 = 500;
const ROUNDS_ONE_CPU: u64 = 40;
/// Lost SGIs (not taken within five seconds) after which vCPU 0 gives up.
const MAX_LOST: u64 = 3;
/// The shared words, from RAM_IPA + DATA_OFF (the guest's offsets are these): vCPU 1's count
/// of SGI 1, the stop flag vCPU 0 sets at the end, vCPU 1's ready flag, its count of other
/// INTIDs, the rounds to send and MAX_LOST.
const COUNT: usize = 0;
const STOP: usize = 8;
const OTHER: usize = 24;
const ROUNDS_AT: usize = 32;
const MAX_LOST_AT: usize = 40;

core::arch::global_asm!(
    ".section .rodata.guests, \"a\"",
    ".balign 2048",
    ".global guest_sgi, guest_sgi_end",
    "guest_sgi:",
    // Both vCPUs start here; MPIDR_EL1.Aff0 says which one this is.
    "movz x1, #0x1000, lsl #16", // MMIO
    "movz x2, #0x1, lsl #16",
    "add x2, x2, #0x8000", // the shared words
    "mrs x0, mpidr_el1",
    "and x0, x0, #0xff",
    "cbnz x0, 20f",
    // vCPU 0: x10 = a second, x13 = five, by CNTVCT_EL0; waits (five seconds at most) for
    // vCPU 1 to be ready.
    "mrs x10, cntfrq_el0",
    "mov x13, #5",
    "mul x13, x10, x13",
    "mrs x11, cntvct_el0",
    "1: ldr x3, [x2, #16]",
    "cbnz x3, 2f",
    "mrs x12, cntvct_el0",
    "sub x12, x12, x11",
    "cmp x12, x13",
    "b.lo 1b",
    "str xzr, [x1, #0x18]", // never ready
    "b 9f",
    // x4 = round, x5 = lost, x6 = rounds; SGI 1 to Aff0 1 (TargetList bit 1).
    "2: mov x4, #0",
    "mov x5, #0",
    "ldr x6, [x2, #32]",
    "ldr x9, [x2, #40]",
    "movz x7, #0x100, lsl #16",
    "orr x7, x7, #2",
    "3: ldr x8, [x2]",        // the count before this round's SGI
    "msr S3_0_C12_C11_5, x7", // ICC_SGI1R_EL1
    "isb",
    "mrs x11, cntvct_el0",
    "mov x15, #0",
    "4: ldr x3, [x2]",
    "cmp x3, x8",
    "b.ne 5f",
    "mrs x12, cntvct_el0",
    "sub x12, x12, x11",
    "cbnz x15, 6f",
    "cmp x12, x10",
    "b.lo 4b",
    // Not taken within a second (a busy host): reported, and waited for on.
    "str x4, [x1, #0x20]",
    "mov x15, #1",
    "6: cmp x12, x13",
    "b.lo 4b",
    // Not within five: lost; reported with its round, and the next one sent.
    "str x4, [x1, #0x8]",
    "add x5, x5, #1",
    "cmp x5, x9",
    "b.hs 9f",
    "5: add x4, x4, #1",
    "cmp x4, x6",
    "b.lo 3b",
    "9: mov x3, #1",
    "str x3, [x2, #8]", // stop vCPU 1
    "str x4, [x1]",     // rounds done
    "b .",
    // vCPU 1: its vectors, SGI 1 enabled in its redistributor, Group 1 at any priority.
    "20: adr x0, 30f",
    "msr vbar_el1, x0",
    // Its redistributor is the second of the region at 0x80a_0000; its SGI frame the
    // second 64 KiB of it.
    "movz x3, #0x80d, lsl #16",
    "mov w0, #2",
    "str w0, [x3, #0x100]", // GICR_ISENABLER0: SGI 1
    "movz x3, #0x800, lsl #16",
    "str w0, [x3]", // GICD_CTLR.EnableGrp1
    "mov x0, #0xf0",
    "msr S3_0_C4_C6_0, x0", // ICC_PMR_EL1
    "mov x0, #1",
    "msr S3_0_C12_C12_7, x0", // ICC_IGRPEN1_EL1
    "isb",
    "str x0, [x2, #16]", // ready
    "msr daifclr, #2",
    // Spins in guest code, no exit, until told to stop.
    "21: ldr x0, [x2, #8]",
    "cbz x0, 21b",
    "msr daifset, #2",
    "ldr x0, [x2]",
    "str x0, [x1, #0x10]", // its count
    "b .",
    ".balign 2048",
    "30:",
    ".skip 0x280",
    // EL1h IRQ: acknowledge, count SGI 1 (or another INTID), EOI; 1020 and up are spurious.
    "mrs x9, S3_0_C12_C12_0", // ICC_IAR1_EL1
    "and x9, x9, #0xffffff",
    "cmp x9, #1020",
    "b.hs 32f",
    "cmp x9, #1",
    "mov x13, #0",
    "mov x14, #24",
    "csel x13, x13, x14, eq",
    "ldr x14, [x2, x13]",
    "add x14, x14, #1",
    "str x14, [x2, x13]",
    "msr S3_0_C12_C12_1, x9", // ICC_EOIR1_EL1
    "32: eret",
    "guest_sgi_end:",
    ".text",
);

unsafe extern "C" {
    static guest_sgi: u8;
    static guest_sgi_end: u8;
}

/// What vCPU 1's thread and the main thread share.
struct Second {
    vcpu: i32,
    run: usize,
    /// vCPU 1's count as it reported it, or u64::MAX before.
    count: AtomicU64,
    /// The first unexpected thing (an errno, or an exit reason << 32 | address), 0 if none.
    bad: AtomicU64,
}

/// vCPU 1's thread: KVM_RUN until the guest reports its count.
extern "C" fn second_vcpu(arg: usize) -> i32 {
    // SAFETY: `arg` is the Second the main thread keeps until it joined this thread.
    let s = unsafe { &*(arg as *const Second) };
    let word = |off: usize| {
        // SAFETY: the kvm_run page stays mapped until the main thread joined this thread.
        unsafe { ((s.run + off) as *const u64).read_volatile() }
    };
    loop {
        let r = ioctl(s.vcpu, k::KVM_RUN, 0);
        let reason = word(k::run::EXIT_REASON) as u32;
        let addr = word(k::run::MMIO_PHYS_ADDR);
        match r {
            Err(EINTR) => continue,
            Ok(_) if reason == k::KVM_EXIT_MMIO && addr == MMIO + 0x10 => {
                s.count.store(word(k::run::MMIO_DATA), Ordering::Release);
                return 0;
            }
            r => {
                let code = match r {
                    Err(e) => e.0 as u64,
                    Ok(_) => (reason as u64) << 32 | addr,
                };
                s.bad.store(code.max(1), Ordering::Release);
                return 1;
            }
        }
    }
}

/// The VM: RAM with the guest's code, two vCPUs at its start, the vGICv3 at QEMU virt's
/// addresses; everything but `kvm` closed when dropped.
struct TwoVcpus {
    vm: i32,
    vcpus: [i32; 2],
    runs: [*mut u8; 2],
    run_size: usize,
    ram: *mut u8,
    gic: i32,
}

impl TwoVcpus {
    fn new(kvm: i32, code: &[u8]) -> Result<TwoVcpus, String> {
        let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
        let mut m = TwoVcpus {
            vm,
            vcpus: [-1; 2],
            runs: [core::ptr::null_mut(); 2],
            run_size: t!(ioctl(kvm, k::KVM_GET_VCPU_MMAP_SIZE, 0)),
            ram: core::ptr::null_mut(),
            gic: -1,
        };
        m.ram = t!(sys::mmap_anon(RAM_SIZE)) as *mut u8;
        // SAFETY: a fresh private mapping of RAM_SIZE bytes, the code shorter than DATA_OFF.
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), m.ram, code.len()) };
        t!(set_region(
            vm,
            &KvmUserspaceMemoryRegion {
                slot: 0,
                flags: 0,
                guest_phys_addr: RAM_IPA,
                memory_size: RAM_SIZE as u64,
                userspace_addr: m.ram as u64,
            }
        ));
        let mut init = KvmVcpuInit::default();
        t!(ioctl(
            vm,
            k::KVM_ARM_PREFERRED_TARGET,
            &mut init as *mut _ as usize
        ));
        init.features[0] |= 1 << k::KVM_ARM_VCPU_PSCI_0_2;
        for i in 0..2 {
            let vcpu = t!(ioctl(vm, k::KVM_CREATE_VCPU, i)) as i32;
            m.vcpus[i] = vcpu;
            t!(ioctl(
                vcpu,
                k::KVM_ARM_VCPU_INIT,
                &init as *const _ as usize
            ));
            let rw = PROT_READ | PROT_WRITE;
            m.runs[i] = t!(sys::mmap(0, m.run_size, rw, MAP_SHARED, vcpu, 0)) as *mut u8;
            t!(set_reg(vcpu, CoreReg::Pc.id(), RAM_IPA as u128));
        }
        let mut d = k::KvmCreateDevice {
            ty: v::KVM_DEV_TYPE_ARM_VGIC_V3,
            fd: 0,
            flags: 0,
        };
        t!(ioctl(vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize));
        m.gic = d.fd as i32;
        t!(place_vgic(
            m.gic,
            v::KVM_VGIC_V3_ADDR_TYPE_REDIST,
            0x80a_0000
        ));
        t!(init_vgic(m.gic));
        Ok(m)
    }

    fn word(&self, off: usize) -> u64 {
        // SAFETY: inside the RAM mapping; a plain load of a word the guest may be writing.
        unsafe { (self.ram.add(DATA_OFF + off) as *const u64).read_volatile() }
    }

    fn set_word(&self, off: usize, val: u64) {
        // SAFETY: as in `word`.
        unsafe { (self.ram.add(DATA_OFF + off) as *mut u64).write_volatile(val) }
    }

    fn run_u64(&self, i: usize, off: usize) -> u64 {
        // SAFETY: inside vCPU i's mapped kvm_run page.
        unsafe { (self.runs[i].add(off) as *const u64).read_volatile() }
    }
}

impl Drop for TwoVcpus {
    fn drop(&mut self) {
        for r in self.runs.iter().filter(|r| !r.is_null()) {
            let _ = sys::munmap(*r as usize, self.run_size);
        }
        if !self.ram.is_null() {
            let _ = sys::munmap(self.ram as usize, RAM_SIZE);
        }
        for fd in [self.gic, self.vcpus[0], self.vcpus[1]] {
            if fd >= 0 {
                let _ = sys::close(fd);
            }
        }
        let _ = sys::close(self.vm);
    }
}

/// vCPU 0 sends SGI 1 to vCPU 1 `ROUNDS` times, each as soon as vCPU 1's handler counted the
/// one before, while vCPU 1 spins in guest code with IRQs unmasked on another host CPU: every
/// SGI is taken, none lost to the exit its own kick causes while the previous instance is
/// still in vCPU 1's list register.
pub fn vgic_sgi_back_to_back() -> TestResult {
    let kvm = kvm!();
    let m = TwoVcpus::new(kvm, code!(guest_sgi, guest_sgi_end));
    let _ = sys::close(kvm);
    let m = m?;
    let cpus = sys::sched_getaffinity(0).map_or(1, |mask| mask.count_ones());
    let rounds = if cpus > 1 { ROUNDS } else { ROUNDS_ONE_CPU };
    m.set_word(ROUNDS_AT, rounds);
    m.set_word(MAX_LOST_AT, MAX_LOST);
    let second = Second {
        vcpu: m.vcpus[1],
        run: m.runs[1] as usize,
        count: AtomicU64::new(u64::MAX),
        bad: AtomicU64::new(0),
    };
    let t0 = sys::now_ns();
    let th = t!(spawn_thread(second_vcpu, &second as *const _ as usize, 0));
    // vCPU 0 here: rounds it could not finish (their numbers), then its end.
    let (mut lost, mut slow) = (Vec::new(), Vec::new());
    let outcome: Result<u64, String> = loop {
        match ioctl(m.vcpus[0], k::KVM_RUN, 0) {
            Err(EINTR) => continue,
            Err(e) => break Err(format!("vCPU 0's KVM_RUN: {e:?}")),
            Ok(_) => {
                let reason = m.run_u64(0, k::run::EXIT_REASON) as u32;
                let addr = m.run_u64(0, k::run::MMIO_PHYS_ADDR);
                let data = m.run_u64(0, k::run::MMIO_DATA);
                match (reason, addr) {
                    (k::KVM_EXIT_MMIO, a) if a == MMIO + 8 => lost.push(data),
                    (k::KVM_EXIT_MMIO, a) if a == MMIO + 0x20 => slow.push(data),
                    (k::KVM_EXIT_MMIO, MMIO) => break Ok(data),
                    (k::KVM_EXIT_MMIO, a) if a == MMIO + 0x18 => {
                        break Err("vCPU 1 never got ready".into());
                    }
                    _ => break Err(format!("vCPU 0: exit {reason}, address {addr:#x}")),
                }
            }
        }
    };
    // Whatever vCPU 0 did, vCPU 1 is to stop spinning and report.
    m.set_word(STOP, 1);
    th.join();
    let ms = (sys::now_ns() - t0) / 1_000_000;
    let sent = outcome?;
    check_eq!(second.bad.load(Ordering::Acquire), 0, "vCPU 1's thread");
    let count = second.count.load(Ordering::Acquire);
    println!(
        "    # {sent} rounds of {rounds} in {ms} ms: vCPU 1 counted {count}, {} lost (rounds {lost:?}), {} \
         taken after more than a second (rounds {slow:?})",
        lost.len(),
        slow.len()
    );
    check!(
        lost.is_empty(),
        "{} SGIs lost (rounds {lost:?}, giving up at {MAX_LOST})",
        lost.len()
    );
    check_eq!(sent, rounds, "rounds");
    check_eq!(count, rounds, "SGIs counted by vCPU 1");
    check_eq!(m.word(COUNT), rounds);
    check_eq!(m.word(OTHER), 0, "other INTIDs acknowledged");
    Ok(())
}
