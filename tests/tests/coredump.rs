//! Svelt's core files read by a real debugger: /bin/tests/coredump_gdb (user/src/bin/
//! coredump_gdb.rs) makes a child fill Z0, P0 and ZA with fixed patterns and die of `brk`;
//! `--core-dir` has Svelt write the core onto the host too (semihosting), and Debian's
//! gdb-multiarch reads it in batch mode: pc and the general registers (NT_PRSTATUS), VG, Z0, P0
//! and ZA (NT_ARM_SVE, NT_ARM_ZA).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use svelt_tests::{boot, Config, Initrd};

const Z0_LANE: &str = "0x123456789abcdef";

/// What the boot left: the core's host path and the facts the guest printed.
struct Dumped {
    core: PathBuf,
    vl: u64,
    svl: u64,
    pc: u64,
}

fn gdb_path() -> Option<&'static str> {
    static GDB: OnceLock<Option<&'static str>> = OnceLock::new();
    *GDB.get_or_init(|| {
        let have = || {
            Command::new("gdb-multiarch")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if have() {
            return Some("gdb-multiarch");
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        if root {
            let _ = Command::new("apt-get").args(["update", "-qq"]).status();
            let _ = Command::new("apt-get")
                .args(["install", "-y", "--no-install-recommends", "gdb-multiarch"])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status();
        }
        have().then_some("gdb-multiarch")
    })
}

fn dumped() -> &'static Dumped {
    static D: OnceLock<Dumped> = OnceLock::new();
    D.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("svelt-cores-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("core directory");
        let run = boot(&Config {
            initrd: Initrd::Default,
            init: Some("/bin/tests/coredump_gdb".into()),
            core_dir: Some(dir.clone()),
            ..Config::default()
        });
        assert_eq!(run.status, Some(0), "coredump_gdb failed:\n{}", run.output);
        let line = run
            .output
            .lines()
            .find_map(|l| l.strip_prefix("# coredump_gdb: "))
            .unwrap_or_else(|| panic!("no '# coredump_gdb:' line in:\n{}", run.output));
        let field = |k: &str| -> u64 {
            let v = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .unwrap_or_else(|| panic!("no {k} in {line:?}"));
            match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).unwrap(),
                None => v.parse().unwrap(),
            }
        };
        let core = dir.join(format!("core.coredump_gdb.{}", field("pid=")));
        assert!(core.is_file(), "no host copy {}", core.display());
        Dumped {
            core,
            vl: field("vl="),
            svl: field("svl="),
            pc: field("pc="),
        }
    })
}

/// gdb's answers to `cmds` on the core, one output block per command (a `echo @@\n` between).
fn gdb(cmds: &[&str]) -> Option<Vec<String>> {
    let Some(gdb) = gdb_path() else {
        eprintln!("SKIP: gdb-multiarch is missing and could not be installed (apt-get, as root)");
        return None;
    };
    let d = dumped();
    let mut args: Vec<String> = vec![
        "-batch".into(),
        "-nx".into(),
        "-ex".into(),
        "set architecture aarch64".into(),
        "-ex".into(),
        format!("core-file {}", d.core.display()),
    ];
    for c in cmds {
        args.extend([
            "-ex".into(),
            "echo @@\\n".into(),
            "-ex".into(),
            c.to_string(),
        ]);
    }
    let o = Command::new(gdb).args(&args).output().expect("run gdb");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    let blocks: Vec<String> = out.split("@@\n").skip(1).map(str::to_string).collect();
    assert_eq!(blocks.len(), cmds.len(), "gdb output:\n{out}\n{err}");
    Some(blocks)
}

/// gdb's major version (0 if unknown).
fn gdb_major() -> u32 {
    let o = Command::new(gdb_path().unwrap_or("gdb-multiarch"))
        .arg("--version")
        .output();
    let text = o
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    // "GNU gdb (Debian 13.1-3) 13.1"
    text.lines()
        .next()
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Every 0x number in `s`.
fn hex_values(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.starts_with("0x"))
        .map(str::to_string)
        .collect()
}

#[test]
fn gdb_reads_pc_and_registers() {
    let Some(b) = gdb(&["p/x $pc", "info registers"]) else {
        return;
    };
    let d = dumped();
    assert!(
        b[0].trim() == format!("$1 = {:#x}", d.pc),
        "p/x $pc: {:?}, want {:#x}",
        b[0],
        d.pc
    );
    for r in ["x0 ", "x30 ", "sp ", "pc ", "cpsr "] {
        assert!(
            b[1].lines().any(|l| l.starts_with(r)),
            "info registers lacks {r:?}:\n{}",
            b[1]
        );
    }
    let pc_line = b[1].lines().find(|l| l.starts_with("pc ")).unwrap();
    assert!(
        pc_line.contains(&format!("{:#x}", d.pc)),
        "info registers: {pc_line:?}"
    );
}

