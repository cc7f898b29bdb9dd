//! The ELF auxiliary vector: `AT_*` keys (linux/auxvec.h plus arm64's asm/auxvec.h) and the
//! arm64 `AT_HWCAP`/`AT_HWCAP2`/`AT_HWCAP3` bits (asm/hwcap.h, from `hwcap`'s table).
//!
//! arm64 Linux 7.3 emits AT_HWCAP, AT_HWCAP2 and AT_HWCAP3 (it defines ELF_HWCAP3 but no
//! ELF_HWCAP4), so AT_HWCAP4 is known here by name only.

pub const AT_NULL: u64 = 0;
pub const AT_IGNORE: u64 = 1;
pub const AT_EXECFD: u64 = 2;
pub const AT_PHDR: u64 = 3;
pub const AT_PHENT: u64 = 4;
pub const AT_PHNUM: u64 = 5;
pub const AT_PAGESZ: u64 = 6;
pub const AT_BASE: u64 = 7;
pub const AT_FLAGS: u64 = 8;
pub const AT_ENTRY: u64 = 9;
pub const AT_NOTELF: u64 = 10;
pub const AT_UID: u64 = 11;
pub const AT_EUID: u64 = 12;
pub const AT_GID: u64 = 13;
pub const AT_EGID: u64 = 14;
pub const AT_PLATFORM: u64 = 15;
pub const AT_HWCAP: u64 = 16;
pub const AT_CLKTCK: u64 = 17;
pub const AT_SECURE: u64 = 23;
pub const AT_BASE_PLATFORM: u64 = 24;
pub const AT_RANDOM: u64 = 25;
pub const AT_HWCAP2: u64 = 26;
pub const AT_RSEQ_FEATURE_SIZE: u64 = 27;
pub const AT_RSEQ_ALIGN: u64 = 28;
pub const AT_HWCAP3: u64 = 29;
pub const AT_HWCAP4: u64 = 30;
pub const AT_EXECFN: u64 = 31;
/// arm64: the vDSO image base.
pub const AT_SYSINFO_EHDR: u64 = 33;
/// arm64: the smallest signal stack that holds a frame for this system (AT_MINSIGSTKSZ, Linux's arch/arm64/kernel/signal.c, minsigstksz_setup).
pub const AT_MINSIGSTKSZ: u64 = 51;

/// `AT_PLATFORM` string on arm64.
pub const ELF_PLATFORM: &[u8] = b"aarch64";

/// The name of an auxv key, for logs and test output.
pub const fn name(key: u64) -> Option<&'static str> {
    Some(match key {
        AT_NULL => "AT_NULL",
        AT_IGNORE => "AT_IGNORE",
        AT_EXECFD => "AT_EXECFD",
        AT_PHDR => "AT_PHDR",
        AT_PHENT => "AT_PHENT",
        AT_PHNUM => "AT_PHNUM",
        AT_PAGESZ => "AT_PAGESZ",
        AT_BASE => "AT_BASE",
        AT_FLAGS => "AT_FLAGS",
        AT_ENTRY => "AT_ENTRY",
        AT_NOTELF => "AT_NOTELF",
        AT_UID => "AT_UID",
        AT_EUID => "AT_EUID",
        AT_GID => "AT_GID",
        AT_EGID => "AT_EGID",
        AT_PLATFORM => "AT_PLATFORM",
        AT_HWCAP => "AT_HWCAP",
        AT_CLKTCK => "AT_CLKTCK",
        AT_SECURE => "AT_SECURE",
        AT_BASE_PLATFORM => "AT_BASE_PLATFORM",
        AT_RANDOM => "AT_RANDOM",
        AT_HWCAP2 => "AT_HWCAP2",
        AT_RSEQ_FEATURE_SIZE => "AT_RSEQ_FEATURE_SIZE",
        AT_RSEQ_ALIGN => "AT_RSEQ_ALIGN",
        AT_HWCAP3 => "AT_HWCAP3",
        AT_HWCAP4 => "AT_HWCAP4",
        AT_EXECFN => "AT_EXECFN",
        AT_SYSINFO_EHDR => "AT_SYSINFO_EHDR",
        AT_MINSIGSTKSZ => "AT_MINSIGSTKSZ",
        _ => return None,
    })
}

/// The hwcap bits, generated from `hwcap::HWCAPS` (the uapi names of asm/hwcap.h).
pub use crate::isa::hwcap::bits::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_values() {
        assert_eq!(AT_HWCAP, 16);
        assert_eq!(AT_HWCAP2, 26);
        assert_eq!(AT_HWCAP3, 29);
        assert_eq!(AT_HWCAP4, 30);
        assert_eq!(AT_MINSIGSTKSZ, 51);
        assert_eq!(HWCAP_SVE, 1 << 22);
        assert_eq!(HWCAP2_SVE2, 1 << 1);
        assert_eq!(HWCAP2_SME, 1 << 23);
        assert_eq!(HWCAP2_SME_FA64, 1 << 30);
        assert_eq!(HWCAP2_SME2, 1 << 37);
        assert_eq!(HWCAP2_SME2P1, 1 << 38);
        assert_eq!(HWCAP2_FPMR, 1 << 48);
        assert_eq!(name(AT_RANDOM), Some("AT_RANDOM"));
        assert_eq!(name(99), None);
    }
}
