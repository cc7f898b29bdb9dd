//! The pure parts of the EFI stub: the firmware's memory map as RAM ranges, the load options
//! (UCS-2) as a kernel command line, and the `initrd=` paths in it.

use crate::boot::memrange::Range;

/// UEFI memory types (UEFI 2.10 §7.2, EFI_MEMORY_TYPE).
pub mod memtype {
    pub const LOADER_CODE: u32 = 1;
    pub const LOADER_DATA: u32 = 2;
    pub const BOOT_SERVICES_CODE: u32 = 3;
    pub const BOOT_SERVICES_DATA: u32 = 4;
    pub const CONVENTIONAL: u32 = 7;
}

/// EFI_MEMORY_WB: the range can be mapped write-back cacheable.
pub const MEMORY_WB: u64 = 1 << 3;

/// The usable RAM ranges of an EFI memory map (`map`: descriptors of `desc_size` bytes), sorted
/// by address, adjacent ones merged, at most `N`: when there are more, the smallest are dropped,
/// but never one that overlaps `keep` (the stub's image, device tree and initrd). Usable means
/// free once boot services have exited (loader, boot-services and conventional memory) and
/// write-back capable; runtime-services, ACPI, reserved and MMIO ranges are left out. Returns the
/// ranges, their number and how many merged ranges were dropped for want of room.
pub fn usable_ram<const N: usize>(
    map: &[u8],
    desc_size: usize,
    keep: &[Range],
) -> ([Range; N], usize, usize) {
    let mut out = [Range::new(0, 0); N];
    let mut n = 0;
    let mut dropped = 0;
    if desc_size < 40 {
        return (out, 0, 0);
    }
    // Merged ranges are built by repeated passes: take the lowest unused start each time, so no
    // sort buffer is needed and the map is not modified.
    let desc = |i: usize| -> Option<(u32, Range, u64)> {
        let d = map.get(i * desc_size..i * desc_size + 40)?;
        let ty = u32::from_le_bytes(d[0..4].try_into().ok()?);
        let start = u64::from_le_bytes(d[8..16].try_into().ok()?);
        let pages = u64::from_le_bytes(d[24..32].try_into().ok()?);
        let attr = u64::from_le_bytes(d[32..40].try_into().ok()?);
        let size = pages.checked_mul(4096)?;
        Some((ty, Range::from_base_size(start, size), attr))
    };
    let usable = |i: usize| -> Option<Range> {
        let (ty, r, attr) = desc(i)?;
        let free = matches!(
            ty,
            memtype::LOADER_CODE
                | memtype::LOADER_DATA
                | memtype::BOOT_SERVICES_CODE
                | memtype::BOOT_SERVICES_DATA
                | memtype::CONVENTIONAL
        );
        (free && attr & MEMORY_WB != 0 && !r.is_empty()).then_some(r)
    };
    let count = map.len() / desc_size;
    let mut cursor = 0u64;
    // Each turn takes the usable range with the lowest start at or above `cursor`.
    while let Some(first) = (0..count)
        .filter_map(usable)
        .filter(|r| r.start >= cursor)
        .min_by_key(|r| r.start)
    {
        let mut merged = first;
        // Grow it while another usable range starts inside or right at its end.
        loop {
            let next = (0..count)
                .filter_map(usable)
                .filter(|r| r.start >= merged.start && r.start <= merged.end && r.end > merged.end)
                .max_by_key(|r| r.end);
            match next {
                Some(r) => merged.end = r.end,
                None => break,
            }
        }
        if n < N {
            out[n] = merged;
            n += 1;
        } else if N > 0 {
            // Full: keep the larger ones (the small ones are slivers between firmware ranges)
            // and those the kernel must find in RAM.
            let needed = |r: &Range| keep.iter().any(|k| k.start < r.end && r.start < k.end);
            let victim = out
                .iter()
                .enumerate()
                .filter(|(_, r)| !needed(r))
                .min_by_key(|(_, r)| r.end - r.start)
                .map(|(i, r)| (i, *r));
            dropped += 1;
            if let Some((i, smallest)) = victim {
                if needed(&merged) || merged.end - merged.start > smallest.end - smallest.start {
                    out.copy_within(i + 1.., i);
                    out[N - 1] = merged;
                }
            }
        }
        if merged.end <= cursor {
            break;
        }
        cursor = merged.end;
    }
    (out, n, dropped)
}

/// Converts UCS-2 load options to an ASCII command line in `out`: stops at a NUL, replaces
/// anything outside printable ASCII by a space. Returns the length used.
pub fn ucs2_to_ascii(src: impl Iterator<Item = u16>, out: &mut [u8]) -> usize {
    let mut n = 0;
    for c in src {
        if c == 0 || n == out.len() {
            break;
        }
        out[n] = if (0x20..0x7f).contains(&c) {
            c as u8
        } else {
            b' '
        };
        n += 1;
    }
    n
}

