//! The dirty ring (KVM_CAP_DIRTY_LOG_RING_ACQ_REL): the capabilities' answers, ENABLE_CAP's
//! errors in Linux's order, the ring mapped from the vCPU's file (shared only, never
//! executable), a guest's writes to a logging slot read back from the ring as exactly those
//! (slot, offset) entries in order, KVM_RESET_DIRTY_RINGS counting the harvested entries and
//! write-protecting their pages again, a ring at its soft limit ending KVM_RUN with
//! KVM_EXIT_DIRTY_RING_FULL, and GET_DIRTY_LOG refused without KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP.

use super::*;
use svelt_abi::uapi::kvm_dirty_ring as dr;

/// The logging slot: 256 pages, more than a one-page ring's soft limit.
const RING_SLOT: u32 = 1;
const RING_PAGES: u64 = 256;
/// A one-page ring: 256 entries, 192 of them before the soft limit.
const RING_BYTES: usize = 4096;
const SOFT_LIMIT: usize = 192;

fn enable(vm: i32, cap: u64, flags: u32, arg0: u64) -> SysResult {
    // `struct kvm_enable_cap`: cap, flags, args[4], pad[64].
    let mut c = [0u64; 13];
    c[0] = cap | (flags as u64) << 32;
    c[1] = arg0;
    ioctl(vm, k::KVM_ENABLE_CAP, c.as_ptr() as usize)
}

fn check(fd: i32, cap: u64) -> SysResult {
    ioctl(fd, k::KVM_CHECK_EXTENSION, cap as usize)
}

fn reset(vm: i32) -> SysResult {
    ioctl(vm, dr::KVM_RESET_DIRTY_RINGS, 0)
}

/// A VM with a ring of `ring` bytes (and the bitmaps too if `with_bitmap`), then guest RAM in
/// slot 0 holding `guest_dirty`, one vCPU, and a logging slot of RING_PAGES pages.
fn ring_guest(kvm: i32, ring: u64, with_bitmap: bool) -> Result<(Guest, usize), String> {
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    t!(enable(vm, dr::KVM_CAP_DIRTY_LOG_RING_ACQ_REL, 0, ring));
    if with_bitmap {
        t!(enable(vm, dr::KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP, 0, 0));
    }
    let g = Guest::in_vm(kvm, vm, code!(guest_dirty, guest_dirty_end), 0)?;
    let log = t!(sys::mmap_anon((RING_PAGES * 4096) as usize));
    t!(set_region(
        vm,
        &KvmUserspaceMemoryRegion {
            slot: RING_SLOT,
            flags: k::KVM_MEM_LOG_DIRTY_PAGES,
            guest_phys_addr: LOG_IPA,
            memory_size: RING_PAGES * 4096,
            userspace_addr: log as u64,
        }
    ));
    Ok((g, log))
}

/// The VMM's view of a vCPU's ring, and the next entry it will read.
struct RingView {
    base: usize,
    entries: usize,
    next: usize,
}

impl RingView {
    fn flags(&self, i: usize) -> &AtomicU32 {
        let at = self.base + (i % self.entries) * 16;
        // SAFETY: `at` is a 4-aligned word of the shared ring mapping, which lives while the
        // test holds the view; the kernel writes the word too, hence the atomic.
        unsafe { &*(at as *const AtomicU32) }
    }

    fn entry(&self, i: usize) -> (u32, u32, u64) {
        let at = self.base + (i % self.entries) * 16;
        let flags = self.flags(i).load(Ordering::Acquire);
        // SAFETY: inside the ring mapping; read after the flags' acquire.
        let (slot, off) = unsafe {
            (
                ((at + 4) as *const u32).read_volatile(),
                ((at + 8) as *const u64).read_volatile(),
            )
        };
        (flags, slot, off)
    }

    /// Reads the DIRTY entries from `next` on, marks each harvested (RESET) and returns
    /// their (slot, offset)s.
    fn harvest(&mut self) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        loop {
            let (flags, slot, off) = self.entry(self.next);
            if flags != dr::KVM_DIRTY_GFN_F_DIRTY {
                break;
            }
            out.push((slot, off));
            self.flags(self.next)
                .store(dr::KVM_DIRTY_GFN_F_RESET, Ordering::Release);
            self.next += 1;
        }
        out
    }
}

fn in_slot(pages: &[u64]) -> Vec<(u32, u64)> {
    pages.iter().map(|&p| (RING_SLOT, p)).collect()
}

