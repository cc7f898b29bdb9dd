//! What exec hands a static executable: argc/argv/envp on a 16-aligned stack, and the auxiliary
//! vector (AT_PHDR/PHENT/PHNUM/PAGESZ/ENTRY/RANDOM/HWCAP/HWCAP2/MINSIGSTKSZ/EXECFN/ids/SECURE).
#![no_std]
#![no_main]

use core::sync::atomic::Ordering;

use svelt_user::ktap::TestResult;
use svelt_user::proc::{describe, in_child, wexitstatus, wifexited};
use svelt_user::*;

const AT_PHDR: usize = 3;
const AT_PHENT: usize = 4;
const AT_PHNUM: usize = 5;
const AT_PAGESZ: usize = 6;
const AT_BASE: usize = 7;
const AT_ENTRY: usize = 9;
const AT_UID: usize = 11;
const AT_EUID: usize = 12;
const AT_GID: usize = 13;
const AT_EGID: usize = 14;
const AT_HWCAP: usize = 16;
const AT_SECURE: usize = 23;
const AT_RANDOM: usize = 25;
const AT_HWCAP2: usize = 26;
const AT_EXECFN: usize = 31;
const AT_MINSIGSTKSZ: usize = 51;
const HWCAP_FP: usize = 1 << 0;
const HWCAP_ASIMD: usize = 1 << 1;

extern "C" {
    fn _start();
}

fn auxval(key: usize) -> Result<usize, String> {
    rt::args()
        .getauxval(key)
        .ok_or_else(|| format!("auxv has no entry {key}"))
}

fn cstr_at(addr: usize) -> &'static str {
    let mut n = 0;
    // SAFETY: the caller passes the address of a NUL-terminated string the kernel put on the
    // initial stack (AT_EXECFN).
    while unsafe { *((addr + n) as *const u8) } != 0 {
        n += 1;
    }
    // SAFETY: the n bytes were just read.
    let bytes = unsafe { core::slice::from_raw_parts(addr as *const u8, n) };
    core::str::from_utf8(bytes).unwrap_or("?")
}

fn self_path() -> Result<&'static str, String> {
    Ok(cstr_at(auxval(AT_EXECFN)?))
}

fn stack_alignment() -> TestResult {
    let sp = rt::INITIAL_SP.load(Ordering::Relaxed);
    check!(sp.is_multiple_of(16), "initial SP {sp:#x} not 16-aligned");
    check_eq!(sp, rt::args().stack_base());
    // SAFETY: the initial SP points at argc.
    let argc = unsafe { *(sp as *const usize) };
    check_eq!(argc, rt::args().argc);
    check!(argc >= 1);
    check_eq!(rt::args().argv_terminator(), 0);
    Ok(())
}

fn ids_and_secure() -> TestResult {
    for k in [AT_UID, AT_EUID, AT_GID, AT_EGID] {
        check_eq!(auxval(k)?, 0, "auxv id entry {}", k);
    }
    check_eq!(auxval(AT_SECURE)?, 0);
    Ok(())
}

fn program_headers() -> TestResult {
    let phdr = auxval(AT_PHDR)?;
    let phent = auxval(AT_PHENT)?;
    let phnum = auxval(AT_PHNUM)?;
    check_eq!(phent, 56);
    // The ELF header is mapped at 0x400000 (link.ld puts it in the first segment).
    let ehdr = 0x40_0000usize;
    // SAFETY: the first PT_LOAD covers the ELF header at the link address.
    let (e_phoff, e_phnum) = unsafe {
        (
            *((ehdr + 32) as *const u64) as usize,
            *((ehdr + 56) as *const u16) as usize,
        )
    };
    check_eq!(phdr, ehdr + e_phoff);
    check_eq!(phnum, e_phnum);
    // SAFETY: AT_PHDR points at phnum mapped program headers.
    let first_type = unsafe { *(phdr as *const u32) };
    check_eq!(first_type, 1, "first program header is PT_LOAD");
    // A static executable has no interpreter: AT_BASE is 0 (or absent).
    check_eq!(rt::args().getauxval(AT_BASE).unwrap_or(0), 0);
    Ok(())
}

