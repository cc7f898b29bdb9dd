//! Eventfds wired to a VM (virt/kvm/eventfd.c, irqchip.c): an irqfd makes the vGIC SPI its
//! GSI routes to pending when its eventfd is signalled (KVM_IRQFD), optionally with a resample
//! eventfd that lowers the line and is signalled once the guest deactivates the interrupt; an
//! ioeventfd takes a guest MMIO write that matches its address, length and value and signals
//! its eventfd instead of exiting to the VMM (KVM_IOEVENTFD). KVM_SET_GSI_ROUTING sets where
//! each GSI goes; the vGIC's initialisation installs GSI N to SPI N + 32. The rules are in
//! `abi::uapi::kvm_eventfd`.
//!
//! Locks: `routes`, `irqfds` and `ioeventfds` are each taken alone, never while the vGIC's
//! lock is held or an eventfd is signalled.

use super::vm::Vm;
use crate::fs::eventfd::{EventFd, EventHook};
use crate::fs::{Caller, FileOps};
use crate::mm::uaccess::UserPtr;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm_eventfd::{self as e, IoeventSpec, Route, RouteTo};

/// Linux's NR_IOBUS_DEVS: devices one bus holds.
const MAX_IOEVENTFDS: usize = 1000;

/// One irqfd: its GSI, its eventfd (weakly: closing it ends the irqfd, as EPOLLHUP does on
/// Linux), the hook on that eventfd, and its resample eventfd.
struct Irqfd {
    gsi: u32,
    eventfd: Weak<dyn FileOps>,
    hook: Arc<dyn EventHook>,
    live: Arc<IrqfdHook>,
    resample: Option<Arc<dyn FileOps>>,
}

struct Ioeventfd {
    spec: IoeventSpec,
    eventfd: Arc<dyn FileOps>,
}

#[derive(Default)]
pub struct VmEvents {
    routes: Mutex<Vec<Route>>,
    irqfds: Mutex<Vec<Irqfd>>,
    ioeventfds: Mutex<Vec<Ioeventfd>>,
    /// Some irqfd resamples (the exit path asks nothing otherwise).
    resampling: AtomicBool,
}

/// What an irqfd's eventfd calls when it is signalled (irqfd_wakeup).
struct IrqfdHook {
    vm: Weak<Vm>,
    gsi: u32,
    active: AtomicBool,
}

impl EventHook for IrqfdHook {
    fn signalled(&self, ef: &EventFd) {
        ef.take();
        if !self.active.load(Ordering::Relaxed) {
            return;
        }
        if let Some(vm) = self.vm.upgrade() {
            // Only the rising edge, as Linux's atomic path: a level-triggered SPI stays high
            // until its resampler or the VMM lowers it.
            raise(&vm, self.gsi, false);
        }
    }
    fn alive(&self) -> bool {
        self.active.load(Ordering::Relaxed) && self.vm.strong_count() > 0
    }
}

/// The pin `gsi` routes to, if it routes to exactly one (irqfd_update).
fn pin_of(vm: &Vm, gsi: u32) -> Option<u32> {
    let routes = vm.events.routes.lock();
    let mut it = routes.iter().filter(|r| r.gsi == gsi);
    match (it.next(), it.next()) {
        (
            Some(Route {
                to: RouteTo::Pin(p),
                ..
            }),
            None,
        ) => Some(*p),
        _ => None,
    }
}

/// The MSI `gsi` routes to, if that is its one route.
fn msi_of(vm: &Vm, gsi: u32) -> Option<RouteTo> {
    let routes = vm.events.routes.lock();
    let mut it = routes.iter().filter(|r| r.gsi == gsi);
    match (it.next(), it.next()) {
        (
            Some(
                r @ Route {
                    to: RouteTo::Msi { .. },
                    ..
                },
            ),
            None,
        ) => Some(r.to),
        _ => None,
    }
}

/// Raises the SPI `gsi` routes to; `pulse` lowers it again at once (irqfd_inject). An MSI
/// route sends its message to the ITS its address names (kvm_set_msi).
fn raise(vm: &Vm, gsi: u32, pulse: bool) {
    if let Some(RouteTo::Msi {
        address,
        data,
        flags,
        devid,
    }) = msi_of(vm, gsi)
    {
        let msi = svelt_abi::uapi::kvm_vgic_its::KvmMsi {
            address_lo: address as u32,
            address_hi: (address >> 32) as u32,
            data,
            flags,
            devid,
            pad: [0; 12],
        };
        let _ = super::vgic::its::deliver_msi(vm, &msi);
        return;
    }
    if let Some(pin) = pin_of(vm, gsi) {
        super::vgic::set_spi(vm, pin, true);
        if pulse {
            super::vgic::set_spi(vm, pin, false);
        }
    }
}

