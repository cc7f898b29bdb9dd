//! ELF core files as Linux's fs/binfmt_elf.c lays them out: the ELF header (ET_CORE), one
//! PT_NOTE, then one PT_LOAD per mapping; the notes; page-aligned memory contents.
//!
//! The kernel gathers the facts (registers, IDs, mappings) and hands them here; this module only
//! encodes them. Every size is checked: a layout that does not fit is `None`, never a panic.

use crate::format::elf::{Ehdr, Phdr, EHDR_SIZE, ELF64_LE_IDENT, EM_AARCH64, ET_CORE, EV_CURRENT};
use crate::format::elf::{PF_R, PF_W, PF_X, PHDR_SIZE, PT_LOAD, PT_NOTE};
use crate::uapi::time;
use crate::util::bytes::{put_u32, put_u64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub use crate::format::elf::{
    NT_ARM_FPMR, NT_ARM_GCS, NT_ARM_HW_BREAK, NT_ARM_HW_WATCH, NT_ARM_PACA_KEYS, NT_ARM_PACG_KEYS,
    NT_ARM_PAC_ENABLED_KEYS, NT_ARM_PAC_MASK, NT_ARM_POE, NT_ARM_SSVE, NT_ARM_SVE,
    NT_ARM_SYSTEM_CALL, NT_ARM_TAGGED_ADDR_CTRL, NT_ARM_TLS, NT_ARM_ZA, NT_ARM_ZT, NT_AUXV,
    NT_FILE, NT_PRFPREG, NT_PRPSINFO, NT_PRSTATUS, NT_SIGINFO,
};

/// The regsets after NT_PRSTATUS in arm64's regset table order, which is the order of each
/// thread's notes in a core. A regset the CPU lacks (its read fails) has no note.
pub const THREAD_REGSETS: [u32; 17] = [
    NT_PRFPREG,
    NT_ARM_TLS,
    NT_ARM_HW_BREAK,
    NT_ARM_HW_WATCH,
    NT_ARM_FPMR,
    NT_ARM_SYSTEM_CALL,
    NT_ARM_SVE,
    NT_ARM_SSVE,
    NT_ARM_ZA,
    NT_ARM_ZT,
    NT_ARM_PAC_MASK,
    NT_ARM_PAC_ENABLED_KEYS,
    NT_ARM_PACA_KEYS,
    NT_ARM_PACG_KEYS,
    NT_ARM_TAGGED_ADDR_CTRL,
    NT_ARM_POE,
    NT_ARM_GCS,
];

/// A note's owner name: "CORE" for the System V types, "LINUX" for Linux's own.
pub fn note_name(nt: u32) -> &'static str {
    match nt {
        NT_PRSTATUS | NT_PRFPREG | NT_PRPSINFO | NT_AUXV | NT_SIGINFO | NT_FILE => "CORE",
        _ => "LINUX",
    }
}

fn align4(n: usize) -> Option<usize> {
    n.checked_add(3).map(|v| v & !3)
}

/// Bytes a note takes: 12-byte header, name with its NUL and description, each padded to 4.
pub fn note_size(name: &str, desc_len: usize) -> Option<usize> {
    12usize
        .checked_add(align4(name.len() + 1)?)?
        .checked_add(align4(desc_len)?)
}

/// Writes one note at the start of `out` (zero padding included); returns its size, or `None`
/// if `out` is too short.
pub fn put_note(out: &mut [u8], name: &str, ntype: u32, desc: &[u8]) -> Option<usize> {
    let size = note_size(name, desc.len())?;
    let out = out.get_mut(..size)?;
    out.fill(0);
    let namesz = name.len() + 1;
    put_u32(out, 0, u32::try_from(namesz).ok()?);
    put_u32(out, 4, u32::try_from(desc.len()).ok()?);
    put_u32(out, 8, ntype);
    out[12..12 + name.len()].copy_from_slice(name.as_bytes());
    let d = 12 + align4(namesz)?;
    out[d..d + desc.len()].copy_from_slice(desc);
    Some(size)
}

/// `struct elf_prstatus` on arm64: 112 bytes of process facts, user_pt_regs, pr_fpvalid.
pub const PRSTATUS_SIZE: usize = 392;
/// `struct elf_prpsinfo` on arm64.
pub const PRPSINFO_SIZE: usize = 136;
/// `user_pt_regs`: x0-x30, sp, pc, pstate.
pub const PR_REG_SIZE: usize = 272;

