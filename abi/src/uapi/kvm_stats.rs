//! KVM's binary statistics (KVM_GET_STATS_FD, Documentation/virt/kvm/api.rst): the file a VM
//! or vCPU hands out is a header, an id string, one descriptor per statistic and the values,
//! laid out as Linux's `struct kvm_stats_header` and `struct kvm_stats_desc` say and read at
//! any offset (virt/kvm/binary_stats.c). The statistics are Linux's arm64 ones, in its order
//! (the generic VM and vCPU ones of include/linux/kvm_host.h, then arch/arm64/kvm/guest.c's),
//! so that a tool which looks one up by name finds it.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Bytes of the id string and of each descriptor's name (KVM_STATS_NAME_SIZE).
pub const KVM_STATS_NAME_SIZE: usize = 48;

pub const KVM_STATS_TYPE_CUMULATIVE: u32 = 0;
pub const KVM_STATS_TYPE_INSTANT: u32 = 1;
pub const KVM_STATS_TYPE_PEAK: u32 = 2;
pub const KVM_STATS_TYPE_LINEAR_HIST: u32 = 3;
pub const KVM_STATS_TYPE_LOG_HIST: u32 = 4;
pub const KVM_STATS_TYPE_MASK: u32 = 0xf;
pub const KVM_STATS_UNIT_NONE: u32 = 0 << 4;
pub const KVM_STATS_UNIT_BYTES: u32 = 1 << 4;
pub const KVM_STATS_UNIT_SECONDS: u32 = 2 << 4;
pub const KVM_STATS_UNIT_CYCLES: u32 = 3 << 4;
pub const KVM_STATS_UNIT_BOOLEAN: u32 = 4 << 4;
pub const KVM_STATS_UNIT_MASK: u32 = 0xf << 4;
pub const KVM_STATS_BASE_POW10: u32 = 0 << 8;
pub const KVM_STATS_BASE_POW2: u32 = 1 << 8;
pub const KVM_STATS_BASE_MASK: u32 = 0xf << 8;

/// `struct kvm_stats_header`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmStatsHeader {
    pub flags: u32,
    pub name_size: u32,
    pub num_desc: u32,
    pub id_offset: u32,
    pub desc_offset: u32,
    pub data_offset: u32,
}

/// `struct kvm_stats_desc` without its name, which follows it (KVM_STATS_NAME_SIZE bytes).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmStatsDesc {
    pub flags: u32,
    pub exponent: i16,
    pub size: u16,
    pub offset: u32,
    pub bucket_size: u32,
}

/// Bytes of one descriptor with its name.
pub const DESC_SIZE: usize = core::mem::size_of::<KvmStatsDesc>() + KVM_STATS_NAME_SIZE;

/// One statistic: its name, kind and number of 64-bit values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub name: &'static str,
    pub flags: u32,
    pub exponent: i16,
    pub size: u16,
}

/// A counter (STATS_DESC_COUNTER).
const fn counter(name: &'static str) -> Stat {
    Stat {
        name,
        flags: KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_NONE | KVM_STATS_BASE_POW10,
        exponent: 0,
        size: 1,
    }
}

/// Nanoseconds summed (STATS_DESC_TIME_NSEC).
const fn time_ns(name: &'static str) -> Stat {
    Stat {
        name,
        flags: KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_SECONDS | KVM_STATS_BASE_POW10,
        exponent: -9,
        size: 1,
    }
}

/// A logarithmic histogram of nanoseconds (STATS_DESC_LOGHIST_TIME_NSEC).
const fn log_hist_ns(name: &'static str) -> Stat {
    Stat {
        name,
        flags: KVM_STATS_TYPE_LOG_HIST | KVM_STATS_UNIT_SECONDS | KVM_STATS_BASE_POW10,
        exponent: -9,
        size: HALT_POLL_HIST_COUNT as u16,
    }
}

/// Buckets of the halt histograms (HALT_POLL_HIST_COUNT).
pub const HALT_POLL_HIST_COUNT: usize = 32;

/// A VM's statistics (KVM_GENERIC_VM_STATS; arm64 adds none).
pub const VM_STATS: [Stat; 2] = [
    counter("remote_tlb_flush"),
    counter("remote_tlb_flush_requests"),
];

/// Value indices (in 64-bit words) of the VM's statistics.
pub mod vm {
    pub const REMOTE_TLB_FLUSH: usize = 0;
    pub const REMOTE_TLB_FLUSH_REQUESTS: usize = 1;
    pub const WORDS: usize = 2;
}

