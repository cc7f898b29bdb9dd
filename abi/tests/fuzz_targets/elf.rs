//! execve's ELF checks and load plan.

use super::util::ToBytes;
use std::vec;
use std::vec::Vec;
use svelt_abi::format::elf::*;

/// The kernel's choices (kernel/src/task/exec.rs and mm/aspace.rs).
const ET_DYN_BASE: u64 = 0x0000_aaaa_aaaa_0000;
const STACK_TOP: u64 = 0x0000_ffff_ffff_0000;
const STACK_SIZE: u64 = 8 << 20;

/// `ElfFile::parse` and `map` on an arbitrary file, the way exec uses them.
///
/// Input: a page-size selector, then the file.
///
/// Asserts: an accepted file's header and program headers re-encode to exactly its bytes;
/// PT_INTERP is the first one's string up to its NUL, inside the file; every mapping step stays
/// within the bounds given, whole pages at page-aligned file offsets; a mapping that succeeds
/// passed Linux's per-segment checks; nothing panics (the property-note check included).
pub fn elf(data: &[u8]) {
    let Some((&sel, file)) = data.split_first() else {
        return;
    };
    let page: u64 = match sel % 4 {
        0 | 1 => 4096,
        2 => 16384,
        _ => 65536,
    };
    let Ok(e) = ElfFile::parse(file, page) else {
        return;
    };
    let h = e.ehdr;
    assert!(file.len() >= EHDR_SIZE);

    // Byte-exact re-encoding (e_ident padding and the section fields are not parsed).
    let mut hb = h.to_bytes();
    hb[7..16].copy_from_slice(&file[7..16]);
    hb[58..64].copy_from_slice(&file[58..64]);
    assert_eq!(&hb[..], &file[..EHDR_SIZE]);
    let phnum = usize::from(h.e_phnum);
    assert!((1..=MAX_PHNUM).contains(&phnum));
    let phoff = h.e_phoff as usize;
    let phdrs: Vec<Phdr> = e.phdrs().collect();
    assert_eq!(phdrs.len(), phnum);
    assert_eq!(e.phdr(phnum), None);
    for (i, p) in phdrs.iter().enumerate() {
        assert_eq!(e.phdr(i), Some(*p));
        let at = phoff + i * PHDR_SIZE;
        assert_eq!(&p.to_bytes()[..], &file[at..at + PHDR_SIZE]);
    }

    // PT_INTERP: the first one's string up to its NUL, inside the file.
    if let Some(name) = e.interp() {
        let p = phdrs.iter().find(|p| p.p_type == PT_INTERP).unwrap();
        let at = p.p_offset as usize;
        assert!(at + p.p_filesz as usize <= file.len());
        assert_eq!(&file[at..at + name.len()], name);
    }
    let loads: Vec<&Phdr> = phdrs.iter().filter(|p| p.p_type == PT_LOAD).collect();
    assert_eq!(e.first_page().is_some(), !loads.is_empty());
    assert!(e.max_align().is_power_of_two() && e.max_align() >= page);

    // Mapping at the kernel's bias: every step stays within the bounds given, file mappings are
    // whole pages at page-aligned offsets, zeroing stays in one page, and a mapping that
    // succeeds passed Linux's per-segment checks.
    let task_size = STACK_TOP - STACK_SIZE;
    let bias = if e.is_dyn() {
        ET_DYN_BASE.wrapping_sub(e.first_page().unwrap_or(0))
    } else {
        0
    };
    let mut steps = 0;
    let r = e.map(bias, 0x10000, task_size, |op| {
        steps += 1;
        match op {
            MapOp::File {
                start, end, off, ..
            } => {
                assert!(start % page == 0 && end % page == 0 && off % page == 0);
                assert!(0x10000 <= start && start < end && end <= task_size);
            }
            MapOp::Zero { start, end, .. } => {
                assert!(start < end && end - start < page && end % page == 0);
            }
            MapOp::Anon { start, end, .. } => {
                assert!(start % page == 0 && end % page == 0);
                assert!(0x10000 <= start && start < end && end <= task_size);
            }
        }
        Ok(())
    });
    if let Ok(m) = r {
        for p in &loads {
            assert!(p.p_filesz <= p.p_memsz);
            assert!(p.p_filesz == 0 || p.p_vaddr.wrapping_sub(p.p_offset) % page == 0);
        }
        assert_eq!(m.entry, h.e_entry.wrapping_add(bias));
        assert_eq!(m.brk % page, 0);
    } else {
        assert!(steps <= 3 * loads.len());
    }
    let _ = check_gnu_properties(file.len() as u64, file);
}