/// A timeval of `struct elf_prstatus` (seconds, microseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeval {
    pub sec: i64,
    pub usec: i64,
}

impl Timeval {
    pub fn from_ns(ns: u64) -> Timeval {
        Timeval {
            sec: (ns / 1_000_000_000) as i64,
            usec: ((ns % 1_000_000_000) / 1000) as i64,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct PrStatus {
    /// pr_info.si_signo and pr_cursig: the signal that killed the process (in every thread's).
    pub signo: u32,
    pub sigpend: u64,
    pub sighold: u64,
    pub pid: u32,
    pub ppid: u32,
    pub pgrp: u32,
    pub sid: u32,
    pub utime: Timeval,
    pub stime: Timeval,
    pub cutime: Timeval,
    pub cstime: Timeval,
    /// x0..x30, sp, pc, pstate.
    pub regs: [u64; 34],
    /// Whether the thread has an NT_PRFPREG note.
    pub fpvalid: bool,
}

impl Default for PrStatus {
    fn default() -> Self {
        PrStatus {
            signo: 0,
            sigpend: 0,
            sighold: 0,
            pid: 0,
            ppid: 0,
            pgrp: 0,
            sid: 0,
            utime: Timeval::default(),
            stime: Timeval::default(),
            cutime: Timeval::default(),
            cstime: Timeval::default(),
            regs: [0; 34],
            fpvalid: false,
        }
    }
}

impl PrStatus {
    pub fn to_bytes(&self) -> [u8; PRSTATUS_SIZE] {
        let tv = |t: Timeval| time::Timeval {
            tv_sec: t.sec,
            tv_usec: t.usec,
        };
        zerocopy::transmute!(ElfPrstatus {
            pr_info: [self.signo as i32, 0, 0],
            pr_cursig: self.signo as i16,
            __pad0: 0,
            pr_sigpend: self.sigpend,
            pr_sighold: self.sighold,
            pr_pid: self.pid,
            pr_ppid: self.ppid,
            pr_pgrp: self.pgrp,
            pr_sid: self.sid,
            pr_utime: tv(self.utime),
            pr_stime: tv(self.stime),
            pr_cutime: tv(self.cutime),
            pr_cstime: tv(self.cstime),
            pr_reg: self.regs,
            pr_fpvalid: self.fpvalid as i32,
            __pad1: 0,
        })
    }
}

/// `struct elf_prstatus` as arm64 lays it out: `pr_info` (si_signo, si_code, si_errno), the
/// current signal, the pending and held masks, the IDs, four timevals, `user_pt_regs` and
/// `pr_fpvalid`. The C struct's two holes are the explicit `__pad` fields.
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
struct ElfPrstatus {
    pr_info: [i32; 3],
    pr_cursig: i16,
    __pad0: u16,
    pr_sigpend: u64,
    pr_sighold: u64,
    pr_pid: u32,
    pr_ppid: u32,
    pr_pgrp: u32,
    pr_sid: u32,
    pr_utime: time::Timeval,
    pr_stime: time::Timeval,
    pr_cutime: time::Timeval,
    pr_cstime: time::Timeval,
    pr_reg: [u64; 34],
    pr_fpvalid: i32,
    __pad1: u32,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<ElfPrstatus>() == PRSTATUS_SIZE);
    assert!(offset_of!(ElfPrstatus, pr_cursig) == 12);
    assert!(offset_of!(ElfPrstatus, pr_sigpend) == 16);
    assert!(offset_of!(ElfPrstatus, pr_pid) == 32);
    assert!(offset_of!(ElfPrstatus, pr_utime) == 48);
    assert!(offset_of!(ElfPrstatus, pr_reg) == 112);
    assert!(offset_of!(ElfPrstatus, pr_fpvalid) == 112 + PR_REG_SIZE);
};

#[derive(Clone, Copy, Debug)]
pub struct PrPsInfo {
    /// pr_state (0: running) and pr_sname ('R').
    pub state: u8,
    pub sname: u8,
    pub nice: i8,
    pub flag: u64,
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
    pub ppid: u32,
    pub pgrp: u32,
    pub sid: u32,
    /// The command name (at most 15 bytes kept, NUL-terminated).
    pub fname: [u8; 16],
    /// The start of the argument strings, separators as spaces (at most 79 bytes kept).
    pub psargs: [u8; 80],
}

impl Default for PrPsInfo {
    fn default() -> Self {
        PrPsInfo {
            state: 0,
            sname: b'R',
            nice: 0,
            flag: 0,
            uid: 0,
            gid: 0,
            pid: 0,
            ppid: 0,
            pgrp: 0,
            sid: 0,
            fname: [0; 16],
            psargs: [0; 80],
        }
    }
}

impl PrPsInfo {
    pub fn to_bytes(&self) -> [u8; PRPSINFO_SIZE] {
        zerocopy::transmute!(ElfPrpsinfo {
            pr_state: self.state,
            pr_sname: self.sname,
            pr_zomb: (self.sname == b'Z') as u8,
            pr_nice: self.nice,
            __pad: 0,
            pr_flag: self.flag,
            pr_uid: self.uid,
            pr_gid: self.gid,
            pr_pid: self.pid,
            pr_ppid: self.ppid,
            pr_pgrp: self.pgrp,
            pr_sid: self.sid,
            pr_fname: self.fname,
            pr_psargs: self.psargs,
        })
    }
}

/// `struct elf_prpsinfo` on arm64 (the hole before `pr_flag` made explicit).
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
struct ElfPrpsinfo {
    pr_state: u8,
    pr_sname: u8,
    pr_zomb: u8,
    pr_nice: i8,
    __pad: u32,
    pr_flag: u64,
    pr_uid: u32,
    pr_gid: u32,
    pr_pid: u32,
    pr_ppid: u32,
    pr_pgrp: u32,
    pr_sid: u32,
    pr_fname: [u8; 16],
    pr_psargs: [u8; 80],
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<ElfPrpsinfo>() == PRPSINFO_SIZE);
    assert!(offset_of!(ElfPrpsinfo, pr_flag) == 8);
    assert!(offset_of!(ElfPrpsinfo, pr_uid) == 16);
    assert!(offset_of!(ElfPrpsinfo, pr_sid) == 36);
    assert!(offset_of!(ElfPrpsinfo, pr_fname) == 40);
    assert!(offset_of!(ElfPrpsinfo, pr_psargs) == 56);
};

/// pr_fname: the first 15 bytes of the command name.
pub fn fname(comm: &[u8]) -> [u8; 16] {
    let mut f = [0u8; 16];
    let n = comm.len().min(15);
    f[..n].copy_from_slice(&comm[..n]);
    f
}

/// pr_psargs: the argument block's first 79 bytes, NULs (between arguments) made spaces.
pub fn psargs(args: &[u8]) -> [u8; 80] {
    let mut a = [0u8; 80];
    let mut n = args.len().min(79);
    // A trailing NUL ends the string rather than becoming a space.
    while n > 0 && args[n - 1] == 0 {
        n -= 1;
    }
    for (d, &s) in a.iter_mut().zip(&args[..n]) {
        *d = if s == 0 { b' ' } else { s };
    }
    a
}

/// Linux's default /proc/PID/coredump_filter: anonymous private and shared memory, ELF
/// headers, private huge pages.
pub const DEFAULT_FILTER: u32 = 0x33;
const FILTER_ANON_PRIVATE: u32 = 1 << 0;
const FILTER_ANON_SHARED: u32 = 1 << 1;
const FILTER_MAPPED_PRIVATE: u32 = 1 << 2;
const FILTER_MAPPED_SHARED: u32 = 1 << 3;
const FILTER_ELF_HEADERS: u32 = 1 << 4;

/// What decides how much of a mapping a core holds.
#[derive(Clone, Copy, Debug, Default)]
pub struct VmaFacts {
    pub start: u64,
    pub end: u64,
    pub read: bool,
    pub write: bool,
    pub exec: bool,
    /// A kernel-provided mapping (vDSO, sigpage): always dumped whole.
    pub special: bool,
    /// MADV_DONTDUMP / VM_IO: never dumped.
    pub dontdump: bool,
    pub shared: bool,
    /// Backed by a file (shared anonymous memory counts as an unlinked file, as on Linux).
    pub file: bool,
    /// The backing file has no name left (shared anonymous memory).
    pub file_unlinked: bool,
    /// Private memory the process has written to (Linux: the VMA has an anon_vma).
    pub anon_pages: bool,
    /// File offset of the start, in bytes.
    pub offset: u64,
    /// The file has an execute permission bit.
    pub file_exec: bool,
}

/// Bytes of the mapping's start a core holds (Linux's vma_dump_size); `elf_magic` says whether
/// the first page of a non-executable file mapping starts with the ELF magic (asked only then).
pub fn vma_dump_size(v: &VmaFacts, filter: u32, elf_magic: impl FnOnce() -> bool) -> u64 {
    let whole = v.end - v.start;
    if v.special {
        return whole;
    }
    if v.dontdump {
        return 0;
    }
    if v.shared {
        let f = if v.file_unlinked {
            FILTER_ANON_SHARED
        } else {
            FILTER_MAPPED_SHARED
        };
        return if filter & f != 0 { whole } else { 0 };
    }
    if v.anon_pages && filter & FILTER_ANON_PRIVATE != 0 {
        return whole;
    }
    if !v.file {
        return 0;
    }
    if filter & FILTER_MAPPED_PRIVATE != 0 {
        return whole;
    }
    if filter & FILTER_ELF_HEADERS != 0 && v.offset == 0 && v.read && (v.file_exec || elf_magic()) {
        return whole.min(4096);
    }
    0
}

/// PT_LOAD p_flags for a mapping.
pub fn load_flags(v: &VmaFacts) -> u32 {
    (if v.read { PF_R } else { 0 })
        | (if v.write { PF_W } else { 0 })
        | (if v.exec { PF_X } else { 0 })
}

/// Where things go in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub phnum: u16,
    /// The notes' offset (right after the program headers).
    pub notes_off: u64,
    /// The first memory contents' offset (the notes' end rounded up to a page).
    pub data_off: u64,
}

