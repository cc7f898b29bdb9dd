use super::*;
use crate::isa::cpu::IdReg;
use crate::isa::idregs;
use crate::util::rng::XorShift64;
use std::string::String;
use std::vec::Vec;

/// Linux 7.3's uapi asm/hwcap.h, as data: the macro names (without the `HWCAP_`, `HWCAP2_`,
/// `HWCAP3_` prefix) of each word, indexed by bit.
const UAPI_HWCAP: [&str; 48] = [
    "FP",
    "ASIMD",
    "EVTSTRM",
    "AES",
    "PMULL",
    "SHA1",
    "SHA2",
    "CRC32",
    "ATOMICS",
    "FPHP",
    "ASIMDHP",
    "CPUID",
    "ASIMDRDM",
    "JSCVT",
    "FCMA",
    "LRCPC",
    "DCPOP",
    "SHA3",
    "SM3",
    "SM4",
    "ASIMDDP",
    "SHA512",
    "SVE",
    "ASIMDFHM",
    "DIT",
    "USCAT",
    "ILRCPC",
    "FLAGM",
    "SSBS",
    "SB",
    "PACA",
    "PACG",
    "GCS",
    "CMPBR",
    "FPRCVT",
    "F8MM8",
    "F8MM4",
    "SVE_F16MM",
    "SVE_ELTPERM",
    "SVE_AES2",
    "SVE_BFSCALE",
    "SVE2P2",
    "SME2P2",
    "SME_SBITPERM",
    "SME_AES",
    "SME_SFEXPA",
    "SME_STMOP",
    "SME_SMOP4",
];
const UAPI_HWCAP2: [&str; 64] = [
    "DCPODP",
    "SVE2",
    "SVEAES",
    "SVEPMULL",
    "SVEBITPERM",
    "SVESHA3",
    "SVESM4",
    "FLAGM2",
    "FRINT",
    "SVEI8MM",
    "SVEF32MM",
    "SVEF64MM",
    "SVEBF16",
    "I8MM",
    "BF16",
    "DGH",
    "RNG",
    "BTI",
    "MTE",
    "ECV",
    "AFP",
    "RPRES",
    "MTE3",
    "SME",
    "SME_I16I64",
    "SME_F64F64",
    "SME_I8I32",
    "SME_F16F32",
    "SME_B16F32",
    "SME_F32F32",
    "SME_FA64",
    "WFXT",
    "EBF16",
    "SVE_EBF16",
    "CSSC",
    "RPRFM",
    "SVE2P1",
    "SME2",
    "SME2P1",
    "SME_I16I32",
    "SME_BI32I32",
    "SME_B16B16",
    "SME_F16F16",
    "MOPS",
    "HBC",
    "SVE_B16B16",
    "LRCPC3",
    "LSE128",
    "FPMR",
    "LUT",
    "FAMINMAX",
    "F8CVT",
    "F8FMA",
    "F8DP4",
    "F8DP2",
    "F8E4M3",
    "F8E5M2",
    "SME_LUTV2",
    "SME_F8F16",
    "SME_F8F32",
    "SME_SF8FMA",
    "SME_SF8DP4",
    "SME_SF8DP2",
    "POE",
];
const UAPI_HWCAP3: [&str; 12] = [
    "MTE_FAR",
    "MTE_STORE_ONLY",
    "LSFE",
    "LS64",
    "SVE_B16MM",
    "SVE2P3",
    "SME_LUT6",
    "SME2P3",
    "F16MM",
    "F16F32DOT",
    "F16F32MM",
    "SVE_LUT6",
];

