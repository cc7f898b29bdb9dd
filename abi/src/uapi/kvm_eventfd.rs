//! Eventfds wired to a VM (Documentation/virt/kvm/api.rst: KVM_IRQFD, KVM_IOEVENTFD,
//! KVM_SET_GSI_ROUTING): their argument layouts and the pure rules Linux's virt/kvm/eventfd.c
//! and irqchip.c apply (which arguments are refused and with what, when two ioeventfds
//! collide, which guest write an ioeventfd takes, what a routing table may hold).
//!
//! On arm64 a GSI routes to the vGIC's "irqchip" pin N, which is SPI N + 32
//! (arch/arm64/kvm/vgic/vgic-irqfd.c); MSI routes need an ITS.

use super::errno::Errno;
use super::kvm::KVMIO;
use super::tty::iow;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const KVM_SET_GSI_ROUTING: u32 = iow(KVMIO, 0x6a, 8);
pub const KVM_IRQFD: u32 = iow(KVMIO, 0x76, 32);
pub const KVM_IOEVENTFD: u32 = iow(KVMIO, 0x79, 64);

pub const KVM_CAP_IRQ_ROUTING: u64 = 25;
pub const KVM_CAP_IRQFD: u64 = 32;
pub const KVM_CAP_IOEVENTFD: u64 = 36;
pub const KVM_CAP_IRQFD_RESAMPLE: u64 = 82;
pub const KVM_CAP_IOEVENTFD_ANY_LENGTH: u64 = 122;

/// Routes a routing table may hold (KVM_MAX_IRQ_ROUTES), and the vGIC's pins
/// (KVM_IRQCHIP_NUM_PINS: SPIs 32..1019) and irqchips (KVM_NR_IRQCHIPS).
pub const KVM_MAX_IRQ_ROUTES: u32 = 4096;
pub const KVM_IRQCHIP_NUM_PINS: u32 = 1020 - 32;
pub const KVM_NR_IRQCHIPS: u32 = 1;

pub const KVM_IRQFD_FLAG_DEASSIGN: u32 = 1 << 0;
pub const KVM_IRQFD_FLAG_RESAMPLE: u32 = 1 << 1;

/// `struct kvm_irqfd`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmIrqfd {
    pub fd: u32,
    pub gsi: u32,
    pub flags: u32,
    pub resamplefd: u32,
    pub pad: [u8; 16],
}
const _: () = assert!(core::mem::size_of::<KvmIrqfd>() == 32);

pub const KVM_IOEVENTFD_FLAG_DATAMATCH: u32 = 1 << 0;
pub const KVM_IOEVENTFD_FLAG_PIO: u32 = 1 << 1;
pub const KVM_IOEVENTFD_FLAG_DEASSIGN: u32 = 1 << 2;
pub const KVM_IOEVENTFD_FLAG_VIRTIO_CCW_NOTIFY: u32 = 1 << 3;
/// Every flag bit Linux knows (up to kvm_ioeventfd_flag_nr_fast_mmio).
pub const KVM_IOEVENTFD_VALID_FLAG_MASK: u32 = (1 << 5) - 1;

/// `struct kvm_ioeventfd`.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmIoeventfd {
    pub datamatch: u64,
    pub addr: u64,
    pub len: u32,
    pub fd: i32,
    pub flags: u32,
    pub pad: [u8; 36],
}
const _: () = assert!(core::mem::size_of::<KvmIoeventfd>() == 64);

/// The bus an ioeventfd sits on (ioeventfd_bus_from_flags); only MMIO is ever written by an
/// arm64 guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoBus {
    Mmio,
    Pio,
    VirtioCcw,
}

/// One ioeventfd's match: a write of `len` bytes (any length for 0) at exactly `addr`, with
/// the value `datamatch` unless it is a wildcard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoeventSpec {
    pub bus: IoBus,
    pub addr: u64,
    pub len: u32,
    pub datamatch: Option<u64>,
}

impl IoeventSpec {
    /// The arguments' bus, address, length and match, as `kvm_ioeventfd` reads them.
    pub fn of(a: &KvmIoeventfd) -> IoeventSpec {
        let bus = if a.flags & KVM_IOEVENTFD_FLAG_PIO != 0 {
            IoBus::Pio
        } else if a.flags & KVM_IOEVENTFD_FLAG_VIRTIO_CCW_NOTIFY != 0 {
            IoBus::VirtioCcw
        } else {
            IoBus::Mmio
        };
        IoeventSpec {
            bus,
            addr: a.addr,
            len: a.len,
            datamatch: (a.flags & KVM_IOEVENTFD_FLAG_DATAMATCH != 0).then_some(a.datamatch),
        }
    }

