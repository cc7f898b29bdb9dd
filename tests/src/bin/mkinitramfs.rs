//! Packs Svelt's userland into a newc cpio initramfs (optionally gzip-compressed too), the same
//! archive for Svelt and for Linux in reference mode.
//!
//! ```text
//! mkinitramfs --out target/initramfs.cpio [--gzip target/initramfs.cpio.gz]
//!             --init FILE [--dir DEST]... [--add DEST=SRC]... [--add-exec DEST=SRC]... TEST...
//! ```
//!
//! Contents: `/init`, each TEST as `/bin/tests/<file name>` (mode 0755), every `--add` file at
//! DEST (mode 0644) and every `--add-exec` program at DEST (mode 0755; e.g. `bin/bench`, which
//! the test init must not run, so it stays out of `/bin/tests`), every `--dir` directory (mode
//! 0755, before the files; list parents first, as the unpackers create no directory implicitly),
//! the directories `/proc /sys /dev /tmp /etc /bin /bin/tests`, and the device nodes
//! `/dev/console` (char 5,1) and `/dev/null` (char 1,3) so that Linux gives the init a console.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::exit;

use svelt_abi::cpio::{Writer, S_IFCHR};

fn usage() -> ! {
    eprintln!(
        "usage: mkinitramfs --out FILE [--gzip FILE] --init FILE [--dir DEST]... \
         [--add DEST=SRC]... [--add-exec DEST=SRC]... TEST..."
    );
    exit(2)
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| {
        eprintln!("mkinitramfs: {}: {e}", p.display());
        exit(1)
    })
}

fn main() {
    let mut out = None;
    let mut gz = None;
    let mut init = None;
    let mut adds: Vec<(String, PathBuf, u32)> = Vec::new();
    let mut tests: Vec<PathBuf> = Vec::new();
    let mut dirs: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(val())),
            "--gzip" => gz = Some(PathBuf::from(val())),
            "--init" => init = Some(PathBuf::from(val())),
            "--dir" => dirs.push(val().trim_matches('/').to_string()),
            "--add" | "--add-exec" => {
                let mode = if a == "--add" { 0o644 } else { 0o755 };
                let v = val();
                let (d, s) = v.split_once('=').unwrap_or_else(|| usage());
                adds.push((
                    d.trim_start_matches('/').to_string(),
                    PathBuf::from(s),
                    mode,
                ));
            }
            "-h" | "--help" => usage(),
            _ if a.starts_with("--") => usage(),
            _ => tests.push(PathBuf::from(a)),
        }
    }
    let (Some(out), Some(init)) = (out, init) else {
        usage()
    };
    tests.sort_by_key(|p| p.file_name().map(|n| n.to_os_string()));

    let mut archive = Vec::new();
    let mut w = Writer::new(|b: &[u8]| archive.extend_from_slice(b));
    for d in ["bin", "bin/tests", "dev", "etc", "proc", "sys", "tmp"] {
        w.dir(d, if d == "tmp" { 0o1777 } else { 0o755 });
    }
    for d in &dirs {
        w.dir(d, 0o755);
    }
    w.device("dev/console", S_IFCHR, 0o600, 5, 1);
    w.device("dev/null", S_IFCHR, 0o666, 1, 3);
    w.file("init", 0o755, &read(&init));
    for t in &tests {
        let name = t
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_else(|| usage());
        w.file(&format!("bin/tests/{name}"), 0o755, &read(t));
    }
    for (dest, src, mode) in &adds {
        w.file(dest, *mode, &read(src));
    }
    let _sink = w.finish();

    let write = |p: &Path, data: &[u8]| {
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(p, data).unwrap_or_else(|e| {
            eprintln!("mkinitramfs: {}: {e}", p.display());
            exit(1)
        });
    };
    write(&out, &archive);
    if let Some(gz) = gz {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&archive).unwrap();
        write(&gz, &e.finish().unwrap());
    }
}