/// Linux 7.3's cpuinfo.c names, in the order it prints them (AT_HWCAP bits, then AT_HWCAP2,
/// then AT_HWCAP3).
const CPUINFO: &str = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid \
    asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc \
    flagm ssbs sb paca pacg gcs cmpbr fprcvt f8mm8 f8mm4 svef16mm sveeltperm sveaes2 svebfscale \
    sve2p2 sme2p2 smesbitperm smeaes smesfexpa smestmop smesmop4 \
    dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svef32mm \
    svef64mm svebf16 i8mm bf16 dgh rng bti mte ecv afp rpres mte3 sme smei16i64 smef64f64 \
    smei8i32 smef16f32 smeb16f32 smef32f32 smefa64 wfxt ebf16 sveebf16 cssc rprfm sve2p1 sme2 \
    sme2p1 smei16i32 smebi32i32 smeb16b16 smef16f16 mops hbc sveb16b16 lrcpc3 lse128 fpmr lut \
    faminmax f8cvt f8fma f8dp4 f8dp2 f8e4m3 f8e5m2 smelutv2 smef8f16 smef8f32 smesf8fma \
    smesf8dp4 smesf8dp2 poe \
    mtefar mtestoreonly lsfe ls64 sveb16mm sve2p3 smelut6 sme2p3 f16mm f16f32dot f16f32mm \
    svelut6";

fn svelt() -> Offer {
    Offer::svelt(true, true)
}

fn names(h: Hwcaps) -> Vec<&'static str> {
    h.names().collect()
}

fn row(uapi: &str) -> &'static Hwcap {
    HWCAPS.iter().find(|c| c.uapi == uapi).unwrap()
}

/// An offer granting exactly `needs`.
fn offer_of(needs: Needs) -> Offer {
    let mut o = Offer::default();
    for (flag, n) in [
        (&mut o.sve, Needs::SVE),
        (&mut o.sme, Needs::SME),
        (&mut o.cpuid, Needs::CPUID),
        (&mut o.evtstrm, Needs::EVTSTRM),
        (&mut o.ptr_auth, Needs::PTR_AUTH),
        (&mut o.bti, Needs::BTI),
        (&mut o.mte, Needs::MTE),
        (&mut o.gcs, Needs::GCS),
        (&mut o.poe, Needs::POE),
        (&mut o.fpmr, Needs::FPMR),
        (&mut o.ls64, Needs::LS64),
        (&mut o.mops, Needs::MOPS),
    ] {
        *flag = needs.contains(n);
    }
    assert_eq!(o.grants(), needs);
    o
}

fn fields_of(t: &Test) -> Vec<(Field, i8)> {
    match t {
        Test::Offered => Vec::new(),
        Test::AtLeast(f, m) => [(*f, *m)].into(),
        Test::AnyAtLeast(alts) => alts.to_vec(),
    }
}

#[test]
fn rows_are_in_cpuinfo_order_and_unique() {
    for pair in HWCAPS.windows(2) {
        assert!(
            (pair[0].word, pair[0].bit) < (pair[1].word, pair[1].bit),
            "{} before {}",
            pair[0].uapi,
            pair[1].uapi
        );
    }
    for c in HWCAPS {
        assert!((1..=3).contains(&c.word) && c.bit < 64, "{}", c.uapi);
    }
}

#[test]
fn bit_numbers_are_linux_7_3_uapi() {
    let words: [&[&str]; 3] = [&UAPI_HWCAP, &UAPI_HWCAP2, &UAPI_HWCAP3];
    for c in HWCAPS {
        let prefix = ["HWCAP_", "HWCAP2_", "HWCAP3_"][c.word as usize - 1];
        let short = c.uapi.strip_prefix(prefix).unwrap_or_else(|| {
            panic!("{} is not an AT_HWCAP{} name", c.uapi, c.word);
        });
        assert_eq!(
            words[c.word as usize - 1].get(c.bit as usize).copied(),
            Some(short),
            "{} on bit {}",
            c.uapi,
            c.bit
        );
    }
    // Every uapi bit has its row.
    assert_eq!(HWCAPS.len(), 48 + 64 + 12);
    // The generated constants.
    assert_eq!(HWCAP_USCAT, 1 << 25);
    assert_eq!(HWCAP_SME_SMOP4, 1 << 47);
    assert_eq!(HWCAP2_RPRFM, 1 << 35);
    assert_eq!(HWCAP2_SVE2P1, 1 << 36);
    assert_eq!(HWCAP2_HBC, 1 << 44);
    assert_eq!(HWCAP2_POE, 1 << 63);
    assert_eq!(HWCAP3_SVE_LUT6, 1 << 11);
    assert_eq!(crate::uapi::auxv::HWCAP2_SME2, 1 << 37);
}

