//! execve's ELF checks and load plan.

use super::util::ToBytes;
use std::vec;
use std::vec::Vec;
use svelt_abi::elf::*;

/// The kernel's choices (kernel/src/task/exec.rs and mm/aspace.rs).
const ET_DYN_BASE: u64 = 0x0000_aaaa_aaaa_0000;
const STACK_TOP: u64 = 0x0000_ffff_ffff_0000;
const STACK_SIZE: u64 = 8 << 20;

/// `ElfFile::parse` and `plan` on an arbitrary file, the way exec uses them.
///
/// Input: a page-size selector, then the file.
///
/// Asserts: an accepted file's header and program headers re-encode to exactly its bytes;
/// every PT_LOAD lies inside the file, has filesz ≤ memsz, is congruent modulo the page and
/// follows the previous one; PT_INTERP is the first one's string up to its NUL, inside the
/// file; the exec-stack flag is the last PT_GNU_STACK's; the span, first page and largest
/// alignment are consistent; the kernel's ET_DYN bias computation cannot overflow; and every
/// planned segment maps whole pages below the task size, in order, sharing at most the page
/// where the previous one ended, copies only file bytes that exist into its own pages, and
/// zeroes the bss inside them, with AT_PHDR and the entry where the ELF rules put them.
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

    // The rules an accepted file meets, checked independently.
    let mut prev_end = None;
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    let mut align = page;
    let mut loads = 0;
    for p in phdrs.iter().filter(|p| p.p_type == PT_LOAD) {
        loads += 1;
        assert!(p
            .p_offset
            .checked_add(p.p_filesz)
            .is_some_and(|e| e <= file.len() as u64));
        assert!(p.p_filesz <= p.p_memsz);
        assert_eq!(p.p_vaddr % page, p.p_offset % page);
        let end = p.p_vaddr.checked_add(p.p_memsz).unwrap();
        if let Some(pe) = prev_end {
            assert!(p.p_vaddr >= pe, "PT_LOAD out of order or overlapping");
        }
        prev_end = Some(end);
        lo = lo.min(p.p_vaddr - p.p_vaddr % page);
        hi = hi.max(end.checked_next_multiple_of(page).unwrap());
        if p.p_align.is_power_of_two() {
            align = align.max(p.p_align);
        }
    }
    assert!(loads > 0);
    assert_eq!((e.first_page(), e.span()), (lo, hi - lo));
    assert_eq!(e.max_align(), align);
    assert!(e.max_align().is_power_of_two() && e.max_align() >= page);
    let interp = phdrs.iter().find(|p| p.p_type == PT_INTERP).map(|p| {
        let s = &file[p.p_offset as usize..(p.p_offset + p.p_filesz) as usize];
        assert_eq!(s.last(), Some(&0));
        let n = s.iter().position(|&c| c == 0).unwrap();
        &s[..n]
    });
    assert_eq!(e.interp(), interp);
    let exec_stack = phdrs
        .iter()
        .rfind(|p| p.p_type == PT_GNU_STACK)
        .is_some_and(|p| p.p_flags & PF_X != 0);
    assert_eq!(e.exec_stack(), exec_stack);
    assert_eq!(e.is_dyn(), h.e_type == ET_DYN);

    // The kernel's bias for ET_DYN must be computable.
    let kernel_bias = ET_DYN_BASE
        .checked_next_multiple_of(e.max_align().max(4096))
        .expect("ET_DYN bias overflows in the kernel");
    let task_size = STACK_TOP - STACK_SIZE;
    let biases = [0, kernel_bias, page * 0x1234, !(page - 1)];
    for bias in biases {
        check_plan(&e, file, page, bias, task_size, &phdrs);
    }
    // Misaligned bias.
    assert_eq!(
        e.plan(page / 2, task_size).err(),
        Some(ElfError::UnalignedBias)
    );
}

