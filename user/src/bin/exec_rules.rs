//! The ELF loader's rules, as Linux's load_elf_binary applies them: which defects execve refuses
//! (ENOEXEC, EIO) before the old program is gone, and which ones it only meets while mapping the
//! new one, past the point of no return, where the process is killed by SIGSEGV. Each case writes
//! a hand-made image (svelt_user::elfimg) to /tmp, execs it in a forked child and checks how the
//! child ended.
#![no_std]
#![no_main]

use svelt_abi::format::elf::*;
use svelt_user::elfimg::{self, Outcome};
use svelt_user::ktap::TestResult;
use svelt_user::*;

const ENOEXEC: i32 = 8;
const EIO: i32 = 5;
const SIGBUS: i32 = 7;
const SIGSEGV: i32 = 11;
const OK: Outcome = Outcome::Exit(elfimg::EXIT_OK as i32);
const TIMEOUT_NS: u64 = 5_000_000_000;

/// Runs the static image (and the PIE one) edited by `f`, expecting `want` from both.
fn expect(name: &str, f: &dyn Fn(&mut Vec<u8>), want: Outcome) -> TestResult {
    for pie in [false, true] {
        let mut b = elfimg::image(pie);
        f(&mut b);
        let path = format!("/tmp/exec-rules-{name}");
        t!(elfimg::write_exe(&path, &b));
        let got = elfimg::run(&path, TIMEOUT_NS)?;
        let _ = sys::unlinkat(sys::AT_FDCWD, &path, 0);
        if got != want {
            return Err(format!(
                "{name} ({}): got {got}, want {want}",
                if pie { "PIE" } else { "static" }
            ));
        }
    }
    Ok(())
}

fn base(b: &[u8]) -> u64 {
    elfimg::phdr(b, elfimg::PH_TEXT).p_vaddr
}

fn ordinary_images_run() -> TestResult {
    expect("plain", &|_| {}, OK)?;
    // No PT_GNU_PROPERTY at all, and an empty property list.
    expect(
        "no-property",
        &|b| elfimg::edit_phdr(b, elfimg::PH_PROP, |p| p.p_type = PT_NULL),
        OK,
    )?;
    expect(
        "empty-property-list",
        &|b| set_note(b, &elfimg::property_note(&[])),
        OK,
    )
}

fn script_runs_its_interpreter() -> TestResult {
    let interp = "/tmp/exec-rules-interp";
    t!(elfimg::write_exe(interp, &elfimg::image(false)));
    let s = "/tmp/exec-rules-script";
    t!(elfimg::write_exe(s, format!("#!{interp}\n").as_bytes()));
    check_eq!(elfimg::run(s, TIMEOUT_NS)?, OK);
    // A script whose interpreter the ELF loader refuses gets that refusal.
    let mut bad = elfimg::image(false);
    elfimg::edit_phdr(&mut bad, elfimg::PH_SPARE, |p| {
        p.p_type = PT_INTERP;
        p.p_offset = 0x10_0000;
        p.p_filesz = 8;
    });
    t!(elfimg::write_exe(interp, &bad));
    check_eq!(elfimg::run(s, TIMEOUT_NS)?, Outcome::Errno(EIO));
    let _ = sys::unlinkat(sys::AT_FDCWD, s, 0);
    let _ = sys::unlinkat(sys::AT_FDCWD, interp, 0);
    Ok(())
}

/// Later PT_LOAD segments are mapped over earlier ones (MAP_FIXED).
fn overlapping_segments_map_over_each_other() -> TestResult {
    // A second copy of the text segment over the first: runs.
    expect(
        "same-text-twice",
        &|b| {
            let text = elfimg::phdr(b, elfimg::PH_TEXT);
            elfimg::set_phdr(b, elfimg::PH_SPARE, &text);
        },
        OK,
    )?;
    // A writable, not executable, segment over the text page, mapped after it: the entry
    // point is no longer executable.
    expect(
        "rw-over-text",
        &|b| {
            let mut text = elfimg::phdr(b, elfimg::PH_TEXT);
            text.p_flags = PF_R | PF_W;
            elfimg::set_phdr(b, elfimg::PH_SPARE, &text);
        },
        Outcome::Sig(SIGSEGV),
    )?;
    // Out of p_vaddr order (data before text in the table): still runs.
    expect(
        "unsorted",
        &|b| {
            let (t, d) = (
                elfimg::phdr(b, elfimg::PH_TEXT),
                elfimg::phdr(b, elfimg::PH_DATA),
            );
            elfimg::set_phdr(b, elfimg::PH_TEXT, &d);
            elfimg::set_phdr(b, elfimg::PH_DATA, &t);
        },
        OK,
    )
}