/// The layout for `nvmas` mappings and `notes_len` bytes of notes; None when it does not fit
/// (Linux's extended numbering for 65535+ headers is not done: no core then).
pub fn layout(nvmas: usize, notes_len: usize, page: u64) -> Option<Layout> {
    let phnum = nvmas.checked_add(1)?;
    if phnum >= 0xffff {
        return None;
    }
    let notes_off = (EHDR_SIZE + phnum * PHDR_SIZE) as u64;
    let end = notes_off.checked_add(notes_len as u64)?;
    let data_off = end.checked_next_multiple_of(page)?;
    Some(Layout {
        phnum: phnum as u16,
        notes_off,
        data_off,
    })
}

/// The ELF header of a core with `phnum` program headers.
pub fn core_ehdr(phnum: u16) -> [u8; EHDR_SIZE] {
    zerocopy::transmute!(Ehdr {
        e_ident: ELF64_LE_IDENT,
        e_type: ET_CORE,
        e_machine: EM_AARCH64,
        e_version: EV_CURRENT as u32,
        e_entry: 0,
        e_phoff: EHDR_SIZE as u64,
        e_shoff: 0,
        e_flags: 0,
        e_ehsize: EHDR_SIZE as u16,
        e_phentsize: PHDR_SIZE as u16,
        e_phnum: phnum,
        e_shentsize: 0,
        e_shnum: 0,
        e_shstrndx: 0,
    })
}