/// The words of `cmdline` that are `initrd=PATH` (Linux's EFI stub option): their paths.
pub fn initrd_paths(cmdline: &str) -> impl Iterator<Item = &str> {
    cmdline
        .split_ascii_whitespace()
        .filter_map(|w| w.strip_prefix("initrd="))
        .filter(|p| !p.is_empty())
}

/// Copies `cmdline` to `out` without its `initrd=` words (they name files for the firmware,
/// which mean nothing to the kernel), words separated by one space. Returns the length.
pub fn strip_initrd(cmdline: &str, out: &mut [u8]) -> usize {
    let mut n = 0;
    for w in cmdline
        .split_ascii_whitespace()
        .filter(|w| !w.starts_with("initrd="))
    {
        let sep = usize::from(n > 0);
        if n + sep + w.len() > out.len() {
            break;
        }
        if sep == 1 {
            out[n] = b' ';
        }
        out[n + sep..n + sep + w.len()].copy_from_slice(w.as_bytes());
        n += sep + w.len();
    }
    n
}

/// Whether the command line asks for the ACPI tables to describe the machine even when the
/// firmware also gives a device tree (`acpi=force`, as on Linux).
pub fn prefers_acpi(cmdline: &str) -> bool {
    cmdline.split_ascii_whitespace().any(|w| w == "acpi=force")
}

/// Where the machine's description comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Description {
    /// The firmware's device tree.
    Dtb,
    /// A device tree written from the ACPI tables.
    Acpi,
    /// Neither is there: the stub says so and returns an error to the firmware.
    Neither,
}

/// The firmware's device tree unless there is none or the command line says `acpi=force` and
/// there are ACPI tables; then the ACPI tables.
pub fn choose_description(has_dtb: bool, has_acpi: bool, cmdline: &str) -> Description {
    match (has_dtb, has_acpi) {
        (true, true) if prefers_acpi(cmdline) => Description::Acpi,
        (true, _) => Description::Dtb,
        (false, true) => Description::Acpi,
        (false, false) => Description::Neither,
    }
}

