//! The ITS's command queue (vgic_its_process_commands and the vgic_its_cmd_handle_*
//! functions of Linux's vgic-its.c; the commands in the GICv3 architecture specification,
//! chapter 5.3): each command between GITS_CREADR and GITS_CWRITER is read from guest
//! memory and applied; a command that fails (an unmapped device, an ID beyond a table, a
//! table entry outside guest memory) is skipped, as Linux skips it: the queue never stalls.
//!
//! A command may need guest memory itself (a table entry's page, a level-1 entry, an LPI's
//! property byte or pending bit). Those are read with the vGIC's lock dropped: a command is
//! tried under the lock with what is known, says which addresses it still needs (before it
//! changes anything), and is tried again once they are read. One thread at a time works
//! through an ITS's queue (`Its::busy`); another's CWRITER write is seen by its loop.

use super::super::deliver::kick_all;
use super::super::Vgic;
use super::{lpi_route, Device};
use crate::kvm::vm::Vm;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use svelt_abi::uapi::kvm_vgic_its::{self as its, ItsCmd, TableSlot};

/// Guest memory a command asked for: the 8-byte-aligned words read (None: outside every
/// slot) and which pages are in a slot.
#[derive(Default)]
struct Mem {
    words: BTreeMap<u64, Option<u64>>,
    visible: BTreeMap<u64, bool>,
}

/// What a try of a command ended with.
enum Outcome {
    /// Done (applied, or skipped as failed); then these guest bytes are written.
    Done(Vec<(u64, u8, u8)>),
    /// It needs these words read and these addresses checked first.
    Need(Vec<u64>, Vec<u64>),
}

impl Mem {
    fn word(&self, addr: u64, need: &mut Vec<u64>) -> Option<Option<u64>> {
        let a = addr & !7;
        let w = self.words.get(&a).copied();
        if w.is_none() {
            need.push(a);
        }
        w
    }

    fn byte(&self, addr: u64, need: &mut Vec<u64>) -> Option<Option<u8>> {
        self.word(addr, need)
            .map(|w| w.map(|w| (w >> (8 * (addr & 7))) as u8))
    }

    fn visible(&self, addr: u64, need: &mut Vec<u64>) -> Option<bool> {
        let v = self.visible.get(&addr).copied();
        if v.is_none() {
            need.push(addr);
        }
        v
    }
}

/// A zeroed 8-byte table entry to write (DISCARD's ITE, an unmapped device's DTE).
fn zero_entry(addr: u64) -> Vec<(u64, u8, u8)> {
    (0..8).map(|i| (addr + i, 0xff, 0)).collect()
}

impl Vgic {
    /// Where the table entry for `id` is (vgic_its_check_id), if it is inside the table and
    /// guest memory. None: unknown yet (`need`/`vis` say what to read).
    fn check_id(
        baser: u64,
        id: u32,
        mem: &Mem,
        need: &mut Vec<u64>,
        vis: &mut Vec<u64>,
    ) -> Option<Option<u64>> {
        let addr = match its::table_slot(baser, id) {
            None => return Some(None),
            Some(TableSlot::Flat(a)) => a,
            Some(TableSlot::Indirect { l1, offset }) => match mem.word(l1, need)? {
                None => return Some(None),
                Some(e) => match its::l2_entry(e, offset) {
                    None => return Some(None),
                    Some(a) => a,
                },
            },
        };
        Some(mem.visible(addr, vis)?.then_some(addr))
    }