#[test]
fn names_are_linux_7_3_cpuinfo() {
    let table: Vec<&str> = HWCAPS.iter().map(|c| c.name).collect();
    let linux: Vec<&str> = CPUINFO.split_whitespace().collect();
    assert_eq!(table, linux);
}

/// Linux decides a capability only on fields it shows to EL0: whenever a row's needs are met,
/// every field it tests is visible, and the row's needs include the field's.
#[test]
fn every_tested_field_is_visible_when_the_row_is_offered() {
    for c in HWCAPS {
        for (f, min) in fields_of(&c.test) {
            assert!(
                idregs::visible(f, offer_of(c.needs)),
                "{}: {}[{}] hidden under its own needs",
                c.uapi,
                f.reg.name(),
                f.shift
            );
            assert!(
                i64::from(min) <= f.max(),
                "{}: minimum out of range",
                c.uapi
            );
        }
    }
}

fn rand_regs(rng: &mut XorShift64) -> IdRegs {
    let mut r = IdRegs {
        midr: rng.next(),
        ..IdRegs::default()
    };
    for reg in IdReg::ALL {
        r.set(reg, rng.next());
    }
    r
}

#[test]
fn raw_and_el0_view_give_the_same_hwcaps() {
    let mut rng = XorShift64(0x5eed_ca95);
    let offers = [
        Offer::LINUX,
        svelt(),
        Offer::svelt(true, false),
        Offer::svelt(false, true),
        Offer::default(),
    ];
    for _ in 0..2000 {
        let raw = rand_regs(&mut rng);
        for offer in offers {
            let view = idregs::user_view(&raw, offer);
            assert_eq!(idregs::user_view(&view, offer), view, "view of a view");
            assert_eq!(hwcaps(&view, offer), hwcaps(&raw, offer), "{raw}");
        }
    }
}

#[test]
fn unoffered_supports_never_show() {
    let mut rng = XorShift64(0x0dd_ba11);
    for _ in 0..500 {
        let raw = rand_regs(&mut rng);
        for offer in [svelt(), Offer::svelt(false, false), Offer::default()] {
            let h = hwcaps(&raw, offer);
            for c in HWCAPS.iter().filter(|c| h.has(c)) {
                assert!(offer.allows(c.needs), "{} under {offer:?}", c.uapi);
            }
        }
    }
}

/// Everything set: each capability appears under Linux's offer, and under Svelt's exactly when
/// Svelt handles what it needs.
#[test]
fn all_ones_registers() {
    let mut raw = IdRegs::default();
    for reg in IdReg::ALL {
        raw.set(reg, !0);
    }
    // FP/AdvSIMD are signed: all ones would be "not implemented"; 1 is FP16 too.
    raw.pfr0 = (raw.pfr0 & !(0xff << 16)) | 0x11 << 16;
    let linux = hwcaps(&raw, Offer::LINUX);
    for c in HWCAPS {
        assert!(linux.has(c), "{} missing under Linux", c.uapi);
    }
    let s = hwcaps(&raw, svelt());
    for c in HWCAPS {
        assert_eq!(s.has(c), svelt().allows(c.needs), "{}", c.uapi);
    }
    let hidden: Vec<&str> = HWCAPS
        .iter()
        .filter(|c| !s.has(c))
        .map(|c| c.name)
        .collect();
    assert_eq!(
        hidden.join(" "),
        "evtstrm paca pacg bti mte mte3 mops poe mtefar mtestoreonly ls64"
    );
}

