//! The ELF auxiliary vector: `AT_*` keys (linux/auxvec.h plus arm64's asm/auxvec.h) and the
//! arm64 `AT_HWCAP`/`AT_HWCAP2`/`AT_HWCAP3` bits (asm/hwcap.h).

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
/// arm64: the smallest signal stack that holds a frame for this system (spec/abi-signal.md §7).
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

// ---- AT_HWCAP ----
pub const HWCAP_FP: u64 = 1 << 0;
pub const HWCAP_ASIMD: u64 = 1 << 1;
pub const HWCAP_EVTSTRM: u64 = 1 << 2;
pub const HWCAP_AES: u64 = 1 << 3;
pub const HWCAP_PMULL: u64 = 1 << 4;
pub const HWCAP_SHA1: u64 = 1 << 5;
pub const HWCAP_SHA2: u64 = 1 << 6;
pub const HWCAP_CRC32: u64 = 1 << 7;
pub const HWCAP_ATOMICS: u64 = 1 << 8;
pub const HWCAP_FPHP: u64 = 1 << 9;
pub const HWCAP_ASIMDHP: u64 = 1 << 10;
/// EL0 reads of the ID registers are emulated by the kernel.
pub const HWCAP_CPUID: u64 = 1 << 11;
pub const HWCAP_ASIMDRDM: u64 = 1 << 12;
pub const HWCAP_JSCVT: u64 = 1 << 13;
pub const HWCAP_FCMA: u64 = 1 << 14;
pub const HWCAP_LRCPC: u64 = 1 << 15;
pub const HWCAP_DCPOP: u64 = 1 << 16;
pub const HWCAP_SHA3: u64 = 1 << 17;
pub const HWCAP_SM3: u64 = 1 << 18;
pub const HWCAP_SM4: u64 = 1 << 19;
pub const HWCAP_ASIMDDP: u64 = 1 << 20;
pub const HWCAP_SHA512: u64 = 1 << 21;
pub const HWCAP_SVE: u64 = 1 << 22;
pub const HWCAP_ASIMDFHM: u64 = 1 << 23;
pub const HWCAP_DIT: u64 = 1 << 24;
pub const HWCAP_USCAT: u64 = 1 << 25;
pub const HWCAP_ILRCPC: u64 = 1 << 26;
pub const HWCAP_FLAGM: u64 = 1 << 27;
pub const HWCAP_SSBS: u64 = 1 << 28;
pub const HWCAP_SB: u64 = 1 << 29;
pub const HWCAP_PACA: u64 = 1 << 30;
pub const HWCAP_PACG: u64 = 1 << 31;
pub const HWCAP_GCS: u64 = 1 << 32;

// ---- AT_HWCAP2 ----
pub const HWCAP2_DCPODP: u64 = 1 << 0;
pub const HWCAP2_SVE2: u64 = 1 << 1;
pub const HWCAP2_SVEAES: u64 = 1 << 2;
pub const HWCAP2_SVEPMULL: u64 = 1 << 3;
pub const HWCAP2_SVEBITPERM: u64 = 1 << 4;
pub const HWCAP2_SVESHA3: u64 = 1 << 5;
pub const HWCAP2_SVESM4: u64 = 1 << 6;
pub const HWCAP2_FLAGM2: u64 = 1 << 7;
pub const HWCAP2_FRINT: u64 = 1 << 8;
pub const HWCAP2_SVEI8MM: u64 = 1 << 9;
pub const HWCAP2_SVEF32MM: u64 = 1 << 10;
pub const HWCAP2_SVEF64MM: u64 = 1 << 11;
pub const HWCAP2_SVEBF16: u64 = 1 << 12;
pub const HWCAP2_I8MM: u64 = 1 << 13;
pub const HWCAP2_BF16: u64 = 1 << 14;
pub const HWCAP2_DGH: u64 = 1 << 15;
pub const HWCAP2_RNG: u64 = 1 << 16;
pub const HWCAP2_BTI: u64 = 1 << 17;
pub const HWCAP2_MTE: u64 = 1 << 18;
pub const HWCAP2_ECV: u64 = 1 << 19;
pub const HWCAP2_AFP: u64 = 1 << 20;
pub const HWCAP2_RPRES: u64 = 1 << 21;
pub const HWCAP2_MTE3: u64 = 1 << 22;
pub const HWCAP2_SME: u64 = 1 << 23;
pub const HWCAP2_SME_I16I64: u64 = 1 << 24;
pub const HWCAP2_SME_F64F64: u64 = 1 << 25;
pub const HWCAP2_SME_I8I32: u64 = 1 << 26;
pub const HWCAP2_SME_F16F32: u64 = 1 << 27;
pub const HWCAP2_SME_B16F32: u64 = 1 << 28;
pub const HWCAP2_SME_F32F32: u64 = 1 << 29;
pub const HWCAP2_SME_FA64: u64 = 1 << 30;
pub const HWCAP2_WFXT: u64 = 1 << 31;
pub const HWCAP2_EBF16: u64 = 1 << 32;
pub const HWCAP2_SVE_EBF16: u64 = 1 << 33;
pub const HWCAP2_CSSC: u64 = 1 << 34;
pub const HWCAP2_RPRFM: u64 = 1 << 35;
pub const HWCAP2_SVE2P1: u64 = 1 << 36;
pub const HWCAP2_SME2: u64 = 1 << 37;
pub const HWCAP2_SME2P1: u64 = 1 << 38;
pub const HWCAP2_SME_I16I32: u64 = 1 << 39;
pub const HWCAP2_SME_BI32I32: u64 = 1 << 40;
pub const HWCAP2_SME_B16B16: u64 = 1 << 41;
pub const HWCAP2_SME_F16F16: u64 = 1 << 42;
pub const HWCAP2_MOPS: u64 = 1 << 43;
pub const HWCAP2_HBC: u64 = 1 << 44;
pub const HWCAP2_SVE_B16B16: u64 = 1 << 45;
pub const HWCAP2_LRCPC3: u64 = 1 << 46;
pub const HWCAP2_LSE128: u64 = 1 << 47;
pub const HWCAP2_FPMR: u64 = 1 << 48;
pub const HWCAP2_LUT: u64 = 1 << 49;
pub const HWCAP2_FAMINMAX: u64 = 1 << 50;
pub const HWCAP2_F8CVT: u64 = 1 << 51;
pub const HWCAP2_F8FMA: u64 = 1 << 52;
pub const HWCAP2_F8DP4: u64 = 1 << 53;
pub const HWCAP2_F8DP2: u64 = 1 << 54;
pub const HWCAP2_F8E4M3: u64 = 1 << 55;
pub const HWCAP2_F8E5M2: u64 = 1 << 56;
pub const HWCAP2_SME_LUTV2: u64 = 1 << 57;
pub const HWCAP2_SME_F8F16: u64 = 1 << 58;
pub const HWCAP2_SME_F8F32: u64 = 1 << 59;
pub const HWCAP2_SME_SF8FMA: u64 = 1 << 60;
pub const HWCAP2_SME_SF8DP4: u64 = 1 << 61;
pub const HWCAP2_SME_SF8DP2: u64 = 1 << 62;
pub const HWCAP2_POE: u64 = 1 << 63;

// ---- AT_HWCAP3 (6.16+) ----
pub const HWCAP3_MTE_FAR: u64 = 1 << 0;
pub const HWCAP3_MTE_STORE_ONLY: u64 = 1 << 1;
pub const HWCAP3_LSFE: u64 = 1 << 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_values() {
        assert_eq!(AT_HWCAP, 16);
        assert_eq!(AT_HWCAP2, 26);
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
