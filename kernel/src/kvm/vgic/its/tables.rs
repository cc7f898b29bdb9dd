//! KVM_DEV_ARM_ITS_SAVE_TABLES and KVM_DEV_ARM_ITS_RESTORE_TABLES (Linux's vgic-its.c:
//! vgic_its_save_tables_v0 and vgic_its_restore_tables_v0): the ITS's devices, their
//! interrupt translations and its collections written to, and read back from, the tables the
//! guest gave it in GITS_BASER0/1 and each device's ITT, in ABI revision 0's layout
//! (`abi::uapi::kvm_vgic_its`'s `Dte`, `ite_*`, `cte_*`).
//!
//! The caller holds every vCPU, so nothing but this thread changes the ITS. What is needed
//! is copied under the vGIC's lock, guest memory is read and written with it dropped (as the
//! command queue does), and a restore's result goes in under the lock at the end.

use super::super::Vgic;
use super::{lpi_route, pending, Device};
use crate::kvm::vm::Vm;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm_vgic_its::{self as its, Dte, TableSlot};

/// Where entry `id` of the table `baser` describes is, if the ID is inside the table, its
/// level-1 entry (for a two-level table) valid and the entry in guest memory
/// (vgic_its_check_id).
fn entry_addr(vm: &Vm, baser: u64, id: u32) -> Option<u64> {
    let addr = match its::table_slot(baser, id)? {
        TableSlot::Flat(a) => a,
        TableSlot::Indirect { l1, offset } => its::l2_entry(vm.read_guest_u64(l1)?, offset)?,
    };
    vm.in_slot(addr).then_some(addr)
}

fn read_entry(vm: &Vm, gpa: u64) -> SysResult<u64> {
    vm.read_guest_u64(gpa)
        .map(u64::from_le)
        .ok_or(Errno::EFAULT)
}

fn write_entry(vm: &Vm, gpa: u64, val: u64) -> SysResult<()> {
    if vm.write_guest(gpa, &val.to_le_bytes()) {
        Ok(())
    } else {
        Err(Errno::EFAULT)
    }
}

/// Copies a map's entries into a vector (ENOMEM rather than a failed allocation's panic).
fn to_vec<K: Copy, V: Clone>(m: &BTreeMap<K, V>) -> SysResult<Vec<(K, V)>> {
    let mut v = Vec::new();
    v.try_reserve(m.len()).map_err(|_| Errno::ENOMEM)?;
    v.extend(m.iter().map(|(k, x)| (*k, x.clone())));
    Ok(v)
}

/// A device as the save needs it: its ID, ITT, event ID bits and translations by event.
type DevCopy = (u32, u64, u32, Vec<(u32, (Option<u16>, u32))>);

/// Walks a table of 8-byte entries from `gpa` for `len` bytes, entry `id` first, as
/// scan_its_table: `f` says how many IDs on the next entry to look at is (0: this was the
/// last). Ok(false) once `f` said so, Ok(true) at the table's end.
fn scan(
    vm: &Vm,
    mut gpa: u64,
    mut len: u64,
    mut id: u32,
    f: &mut dyn FnMut(u32, u64) -> SysResult<u32>,
) -> SysResult<bool> {
    loop {
        let next = f(id, read_entry(vm, gpa)?)?;
        if next == 0 {
            return Ok(false);
        }
        let step = next as u64 * its::ENTRY_SIZE;
        if step >= len {
            return Ok(true);
        }
        id = id.wrapping_add(next);
        gpa += step;
        len -= step;
    }
}

/// KVM_DEV_ARM_ITS_SAVE_TABLES for ITS `n` (vgic_its_save_device_tables, vgic_its_save_itt,
/// vgic_its_save_collection_table). A device the device table cannot reach any more (its
/// level-2 page dropped by the guest, say) is left out, and the chain of saved devices
/// steps over it; a table whose BASER is not valid is not written.
pub fn save(vm: &Vm, n: usize) -> SysResult<()> {
    let (baser, devices, collections) = {
        let guard = vm.vgic.lock();
        let i = guard
            .as_ref()
            .and_then(|v| v.its.get(n))
            .ok_or(Errno::ENODEV)?;
        let mut devs: Vec<DevCopy> = Vec::new();
        devs.try_reserve(i.devices.len())
            .map_err(|_| Errno::ENOMEM)?;
        for (&id, d) in &i.devices {
            devs.push((id, d.itt, d.bits, to_vec(&d.ites)?));
        }
        (i.baser, devs, to_vec(&i.collections)?)
    };

    if baser[0] & its::BASER_VALID != 0 {
        let mut reachable = Vec::new();
        reachable
            .try_reserve(devices.len())
            .map_err(|_| Errno::ENOMEM)?;
        for d in &devices {
            if let Some(at) = entry_addr(vm, baser[0], d.0) {
                reachable.push((at, d));
            }
        }
        for (k, &(at, (id, itt, bits, ites))) in reachable.iter().enumerate() {
            for (e, &(event, (coll, lpi))) in ites.iter().enumerate() {
                // An event whose collection was unmapped is saved as an invalid entry.
                let val = coll.map_or(0, |c| {
                    let next = ites[e + 1..]
                        .iter()
                        .find(|x| x.1 .0.is_some())
                        .map_or(0, |x| (x.0 - event).min(its::ITE_MAX_NEXT));
                    its::ite_encode(next, lpi, c)
                });
                write_entry(vm, itt + event as u64 * its::ENTRY_SIZE, val)?;
            }
            let next = reachable
                .get(k + 1)
                .map_or(0, |x| (x.1 .0 - id).min(its::DTE_MAX_NEXT));
            let dte = Dte {
                next,
                itt: *itt,
                bits: *bits,
            };
            write_entry(vm, at, dte.encode())?;
        }
    }

    if baser[1] & its::BASER_VALID != 0 {
        let (mut gpa, size) = its::table_extent(baser[1]);
        let mut filled = 0;
        for &(coll, target) in &collections {
            // Collections are only made inside the table, and shrinking it drops them, so
            // they fit; stop at its end regardless.
            if filled == size {
                break;
            }
            let t = target.unwrap_or(its::COLLECTION_NOT_MAPPED);
            write_entry(vm, gpa, its::cte_encode(t, coll))?;
            gpa += its::ENTRY_SIZE;
            filled += its::ENTRY_SIZE;
        }
        // A table not full ends with an invalid entry.
        if filled != size {
            write_entry(vm, gpa, 0)?;
        }
    }
    Ok(())
}

