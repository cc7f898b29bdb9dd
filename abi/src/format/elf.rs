//! ELF64 little-endian AArch64 executables, by Linux's rules (fs/binfmt_elf.c): what execve
//! checks before the old program is gone ([`ElfFile::parse_head`], [`check_gnu_properties`]:
//! an errno), and the steps that map the image ([`ElfFile::map`]), whose failures come past
//! the point of no return (the process is killed by SIGSEGV).
//!
//! Every offset and size comes from an untrusted file: all arithmetic is checked and every
//! failure is an error value, never a panic. PT_LOAD segments may overlap (later ones are
//! mapped over earlier ones) and may reach past the end of the file (those pages fault).

use crate::uapi::errno::Errno;
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
    /// PT_INTERP too short, too long, or not NUL-terminated.
    BadInterp,
    /// PT_INTERP reaches past the end of the file (a short read: EIO).
    InterpOutsideFile,
    /// PT_INTERP's offset is a negative file position (EINVAL).
    InterpBadOffset,
    /// The load bias is not page-aligned.
    UnalignedBias,
    /// (`parse_head` only) the program headers or PT_INTERP lie in the file but past the bytes
    /// given: parse the whole file instead.
    NeedMore,
}

impl ElfError {
    /// The execve error Linux gives for the same defect: ENOEXEC for a file that is not a
    /// loadable image, EIO for a PT_INTERP past the end of the file.
    pub fn errno(self) -> Errno {
        match self {
            ElfError::InterpOutsideFile => Errno::EIO,
            ElfError::FileszOverMemsz
            | ElfError::Incongruent
            | ElfError::AddressOverflow
            | ElfError::InterpBadOffset
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
            p |= crate::uapi::mm::PROT_READ;
        }
        if self.p_flags & PF_W != 0 {
            p |= crate::uapi::mm::PROT_WRITE;
        }
        if self.p_flags & PF_X != 0 {
            p |= crate::uapi::mm::PROT_EXEC;
        }
        p
    }
}

/// A validated image: what execve checks before the old program is gone (Linux's
/// load_elf_binary up to begin_new_exec). The PT_LOAD entries are not checked here: defects in
/// them show only while mapping ([`ElfFile::map`]), past the point of no return.
#[derive(Clone, Copy)]
pub struct ElfFile<'a> {
    data: &'a [u8],
    pub ehdr: Ehdr,
    page: u64,
    interp: Option<&'a [u8]>,
    phdr_vaddr: Option<u64>,
    exec_stack: bool,
    property: Option<Phdr>,
}

impl core::fmt::Debug for ElfFile<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ElfFile")
            .field("len", &self.data.len())
            .field("ehdr", &self.ehdr)
            .field("interp", &self.interp)
            .finish_non_exhaustive()
    }
}

/// Linux refuses a PT_GNU_PROPERTY segment longer than this (parse_elf_properties).
pub const MAX_PROPERTY_NOTE: u64 = 1024;
pub const NT_GNU_PROPERTY_TYPE_0: u32 = 5;
pub const GNU_PROPERTY_AARCH64_FEATURE_1_AND: u32 = 0xc000_0000;

