//! The comparison of two benchmark runs that `./qemu-run.sh --compare` prints and writes:
//!
//! ```text
//! benchcmp --a LABEL=LOG --b LABEL=LOG --out DIR [--qemu LINE] [--flags FLAGS]
//! ```
//!
//! Prints the table (case, A, B, ratio B/A) and writes DIR/compare.csv, DIR/compare.md (with the
//! QEMU version, the flags and both kernels in its header) and DIR/vl.gp, a gnuplot script that
//! draws DIR/vl.png (the cases measured at several vector lengths, both runs).

use std::path::PathBuf;
use std::process::exit;

use svelt_tests::bench;

fn usage() -> ! {
    eprintln!(
        "usage: benchcmp --a LABEL=LOG --b LABEL=LOG --out DIR [--qemu LINE] [--flags FLAGS]"
    );
    exit(2)
}

fn run(spec: &str) -> (String, bench::Run) {
    // The label may hold `=` (`Svelt svelt.fp=eager`): the path follows the last one.
    let (label, path) = spec.rsplit_once('=').unwrap_or_else(|| usage());
    let log = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("benchcmp: {path}: {e}");
        exit(1)
    });
    (
        label.to_string(),
        bench::parse(&String::from_utf8_lossy(&log)),
    )
}

fn write(path: &PathBuf, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| {
        eprintln!("benchcmp: {}: {e}", path.display());
        exit(1)
    });
}

fn main() {
    let (mut a, mut b, mut out, mut qemu, mut flags) = (None, None, None, String::new(), None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--a" => a = Some(run(&val())),
            "--b" => b = Some(run(&val())),
            "--out" => out = Some(PathBuf::from(val())),
            "--qemu" => qemu = val(),
            "--flags" => flags = Some(val()),
            _ => usage(),
        }
    }
    let (Some((al, ar)), Some((bl, br)), Some(out)) = (a, b, out) else {
        usage()
    };
    let rows = bench::compare(&ar, &br);
    print!("{}", bench::text(&rows, &al, &bl));
    let flags = match flags.as_deref() {
        Some("") | None => "(defaults)".to_string(),
        Some(f) => format!("`{f}`"),
    };
    let kernel = |r: &bench::Run| {
        let k = if r.kernel.is_empty() {
            "(no kernel line: the run broke?)".to_string()
        } else {
            r.kernel.clone()
        };
        if r.policy.is_empty() {
            k
        } else {
            format!("{k}, fp policy {}", r.policy)
        }
    };
    for (l, r) in [(&al, &ar), (&bl, &br)] {
        if !r.policy.is_empty() {
            println!("{l}: fp policy {}", r.policy);
        }
    }
    let header = [
        "Guest instructions per operation (best of 7 runs) under `-icount shift=0,sleep=off`; \
         lower is better."
            .to_string(),
        format!("QEMU: {qemu}"),
        format!("flags: `./qemu-run.sh --bench` {flags}"),
        format!("{al}: {}", kernel(&ar)),
        format!("{bl}: {}", kernel(&br)),
    ];
    write(&out.join("compare.csv"), &bench::csv(&rows, &al, &bl));
    write(
        &out.join("compare.md"),
        &bench::markdown(&rows, &al, &bl, &header),
    );
    let png = out.join("vl.png");
    let title = format!("cost against vector length: {al} (dashed) and {bl} (solid); {qemu}");
    write(
        &out.join("vl.gp"),
        &bench::gnuplot(&[(&al, &ar), (&bl, &br)], &png.to_string_lossy(), &title),
    );
}