fn pagesz_and_entry() -> TestResult {
    check_eq!(auxval(AT_PAGESZ)?, 4096);
    check_eq!(auxval(AT_ENTRY)?, _start as *const () as usize);
    Ok(())
}

fn at_random() -> TestResult {
    let p = auxval(AT_RANDOM)?;
    check!(p != 0);
    // SAFETY: AT_RANDOM points at 16 bytes on the initial stack.
    let bytes = unsafe { core::slice::from_raw_parts(p as *const u8, 16) };
    check!(bytes.iter().any(|&b| b != 0), "AT_RANDOM bytes all zero");
    check!(
        p > rt::args().stack_base(),
        "AT_RANDOM is on the initial stack"
    );
    Ok(())
}

fn hwcaps() -> TestResult {
    let h = auxval(AT_HWCAP)?;
    check!(h & HWCAP_FP != 0 && h & HWCAP_ASIMD != 0, "AT_HWCAP {h:#x}");
    auxval(AT_HWCAP2)?;
    Ok(())
}

fn minsigstksz() -> TestResult {
    let m = auxval(AT_MINSIGSTKSZ)?;
    check!(m >= 4720, "AT_MINSIGSTKSZ {m} < 4720");
    diag(format!("AT_MINSIGSTKSZ {m}"));
    Ok(())
}

fn diag(s: String) {
    println!("# {s}");
}

fn execfn() -> TestResult {
    let p = self_path()?;
    check_eq!(p, "/bin/tests/elf_stack");
    check_eq!(rt::args().arg(0), Some("elf_stack"));
    Ok(())
}

/// Run by `argv_envp_through_execve` in the re-executed child.
fn child_checks(a: &rt::Args) -> i32 {
    let want_argv: [&[u8]; 4] = [b"/bin/tests/elf_stack", b"--child", b"a b", b""];
    if a.argc != 4 {
        return 10;
    }
    if !a.argv().eq(want_argv.iter().copied()) {
        return 11;
    }
    let want_env: [&[u8]; 3] = [b"FOO=bar", b"EMPTY=", b"X=y=z"];
    if !a.envp().eq(want_env.iter().copied()) {
        return 12;
    }
    if a.env("X") != Some("y=z") {
        return 13;
    }
    match a.getauxval(AT_EXECFN) {
        Some(p) if cstr_at(p) == "/bin/tests/elf_stack" => {}
        _ => return 14,
    }
    if !rt::INITIAL_SP.load(Ordering::Relaxed).is_multiple_of(16) {
        return 15;
    }
    0
}

fn argv_envp_through_execve() -> TestResult {
    let st = t!(in_child(|| {
        let e = sys::execve(
            "/bin/tests/elf_stack",
            &["/bin/tests/elf_stack", "--child", "a b", ""],
            &["FOO=bar", "EMPTY=", "X=y=z"],
        );
        eprintln!("# execve: {e:?}");
        99
    }));
    check!(
        wifexited(st) && wexitstatus(st) == 0,
        "child: {} (10 argc, 11 argv, 12 envp, 13 env lookup, 14 AT_EXECFN, 15 SP)",
        describe(st)
    );
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--child") {
        return child_checks(a);
    }
    ktap::run(&[
        ("stack_alignment_and_argc", stack_alignment),
        ("argv_envp_through_execve", argv_envp_through_execve),
        ("at_execfn", execfn),
        ("at_phdr_phent_phnum", program_headers),
        ("at_pagesz_at_entry", pagesz_and_entry),
        ("at_random", at_random),
        ("at_hwcap_hwcap2", hwcaps),
        ("at_minsigstksz", minsigstksz),
        ("at_ids_secure", ids_and_secure),
    ])
}

entry!(main);