fn ehdr(e_type: u16, entry: u64, phnum: u16) -> Ehdr {
    Ehdr {
        e_ident: ELF64_LE_IDENT,
        e_shentsize: 0,
        e_shnum: 0,
        e_shstrndx: 0,
        e_type,
        e_machine: EM_AARCH64,
        e_version: 1,
        e_entry: entry,
        e_phoff: EHDR_SIZE as u64,
        e_shoff: 0,
        e_flags: 0,
        e_ehsize: EHDR_SIZE as u16,
        e_phentsize: PHDR_SIZE as u16,
        e_phnum: phnum,
    }
}

fn image(h: Ehdr, ph: &[Phdr], len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..EHDR_SIZE].copy_from_slice(&h.to_bytes());
    for (i, p) in ph.iter().enumerate() {
        let at = EHDR_SIZE + i * PHDR_SIZE;
        f[at..at + PHDR_SIZE].copy_from_slice(&p.to_bytes());
    }
    for (i, b) in f
        .iter_mut()
        .enumerate()
        .skip(EHDR_SIZE + ph.len() * PHDR_SIZE)
    {
        *b = (i * 13) as u8;
    }
    f
}

/// A static executable (text, data+bss sharing a page, GNU_STACK), a static PIE with
/// PT_PHDR, and a dynamic one with PT_INTERP.
pub fn seeds() -> Vec<Vec<u8>> {
    let text = Phdr {
        p_type: PT_LOAD,
        p_flags: PF_R | PF_X,
        p_offset: 0,
        p_vaddr: 0x40_0000,
        p_paddr: 0x40_0000,
        p_filesz: 0x1200,
        p_memsz: 0x1200,
        p_align: 0x1_0000,
    };
    let data = Phdr {
        p_type: PT_LOAD,
        p_flags: PF_R | PF_W,
        p_offset: 0x1200,
        p_vaddr: 0x40_1200,
        p_paddr: 0x40_1200,
        p_filesz: 0x100,
        p_memsz: 0x3000,
        p_align: 0x1_0000,
    };
    let stack = Phdr {
        p_type: PT_GNU_STACK,
        p_flags: PF_R | PF_W,
        ..Phdr::default()
    };
    let exec = image(ehdr(ET_EXEC, 0x40_0100, 3), &[text, data, stack], 0x1300);

    let phdr = Phdr {
        p_type: PT_PHDR,
        p_flags: PF_R,
        p_offset: 64,
        p_vaddr: 64,
        p_filesz: 3 * PHDR_SIZE as u64,
        p_memsz: 3 * PHDR_SIZE as u64,
        p_align: 8,
        ..Phdr::default()
    };
    let t2 = Phdr {
        p_vaddr: 0,
        p_paddr: 0,
        ..text
    };
    let d2 = Phdr {
        p_vaddr: 0x1_1200,
        p_paddr: 0x1_1200,
        ..data
    };
    let pie = image(ehdr(ET_DYN, 0x100, 3), &[phdr, t2, d2], 0x1300);

    let interp = Phdr {
        p_type: PT_INTERP,
        p_flags: PF_R,
        p_offset: 0x1000,
        p_vaddr: 0x1000,
        p_filesz: 27,
        p_memsz: 27,
        p_align: 1,
        ..Phdr::default()
    };
    let mut dynamic = image(ehdr(ET_DYN, 0x100, 3), &[interp, t2, d2], 0x1300);
    dynamic[0x1000..0x101b].copy_from_slice(b"/lib/ld-linux-aarch64.so.1\0");

    let mut out = Vec::new();
    for (sel, f) in [(0u8, exec), (1, pie), (2, dynamic)] {
        let mut v = vec![sel];
        v.extend_from_slice(&f);
        out.push(v);
    }
    out
}