/// The capabilities, and KVM_ENABLE_CAP's checks in Linux's order
/// (`kvm_vm_ioctl_enable_dirty_log_ring`, `kvm_vm_ioctl_enable_cap_generic`).
pub fn dirty_ring_caps() -> TestResult {
    let kvm = kvm!();
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    for fd in [kvm, vm] {
        check_eq!(check(fd, dr::KVM_CAP_DIRTY_LOG_RING), Ok(0), "TSO ring");
        check_eq!(
            check(fd, dr::KVM_CAP_DIRTY_LOG_RING_ACQ_REL),
            Ok(65536 * 16),
            "the largest ring"
        );
        check_eq!(check(fd, dr::KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP), Ok(1));
    }
    let acq = dr::KVM_CAP_DIRTY_LOG_RING_ACQ_REL;
    check_eq!(reset(vm), Err(EINVAL), "reset without rings");
    check_eq!(
        enable(vm, dr::KVM_CAP_DIRTY_LOG_RING, 0, 4096),
        Err(EINVAL),
        "TSO ring"
    );
    check_eq!(
        enable(vm, dr::KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP, 0, 0),
        Err(EINVAL),
        "bitmap before a ring"
    );
    check_eq!(enable(vm, acq, 0, 0), Err(EINVAL), "size 0");
    check_eq!(
        enable(vm, acq, 0, 3 * 4096),
        Err(EINVAL),
        "not a power of 2"
    );
    check_eq!(enable(vm, acq, 0, 512), Err(EINVAL), "under the reserve");
    check_eq!(enable(vm, acq, 0, 2048), Err(EINVAL), "under a page");
    check_eq!(enable(vm, acq, 0, 2 << 20), Err(E2BIG), "past the largest");
    // The flags are not looked at; only the low 32 bits of the size count.
    check_eq!(enable(vm, acq, 1, 1 << 32 | 8192), Ok(0));
    check_eq!(enable(vm, acq, 0, 4096), Err(EINVAL), "set once");
    check_eq!(enable(vm, acq, 0, 2 << 20), Err(E2BIG), "size before once");
    check_eq!(reset(vm), Ok(0), "reset with no vCPU");
    check_eq!(
        enable(vm, dr::KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP, 1, 0),
        Err(EINVAL),
        "bitmap flags"
    );
    let mem = t!(sys::mmap_anon(4096));
    t!(set_region(
        vm,
        &KvmUserspaceMemoryRegion {
            slot: 0,
            flags: 0,
            guest_phys_addr: RAM_IPA,
            memory_size: 4096,
            userspace_addr: mem as u64,
        }
    ));
    check_eq!(
        enable(vm, dr::KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP, 0, 0),
        Err(EINVAL),
        "bitmap after a slot"
    );
    t!(sys::close(vm));
    t!(sys::munmap(mem, 4096));

    // After a vCPU: the size's own errors still first.
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    let vcpu = t!(ioctl(vm, k::KVM_CREATE_VCPU, 0)) as i32;
    check_eq!(enable(vm, acq, 0, 2 << 20), Err(E2BIG));
    check_eq!(enable(vm, acq, 0, 4096), Err(EINVAL), "after a vCPU");
    t!(sys::close(vcpu));
    t!(sys::close(vm));
    t!(sys::close(kvm));
    Ok(())
}