/// The PT_NOTE header.
pub fn note_phdr(off: u64, len: u64) -> [u8; PHDR_SIZE] {
    zerocopy::transmute!(Phdr {
        p_type: PT_NOTE,
        p_offset: off,
        p_filesz: len,
        p_align: 4,
        ..Phdr::default()
    })
}

/// A mapping's PT_LOAD header: `dump` bytes of it at `off`.
pub fn load_phdr(v: &VmaFacts, off: u64, dump: u64, page: u64) -> [u8; PHDR_SIZE] {
    zerocopy::transmute!(Phdr {
        p_type: PT_LOAD,
        p_flags: load_flags(v),
        p_offset: off,
        p_vaddr: v.start,
        p_paddr: 0,
        p_filesz: dump,
        p_memsz: v.end - v.start,
        p_align: page,
    })
}

/// One NT_FILE entry: a file mapping and the file's path.
pub struct FileMap<'a> {
    pub start: u64,
    pub end: u64,
    /// File offset in pages.
    pub pgoff: u64,
    pub name: &'a [u8],
}

/// NT_FILE's description size: count, page size, (start, end, pgoff) per mapping, then the
/// NUL-terminated names.
pub fn file_note_len(maps: &[FileMap]) -> Option<usize> {
    let head = 16usize.checked_add(maps.len().checked_mul(24)?)?;
    maps.iter()
        .try_fold(head, |acc, m| acc.checked_add(m.name.len().checked_add(1)?))
}

