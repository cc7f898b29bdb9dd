//! ELF64 little-endian AArch64 executables: header and program-header validation, and a pure
//! load plan (what to map where, what to copy from the file, what to zero, brk, auxv values).
//!
//! Every offset and size comes from an untrusted file: all arithmetic is checked and every
//! failure is an `ElfError`, never a panic. `ElfError::errno` gives the execve return value.
//!
//! Svelt is stricter than Linux in three ways, all of which a well-formed linker output meets:
//! PT_LOAD entries must be sorted by p_vaddr and must not overlap, and each must have
//! p_vaddr ≡ p_offset modulo the page size (Linux only finds out when mmap fails).

use crate::errno::Errno;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const ELFMAG: [u8; 4] = [0x7f, b'E', b'L', b'F'];
pub const ELFCLASS64: u8 = 2;
pub const ELFDATA2LSB: u8 = 1;
pub const EV_CURRENT: u8 = 1;
/// `e_ident` of an ELF64 little-endian file of the current version, OS ABI none: ELFMAG,
/// ELFCLASS64, ELFDATA2LSB, EV_CURRENT, then zeros.
pub const ELF64_LE_IDENT: [u8; 16] = *b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0";
pub const ET_EXEC: u16 = 2;
pub const ET_DYN: u16 = 3;
pub const ET_CORE: u16 = 4;
pub const EM_AARCH64: u16 = 183;

pub const PT_NULL: u32 = 0;
pub const PT_LOAD: u32 = 1;
pub const PT_DYNAMIC: u32 = 2;
pub const PT_INTERP: u32 = 3;
pub const PT_NOTE: u32 = 4;
pub const PT_SHLIB: u32 = 5;
pub const PT_PHDR: u32 = 6;
pub const PT_TLS: u32 = 7;
pub const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
pub const PT_GNU_STACK: u32 = 0x6474_e551;
pub const PT_GNU_RELRO: u32 = 0x6474_e552;
pub const PT_GNU_PROPERTY: u32 = 0x6474_e553;

// ---- note types (include/uapi/linux/elf.h): core-file notes and ptrace regsets ----

pub const NT_PRSTATUS: u32 = 1;
pub const NT_PRFPREG: u32 = 2;
pub const NT_PRPSINFO: u32 = 3;
pub const NT_AUXV: u32 = 6;
pub const NT_SIGINFO: u32 = 0x5349_4749;
pub const NT_FILE: u32 = 0x4649_4c45;
pub const NT_ARM_TLS: u32 = 0x401;
pub const NT_ARM_HW_BREAK: u32 = 0x402;
pub const NT_ARM_HW_WATCH: u32 = 0x403;
pub const NT_ARM_SYSTEM_CALL: u32 = 0x404;
pub const NT_ARM_SVE: u32 = 0x405;
pub const NT_ARM_PAC_MASK: u32 = 0x406;
pub const NT_ARM_PACA_KEYS: u32 = 0x407;
pub const NT_ARM_PACG_KEYS: u32 = 0x408;
pub const NT_ARM_TAGGED_ADDR_CTRL: u32 = 0x409;
pub const NT_ARM_PAC_ENABLED_KEYS: u32 = 0x40a;
pub const NT_ARM_SSVE: u32 = 0x40b;
pub const NT_ARM_ZA: u32 = 0x40c;
pub const NT_ARM_ZT: u32 = 0x40d;
pub const NT_ARM_FPMR: u32 = 0x40e;
pub const NT_ARM_POE: u32 = 0x40f;
pub const NT_ARM_GCS: u32 = 0x410;

pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
pub const PF_R: u32 = 4;

/// Size of the ELF64 file header and of one program header.
pub const EHDR_SIZE: usize = 64;
pub const PHDR_SIZE: usize = 56;
/// Linux refuses program-header tables larger than 64 KiB (so at most 1170 entries).
pub const MAX_PHNUM: usize = 65536 / PHDR_SIZE;
/// Longest PT_INTERP string Linux accepts, NUL included (PATH_MAX).
pub const MAX_INTERP: u64 = 4096;