    /// Whether the two cannot both be registered (ioeventfd_check_collision): same bus and
    /// address, and one ignores the length, or both have it and one is a wildcard or both
    /// match the same value.
    pub fn collides(&self, o: &IoeventSpec) -> bool {
        self.bus == o.bus
            && self.addr == o.addr
            && (self.len == 0
                || o.len == 0
                || (self.len == o.len
                    && (self.datamatch.is_none()
                        || o.datamatch.is_none()
                        || self.datamatch == o.datamatch)))
    }

    /// Whether a guest MMIO write of `len` bytes of `val` at `addr` is this one's
    /// (ioeventfd_in_range).
    pub fn takes(&self, addr: u64, len: u32, val: u64) -> bool {
        self.bus == IoBus::Mmio
            && addr == self.addr
            && (self.len == 0 || (len == self.len && self.datamatch.is_none_or(|d| d == val)))
    }

    /// Whether a KVM_IOEVENTFD with DEASSIGN names this one (kvm_deassign_ioeventfd_idx:
    /// the same bus, address, length, wildcard-ness and, for a match, value).
    pub fn same(&self, o: &IoeventSpec) -> bool {
        self == o
    }
}

/// KVM_IOEVENTFD's checks before any descriptor is looked at (kvm_assign_ioeventfd): the
/// length a natural size or 0, no wrap, known flags, no value match without a length.
pub fn check_assign(a: &KvmIoeventfd) -> Result<IoeventSpec, Errno> {
    if !matches!(a.len, 0 | 1 | 2 | 4 | 8) {
        return Err(Errno::EINVAL);
    }
    if a.addr.checked_add(a.len as u64).is_none() {
        return Err(Errno::EINVAL);
    }
    if a.flags & !KVM_IOEVENTFD_VALID_FLAG_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    if a.len == 0 && a.flags & KVM_IOEVENTFD_FLAG_DATAMATCH != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(IoeventSpec::of(a))
}

pub const KVM_IRQ_ROUTING_IRQCHIP: u32 = 1;
pub const KVM_IRQ_ROUTING_MSI: u32 = 2;
pub const KVM_MSI_VALID_DEVID: u32 = 1 << 0;

/// `struct kvm_irq_routing_entry` (the union as its 8 words); `struct kvm_irq_routing` is
/// u32 nr, u32 flags and `nr` of these.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmIrqRoutingEntry {
    pub gsi: u32,
    pub ty: u32,
    pub flags: u32,
    pub pad: u32,
    pub u: [u32; 8],
}
const _: () = assert!(core::mem::size_of::<KvmIrqRoutingEntry>() == 48);

/// Where one GSI goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteTo {
    /// The vGIC's pin (SPI pin + 32).
    Pin(u32),
    /// A message for an ITS: its doorbell address, data (the EventID), flags
    /// (KVM_MSI_VALID_DEVID) and DeviceID (`struct kvm_irq_routing_msi`).
    Msi {
        address: u64,
        data: u32,
        flags: u32,
        devid: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub gsi: u32,
    pub to: RouteTo,
}

/// A routing table as KVM_SET_GSI_ROUTING checks it (kvm_set_irq_routing, setup_routing_entry,
/// kvm_set_routing_entry): every GSI below KVM_MAX_IRQ_ROUTES first, then each entry in order:
/// flags (only DEVID, for MSI), one route per GSI except several irqchips, a known type, a pin
/// and irqchip in range. Any failure is EINVAL and leaves the old table.
pub fn check_routing(entries: &[KvmIrqRoutingEntry]) -> Result<(), Errno> {
    if entries.iter().any(|e| e.gsi >= KVM_MAX_IRQ_ROUTES) {
        return Err(Errno::EINVAL);
    }
    for (i, e) in entries.iter().enumerate() {
        let allowed = if e.ty == KVM_IRQ_ROUTING_MSI {
            KVM_MSI_VALID_DEVID
        } else {
            0
        };
        if e.flags & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        // arm64 has one irqchip, so a GSI has at most one route of any kind.
        if entries[..i].iter().any(|o| o.gsi == e.gsi) {
            return Err(Errno::EINVAL);
        }
        route_of(e)?;
    }
    Ok(())
}

/// One entry's route: a pin and irqchip in range, or an MSI (kvm_set_routing_entry).
pub fn route_of(e: &KvmIrqRoutingEntry) -> Result<Route, Errno> {
    let to = match e.ty {
        KVM_IRQ_ROUTING_IRQCHIP => {
            let (chip, pin) = (e.u[0], e.u[1]);
            if pin >= KVM_IRQCHIP_NUM_PINS || chip >= KVM_NR_IRQCHIPS {
                return Err(Errno::EINVAL);
            }
            RouteTo::Pin(pin)
        }
        KVM_IRQ_ROUTING_MSI => RouteTo::Msi {
            address: ((e.u[1] as u64) << 32) | e.u[0] as u64,
            data: e.u[2],
            flags: e.flags,
            devid: e.u[3],
        },
        _ => return Err(Errno::EINVAL),
    };
    Ok(Route { gsi: e.gsi, to })
}

