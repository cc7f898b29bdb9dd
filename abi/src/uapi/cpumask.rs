//! CPU masks: a fixed-size bit set of CPU numbers, the sizes Linux's affinity syscalls accept
//! for it, and the two ways /proc and /sys print one.
//!
//! The kernel's cpumask is `nr_cpu_ids` bits rounded up to whole 64-bit words (Linux's
//! `cpumask_size()` on a kernel built for more CPUs than the machine has, as distribution
//! kernels are): with 4 CPUs a mask is 8 bytes, with 256 it is 32.

use crate::uapi::errno::{Errno, SysResult};
use core::fmt::{self, Write};

/// The most CPUs Svelt runs on: QEMU virt's limit with GICv3 (and its affinity routing).
pub const NR_CPUS: usize = 512;
const WORDS: usize = NR_CPUS / 64;

/// A set of CPU numbers below [`NR_CPUS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuMask([u64; WORDS]);

impl Default for CpuMask {
    fn default() -> CpuMask {
        CpuMask::EMPTY
    }
}

impl CpuMask {
    pub const EMPTY: CpuMask = CpuMask([0; WORDS]);
    pub const FULL: CpuMask = CpuMask([u64::MAX; WORDS]);
    pub const WORDS: usize = WORDS;

    /// CPUs `0..n`.
    pub fn first(n: usize) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        for (i, w) in m.0.iter_mut().enumerate() {
            let lo = i * 64;
            *w = match n.saturating_sub(lo) {
                0 => 0,
                k if k >= 64 => u64::MAX,
                k => (1 << k) - 1,
            };
        }
        m
    }

    pub const fn from_words(w: [u64; WORDS]) -> CpuMask {
        CpuMask(w)
    }

    pub const fn words(&self) -> &[u64; WORDS] {
        &self.0
    }

    pub fn set(&mut self, cpu: usize) {
        if cpu < NR_CPUS {
            self.0[cpu / 64] |= 1 << (cpu % 64);
        }
    }

    pub fn contains(&self, cpu: usize) -> bool {
        cpu < NR_CPUS && self.0[cpu / 64] >> (cpu % 64) & 1 != 0
    }

    pub fn and(&self, o: &CpuMask) -> CpuMask {
        let mut m = *self;
        for (a, b) in m.0.iter_mut().zip(o.0) {
            *a &= b;
        }
        m
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    pub fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The CPUs in the set, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..NR_CPUS).filter(|&c| self.contains(c))
    }

    /// A mask from user bytes (little-endian words, as arm64 Linux lays out `unsigned long`
    /// arrays); bytes past [`NR_CPUS`] bits are ignored, missing ones are zero.
    pub fn from_le_bytes(b: &[u8]) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        for (i, &byte) in b.iter().take(NR_CPUS / 8).enumerate() {
            m.0[i / 8] |= (byte as u64) << (8 * (i % 8));
        }
        m
    }

    /// The first `out.len()` bytes of the mask, little-endian.
    pub fn write_le_bytes(&self, out: &mut [u8]) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.0.get(i / 8).map_or(0, |w| (w >> (8 * (i % 8))) as u8);
        }
    }
}

/// The kernel's cpumask size in bytes for `nr_cpu_ids` CPUs (whole 64-bit words).
pub fn cpumask_size(nr_cpu_ids: usize) -> usize {
    nr_cpu_ids.clamp(1, NR_CPUS).div_ceil(64) * 8
}

/// sched_getaffinity's length rules: the buffer must hold `nr_cpu_ids` bits and be a whole
/// number of words (else EINVAL); the syscall returns (and copies) the smaller of the buffer
/// and the kernel's mask.
pub fn getaffinity_len(len: usize, nr_cpu_ids: usize) -> SysResult<usize> {
    if len.saturating_mul(8) < nr_cpu_ids || !len.is_multiple_of(8) {
        return Err(Errno::EINVAL);
    }
    Ok(len.min(cpumask_size(nr_cpu_ids)))
}

/// How many bytes sched_setaffinity reads from a `len`-byte buffer: at most the kernel's mask;
/// a shorter buffer leaves the other CPUs' bits clear.
pub fn setaffinity_len(len: usize, nr_cpu_ids: usize) -> usize {
    len.min(cpumask_size(nr_cpu_ids))
}

/// A CPU mask as `%*pb` prints it: `nr` bits in hex, in comma-separated groups of 32 bits, the
/// most significant first.
pub fn write_cpu_mask(out: &mut impl Write, mask: &CpuMask, nr: usize) -> fmt::Result {
    let nr = nr.clamp(1, NR_CPUS);
    let group = |g: usize| (mask.0[g / 2] >> (32 * (g % 2))) as u32;
    let groups = nr.div_ceil(32);
    for g in (0..groups).rev() {
        let bits = if g == groups - 1 { nr - 32 * g } else { 32 };
        let v = if bits == 32 {
            group(g)
        } else {
            group(g) & ((1 << bits) - 1)
        };
        if g != groups - 1 {
            out.write_char(',')?;
        }
        write!(out, "{:0w$x}", v, w = bits.div_ceil(4))?;
    }
    Ok(())
}