#[test]
fn signed_fp_fields() {
    let fp = |pfr0: u64| {
        hwcaps(
            &IdRegs {
                pfr0,
                ..IdRegs::default()
            },
            svelt(),
        )
    };
    let h = fp(0);
    assert_eq!(
        h.0[0] & (HWCAP_FP | HWCAP_ASIMD | HWCAP_FPHP | HWCAP_ASIMDHP),
        3
    );
    let h = fp(0x11 << 16);
    assert_eq!(h.0[0] & 0x603, 0x603);
    let h = fp(0xff << 16);
    assert_eq!(h.0[0] & 0x603, 0);
    // A future positive value still counts; 8..=0xe are negative.
    assert_eq!(fp(0x22 << 16).0[0] & 0x603, 0x603);
    assert_eq!(fp(0x88 << 16).0[0] & 0x603, 0);
}

#[test]
fn sve_and_sme_need_the_extension_itself() {
    let raw = IdRegs {
        isar2: 2 << 56, // LUT6
        zfr0: 0x1,
        smfr0: 1 << 63,
        ..IdRegs::default()
    };
    // No SVE or SME in PFR0/PFR1: their feature registers do not count, and neither does
    // SVE_LUT6 (an ISAR2 value).
    let h = hwcaps(&raw, Offer::LINUX);
    assert_eq!(names(h), ["fp", "asimd", "evtstrm", "cpuid", "lut"]);
    let raw = IdRegs {
        pfr0: 1 << 32,
        pfr1: 1 << 24,
        ..raw
    };
    let h = hwcaps(&raw, Offer::LINUX);
    assert!(h.has(row("HWCAP3_SVE_LUT6")) && h.has(row("HWCAP2_SME_FA64")));
    let h = hwcaps(&raw, Offer::svelt(false, false));
    assert_eq!(names(h), ["fp", "asimd", "cpuid", "lut"]);
    let h = hwcaps(&raw, Offer::svelt(true, false));
    assert!(h.has(row("HWCAP2_SVE2")) && h.has(row("HWCAP3_SVE_LUT6")));
    assert!(!h.has(row("HWCAP2_SME")) && !h.has(row("HWCAP2_SME_FA64")));
}

#[test]
fn mte_far_stays_visible_without_its_hwcap() {
    let raw = IdRegs {
        pfr1: 3 << 8,
        pfr2: 0x110,
        ..IdRegs::default()
    };
    let v = idregs::user_view(&raw, svelt());
    assert_eq!((v.pfr1, v.pfr2), (0, 0x110));
    let h = hwcaps(&raw, svelt());
    assert_eq!(h.0[2], 0);
    assert_eq!(h.0[1] & (HWCAP2_MTE | HWCAP2_MTE3), 0);
    let h = hwcaps(&raw, Offer::LINUX);
    assert_eq!(h.0[2], HWCAP3_MTE_FAR | HWCAP3_MTE_STORE_ONLY);
    assert_eq!(
        h.0[1] & (HWCAP2_MTE | HWCAP2_MTE3),
        HWCAP2_MTE | HWCAP2_MTE3
    );
}

#[test]
fn pointer_authentication_any_algorithm() {
    for (isar1, isar2) in [(1 << 4, 0), (1 << 8, 0), (0, 1 << 12)] {
        let raw = IdRegs {
            isar1,
            isar2,
            ..IdRegs::default()
        };
        let h = hwcaps(&raw, Offer::LINUX);
        assert!(h.has(row("HWCAP_PACA")) && !h.has(row("HWCAP_PACG")));
        assert!(!hwcaps(&raw, svelt()).has(row("HWCAP_PACA")));
    }
    for (isar1, isar2) in [(1 << 24, 0), (1 << 28, 0), (0, 1 << 8)] {
        let raw = IdRegs {
            isar1,
            isar2,
            ..IdRegs::default()
        };
        let h = hwcaps(&raw, Offer::LINUX);
        assert!(h.has(row("HWCAP_PACG")) && !h.has(row("HWCAP_PACA")));
    }
}