/// Why an image was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    /// Shorter than an ELF header.
    Truncated,
    BadMagic,
    NotElf64,
    NotLittleEndian,
    BadVersion,
    NotAarch64,
    /// e_type is neither ET_EXEC nor ET_DYN.
    NotExecutable,
    BadPhentsize,
    /// e_phnum is 0 or the table is over 64 KiB.
    BadPhnum,
    /// The program-header table is not inside the file.
    PhdrsOutsideFile,
    /// A segment's file bytes are not inside the file.
    SegmentOutsideFile,
    /// p_filesz > p_memsz.
    FileszOverMemsz,
    /// p_vaddr and p_offset differ modulo the page size.
    Incongruent,
    /// PT_LOAD entries out of p_vaddr order or overlapping.
    LoadOverlap,
    NoLoadSegments,
    /// An address computation overflowed or passed the top of the user address space.
    AddressOverflow,
    /// PT_INTERP too short, too long, outside the file, or not NUL-terminated.
    BadInterp,
    /// The load bias is not page-aligned.
    UnalignedBias,
    /// (`parse_head` only) the program headers or PT_INTERP lie in the file but past the bytes
    /// given: parse the whole file instead.
    NeedMore,
}

impl ElfError {
    /// The execve error Linux gives for the same defect: ENOEXEC for a file that is not a
    /// loadable image, EINVAL for segments that cannot be mapped (Linux's set_brk/mmap checks).
    pub fn errno(self) -> Errno {
        match self {
            ElfError::FileszOverMemsz
            | ElfError::Incongruent
            | ElfError::AddressOverflow
            | ElfError::UnalignedBias => Errno::EINVAL,
            _ => Errno::ENOEXEC,
        }
    }
}

impl From<ElfError> for Errno {
    fn from(e: ElfError) -> Errno {
        e.errno()
    }
}

/// `Elf64_Ehdr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Ehdr {
    pub e_ident: [u8; 16],
    pub e_type: u16,
    pub e_machine: u16,
    pub e_version: u32,
    pub e_entry: u64,
    pub e_phoff: u64,
    pub e_shoff: u64,
    pub e_flags: u32,
    pub e_ehsize: u16,
    pub e_phentsize: u16,
    pub e_phnum: u16,
    pub e_shentsize: u16,
    pub e_shnum: u16,
    pub e_shstrndx: u16,
}

/// `Elf64_Phdr`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Phdr {
    pub p_type: u32,
    pub p_flags: u32,
    pub p_offset: u64,
    pub p_vaddr: u64,
    pub p_paddr: u64,
    pub p_filesz: u64,
    pub p_memsz: u64,
    pub p_align: u64,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Ehdr>() == EHDR_SIZE);
    assert!(offset_of!(Ehdr, e_type) == 16);
    assert!(offset_of!(Ehdr, e_entry) == 24);
    assert!(offset_of!(Ehdr, e_flags) == 48);
    assert!(offset_of!(Ehdr, e_phnum) == 56);
    assert!(size_of::<Phdr>() == PHDR_SIZE);
    assert!(offset_of!(Phdr, p_offset) == 8);
    assert!(offset_of!(Phdr, p_align) == 48);
};

impl Phdr {
    fn parse(b: &[u8], off: usize) -> Option<Phdr> {
        Phdr::read_from_prefix(b.get(off..)?).ok().map(|(p, _)| p)
    }

    /// mmap PROT_* bits for p_flags (PF_R→PROT_READ, PF_W→PROT_WRITE, PF_X→PROT_EXEC).
    pub fn prot(&self) -> u32 {
        let mut p = 0;
        if self.p_flags & PF_R != 0 {
            p |= crate::mm::PROT_READ;
        }
        if self.p_flags & PF_W != 0 {
            p |= crate::mm::PROT_WRITE;
        }
        if self.p_flags & PF_X != 0 {
            p |= crate::mm::PROT_EXEC;
        }
        p
    }
}

/// A validated image. Holds the file bytes; everything else is recomputed on demand.
#[derive(Clone, Copy)]
pub struct ElfFile<'a> {
    data: &'a [u8],
    pub ehdr: Ehdr,
    page: u64,
    interp: Option<&'a [u8]>,
    phdr_vaddr: Option<u64>,
    lo: u64,
    hi: u64,
    max_align: u64,
    exec_stack: bool,
}

impl core::fmt::Debug for ElfFile<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ElfFile")
            .field("len", &self.data.len())
            .field("ehdr", &self.ehdr)
            .field("interp", &self.interp)
            .field("lo", &self.lo)
            .field("hi", &self.hi)
            .finish_non_exhaustive()
    }
}

