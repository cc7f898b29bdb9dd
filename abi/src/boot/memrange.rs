//! Physical memory ranges: what is left of RAM once reserved ranges are taken out.

/// A half-open physical range `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    pub end: u64,
}

impl Range {
    pub const fn new(start: u64, end: u64) -> Range {
        Range { start, end }
    }
    pub const fn from_base_size(base: u64, size: u64) -> Range {
        Range {
            start: base,
            end: base.saturating_add(size),
        }
    }
    pub const fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// Calls `f` with each maximal piece of `ram` not covered by any of `reserved`, shrunk inward to
/// `align` (a power of two). Reserved ranges may overlap, be unsorted or lie outside RAM.
pub fn free_ranges(ram: &[Range], reserved: &[Range], align: u64, mut f: impl FnMut(Range)) {
    debug_assert!(align.is_power_of_two());
    for r in ram {
        let mut cursor = r.start;
        while cursor < r.end {
            // The first reserved range that covers or follows `cursor` inside this region.
            let next_hole = reserved
                .iter()
                .filter(|h| !h.is_empty() && h.end > cursor && h.start < r.end)
                .min_by_key(|h| h.start);
            let (piece_end, resume) = match next_hole {
                Some(h) if h.start <= cursor => (cursor, h.end),
                Some(h) => (h.start, h.end),
                None => (r.end, r.end),
            };
            let start = cursor.next_multiple_of(align);
            let end = piece_end & !(align - 1);
            if start < end {
                f(Range::new(start, end));
            }
            cursor = resume;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn collect(ram: &[Range], reserved: &[Range]) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        free_ranges(ram, reserved, 0x1000, |r| v.push((r.start, r.end)));
        v
    }

    #[test]
    fn no_holes() {
        assert_eq!(
            collect(&[Range::new(0x4000_0000, 0x8000_0000)], &[]),
            [(0x4000_0000, 0x8000_0000)]
        );
    }

    #[test]
    fn holes_unsorted_overlapping_and_outside() {
        let ram = [Range::new(0x4000_0000, 0x5000_0000)];
        let holes = [
            Range::new(0x4820_0000, 0x4830_0000),
            Range::new(0x4020_0000, 0x4060_0000),
            Range::new(0x4050_0000, 0x4070_0123), // overlaps the previous, unaligned end
            Range::new(0x1000, 0x2000),           // outside RAM
            Range::new(0x4fff_f800, 0x6000_0000), // runs past the end
        ];
        assert_eq!(
            collect(&ram, &holes),
            [
                (0x4000_0000, 0x4020_0000),
                (0x4070_1000, 0x4820_0000),
                (0x4830_0000, 0x4fff_f000)
            ]
        );
    }

    #[test]
    fn hole_covering_everything_and_empty_holes() {
        let ram = [Range::new(0x1000, 0x9000), Range::new(0x10000, 0x12000)];
        assert!(collect(&ram, &[Range::new(0, u64::MAX)]).is_empty());
        assert_eq!(
            collect(&ram, &[Range::new(0x5000, 0x5000)]),
            [(0x1000, 0x9000), (0x10000, 0x12000)]
        );
        assert_eq!(Range::from_base_size(u64::MAX - 1, 10).end, u64::MAX);
    }
}