/// A vCPU's statistics (KVM_GENERIC_VCPU_STATS, then arm64's `kvm_vcpu_stats_desc`).
pub const VCPU_STATS: [Stat; 18] = [
    counter("halt_successful_poll"),
    counter("halt_attempted_poll"),
    counter("halt_poll_invalid"),
    counter("halt_wakeup"),
    time_ns("halt_poll_success_ns"),
    time_ns("halt_poll_fail_ns"),
    time_ns("halt_wait_ns"),
    log_hist_ns("halt_poll_success_hist"),
    log_hist_ns("halt_poll_fail_hist"),
    log_hist_ns("halt_wait_hist"),
    Stat {
        name: "blocking",
        flags: KVM_STATS_TYPE_INSTANT | KVM_STATS_UNIT_BOOLEAN | KVM_STATS_BASE_POW10,
        exponent: 0,
        size: 1,
    },
    counter("hvc_exit_stat"),
    counter("wfe_exit_stat"),
    counter("wfi_exit_stat"),
    counter("mmio_exit_user"),
    counter("mmio_exit_kernel"),
    counter("signal_exits"),
    counter("exits"),
];

/// Value indices (in 64-bit words) of the vCPU's statistics.
pub mod vcpu {
    use super::HALT_POLL_HIST_COUNT as H;
    pub const HALT_WAKEUP: usize = 3;
    pub const HALT_WAIT_NS: usize = 6;
    pub const HALT_WAIT_HIST: usize = 7 + 2 * H;
    pub const BLOCKING: usize = 7 + 3 * H;
    pub const HVC_EXIT_STAT: usize = BLOCKING + 1;
    pub const WFE_EXIT_STAT: usize = BLOCKING + 2;
    pub const WFI_EXIT_STAT: usize = BLOCKING + 3;
    pub const MMIO_EXIT_USER: usize = BLOCKING + 4;
    pub const MMIO_EXIT_KERNEL: usize = BLOCKING + 5;
    pub const SIGNAL_EXITS: usize = BLOCKING + 6;
    pub const EXITS: usize = BLOCKING + 7;
    pub const WORDS: usize = EXITS + 1;
}

/// The bucket of a logarithmic histogram of `buckets` buckets that `value` counts in: its
/// highest set bit's number from 1 (0 for 0), the last bucket taking the rest
/// (`kvm_stats_log_hist_update`).
pub fn log_hist_bucket(value: u64, buckets: usize) -> usize {
    ((64 - value.leading_zeros()) as usize).min(buckets - 1)
}

/// The header of a statistics file with these statistics: the id string right after it, then
/// the descriptors, then the values.
pub fn header(stats: &[Stat]) -> KvmStatsHeader {
    let id_offset = core::mem::size_of::<KvmStatsHeader>();
    let desc_offset = id_offset + KVM_STATS_NAME_SIZE;
    KvmStatsHeader {
        flags: 0,
        name_size: KVM_STATS_NAME_SIZE as u32,
        num_desc: stats.len() as u32,
        id_offset: id_offset as u32,
        desc_offset: desc_offset as u32,
        data_offset: (desc_offset + stats.len() * DESC_SIZE) as u32,
    }
}