/// A CPU mask as `%*pbl` prints it: "0-3,5".
pub fn write_cpu_list(out: &mut impl Write, mask: &CpuMask) -> fmt::Result {
    let mut first = true;
    let mut cpu = 0;
    while cpu < NR_CPUS {
        if !mask.contains(cpu) {
            cpu += 1;
            continue;
        }
        let start = cpu;
        while cpu < NR_CPUS && mask.contains(cpu) {
            cpu += 1;
        }
        if !first {
            out.write_char(',')?;
        }
        first = false;
        if cpu - 1 == start {
            write!(out, "{start}")?;
        } else {
            write!(out, "{}-{}", start, cpu - 1)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    fn mask(m: &CpuMask, n: usize) -> String {
        let mut s = String::new();
        write_cpu_mask(&mut s, m, n).unwrap();
        s
    }

    fn list(m: &CpuMask) -> String {
        let mut s = String::new();
        write_cpu_list(&mut s, m).unwrap();
        s
    }

    fn low(w: u64) -> CpuMask {
        let mut a = [0; WORDS];
        a[0] = w;
        CpuMask(a)
    }

    #[test]
    fn masks_print_as_linux_does() {
        assert_eq!(mask(&low(1), 1), "1");
        assert_eq!(mask(&low(u64::MAX), 4), "f");
        assert_eq!(mask(&low(0x3), 8), "03");
        assert_eq!(mask(&low(u64::MAX), 36), "f,ffffffff");
        assert_eq!(mask(&CpuMask::first(64), 64), "ffffffff,ffffffff");
        let mut m = CpuMask::EMPTY;
        m.set(0);
        m.set(255);
        assert_eq!(
            mask(&m, 256),
            "80000000,00000000,00000000,00000000,00000000,00000000,00000000,00000001"
        );
        assert_eq!(mask(&CpuMask::first(66), 66), "3,ffffffff,ffffffff");
    }

    #[test]
    fn lists_print_ranges() {
        assert_eq!(list(&low(1)), "0");
        assert_eq!(list(&low(0b1011)), "0-1,3");
        assert_eq!(list(&low(0xf0)), "4-7");
        assert_eq!(list(&low(u64::MAX)), "0-63");
        assert_eq!(list(&CpuMask::EMPTY), "");
        assert_eq!(list(&CpuMask::first(256)), "0-255");
        assert_eq!(list(&CpuMask::FULL), "0-511");
        let mut m = CpuMask::first(3);
        m.set(64);
        m.set(65);
        m.set(511);
        assert_eq!(list(&m), "0-2,64-65,511");
    }

    #[test]
    fn first_and_counts() {
        assert_eq!(CpuMask::first(0), CpuMask::EMPTY);
        assert_eq!(CpuMask::first(512), CpuMask::FULL);
        assert_eq!(CpuMask::first(65).count(), 65);
        assert!(CpuMask::first(65).contains(64) && !CpuMask::first(65).contains(65));
        assert!(!CpuMask::FULL.contains(512));
        let a = CpuMask::first(100).and(&low(0b110));
        assert_eq!(a.iter().collect::<std::vec::Vec<_>>(), [1, 2]);
    }

    #[test]
    fn bytes_round_trip_little_endian() {
        let m = CpuMask::from_le_bytes(&[0x01, 0, 0, 0, 0, 0, 0, 0x80, 0x02]);
        assert_eq!(m.iter().collect::<std::vec::Vec<_>>(), [0, 63, 65]);
        let mut out = [0xffu8; 10];
        m.write_le_bytes(&mut out);
        assert_eq!(out, [0x01, 0, 0, 0, 0, 0, 0, 0x80, 0x02, 0]);
        // More bytes than the set holds: the excess reads as zero and is ignored on the way in.
        let mut big = [0u8; 80];
        CpuMask::FULL.write_le_bytes(&mut big);
        assert!(big[..64].iter().all(|&b| b == 0xff) && big[64..].iter().all(|&b| b == 0));
        assert_eq!(CpuMask::from_le_bytes(&[0xff; 80]), CpuMask::FULL);
    }

    #[test]
    fn affinity_lengths_follow_linux() {
        // 4 CPUs: one word; any whole number of words is accepted, 8 bytes are returned.
        assert_eq!(getaffinity_len(8, 4), Ok(8));
        assert_eq!(getaffinity_len(128, 4), Ok(8));
        assert_eq!(getaffinity_len(4, 4), Err(Errno::EINVAL));
        assert_eq!(getaffinity_len(12, 4), Err(Errno::EINVAL));
        assert_eq!(getaffinity_len(0, 1), Err(Errno::EINVAL));
        // 64 CPUs still fit one word; 65 need two.
        assert_eq!(getaffinity_len(8, 64), Ok(8));
        assert_eq!(getaffinity_len(8, 65), Err(Errno::EINVAL));
        assert_eq!(getaffinity_len(16, 65), Ok(16));
        // 256 CPUs: a 128-bit buffer is too small, 256 bits exactly enough.
        assert_eq!(getaffinity_len(16, 256), Err(Errno::EINVAL));
        assert_eq!(getaffinity_len(32, 256), Ok(32));
        assert_eq!(getaffinity_len(1024, 256), Ok(32));
        assert_eq!(getaffinity_len(usize::MAX & !7, 256), Ok(32));
        assert_eq!(setaffinity_len(4, 256), 4);
        assert_eq!(setaffinity_len(128, 256), 32);
        assert_eq!(cpumask_size(512), 64);
    }
}
