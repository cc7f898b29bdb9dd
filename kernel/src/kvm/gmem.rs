//! guest_memfd: guest memory that is a file of its own rather than the VMM's address space
//! (virt/kvm/guest_memfd.c; Documentation/virt/kvm/api.rst, KVM_CREATE_GUEST_MEMFD).
//!
//! KVM_CREATE_GUEST_MEMFD makes a file of a fixed size bound to its VM: it cannot be read,
//! written or resized; fallocate allocates its pages or punches holes (KEEP_SIZE, whole
//! pages); with GUEST_MEMFD_FLAG_MMAP it may be mapped MAP_SHARED, and with
//! GUEST_MEMFD_FLAG_INIT_SHARED such a mapping faults its pages in (without, and past the end,
//! SIGBUS). A memory slot made with KVM_MEM_GUEST_MEMFD (KVM_SET_USER_MEMORY_REGION2) takes
//! the guest's pages from the file at `guest_memfd_offset`, whatever `userspace_addr` says, so
//! the guest and every mapping of the file share the same frames.
//!
//! The file holds its VM (Linux's kvm_get_kvm in __kvm_gmem_create); the VM's slots hold the
//! file only weakly (a binding), so that closing the file, and unmapping it, frees its pages
//! and ends the bindings (kvm_gmem_release): the guest's next fault there is EFAULT. Locks: a
//! VM's `inner`, then a file's `bindings`, then its `pages`; never the VMM's address space
//! after the VM's.

use super::vcpu::Vcpu;
use super::vm::{Fault, Vm};
use crate::fs::{Caller, File, FileOps};
use crate::mm::aspace::MappedFile;
use crate::mm::frame::Page;
use crate::mm::uaccess::UserPtr;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{Stat, O_RDWR, S_IFREG};
use svelt_abi::uapi::kvm_gmem::{self as kg, KvmCreateGuestMemfd, KvmUserspaceMemoryRegion2};

const PAGE: u64 = 4096;

/// One guest_memfd's pages and bindings (Linux's inode and gmem_file together: Svelt opens
/// each only once).
pub struct Gmem {
    vm: Arc<Vm>,
    size: u64,
    flags: u64,
    ino: u64,
    /// The pages allocated so far, by page index in the file.
    pages: Mutex<BTreeMap<u64, Page>>,
    /// The slots bound to the file: (slot id, first page in the file, pages, guest address).
    bindings: Mutex<Vec<(u32, u64, u64, u64)>>,
}

/// A memory slot's binding to its guest_memfd (kept in the VM's `inner.gmem`).
pub struct Binding {
    gmem: Weak<Gmem>,
    /// The slot's first page in the file.
    pgoff: u64,
}

impl Gmem {
    /// The frame of page `index`, allocated (zeroed) on first use.
    fn page(&self, index: u64) -> SysResult<Page> {
        let mut pages = self.pages.lock();
        if let Some(p) = pages.get(&index) {
            return Ok(p.clone());
        }
        let p = Page::new_user().ok_or(Errno::ENOMEM)?;
        pages.insert(index, p.clone());
        Ok(p)
    }

    /// Frees pages [start, end) (kvm_gmem_punch_hole): the guest's leaves on them go first,
    /// then the pages, then every mapping of them, so each side reads zero from then on.
    fn punch_hole(&self, start: u64, end: u64) {
        let gone: Vec<Page> = {
            let mut inner = self.vm.inner.lock();
            let mut any = false;
            for &(_, first, n, gpa) in self.bindings.lock().iter() {
                let (lo, hi) = (start.max(first), end.min(first + n));
                if lo < hi {
                    let at = gpa + (lo - first) * PAGE;
                    any |= inner.s2.unmap(at, at + (hi - lo) * PAGE);
                }
            }
            if any {
                self.vm.flush_tlbs();
            }
            let mut pages = self.pages.lock();
            let keys: Vec<u64> = pages.range(start..end).map(|(&k, _)| k).collect();
            keys.iter().filter_map(|k| pages.remove(k)).collect()
        };
        drop(gone);
        crate::mm::aspace::file_range_gone(
            crate::mm::aspace::file_key(self),
            start * PAGE,
            end.saturating_mul(PAGE),
        );
    }
}