/// What a restore read, to go in under the lock at the end.
#[derive(Default)]
struct Restored {
    collections: Vec<(u16, Option<u32>)>,
    devices: Vec<(u32, Device)>,
    /// Each restored translation's LPI: its target, property byte and pending state.
    lpis: Vec<(u32, Option<u32>, u8, bool)>,
}

/// The state a restore checks entries against.
struct Restore<'a> {
    vm: &'a Vm,
    baser: [u64; 2],
    propbaser: u64,
    vcpus: Vec<u32>,
    /// Each vCPU's GICR_PENDBASER, for the restored LPIs' pending bits.
    pendbaser: BTreeMap<u32, u64>,
    /// The ITS's collections (before and restored): their targets.
    collections: BTreeMap<u16, Option<u32>>,
    out: Restored,
    /// LPIs a restored translation already maps.
    lpis: BTreeSet<u32>,
    /// LPIs the ITS's existing translations map.
    taken: BTreeSet<u32>,
}

impl Restore<'_> {
    /// The collection table, up to its first invalid entry (vgic_its_restore_cte): a target
    /// vCPU that exists (EINVAL), a collection not known yet (EEXIST) and inside the table
    /// (EINVAL).
    fn collections(&mut self) -> SysResult<()> {
        let baser = self.baser[1];
        if baser & its::BASER_VALID == 0 {
            return Ok(());
        }
        let (mut gpa, size) = its::table_extent(baser);
        let mut read = 0;
        while read < size {
            let Some((target, coll)) = its::cte_decode(read_entry(self.vm, gpa)?) else {
                break;
            };
            if target != its::COLLECTION_NOT_MAPPED && !self.vcpus.contains(&target) {
                return Err(Errno::EINVAL);
            }
            if self.collections.contains_key(&coll) {
                return Err(Errno::EEXIST);
            }
            if entry_addr(self.vm, baser, coll as u32).is_none() {
                return Err(Errno::EINVAL);
            }
            let target = (target != its::COLLECTION_NOT_MAPPED).then_some(target);
            self.collections.insert(coll, target);
            self.out
                .collections
                .try_reserve(1)
                .map_err(|_| Errno::ENOMEM)?;
            self.out.collections.push((coll, target));
            gpa += its::ENTRY_SIZE;
            read += its::ENTRY_SIZE;
        }
        Ok(())
    }

    /// The device table, flat or two-level (vgic_its_restore_device_tables, handle_l1_dte).
    fn devices(&mut self) -> SysResult<()> {
        let baser = self.baser[0];
        if baser & its::BASER_VALID == 0 {
            return Ok(());
        }
        let (base, size) = its::table_extent(baser);
        let vm = self.vm;
        if baser & its::BASER_INDIRECT == 0 {
            scan(vm, base, size, 0, &mut |id, e| self.dte(id, e))?;
            return Ok(());
        }
        let per_page = (0x1_0000 / its::ENTRY_SIZE) as u32;
        scan(vm, base, size, 0, &mut |index, l1| {
            let Some(l2) = its::l2_entry(l1, 0) else {
                return Ok(1);
            };
            let more = scan(vm, l2, 0x1_0000, index * per_page, &mut |id, e| {
                self.dte(id, e)
            })?;
            Ok(more as u32)
        })?;
        Ok(())
    }

    /// One device table entry (vgic_its_restore_dte): event ID bits the ITS offers and an
    /// ID the table reaches (EINVAL), then its ITT.
    fn dte(&mut self, id: u32, e: u64) -> SysResult<u32> {
        let Some(d) = Dte::decode(e) else {
            return Ok(1);
        };
        if d.bits > its::EVENT_BITS || entry_addr(self.vm, self.baser[0], id).is_none() {
            return Err(Errno::EINVAL);
        }
        let mut dev = Device {
            itt: d.itt,
            bits: d.bits,
            ites: BTreeMap::new(),
        };
        let len = (1u64 << d.bits) * its::ENTRY_SIZE;
        let vm = self.vm;
        scan(vm, d.itt, len, 0, &mut |event, e| {
            self.ite(&mut dev, event, e)
        })?;
        self.out.devices.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.out.devices.push((id, dev));
        Ok(d.next)
    }

    /// One ITT entry (vgic_its_restore_ite): an LPI's INTID (EINVAL below 8192), a next
    /// event inside the ITT, a known collection and an entry in guest memory (EINVAL), the
    /// LPI's property byte readable (EFAULT). An LPI another translation maps is dropped,
    /// as MAPTI drops it. A new LPI with a target takes its pending bit from the target's
    /// pending table, which is cleared once consumed (vgic_v3_lpi_sync_pending_status; an
    /// unreadable or unwritable byte is EFAULT).
    fn ite(&mut self, dev: &mut Device, event: u32, e: u64) -> SysResult<u32> {
        let (next, lpi, coll) = its::ite_decode(e);
        if lpi == 0 {
            return Ok(1);
        }
        if lpi < its::LPI_OFFSET || event as u64 + next as u64 >= 1u64 << dev.bits {
            return Err(Errno::EINVAL);
        }
        let Some(&target) = self.collections.get(&coll) else {
            return Err(Errno::EINVAL);
        };
        if !self.vm.in_slot(dev.itt + event as u64 * its::ENTRY_SIZE) {
            return Err(Errno::EINVAL);
        }
        let prop_at = its::prop_table(self.propbaser).0 + (lpi - its::LPI_OFFSET) as u64;
        let word = read_entry(self.vm, prop_at & !7)?;
        let prop = (word >> (8 * (prop_at & 7))) as u8;
        if self.taken.contains(&lpi) || !self.lpis.insert(lpi) {
            return Ok(next);
        }
        let mut pending = false;
        if let Some(t) = target {
            let p = self.pendbaser.get(&t).copied().unwrap_or(0);
            let (at, mask) = pending::bit_at(p, lpi);
            let byte = pending::read_byte(self.vm, at)?;
            pending = byte & mask != 0;
            if pending {
                pending::write_byte(self.vm, at, byte & !mask)?;
            }
        }
        self.out.lpis.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.out.lpis.push((lpi, target, prop, pending));
        dev.ites.insert(event, (Some(coll), lpi));
        Ok(next)
    }
}