fn eventfd_of(f: &Arc<dyn FileOps>) -> SysResult<&EventFd> {
    f.as_any().downcast_ref::<EventFd>().ok_or(Errno::EINVAL)
}

/// The eventfd behind descriptor `fd` (eventfd_ctx_fdget): EBADF for no file, EINVAL for
/// another kind.
fn get_eventfd(cur: &dyn Caller, fd: i32) -> SysResult<Arc<dyn FileOps>> {
    let f = cur.files().lock().get(fd)?;
    eventfd_of(&f.ops)?;
    Ok(f.ops.clone())
}

/// Installs the default routing (the vGIC's initialisation): GSI N to each SPI N.
pub fn default_routes(vm: &Vm, nr_spis: u32) {
    let mut routes = vm.events.routes.lock();
    routes.clear();
    if routes.try_reserve(nr_spis as usize).is_ok() {
        routes.extend(e::default_routing(nr_spis));
    }
}

/// KVM_SET_GSI_ROUTING: `struct kvm_irq_routing` (u32 nr, u32 flags, entries). EINVAL for
/// more than KVM_MAX_IRQ_ROUTES entries, nonzero flags or a bad entry; the table is replaced
/// whole.
pub fn set_routing(vm: &Vm, arg: usize) -> SysResult<usize> {
    let nr = UserPtr::<u32>::new(arg).read()?;
    let flags = UserPtr::<u32>::new(arg + 4).read()?;
    if nr > e::KVM_MAX_IRQ_ROUTES || flags != 0 {
        return Err(Errno::EINVAL);
    }
    let mut entries: Vec<e::KvmIrqRoutingEntry> = Vec::new();
    entries
        .try_reserve_exact(nr as usize)
        .map_err(|_| Errno::ENOMEM)?;
    for i in 0..nr as usize {
        let at = arg + 8 + i * core::mem::size_of::<e::KvmIrqRoutingEntry>();
        entries.push(UserPtr::<e::KvmIrqRoutingEntry>::new(at).read()?);
    }
    e::check_routing(&entries)?;
    let new: Vec<Route> = entries.iter().filter_map(|x| e::route_of(x).ok()).collect();
    *vm.events.routes.lock() = new;
    Ok(0)
}

/// KVM_IRQFD (kvm_irqfd): unknown flags EINVAL; DEASSIGN drops every irqfd of that eventfd
/// and GSI (EBADF/EINVAL only for the descriptor); assigning needs the vGIC initialised
/// (EAGAIN), an eventfd (EBADF, EINVAL) and, with RESAMPLE, a resample eventfd; an eventfd
/// already an irqfd of any VM is EBUSY. A count already in the eventfd raises the line once.
pub fn irqfd(vm: &Arc<Vm>, cur: &dyn Caller, arg: usize) -> SysResult<usize> {
    let a = UserPtr::<e::KvmIrqfd>::new(arg).read()?;
    if a.flags & !(e::KVM_IRQFD_FLAG_DEASSIGN | e::KVM_IRQFD_FLAG_RESAMPLE) != 0 {
        return Err(Errno::EINVAL);
    }
    if a.flags & e::KVM_IRQFD_FLAG_DEASSIGN != 0 {
        let f = get_eventfd(cur, a.fd as i32)?;
        let weak = Arc::downgrade(&f);
        let gone: Vec<Irqfd> = {
            let mut list = vm.events.irqfds.lock();
            let (gone, keep) = core::mem::take(&mut *list)
                .into_iter()
                .partition(|i| i.gsi == a.gsi && Weak::ptr_eq(&i.eventfd, &weak));
            *list = keep;
            gone
        };
        for i in &gone {
            i.live.active.store(false, Ordering::Relaxed);
            eventfd_of(&f)?.clear_hook(&i.hook);
        }
        note_resampling(vm);
        return Ok(0);
    }
    if super::vgic::nr_spis(vm) == 0 {
        return Err(Errno::EAGAIN);
    }
    let f = get_eventfd(cur, a.fd as i32)?;
    let resample = if a.flags & e::KVM_IRQFD_FLAG_RESAMPLE != 0 {
        Some(get_eventfd(cur, a.resamplefd as i32)?)
    } else {
        None
    };
    let live = Arc::new(IrqfdHook {
        vm: Arc::downgrade(vm),
        gsi: a.gsi,
        active: AtomicBool::new(true),
    });
    let hook: Arc<dyn EventHook> = live.clone();
    let ef = eventfd_of(&f)?;
    {
        let mut list = vm.events.irqfds.lock();
        list.retain(|i| i.eventfd.strong_count() > 0);
        list.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        ef.set_hook(hook.clone())?;
        list.push(Irqfd {
            gsi: a.gsi,
            eventfd: Arc::downgrade(&f),
            hook,
            live,
            resample,
        });
    }
    note_resampling(vm);
    if ef.ready() {
        raise(vm, a.gsi, a.flags & e::KVM_IRQFD_FLAG_RESAMPLE == 0);
    }
    Ok(0)
}