impl MappedFile for Gmem {
    /// A page a mapping faults in (kvm_gmem_fault_user_mapping): SIGBUS past the end, and for
    /// a file whose memory is not shared with the host (no INIT_SHARED).
    fn cache_page(&self, index: u64) -> SysResult<Page> {
        if index.saturating_mul(PAGE) >= self.size
            || self.flags & kg::GUEST_MEMFD_FLAG_INIT_SHARED == 0
        {
            return Err(Errno::EFAULT);
        }
        self.page(index)
    }
    fn file_ino(&self) -> u64 {
        self.ino
    }
    fn file_perm(&self) -> u32 {
        0o600
    }
}

impl Drop for Gmem {
    /// The file is closed and unmapped (kvm_gmem_release): its slots lose their pages.
    fn drop(&mut self) {
        // The last reference may go on a path that holds the VM's lock already (a racing
        // close while a slot is deleted): then the leaves stay until the slot or the VM goes.
        let Some(mut inner) = self.vm.inner.try_lock() else {
            return;
        };
        let mut any = false;
        for &(_, _, n, gpa) in self.bindings.get_mut().iter() {
            any |= inner.s2.unmap(gpa, gpa + n * PAGE);
        }
        if any {
            self.vm.flush_tlbs();
        }
    }
}

/// The open guest_memfd (`anon_inode:[kvm-gmem]`).
pub struct GmemFile(Arc<Gmem>);

