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
