//! guest_memfd (KVM_CREATE_GUEST_MEMFD): the capabilities, the file's own rules (fixed size,
//! no read or write, fallocate with KEEP_SIZE in whole pages, mmap only MAP_SHARED and only
//! with GUEST_MEMFD_FLAG_MMAP, fstat), memory slots bound to it through
//! KVM_SET_USER_MEMORY_REGION2 and their errors in Linux's order, and a guest running beside
//! such a slot: what it writes the VMM reads through its mapping of the file and back, and a
//! punched hole reads zero on both sides.

use super::*;
use svelt_abi::uapi::kvm_gmem::{self as kg, KvmCreateGuestMemfd, KvmUserspaceMemoryRegion2};

/// Where the guest_memfd slot lies (two pages), and the pattern the guest writes.
const GMEM_IPA: u64 = 0x100_0000;
const PATTERN: u64 = 0x6d65_6d66_645f_6f6b;
const VMM_WORD: u64 = 0x0766_6d6d_5f73_6179;
const FALLOCATE: usize = 47;

core::arch::global_asm!(
    ".section .rodata.guests, \"a\"",
    ".balign 4",
    // x1: the guest_memfd slot. Reads the VMM's word at +16, writes PATTERN (x5) to both
    // pages, exits with the word; then reads both pages again (after the VMM punched the
    // first) and exits with the first; then reads the first again (the file is gone).
    ".global guest_gmem, guest_gmem_end",
    "guest_gmem:",
    "movz x9, #0x1000, lsl #16",
    "ldr x4, [x1, #16]",
    "add x8, x1, #4096",
    "str x5, [x1]",
    "str x5, [x8]",
    "str x4, [x9]",
    "ldr x6, [x1]",
    "ldr x10, [x8]",
    "str x6, [x9]",
    "ldr x11, [x1]",
    "b .",
    "guest_gmem_end:",
);

extern "C" {
    static guest_gmem: u8;
    static guest_gmem_end: u8;
}

fn create_gmem(vm: i32, size: u64, flags: u64) -> SysResult<i32> {
    let a = KvmCreateGuestMemfd {
        size,
        flags,
        reserved: [0; 6],
    };
    ioctl(vm, kg::KVM_CREATE_GUEST_MEMFD, &a as *const _ as usize).map(|fd| fd as i32)
}

fn region2(vm: i32, slot: u32, flags: u32, gpa: u64, size: u64, fd: i32, off: u64) -> SysResult {
    let r = KvmUserspaceMemoryRegion2 {
        slot,
        flags,
        guest_phys_addr: gpa,
        memory_size: size,
        userspace_addr: 0,
        guest_memfd_offset: off,
        guest_memfd: fd as u32,
        ..Default::default()
    };
    ioctl(vm, k::KVM_SET_USER_MEMORY_REGION2, &r as *const _ as usize)
}

fn fallocate(fd: i32, mode: usize, off: u64, len: u64) -> SysResult {
    sys::syscall(FALLOCATE, &[fd as usize, mode, off as usize, len as usize])
}

fn word(p: *mut u8, off: usize) -> u64 {
    // SAFETY: callers pass offsets inside a live shared mapping of the guest_memfd.
    unsafe { (p.add(off) as *const u64).read_volatile() }
}

