//! How a secondary CPU is started, as its device-tree node says (`enable-method`), and the
//! table a CPU released from a spin table reads to find its boot record.
//!
//! Two methods are known, as on Linux: `"psci"` (CPU_ON through the /psci conduit) and
//! `"spin-table"`: the CPU waits in firmware, watching a 64-bit word at `cpu-release-addr`; the
//! kernel writes the physical address of its entry point there and sends an event. A CPU so
//! released enters with the MMU off and no argument, so it looks itself up by MPIDR in a
//! [`SpinBootTable`] the boot CPU filled in beforehand (head.s `spin_table_entry` does the
//! lookup [`SpinBootTable::lookup`] describes).

/// How one CPU is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnableMethod {
    /// PSCI CPU_ON.
    Psci,
    /// Write the entry point to this physical address (8 bytes, little-endian), then `sev`.
    SpinTable { release_addr: u64 },
}

/// Why a CPU cannot be started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoMethod {
    /// No `enable-method` and no PSCI in the device tree.
    NoPsci,
    /// `enable-method = "psci"` but the tree has no /psci node.
    PsciWithoutConduit,
    /// `spin-table` without a `cpu-release-addr`, or one that is not a 64-bit (two-cell) value.
    BadReleaseAddr,
    /// `cpu-release-addr` is zero or not 8-byte aligned.
    UnalignedReleaseAddr(u64),
    /// A method Svelt does not know (e.g. a vendor's own).
    Unknown,
}

/// Decides how to start a CPU from its node's raw `enable-method` (a NUL-terminated string
/// list: the first one counts, as on Linux) and `cpu-release-addr` (two big-endian cells)
/// values, and whether the tree has a PSCI conduit. A node without `enable-method` is started
/// through PSCI when there is one (QEMU's virt and ACPI-described machines), as before
/// spin tables were known.
pub fn enable_method(
    method: Option<&[u8]>,
    release_addr: Option<&[u8]>,
    have_psci: bool,
) -> Result<EnableMethod, NoMethod> {
    let first = method.map(|m| m.split(|&b| b == 0).next().unwrap_or(&[]));
    match first {
        None if have_psci => Ok(EnableMethod::Psci),
        None => Err(NoMethod::NoPsci),
        Some(b"psci") if have_psci => Ok(EnableMethod::Psci),
        Some(b"psci") => Err(NoMethod::PsciWithoutConduit),
        Some(b"spin-table") => {
            let raw: [u8; 8] = release_addr
                .and_then(|v| v.try_into().ok())
                .ok_or(NoMethod::BadReleaseAddr)?;
            let addr = u64::from_be_bytes(raw);
            if addr == 0 || !addr.is_multiple_of(8) {
                return Err(NoMethod::UnalignedReleaseAddr(addr));
            }
            Ok(EnableMethod::SpinTable { release_addr: addr })
        }
        Some(_) => Err(NoMethod::Unknown),
    }
}

/// MPIDR_EL1's affinity fields (Aff3, Aff2, Aff1, Aff0): what identifies a CPU, without the
/// U and MT bits and RES1 bit 31.
pub const MPIDR_AFFINITY_MASK: u64 = 0xff_00ff_ffff;

/// One released CPU's entry: its MPIDR affinity and the physical address of its boot record.
/// Layout shared with head.s: 16 bytes, `mpidr` first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpinBootEntry {
    pub mpidr: u64,
    /// Physical address of the CPU's boot record; 0 ends the table.
    pub record: u64,
}
const _: () = assert!(core::mem::size_of::<SpinBootEntry>() == 16);
const _: () = assert!(core::mem::offset_of!(SpinBootEntry, mpidr) == 0);
const _: () = assert!(core::mem::offset_of!(SpinBootEntry, record) == 8);

/// Entries for up to `N` CPUs, filled in front to back; the first entry with `record` 0 ends
/// it (so a full table needs no terminator).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SpinBootTable<const N: usize> {
    pub entries: [SpinBootEntry; N],
}

impl<const N: usize> Default for SpinBootTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> SpinBootTable<N> {
    pub const fn new() -> Self {
        Self {
            entries: [SpinBootEntry {
                mpidr: 0,
                record: 0,
            }; N],
        }
    }

    /// Adds a CPU; false when the table is full, `record` is 0 (it would end the table) or
    /// the CPU is already there.
    pub fn add(&mut self, mpidr: u64, record: u64) -> bool {
        let mpidr = mpidr & MPIDR_AFFINITY_MASK;
        if record == 0 || self.lookup(mpidr).is_some() {
            return false;
        }
        match self.entries.iter_mut().find(|e| e.record == 0) {
            Some(e) => {
                *e = SpinBootEntry { mpidr, record };
                true
            }
            None => false,
        }
    }

    /// The boot record of the CPU whose MPIDR_EL1 reads `mpidr`: the first entry, before the
    /// end, whose affinity matches. This is head.s's search, step for step.
    pub fn lookup(&self, mpidr: u64) -> Option<u64> {
        let want = mpidr & MPIDR_AFFINITY_MASK;
        self.entries
            .iter()
            .take_while(|e| e.record != 0)
            .find(|e| e.mpidr == want)
            .map(|e| e.record)
    }