#[test]
fn gdb_reads_sve_and_za() {
    let Some(b) = gdb(&["p $vg", "p/x $z0.d.u", "p/x $p0", "p/x $z1.d.u", "p/x $za"]) else {
        return;
    };
    let d = dumped();
    assert_eq!(
        b[0].trim(),
        format!("$1 = {}", d.vl / 8),
        "p $vg (VL {} bytes)",
        d.vl
    );
    let z0 = hex_values(&b[1]);
    assert!(
        !z0.is_empty() && z0.iter().all(|v| v == Z0_LANE),
        "p/x $z0.d.u: {:?}",
        b[1]
    );
    let p0 = hex_values(&b[2]);
    assert!(
        !p0.is_empty() && p0.iter().all(|v| v == "0x55"),
        "p/x $p0: {:?}",
        b[2]
    );
    let z1 = hex_values(&b[3]);
    assert!(
        !z1.is_empty() && z1.iter().all(|v| v == "0x0"),
        "p/x $z1.d.u: {:?}",
        b[3]
    );
    // ZA in cores came with GDB 14; older ones (Debian 12's 13.1) print `void`.
    if d.svl > 0 && gdb_major() < 14 && b[4].trim().ends_with("void") {
        eprintln!("SKIP (ZA only): gdb {} predates SME support", gdb_major());
    } else if d.svl > 0 {
        let za = hex_values(&b[4]);
        assert!(
            !za.is_empty() && za.iter().all(|v| v == "0x5a"),
            "p/x $za: {:?}",
            b[4]
        );
    }
}

/// The notes of an ELF64 little-endian core: (name, type, descriptor).
fn notes(core: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
    let u16_at = |o: usize| u16::from_le_bytes(core[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(core[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(core[o..o + 8].try_into().unwrap()) as usize;
    assert_eq!(&core[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(u16_at(16), 4, "e_type is not ET_CORE");
    let (phoff, phentsize, phnum) = (u64_at(32), u16_at(54), u16_at(56));
    let mut out = Vec::new();
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        if u32_at(ph) != 4 {
            continue; // not PT_NOTE
        }
        let (off, size) = (u64_at(ph + 8), u64_at(ph + 32));
        let mut p = off;
        while p + 12 <= off + size {
            let (namesz, descsz, ty) = (u32_at(p) as usize, u32_at(p + 4) as usize, u32_at(p + 8));
            let name = &core[p + 12..p + 12 + namesz];
            let name =
                String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name)).into_owned();
            let d = p + 12 + namesz.next_multiple_of(4);
            out.push((name, ty, core[d..d + descsz].to_vec()));
            p = d + descsz.next_multiple_of(4);
        }
    }
    out
}

/// What gdb 13 cannot show: the NT_ARM_ZA note itself holds the pattern the program put in ZA
/// (user_za_header with the streaming VL, then SVL rows of 0x5a), and NT_ARM_SVE its Z0.
#[test]
fn za_and_sve_notes_hold_the_patterns() {
    let d = dumped();
    let core = std::fs::read(&d.core).expect("read the core");
    let notes = notes(&core);
    let find = |ty: u32| {
        notes
            .iter()
            .find(|(n, t, _)| n == "LINUX" && *t == ty)
            .map(|(_, _, b)| b.clone())
    };
    let sve = find(0x405).expect("no NT_ARM_SVE note");
    let vl = u16::from_le_bytes([sve[8], sve[9]]) as u64;
    assert_eq!(vl, d.vl, "NT_ARM_SVE vl");
    assert_eq!(sve[12] & 1, 1, "NT_ARM_SVE flags: SVE_PT_REGS_SVE");
    let z0 = &sve[16..16 + vl as usize];
    let lane = u64::from_str_radix(Z0_LANE.trim_start_matches("0x"), 16).unwrap();
    assert!(
        z0.chunks(8)
            .all(|c| u64::from_le_bytes(c.try_into().unwrap()) == lane),
        "Z0 in NT_ARM_SVE: {z0:02x?}"
    );
    if d.svl == 0 {
        eprintln!("SKIP (ZA): no SME");
        return;
    }
    let za = find(0x40c).expect("no NT_ARM_ZA note");
    let svl = u16::from_le_bytes([za[8], za[9]]) as u64;
    let size = u32::from_le_bytes(za[0..4].try_into().unwrap()) as u64;
    assert_eq!(svl, d.svl, "NT_ARM_ZA vl");
    assert_eq!(size, 16 + svl * svl, "NT_ARM_ZA size (ZA on)");
    let rows = &za[16..(16 + svl * svl) as usize];
    assert!(rows.iter().all(|b| *b == 0x5a), "ZA rows not all 0x5a");
}