    /// One try of command `c` on ITS `n`.
    fn try_cmd(&mut self, n: usize, c: ItsCmd, mem: &Mem, vcpus: &[u32]) -> Outcome {
        let (mut need, mut vis) = (Vec::new(), Vec::new());
        macro_rules! known {
            ($e:expr) => {
                match $e {
                    Some(x) => x,
                    None => return Outcome::Need(need, vis),
                }
            };
        }
        let done = Outcome::Done(Vec::new());
        match c {
            ItsCmd::Mapd {
                dev,
                size,
                itt,
                valid,
            } => {
                let baser = self.its[n].baser[0];
                let Some(entry) = known!(Self::check_id(baser, dev, mem, &mut need, &mut vis))
                else {
                    return done;
                };
                if valid && size > its::EVENT_BITS {
                    return done;
                }
                if let Some(d) = self.its[n].devices.remove(&dev) {
                    let mut one = BTreeMap::new();
                    one.insert(dev, d);
                    self.free_devices(one);
                }
                if !valid {
                    return Outcome::Done(zero_entry(entry));
                }
                self.its[n].devices.insert(
                    dev,
                    Device {
                        itt,
                        bits: size,
                        ites: BTreeMap::new(),
                    },
                );
            }
            ItsCmd::Mapc {
                coll,
                target,
                valid,
            } => {
                if !valid {
                    let i = &mut self.its[n];
                    i.collections.remove(&coll);
                    for d in i.devices.values_mut() {
                        for ite in d.ites.values_mut() {
                            if ite.0 == Some(coll) {
                                ite.0 = None;
                            }
                        }
                    }
                    return done;
                }
                if !vcpus.contains(&target) {
                    return done;
                }
                if !self.its[n].collections.contains_key(&coll) {
                    let baser = self.its[n].baser[1];
                    let ok = known!(Self::check_id(baser, coll as u32, mem, &mut need, &mut vis));
                    if ok.is_none() {
                        return done;
                    }
                }
                self.its[n].collections.insert(coll, Some(target));
                self.retarget(n, |ite_coll| ite_coll == Some(coll), Some(target));
            }
            ItsCmd::Mapti {
                dev,
                event,
                lpi,
                coll,
            } => {
                let Some(d) = self.its[n].devices.get(&dev) else {
                    return done;
                };
                if event as u64 >= 1u64 << d.bits {
                    return done;
                }
                let itt = d.itt + event as u64 * its::ENTRY_SIZE;
                let exists = d.ites.contains_key(&event);
                if !known!(mem.visible(itt, &mut vis)) {
                    return done;
                }
                let (prop_base, max) = its::prop_table(self.propbaser);
                if lpi < its::LPI_OFFSET || lpi >= max || exists {
                    return done;
                }
                let new_coll = !self.its[n].collections.contains_key(&coll);
                if new_coll {
                    let baser = self.its[n].baser[1];
                    let ok = known!(Self::check_id(baser, coll as u32, mem, &mut need, &mut vis));
                    if ok.is_none() {
                        return done;
                    }
                }
                if self.lpis.contains_key(&lpi) {
                    // Mapped by another event already (EEXIST): nothing is kept.
                    return done;
                }
                let target = self.its[n].target(Some(coll));
                let Some(prop) =
                    known!(mem.byte(prop_base + (lpi - its::LPI_OFFSET) as u64, &mut need))
                else {
                    return done;
                };
                // The pending bit in the target's table is taken and cleared
                // (vgic_v3_lpi_sync_pending_status).
                let mut writes = Vec::new();
                let mut pending = false;
                if let Some(t) = target {
                    let pend = self.rd_lpi.get(&t).map_or(0, |r| r.1) & 0x000f_ffff_ffff_0000;
                    let at = pend + (lpi / 8) as u64;
                    let Some(byte) = known!(mem.byte(at, &mut need)) else {
                        return done;
                    };
                    pending = byte & (1 << (lpi % 8)) != 0;
                    if pending {
                        writes.push((at, 1u8 << (lpi % 8), 0u8));
                    }
                }
                if new_coll {
                    self.its[n].collections.insert(coll, None);
                }
                if let Some(d) = self.its[n].devices.get_mut(&dev) {
                    d.ites.insert(event, (Some(coll), lpi));
                }
                self.lpis
                    .insert(lpi, Vgic::new_lpi(lpi_route(target), prop, pending));
                return Outcome::Done(writes);
            }
            ItsCmd::Movi { dev, event, coll } => {
                let i = &self.its[n];
                let Some(&(old, lpi)) = i.devices.get(&dev).and_then(|d| d.ites.get(&event)) else {
                    return done;
                };
                if i.target(old).is_none() {
                    return done;
                }
                let Some(t) = i.target(Some(coll)) else {
                    return done;
                };
                if let Some(ite) = self.its[n]
                    .devices
                    .get_mut(&dev)
                    .and_then(|d| d.ites.get_mut(&event))
                {
                    ite.0 = Some(coll);
                }
                if let Some(q) = self.lpis.get_mut(&lpi) {
                    q.route = lpi_route(Some(t));
                }
            }
            ItsCmd::Discard { dev, event } => {
                let i = &mut self.its[n];
                let Some(d) = i.devices.get(&dev) else {
                    return done;
                };
                let Some(&(coll, lpi)) = d.ites.get(&event) else {
                    return done;
                };
                if i.target(coll).is_none() {
                    return done;
                }
                let itt = d.itt + event as u64 * its::ENTRY_SIZE;
                if let Some(d) = i.devices.get_mut(&dev) {
                    d.ites.remove(&event);
                }
                self.lpis.remove(&lpi);
                return Outcome::Done(zero_entry(itt));
            }
            ItsCmd::Clear { dev, event } => {
                if let Some(&(_, lpi)) = self.its[n]
                    .devices
                    .get(&dev)
                    .and_then(|d| d.ites.get(&event))
                {
                    if let Some(q) = self.lpis.get_mut(&lpi) {
                        q.latch = false;
                    }
                }
            }
            ItsCmd::Int { dev, event } => {
                let _ = self.trigger_msi(n, dev, event);
            }
            ItsCmd::Inv { dev, event } => {
                let Some(&(_, lpi)) = self.its[n]
                    .devices
                    .get(&dev)
                    .and_then(|d| d.ites.get(&event))
                else {
                    return done;
                };
                self.refresh(&[lpi], mem, &mut need);
                if !need.is_empty() {
                    return Outcome::Need(need, vis);
                }
            }
            ItsCmd::Invall { coll } => {
                let Some(t) = self.its[n].target(Some(coll)) else {
                    return done;
                };
                let route = lpi_route(Some(t));
                let lpis: Vec<u32> = self
                    .lpis
                    .iter()
                    .filter(|(_, q)| q.route == route)
                    .map(|(&i, _)| i)
                    .collect();
                self.refresh(&lpis, mem, &mut need);
                if !need.is_empty() {
                    return Outcome::Need(need, vis);
                }
            }
            ItsCmd::Movall { from, to } => {
                if !vcpus.contains(&from) || !vcpus.contains(&to) || from == to {
                    return done;
                }
                let (from, to) = (lpi_route(Some(from)), lpi_route(Some(to)));
                for q in self.lpis.values_mut() {
                    if q.route == from {
                        q.route = to;
                    }
                }
            }
            ItsCmd::Sync | ItsCmd::Unknown(_) => {}
        }
        done
    }

