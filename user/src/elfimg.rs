//! Hand-made executables for the exec tests (`exec_rules`, `fuzz_exec`): a small static
//! (ET_EXEC) or static-PIE (ET_DYN) image with a text and a data+bss segment, GNU_STACK, a
//! well-formed PT_GNU_PROPERTY note and a spare PT_NULL slot, plus helpers to edit its fields.
//!
//! The program checks its own loading and exits with [`EXIT_OK`]: it reads the data word (42),
//! the word after it (file bytes past p_filesz, which must read as zero), stores into the bss
//! page after the data page and reads the bss back. All addressing is PC-relative, so it runs
//! wherever an ET_DYN image is placed.

use alloc::vec;
use alloc::vec::Vec;
use svelt_abi::format::elf::*;
use zerocopy::{FromBytes, IntoBytes};

/// The exit status of an image that loaded correctly.
pub const EXIT_OK: u8 = 42;
/// ET_EXEC text address (the data segment follows at `+ DATA_VADDR`).
pub const EXEC_BASE: u64 = 0x40_0000;
pub const PHNUM: usize = 5;
/// Program-header indices.
pub const PH_TEXT: usize = 0;
pub const PH_DATA: usize = 1;
pub const PH_STACK: usize = 2;
pub const PH_PROP: usize = 3;
pub const PH_SPARE: usize = 4;
/// File layout: headers, code, data (42 then a zero word), the property note.
pub const CODE: usize = 0x160;
pub const DATA: usize = 0x1c0;
pub const NOTE: usize = 0x1d0;
pub const NOTE_LEN: usize = 0x20;
pub const FILE_LEN: usize = NOTE + NOTE_LEN;
/// The data segment's address relative to the text's (congruent with its file offset).
pub const DATA_VADDR: u64 = 0x11000 + DATA as u64;
pub const BSS_LEN: u64 = 0x2000;
pub const NT_GNU_PROPERTY_TYPE_0: u32 = 5;
pub const GNU_PROPERTY_AARCH64_FEATURE_1_AND: u32 = 0xc000_0000;

fn adr(rd: u32, delta: i64) -> u32 {
    let imm = (delta as u32) & 0x1f_ffff;
    0x1000_0000 | ((imm & 3) << 29) | ((imm >> 2) << 5) | rd
}
fn ldr(rt: u32, rn: u32, off: u32) -> u32 {
    0xf940_0000 | ((off / 8) << 10) | (rn << 5) | rt
}
fn str(rt: u32, rn: u32, off: u32) -> u32 {
    0xf900_0000 | ((off / 8) << 10) | (rn << 5) | rt
}
fn add(rd: u32, rn: u32, rm: u32) -> u32 {
    0x8b00_0000 | (rm << 16) | (rn << 5) | rd
}

/// Offset of field bytes in the file: program header `i`, byte `field` within it.
pub fn ph_off(i: usize) -> usize {
    EHDR_SIZE + i * PHDR_SIZE
}

pub fn put_u16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

/// Writes program header `i`.
pub fn set_phdr(b: &mut [u8], i: usize, p: &Phdr) {
    let o = ph_off(i);
    b[o..o + PHDR_SIZE].copy_from_slice(p.as_bytes());
}

/// Reads program header `i`.
pub fn phdr(b: &[u8], i: usize) -> Phdr {
    let o = ph_off(i);
    Phdr::read_from_bytes(&b[o..o + PHDR_SIZE]).unwrap_or_default()
}

/// Edits program header `i` in place.
pub fn edit_phdr(b: &mut [u8], i: usize, f: impl FnOnce(&mut Phdr)) {
    let mut p = phdr(b, i);
    f(&mut p);
    set_phdr(b, i, &p);
}

/// A GNU property note: header, "GNU", then `desc` (the properties).
pub fn property_note(desc: &[u8]) -> Vec<u8> {
    let mut n = vec![0u8; 16];
    put_u32(&mut n, 0, 4);
    put_u32(&mut n, 4, desc.len() as u32);
    put_u32(&mut n, 8, NT_GNU_PROPERTY_TYPE_0);
    n[12..16].copy_from_slice(b"GNU\0");
    n.extend_from_slice(desc);
    n
}

/// One property: type, size, data padded to 8 bytes.
pub fn property(ty: u32, data: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 8];
    put_u32(&mut p, 0, ty);
    put_u32(&mut p, 4, data.len() as u32);
    p.extend_from_slice(data);
    p.resize(8 + data.len().next_multiple_of(8), 0);
    p
}

