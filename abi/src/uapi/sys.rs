//! System uapi: `struct utsname`, resource limits, `struct rusage`, `struct sysinfo`, reboot
//! magic, and the prctl option numbers.

use crate::uapi::errno::{Errno, SysResult};
use crate::uapi::time::Timeval;
use crate::util::bytes::*;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// ---- uname ----

/// Length of each `struct new_utsname` field, NUL included.
pub const UTS_LEN: usize = 65;

/// `struct new_utsname`: six 65-byte NUL-terminated strings (390 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utsname<'a> {
    pub sysname: &'a [u8],
    pub nodename: &'a [u8],
    pub release: &'a [u8],
    pub version: &'a [u8],
    pub machine: &'a [u8],
    pub domainname: &'a [u8],
}

/// Size of the `struct new_utsname` image.
pub const UTSNAME_SIZE: usize = 6 * UTS_LEN;

impl Utsname<'_> {
    /// The image uname(2) copies out; each field truncated to 64 bytes and NUL-padded.
    pub fn to_bytes(&self) -> [u8; UTSNAME_SIZE] {
        let mut b = [0u8; UTSNAME_SIZE];
        let fields = [
            self.sysname,
            self.nodename,
            self.release,
            self.version,
            self.machine,
            self.domainname,
        ];
        for (i, f) in fields.iter().enumerate() {
            put_cstr(&mut b, i * UTS_LEN, UTS_LEN, f);
        }
        b
    }
}

/// One field (0 = sysname .. 5 = domainname) of a utsname image, without its NUL padding.
pub fn utsname_field(b: &[u8; UTSNAME_SIZE], i: usize) -> &[u8] {
    let f = &b[i * UTS_LEN..(i + 1) * UTS_LEN];
    let n = f.iter().position(|&c| c == 0).unwrap_or(UTS_LEN);
    &f[..n]
}

// ---- resource limits ----

pub const RLIMIT_CPU: u32 = 0;
pub const RLIMIT_FSIZE: u32 = 1;
pub const RLIMIT_DATA: u32 = 2;
pub const RLIMIT_STACK: u32 = 3;
pub const RLIMIT_CORE: u32 = 4;
pub const RLIMIT_RSS: u32 = 5;
pub const RLIMIT_NPROC: u32 = 6;
pub const RLIMIT_NOFILE: u32 = 7;
pub const RLIMIT_MEMLOCK: u32 = 8;
pub const RLIMIT_AS: u32 = 9;
pub const RLIMIT_LOCKS: u32 = 10;
pub const RLIMIT_SIGPENDING: u32 = 11;
pub const RLIMIT_MSGQUEUE: u32 = 12;
pub const RLIMIT_NICE: u32 = 13;
pub const RLIMIT_RTPRIO: u32 = 14;
pub const RLIMIT_RTTIME: u32 = 15;
pub const RLIM_NLIMITS: u32 = 16;
pub const RLIM_INFINITY: u64 = u64::MAX;
/// Linux's default RLIMIT_STACK soft limit (`_STK_LIM`, 8 MiB).
pub const STK_LIM: u64 = 8 << 20;
/// Linux's default RLIMIT_NOFILE (`INR_OPEN_CUR` / `INR_OPEN_MAX`).
pub const INR_OPEN_CUR: u64 = 1024;
pub const INR_OPEN_MAX: u64 = 4096;

/// `struct rlimit64` (and `struct rlimit` on 64-bit): 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Rlimit64 {
    pub rlim_cur: u64,
    pub rlim_max: u64,
}

const _: () = assert!(core::mem::size_of::<Rlimit64>() == 16);

impl Rlimit64 {
    pub const SIZE: usize = 16;
    pub const INFINITY: Rlimit64 = Rlimit64 {
        rlim_cur: RLIM_INFINITY,
        rlim_max: RLIM_INFINITY,
    };

