//! What a program learns about the CPU: the three hwcap words of the auxiliary vector, the ID
//! registers as EL0 reads them (each MRS traps and the kernel answers: HWCAP_CPUID), and which
//! kernel it runs on, so `svelt_abi::isa::hwcap` can say what that kernel should report.

use svelt_abi::isa::cpu::{IdReg, IdRegs};
use svelt_abi::isa::hwcap::{Hwcaps, Offer};
use svelt_abi::uapi::auxv::{AT_HWCAP, AT_HWCAP2, AT_HWCAP3};

/// AT_HWCAP, AT_HWCAP2 and AT_HWCAP3 (a missing entry reads as 0).
pub fn hwcaps() -> Hwcaps {
    let a = crate::rt::args();
    let word = |key: u64| a.getauxval(key as usize).unwrap_or(0) as u64;
    Hwcaps([word(AT_HWCAP), word(AT_HWCAP2), word(AT_HWCAP3)])
}

/// Reads a system register by its generic name (from EL0 an ID register read traps to the
/// kernel, which emulates it when it offers HWCAP_CPUID).
macro_rules! mrs {
    ($name:literal) => {{
        let v: u64;
        // SAFETY: an MRS of an ID register from EL0 reads the kernel's emulated value (or
        // raises SIGILL without HWCAP_CPUID); it touches no memory.
        unsafe { core::arch::asm!(concat!("mrs {}, ", $name), out(reg) v, options(nomem, nostack)) };
        v
    }};
}

/// One AArch64 ID register as EL0 sees it. Needs HWCAP_CPUID.
pub fn read(reg: IdReg) -> u64 {
    match reg {
        IdReg::Pfr0 => mrs!("S3_0_C0_C4_0"),
        IdReg::Pfr1 => mrs!("S3_0_C0_C4_1"),
        IdReg::Pfr2 => mrs!("S3_0_C0_C4_2"),
        IdReg::Zfr0 => mrs!("S3_0_C0_C4_4"),
        IdReg::Smfr0 => mrs!("S3_0_C0_C4_5"),
        IdReg::Fpfr0 => mrs!("S3_0_C0_C4_7"),
        IdReg::Isar0 => mrs!("S3_0_C0_C6_0"),
        IdReg::Isar1 => mrs!("S3_0_C0_C6_1"),
        IdReg::Isar2 => mrs!("S3_0_C0_C6_2"),
        IdReg::Isar3 => mrs!("S3_0_C0_C6_3"),
        IdReg::Mmfr0 => mrs!("S3_0_C0_C7_0"),
        IdReg::Mmfr1 => mrs!("S3_0_C0_C7_1"),
        IdReg::Mmfr2 => mrs!("S3_0_C0_C7_2"),
        IdReg::Mmfr3 => mrs!("S3_0_C0_C7_3"),
    }
}

/// Every AArch64 ID register with user-visible fields, and MIDR_EL1, as EL0 sees them. Needs
/// HWCAP_CPUID.
pub fn el0_view() -> IdRegs {
    let mut r = IdRegs {
        midr: mrs!("S3_0_C0_C0_0"),
        ..IdRegs::default()
    };
    for reg in IdReg::ALL {
        r.set(reg, read(reg));
    }
    r
}

/// Svelt marks its release (`7.3.0-svelt`); anything else is taken for Linux.
pub fn on_svelt() -> bool {
    let u = crate::sys::uname();
    let len = u
        .release
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(u.release.len());
    u.release[..len].ends_with(b"-svelt")
}

/// What the running kernel handles, as far as the hwcaps go: Svelt's choices on Svelt (SVE and
/// SME when the CPU has them, which the EL0 view then shows), Linux 7.3's options otherwise.
pub fn kernel_offer() -> Offer {
    if on_svelt() {
        Offer::svelt(true, true)
    } else {
        Offer::LINUX
    }
}

/// /proc/cpuinfo's text. A program started as the first process (`--init`) finds no /proc yet:
/// it mounts one.
pub fn cpuinfo() -> Result<alloc::string::String, alloc::string::String> {
    use crate::{io, sys};
    let b = match io::read_file("/proc/cpuinfo") {
        Err(sys::ENOENT) => {
            let _ = sys::mkdirat(sys::AT_FDCWD, "/proc", 0o755);
            sys::mount("proc", "/proc", "proc", 0)
                .map_err(|e| alloc::format!("mount /proc: {e:?}"))?;
            io::read_file("/proc/cpuinfo")
        }
        r => r,
    }
    .map_err(|e| alloc::format!("read /proc/cpuinfo: {e:?}"))?;
    alloc::string::String::from_utf8(b).map_err(|_| "/proc/cpuinfo is not UTF-8".into())
}
