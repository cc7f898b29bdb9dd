//! Vector-length sets and their discovery.
//!
//! SVE and SME vector lengths are multiples of 16 bytes ("quadwords", vq) from 16 to 256 bytes.
//! A CPU implements some subset; software finds it by writing a requested LEN into ZCR_EL1 or
//! SMCR_EL1 and reading back the effective length with RDVL/RDSVL (the hardware rounds down to the
//! largest implemented length, or up to the smallest when the request is below every length).

use core::fmt;

/// The architectural maximum vector length in quadwords (2048 bits).
pub const VQ_MAX: u32 = 16;
/// Bytes in one quadword.
pub const VQ_BYTES: u32 = 16;

/// A set of vector lengths, one bit per vq (bit `vq - 1`).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct VlSet(u16);

impl VlSet {
    pub const EMPTY: VlSet = VlSet(0);

    pub const fn from_bits(bits: u16) -> VlSet {
        VlSet(bits)
    }

    pub const fn bits(self) -> u16 {
        self.0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Adds a length in bytes; lengths that are not a multiple of 16 in 16..=256 are ignored.
    pub fn insert_bytes(&mut self, vl: u32) {
        if vl.is_multiple_of(VQ_BYTES) && (1..=VQ_MAX).contains(&(vl / VQ_BYTES)) {
            self.0 |= 1 << (vl / VQ_BYTES - 1);
        }
    }

    pub fn contains_bytes(self, vl: u32) -> bool {
        vl.is_multiple_of(VQ_BYTES)
            && (1..=VQ_MAX).contains(&(vl / VQ_BYTES))
            && self.0 & (1 << (vl / VQ_BYTES - 1)) != 0
    }

    pub const fn intersect(self, other: VlSet) -> VlSet {
        VlSet(self.0 & other.0)
    }

    /// Largest length in bytes, if any.
    pub fn max_bytes(self) -> Option<u32> {
        (self.0 != 0).then(|| (16 - self.0.leading_zeros()) * VQ_BYTES)
    }

    /// Smallest length in bytes, if any.
    pub fn min_bytes(self) -> Option<u32> {
        (self.0 != 0).then(|| (self.0.trailing_zeros() + 1) * VQ_BYTES)
    }

    /// The largest member not above `vl` bytes, else the smallest member (the hardware's rule).
    pub fn round_bytes(self, vl: u32) -> Option<u32> {
        self.iter_bytes().rfind(|&v| v <= vl).or(self.min_bytes())
    }

    /// Lengths in bytes, ascending.
    pub fn iter_bytes(self) -> impl DoubleEndedIterator<Item = u32> {
        (1..=VQ_MAX)
            .filter(move |vq| self.0 & (1 << (vq - 1)) != 0)
            .map(|vq| vq * VQ_BYTES)
    }
}

/// Comma-separated lengths in bytes, ascending: `16,32,64`.
impl fmt::Display for VlSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, vl) in self.iter_bytes().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{vl}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for VlSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VlSet[{self}]")
    }
}

/// Finds every implemented vector length.
///
/// `set_len_read_vl(len)` must program the LEN field (requested vq - 1) and return the effective
/// vector length in bytes as RDVL/RDSVL report it. Each implemented length is visited once, from
/// the largest down, so at most 16 probes are made.
pub fn probe(mut set_len_read_vl: impl FnMut(u32) -> u32) -> VlSet {
    let mut set = VlSet::EMPTY;
    let mut vq = VQ_MAX;
    while vq >= 1 {
        let got = set_len_read_vl(vq - 1) / VQ_BYTES;
        if got == 0 || got > vq {
            // Asked below the smallest implemented length (or the hardware answered nonsense).
            break;
        }
        set.insert_bytes(got * VQ_BYTES);
        vq = got - 1;
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{format, vec, vec::Vec};

    /// A CPU model that rounds like the architecture: largest implemented <= requested, else the
    /// smallest implemented.
    fn fake_cpu(implemented: &[u32]) -> impl FnMut(u32) -> u32 + '_ {
        move |len| {
            let want = (len + 1) * 16;
            implemented
                .iter()
                .copied()
                .filter(|&v| v <= want)
                .max()
                .unwrap_or_else(|| *implemented.iter().min().unwrap())
        }
    }

    #[test]
    fn probe_finds_every_multiple_of_16() {
        let all: Vec<u32> = (1..=16).map(|q| q * 16).collect();
        let set = probe(fake_cpu(&all));
        assert_eq!(set.iter_bytes().collect::<Vec<_>>(), all);
        assert_eq!(
            format!("{set}"),
            "16,32,48,64,80,96,112,128,144,160,176,192,208,224,240,256"
        );
    }

    #[test]
    fn probe_finds_power_of_two_sme_sets_without_16() {
        let set = probe(fake_cpu(&[32, 64, 256]));
        assert_eq!(format!("{set}"), "32,64,256");
        assert_eq!(set.min_bytes(), Some(32));
        assert_eq!(set.max_bytes(), Some(256));
    }

    #[test]
    fn probe_visits_each_length_once() {
        let mut calls = vec![];
        let mut cpu = fake_cpu(&[16, 32, 64]);
        let set = probe(|len| {
            calls.push(len);
            cpu(len)
        });
        assert_eq!(format!("{set}"), "16,32,64");
        // LEN 15 answers 64, so the next request is just below it (LEN 2, 48 bytes), and so on.
        assert_eq!(calls, vec![15, 2, 0]);
    }

    #[test]
    fn probe_stops_on_nonsense() {
        assert!(probe(|_| 0).is_empty());
        assert_eq!(format!("{}", probe(|_| 16)), "16");
    }

    #[test]
    fn rounding_follows_the_hardware_rule() {
        let set = probe(fake_cpu(&[32, 64, 256]));
        assert_eq!(set.round_bytes(48), Some(32));
        assert_eq!(set.round_bytes(16), Some(32));
        assert_eq!(set.round_bytes(1000), Some(256));
        assert_eq!(VlSet::EMPTY.round_bytes(64), None);
    }

    #[test]
    fn insert_ignores_invalid_lengths() {
        let mut s = VlSet::EMPTY;
        for v in [0, 8, 17, 272, 512] {
            s.insert_bytes(v);
        }
        assert!(s.is_empty());
        assert!(!s.contains_bytes(0));
        s.insert_bytes(48);
        assert!(s.contains_bytes(48));
        assert_eq!(s.intersect(VlSet::from_bits(0b100)).bits(), 0b100);
        assert_eq!(s.intersect(VlSet::from_bits(0b010)), VlSet::EMPTY);
    }
}