/// QEMU 10.0.2 `-M virt,gic-version=3,virtualization=on -cpu
/// max,pauth-impdef=on,sve=on,sme=on`, as Svelt's boot log prints it (`log=debug`).
const QEMU_10_0: IdRegs = IdRegs {
    pfr0: 0x1301_0011_2111_0222,
    pfr1: 0x0000_0010_0100_0121,
    pfr2: 0,
    zfr0: 0x0110_1101_0021_0021,
    smfr0: 0x80f1_00fd_0000_0000,
    fpfr0: 0,
    isar0: 0x1221_1111_1021_2120,
    isar1: 0x0111_2111_1021_1502,
    isar2: 0x0000_0000_0011_0012,
    isar3: 0,
    mmfr0: 0x2100_0323_1020_1126,
    mmfr1: 0x0110_1120_1031_2122,
    mmfr2: 0x1221_0111_1201_1011,
    mmfr3: 0x1000_0000_0000_0000,
    midr: 0x000f_0510,
    id_isar5: 0,
    id_isar6: 0,
    mvfr0: 0,
    mvfr1: 0,
    id_pfr2: 0,
};

/// QEMU 11.1.3, same flags: SVE2p1, SME2p1 with the FP8 and SME2 extras, FPMR and FP8, GCS,
/// LSE128, CMPBR, LUT, FAMINMAX, FPRCVT, MTE_FAR/MTE_STORE_ONLY (MTE itself only at level 1).
const QEMU_11_1: IdRegs = IdRegs {
    pfr0: 0x1301_0011_2111_0222,
    pfr1: 0x0010_1010_1200_0121,
    pfr2: 0x0000_0001_0000_0111,
    zfr0: 0x0110_1101_0121_0022,
    smfr0: 0x92f1_5fff_7180_0001,
    fpfr0: 0xfc00_0003,
    isar0: 0x1221_1111_1031_2120,
    isar1: 0x0111_2111_1021_1502,
    isar2: 0x1120_0000_0011_0012,
    isar3: 0x1000_0010,
    mmfr0: 0x2100_0323_1020_1126,
    mmfr1: 0x0110_1120_1031_2122,
    mmfr2: 0x1221_0111_1201_1011,
    mmfr3: 0x1000_0000_1100_1111,
    ..QEMU_10_0
};

/// What Linux 7.3.4 (Debian's arm64 build) reported under those QEMUs: AT_HWCAP, AT_HWCAP2,
/// AT_HWCAP3 and the EL0 view (user/src/bin/hwcap_idregs.rs prints them).
const LINUX_ON_QEMU_10_0: Hwcaps = Hwcaps([0xffff_ffff, 0x1803_ffbb_ffff, 0]);
const LINUX_ON_QEMU_11_1: Hwcaps = Hwcaps([0xb01f_ffff_ffff, 0x7fff_bff7_ffbb_ffff, 0x3]);
const LINUX_VIEW_QEMU_10_0: IdRegs = IdRegs {
    pfr0: 0x0001_0001_0011_0011,
    pfr1: 0x0100_0121,
    pfr2: 0,
    zfr0: 0x0110_1101_0021_0021,
    smfr0: 0x80f1_00fd_0000_0000,
    fpfr0: 0,
    isar0: 0x1021_1111_1021_2120,
    isar1: 0x0011_2011_1021_1502,
    isar2: 0x0011_0012,
    isar3: 0,
    mmfr0: 0x2000_0111_ff00_0000,
    mmfr1: 0x1000_0000_0000,
    mmfr2: 0x1_0000_0000,
    mmfr3: 0,
    midr: 0xf_0510,
    id_isar5: 0,
    id_isar6: 0,
    mvfr0: 0,
    mvfr1: 0,
    id_pfr2: 0,
};
const LINUX_VIEW_QEMU_11_1: IdRegs = IdRegs {
    pfr1: 0x1000_0200_0121,
    pfr2: 0x1_0000_0110,
    zfr0: 0x0110_1101_0121_0022,
    smfr0: 0x92f1_5fff_7180_0001,
    fpfr0: 0xfc00_0003,
    isar0: 0x1021_1111_1031_2120,
    isar2: 0x0120_0000_0011_0012,
    isar3: 0x1000_0010,
    ..LINUX_VIEW_QEMU_10_0
};