fn note_resampling(vm: &Vm) {
    let any = vm.events.irqfds.lock().iter().any(|i| i.resample.is_some());
    vm.events.resampling.store(any, Ordering::Relaxed);
}

/// The guest deactivated the level-triggered SPI at `pin` (kvm_notify_acked_irq): each
/// resampling irqfd of the GSI routed there lowers the line and signals its resample eventfd.
pub fn acked(vm: &Vm, pin: u32) {
    if !vm.events.resampling.load(Ordering::Relaxed) {
        return;
    }
    // The last GSI routed to the pin (the routing table's chip map).
    let Some(gsi) = vm
        .events
        .routes
        .lock()
        .iter()
        .rev()
        .find(|r| r.to == RouteTo::Pin(pin))
        .map(|r| r.gsi)
    else {
        return;
    };
    let fds: Vec<Arc<dyn FileOps>> = vm
        .events
        .irqfds
        .lock()
        .iter()
        .filter(|i| i.gsi == gsi && i.eventfd.strong_count() > 0)
        .filter_map(|i| i.resample.clone())
        .collect();
    if fds.is_empty() {
        return;
    }
    super::vgic::set_spi(vm, pin, false);
    for f in fds {
        if let Ok(ef) = eventfd_of(&f) {
            ef.signal(1);
        }
    }
}

/// KVM_IOEVENTFD (kvm_ioeventfd): DEASSIGN drops the one named exactly (ENOENT if none);
/// assigning checks the arguments (EINVAL), the eventfd (EBADF, EINVAL), collisions (EEXIST)
/// and room on the bus (ENOSPC).
pub fn ioeventfd(vm: &Vm, cur: &dyn Caller, arg: usize) -> SysResult<usize> {
    let a = UserPtr::<e::KvmIoeventfd>::new(arg).read()?;
    if a.flags & e::KVM_IOEVENTFD_FLAG_DEASSIGN != 0 {
        let spec = IoeventSpec::of(&a);
        let f = get_eventfd(cur, a.fd)?;
        let mut list = vm.events.ioeventfds.lock();
        let pos = list
            .iter()
            .position(|i| i.spec.same(&spec) && Arc::ptr_eq(&i.eventfd, &f))
            .ok_or(Errno::ENOENT)?;
        list.remove(pos);
        return Ok(0);
    }
    let spec = e::check_assign(&a)?;
    let f = get_eventfd(cur, a.fd)?;
    let mut list = vm.events.ioeventfds.lock();
    if list.iter().any(|i| i.spec.collides(&spec)) {
        return Err(Errno::EEXIST);
    }
    if list.iter().filter(|i| i.spec.bus == spec.bus).count() >= MAX_IOEVENTFDS {
        return Err(Errno::ENOSPC);
    }
    list.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    list.push(Ioeventfd { spec, eventfd: f });
    Ok(0)
}

/// A guest MMIO write of `len` bytes of `val` at `ipa`: true if an ioeventfd took it (its
/// eventfd is signalled and the guest goes on).
pub fn mmio_write(vm: &Vm, ipa: u64, len: u32, val: u64) -> bool {
    let f = {
        let list = vm.events.ioeventfds.lock();
        match list.iter().find(|i| i.spec.takes(ipa, len, val)) {
            Some(i) => i.eventfd.clone(),
            None => return false,
        }
    };
    if let Ok(ef) = eventfd_of(&f) {
        ef.signal(1);
    }
    true
}