impl<'a> ElfFile<'a> {
    /// Validate `data` as an AArch64 ELF64 LE executable for a kernel with `page`-byte pages
    /// (a power of two).
    pub fn parse(data: &'a [u8], page: u64) -> Result<ElfFile<'a>, ElfError> {
        ElfFile::parse_head(data, data.len() as u64, page)
    }

    /// As `parse`, from the first bytes (`head`) of a file of `file_size` bytes: the segments
    /// are checked against the file's size, and the program headers and PT_INTERP must lie in
    /// `head` ([`ElfError::NeedMore`] when they are in the file past it). Such an image can be
    /// mapped from the file; [`LoadPlan::file_bytes`] sees only `head`.
    pub fn parse_head(head: &'a [u8], file_size: u64, page: u64) -> Result<ElfFile<'a>, ElfError> {
        let data = head;
        let Ok((ehdr, _)) = Ehdr::read_from_prefix(data) else {
            return Err(ElfError::Truncated);
        };
        let ident = &ehdr.e_ident;
        if ident[..4] != ELFMAG {
            return Err(ElfError::BadMagic);
        }
        if ident[4] != ELFCLASS64 {
            return Err(ElfError::NotElf64);
        }
        if ident[5] != ELFDATA2LSB {
            return Err(ElfError::NotLittleEndian);
        }
        if ident[6] != EV_CURRENT {
            return Err(ElfError::BadVersion);
        }
        if ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN {
            return Err(ElfError::NotExecutable);
        }
        if ehdr.e_machine != EM_AARCH64 {
            return Err(ElfError::NotAarch64);
        }
        if ehdr.e_version != EV_CURRENT as u32 {
            return Err(ElfError::BadVersion);
        }
        if ehdr.e_phentsize as usize != PHDR_SIZE {
            return Err(ElfError::BadPhentsize);
        }
        let phnum = ehdr.e_phnum as usize;
        if phnum == 0 || phnum > MAX_PHNUM {
            return Err(ElfError::BadPhnum);
        }
        let table_end = ehdr
            .e_phoff
            .checked_add((phnum * PHDR_SIZE) as u64)
            .ok_or(ElfError::PhdrsOutsideFile)?;
        if table_end > file_size {
            return Err(ElfError::PhdrsOutsideFile);
        }
        if table_end > data.len() as u64 {
            return Err(ElfError::NeedMore);
        }

        let mut f = ElfFile {
            data,
            ehdr,
            page,
            interp: None,
            phdr_vaddr: None,
            lo: u64::MAX,
            hi: 0,
            max_align: page,
            exec_stack: false,
        };
        let mut prev_end: Option<u64> = None;
        let mut phoff_vaddr = None;
        let mut any_load = false;
        for i in 0..phnum {
            let ph = f.phdr(i).ok_or(ElfError::PhdrsOutsideFile)?;
            match ph.p_type {
                PT_LOAD => {
                    let file_end = ph
                        .p_offset
                        .checked_add(ph.p_filesz)
                        .ok_or(ElfError::SegmentOutsideFile)?;
                    if file_end > file_size {
                        return Err(ElfError::SegmentOutsideFile);
                    }
                    if ph.p_filesz > ph.p_memsz {
                        return Err(ElfError::FileszOverMemsz);
                    }
                    if ph.p_vaddr.wrapping_sub(ph.p_offset) & (page - 1) != 0 {
                        return Err(ElfError::Incongruent);
                    }
                    let end = ph
                        .p_vaddr
                        .checked_add(ph.p_memsz)
                        .and_then(|e| e.checked_next_multiple_of(page))
                        .ok_or(ElfError::AddressOverflow)?;
                    if let Some(pe) = prev_end {
                        if ph.p_vaddr < pe {
                            return Err(ElfError::LoadOverlap);
                        }
                    }
                    prev_end = Some(ph.p_vaddr + ph.p_memsz);
                    any_load = true;
                    f.lo = f.lo.min(ph.p_vaddr & !(page - 1));
                    f.hi = f.hi.max(end);
                    if ph.p_align.is_power_of_two() {
                        f.max_align = f.max_align.max(ph.p_align);
                    }
                    if phoff_vaddr.is_none()
                        && ph.p_offset <= ehdr.e_phoff
                        && ehdr.e_phoff < file_end
                    {
                        phoff_vaddr = Some(ehdr.e_phoff - ph.p_offset + ph.p_vaddr);
                    }
                }
                PT_INTERP if f.interp.is_none() => {
                    if ph.p_filesz < 2 || ph.p_filesz > MAX_INTERP {
                        return Err(ElfError::BadInterp);
                    }
                    let in_file = ph
                        .p_offset
                        .checked_add(ph.p_filesz)
                        .is_some_and(|e| e <= file_size);
                    let bytes = usize::try_from(ph.p_offset)
                        .ok()
                        .and_then(|s| data.get(s..s.checked_add(ph.p_filesz as usize)?));
                    let bytes = match bytes {
                        Some(b) => b,
                        None if in_file => return Err(ElfError::NeedMore),
                        None => return Err(ElfError::BadInterp),
                    };
                    // Linux requires the last byte to be NUL and then uses it as a C string.
                    match bytes.split_last() {
                        Some((0, name)) => {
                            let n = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                            f.interp = Some(&name[..n]);
                        }
                        _ => return Err(ElfError::BadInterp),
                    }
                }
                PT_PHDR if f.phdr_vaddr.is_none() => f.phdr_vaddr = Some(ph.p_vaddr),
                PT_GNU_STACK => f.exec_stack = ph.p_flags & PF_X != 0,
                _ => {}
            }
        }
        if !any_load {
            return Err(ElfError::NoLoadSegments);
        }
        if f.phdr_vaddr.is_none() {
            f.phdr_vaddr = phoff_vaddr;
        }
        Ok(f)
    }

    /// The `i`-th program header.
    pub fn phdr(&self, i: usize) -> Option<Phdr> {
        if i >= self.ehdr.e_phnum as usize {
            return None;
        }
        Phdr::parse(self.data, self.ehdr.e_phoff as usize + i * PHDR_SIZE)
    }

    /// All program headers in table order.
    pub fn phdrs(&self) -> impl Iterator<Item = Phdr> + '_ {
        (0..self.ehdr.e_phnum as usize).filter_map(|i| self.phdr(i))
    }

    /// The PT_INTERP path (without its NUL): a dynamically linked program. Linux would load
    /// this interpreter; a kernel that does not can refuse with ENOEXEC.
    pub fn interp(&self) -> Option<&'a [u8]> {
        self.interp
    }