/// EFI_TIME (from GetTime) as seconds since the Unix epoch, or `None` if a field is out of
/// range. `tz` is the offset of the given local time from UTC in minutes (UEFI: local time =
/// UTC + TimeZone); 2047 (EFI_UNSPECIFIED_TIMEZONE) is taken as UTC.
pub fn efi_time_to_unix(
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    tz: i16,
) -> Option<u64> {
    if !(1970..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    // Days since 1970-01-01 in the proleptic Gregorian calendar (a March-based year, so the
    // leap day is the last day of its year).
    let (y, m) = if month <= 2 {
        (year as i64 - 1, month as i64 + 9)
    } else {
        (year as i64, month as i64 - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let local = days * 86_400 + hour as i64 * 3600 + minute as i64 * 60 + second as i64;
    let offset = if tz == 2047 || !(-1440..=1440).contains(&tz) {
        0
    } else {
        tz as i64 * 60
    };
    u64::try_from(local - offset).ok()
}

/// Writes `path` as a NUL-terminated UCS-2 file name into `out`, with '/' turned into the
/// firmware's '\\'. `None` if it does not fit.
pub fn file_path_ucs2(path: &str, out: &mut [u16]) -> Option<usize> {
    if path.len() + 1 > out.len() {
        return None;
    }
    for (i, b) in path.bytes().enumerate() {
        out[i] = if b == b'/' { b'\\' as u16 } else { b as u16 };
    }
    out[path.len()] = 0;
    Some(path.len() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn desc(ty: u32, start: u64, pages: u64, attr: u64) -> [u8; 48] {
        let mut d = [0u8; 48];
        d[0..4].copy_from_slice(&ty.to_le_bytes());
        d[8..16].copy_from_slice(&start.to_le_bytes());
        d[24..32].copy_from_slice(&pages.to_le_bytes());
        d[32..40].copy_from_slice(&attr.to_le_bytes());
        d
    }

    const WB: u64 = MEMORY_WB | 0xf;

    #[test]
    fn usable_ram_merges_and_leaves_out_firmware_ranges() {
        let mut map = Vec::new();
        // Unsorted, as firmware may give them; 48-byte descriptors (edk2's size).
        for d in [
            desc(memtype::CONVENTIONAL, 0x4010_0000, 0x100, WB),
            desc(memtype::LOADER_DATA, 0x4000_0000, 0x100, WB),
            desc(5, 0x4020_0000, 0x10, WB), // runtime services code
            desc(9, 0x4021_0000, 0x10, WB), // ACPI reclaim
            desc(memtype::BOOT_SERVICES_DATA, 0x4022_0000, 0x1de0, WB),
            desc(11, 0x0900_0000, 1, 1),                          // MMIO
            desc(memtype::CONVENTIONAL, 0x1_0000_0000, 0x100, 1), // uncached only
        ] {
            map.extend(d);
        }
        let (r, n, dropped) = usable_ram::<4>(&map, 48, &[]);
        assert_eq!(
            &r[..n],
            &[
                Range::new(0x4000_0000, 0x4020_0000),
                Range::new(0x4022_0000, 0x4200_0000)
            ]
        );
        assert_eq!(dropped, 0);
    }

    #[test]
    fn usable_ram_keeps_the_largest_when_full() {
        let mut map = Vec::new();
        for (i, pages) in [1u64, 50, 2, 40, 3].into_iter().enumerate() {
            map.extend(desc(
                memtype::CONVENTIONAL,
                0x4000_0000 + i as u64 * 0x100_0000,
                pages,
                WB,
            ));
        }
        let (r, n, dropped) = usable_ram::<2>(&map, 48, &[]);
        assert_eq!(n, 2);
        assert_eq!(dropped, 3);
        let mut sizes: Vec<u64> = r.iter().map(|r| (r.end - r.start) / 4096).collect();
        sizes.sort();
        assert_eq!(sizes, [40, 50]);
        // A small range holding the device tree stays, in place of the next smallest.
        let dtb = Range::new(0x4400_0000, 0x4400_1000);
        let (r, n, _) = usable_ram::<2>(&map, 48, &[dtb]);
        assert_eq!(
            &r[..n],
            &[
                Range::new(0x4100_0000, 0x4103_2000),
                Range::new(0x4400_0000, 0x4400_3000)
            ]
        );
        // Junk: a short descriptor size, a truncated map, overlapping and huge ranges.
        assert_eq!(usable_ram::<2>(&map, 8, &[]).1, 0);
        let _ = usable_ram::<2>(&map[..100], 48, &[]);
        let mut odd = Vec::new();
        odd.extend(desc(memtype::CONVENTIONAL, 0x1000, u64::MAX, WB));
        odd.extend(desc(memtype::CONVENTIONAL, u64::MAX - 0xfff, 1, WB));
        odd.extend(desc(memtype::CONVENTIONAL, 0x2000, 4, WB));
        let _ = usable_ram::<4>(&odd, 48, &[dtb]);
    }

    #[test]
    fn description_choice() {
        use Description::*;
        assert_eq!(choose_description(true, true, "x"), Dtb);
        assert_eq!(choose_description(true, true, "acpi=force"), Acpi);
        assert_eq!(choose_description(true, false, "acpi=force"), Dtb);
        assert_eq!(choose_description(false, true, ""), Acpi);
        assert_eq!(choose_description(false, false, "acpi=force"), Neither);
    }

    #[test]
    fn efi_time() {
        assert_eq!(efi_time_to_unix(1970, 1, 1, 0, 0, 0, 2047), Some(0));
        // 2026-11-24 16:19:15 UTC, and 2000-02-29 (a leap day of a century year).
        assert_eq!(
            efi_time_to_unix(2026, 11, 24, 16, 19, 15, 2047),
            Some(1_795_537_155)
        );
        assert_eq!(
            efi_time_to_unix(2000, 2, 29, 12, 0, 0, 0),
            Some(951_825_600)
        );
        assert_eq!(efi_time_to_unix(2000, 3, 1, 0, 0, 0, 0), Some(951_868_800));
        // Local time one hour ahead of UTC.
        assert_eq!(efi_time_to_unix(1970, 1, 1, 1, 0, 0, 60), Some(0));
        assert_eq!(efi_time_to_unix(1969, 12, 31, 0, 0, 0, 0), None);
        assert_eq!(efi_time_to_unix(2020, 13, 1, 0, 0, 0, 0), None);
        assert_eq!(efi_time_to_unix(1970, 1, 1, 0, 0, 0, 60), None);
    }

    #[test]
    fn load_options_to_command_line() {
        let opts: Vec<u16> = "initrd=\\boot\\initrd.img log=debug\u{e9}x\0junk"
            .encode_utf16()
            .collect();
        let mut buf = [0u8; 64];
        let n = ucs2_to_ascii(opts.iter().copied(), &mut buf);
        let line = core::str::from_utf8(&buf[..n]).unwrap();
        assert_eq!(line, "initrd=\\boot\\initrd.img log=debug x");
        assert_eq!(
            initrd_paths("a initrd=x initrd= initrd=/y/z").collect::<Vec<_>>(),
            ["x", "/y/z"]
        );
        let mut out = [0u8; 64];
        let n = strip_initrd("initrd=x  svelt.exit=psci initrd=y init=/bin/a", &mut out);
        assert_eq!(&out[..n], b"svelt.exit=psci init=/bin/a");
        let mut small = [0u8; 8];
        let n = strip_initrd("abc defghij", &mut small);
        assert_eq!(&small[..n], b"abc");
        assert!(prefers_acpi("x acpi=force"));
        assert!(!prefers_acpi("acpi=forced"));
        let mut p = [0u16; 8];
        assert_eq!(file_path_ucs2("/a/b", &mut p), Some(5));
        assert_eq!(
            &p[..5],
            &[b'\\' as u16, b'a' as u16, b'\\' as u16, b'b' as u16, 0]
        );
        assert_eq!(file_path_ucs2("/very/long/path", &mut p), None);
    }
}