/// KVM_DEV_ARM_ITS_RESTORE_TABLES for ITS `n` (vgic_its_restore_collection_table, then
/// vgic_its_restore_device_tables): the GITS_BASERs must have been restored before. A table
/// entry that is wrong fails the restore with Linux's errno, and then the ITS is left with
/// no collections (and, for a device table's, no devices), as Linux leaves it.
pub fn restore(vm: &Vm, n: usize) -> SysResult<()> {
    let mut r = {
        let guard = vm.vgic.lock();
        let v = guard.as_ref().ok_or(Errno::ENODEV)?;
        let i = v.its.get(n).ok_or(Errno::ENODEV)?;
        Restore {
            vm,
            baser: i.baser,
            propbaser: v.propbaser,
            vcpus: Vec::new(),
            pendbaser: v.rd_lpi.iter().map(|(&id, r)| (id, r.1)).collect(),
            collections: i.collections.clone(),
            out: Restored::default(),
            lpis: BTreeSet::new(),
            taken: v.lpis.keys().copied().collect(),
        }
    };
    r.vcpus = vm.vcpus.lock().iter().map(|c| c.id).collect();
    let colls = r.collections();
    let devs = if colls.is_ok() { r.devices() } else { Ok(()) };
    let out = r.out;
    let mut guard = vm.vgic.lock();
    let v = guard.as_mut().ok_or(Errno::ENODEV)?;
    if n >= v.its.len() {
        return Err(Errno::ENODEV);
    }
    if let Err(e) = colls.and(devs) {
        if devs.is_err() {
            let all = core::mem::take(&mut v.its[n].devices);
            v.free_devices(all);
        }
        v.its[n].collections.clear();
        for d in v.its[n].devices.values_mut() {
            for ite in d.ites.values_mut() {
                ite.0 = None;
            }
        }
        return Err(e);
    }
    v.commit_restore(n, out);
    Ok(())
}

impl Vgic {
    /// What a restore read goes into ITS `n` and the vGIC's LPIs.
    fn commit_restore(&mut self, n: usize, out: Restored) {
        for (coll, target) in out.collections {
            self.its[n].collections.insert(coll, target);
        }
        for (id, dev) in out.devices {
            if let Some(old) = self.its[n].devices.insert(id, dev) {
                let mut one = BTreeMap::new();
                one.insert(id, old);
                self.free_devices(one);
            }
        }
        for (lpi, target, prop, pending) in out.lpis {
            self.lpis
                .insert(lpi, Vgic::new_lpi(lpi_route(target), prop, pending));
        }
    }
}