    /// Empties the table (before a second bring-up, or once every CPU is in).
    pub fn clear(&mut self) {
        self.entries = [SpinBootEntry::default(); N];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_from_node_properties() {
        let ra = 0xd8u64.to_be_bytes();
        assert_eq!(
            enable_method(Some(b"spin-table\0"), Some(&ra), false),
            Ok(EnableMethod::SpinTable { release_addr: 0xd8 })
        );
        // A spin table wins over a PSCI conduit when the node asks for it.
        assert_eq!(
            enable_method(
                Some(b"spin-table\0"),
                Some(&0x8000_00f0u64.to_be_bytes()),
                true
            ),
            Ok(EnableMethod::SpinTable {
                release_addr: 0x8000_00f0
            })
        );
        assert_eq!(
            enable_method(Some(b"psci\0"), None, true),
            Ok(EnableMethod::Psci)
        );
        assert_eq!(enable_method(None, None, true), Ok(EnableMethod::Psci));
        assert_eq!(enable_method(None, None, false), Err(NoMethod::NoPsci));
        assert_eq!(
            enable_method(Some(b"psci\0"), None, false),
            Err(NoMethod::PsciWithoutConduit)
        );
        assert_eq!(
            enable_method(Some(b"brcm,bcm2836-smp\0"), None, true),
            Err(NoMethod::Unknown)
        );
        // The first string of a list counts.
        assert_eq!(
            enable_method(Some(b"spin-table\0psci\0"), Some(&ra), true),
            Ok(EnableMethod::SpinTable { release_addr: 0xd8 })
        );
    }

    #[test]
    fn release_addr_must_be_two_cells_nonzero_and_aligned() {
        let st = Some(&b"spin-table\0"[..]);
        assert_eq!(enable_method(st, None, true), Err(NoMethod::BadReleaseAddr));
        assert_eq!(
            enable_method(st, Some(&0xd8u32.to_be_bytes()), true),
            Err(NoMethod::BadReleaseAddr)
        );
        assert_eq!(
            enable_method(st, Some(&[0; 12]), true),
            Err(NoMethod::BadReleaseAddr)
        );
        assert_eq!(
            enable_method(st, Some(&0u64.to_be_bytes()), true),
            Err(NoMethod::UnalignedReleaseAddr(0))
        );
        assert_eq!(
            enable_method(st, Some(&0xdcu64.to_be_bytes()), true),
            Err(NoMethod::UnalignedReleaseAddr(0xdc))
        );
        // Big-endian cells: the high cell first.
        let mut two = [0u8; 8];
        two[..4].copy_from_slice(&1u32.to_be_bytes());
        two[4..].copy_from_slice(&0x10u32.to_be_bytes());
        assert_eq!(
            enable_method(st, Some(&two), true),
            Ok(EnableMethod::SpinTable {
                release_addr: 0x1_0000_0010
            })
        );
    }

    #[test]
    fn table_finds_each_cpu_by_affinity() {
        let mut t = SpinBootTable::<4>::new();
        assert_eq!(t.lookup(0x8000_0001), None);
        assert!(t.add(1, 0x1000));
        assert!(t.add(0x1_0002_0300, 0x2000));
        assert!(t.add(2, 0x3000));
        // MPIDR_EL1 reads with bit 31 (RES1) and U/MT set: only the affinity is compared.
        assert_eq!(t.lookup(0x8000_0001), Some(0x1000));
        assert_eq!(t.lookup(0xc100_0001), Some(0x1000));
        assert_eq!(t.lookup(0x1_8002_0300), Some(0x2000));
        assert_eq!(t.lookup(2), Some(0x3000));
        assert_eq!(t.lookup(3), None);
        assert_eq!(t.lookup(0), None);
        // No duplicates, no zero records, and no room past N.
        assert!(!t.add(0x8000_0002, 0x4000));
        assert!(!t.add(3, 0));
        assert!(t.add(3, 0x4000));
        assert!(!t.add(4, 0x5000));
        assert_eq!(t.lookup(3), Some(0x4000));
        t.clear();
        assert_eq!(t.lookup(1), None);
    }

    #[test]
    fn the_first_empty_entry_ends_the_table() {
        // An entry past the end is never seen, as head.s stops at the first zero record.
        let mut t = SpinBootTable::<3>::new();
        t.entries[1] = SpinBootEntry {
            mpidr: 5,
            record: 0x9000,
        };
        assert_eq!(t.lookup(5), None);
        assert!(t.add(5, 0x1000));
        assert_eq!(t.lookup(5), Some(0x1000));
    }

    #[test]
    fn layout_matches_head_s() {
        // head.s steps 16 bytes per entry, mpidr at +0, record at +8.
        let t = SpinBootTable::<2>::new();
        let base = &t as *const _ as usize;
        assert_eq!(&t.entries[1].record as *const _ as usize - base, 24);
        assert_eq!(core::mem::size_of::<SpinBootTable<512>>(), 512 * 16);
    }
}