    /// ET_DYN (PIE or static-PIE): the caller chooses the load bias.
    pub fn is_dyn(&self) -> bool {
        self.ehdr.e_type == ET_DYN
    }

    /// PT_GNU_STACK asks for an executable stack (absent: not executable on arm64).
    pub fn exec_stack(&self) -> bool {
        self.exec_stack
    }

    /// Bytes from the lowest LOAD page to the end of the highest (Linux's total_mapping_size):
    /// how much address space an ET_DYN bias must leave free.
    pub fn span(&self) -> u64 {
        self.hi - self.lo
    }

    /// The lowest page address of any LOAD segment, before bias.
    pub fn first_page(&self) -> u64 {
        self.lo
    }

    /// The largest power-of-two p_align of the LOAD segments (at least the page size): an
    /// ET_DYN bias should be a multiple of it.
    pub fn max_align(&self) -> u64 {
        self.max_align
    }

    /// The load plan for `bias` (0 for ET_EXEC), with every address kept below `task_size`
    /// (the top of the user address space).
    pub fn plan(&self, bias: u64, task_size: u64) -> Result<LoadPlan<'a>, ElfError> {
        if bias & (self.page - 1) != 0 {
            return Err(ElfError::UnalignedBias);
        }
        let hi = bias
            .checked_add(self.hi)
            .filter(|&h| h <= task_size)
            .ok_or(ElfError::AddressOverflow)?;
        let entry = bias
            .checked_add(self.ehdr.e_entry)
            .ok_or(ElfError::AddressOverflow)?;
        let phdr = match self.phdr_vaddr {
            Some(v) => v.checked_add(bias).ok_or(ElfError::AddressOverflow)?,
            None => bias,
        };
        Ok(LoadPlan {
            file: *self,
            bias,
            entry,
            phdr,
            phent: PHDR_SIZE as u64,
            phnum: self.ehdr.e_phnum as u64,
            brk: hi,
            start: bias + self.lo,
        })
    }
}

