//! execve of `#!` scripts (the interpreter's argv, nesting up to ELOOP, ENOEXEC, EACCES) and of
//! dynamically linked ELF files whose PT_INTERP names a missing (ENOENT) or non-ELF (ELIBBAD)
//! interpreter. This program is also the scripts' interpreter: run with a first argument
//! starting with `--echo-argv` or `/tmp/exec-`, it prints its argv and AT_EXECFN.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sys::*;
use svelt_user::*;

const SELF: &str = "/bin/tests/exec_interp";
const AT_EXECFN: usize = 31;

fn write_file(path: &str, data: &[u8], mode: u32) -> TestResult {
    let _ = sys::unlinkat(AT_FDCWD, path, 0);
    t!(io::write_file(path, data, mode));
    // Not subject to the umask.
    t!(sys::fchmodat(AT_FDCWD, path, mode));
    Ok(())
}

/// Runs `path` with `argv` in a child with stdout on a pipe: Ok(output) if it exited 0,
/// Err(errno) if execve failed.
fn run(path: &str, argv: &[&str]) -> Result<Result<String, Errno>, String> {
    let [r, w] = sys::pipe2(O_CLOEXEC).map_err(|e| format!("pipe2: {e:?}"))?;
    let pid = spawn(|| {
        let _ = sys::dup3(w, 1, 0);
        let e = sys::execve(path, argv, &[]);
        // The errno as the exit status, distinct from the echo's 0.
        100 + e.0
    })
    .map_err(|e| format!("fork: {e:?}"))?;
    let _ = sys::close(w);
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    while let Ok(n) = sys::read(r, &mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    let _ = sys::close(r);
    let (_, st) = sys::waitpid(pid, 0).map_err(|e| format!("waitpid: {e:?}"))?;
    if !wifexited(st) {
        return Err(format!("child: {}", describe(st)));
    }
    match wexitstatus(st) {
        0 => Ok(Ok(String::from_utf8(out).unwrap_or_default())),
        s if s > 100 => Ok(Err(Errno(s - 100))),
        s => Err(format!("child exit status {s}")),
    }
}

/// The output the echo mode prints for `argv` and `execfn`.
fn echo_of(argv: &[&str], execfn: &str) -> String {
    let mut s = String::new();
    for a in argv {
        s += &format!("argv: {a}\n");
    }
    s + &format!("execfn: {execfn}\n")
}

fn echo_argv(a: &rt::Args) -> i32 {
    let mut s = String::new();
    for arg in a.argv() {
        s += &format!("argv: {}\n", core::str::from_utf8(arg).unwrap_or("?"));
    }
    let execfn = a.getauxval(AT_EXECFN).map_or(String::new(), |p| {
        // SAFETY: AT_EXECFN points at a NUL-terminated string in the initial stack.
        let c = unsafe { core::ffi::CStr::from_ptr(p as *const core::ffi::c_char) };
        String::from(c.to_str().unwrap_or("?"))
    });
    s += &format!("execfn: {execfn}\n");
    let _ = sys::write_all(1, s.as_bytes());
    0
}

fn script_with_argument() -> TestResult {
    let s = "/tmp/exec-s1";
    // Blanks after the name are skipped; the rest of the line, trailing blanks dropped, is one
    // argument.
    t!(write_file(
        s,
        format!("#! {SELF} \t--echo-argv one  two \t\nnot read\n").as_bytes(),
        0o755
    ));
    let out = t!(t!(run(s, &["name-in-argv0", "x", "y z"])));
    check_eq!(
        out,
        echo_of(&[SELF, "--echo-argv one  two", s, "x", "y z"], s)
    );
    // No argument: the script's path follows the interpreter.
    let s2 = "/tmp/exec-s2";
    t!(write_file(s2, format!("#!{SELF}\n").as_bytes(), 0o755));
    let out = t!(t!(run(s2, &["ignored", "x"])));
    check_eq!(out, echo_of(&[SELF, s2, "x"], s2));
    // An empty argv still gets the script's path.
    let out = t!(t!(run(s2, &[])));
    check_eq!(out, echo_of(&[SELF, s2], s2));
    Ok(())
}

/// A script may name a script as its interpreter, five deep; a sixth is ELOOP.
fn script_nesting_eloop() -> TestResult {
    t!(write_file(
        "/tmp/exec-nest1",
        format!("#!{SELF} --echo-argv\n").as_bytes(),
        0o755
    ));
    for n in 2..=6 {
        let line = format!("#!/tmp/exec-nest{}\n", n - 1);
        t!(write_file(
            &format!("/tmp/exec-nest{n}"),
            line.as_bytes(),
            0o755
        ));
    }
    let out = t!(t!(run("/tmp/exec-nest5", &["n5", "arg"])));
    check_eq!(
        out,
        echo_of(
            &[
                SELF,
                "--echo-argv",
                "/tmp/exec-nest1",
                "/tmp/exec-nest2",
                "/tmp/exec-nest3",
                "/tmp/exec-nest4",
                "/tmp/exec-nest5",
                "arg"
            ],
            "/tmp/exec-nest5"
        )
    );
    check_eq!(t!(run("/tmp/exec-nest6", &["n6"])), Err(ELOOP));
    Ok(())
}

fn script_errors() -> TestResult {
    let s = "/tmp/exec-bad";
    for body in [&b"#!\n"[..], b"#!  \t \nx\n"] {
        t!(write_file(s, body, 0o755));
        check_eq!(
            t!(run(s, &["bad"])),
            Err(ENOEXEC),
            "{:?}",
            core::str::from_utf8(body)
        );
    }
    // Without a newline a short file counts as NUL-padded: the name is "", which Linux looks
    // up as the working directory (a directory: EACCES).
    t!(write_file(s, b"#!", 0o755));
    check_eq!(t!(run(s, &["bad"])), Err(EACCES), "just #!");
    t!(write_file(s, b"#!/tmp/exec-none\n", 0o755));
    check_eq!(t!(run(s, &["bad"])), Err(ENOENT), "missing interpreter");
    t!(write_file(s, b"#!/tmp\n", 0o755));
    check_eq!(
        t!(run(s, &["bad"])),
        Err(EACCES),
        "a directory as interpreter"
    );
    t!(write_file(s, format!("#!{SELF}\n").as_bytes(), 0o644));
    check_eq!(t!(run(s, &["bad"])), Err(EACCES), "a script without x bits");
    // Neither ELF nor script.
    t!(write_file(s, b"plain text\n", 0o755));
    check_eq!(t!(run(s, &["bad"])), Err(ENOEXEC), "plain text");
    t!(sys::unlinkat(AT_FDCWD, s, 0));
    Ok(())
}

/// A minimal AArch64 ET_EXEC image: a PT_INTERP naming `interp`, then one PT_LOAD covering the
/// file (its entry is never reached: execve fails on the interpreter).
fn elf_with_interp(interp: &str) -> Vec<u8> {
    const EHDR: usize = 64;
    const PHDR: usize = 56;
    const BASE: u64 = 0x40_0000;
    let interp_off = EHDR + 2 * PHDR;
    let entry_off = (interp_off + interp.len() + 1).next_multiple_of(8);
    let size = entry_off + 4;
    let mut f = Vec::with_capacity(size);
    f.extend_from_slice(b"\x7fELF");
    f.extend_from_slice(&[2, 1, 1, 0]); // 64-bit, little-endian, version 1, System V
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    f.extend_from_slice(&183u16.to_le_bytes()); // EM_AARCH64
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&(BASE + entry_off as u64).to_le_bytes());
    f.extend_from_slice(&(EHDR as u64).to_le_bytes()); // e_phoff
    f.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    f.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    for v in [EHDR as u16, PHDR as u16, 2, 64, 0, 0] {
        f.extend_from_slice(&v.to_le_bytes()); // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    }
    let phdr = |f: &mut Vec<u8>, ty: u32, flags: u32, off: u64, len: u64, align: u64| {
        f.extend_from_slice(&ty.to_le_bytes());
        f.extend_from_slice(&flags.to_le_bytes());
        for v in [off, BASE + off, BASE + off, len, len, align] {
            f.extend_from_slice(&v.to_le_bytes());
        }
    };
    phdr(&mut f, 3, 4, interp_off as u64, interp.len() as u64 + 1, 1); // PT_INTERP
    phdr(&mut f, 1, 5, 0, size as u64, 0x1000); // PT_LOAD, R+X
    f.extend_from_slice(interp.as_bytes());
    f.push(0);
    f.resize(entry_off, 0);
    f.extend_from_slice(&0x1400_0000u32.to_le_bytes()); // b .
    f
}

fn pt_interp_errors() -> TestResult {
    let prog = "/tmp/exec-dyn";
    t!(write_file(
        prog,
        &elf_with_interp("/tmp/exec-no-ld.so"),
        0o755
    ));
    check_eq!(t!(run(prog, &["dyn"])), Err(ENOENT), "missing interpreter");
    let ld = "/tmp/exec-fake-ld.so";
    // Longer than an ELF header: a shorter file fails the header's read (EIO) first.
    let text = b"not an ELF file at all, just some text\n".repeat(4);
    t!(write_file(ld, &text, 0o755));
    t!(write_file(prog, &elf_with_interp(ld), 0o755));
    check_eq!(
        t!(run(prog, &["dyn"])),
        Err(ELIBBAD),
        "a text file as interpreter"
    );
    let script = format!("#!{SELF}\n{}", "# padding\n".repeat(10));
    t!(write_file(ld, script.as_bytes(), 0o755));
    check_eq!(
        t!(run(prog, &["dyn"])),
        Err(ELIBBAD),
        "a script as interpreter"
    );
    t!(sys::unlinkat(AT_FDCWD, ld, 0));
    t!(sys::unlinkat(AT_FDCWD, prog, 0));
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1)
        .is_some_and(|s| s.starts_with("--echo-argv") || s.starts_with("/tmp/exec-"))
    {
        return echo_argv(a);
    }
    ktap::run(&[
        ("script_with_argument", script_with_argument),
        ("script_nesting_eloop", script_nesting_eloop),
        ("script_errors", script_errors),
        ("pt_interp_errors", pt_interp_errors),
    ])
}

entry!(main);