/// The table the vGIC's initialisation installs (kvm_vgic_setup_default_irq_routing): GSI N
/// to pin N for each of its SPIs.
pub fn default_routing(nr_spis: u32) -> impl Iterator<Item = Route> {
    (0..nr_spis).map(|i| Route {
        gsi: i,
        to: RouteTo::Pin(i),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ioev(addr: u64, len: u32, flags: u32, datamatch: u64) -> KvmIoeventfd {
        KvmIoeventfd {
            datamatch,
            addr,
            len,
            fd: 3,
            flags,
            pad: [0; 36],
        }
    }

    #[test]
    fn ioeventfd_arguments() {
        assert_eq!(check_assign(&ioev(0x1000, 3, 0, 0)), Err(Errno::EINVAL));
        assert_eq!(
            check_assign(&ioev(u64::MAX - 1, 4, 0, 0)),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check_assign(&ioev(0x1000, 4, 1 << 5, 0)),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check_assign(&ioev(0x1000, 0, KVM_IOEVENTFD_FLAG_DATAMATCH, 0)),
            Err(Errno::EINVAL)
        );
        let s = check_assign(&ioev(0x1000, 4, KVM_IOEVENTFD_FLAG_DATAMATCH, 7)).unwrap();
        assert_eq!(s.datamatch, Some(7));
        assert!(s.takes(0x1000, 4, 7));
        assert!(!s.takes(0x1000, 4, 8));
        assert!(!s.takes(0x1000, 2, 7));
        assert!(!s.takes(0x1004, 4, 7));
        let any = check_assign(&ioev(0x2000, 0, 0, 0)).unwrap();
        assert!(any.takes(0x2000, 1, 5) && any.takes(0x2000, 8, 0));
        let pio = check_assign(&ioev(0x1000, 4, KVM_IOEVENTFD_FLAG_PIO, 0)).unwrap();
        assert!(!pio.takes(0x1000, 4, 0));
    }

    #[test]
    fn ioeventfd_collisions() {
        let m = |len, dm: Option<u64>| IoeventSpec {
            bus: IoBus::Mmio,
            addr: 0x1000,
            len,
            datamatch: dm,
        };
        assert!(m(4, Some(1)).collides(&m(4, Some(1))));
        assert!(!m(4, Some(1)).collides(&m(4, Some(2))));
        assert!(m(4, None).collides(&m(4, Some(2))));
        assert!(!m(4, None).collides(&m(2, None)));
        assert!(m(0, None).collides(&m(2, Some(3))));
        let mut p = m(4, None);
        p.bus = IoBus::Pio;
        assert!(!p.collides(&m(4, None)));
    }

    fn entry(gsi: u32, ty: u32, flags: u32, chip: u32, pin: u32) -> KvmIrqRoutingEntry {
        let mut u = [0; 8];
        u[0] = chip;
        u[1] = pin;
        KvmIrqRoutingEntry {
            gsi,
            ty,
            flags,
            pad: 0,
            u,
        }
    }

    #[test]
    fn routing_rules() {
        let t = [
            entry(0, KVM_IRQ_ROUTING_IRQCHIP, 0, 0, 5),
            entry(1, KVM_IRQ_ROUTING_MSI, KVM_MSI_VALID_DEVID, 0, 0),
        ];
        assert_eq!(check_routing(&t), Ok(()));
        assert_eq!(route_of(&t[0]).unwrap().to, RouteTo::Pin(5));
        assert!(matches!(
            route_of(&t[1]).unwrap().to,
            RouteTo::Msi {
                flags: KVM_MSI_VALID_DEVID,
                ..
            }
        ));
        let bad = |e: &[KvmIrqRoutingEntry]| check_routing(e).unwrap_err();
        assert_eq!(bad(&[entry(4096, 1, 0, 0, 0)]), Errno::EINVAL);
        assert_eq!(bad(&[entry(0, 1, 0, 0, 988)]), Errno::EINVAL);
        assert_eq!(bad(&[entry(0, 1, 0, 1, 0)]), Errno::EINVAL);
        assert_eq!(bad(&[entry(0, 1, 1, 0, 0)]), Errno::EINVAL);
        assert_eq!(bad(&[entry(0, 3, 0, 0, 0)]), Errno::EINVAL);
        assert_eq!(
            bad(&[entry(2, 1, 0, 0, 1), entry(2, 1, 0, 0, 2)]),
            Errno::EINVAL
        );
        assert_eq!(check_routing(&[entry(0, 1, 0, 0, 987)]), Ok(()));
        assert_eq!(default_routing(3).last().unwrap().to, RouteTo::Pin(2));
    }
}