    /// setrlimit/prlimit64's shape check: soft limit above hard ⇒ EINVAL.
    pub fn validate(self) -> SysResult<Rlimit64> {
        if self.rlim_cur > self.rlim_max {
            Err(Errno::EINVAL)
        } else {
            Ok(self)
        }
    }
}

/// The limits a Linux init starts with (`INIT_RLIMITS`) for the ones Svelt enforces; others are
/// unlimited. Index with RLIMIT_*.
pub const fn init_rlimit(resource: u32) -> Rlimit64 {
    match resource {
        RLIMIT_STACK => Rlimit64 {
            rlim_cur: STK_LIM,
            rlim_max: RLIM_INFINITY,
        },
        RLIMIT_CORE => Rlimit64 {
            rlim_cur: 0,
            rlim_max: RLIM_INFINITY,
        },
        RLIMIT_NOFILE => Rlimit64 {
            rlim_cur: INR_OPEN_CUR,
            rlim_max: INR_OPEN_MAX,
        },
        RLIMIT_MEMLOCK => Rlimit64 {
            rlim_cur: 8 << 20,
            rlim_max: 8 << 20,
        },
        RLIMIT_MSGQUEUE => Rlimit64 {
            rlim_cur: 819_200,
            rlim_max: 819_200,
        },
        RLIMIT_NICE | RLIMIT_RTPRIO => Rlimit64 {
            rlim_cur: 0,
            rlim_max: 0,
        },
        _ => Rlimit64::INFINITY,
    }
}

// ---- rusage ----

pub const RUSAGE_SELF: i32 = 0;
pub const RUSAGE_CHILDREN: i32 = -1;
pub const RUSAGE_THREAD: i32 = 1;

/// `struct rusage` (144 bytes): two timevals and 14 longs. Svelt fills the times and leaves the
/// counters it does not keep at 0.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Rusage {
    pub ru_utime: Timeval,
    pub ru_stime: Timeval,
    /// ru_maxrss .. ru_nivcsw, in header order.
    pub counters: [i64; 14],
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Rusage>() == Rusage::SIZE);
    assert!(offset_of!(Rusage, ru_stime) == 16);
    assert!(offset_of!(Rusage, counters) == 32);
};

impl Rusage {
    pub const SIZE: usize = 144;
    pub const MAXRSS: usize = 0;
    pub const MINFLT: usize = 4;
    pub const MAJFLT: usize = 5;
    pub const NVCSW: usize = 12;
    pub const NIVCSW: usize = 13;
}

// ---- sysinfo ----

/// `struct sysinfo` on 64-bit (112 bytes). The C struct's holes after `pad` and at the end are
/// the explicit `__pad1` and `__pad2` here.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Sysinfo {
    pub uptime: i64,
    /// 1, 5, 15 minute load averages, fixed point with 16 fractional bits.
    pub loads: [u64; 3],
    pub totalram: u64,
    pub freeram: u64,
    pub sharedram: u64,
    pub bufferram: u64,
    pub totalswap: u64,
    pub freeswap: u64,
    pub procs: u16,
    pub pad: u16,
    pub __pad1: u32,
    pub totalhigh: u64,
    pub freehigh: u64,
    pub mem_unit: u32,
    pub __pad2: u32,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Sysinfo>() == Sysinfo::SIZE);
    assert!(offset_of!(Sysinfo, totalram) == 32);
    assert!(offset_of!(Sysinfo, procs) == 80);
    assert!(offset_of!(Sysinfo, totalhigh) == 88);
    assert!(offset_of!(Sysinfo, mem_unit) == 104);
};

impl Sysinfo {
    pub const SIZE: usize = 112;
}

// ---- reboot(2) ----

pub const LINUX_REBOOT_MAGIC1: u32 = 0xfee1_dead;
pub const LINUX_REBOOT_MAGIC2: u32 = 0x2812_1969;
pub const LINUX_REBOOT_MAGIC2A: u32 = 0x0512_1996;
pub const LINUX_REBOOT_MAGIC2B: u32 = 0x1604_1998;
pub const LINUX_REBOOT_MAGIC2C: u32 = 0x2011_2000;