fn check_plan(e: &ElfFile, file: &[u8], page: u64, bias: u64, task_size: u64, phdrs: &[Phdr]) {
    let Ok(p) = e.plan(bias, task_size) else {
        // Refused: something really is out of range.
        let hi = e.first_page() + e.span();
        let phdr = phdrs
            .iter()
            .find(|p| p.p_type == PT_PHDR)
            .map_or(Some(0), |p| p.p_vaddr.checked_add(bias));
        assert!(
            bias.checked_add(hi).is_none_or(|h| h > task_size)
                || bias.checked_add(e.ehdr.e_entry).is_none()
                || phdr.is_none(),
            "plan refused a fitting image"
        );
        return;
    };
    assert_eq!(p.bias, bias);
    assert_eq!(p.entry, bias + e.ehdr.e_entry);
    assert_eq!(p.phent, PHDR_SIZE as u64);
    assert_eq!(p.phnum, u64::from(e.ehdr.e_phnum));
    assert!(p.brk <= task_size && p.brk.is_multiple_of(page));
    assert_eq!(p.start, bias + e.first_page());
    assert_eq!(p.brk, p.start + e.span());
    // AT_PHDR: PT_PHDR, else e_phoff inside the first LOAD that holds it, else the bias.
    let want_phdr = match phdrs.iter().find(|p| p.p_type == PT_PHDR) {
        Some(ph) => ph.p_vaddr + bias,
        None => phdrs
            .iter()
            .find(|l| {
                l.p_type == PT_LOAD
                    && l.p_offset <= e.ehdr.e_phoff
                    && e.ehdr.e_phoff < l.p_offset + l.p_filesz
            })
            .map_or(bias, |l| bias + l.p_vaddr + (e.ehdr.e_phoff - l.p_offset)),
    };
    assert_eq!(p.phdr, want_phdr);

    let loads: Vec<&Phdr> = phdrs
        .iter()
        .filter(|l| l.p_type == PT_LOAD && l.p_memsz != 0)
        .collect();
    let segs: Vec<LoadSegment> = p.segments().collect();
    assert_eq!(segs.len(), loads.len());
    let mut prev_end: Option<u64> = None;
    for (s, l) in segs.iter().zip(loads) {
        let start = bias + l.p_vaddr;
        assert!(s.map_start.is_multiple_of(page) && s.map_end.is_multiple_of(page));
        assert!(s.map_start < s.map_end && s.map_start <= start);
        assert!(s.map_start >= p.start && s.map_end <= p.brk);
        assert_eq!(s.map_end, (start + l.p_memsz).next_multiple_of(page));
        match prev_end {
            Some(pe) if s.shares_first_page => assert_eq!(s.map_start, pe - page),
            Some(pe) => assert!(s.map_start >= pe),
            None => assert!(!s.shares_first_page),
        }
        prev_end = Some(s.map_end);
        // The copy: inside the segment's pages, from inside the file, ending where the file
        // part of the segment ends; the bss after it, inside the pages too.
        assert!(s.copy_dst >= s.map_start && s.copy_dst + s.file_len <= s.map_end);
        if s.shares_first_page {
            assert_eq!(s.copy_dst, start);
        } else {
            assert_eq!(s.copy_dst, s.map_start);
        }
        assert_eq!(s.copy_dst + s.file_len, start + l.p_filesz);
        assert_eq!(s.file_offset + s.file_len, l.p_offset + l.p_filesz);
        let bytes = p.file_bytes(s);
        assert_eq!(bytes.len() as u64, s.file_len, "file_bytes cut short");
        let o = s.file_offset as usize;
        assert_eq!(bytes, &file[o..o + s.file_len as usize]);
        assert_eq!(
            (s.zero_start, s.zero_end),
            (start + l.p_filesz, start + l.p_memsz)
        );
        assert!(s.zero_end <= s.map_end);
        assert_eq!(s.prot, l.prot());
    }
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