/// Copies into `buf` the bytes at `pos` of the statistics file of `stats`, with id string
/// `id` (cut to leave its NUL) and values `data`; returns how many (0 at or past the end), as
/// `kvm_stats_read` does.
pub fn read(id: &str, stats: &[Stat], data: &[u64], pos: u64, buf: &mut [u8]) -> usize {
    let mut done = 0;
    // Each piece of the file in order, no bigger than a descriptor; those wholly before `pos`
    // are skipped, the one `pos` falls in is cut.
    let mut at = 0u64;
    let mut emit = |piece: &[u8], done: &mut usize| {
        let (start, end) = (at, at + piece.len() as u64);
        at = end;
        let from = pos + *done as u64;
        if *done == buf.len() || end <= from || start > from {
            return;
        }
        let skip = (from - start) as usize;
        let n = (piece.len() - skip).min(buf.len() - *done);
        buf[*done..*done + n].copy_from_slice(&piece[skip..skip + n]);
        *done += n;
    };
    emit(header(stats).as_bytes(), &mut done);
    let mut name = [0u8; KVM_STATS_NAME_SIZE];
    let n = id.len().min(KVM_STATS_NAME_SIZE - 1);
    name[..n].copy_from_slice(&id.as_bytes()[..n]);
    emit(&name, &mut done);
    let mut offset = 0u32;
    for s in stats {
        let mut d = [0u8; DESC_SIZE];
        let desc = KvmStatsDesc {
            flags: s.flags,
            exponent: s.exponent,
            size: s.size,
            offset,
            bucket_size: 0,
        };
        d[..16].copy_from_slice(desc.as_bytes());
        let n = s.name.len().min(KVM_STATS_NAME_SIZE - 1);
        d[16..16 + n].copy_from_slice(&s.name.as_bytes()[..n]);
        emit(&d, &mut done);
        offset += s.size as u32 * 8;
    }
    for v in data {
        emit(&v.to_le_bytes(), &mut done);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(stats: &[Stat]) -> usize {
        stats.iter().map(|s| s.size as usize).sum()
    }

    #[test]
    fn layout_is_linuxs() {
        assert_eq!(core::mem::size_of::<KvmStatsHeader>(), 24);
        assert_eq!(core::mem::size_of::<KvmStatsDesc>(), 16);
        assert_eq!(words(&VM_STATS), vm::WORDS);
        assert_eq!(words(&VCPU_STATS), vcpu::WORDS);
        assert_eq!(vcpu::WORDS, 111);
        let h = header(&VCPU_STATS);
        assert_eq!((h.id_offset, h.desc_offset), (24, 72));
        assert_eq!(h.data_offset, 72 + 18 * 64);
        // Index constants agree with the table's order.
        let index = |name| {
            let mut w = 0;
            for s in VCPU_STATS {
                if s.name == name {
                    return w;
                }
                w += s.size as usize;
            }
            panic!("{name}");
        };
        assert_eq!(index("halt_wakeup"), vcpu::HALT_WAKEUP);
        assert_eq!(index("halt_wait_ns"), vcpu::HALT_WAIT_NS);
        assert_eq!(index("halt_wait_hist"), vcpu::HALT_WAIT_HIST);
        assert_eq!(index("blocking"), vcpu::BLOCKING);
        assert_eq!(index("hvc_exit_stat"), vcpu::HVC_EXIT_STAT);
        assert_eq!(index("wfi_exit_stat"), vcpu::WFI_EXIT_STAT);
        assert_eq!(index("mmio_exit_user"), vcpu::MMIO_EXIT_USER);
        assert_eq!(index("signal_exits"), vcpu::SIGNAL_EXITS);
        assert_eq!(index("exits"), vcpu::EXITS);
    }

    #[test]
    fn reads_at_any_offset() {
        let data: [u64; 2] = [7, 0x0102_0304_0506_0708];
        let mut whole = [0u8; 512];
        let len = read("kvm-42", &VM_STATS, &data, 0, &mut whole);
        let h = header(&VM_STATS);
        assert_eq!(len, h.data_offset as usize + 16);
        assert_eq!(&whole[..4], &[0, 0, 0, 0]);
        assert_eq!(&whole[4..8], &48u32.to_le_bytes());
        assert_eq!(&whole[24..31], b"kvm-42\0");
        let d1 = h.desc_offset as usize + DESC_SIZE;
        assert_eq!(&whole[d1 + 8..d1 + 12], &8u32.to_le_bytes()); // offset
        assert_eq!(&whole[d1 + 16..d1 + 16 + 25], b"remote_tlb_flush_requests");
        let at = h.data_offset as usize;
        assert_eq!(&whole[at + 8..at + 16], &data[1].to_le_bytes());
        // Every offset and length gives the same bytes.
        for pos in 0..len + 2 {
            for n in [1, 3, 8, 64, 100] {
                let mut b = [0u8; 100];
                let got = read("kvm-42", &VM_STATS, &data, pos as u64, &mut b[..n]);
                assert_eq!(got, n.min(len.saturating_sub(pos)));
                assert_eq!(&b[..got], &whole[pos..pos + got]);
            }
        }
    }

    #[test]
    fn log_histogram_buckets() {
        assert_eq!(log_hist_bucket(0, 32), 0);
        assert_eq!(log_hist_bucket(1, 32), 1);
        assert_eq!(log_hist_bucket(1023, 32), 10);
        assert_eq!(log_hist_bucket(1024, 32), 11);
        assert_eq!(log_hist_bucket(u64::MAX, 32), 31);
    }
}