/// Writes NT_FILE's description into `out` (exactly `file_note_len` bytes).
pub fn put_file_note(out: &mut [u8], maps: &[FileMap], page: u64) -> Option<()> {
    if out.len() != file_note_len(maps)? {
        return None;
    }
    put_u64(out, 0, maps.len() as u64);
    put_u64(out, 8, page);
    let mut names = 16 + 24 * maps.len();
    for (i, m) in maps.iter().enumerate() {
        put_u64(out, 16 + 24 * i, m.start);
        put_u64(out, 24 + 24 * i, m.end);
        put_u64(out, 32 + 24 * i, m.pgoff);
        out[names..names + m.name.len()].copy_from_slice(m.name);
        out[names + m.name.len()] = 0;
        names += m.name.len() + 1;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::bytes::{get_u16, get_u32, get_u64};

    #[test]
    fn notes_are_padded_to_four() {
        assert_eq!(note_size("CORE", PRSTATUS_SIZE), Some(12 + 8 + 392));
        assert_eq!(note_size("LINUX", 5), Some(12 + 8 + 8));
        let mut b = [0xffu8; 40];
        let n = put_note(&mut b, "LINUX", NT_ARM_TLS, &[1, 2, 3, 4, 5]).unwrap();
        assert_eq!(n, 28);
        assert_eq!(get_u32(&b, 0), 6);
        assert_eq!(get_u32(&b, 4), 5);
        assert_eq!(get_u32(&b, 8), NT_ARM_TLS);
        assert_eq!(&b[12..20], b"LINUX\0\0\0");
        assert_eq!(&b[20..28], &[1, 2, 3, 4, 5, 0, 0, 0]);
        assert_eq!(b[28], 0xff);
        assert_eq!(put_note(&mut b[..27], "LINUX", 1, &[0; 5]), None);
    }

    #[test]
    fn prstatus_fields_sit_where_linux_has_them() {
        let mut regs = [0u64; 34];
        regs[0] = 0x1111;
        regs[32] = 0x4000_1000; // pc
        let p = PrStatus {
            signo: 11,
            pid: 7,
            ppid: 1,
            pgrp: 7,
            sid: 1,
            sighold: 0x8000,
            regs,
            fpvalid: true,
            utime: Timeval::from_ns(1_500_002_000),
            ..Default::default()
        };
        let b = p.to_bytes();
        assert_eq!(get_u32(&b, 0), 11);
        assert_eq!(get_u16(&b, 12), 11);
        assert_eq!(get_u64(&b, 24), 0x8000);
        assert_eq!(get_u32(&b, 32), 7);
        assert_eq!(get_u32(&b, 36), 1);
        assert_eq!(get_u64(&b, 48), 1);
        assert_eq!(get_u64(&b, 56), 500_002);
        assert_eq!(get_u64(&b, 112), 0x1111);
        assert_eq!(get_u64(&b, 112 + 32 * 8), 0x4000_1000);
        assert_eq!(get_u32(&b, 384), 1);
    }

    #[test]
    fn psinfo_names_and_args() {
        assert_eq!(&psargs(b"/bin/x\0-a\0")[..10], b"/bin/x -a\0");
        let long = [b'a'; 100];
        let a = psargs(&long);
        assert_eq!(a[78], b'a');
        assert_eq!(a[79], 0);
        assert_eq!(
            &fname(b"a-very-long-command-name")[..],
            b"a-very-long-com\0"
        );
        let i = PrPsInfo {
            sname: b'R',
            pid: 9,
            fname: fname(b"x"),
            ..Default::default()
        };
        let b = i.to_bytes();
        assert_eq!(b[1], b'R');
        assert_eq!(get_u32(&b, 24), 9);
        assert_eq!(b[40], b'x');
    }

    #[test]
    fn default_filter_rules() {
        let anon = VmaFacts {
            start: 0x1000,
            end: 0x5000,
            read: true,
            write: true,
            anon_pages: true,
            ..Default::default()
        };
        assert_eq!(vma_dump_size(&anon, DEFAULT_FILTER, || false), 0x4000);
        let untouched = VmaFacts {
            anon_pages: false,
            ..anon
        };
        assert_eq!(vma_dump_size(&untouched, DEFAULT_FILTER, || false), 0);
        let shared_anon = VmaFacts {
            shared: true,
            file: true,
            file_unlinked: true,
            ..untouched
        };
        assert_eq!(
            vma_dump_size(&shared_anon, DEFAULT_FILTER, || false),
            0x4000
        );
        let shared_file = VmaFacts {
            file_unlinked: false,
            ..shared_anon
        };
        assert_eq!(vma_dump_size(&shared_file, DEFAULT_FILTER, || true), 0);
        let text = VmaFacts {
            file: true,
            file_exec: true,
            write: false,
            exec: true,
            ..untouched
        };
        assert_eq!(vma_dump_size(&text, DEFAULT_FILTER, || false), 4096);
        let lib = VmaFacts {
            file_exec: false,
            ..text
        };
        assert_eq!(vma_dump_size(&lib, DEFAULT_FILTER, || true), 4096);
        assert_eq!(vma_dump_size(&lib, DEFAULT_FILTER, || false), 0);
        let later = VmaFacts {
            offset: 4096,
            ..text
        };
        assert_eq!(vma_dump_size(&later, DEFAULT_FILTER, || true), 0);
        let special = VmaFacts {
            special: true,
            dontdump: true,
            ..untouched
        };
        assert_eq!(vma_dump_size(&special, 0, || false), 0x4000);
        let dont = VmaFacts {
            dontdump: true,
            ..anon
        };
        assert_eq!(vma_dump_size(&dont, DEFAULT_FILTER, || false), 0);
        assert_eq!(load_flags(&anon), PF_R | PF_W);
    }

    #[test]
    fn layout_and_headers() {
        let l = layout(3, 1000, 4096).unwrap();
        assert_eq!(l.phnum, 4);
        assert_eq!(l.notes_off, 64 + 4 * 56);
        assert_eq!(l.data_off, 4096);
        assert!(layout(0xfffe, 0, 4096).is_none());
        let e = core_ehdr(4);
        assert_eq!(&e[..7], &[0x7f, b'E', b'L', b'F', 2, 1, 1]);
        assert_eq!(get_u16(&e, 16), ET_CORE);
        assert_eq!(get_u16(&e, 18), EM_AARCH64);
        assert_eq!(get_u64(&e, 32), 64);
        assert_eq!(get_u16(&e, 54), 56);
        assert_eq!(get_u16(&e, 56), 4);
        let n = note_phdr(288, 1000);
        assert_eq!(get_u32(&n, 0), PT_NOTE);
        assert_eq!(get_u64(&n, 8), 288);
        assert_eq!(get_u64(&n, 32), 1000);
        let v = VmaFacts {
            start: 0x40_0000,
            end: 0x40_2000,
            read: true,
            exec: true,
            ..Default::default()
        };
        let p = load_phdr(&v, 8192, 4096, 4096);
        assert_eq!(get_u32(&p, 0), PT_LOAD);
        assert_eq!(get_u32(&p, 4), PF_R | PF_X);
        assert_eq!(get_u64(&p, 16), 0x40_0000);
        assert_eq!(get_u64(&p, 32), 4096);
        assert_eq!(get_u64(&p, 40), 0x2000);
    }

    #[test]
    fn file_note() {
        let maps = [
            FileMap {
                start: 0x1000,
                end: 0x3000,
                pgoff: 2,
                name: b"/a",
            },
            FileMap {
                start: 0x5000,
                end: 0x6000,
                pgoff: 0,
                name: b"/bb",
            },
        ];
        let n = file_note_len(&maps).unwrap();
        assert_eq!(n, 16 + 48 + 3 + 4);
        let mut b = [0xffu8; 71];
        put_file_note(&mut b, &maps, 4096).unwrap();
        assert_eq!(get_u64(&b, 0), 2);
        assert_eq!(get_u64(&b, 8), 4096);
        assert_eq!(get_u64(&b, 16), 0x1000);
        assert_eq!(get_u64(&b, 32), 2);
        assert_eq!(get_u64(&b, 40), 0x5000);
        assert_eq!(&b[64..], b"/a\0/bb\0");
        assert!(put_file_note(&mut b[..70], &maps, 4096).is_none());
        assert_eq!(file_note_len(&[]), Some(16));
    }
}