pub const LINUX_REBOOT_CMD_RESTART: u32 = 0x0123_4567;
pub const LINUX_REBOOT_CMD_HALT: u32 = 0xCDEF_0123;
pub const LINUX_REBOOT_CMD_CAD_ON: u32 = 0x89AB_CDEF;
pub const LINUX_REBOOT_CMD_CAD_OFF: u32 = 0x0000_0000;
pub const LINUX_REBOOT_CMD_POWER_OFF: u32 = 0x4321_FEDC;
pub const LINUX_REBOOT_CMD_RESTART2: u32 = 0xA1B2_C3D4;
pub const LINUX_REBOOT_CMD_SW_SUSPEND: u32 = 0xD000_FCE2;
pub const LINUX_REBOOT_CMD_KEXEC: u32 = 0x4558_4543;

/// reboot's magic check: EINVAL unless magic1 is MAGIC1 and magic2 one of the four dates.
/// (The EPERM check for CAP_SYS_BOOT comes first in Linux; Svelt's only user is root.)
pub fn reboot_check_magic(magic1: u32, magic2: u32) -> SysResult<()> {
    let ok2 = matches!(
        magic2,
        LINUX_REBOOT_MAGIC2 | LINUX_REBOOT_MAGIC2A | LINUX_REBOOT_MAGIC2B | LINUX_REBOOT_MAGIC2C
    );
    if magic1 == LINUX_REBOOT_MAGIC1 && ok2 {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

// ---- prctl(2) options (linux/prctl.h) ----

pub const PR_SET_PDEATHSIG: u32 = 1;
pub const PR_GET_PDEATHSIG: u32 = 2;
pub const PR_GET_DUMPABLE: u32 = 3;
pub const PR_SET_DUMPABLE: u32 = 4;
pub const PR_GET_UNALIGN: u32 = 5;
pub const PR_SET_UNALIGN: u32 = 6;
pub const PR_GET_KEEPCAPS: u32 = 7;
pub const PR_SET_KEEPCAPS: u32 = 8;
pub const PR_GET_FPEMU: u32 = 9;
pub const PR_SET_FPEMU: u32 = 10;
pub const PR_GET_FPEXC: u32 = 11;
pub const PR_SET_FPEXC: u32 = 12;
pub const PR_GET_TIMING: u32 = 13;
pub const PR_SET_TIMING: u32 = 14;
pub const PR_SET_NAME: u32 = 15;
pub const PR_GET_NAME: u32 = 16;
pub const PR_GET_ENDIAN: u32 = 19;
pub const PR_SET_ENDIAN: u32 = 20;
pub const PR_GET_SECCOMP: u32 = 21;
pub const PR_SET_SECCOMP: u32 = 22;
pub const PR_CAPBSET_READ: u32 = 23;
pub const PR_CAPBSET_DROP: u32 = 24;
pub const PR_GET_TSC: u32 = 25;
pub const PR_SET_TSC: u32 = 26;
pub const PR_GET_SECUREBITS: u32 = 27;
pub const PR_SET_SECUREBITS: u32 = 28;
pub const PR_SET_TIMERSLACK: u32 = 29;
pub const PR_GET_TIMERSLACK: u32 = 30;
pub const PR_TASK_PERF_EVENTS_DISABLE: u32 = 31;
pub const PR_TASK_PERF_EVENTS_ENABLE: u32 = 32;
pub const PR_MCE_KILL: u32 = 33;
pub const PR_MCE_KILL_GET: u32 = 34;
pub const PR_SET_MM: u32 = 35;
pub const PR_SET_CHILD_SUBREAPER: u32 = 36;
pub const PR_GET_CHILD_SUBREAPER: u32 = 37;
pub const PR_SET_NO_NEW_PRIVS: u32 = 38;
pub const PR_GET_NO_NEW_PRIVS: u32 = 39;
pub const PR_GET_TID_ADDRESS: u32 = 40;
pub const PR_SET_THP_DISABLE: u32 = 41;
pub const PR_GET_THP_DISABLE: u32 = 42;
pub const PR_MPX_ENABLE_MANAGEMENT: u32 = 43;
pub const PR_MPX_DISABLE_MANAGEMENT: u32 = 44;
pub const PR_SET_FP_MODE: u32 = 45;
pub const PR_GET_FP_MODE: u32 = 46;
pub const PR_CAP_AMBIENT: u32 = 47;
/// arm64 SVE: set the task's vector length (Linux's Documentation/arch/arm64/sve.rst, "prctl extensions").
pub const PR_SVE_SET_VL: u32 = 50;
pub const PR_SVE_GET_VL: u32 = 51;
pub const PR_GET_SPECULATION_CTRL: u32 = 52;
pub const PR_SET_SPECULATION_CTRL: u32 = 53;
pub const PR_PAC_RESET_KEYS: u32 = 54;
pub const PR_SET_TAGGED_ADDR_CTRL: u32 = 55;
pub const PR_GET_TAGGED_ADDR_CTRL: u32 = 56;
/// PR_SET_TAGGED_ADDR_CTRL's one flag without MTE: syscalls take pointers with a tag in bits
/// 56-63 (arm64's tagged address ABI).
pub const PR_TAGGED_ADDR_ENABLE: usize = 1;

/// An address without its top-byte tag (TCR_EL1.TBI0 makes EL0 accesses ignore it), as arm64
/// Linux's untagged_addr: the address ANDed with itself sign-extended from bit 55, so a
/// user-half address (bit 55 clear) loses its tag and one with bit 55 set is left as it is
/// (never a user address either way).
pub const fn untagged_addr(va: usize) -> usize {
    va & ((((va << 8) as isize) >> 8) as usize)
}

#[cfg(test)]
mod tag_tests {
    #[test]
    fn untagging_keeps_the_half() {
        assert_eq!(super::untagged_addr(0x2a00_0000_1234_5678), 0x1234_5678);
        assert_eq!(
            super::untagged_addr(0xffff_0000_0000_1000),
            0xffff_0000_0000_1000
        );
        assert_eq!(
            super::untagged_addr(0x00ff_ff00_0000_0000),
            0x00ff_ff00_0000_0000
        );
        // Bit 55 set: the tag stays (Linux reports such a fault's si_addr as 0x918c...).
        assert_eq!(
            super::untagged_addr(0x918c_0000_dead_0000),
            0x918c_0000_dead_0000
        );
    }
}
pub const PR_SET_IO_FLUSHER: u32 = 57;
pub const PR_GET_IO_FLUSHER: u32 = 58;
pub const PR_SET_SYSCALL_USER_DISPATCH: u32 = 59;
pub const PR_PAC_SET_ENABLED_KEYS: u32 = 60;
pub const PR_PAC_GET_ENABLED_KEYS: u32 = 61;
pub const PR_SCHED_CORE: u32 = 62;
/// arm64 SME: set the task's streaming vector length.
pub const PR_SME_SET_VL: u32 = 63;
pub const PR_SME_GET_VL: u32 = 64;
pub const PR_SET_MDWE: u32 = 65;
pub const PR_GET_MDWE: u32 = 66;
pub const PR_SET_MEMORY_MERGE: u32 = 67;
pub const PR_GET_MEMORY_MERGE: u32 = 68;
pub const PR_GET_SHADOW_STACK_STATUS: u32 = 74;
pub const PR_SET_SHADOW_STACK_STATUS: u32 = 75;
pub const PR_LOCK_SHADOW_STACK_STATUS: u32 = 76;
pub const PR_SET_VMA: u32 = 0x53564d41;

pub const PR_SVE_VL_LEN_MASK: u64 = 0xffff;
pub const PR_SVE_VL_INHERIT: u64 = 1 << 17;
pub const PR_SVE_SET_VL_ONEXEC: u64 = 1 << 18;
pub const PR_SME_VL_LEN_MASK: u64 = 0xffff;
pub const PR_SME_VL_INHERIT: u64 = 1 << 17;
pub const PR_SME_SET_VL_ONEXEC: u64 = 1 << 18;

/// PR_SET_DUMPABLE values.
pub const SUID_DUMP_DISABLE: u64 = 0;
pub const SUID_DUMP_USER: u64 = 1;

/// Task name length for PR_SET_NAME/PR_GET_NAME, NUL included.
pub const TASK_COMM_LEN: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utsname_image() {
        let long = [b'x'; 80];
        let u = Utsname {
            sysname: b"Linux",
            nodename: b"svelt",
            release: b"6.16.0-svelt",
            version: &long,
            machine: b"aarch64",
            domainname: b"(none)",
        };
        let b = u.to_bytes();
        assert_eq!(b.len(), 390);
        assert_eq!(&b[0..6], b"Linux\0");
        assert_eq!(&b[4 * 65..4 * 65 + 8], b"aarch64\0");
        assert_eq!(utsname_field(&b, 3).len(), 64);
        assert_eq!(b[3 * 65 + 64], 0);
        assert_eq!(utsname_field(&b, 5), b"(none)");
    }

    #[test]
    fn limits_and_reboot() {
        let r = Rlimit64 {
            rlim_cur: 1,
            rlim_max: 0,
        };
        assert_eq!(r.validate(), Err(Errno::EINVAL));
        assert_eq!(
            Rlimit64::read_from_bytes(Rlimit64::INFINITY.as_bytes()).ok(),
            Some(Rlimit64::INFINITY)
        );
        assert_eq!(init_rlimit(RLIMIT_STACK).rlim_cur, 8 << 20);
        assert_eq!(init_rlimit(RLIMIT_NOFILE).rlim_max, 4096);
        assert_eq!(reboot_check_magic(0xfee1dead, 672274793), Ok(()));
        assert_eq!(reboot_check_magic(0xfee1dead, 85072278), Ok(()));
        assert_eq!(reboot_check_magic(0xfee1dead, 369367448), Ok(()));
        assert_eq!(reboot_check_magic(0xfee1dead, 537993216), Ok(()));
        assert_eq!(reboot_check_magic(0xfee1dead, 1), Err(Errno::EINVAL));
        assert_eq!(
            reboot_check_magic(0, LINUX_REBOOT_MAGIC2),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn rusage_sysinfo_layout() {
        let mut r = Rusage {
            ru_stime: Timeval {
                tv_sec: 2,
                tv_usec: 3,
            },
            ..Rusage::default()
        };
        r.counters[Rusage::NIVCSW] = 7;
        let b = r.as_bytes();
        assert_eq!(get_i64(b, 16), 2);
        assert_eq!(get_i64(b, 136), 7);
        let s = Sysinfo {
            procs: 3,
            mem_unit: 1,
            freehigh: 9,
            ..Sysinfo::default()
        };
        let b = s.as_bytes();
        assert_eq!(b.len(), Sysinfo::SIZE);
        assert_eq!(get_u16(b, 80), 3);
        assert_eq!(get_u64(b, 96), 9);
        assert_eq!(get_u32(b, 104), 1);
        assert_eq!(PR_SVE_SET_VL, 50);
        assert_eq!(PR_SME_GET_VL, 64);
        assert_eq!(PR_SVE_VL_INHERIT, 0x20000);
    }
}

/// personality(2): the query value (changes nothing, returns the current persona).
pub const PERSONALITY_QUERY: u32 = 0xffff_ffff;
/// personality(2) flag: no address-space randomization for the programs exec starts.
pub const ADDR_NO_RANDOMIZE: u32 = 0x0004_0000;