#[test]
fn linux_offer_reproduces_linux_on_qemu() {
    assert_eq!(hwcaps(&QEMU_10_0, Offer::LINUX), LINUX_ON_QEMU_10_0);
    assert_eq!(hwcaps(&QEMU_11_1, Offer::LINUX), LINUX_ON_QEMU_11_1);
    assert_eq!(
        idregs::user_view(&QEMU_10_0, Offer::LINUX),
        LINUX_VIEW_QEMU_10_0
    );
    assert_eq!(
        idregs::user_view(&QEMU_11_1, Offer::LINUX),
        LINUX_VIEW_QEMU_11_1
    );
}

/// Svelt reports what Linux does, less what it does not handle.
fn svelt_less_than_linux(raw: &IdRegs) -> (String, Vec<&'static str>) {
    let s = hwcaps(raw, svelt());
    let l = hwcaps(raw, Offer::LINUX);
    let hidden = HWCAPS
        .iter()
        .filter(|c| l.has(c) && !s.has(c))
        .map(|c| c.name)
        .collect();
    assert!(HWCAPS.iter().all(|c| !s.has(c) || l.has(c)));
    (names(s).join(" "), hidden)
}

#[test]
fn qemu_10_0_max() {
    let (svelt_names, hidden) = svelt_less_than_linux(&QEMU_10_0);
    assert_eq!(
        svelt_names,
        "fp asimd aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma \
         lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb \
         dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svef32mm \
         svef64mm svebf16 i8mm bf16 dgh rng ecv afp rpres sme smei16i64 smef64f64 smei8i32 \
         smef16f32 smeb16f32 smef32f32 smefa64 wfxt ebf16 sveebf16 hbc"
    );
    assert_eq!(hidden, ["evtstrm", "paca", "pacg", "bti", "mops"]);
}

#[test]
fn qemu_11_1_max() {
    let (svelt_names, hidden) = svelt_less_than_linux(&QEMU_11_1);
    assert_eq!(
        svelt_names,
        "fp asimd aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma \
         lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb \
         gcs cmpbr fprcvt f8mm8 f8mm4 smeaes smesfexpa smesmop4 dcpodp sve2 sveaes svepmull \
         svebitperm svesha3 svesm4 flagm2 frint svei8mm svef32mm svef64mm svebf16 i8mm bf16 \
         dgh rng ecv afp rpres sme smei16i64 smef64f64 smei8i32 smef16f32 smeb16f32 smef32f32 \
         smefa64 wfxt ebf16 sveebf16 cssc sve2p1 sme2 sme2p1 smei16i32 smebi32i32 smeb16b16 \
         smef16f16 hbc sveb16b16 lse128 fpmr lut faminmax f8cvt f8fma f8dp4 f8dp2 f8e4m3 \
         f8e5m2 smelutv2 smef8f16 smef8f32 smesf8fma smesf8dp4 smesf8dp2"
    );
    assert_eq!(
        hidden,
        [
            "evtstrm",
            "paca",
            "pacg",
            "bti",
            "mops",
            "mtefar",
            "mtestoreonly"
        ]
    );
}

#[test]
fn features_line() {
    let h = hwcaps(&QEMU_10_0, svelt());
    let line: String = h.names().collect::<Vec<_>>().join(" ");
    assert!(line.starts_with("fp asimd aes pmull sha1"));
    assert!(line.contains("sha512 sve asimdfhm") && line.ends_with("wfxt ebf16 sveebf16 hbc"));
}
