//! The vDSO as a program finds it (as musl does): AT_SYSINFO_EHDR gives the image; its
//! PT_DYNAMIC gives the dynamic symbols (DT_SYMTAB, DT_STRTAB, the count from DT_HASH) and their
//! versions (DT_VERSYM, DT_VERDEF), all read in place.

use crate::sys::Timespec;
use alloc::vec::Vec;

/// AT_SYSINFO_EHDR.
pub const AT_SYSINFO_EHDR: usize = 33;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: usize = 0;
const DT_HASH: usize = 4;
const DT_STRTAB: usize = 5;
const DT_SYMTAB: usize = 6;
const DT_SONAME: usize = 14;
const DT_GNU_HASH: usize = 0x6fff_fef5;
const DT_VERSYM: usize = 0x6fff_fff0;
const DT_VERDEF: usize = 0x6fff_fffc;

pub struct Sym {
    pub name: &'static [u8],
    pub addr: usize,
    /// The version the symbol is defined with (DT_VERSYM, DT_VERDEF), if any.
    pub version: Option<&'static [u8]>,
}

pub struct Image {
    /// Where the ELF header is (AT_SYSINFO_EHDR).
    pub base: usize,
    pub soname: Option<&'static [u8]>,
    pub syms: Vec<Sym>,
}

fn rd<T: Copy>(addr: usize) -> T {
    // SAFETY: callers read inside the vDSO image, which is mapped readable for the whole life
    // of the process; the ELF fields read are naturally aligned.
    unsafe { core::ptr::read(addr as *const T) }
}

fn cstr(addr: usize) -> &'static [u8] {
    let mut n = 0;
    while rd::<u8>(addr + n) != 0 {
        n += 1;
    }
    // SAFETY: n bytes at addr were just read (see rd); the image never changes.
    unsafe { core::slice::from_raw_parts(addr as *const u8, n) }
}

impl Image {
    /// The vDSO of this process; None without AT_SYSINFO_EHDR or with an image this reader
    /// does not understand (no PT_DYNAMIC, DT_HASH, DT_SYMTAB or DT_STRTAB).
    pub fn find() -> Option<Image> {
        let base = crate::rt::args().getauxval(AT_SYSINFO_EHDR)?;
        if rd::<[u8; 4]>(base) != *b"\x7fELF" {
            return None;
        }
        let (phoff, phnum) = (rd::<u64>(base + 32) as usize, rd::<u16>(base + 56) as usize);
        let mut bias = None;
        let mut dynamic = None;
        for i in 0..phnum {
            let p = base + phoff + i * 56;
            let vaddr = rd::<u64>(p + 16) as usize;
            match rd::<u32>(p) {
                PT_LOAD if bias.is_none() => bias = Some(base - vaddr),
                PT_DYNAMIC => dynamic = Some(vaddr),
                _ => {}
            }
        }
        let bias = bias?;
        let mut d = bias + dynamic?;
        let (mut hash, mut strtab, mut symtab, mut soname) = (None, None, None, None);
        let mut gnu_hash = None;
        let (mut versym, mut verdef) = (None, None);
        loop {
            let (tag, val) = (rd::<u64>(d) as usize, rd::<u64>(d + 8) as usize);
            match tag {
                DT_NULL => break,
                DT_HASH => hash = Some(bias + val),
                DT_GNU_HASH => gnu_hash = Some(bias + val),
                DT_STRTAB => strtab = Some(bias + val),
                DT_SYMTAB => symtab = Some(bias + val),
                DT_SONAME => soname = Some(val),
                DT_VERSYM => versym = Some(bias + val),
                DT_VERDEF => verdef = Some(bias + val),
                _ => {}
            }
            d += 16;
        }
        let (strtab, symtab) = (strtab?, symtab?);
        let nsyms = match (hash, gnu_hash) {
            (Some(h), _) => rd::<u32>(h + 4) as usize,
            (None, Some(g)) => gnu_hash_count(g)?,
            (None, None) => return None,
        };
        let version_name = |ndx: u16| -> Option<&'static [u8]> {
            let mut v = verdef?;
            loop {
                // Elf64_Verdef: vd_version, vd_flags, vd_ndx (u16), vd_cnt, vd_hash, vd_aux,
                // vd_next (u32); Elf64_Verdaux: vda_name, vda_next.
                if rd::<u16>(v + 4) == ndx & 0x7fff {
                    let aux = v + rd::<u32>(v + 12) as usize;
                    return Some(cstr(strtab + rd::<u32>(aux) as usize));
                }
                match rd::<u32>(v + 16) {
                    0 => return None,
                    next => v += next as usize,
                }
            }
        };
        let mut syms = Vec::new();
        for i in 1..nsyms {
            let s = symtab + i * 24;
            let shndx = rd::<u16>(s + 6);
            if shndx == 0 {
                continue;
            }
            syms.push(Sym {
                name: cstr(strtab + rd::<u32>(s) as usize),
                addr: bias + rd::<u64>(s + 8) as usize,
                version: versym.and_then(|vs| version_name(rd::<u16>(vs + 2 * i))),
            });
        }
        Some(Image {
            base,
            soname: soname.map(|o| cstr(strtab + o)),
            syms,
        })
    }

    pub fn sym(&self, name: &str) -> Option<&Sym> {
        self.syms.iter().find(|s| s.name == name.as_bytes())
    }

    /// `__kernel_clock_gettime`, callable.
    pub fn clock_gettime(&self) -> Option<ClockGettime> {
        let a = self.sym("__kernel_clock_gettime")?.addr;
        // SAFETY: the vDSO defines the symbol with this C signature.
        Some(unsafe { core::mem::transmute::<usize, ClockGettime>(a) })
    }

    /// `__kernel_clock_getres`, callable.
    pub fn clock_getres(&self) -> Option<ClockGettime> {
        let a = self.sym("__kernel_clock_getres")?.addr;
        // SAFETY: as clock_gettime.
        Some(unsafe { core::mem::transmute::<usize, ClockGettime>(a) })
    }

    /// `__kernel_gettimeofday`, callable.
    pub fn gettimeofday(&self) -> Option<Gettimeofday> {
        let a = self.sym("__kernel_gettimeofday")?.addr;
        // SAFETY: the vDSO defines the symbol with this C signature.
        Some(unsafe { core::mem::transmute::<usize, Gettimeofday>(a) })
    }
}

/// The symbol count a DT_GNU_HASH table implies: past the highest bucket's chain end.
fn gnu_hash_count(g: usize) -> Option<usize> {
    let (nbuckets, symoffset, bloom) = (
        rd::<u32>(g) as usize,
        rd::<u32>(g + 4) as usize,
        rd::<u32>(g + 8) as usize,
    );
    let buckets = g + 16 + 8 * bloom;
    let chains = buckets + 4 * nbuckets;
    let last = (0..nbuckets)
        .map(|i| rd::<u32>(buckets + 4 * i) as usize)
        .max()?;
    if last < symoffset {
        return Some(symoffset);
    }
    let mut i = last;
    while rd::<u32>(chains + 4 * (i - symoffset)) & 1 == 0 {
        i += 1;
    }
    Some(i + 1)
}

/// `int (clockid_t, struct timespec *)`: 0, or the syscall's negative errno.
pub type ClockGettime = unsafe extern "C" fn(i32, *mut Timespec) -> i32;
/// `int (struct timeval *, struct timezone *)`.
pub type Gettimeofday = unsafe extern "C" fn(*mut [i64; 2], *mut [i32; 2]) -> i32;