/// Checks a PT_GNU_PROPERTY note as Linux's parse_elf_properties and arm64's
/// arch_parse_elf_property do. `p_filesz` is the segment's size, `note` the bytes a read of it
/// returned (fewer at the end of the file). Returns the GNU_PROPERTY_AARCH64_FEATURE_1_AND
/// bits (0 when absent).
pub fn check_gnu_properties(p_filesz: u64, note: &[u8]) -> Result<u32, Errno> {
    if p_filesz > MAX_PROPERTY_NOTE {
        return Err(Errno::ENOEXEC);
    }
    let u32_at = |o: usize| -> Option<u32> {
        Some(u32::from_le_bytes(note.get(o..o + 4)?.try_into().ok()?))
    };
    // The note header (namesz, descsz, type) and the name "GNU\0" must have been read.
    let n = note.len().min(p_filesz as usize);
    if n < 16 {
        return Err(Errno::EIO);
    }
    let (namesz, descsz, ty) = (u32_at(0), u32_at(4), u32_at(8));
    if ty != Some(NT_GNU_PROPERTY_TYPE_0) || namesz != Some(4) || note[12..16] != *b"GNU\0" {
        return Err(Errno::ENOEXEC);
    }
    let descsz = descsz.unwrap_or(u32::MAX) as usize;
    if descsz > n - 16 {
        return Err(Errno::ENOEXEC);
    }
    let end = 16 + descsz;
    let mut off = 16;
    let mut prev: Option<u32> = None;
    let mut features = 0;
    while off != end {
        let left = end - off;
        if left < 8 {
            return Err(Errno::ENOEXEC);
        }
        let (pr_type, pr_datasz) = (
            u32_at(off).unwrap_or(0),
            u32_at(off + 4).unwrap_or(0) as usize,
        );
        let left = left - 8;
        if pr_datasz > left || pr_datasz.next_multiple_of(8) > left {
            return Err(Errno::ENOEXEC);
        }
        // Sorted by type, each type once.
        if prev.is_some_and(|p| pr_type <= p) {
            return Err(Errno::ENOEXEC);
        }
        prev = Some(pr_type);
        if pr_type == GNU_PROPERTY_AARCH64_FEATURE_1_AND {
            if pr_datasz != 4 {
                return Err(Errno::ENOEXEC);
            }
            features |= u32_at(off + 8).unwrap_or(0);
        }
        off += 8 + pr_datasz.next_multiple_of(8);
    }
    Ok(features)
}

/// One step of mapping an image, in the order Linux's elf_load performs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapOp {
    /// A private file mapping over `[start, end)` from file offset `off` (page-aligned; may lie
    /// past the end of the file, whose pages then fault with SIGBUS), replacing what was there.
    File {
        start: u64,
        end: u64,
        off: u64,
        prot: u32,
    },
    /// Clear `[start, end)` (the bss part of the last file page) through the user's view of the
    /// page; a failure (page not writable, or past the end of the file) is fatal only if
    /// `fatal`.
    Zero { start: u64, end: u64, fatal: bool },
    /// Anonymous read-write pages (executable if `exec`) over `[start, end)`, replacing what was
    /// there (the rest of the bss, mapped as brk memory).
    Anon { start: u64, end: u64, exec: bool },
}

/// Where an image went, for the auxv and the program break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapped {
    pub bias: u64,
    /// AT_ENTRY and the initial PC.
    pub entry: u64,
    /// AT_PHDR: PT_PHDR's address if present, else the address of e_phoff inside the last LOAD
    /// segment that holds it, else the bias.
    pub phdr: u64,
    pub phent: u64,
    pub phnum: u64,
    /// The page-aligned end of the highest segment (memsz included).
    pub brk: u64,
}