/// A guest writing known pages: the ring holds exactly those, in order; the reset counts the
/// harvested ones and write-protects them, so the next write is logged again; a ring at its
/// soft limit stops the vCPU until the reset.
pub fn dirty_ring_guest() -> TestResult {
    let kvm = kvm!();
    let (g, log) = t!(ring_guest(kvm, RING_BYTES as u64, false));
    let off = (dr::KVM_DIRTY_LOG_PAGE_OFFSET * 4096) as usize;
    check_eq!(
        sys::mmap(0, RING_BYTES, PROT_READ, MAP_PRIVATE, g.vcpu, off),
        Err(EINVAL),
        "mapped private"
    );
    check_eq!(
        sys::mmap(
            0,
            RING_BYTES,
            PROT_READ | PROT_EXEC,
            MAP_SHARED,
            g.vcpu,
            off
        ),
        Err(EPERM),
        "mapped executable (KVM's files are on a noexec mount)"
    );
    let base = t!(sys::mmap(
        0,
        RING_BYTES,
        PROT_READ | PROT_WRITE,
        MAP_SHARED,
        g.vcpu,
        off
    ));
    let mut ring = RingView {
        base,
        entries: RING_BYTES / 16,
        next: 0,
    };
    check_eq!(ring.entry(0), (0, 0, 0), "an empty ring");
    let mut bits = [0u64; 2];
    check_eq!(
        get_log(g.vm, RING_SLOT, &mut bits),
        Err(ENXIO),
        "GET_DIRTY_LOG with rings alone"
    );
    check_eq!(
        clear_log(g.vm, RING_SLOT, 0, 64, bits.as_ptr() as u64),
        Err(ENXIO)
    );

    t!(write_pages(&g, LOG_IPA, &[0, 3, 64, 200]));
    // A page written again while still writable is not logged again.
    t!(write_pages(&g, LOG_IPA, &[3]));
    check_eq!(ring.entry(4).0, 0, "no fifth entry");
    check_eq!(
        ring.harvest(),
        in_slot(&[0, 3, 64, 200]),
        "the pages written"
    );
    check_eq!(ring.entry(0).0, dr::KVM_DIRTY_GFN_F_RESET);
    check_eq!(reset(g.vm), Ok(4), "the harvested entries");
    check_eq!(ring.entry(0).0, 0, "taken back");
    check_eq!(reset(g.vm), Ok(0), "nothing more");
    // Write-protected again by the reset: logged once more.
    t!(write_pages(&g, LOG_IPA, &[3, 64]));
    check_eq!(
        ring.harvest(),
        in_slot(&[3, 64]),
        "rewritten after the reset"
    );
    // Harvested but not reset yet: still writable, not logged.
    t!(write_pages(&g, LOG_IPA, &[3]));
    check_eq!(ring.harvest(), in_slot(&[]), "written before the reset");
    check_eq!(reset(g.vm), Ok(2));

    // The soft limit: 192 entries stop the vCPU before its next entry.
    // Every page is write-protected now: each of the list faults once.
    let pages: Vec<u64> = (0..RING_PAGES - 20).collect();
    for (i, &p) in pages.iter().enumerate() {
        g.set_data(8 * i, p);
    }
    g.set_data(8 * pages.len(), u64::MAX);
    t!(set_reg(g.vcpu, x(3), LOG_IPA as u128));
    t!(set_reg(g.vcpu, x(4), (RAM_IPA + DATA_OFF as u64) as u128));
    t!(g.run());
    check_eq!(g.exit_reason(), dr::KVM_EXIT_DIRTY_RING_FULL, "soft limit");
    t!(g.run());
    check_eq!(g.exit_reason(), dr::KVM_EXIT_DIRTY_RING_FULL, "still full");
    let got = ring.harvest();
    check_eq!(got.len(), SOFT_LIMIT, "entries at the limit");
    check_eq!(got, in_slot(&pages[..SOFT_LIMIT]), "in the guest's order");
    // Harvested but not reset: still full.
    t!(g.run());
    check_eq!(g.exit_reason(), dr::KVM_EXIT_DIRTY_RING_FULL, "not reset");
    check_eq!(reset(g.vm), Ok(SOFT_LIMIT));
    let (addr, _, _, write) = t!(g.run_to_mmio());
    check_eq!((addr, write), (MMIO, true), "the guest's done");
    // The last store faulted, was logged and then waited: the reset protected its page
    // again, so it faults and is logged once more when it is retried.
    check_eq!(
        ring.harvest(),
        in_slot(&pages[SOFT_LIMIT - 1..]),
        "the rest after the reset"
    );
    check_eq!(reset(g.vm), Ok(pages.len() - SOFT_LIMIT + 1));
    t!(sys::munmap(base, RING_BYTES));
    drop(g);
    t!(sys::munmap(log, (RING_PAGES * 4096) as usize));

    // With the bitmaps too: GET_DIRTY_LOG works, and a running vCPU's writes go to its ring
    // rather than the bitmap.
    let kvm = kvm!();
    let (g, log) = t!(ring_guest(kvm, RING_BYTES as u64, true));
    let base = t!(sys::mmap(
        0,
        RING_BYTES,
        PROT_READ | PROT_WRITE,
        MAP_SHARED,
        g.vcpu,
        off
    ));
    let mut ring = RingView {
        base,
        entries: RING_BYTES / 16,
        next: 0,
    };
    t!(write_pages(&g, LOG_IPA, &[1, 2]));
    t!(get_log(g.vm, RING_SLOT, &mut bits));
    check_eq!(bits, [0, 0], "the bitmap with a running vCPU's writes");
    check_eq!(ring.harvest(), in_slot(&[1, 2]), "the ring with the bitmap");
    check_eq!(reset(g.vm), Ok(2));
    t!(sys::munmap(base, RING_BYTES));
    drop(g);
    t!(sys::munmap(log, (RING_PAGES * 4096) as usize));
    Ok(())
}