/// The image: ET_EXEC at [`EXEC_BASE`] (`pie` false) or ET_DYN at 0.
pub fn image(pie: bool) -> Vec<u8> {
    let base = if pie { 0 } else { EXEC_BASE };
    let mut b = vec![0u8; FILE_LEN];
    b[..16].copy_from_slice(&ELF64_LE_IDENT);
    put_u16(&mut b, 16, if pie { ET_DYN } else { ET_EXEC });
    put_u16(&mut b, 18, EM_AARCH64);
    put_u32(&mut b, 20, 1);
    put_u64(&mut b, 24, base + CODE as u64);
    put_u64(&mut b, 32, EHDR_SIZE as u64);
    put_u16(&mut b, 52, EHDR_SIZE as u16);
    put_u16(&mut b, 54, PHDR_SIZE as u16);
    put_u16(&mut b, 56, PHNUM as u16);
    let load = |flags, off: usize, vaddr: u64, filesz: u64, memsz: u64| Phdr {
        p_type: PT_LOAD,
        p_flags: flags,
        p_offset: off as u64,
        p_vaddr: vaddr,
        p_paddr: vaddr,
        p_filesz: filesz,
        p_memsz: memsz,
        p_align: 0x1000,
    };
    let text = FILE_LEN as u64;
    set_phdr(&mut b, PH_TEXT, &load(PF_R | PF_X, 0, base, text, text));
    let data = base + DATA_VADDR;
    set_phdr(&mut b, PH_DATA, &load(PF_R | PF_W, DATA, data, 8, BSS_LEN));
    set_phdr(
        &mut b,
        PH_STACK,
        &Phdr {
            p_type: PT_GNU_STACK,
            p_flags: PF_R | PF_W,
            p_align: 16,
            ..Phdr::default()
        },
    );
    set_phdr(
        &mut b,
        PH_PROP,
        &Phdr {
            p_type: PT_GNU_PROPERTY,
            p_flags: PF_R,
            p_offset: NOTE as u64,
            p_vaddr: base + NOTE as u64,
            p_paddr: base + NOTE as u64,
            p_filesz: NOTE_LEN as u64,
            p_memsz: NOTE_LEN as u64,
            p_align: 8,
        },
    );
    // FEATURE_1_AND with no feature bits (BTI would need landing pads).
    let note = property_note(&property(GNU_PROPERTY_AARCH64_FEATURE_1_AND, &[0; 4]));
    b[NOTE..NOTE + NOTE_LEN].copy_from_slice(&note);
    put_u64(&mut b, DATA, EXIT_OK as u64);
    // x1 = &data; x0 = data[0] + data[1]; bss[0x1000] = x0; x0 += bss[0x1008]; exit(x0).
    let data_delta = DATA_VADDR as i64 - CODE as i64;
    let code = [
        adr(1, data_delta),
        ldr(0, 1, 0),
        ldr(2, 1, 8),
        add(0, 0, 2),
        str(0, 1, 0x1000),
        ldr(3, 1, 0x1008),
        add(0, 0, 3),
        0xd280_0ba8, // movz x8, #93 (exit)
        0xd400_0001, // svc #0
    ];
    for (i, w) in code.iter().enumerate() {
        put_u32(&mut b, CODE + 4 * i, *w);
    }
    b
}

/// How an exec'd child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// It exited with this status.
    Exit(i32),
    /// A signal killed it.
    Sig(i32),
    /// execve failed with this errno.
    Errno(i32),
}

impl core::fmt::Display for Outcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Outcome::Exit(n) => write!(f, "exit:{n}"),
            Outcome::Sig(n) => write!(f, "sig:{n}"),
            Outcome::Errno(n) => write!(f, "errno:{n}"),
        }
    }
}

/// Writes `data` to `path` as an executable file.
pub fn write_exe(path: &str, data: &[u8]) -> crate::sys::SysResult<()> {
    let _ = crate::sys::unlinkat(crate::sys::AT_FDCWD, path, 0);
    crate::io::write_file(path, data, 0o755)?;
    crate::sys::fchmodat(crate::sys::AT_FDCWD, path, 0o755).map(|_| ())
}

/// Execs `path` in a forked child and says how it ended (an execve error comes back through a
/// close-on-exec pipe, so it is told apart from any exit status). Err: fork/wait failed or the
/// child outlived `timeout_ns` (then it was killed).
pub fn run(path: &str, timeout_ns: u64) -> Result<Outcome, alloc::string::String> {
    use crate::sys;
    let [r, w] = sys::pipe2(sys::O_CLOEXEC).map_err(|e| alloc::format!("pipe2: {e:?}"))?;
    let pid = crate::proc::spawn(|| {
        let e = sys::execve(path, &[path], &[]);
        let _ = sys::write_all(w, &e.0.to_le_bytes());
        0
    })
    .map_err(|e| alloc::format!("fork: {e:?}"))?;
    let _ = sys::close(w);
    let mut buf = [0u8; 4];
    let n = sys::read(r, &mut buf).unwrap_or(0);
    let _ = sys::close(r);
    let (st, late) =
        crate::proc::wait_bounded(pid, timeout_ns).map_err(|e| alloc::format!("wait: {e:?}"))?;
    if late {
        return Err(alloc::format!("{path}: the child did not end in time"));
    }
    if n == 4 {
        return Ok(Outcome::Errno(i32::from_le_bytes(buf)));
    }
    if crate::proc::wifexited(st) {
        Ok(Outcome::Exit(crate::proc::wexitstatus(st)))
    } else if crate::proc::wifsignaled(st) {
        Ok(Outcome::Sig(crate::proc::wtermsig(st)))
    } else {
        Err(alloc::format!("{path}: status {st:#x}"))
    }
}