impl<'a> ElfFile<'a> {
    /// Validate `data` as an AArch64 ELF64 LE executable for a kernel with `page`-byte pages
    /// (a power of two).
    pub fn parse(data: &'a [u8], page: u64) -> Result<ElfFile<'a>, ElfError> {
        ElfFile::parse_head(data, data.len() as u64, page)
    }

    /// As `parse`, from the first bytes (`head`) of a file of `file_size` bytes: the program
    /// headers and PT_INTERP must lie in `head` ([`ElfError::NeedMore`] when they are in the
    /// file past it).
    ///
    /// Linux checks only the magic, e_type and e_machine of the header (not the class, byte
    /// order or version bytes), reads the program headers (at most 64 KiB), the first
    /// PT_INTERP, and notes the PT_GNU_PROPERTY segments before it and the first PT_GNU_STACK.
    pub fn parse_head(head: &'a [u8], file_size: u64, page: u64) -> Result<ElfFile<'a>, ElfError> {
        let data = head;
        let Ok((ehdr, _)) = Ehdr::read_from_prefix(data) else {
            return Err(ElfError::Truncated);
        };
        if ehdr.e_ident[..4] != ELFMAG {
            return Err(ElfError::BadMagic);
        }
        if ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN {
            return Err(ElfError::NotExecutable);
        }
        if ehdr.e_machine != EM_AARCH64 {
            return Err(ElfError::NotAarch64);
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
            exec_stack: false,
            property: None,
        };
        let mut stack_seen = false;
        for i in 0..phnum {
            let ph = f.phdr(i).ok_or(ElfError::PhdrsOutsideFile)?;
            match ph.p_type {
                PT_GNU_PROPERTY if f.interp.is_none() => f.property = Some(ph),
                PT_INTERP if f.interp.is_none() => {
                    if ph.p_filesz < 2 || ph.p_filesz > MAX_INTERP {
                        return Err(ElfError::BadInterp);
                    }
                    // A read at a negative file position is EINVAL; a short one EIO.
                    if ph.p_offset > i64::MAX as u64 {
                        return Err(ElfError::InterpBadOffset);
                    }
                    let in_file = ph
                        .p_offset
                        .checked_add(ph.p_filesz)
                        .is_some_and(|e| e <= file_size);
                    if !in_file {
                        return Err(ElfError::InterpOutsideFile);
                    }
                    let bytes = usize::try_from(ph.p_offset)
                        .ok()
                        .and_then(|s| data.get(s..s.checked_add(ph.p_filesz as usize)?))
                        .ok_or(ElfError::NeedMore)?;
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
                PT_GNU_STACK if !stack_seen => {
                    stack_seen = true;
                    f.exec_stack = ph.p_flags & PF_X != 0;
                }
                _ => {}
            }
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

    fn loads(&self) -> impl Iterator<Item = Phdr> + '_ {
        self.phdrs().filter(|p| p.p_type == PT_LOAD)
    }

    /// The PT_INTERP path (without its NUL): a dynamically linked program.
    pub fn interp(&self) -> Option<&'a [u8]> {
        self.interp
    }

    /// The PT_GNU_PROPERTY segment whose note execve checks (the last one before PT_INTERP;
    /// for an interpreter, the last one).
    pub fn property(&self) -> Option<Phdr> {
        self.property
    }

    /// ET_DYN (PIE or static-PIE): the caller chooses the load bias.
    pub fn is_dyn(&self) -> bool {
        self.ehdr.e_type == ET_DYN
    }

    /// PT_GNU_STACK asks for an executable stack (absent: not executable on arm64).
    pub fn exec_stack(&self) -> bool {
        self.exec_stack
    }

    /// Bytes from the lowest LOAD page to the end of the highest (Linux's
    /// total_mapping_size); None if there is no LOAD segment or the sum overflows.
    pub fn span(&self) -> Option<u64> {
        let lo = self.first_page()?;
        let mut hi = 0u64;
        for p in self.loads() {
            hi = hi.max(p.p_vaddr.checked_add(p.p_memsz)?);
        }
        hi.checked_sub(lo)
    }

    /// The lowest page address of any LOAD segment, before bias.
    pub fn first_page(&self) -> Option<u64> {
        self.loads().map(|p| p.p_vaddr & !(self.page - 1)).min()
    }

    /// The largest power-of-two p_align of the LOAD segments (at least the page size).
    pub fn max_align(&self) -> u64 {
        self.loads()
            .map(|p| p.p_align)
            .filter(|a| a.is_power_of_two())
            .fold(self.page, u64::max)
    }

    /// Whether Linux could pick a place for this ET_DYN image: its first LOAD segment must map
    /// file bytes (one without them is placed at the bottom of the address space, where nothing
    /// may be mapped) and the image must have a nonzero size.
    pub fn placeable(&self) -> bool {
        !self.is_dyn()
            || match self.loads().next() {
                None => true,
                Some(first) => first.p_filesz != 0 && self.span().is_some_and(|s| s != 0),
            }
    }

    /// Maps the image at `bias` (0 for ET_EXEC) as Linux's load_elf_binary and elf_load do,
    /// PT_LOAD by PT_LOAD in table order, each over what the earlier ones mapped: `apply` carries
    /// out each step. Any failure (an address outside `[min_addr, task_size)`, a file offset
    /// not congruent with the address, p_filesz over p_memsz, a step `apply` refuses) is Err:
    /// past the point of no return, the process is killed.
    pub fn map(
        &self,
        bias: u64,
        min_addr: u64,
        task_size: u64,
        mut apply: impl FnMut(MapOp) -> Result<(), Errno>,
    ) -> Result<Mapped, Errno> {
        let page = self.page;
        let fail = Errno::EINVAL;
        let align = |x: u64| x.checked_next_multiple_of(page).ok_or(fail);
        let in_range = |s: u64, e: u64| {
            if s < min_addr || e > task_size || s > e {
                Err(fail)
            } else {
                Ok(())
            }
        };
        if !self.placeable() {
            return Err(fail);
        }
        let mut brk = 0u64;
        let mut phoff_vaddr = None;
        for p in self.loads() {
            let addr = bias.wrapping_add(p.p_vaddr);
            let pgoff = p.p_vaddr & (page - 1);
            let start = addr & !(page - 1);
            let zero_start;
            if p.p_filesz != 0 {
                let size = align(p.p_filesz.checked_add(pgoff).ok_or(fail)?)?;
                let off = p.p_offset.wrapping_sub(pgoff);
                let end = start.checked_add(size).ok_or(fail)?;
                // mmap: a page-aligned offset within a file's largest size.
                if off & (page - 1) != 0
                    || off.checked_add(size).is_none_or(|e| e > i64::MAX as u64)
                {
                    return Err(fail);
                }
                in_range(start, end)?;
                apply(MapOp::File {
                    start,
                    end,
                    off,
                    prot: p.prot(),
                })?;
                zero_start = start + pgoff + p.p_filesz;
                if p.p_memsz > p.p_filesz && zero_start & (page - 1) != 0 {
                    apply(MapOp::Zero {
                        start: zero_start,
                        end: align(zero_start)?,
                        fatal: p.p_flags & PF_W != 0,
                    })?;
                }
            } else {
                zero_start = start;
            }
            if p.p_memsz > p.p_filesz {
                let zero_end = start
                    .checked_add(pgoff)
                    .and_then(|s| s.checked_add(p.p_memsz))
                    .ok_or(fail)?;
                let (s, e) = (align(zero_start)?, align(zero_end)?);
                if e > s {
                    in_range(s, e)?;
                    apply(MapOp::Anon {
                        start: s,
                        end: e,
                        exec: p.p_flags & PF_X != 0,
                    })?;
                }
            }
            // Linux's check that set_brk can work, made after the mapping.
            let k = p.p_vaddr;
            if k >= task_size
                || p.p_filesz > p.p_memsz
                || p.p_memsz > task_size
                || task_size - p.p_memsz < k
            {
                return Err(fail);
            }
            brk = brk.max(k + p.p_memsz);
            if p.p_offset <= self.ehdr.e_phoff
                && self.ehdr.e_phoff < p.p_offset.saturating_add(p.p_filesz)
            {
                phoff_vaddr = Some(self.ehdr.e_phoff - p.p_offset + p.p_vaddr);
            }
        }
        let phdr = self.phdr_vaddr.or(phoff_vaddr).unwrap_or(0);
        Ok(Mapped {
            bias,
            entry: self.ehdr.e_entry.wrapping_add(bias),
            phdr: phdr.wrapping_add(bias),
            phent: PHDR_SIZE as u64,
            phnum: self.ehdr.e_phnum as u64,
            brk: align(brk.wrapping_add(bias)).unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::bytes::{put_u16, put_u32, put_u64};
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

    fn ops(f: &ElfFile<'_>, bias: u64) -> Result<(Vec<MapOp>, Mapped), Errno> {
        let mut v = Vec::new();
        let m = f.map(bias, 0x10000, 1 << 48, |op| {
            v.push(op);
            Ok(())
        })?;
        Ok((v, m))
    }

    #[test]
    fn static_executable_map() {
        let b = static_exe();
        let f = ElfFile::parse(&b, PG).unwrap();
        assert!(!f.is_dyn() && f.interp().is_none() && !f.exec_stack());
        assert_eq!(f.span(), Some(0x413345 - 0x400000));
        let (v, m) = ops(&f, 0).unwrap();
        assert_eq!(
            (m.entry, m.phdr, m.phent, m.phnum),
            (0x400100, 0x400040, 56, 3)
        );
        assert_eq!(m.brk, 0x414000);
        assert_eq!(
            v,
            [
                MapOp::File {
                    start: 0x400000,
                    end: 0x401000,
                    off: 0,
                    prot: 5
                },
                MapOp::File {
                    start: 0x411000,
                    end: 0x412000,
                    off: 0x1000,
                    prot: 3
                },
                MapOp::Zero {
                    start: 0x411100,
                    end: 0x412000,
                    fatal: true
                },
                MapOp::Anon {
                    start: 0x412000,
                    end: 0x414000,
                    exec: false
                },
            ]
        );
    }

    #[test]
    fn pie_with_bias_and_interp() {
        let mut b = vec![0u8; 0x3000];
        ehdr(&mut b, ET_DYN, 0x123, 64, 3);
        phdr(
            &mut b,
            0,
            Phdr {
                p_type: PT_INTERP,
                p_offset: 0x200,
                p_filesz: 28,
                ..Phdr::default()
            },
        );
        b[0x200..0x200 + 27].copy_from_slice(b"/lib/ld-linux-aarch64.so.1\0");
        phdr(&mut b, 1, load(PF_R | PF_X, 0, 0, 0x1800, 0x1800));
        phdr(&mut b, 2, load(PF_R | PF_W, 0x1800, 0x1800, 0x100, 0x900));
        let f = ElfFile::parse(&b, PG).unwrap();
        assert_eq!(f.interp(), Some(&b"/lib/ld-linux-aarch64.so.1"[..]));
        assert_eq!(f.max_align(), 0x10000);
        let (v, m) = ops(&f, 0x5555_0000_0000).unwrap();
        assert_eq!(
            (m.entry, m.phdr, m.brk),
            (0x5555_0000_0123, 0x5555_0000_0040, 0x5555_0000_3000)
        );
        // The data segment's first page is mapped over the text's last one.
        assert_eq!(
            v[1],
            MapOp::File {
                start: 0x5555_0000_1000,
                end: 0x5555_0000_2000,
                off: 0x1000,
                prot: 3
            }
        );
        assert!(ops(&f, (1 << 48) - 0x2000).is_err());
        assert!(ops(&f, (1 << 48) - 0x3000).is_ok());
    }

    #[test]
    fn pre_exec_rejections() {
        let good = static_exe();
        let check = |f: &dyn Fn(&mut Vec<u8>), want: ElfError| {
            let mut b = good.clone();
            f(&mut b);
            assert_eq!(ElfFile::parse(&b, PG).unwrap_err(), want);
        };
        check(&|b| b.truncate(63), ElfError::Truncated);
        check(&|b| b[1] = b'X', ElfError::BadMagic);
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
        check(&|b| interp(b, 0x10f0, 0x20), ElfError::InterpOutsideFile);
        check(&|b| interp(b, u64::MAX, 4), ElfError::InterpBadOffset);
        check(&|b| interp(b, 0, 5000), ElfError::BadInterp);
        assert_eq!(ElfError::InterpOutsideFile.errno(), Errno::EIO);
        // Class, byte order and version bytes are not checked (as on Linux).
        let mut b = good.clone();
        b[4] = 1;
        b[6] = 0;
        assert!(ElfFile::parse(&b, PG).is_ok());
    }

    #[test]
    fn mapping_failures_and_overlaps() {
        let good = static_exe();
        let s1 = 64 + 56;
        let map = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = good.clone();
            f(&mut b);
            let e = ElfFile::parse(&b, PG).unwrap();
            ops(&e, 0).map(|(v, _)| v)
        };
        assert!(map(&|b| put_u64(b, s1 + 40, 0x80)).is_err()); // filesz > memsz
        assert!(map(&|b| put_u64(b, s1 + 16, 0x411800)).is_err()); // incongruent
        assert!(map(&|b| put_u64(b, s1 + 40, 1 << 60)).is_err()); // huge memsz
        assert!(map(&|b| put_u64(b, s1 + 16, 0x8000_0000_0041_1000)).is_err());
        // Past the end of the file, and over the text: fine.
        assert!(map(&|b| put_u64(b, s1 + 32, 0x2000)).is_ok());
        let v = map(&|b| put_u64(b, s1 + 16, 0x400000)).unwrap();
        assert_eq!(
            v[1],
            MapOp::File {
                start: 0x400000,
                end: 0x401000,
                off: 0x1000,
                prot: 3
            }
        );
        // No LOAD at all maps nothing.
        assert_eq!(
            map(&|b| {
                put_u32(b, 64, PT_NOTE);
                put_u32(b, s1, PT_NOTE);
            }),
            Ok(vec![])
        );
    }

    #[test]
    fn gnu_properties() {
        let note = |desc: &[u8]| {
            let mut n = vec![0u8; 16];
            put_u32(&mut n, 0, 4);
            put_u32(&mut n, 4, desc.len() as u32);
            put_u32(&mut n, 8, NT_GNU_PROPERTY_TYPE_0);
            n[12..16].copy_from_slice(b"GNU\0");
            n.extend_from_slice(desc);
            n
        };
        let prop = |ty: u32, data: &[u8]| {
            let mut p = vec![0u8; 8];
            put_u32(&mut p, 0, ty);
            put_u32(&mut p, 4, data.len() as u32);
            p.extend_from_slice(data);
            p.resize(8 + data.len().next_multiple_of(8), 0);
            p
        };
        let chk = |n: &[u8]| check_gnu_properties(n.len() as u64, n);
        let and = GNU_PROPERTY_AARCH64_FEATURE_1_AND;
        assert_eq!(chk(&note(&prop(and, &[3, 0, 0, 0]))), Ok(3));
        assert_eq!(chk(&note(&[])), Ok(0));
        assert_eq!(chk(&note(&prop(7, &[1; 13]))), Ok(0));
        assert_eq!(chk(&note(&prop(and, &[0; 8]))), Err(Errno::ENOEXEC));
        let mut two = prop(and, &[0; 4]);
        two.extend(prop(and - 1, &[0; 4]));
        assert_eq!(chk(&note(&two)), Err(Errno::ENOEXEC));
        let mut n = note(&prop(and, &[0; 4]));
        n[12] = b'g';
        assert_eq!(chk(&n), Err(Errno::ENOEXEC));
        let mut n = note(&prop(and, &[0; 4]));
        n[4] = 0x40;
        assert_eq!(chk(&n), Err(Errno::ENOEXEC));
        let mut n = note(&prop(and, &[0; 4]));
        n[20] = 9;
        assert_eq!(chk(&n), Err(Errno::ENOEXEC));
        assert_eq!(check_gnu_properties(1025, &[0; 1025]), Err(Errno::ENOEXEC));
        assert_eq!(check_gnu_properties(32, &n[..15]), Err(Errno::EIO));
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
                let _ = f.map(bias, 0x10000, 1 << 48, |op| {
                    match op {
                        MapOp::File { start, end, .. }
                        | MapOp::Zero { start, end, .. }
                        | MapOp::Anon { start, end, .. } => {
                            assert!(start < end && end <= 1 << 48)
                        }
                    }
                    Ok(())
                });
            }
            let _ = (f.span(), f.max_align(), f.phdrs().count());
        }
        let _ = check_gnu_properties(b.len() as u64, b);
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