/// The capabilities, the file's rules and the slots' errors, on a VM without vCPUs.
pub fn guest_memfd_file() -> TestResult {
    let kvm = kvm!();
    check_eq!(
        ioctl(
            kvm,
            k::KVM_CHECK_EXTENSION,
            kg::KVM_CAP_GUEST_MEMFD as usize
        ),
        Ok(1)
    );
    check_eq!(
        ioctl(
            kvm,
            k::KVM_CHECK_EXTENSION,
            kg::KVM_CAP_GUEST_MEMFD_FLAGS as usize
        ),
        Ok(3)
    );
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    check_eq!(
        ioctl(
            vm,
            k::KVM_CHECK_EXTENSION,
            kg::KVM_CAP_GUEST_MEMFD_FLAGS as usize
        ),
        Ok(3)
    );
    // Known flags only, then a positive size in whole pages.
    check_eq!(create_gmem(vm, 4096, 4), Err(EINVAL));
    check_eq!(create_gmem(vm, 0, 0), Err(EINVAL));
    check_eq!(create_gmem(vm, 4095, 0), Err(EINVAL));
    check_eq!(create_gmem(vm, 1 << 63, 0), Err(EINVAL));
    let size = 4 * 4096u64;
    let fd = t!(create_gmem(vm, size, kg::GUEST_MEMFD_FLAGS));
    // Not close-on-exec; no read or write of any kind; the size never changes.
    check_eq!(sys::fcntl(fd, F_GETFD, 0), Ok(0));
    let mut buf = [0u8; 64];
    check_eq!(sys::read(fd, &mut buf), Err(EINVAL));
    check_eq!(sys::write(fd, &buf), Err(EINVAL));
    check_eq!(sys::pread(fd, &mut buf, 0), Err(ESPIPE));
    check_eq!(sys::pwrite(fd, &buf, 0), Err(ESPIPE));
    check_eq!(sys::ftruncate(fd, 2 * size), Err(EINVAL));
    let st = t!(sys::fstat(fd));
    check_eq!(st.st_size, size as i64);
    check_eq!(st.st_blksize, 4096);
    check_eq!(st.st_mode & 0o170000, 0o100000, "a regular file");
    let other = t!(create_gmem(vm, 4096, 0));
    check!(
        t!(sys::fstat(other)).st_ino != st.st_ino,
        "each its own inode"
    );
    // mmap: only with GUEST_MEMFD_FLAG_MMAP, only shared.
    check_eq!(
        sys::mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, other, 0),
        Err(ENODEV)
    );
    check_eq!(
        sys::mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0),
        Err(EINVAL)
    );
    // fallocate: KEEP_SIZE always, whole pages, allocation inside the file, holes anywhere.
    check_eq!(fallocate(fd, 0, 0, 4096), Err(EOPNOTSUPP));
    check_eq!(fallocate(fd, 1, 0, size), Ok(0));
    check_eq!(fallocate(fd, 1, size, 4096), Err(EINVAL));
    check_eq!(fallocate(fd, 3, 4095, 4096), Err(EINVAL));
    check_eq!(fallocate(fd, 3, 4096, 4095), Err(EINVAL));
    check_eq!(fallocate(fd, 3, size + 4096, 4096), Ok(0));
    check_eq!(fallocate(fd, 3, 4096, 4096), Ok(0));

    // Slots: the v1 call knows no guest_memfd; a guest_memfd slot is neither read-only nor
    // logging; its offset is page-aligned and inside the file.
    let v1 = KvmUserspaceMemoryRegion {
        slot: 1,
        flags: kg::KVM_MEM_GUEST_MEMFD,
        guest_phys_addr: GMEM_IPA,
        memory_size: 4096,
        userspace_addr: 0,
    };
    check_eq!(set_region(vm, &v1), Err(EINVAL));
    let g = kg::KVM_MEM_GUEST_MEMFD;
    check_eq!(
        region2(vm, 1, g | k::KVM_MEM_READONLY, GMEM_IPA, 4096, fd, 0),
        Err(EINVAL)
    );
    check_eq!(
        region2(vm, 1, g | k::KVM_MEM_LOG_DIRTY_PAGES, GMEM_IPA, 4096, fd, 0),
        Err(EINVAL)
    );
    check_eq!(region2(vm, 1, g, GMEM_IPA, 4096, fd, 100), Err(EINVAL));
    check_eq!(region2(vm, 1, g, GMEM_IPA, 4096, fd, size), Err(EINVAL));
    check_eq!(
        region2(vm, 1, g, GMEM_IPA, 4096, fd, (i64::MAX as u64) & !4095),
        Err(EINVAL)
    );
    // The descriptor: open (EBADF), a guest_memfd (EINVAL), of this VM (EINVAL), mappable
    // (arm64 has no private-only memory: EINVAL).
    check_eq!(region2(vm, 1, g, GMEM_IPA, 4096, 1000, 0), Err(EBADF));
    check_eq!(region2(vm, 1, g, GMEM_IPA, 4096, vm, 0), Err(EINVAL));
    let vm2 = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    let foreign = t!(create_gmem(vm2, size, kg::GUEST_MEMFD_FLAGS));
    check_eq!(region2(vm, 1, g, GMEM_IPA, 4096, foreign, 0), Err(EINVAL));
    check_eq!(region2(vm, 1, g, GMEM_IPA, 4096, other, 0), Err(EINVAL));
    // Bound: two slots on different pages of the file; the same page twice is EEXIST, as is an
    // overlap in guest memory (checked before the descriptor).
    check_eq!(region2(vm, 1, g, GMEM_IPA, 2 * 4096, fd, 0), Ok(0));
    check_eq!(
        region2(vm, 2, g, GMEM_IPA + 0x10_0000, 4096, fd, 4096),
        Err(EEXIST)
    );
    check_eq!(
        region2(vm, 2, g, GMEM_IPA + 4096, 4096, 1000, 0),
        Err(EEXIST)
    );
    check_eq!(
        region2(vm, 2, g, GMEM_IPA + 0x10_0000, 4096, fd, 2 * 4096),
        Ok(0)
    );
    // A guest_memfd slot can only be deleted; then its pages may be bound again.
    check_eq!(region2(vm, 1, g, GMEM_IPA, 2 * 4096, fd, 0), Err(EINVAL));
    check_eq!(region2(vm, 1, 0, GMEM_IPA, 2 * 4096, fd, 0), Err(EINVAL));
    check_eq!(region2(vm, 1, 0, GMEM_IPA, 0, 0, 0), Ok(0));
    check_eq!(
        region2(vm, 3, g, GMEM_IPA + 0x20_0000, 4096, fd, 4096),
        Ok(0)
    );
    // The file outlives its VM's descriptor (it holds the VM) and still works.
    t!(sys::close(vm));
    let p = t!(sys::mmap(
        0,
        size as usize,
        PROT_READ | PROT_WRITE,
        MAP_SHARED,
        fd,
        0
    )) as *mut u8;
    // SAFETY: inside the fresh shared mapping of `size` bytes.
    unsafe { (p.add(8) as *mut u64).write_volatile(VMM_WORD) };
    check_eq!(word(p, 8), VMM_WORD);
    check_eq!(fallocate(fd, 3, 0, 4096), Ok(0));
    check_eq!(word(p, 8), 0, "a punched page reads zero");
    t!(sys::munmap(p as usize, size as usize));
    for f in [fd, other, foreign, vm2, kvm] {
        t!(sys::close(f));
    }
    Ok(())
}