/// Where an image goes, and the values execve reports in the auxv.
#[derive(Clone, Copy, Debug)]
pub struct LoadPlan<'a> {
    file: ElfFile<'a>,
    pub bias: u64,
    /// AT_ENTRY and the initial PC.
    pub entry: u64,
    /// AT_PHDR: PT_PHDR's address if present, else the address of e_phoff inside the LOAD
    /// segment that contains it, else the bias (what Linux reports when neither exists).
    pub phdr: u64,
    /// AT_PHENT (56) and AT_PHNUM.
    pub phent: u64,
    pub phnum: u64,
    /// The initial program break: the page-aligned end of the highest segment (memsz included).
    pub brk: u64,
    /// The lowest mapped address.
    pub start: u64,
}

/// One PT_LOAD segment, ready to map.
///
/// Map zero-filled pages `[map_start, map_end)` with `prot`; copy `file_len` bytes from file
/// offset `file_offset` to `copy_dst`; every other byte of those pages is zero. When
/// `shares_first_page` is set the first page is also the previous segment's last page: it is
/// already mapped, so keep its contents and widen its protection to include `prot`.
///
/// `copy_dst` is the page start when the page is not shared, so the bytes of the file page in
/// front of the segment (the ELF and program headers, for a first segment at offset 0) are
/// visible as they are on Linux. Unlike Linux, the rest of the last page after the segment's
/// file bytes is zero rather than whatever follows in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment {
    pub map_start: u64,
    pub map_end: u64,
    pub prot: u32,
    pub copy_dst: u64,
    pub file_offset: u64,
    pub file_len: u64,
    /// The bss: `[zero_start, zero_end)` must read as zero (p_vaddr+p_filesz .. p_vaddr+p_memsz).
    pub zero_start: u64,
    pub zero_end: u64,
    pub shares_first_page: bool,
}

