//! KVM_GET_STATS_FD: a VM's or a vCPU's counters as Linux's binary statistics file
//! (virt/kvm/binary_stats.c; the layout and the table of statistics are
//! `svelt_abi::uapi::kvm_stats`). The file is read-only, read at the file position or with
//! pread at any offset, and keeps its VM or vCPU alive after the VMM has closed the VM's file,
//! as KVM's takes a reference on the VM.
//!
//! What Svelt counts: every guest exit, HVC, WFI and WFE exits, MMIO exits to the VMM and MMIO
//! writes kept in the kernel (coalesced), exits for a signal, the time and wake-ups of WFI
//! sleeps, and the VM's stage-2 TLB flushes. Halt polling does not exist here, so its
//! statistics stay 0.

use super::vcpu::Vcpu;
use super::vm::{install, Vm};
use crate::fs::{Caller, File, FileOps};
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::O_RDONLY;
use svelt_abi::uapi::kvm_stats as ks;

/// `N` 64-bit statistics values, each updated on its own.
pub struct Counters<const N: usize>([AtomicU64; N]);

impl<const N: usize> Counters<N> {
    pub fn new() -> Self {
        Counters(core::array::from_fn(|_| AtomicU64::new(0)))
    }
    pub fn add(&self, i: usize, v: u64) {
        self.0[i].fetch_add(v, Ordering::Relaxed);
    }
    pub fn inc(&self, i: usize) {
        self.add(i, 1);
    }
    pub fn set(&self, i: usize, v: u64) {
        self.0[i].store(v, Ordering::Relaxed);
    }
    fn values(&self) -> [u64; N] {
        core::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }
}

impl<const N: usize> Default for Counters<N> {
    fn default() -> Self {
        Self::new()
    }
}

pub type VmStats = Counters<{ ks::vm::WORDS }>;
pub type VcpuStats = Counters<{ ks::vcpu::WORDS }>;

impl VcpuStats {
    /// A WFI sleep of `ns` nanoseconds ended, by a wake-up (`woken`) or a signal: the halt
    /// statistics `kvm_vcpu_halt` keeps when it did not poll.
    pub fn halted(&self, ns: u64, woken: bool) {
        self.add(ks::vcpu::HALT_WAIT_NS, ns);
        let bucket = ks::log_hist_bucket(ns, ks::HALT_POLL_HIST_COUNT);
        self.inc(ks::vcpu::HALT_WAIT_HIST + bucket);
        if woken {
            self.inc(ks::vcpu::HALT_WAKEUP);
        }
    }
}

/// Whose statistics a file reads.
enum Owner {
    Vm(Arc<Vm>),
    Vcpu(Arc<Vcpu>),
}

struct StatsFile {
    /// The id string: `kvm-TID` of the thread that created the VM, `/vcpu-N` after it for a
    /// vCPU.
    id: String,
    owner: Owner,
}

impl StatsFile {
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> usize {
        match &self.owner {
            Owner::Vm(vm) => ks::read(&self.id, &ks::VM_STATS, &vm.stats.values(), pos, buf),
            Owner::Vcpu(v) => ks::read(&self.id, &ks::VCPU_STATS, &v.stats.values(), pos, buf),
        }
    }
}

impl FileOps for StatsFile {
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        file.at_pos(|pos| Ok(self.read_at(pos, buf)))
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn pread(&self, _cur: &dyn Caller, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        Ok(self.read_at(off, buf))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn open(cur: &dyn Caller, id: String, owner: Owner, name: String) -> SysResult<usize> {
    install(
        cur,
        File::new(None, Arc::new(StatsFile { id, owner }), O_RDONLY, name),
    )
}

/// KVM_GET_STATS_FD on a VM: `anon_inode:kvm-vm-stats`, close-on-exec.
pub fn vm_fd(cur: &dyn Caller, vm: &Arc<Vm>) -> SysResult<usize> {
    open(
        cur,
        format!("kvm-{}", vm.creator),
        Owner::Vm(vm.clone()),
        String::from("anon_inode:kvm-vm-stats"),
    )
}

/// KVM_GET_STATS_FD on a vCPU: `anon_inode:kvm-vcpu-stats:N`, close-on-exec.
pub fn vcpu_fd(cur: &dyn Caller, vcpu: &Arc<Vcpu>) -> SysResult<usize> {
    open(
        cur,
        format!("kvm-{}/vcpu-{}", vcpu.creator, vcpu.id),
        Owner::Vcpu(vcpu.clone()),
        format!("anon_inode:kvm-vcpu-stats:{}", vcpu.id),
    )
}