    /// The LPIs' priority and enable from their property bytes (update_lpi_config); each
    /// byte not known yet goes into `need`, and nothing changes until all are known.
    fn refresh(&mut self, lpis: &[u32], mem: &Mem, need: &mut Vec<u64>) {
        let base = its::prop_table(self.propbaser).0;
        let mut bytes = Vec::new();
        for &lpi in lpis {
            if let Some(b) = mem.byte(base + (lpi - its::LPI_OFFSET) as u64, need) {
                bytes.push((lpi, b));
            }
        }
        if !need.is_empty() {
            return;
        }
        for (lpi, b) in bytes {
            if let (Some(b), Some(q)) = (b, self.lpis.get_mut(&lpi)) {
                let (priority, enabled) = its::lpi_config(b);
                q.priority = priority;
                q.enabled = enabled;
            }
        }
    }

    /// The LPIs of ITS `n` whose event's collection matches, sent to `target`.
    fn retarget(&mut self, n: usize, matches: impl Fn(Option<u16>) -> bool, target: Option<u32>) {
        let route = lpi_route(target);
        for d in self.its[n].devices.values() {
            for &(coll, lpi) in d.ites.values() {
                if matches(coll) {
                    if let Some(q) = self.lpis.get_mut(&lpi) {
                        q.route = route;
                    }
                }
            }
        }
    }
}

/// Applies command `c` of ITS `n`, reading what it needs from guest memory between tries.
fn run(vm: &Vm, n: usize, c: ItsCmd, vcpus: &[u32]) {
    let mut mem = Mem::default();
    // Each try learns at least one address; a command needs a handful (INVALL one per LPI,
    // all asked for at once).
    for _ in 0..8 {
        let out = {
            let mut guard = vm.vgic.lock();
            let Some(v) = guard.as_mut() else {
                return;
            };
            if n >= v.its.len() {
                return;
            }
            v.try_cmd(n, c, &mem, vcpus)
        };
        match out {
            Outcome::Done(writes) => {
                for (addr, mask, val) in writes {
                    let Some(w) = vm.read_guest_u64(addr & !7) else {
                        continue;
                    };
                    let shift = 8 * (addr & 7);
                    let old = (w >> shift) as u8;
                    vm.write_guest(addr, &[(old & !mask) | (val & mask)]);
                }
                return;
            }
            Outcome::Need(words, vis) => {
                for a in words {
                    mem.words.insert(a, vm.read_guest_u64(a));
                }
                for a in vis {
                    mem.visible.insert(a, vm.in_slot(a));
                }
            }
        }
    }
}

/// Works through ITS `n`'s command queue while it is on (vgic_its_process_commands),
/// unless another thread already is. A command that cannot be read is skipped.
pub fn process(vm: &Vm, n: usize) {
    {
        let mut guard = vm.vgic.lock();
        let Some(i) = guard.as_mut().and_then(|v| v.its.get_mut(n)) else {
            return;
        };
        if i.busy {
            return;
        }
        i.busy = true;
    }
    let vcpus: Vec<u32> = vm.vcpus.lock().iter().map(|c| c.id).collect();
    loop {
        let at = {
            let mut guard = vm.vgic.lock();
            let Some(i) = guard.as_mut().and_then(|v| v.its.get_mut(n)) else {
                return;
            };
            if !i.enabled || i.creadr == i.cwriter {
                i.busy = false;
                break;
            }
            its::cmdq(i.cbaser).0 + i.creadr
        };
        let mut w = [0u64; 4];
        let mut ok = true;
        for (k, word) in w.iter_mut().enumerate() {
            match vm.read_guest_u64(at + 8 * k as u64) {
                Some(x) => *word = x,
                None => ok = false,
            }
        }
        if ok {
            run(vm, n, ItsCmd::decode(w), &vcpus);
        }
        let mut guard = vm.vgic.lock();
        let Some(i) = guard.as_mut().and_then(|v| v.its.get_mut(n)) else {
            return;
        };
        i.creadr += 32;
        if i.creadr >= its::cmdq(i.cbaser).1 {
            i.creadr = 0;
        }
    }
    // An LPI made pending, enabled or moved may be any vCPU's to take.
    kick_all(vm);
}