impl FileOps for GmemFile {
    // The file has no read or write operation: both are EINVAL (vfs_read, vfs_write), and
    // it is not seekable, so pread and pwrite are ESPIPE (the defaults).
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn mmap_file(&self) -> Option<Arc<dyn MappedFile>> {
        // Without GUEST_MEMFD_FLAG_MMAP, ENODEV (kvm_gmem_mmap).
        (self.0.flags & kg::GUEST_MEMFD_FLAG_MMAP != 0)
            .then(|| self.0.clone() as Arc<dyn MappedFile>)
    }
    fn mmap_shared_only(&self) -> bool {
        true
    }
    fn stat(&self) -> Option<Stat> {
        let pages = self.0.pages.lock().len() as i64;
        Some(Stat {
            st_dev: 15,
            st_ino: self.0.ino,
            st_mode: S_IFREG | 0o600,
            st_nlink: 1,
            st_size: self.0.size as i64,
            st_blksize: PAGE as i32,
            st_blocks: pages * (PAGE as i64 / 512),
            ..Default::default()
        })
    }
    fn fallocate(&self, mode: i32, offset: u64, len: u64) -> SysResult<usize> {
        match kg::fallocate(mode, offset, len, self.0.size, PAGE)? {
            kg::Fallocate::PunchHole { start, end } => self.0.punch_hole(start, end),
            kg::Fallocate::Allocate { start, end } => {
                for i in start..end {
                    self.0.page(i)?;
                }
            }
        }
        Ok(0)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// KVM_CREATE_GUEST_MEMFD: a new descriptor, not close-on-exec (get_unused_fd_flags(0)).
pub fn create(vm: &Arc<Vm>, cur: &dyn Caller, arg: usize) -> SysResult<usize> {
    let a = UserPtr::<KvmCreateGuestMemfd>::new(arg).read()?;
    kg::check_create(&a, PAGE)?;
    let gmem = Arc::new(Gmem {
        vm: vm.clone(),
        size: a.size,
        flags: a.flags,
        ino: crate::fs::new_ino(),
        pages: Mutex::new(BTreeMap::new()),
        bindings: Mutex::new(Vec::new()),
    });
    let f = File::new(
        None,
        Arc::new(GmemFile(gmem)),
        O_RDWR,
        String::from("anon_inode:[kvm-gmem]"),
    );
    cur.files()
        .lock()
        .install(cur, f, false)
        .map(|fd| fd as usize)
}

/// What a new guest_memfd slot binds: the file and the offset, or why the descriptor cannot
/// be bound (reported after the slot checks that come first in Linux).
pub type ToBind = Result<(Arc<Gmem>, u64), Errno>;

/// KVM_SET_USER_MEMORY_REGION2.
pub fn set_region2(vm: &Vm, cur: &dyn Caller, arg: usize) -> SysResult<usize> {
    let r = UserPtr::<KvmUserspaceMemoryRegion2>::new(arg).read()?;
    let checked = kg::check_region2(
        &r,
        PAGE,
        crate::mm::aspace::USER_END as u64,
        1u64 << vm.ipa_bits,
    )?;
    let bind = checked.gmem.map(|(fd, off)| -> ToBind {
        let f = cur.files().lock().get(fd as i32)?;
        // kvm_gmem_prepare_memory_region: a guest_memfd of this VM.
        match f.ops.as_any().downcast_ref::<GmemFile>() {
            Some(g) if core::ptr::eq(Arc::as_ptr(&g.0.vm), vm) => Ok((g.0.clone(), off)),
            _ => Err(Errno::EINVAL),
        }
    });
    vm.change_region(checked.change, bind)
}

/// Binds slot `slot` (`size` bytes at `gpa`) to its file, after the VM's own checks passed
/// (the caller holds the VM's `inner`): the rest of kvm_gmem_prepare_memory_region (the range
/// inside the file), arm64's kvm_arch_prepare_memory_region (only mappable guest_memfd), and
/// kvm_gmem_commit_memory_region (no page of the file bound twice: EEXIST).
pub fn bind(bind: ToBind, slot: u32, gpa: u64, size: u64) -> SysResult<Binding> {
    let (gmem, off) = bind?;
    if off.checked_add(size).is_none_or(|e| e > gmem.size) {
        return Err(Errno::EINVAL);
    }
    if gmem.flags & kg::GUEST_MEMFD_FLAG_MMAP == 0 {
        return Err(Errno::EINVAL);
    }
    let (first, n) = (off / PAGE, size / PAGE);
    let mut bindings = gmem.bindings.lock();
    if bindings
        .iter()
        .any(|&(_, f, m, _)| first < f + m && f < first + n)
    {
        return Err(Errno::EEXIST);
    }
    bindings.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    bindings.push((slot, first, n, gpa));
    drop(bindings);
    Ok(Binding {
        gmem: Arc::downgrade(&gmem),
        pgoff: first,
    })
}

impl Binding {
    /// The slot is deleted (kvm_gmem_unbind): its pages of the file may be bound again.
    pub fn unbind(self, slot: u32) {
        if let Some(g) = self.gmem.upgrade() {
            g.bindings.lock().retain(|&(s, ..)| s != slot);
        }
    }
}

/// A stage-2 fault at `page` in a guest_memfd slot (arm64's gmem_abort): the file's page is
/// mapped, writable. None: `page` is in no such slot. A memory fault once the file is gone.
pub fn fault(vm: &Vm, page: u64) -> Option<Fault> {
    let mut inner = vm.inner.lock();
    let (&id, slot) = inner.slots.iter().find(|(_, s)| {
        s.flags & kg::KVM_MEM_GUEST_MEMFD != 0 && page >= s.gpa && page - s.gpa < s.size
    })?;
    let gpa = slot.gpa;
    let Some(gmem) = inner
        .gmem
        .get(&id)
        .and_then(|b| Some((b.gmem.upgrade()?, b.pgoff)))
    else {
        return Some(Fault::Memory);
    };
    let index = gmem.1 + (page - gpa) / PAGE;
    let Ok(frame) = gmem.0.page(index) else {
        drop(inner);
        return Some(Fault::Memory);
    };
    let r = match inner.s2.map(page, frame.pa(), true) {
        Ok(replaced) => {
            if replaced {
                vm.flush_tlbs();
            }
            Fault::Mapped
        }
        Err(_) => Fault::Efault,
    };
    drop(inner);
    // The file's last reference may go here, after the VM's lock (its Drop takes it).
    drop(gmem);
    Some(r)
}

/// KVM_RUN fails on a guest_memfd page it cannot have (kvm_prepare_memory_fault_exit): the
/// exit says which page, with no flags (arm64's memory is never private).
pub fn memory_fault_exit(vcpu: &Vcpu, ipa: u64) {
    use svelt_abi::uapi::kvm::run;
    vcpu.set_exit_reason(kg::KVM_EXIT_MEMORY_FAULT);
    vcpu.run_write(run::U, &0u64.to_le_bytes());
    vcpu.run_write(run::U + 8, &(ipa & !(PAGE - 1)).to_le_bytes());
    vcpu.run_write(run::U + 16, &PAGE.to_le_bytes());
}