/// p_filesz past the end of the file maps pages past EOF: harmless until touched (SIGBUS).
fn filesz_past_eof() -> TestResult {
    expect(
        "text-past-eof",
        &|b| {
            elfimg::edit_phdr(b, elfimg::PH_TEXT, |p| {
                p.p_filesz = 0x10000;
                p.p_memsz = 0x10000;
            })
        },
        OK,
    )?;
    // The data segment's file pages now cover the bss page the program stores to.
    expect(
        "data-past-eof",
        &|b| {
            elfimg::edit_phdr(b, elfimg::PH_DATA, |p| {
                p.p_filesz = elfimg::BSS_LEN;
            })
        },
        Outcome::Sig(SIGBUS),
    )
}

fn set_note(b: &mut Vec<u8>, note: &[u8]) {
    b.truncate(elfimg::FILE_LEN);
    b.resize(elfimg::NOTE, 0);
    b.extend_from_slice(note);
    let len = note.len() as u64;
    elfimg::edit_phdr(b, elfimg::PH_PROP, |p| {
        p.p_filesz = len;
        p.p_memsz = len;
    });
    elfimg::edit_phdr(b, elfimg::PH_TEXT, |p| {
        p.p_filesz = p.p_filesz.max(elfimg::NOTE as u64 + len);
        p.p_memsz = p.p_filesz;
    });
}

/// parse_elf_properties and the arm64 property rules.
fn malformed_gnu_property_is_refused() -> TestResult {
    use elfimg::{property, property_note, GNU_PROPERTY_AARCH64_FEATURE_1_AND as AND};
    let note = |b: &mut Vec<u8>, n: Vec<u8>| set_note(b, &n);
    let noexec = Outcome::Errno(ENOEXEC);
    expect(
        "prop-bad-type",
        &|b| {
            let mut n = property_note(&property(AND, &[0; 4]));
            n[8] = 1;
            note(b, n)
        },
        noexec,
    )?;
    expect(
        "prop-bad-name",
        &|b| {
            let mut n = property_note(&property(AND, &[0; 4]));
            n[14] = b'X';
            note(b, n)
        },
        noexec,
    )?;
    expect(
        "prop-bad-namesz",
        &|b| {
            let mut n = property_note(&property(AND, &[0; 4]));
            n[0] = 8;
            note(b, n)
        },
        noexec,
    )?;
    expect(
        "prop-descsz-too-big",
        &|b| {
            let mut n = property_note(&property(AND, &[0; 4]));
            n[4] = 0x20;
            note(b, n)
        },
        noexec,
    )?;
    expect(
        "prop-and-wrong-size",
        &|b| note(b, property_note(&property(AND, &[0; 8]))),
        noexec,
    )?;
    expect(
        "prop-datasz-overruns",
        &|b| {
            let mut n = property_note(&property(AND, &[0; 4]));
            n[20] = 12;
            note(b, n)
        },
        noexec,
    )?;
    expect(
        "prop-short-header",
        &|b| {
            let mut n = property_note(&[0; 4]);
            n[4] = 4;
            note(b, n)
        },
        noexec,
    )?;
    let mut two = property(AND, &[0; 4]);
    two.extend(property(0xc000_0001, &[0; 4]));
    expect("prop-sorted", &|b| note(b, property_note(&two)), OK)?;
    let mut unsorted = property(0xc000_0001, &[0; 4]);
    unsorted.extend(property(AND, &[0; 4]));
    expect(
        "prop-unsorted",
        &|b| note(b, property_note(&unsorted)),
        noexec,
    )?;
    let mut dup = property(AND, &[0; 4]);
    dup.extend(property(AND, &[0; 4]));
    expect("prop-duplicate", &|b| note(b, property_note(&dup)), noexec)?;
    // Types the kernel does not know are skipped, whatever their size.
    expect(
        "prop-unknown",
        &|b| note(b, property_note(&property(5, &[1; 12]))),
        OK,
    )?;
    // Over 1 KiB: refused; shorter than a note header and name, or not in the file: EIO.
    expect(
        "prop-too-long",
        &|b| {
            let mut n = property_note(&property(0x1234, &[0; 1024]));
            n.truncate(1025);
            note(b, n)
        },
        noexec,
    )?;
    expect(
        "prop-too-short",
        &|b| elfimg::edit_phdr(b, elfimg::PH_PROP, |p| p.p_filesz = 15),
        Outcome::Errno(EIO),
    )?;
    expect(
        "prop-outside-file",
        &|b| elfimg::edit_phdr(b, elfimg::PH_PROP, |p| p.p_offset = 0x10_0000),
        Outcome::Errno(EIO),
    )
}