/// A guest with a slot of guest_memfd memory: it reads what the VMM wrote through its
/// mapping of the file and writes a pattern the VMM reads there; a hole punched in the file
/// reads zero on both sides while the other page keeps the pattern; once the file is closed
/// the guest's access there is a memory fault.
pub fn guest_memfd_guest() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_gmem, guest_gmem_end)));
    let size = 2 * 4096usize;
    let fd = t!(create_gmem(g.vm, size as u64, kg::GUEST_MEMFD_FLAGS));
    t!(region2(
        g.vm,
        1,
        kg::KVM_MEM_GUEST_MEMFD,
        GMEM_IPA,
        size as u64,
        fd,
        0
    ));
    let p = t!(sys::mmap(
        0,
        size,
        PROT_READ | PROT_WRITE,
        MAP_SHARED,
        fd,
        0
    )) as *mut u8;
    // SAFETY: inside the shared mapping of `size` bytes.
    unsafe { (p.add(16) as *mut u64).write_volatile(VMM_WORD) };
    t!(set_reg(g.vcpu, x(1), GMEM_IPA as u128));
    t!(set_reg(g.vcpu, x(5), PATTERN as u128));
    let (addr, data, _, write) = g.run_to_mmio()?;
    check_eq!((addr, write), (MMIO, true));
    check_eq!(data, VMM_WORD, "what the guest read of the VMM's write");
    check_eq!(
        word(p, 0),
        PATTERN,
        "the guest's write, through the VMM's mapping"
    );
    check_eq!(word(p, 4096), PATTERN);
    check_eq!(word(p, 16), VMM_WORD);
    check_eq!(fallocate(fd, 3, 0, 4096), Ok(0));
    check_eq!(word(p, 0), 0, "the punched page through the mapping");
    check_eq!(word(p, 16), 0);
    check_eq!(word(p, 4096), PATTERN, "the other page");
    let (_, data, _, _) = g.run_to_mmio()?;
    check_eq!(data, 0, "the punched page as the guest reads it");
    check_eq!(get_reg(g.vcpu, x(10)), Ok(PATTERN as u128));
    // Closed and unmapped, the file is gone: the guest's next access there ends KVM_RUN with
    // EFAULT and a memory-fault exit naming the page.
    t!(sys::munmap(p as usize, size));
    t!(sys::close(fd));
    check_eq!(g.run(), Err(EFAULT));
    check_eq!(g.exit_reason(), kg::KVM_EXIT_MEMORY_FAULT);
    check_eq!(g.run_u64(k::run::U), 0, "memory_fault.flags");
    check_eq!(g.run_u64(k::run::U + 8), GMEM_IPA, "memory_fault.gpa");
    check_eq!(g.run_u64(k::run::U + 16), 4096, "memory_fault.size");
    Ok(())
}