impl<'a> LoadPlan<'a> {
    /// The PT_LOAD segments in order, skipping empty ones (p_memsz 0).
    pub fn segments(&self) -> impl Iterator<Item = LoadSegment> + '_ {
        let page = self.file.page;
        let bias = self.bias;
        let mut prev_page_end: Option<u64> = None;
        self.file
            .phdrs()
            .filter(|p| p.p_type == PT_LOAD && p.p_memsz != 0)
            .map(move |p| {
                // parse() and plan() checked every sum below against overflow and task_size.
                let start = bias + p.p_vaddr;
                let map_start = start & !(page - 1);
                let map_end = (start + p.p_memsz).next_multiple_of(page);
                let shares = prev_page_end.is_some_and(|e| e > map_start);
                prev_page_end = Some(map_end);
                let lead = if shares { 0 } else { start - map_start };
                LoadSegment {
                    map_start,
                    map_end,
                    prot: p.prot(),
                    copy_dst: start - lead,
                    file_offset: p.p_offset - lead,
                    file_len: p.p_filesz + lead,
                    zero_start: start + p.p_filesz,
                    zero_end: start + p.p_memsz,
                    shares_first_page: shares,
                }
            })
    }

    /// The file bytes a segment copies (always inside the file: parse() checked it).
    pub fn file_bytes(&self, s: &LoadSegment) -> &'a [u8] {
        let start = s.file_offset as usize;
        self.file
            .data
            .get(start..start + s.file_len as usize)
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::{put_u16, put_u32, put_u64};
    use std::vec;
    use std::vec::Vec;

    const PG: u64 = 4096;

    fn ehdr(buf: &mut [u8], ty: u16, entry: u64, phoff: u64, phnum: u16) {
        buf[..4].copy_from_slice(&ELFMAG);
        buf[4] = ELFCLASS64;
        buf[5] = ELFDATA2LSB;
        buf[6] = EV_CURRENT;
        put_u16(buf, 16, ty);
        put_u16(buf, 18, EM_AARCH64);
        put_u32(buf, 20, 1);
        put_u64(buf, 24, entry);
        put_u64(buf, 32, phoff);
        put_u16(buf, 52, 64);
        put_u16(buf, 54, 56);
        put_u16(buf, 56, phnum);
    }

    fn phdr(buf: &mut [u8], i: usize, p: Phdr) {
        let o = 64 + i * 56;
        put_u32(buf, o, p.p_type);
        put_u32(buf, o + 4, p.p_flags);
        put_u64(buf, o + 8, p.p_offset);
        put_u64(buf, o + 16, p.p_vaddr);
        put_u64(buf, o + 24, p.p_paddr);
        put_u64(buf, o + 32, p.p_filesz);
        put_u64(buf, o + 40, p.p_memsz);
        put_u64(buf, o + 48, p.p_align);
    }

    fn load(flags: u32, off: u64, vaddr: u64, filesz: u64, memsz: u64) -> Phdr {
        Phdr {
            p_type: PT_LOAD,
            p_flags: flags,
            p_offset: off,
            p_vaddr: vaddr,
            p_paddr: vaddr,
            p_filesz: filesz,
            p_memsz: memsz,
            p_align: 0x10000,
        }
    }

    /// A static executable like rust-lld makes: text at 0x400000 (offset 0, holding the headers),
    /// data+bss at 0x411000 (offset 0x1000), GNU_STACK.
    fn static_exe() -> Vec<u8> {
        let mut b = vec![0u8; 0x1100];
        ehdr(&mut b, ET_EXEC, 0x400100, 64, 3);
        phdr(&mut b, 0, load(PF_R | PF_X, 0, 0x400000, 0x200, 0x200));
        phdr(
            &mut b,
            1,
            load(PF_R | PF_W, 0x1000, 0x411000, 0x100, 0x2345),
        );
        phdr(
            &mut b,
            2,
            Phdr {
                p_type: PT_GNU_STACK,
                p_flags: PF_R | PF_W,
                ..Phdr::default()
            },
        );
        for (i, x) in b[0x1000..0x1100].iter_mut().enumerate() {
            *x = i as u8;
        }
        b
    }

    #[test]
    fn static_executable_plan() {
        let b = static_exe();
        let f = ElfFile::parse(&b, PG).unwrap();
        assert!(!f.is_dyn() && f.interp().is_none() && !f.exec_stack());
        assert_eq!(f.span(), 0x414000 - 0x400000);
        let p = f.plan(0, 1 << 48).unwrap();
        assert_eq!(p.entry, 0x400100);
        assert_eq!(p.phdr, 0x400040);
        assert_eq!((p.phent, p.phnum), (56, 3));
        assert_eq!(p.brk, 0x414000);
        let s: Vec<_> = p.segments().collect();
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0],
            LoadSegment {
                map_start: 0x400000,
                map_end: 0x401000,
                prot: 5,
                copy_dst: 0x400000,
                file_offset: 0,
                file_len: 0x200,
                zero_start: 0x400200,
                zero_end: 0x400200,
                shares_first_page: false,
            }
        );
        assert_eq!(
            s[1],
            LoadSegment {
                map_start: 0x411000,
                map_end: 0x414000,
                prot: 3,
                copy_dst: 0x411000,
                file_offset: 0x1000,
                file_len: 0x100,
                zero_start: 0x411100,
                zero_end: 0x413345,
                shares_first_page: false,
            }
        );
        assert_eq!(p.file_bytes(&s[1])[5], 5);
    }

    #[test]
    fn parsing_from_the_head_of_a_file() {
        let b = static_exe();
        let size = b.len() as u64;
        // The headers are in the first 0x100 bytes: the same image, segments checked against
        // the whole file's size.
        let f = ElfFile::parse_head(&b[..0x100], size, PG).unwrap();
        let whole = ElfFile::parse(&b, PG).unwrap();
        let (p, q) = (f.plan(0, 1 << 48).unwrap(), whole.plan(0, 1 << 48).unwrap());
        assert_eq!(
            p.segments().collect::<Vec<_>>(),
            q.segments().collect::<Vec<_>>()
        );
        assert_eq!((p.entry, p.phdr, p.brk), (q.entry, q.phdr, q.brk));
        // Program headers past the head: ask for more; past the file: not an image.
        assert_eq!(
            ElfFile::parse_head(&b[..100], size, PG).unwrap_err(),
            ElfError::NeedMore
        );
        assert_eq!(
            ElfFile::parse_head(&b[..100], 100, PG).unwrap_err(),
            ElfError::PhdrsOutsideFile
        );
        // A segment past the end of the file.
        assert_eq!(
            ElfFile::parse_head(&b[..0x100], 0x1000, PG).unwrap_err(),
            ElfError::SegmentOutsideFile
        );
    }

    #[test]
    fn pie_with_bias_interp_and_shared_page() {
        // ET_DYN; data starts in the same page the text ends in; PT_PHDR and PT_INTERP.
        let mut b = vec![0u8; 0x3000];
        ehdr(&mut b, ET_DYN, 0x123, 64, 4);
        phdr(
            &mut b,
            0,
            Phdr {
                p_type: PT_PHDR,
                p_flags: PF_R,
                p_offset: 64,
                p_vaddr: 64,
                p_filesz: 4 * 56,
                p_memsz: 4 * 56,
                ..Phdr::default()
            },
        );
        phdr(
            &mut b,
            1,
            Phdr {
                p_type: PT_INTERP,
                p_flags: PF_R,
                p_offset: 0x200,
                p_vaddr: 0x200,
                p_filesz: 28,
                p_memsz: 28,
                ..Phdr::default()
            },
        );
        b[0x200..0x200 + 28].copy_from_slice(b"/lib/ld-linux-aarch64.so.1\0\0");
        b[0x200 + 27] = 0;
        phdr(&mut b, 2, load(PF_R | PF_X, 0, 0, 0x1800, 0x1800));
        phdr(&mut b, 3, load(PF_R | PF_W, 0x1800, 0x1800, 0x100, 0x900));
        let f = ElfFile::parse(&b, PG).unwrap();
        assert!(f.is_dyn());
        assert_eq!(f.interp(), Some(&b"/lib/ld-linux-aarch64.so.1"[..]));
        assert_eq!(f.max_align(), 0x10000);
        let p = f.plan(0x5555_0000_0000, 1 << 48).unwrap();
        assert_eq!(p.entry, 0x5555_0000_0123);
        assert_eq!(p.phdr, 0x5555_0000_0040);
        assert_eq!(p.brk, 0x5555_0000_3000);
        let s: Vec<_> = p.segments().collect();
        assert!(!s[0].shares_first_page);
        assert!(s[1].shares_first_page);
        assert_eq!(s[1].map_start, 0x5555_0000_1000);
        assert_eq!(s[1].copy_dst, 0x5555_0000_1800);
        assert_eq!((s[1].file_offset, s[1].file_len), (0x1800, 0x100));
        assert_eq!(f.plan(0x123, 1 << 48).err(), Some(ElfError::UnalignedBias));
        assert_eq!(
            f.plan((1 << 48) - 0x2000, 1 << 48).err(),
            Some(ElfError::AddressOverflow)
        );
        assert!(f.plan((1 << 48) - 0x3000, 1 << 48).is_ok());
    }

    #[test]
    fn no_pt_phdr_and_headers_not_loaded() {
        let mut b = vec![0u8; 0x2100];
        ehdr(&mut b, ET_EXEC, 0x10000, 64, 1);
        phdr(&mut b, 0, load(PF_R | PF_X, 0x2000, 0x12000, 0x100, 0x100));
        let p = ElfFile::parse(&b, PG).unwrap().plan(0, 1 << 48).unwrap();
        assert_eq!(p.phdr, 0);
        let s = p.segments().next().unwrap();
        assert_eq!(
            (s.copy_dst, s.file_offset, s.file_len),
            (0x12000, 0x2000, 0x100)
        );
    }

    #[test]
    fn each_rejection() {
        let good = static_exe();
        let check = |f: &dyn Fn(&mut Vec<u8>), want: ElfError| {
            let mut b = good.clone();
            f(&mut b);
            assert_eq!(ElfFile::parse(&b, PG).unwrap_err(), want);
        };
        check(&|b| b.truncate(63), ElfError::Truncated);
        check(&|b| b[1] = b'X', ElfError::BadMagic);
        check(&|b| b[4] = 1, ElfError::NotElf64);
        check(&|b| b[5] = 2, ElfError::NotLittleEndian);
        check(&|b| b[6] = 0, ElfError::BadVersion);
        check(&|b| put_u32(b, 20, 2), ElfError::BadVersion);
        check(&|b| put_u16(b, 18, 62), ElfError::NotAarch64);
        check(&|b| put_u16(b, 16, 1), ElfError::NotExecutable);
        check(&|b| put_u16(b, 54, 32), ElfError::BadPhentsize);
        check(&|b| put_u16(b, 56, 0), ElfError::BadPhnum);
        check(&|b| put_u16(b, 56, 1171), ElfError::BadPhnum);
        check(&|b| put_u64(b, 32, 0x10f0), ElfError::PhdrsOutsideFile);
        check(
            &|b| put_u64(b, 32, u64::MAX - 8),
            ElfError::PhdrsOutsideFile,
        );
        // Segment 1 (data) fields: offset @64+56+8, vaddr +16, filesz +32, memsz +40.
        let s1 = 64 + 56;
        check(
            &|b| put_u64(b, s1 + 32, 0x101),
            ElfError::SegmentOutsideFile,
        );
        check(
            &|b| put_u64(b, s1 + 8, u64::MAX),
            ElfError::SegmentOutsideFile,
        );
        check(&|b| put_u64(b, s1 + 40, 0x80), ElfError::FileszOverMemsz);
        check(&|b| put_u64(b, s1 + 16, 0x411800), ElfError::Incongruent);
        check(&|b| put_u64(b, s1 + 16, 0x3ff000), ElfError::LoadOverlap);
        check(
            &|b| {
                put_u64(b, s1 + 16, 0x400000);
                put_u64(b, s1 + 8, 0);
                put_u64(b, s1 + 32, 0);
            },
            ElfError::LoadOverlap,
        );
        check(
            &|b| {
                put_u64(b, s1 + 16, 0xffff_ffff_ffff_f000);
                put_u64(b, s1 + 8, 0);
                put_u64(b, s1 + 32, 0);
            },
            ElfError::AddressOverflow,
        );
        check(
            &|b| {
                put_u32(b, 64, PT_NOTE);
                put_u32(b, 64 + 56, PT_NOTE);
            },
            ElfError::NoLoadSegments,
        );
        // PT_INTERP without its NUL, too short, and outside the file.
        let interp = |b: &mut Vec<u8>, off: u64, len: u64| {
            put_u32(b, 64 + 112, PT_INTERP);
            put_u64(b, 64 + 112 + 8, off);
            put_u64(b, 64 + 112 + 32, len);
        };
        check(
            &|b| {
                interp(b, 0x1000, 4);
                b[0x1003] = b'x';
            },
            ElfError::BadInterp,
        );
        check(&|b| interp(b, 0x1000, 1), ElfError::BadInterp);
        check(&|b| interp(b, 0x10f0, 0x20), ElfError::BadInterp);
        check(&|b| interp(b, u64::MAX, 4), ElfError::BadInterp);
        check(&|b| interp(b, 0, 5000), ElfError::BadInterp);
        assert_eq!(ElfError::BadMagic.errno(), Errno::ENOEXEC);
        assert_eq!(ElfError::FileszOverMemsz.errno(), Errno::EINVAL);
    }

    /// A tiny deterministic generator so the fuzz-like tests need no dependency.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    fn exercise(b: &[u8]) {
        if let Ok(f) = ElfFile::parse(b, PG) {
            for bias in [0, 0x1000, 0xffff_ffff_ffff_0000] {
                if let Ok(p) = f.plan(bias, 1 << 48) {
                    for s in p.segments() {
                        assert!(s.map_start <= s.copy_dst);
                        assert!(s.copy_dst + s.file_len <= s.map_end);
                        assert!(s.zero_end <= s.map_end && s.zero_end <= p.brk);
                        assert_eq!(p.file_bytes(&s).len() as u64, s.file_len);
                    }
                }
            }
            let _ = f.phdrs().count();
        }
    }

    #[test]
    fn truncations_never_panic() {
        let b = static_exe();
        for n in 0..b.len() {
            exercise(&b[..n]);
        }
    }

    #[test]
    fn garbage_and_mutations_never_panic() {
        let mut rng = Lcg(0x5eed);
        for _ in 0..2000 {
            let n = (rng.next() % 600) as usize;
            let mut b: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            if n >= 64 && rng.next().is_multiple_of(2) {
                ehdr(&mut b, ET_EXEC, rng.next(), 64, (rng.next() % 8) as u16);
            }
            exercise(&b);
        }
        let good = static_exe();
        for _ in 0..5000 {
            let mut b = good.clone();
            for _ in 0..1 + rng.next() % 4 {
                let i = (rng.next() % 240) as usize;
                b[i] = rng.next() as u8;
            }
            exercise(&b);
        }
    }
}
