//! Packs Svelt's userland into a newc cpio initramfs (optionally gzip-compressed too), the same
//! archive for Svelt and for Linux in reference mode.
//!
//! ```text
//! mkinitramfs --out target/initramfs.cpio [--gzip target/initramfs.cpio.gz]
//!             --init FILE [--tree DIR] [--dir DEST]... [--add DEST=SRC]... [--add-exec DEST=SRC]...
//!             TEST...
//! ```
//!
//! Contents: `/init`, each TEST as `/bin/tests/<file name>` (mode 0755), every `--add` file at
//! DEST (mode 0644) and every `--add-exec` program at DEST (mode 0755; e.g. `bin/bench`, which
//! the test init must not run, so it stays out of `/bin/tests`), every `--dir` directory (mode
//! 0755, before the files; list parents first, as the unpackers create no directory implicitly),
//! the directories `/proc /sys /dev /tmp /etc /bin /bin/tests`, and the device nodes
//! `/dev/console` (char 5,1) and `/dev/null` (char 1,3) so that Linux gives the init a console.
//!
//! `--tree DIR` puts a whole file tree first (a Debian userland: directories, files with their
//! permission bits, symbolic links; device nodes and sockets are left out). The tree's top-level
//! links to directories are followed for what comes after it, so with Debian's `/bin -> usr/bin`
//! the tests land in `/usr/bin/tests` and are still found as `/bin/tests`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::exit;

use svelt_abi::boot::cpio::{Writer, S_IFCHR};

fn usage() -> ! {
    eprintln!(
        "usage: mkinitramfs --out FILE [--gzip FILE] --init FILE [--dir DEST]... \
         [--tree DIR] [--add DEST=SRC]... [--add-exec DEST=SRC]... TEST..."
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
    let mut tree: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--out" => out = Some(PathBuf::from(val())),
            "--gzip" => gz = Some(PathBuf::from(val())),
            "--init" => init = Some(PathBuf::from(val())),
            "--tree" => tree = Some(PathBuf::from(val())),
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
    let mut tree_top = TreeTop::default();
    if let Some(t) = &tree {
        tree_top = add_tree(&mut w, t);
    }
    for d in ["bin", "bin/tests", "dev", "etc", "proc", "sys", "tmp"] {
        if !tree_top.has(d) {
            w.dir(&tree_top.place(d), if d == "tmp" { 0o1777 } else { 0o755 });
        }
    }
    for d in &dirs {
        w.dir(&tree_top.place(d), 0o755);
    }
    w.device("dev/console", S_IFCHR, 0o600, 5, 1);
    w.device("dev/null", S_IFCHR, 0o666, 1, 3);
    w.file("init", 0o755, &read(&init));
    for t in &tests {
        let name = t
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_else(|| usage());
        w.file(
            &tree_top.place(&format!("bin/tests/{name}")),
            0o755,
            &read(t),
        );
    }
    for (dest, src, mode) in &adds {
        w.file(&tree_top.place(dest), *mode, &read(src));
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

/// What a `--tree` put at the top level: its directories, and its links to directories (with
/// their relative targets), which later names are resolved through.
#[derive(Default)]
struct TreeTop {
    dirs: Vec<String>,
    links: Vec<(String, String)>,
}

impl TreeTop {
    /// Whether the tree already has `name` as a top-level directory or a link to one.
    fn has(&self, name: &str) -> bool {
        self.dirs.iter().any(|d| d == name) || self.links.iter().any(|(l, _)| l == name)
    }

    /// `name` with a first component that is one of the tree's links replaced by its target.
    fn place(&self, name: &str) -> String {
        let (first, rest) = name.split_once('/').unwrap_or((name, ""));
        match self.links.iter().find(|(l, _)| l == first) {
            Some((_, target)) if !rest.is_empty() => format!("{target}/{rest}"),
            _ => name.to_string(),
        }
    }
}

/// Appends every directory, regular file and symbolic link under `root`, parents first, in
/// sorted order (so archives are reproducible).
fn add_tree<F: FnMut(&[u8])>(w: &mut Writer<F>, root: &Path) -> TreeTop {
    use std::os::unix::fs::PermissionsExt;
    let mut top = TreeTop::default();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| {
                eprintln!("mkinitramfs: {}: {e}", dir.display());
                exit(1)
            })
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        entries.sort();
        let mut subdirs = Vec::new();
        for n in entries {
            let r = rel.join(&n);
            let p = root.join(&r);
            let name = r.to_str().unwrap_or_else(|| {
                eprintln!("mkinitramfs: {}: not UTF-8", p.display());
                exit(1)
            });
            let md = std::fs::symlink_metadata(&p).unwrap_or_else(|e| {
                eprintln!("mkinitramfs: {}: {e}", p.display());
                exit(1)
            });
            let perm = md.permissions().mode() & 0o7777;
            let top_level = rel.as_os_str().is_empty();
            if md.is_dir() {
                w.dir(name, perm);
                if top_level {
                    top.dirs.push(name.to_string());
                }
                subdirs.push(r);
            } else if md.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap_or_default();
                let target = target.to_str().unwrap_or_default().to_string();
                if top_level && p.is_dir() && !target.starts_with('/') {
                    top.links.push((name.to_string(), target.clone()));
                }
                w.symlink(name, &target);
            } else if md.is_file() {
                w.file(name, perm, &read(&p));
            }
        }
        // Depth first, in sorted order: reversed onto the stack.
        stack.extend(subdirs.into_iter().rev());
    }
    top
}