/// Defects found while mapping, after the old program is gone: SIGSEGV.
fn mapping_failures_kill_with_sigsegv() -> TestResult {
    let segv = Outcome::Sig(SIGSEGV);
    expect(
        "huge-memsz",
        &|b| elfimg::edit_phdr(b, elfimg::PH_DATA, |p| p.p_memsz = 1 << 60),
        segv,
    )?;
    expect(
        "noncanonical-vaddr",
        &|b| {
            let v = base(b) | 0x8000_0000_0000_0000;
            elfimg::edit_phdr(b, elfimg::PH_DATA, |p| p.p_vaddr = v + elfimg::DATA_VADDR)
        },
        segv,
    )?;
    expect(
        "filesz-over-memsz",
        &|b| elfimg::edit_phdr(b, elfimg::PH_DATA, |p| p.p_memsz = 4),
        segv,
    )?;
    expect(
        "incongruent-offset",
        &|b| elfimg::edit_phdr(b, elfimg::PH_DATA, |p| p.p_offset += 8),
        segv,
    )?;
    // Nothing to load: the entry point is not mapped.
    expect(
        "no-load-segment",
        &|b| {
            elfimg::edit_phdr(b, elfimg::PH_TEXT, |p| p.p_type = PT_NULL);
            elfimg::edit_phdr(b, elfimg::PH_DATA, |p| p.p_type = PT_NULL);
        },
        segv,
    )
}

fn interp_outside_file_is_eio() -> TestResult {
    let interp = |off: u64, len: u64| {
        move |b: &mut Vec<u8>| {
            elfimg::edit_phdr(b, elfimg::PH_SPARE, |p: &mut Phdr| {
                p.p_type = PT_INTERP;
                p.p_offset = off;
                p.p_filesz = len;
            })
        }
    };
    expect("interp-outside", &interp(0x10_0000, 8), Outcome::Errno(EIO))?;
    expect(
        "interp-straddles-eof",
        &interp(elfimg::FILE_LEN as u64 - 4, 8),
        Outcome::Errno(EIO),
    )?;
    expect("interp-too-short", &interp(0, 1), Outcome::Errno(ENOEXEC))
}

fn header_checks() -> TestResult {
    let noexec = Outcome::Errno(ENOEXEC);
    expect("bad-magic", &|b| b[1] = b'X', noexec)?;
    expect("bad-machine", &|b| elfimg::put_u16(b, 18, 62), noexec)?;
    expect("bad-type", &|b| elfimg::put_u16(b, 16, ET_CORE), noexec)?;
    expect("bad-phentsize", &|b| elfimg::put_u16(b, 54, 32), noexec)?;
    // Up to 64 KiB of program headers.
    expect(
        "many-phdrs",
        &|b| {
            b.resize(0x12000, 0);
            elfimg::put_u16(b, 56, 1170)
        },
        OK,
    )?;
    expect(
        "too-many-phdrs",
        &|b| {
            b.resize(0x12000, 0);
            elfimg::put_u16(b, 56, 1171)
        },
        noexec,
    )?;
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("ordinary_images_run", ordinary_images_run),
        ("script_runs_its_interpreter", script_runs_its_interpreter),
        (
            "overlapping_segments_map_over_each_other",
            overlapping_segments_map_over_each_other,
        ),
        ("filesz_past_eof", filesz_past_eof),
        (
            "malformed_gnu_property_is_refused",
            malformed_gnu_property_is_refused,
        ),
        (
            "mapping_failures_kill_with_sigsegv",
            mapping_failures_kill_with_sigsegv,
        ),
        ("interp_outside_file_is_eio", interp_outside_file_is_eio),
        ("header_checks", header_checks),
    ])
}

entry!(main);
