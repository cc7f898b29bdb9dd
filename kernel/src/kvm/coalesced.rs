//! Coalesced MMIO (virt/kvm/coalesced_mmio.c): guest writes inside zones the VMM registered
//! (KVM_REGISTER_COALESCED_MMIO) go into a ring the VMM maps as page 1 of every vCPU's mapping,
//! and the guest goes on without an exit; a full ring, a read, or an access outside every zone
//! exits to the VMM as any MMIO access does.

use crate::mm::frame::Page;
use crate::mm::uaccess::UserPtr;
use alloc::vec::Vec;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, ring, KvmCoalescedMmioZone};

/// Linux's NR_IOBUS_DEVS: devices one bus holds.
const MAX_ZONES: usize = 1000;

pub struct Coalesced {
    /// The ring page, shared by the VM's vCPU mappings.
    pub ring: Page,
    /// The zones, in registration order; its lock also orders writers of the ring.
    zones: Mutex<Vec<KvmCoalescedMmioZone>>,
}

impl Coalesced {
    pub fn new() -> SysResult<Coalesced> {
        Ok(Coalesced {
            ring: Page::new_user().ok_or(Errno::ENOMEM)?,
            zones: Mutex::new(Vec::new()),
        })
    }

    /// KVM_REGISTER_COALESCED_MMIO and KVM_UNREGISTER_COALESCED_MMIO
    /// (`kvm_vm_ioctl_{,un}register_coalesced_mmio`): EINVAL for a bus other than MMIO (0) or
    /// port I/O (1); ENOSPC once the bus is full. Unregistering drops every zone of that bus
    /// that holds the whole range given, and never fails.
    pub fn ioctl(&self, cmd: u32, arg: usize) -> SysResult<usize> {
        let z = UserPtr::<KvmCoalescedMmioZone>::new(arg).read()?;
        if z.pio > 1 {
            return Err(Errno::EINVAL);
        }
        let mut zones = self.zones.lock();
        if cmd == k::KVM_REGISTER_COALESCED_MMIO {
            if zones.len() >= MAX_ZONES {
                return Err(Errno::ENOSPC);
            }
            zones.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            zones.push(z);
        } else {
            zones.retain(|d| !(d.pio == z.pio && k::in_zone(d, z.addr, z.size as u64)));
        }
        Ok(0)
    }

    /// A guest's MMIO write of `data` at `ipa`: queued in the ring if a zone holds it and the
    /// ring has room (true: the access is done), else false (it exits to the VMM).
    pub fn write(&self, ipa: u64, data: &[u8]) -> bool {
        let zones = self.zones.lock();
        if !zones
            .iter()
            .any(|z| z.pio == 0 && k::in_zone(z, ipa, data.len() as u64))
        {
            return false;
        }
        let word = |off| {
            let mut b = [0u8; 4];
            self.ring.reader().read(off, &mut b);
            u32::from_le_bytes(b)
        };
        let Some(slot) = k::ring_slot(word(ring::FIRST), word(ring::LAST)) else {
            return false;
        };
        let mut e = [0u8; ring::ENTRY_SIZE];
        e[..8].copy_from_slice(&ipa.to_le_bytes());
        e[8..12].copy_from_slice(&(data.len() as u32).to_le_bytes());
        e[16..16 + data.len().min(8)].copy_from_slice(&data[..data.len().min(8)]);
        let w = self.ring.writer();
        w.write(ring::ENTRIES + slot as usize * ring::ENTRY_SIZE, &e);
        // The entry before the index that publishes it (KVM's smp_wmb).
        core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
        w.write(ring::LAST, &((slot + 1) % ring::MAX).to_le_bytes());
        true
    }
}
