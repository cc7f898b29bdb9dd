//! The LPIs' pending tables in guest memory, one per redistributor at its GICR_PENDBASER:
//! a bit per INTID. KVM keeps each LPI's pending state in its `Irq` and meets the tables at
//! three moments (Linux's vgic-v3.c and vgic-its.c):
//! - KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES writes every targeted LPI's bit
//!   (vgic_v3_save_pending_tables), one byte at a time, read-modify-write;
//! - a new LPI (MAPTI/MAPI in `cmd`, an ITT entry restored in `tables`) takes its bit from its
//!   target's table and clears a set one (vgic_v3_lpi_sync_pending_status);
//! - GICR_CTLR.EnableLPIs going on, without GICR_PENDBASER.PTZ, sets each of the vCPU's LPIs
//!   pending or not from its table and leaves the table as it is (its_sync_lpi_pending_table).
//!
//! Guest memory is reached with the vGIC's lock dropped, as everywhere in the ITS.

use super::super::Vgic;
use super::lpi_route;
use crate::kvm::vm::Vm;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm_vgic_its as its;

/// GICR_PENDBASER's table address, bits 51:16 (GICR_PENDBASER_ADDRESS).
const PENDBASE_ADDRESS: u64 = 0x000f_ffff_ffff_0000;

/// Where the byte holding `intid`'s pending bit is for a redistributor whose GICR_PENDBASER
/// is `pendbaser`, and the bit there.
pub fn bit_at(pendbaser: u64, intid: u32) -> (u64, u8) {
    (
        (pendbaser & PENDBASE_ADDRESS) + (intid / 8) as u64,
        1 << (intid % 8),
    )
}

/// The guest byte at `ipa` (EFAULT outside every slot, as kvm_read_guest).
pub fn read_byte(vm: &Vm, ipa: u64) -> SysResult<u8> {
    let w = vm.read_guest_u64(ipa & !7).ok_or(Errno::EFAULT)?;
    Ok((w >> (8 * (ipa & 7))) as u8)
}

/// Writes the guest byte at `ipa` (EFAULT as kvm_write_guest).
pub fn write_byte(vm: &Vm, ipa: u64, val: u8) -> SysResult<()> {
    if vm.write_guest(ipa, &[val]) {
        Ok(())
    } else {
        Err(Errno::EFAULT)
    }
}

impl Vgic {
    /// vCPU `id`'s GICR_PENDBASER (0 until written, as Linux's reset value).
    pub fn pendbaser(&self, id: u32) -> u64 {
        self.rd_lpi.get(&id).map_or(0, |r| r.1)
    }
}

/// KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES's writes (the caller holds every vCPU and checked
/// the vGIC initialised): each LPI with a target vCPU, in INTID order, has its bit in that
/// vCPU's table made equal to its pending state; a byte is read once while consecutive LPIs
/// share it and written only when a bit changes. The first byte that cannot be read or
/// written ends the save with EFAULT, the bytes before it written.
pub fn save(vm: &Vm) -> SysResult<()> {
    let ids: Vec<u32> = vm.vcpus.lock().iter().map(|c| c.id).collect();
    let bits = {
        let guard = vm.vgic.lock();
        let Some(v) = guard.as_ref() else {
            return Ok(());
        };
        let mut pendbaser = BTreeMap::new();
        for &id in &ids {
            pendbaser.insert(lpi_route(Some(id)), v.pendbaser(id));
        }
        let mut bits = Vec::new();
        bits.try_reserve(v.lpis.len()).map_err(|_| Errno::ENOMEM)?;
        for (&intid, q) in &v.lpis {
            if let Some(&p) = pendbaser.get(&q.route) {
                let (at, mask) = bit_at(p, intid);
                bits.push((at, mask, q.latch));
            }
        }
        bits
    };
    let mut last = None;
    let mut val = 0u8;
    for (at, mask, pending) in bits {
        if last != Some(at) {
            val = read_byte(vm, at)?;
            last = Some(at);
        }
        if (val & mask != 0) == pending {
            continue;
        }
        val ^= mask;
        write_byte(vm, at, val)?;
    }
    Ok(())
}

/// GICR_CTLR.EnableLPIs just went on for vCPU `id` (vgic_enable_lpis): unless its
/// GICR_PENDBASER has PTZ, each of its LPIs is pending exactly when its bit is set. The
/// bytes are read for every LPI in INTID order, and the first unreadable one stops the walk
/// (the LPIs before it synced), as Linux's walk does.
pub fn sync_on_enable(vm: &Vm, id: u32) {
    let (pendbaser, intids) = {
        let guard = vm.vgic.lock();
        let Some(v) = guard.as_ref() else {
            return;
        };
        let p = v.pendbaser(id);
        if p & its::PENDBASER_PTZ != 0 {
            return;
        }
        let mut intids = Vec::new();
        if intids.try_reserve(v.lpis.len()).is_err() {
            return;
        }
        intids.extend(v.lpis.keys().copied());
        (p, intids)
    };
    let mut found = Vec::new();
    if found.try_reserve(intids.len()).is_err() {
        return;
    }
    let mut last = None;
    let mut val = 0u8;
    for intid in intids {
        let (at, mask) = bit_at(pendbaser, intid);
        if last != Some(at) {
            let Ok(b) = read_byte(vm, at) else {
                break;
            };
            val = b;
            last = Some(at);
        }
        found.push((intid, val & mask != 0));
    }
    let route = lpi_route(Some(id));
    let mut guard = vm.vgic.lock();
    let Some(v) = guard.as_mut() else {
        return;
    };
    for (intid, pending) in found {
        if let Some(q) = v.lpis.get_mut(&intid).filter(|q| q.route == route) {
            q.latch = pending;
        }
    }
}
