//! A short, deterministic fuzz run of every target in `fuzz_targets`, inside `cargo test`.
//!
//! Inputs are mutated from each target's seeds (built with the crate's own encoders) or are
//! plain random bytes, from a fixed-seed generator, so every run feeds the same inputs. The
//! default count keeps the whole file within a few seconds of debug build; set
//! `SVELT_FUZZ_ITERS=N` to feed each target N inputs instead. The long runs are cargo-fuzz's
//! (abi/fuzz/README.md).

#[allow(dead_code)]
mod fuzz_targets;

use fuzz_targets::util::Rng;
use fuzz_targets::{seeds, TARGETS};
use std::time::Instant;

/// Inputs per target by default.
const DEFAULT_ITERS: usize = 6000;

fn iters() -> usize {
    std::env::var("SVELT_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_ITERS)
}

/// One mutated input: a seed (or nothing) with a few random edits.
fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if seeds.is_empty() || rng.chance(8) {
        let n = rng.below(512);
        return (0..n).map(|_| rng.next() as u8).collect();
    }
    let mut v = seeds[rng.below(seeds.len())].clone();
    let edits = 1 + rng.below(8);
    for _ in 0..edits {
        let len = v.len();
        match rng.below(9) {
            // Flip a bit.
            0 | 1 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            // A random byte.
            2 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            // An interesting value over 1, 2, 4 or 8 bytes.
            3 | 4 if len > 0 => {
                let w = 1 << rng.below(4);
                let i = rng.below(len);
                let vals: [u64; 8] = [0, 1, 0x7f, 0x80, 0xff, 0x7fff_ffff, u64::MAX, 16];
                let x = vals[rng.below(vals.len())].to_le_bytes();
                for k in 0..w {
                    if i + k < len {
                        v[i + k] = x[k];
                    }
                }
            }
            // Truncate.
            5 if len > 0 => v.truncate(rng.below(len)),
            // Insert random bytes.
            6 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let ins: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(i..i, ins);
            }
            // Delete a range.
            7 if len > 0 => {
                let i = rng.below(len);
                let n = (1 + rng.below(16)).min(len - i);
                v.drain(i..i + n);
            }
            // Copy a range over another place.
            _ if len > 1 => {
                let a = rng.below(len);
                let b = rng.below(len);
                let n = (1 + rng.below(32)).min(len - a).min(len - b);
                let piece = v[a..a + n].to_vec();
                v[b..b + n].copy_from_slice(&piece);
            }
            _ => {}
        }
    }
    v
}

#[test]
fn fuzz_every_target() {
    let n = iters();
    let total = Instant::now();
    for &(name, target) in TARGETS {
        let start = Instant::now();
        let seeds = seeds(name);
        for s in &seeds {
            target(s);
        }
        let mut rng = Rng(0x5eed_0000 ^ name.len() as u64);
        for (i, b) in name.bytes().enumerate() {
            rng.0 ^= u64::from(b) << (8 * (i % 8));
        }
        for _ in 0..n {
            let input = mutate(&mut rng, &seeds);
            target(&input);
        }
        println!(
            "fuzz {name}: {} inputs ({} seeds) in {:.2?}",
            n + seeds.len(),
            seeds.len(),
            start.elapsed()
        );
    }
    println!("fuzz: {} targets in {:.2?}", TARGETS.len(), total.elapsed());
}

/// Every target has seeds and runs them clean. With `SVELT_FUZZ_WRITE_CORPUS=DIR` the seeds
/// are also written to `DIR/<target>/seed-<n>`, the starting corpora for cargo fuzz
/// (abi/fuzz/README.md).
#[test]
fn seeds_run_and_export() {
    let dir = std::env::var_os("SVELT_FUZZ_WRITE_CORPUS").map(std::path::PathBuf::from);
    for &(name, target) in TARGETS {
        let seeds = seeds(name);
        assert!(!seeds.is_empty(), "{name} has no seed");
        for (i, s) in seeds.iter().enumerate() {
            target(s);
            if let Some(d) = &dir {
                let d = d.join(name);
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join(format!("seed-{i}")), s).unwrap();
            }
        }
    }
}

/// Found by the `mount` target: `nr_blocks=` took any u64 page count and /proc/mounts printed
/// it as `size={pages * 4}k` unchecked, so `nr_blocks=1E` showed a size tmpfs refused and
/// `nr_blocks=0x4000000000000000` overflowed. Limits too big for a byte count in 64 bits are
/// now shown as `nr_blocks=`, and nr_blocks= above Linux's limit (a signed long) is refused.
#[test]
fn tmpfs_size_overflow_in_proc_mounts() {
    use svelt_abi::uapi::mount::{parse_tmpfs, write_tmpfs_opts};
    for text in ["nr_blocks=1E", "nr_blocks=0x4000000000000000", "size=16E"] {
        let o = parse_tmpfs(text, 1 << 18).unwrap();
        let mut shown = String::new();
        write_tmpfs_opts(&mut shown, 0, &o, 0).unwrap();
        let opts = shown.strip_prefix("rw,relatime,").unwrap();
        assert_eq!(
            parse_tmpfs(opts, 1 << 18),
            Ok(o),
            "{text}: /proc/mounts shows {shown}"
        );
    }
    assert!(parse_tmpfs("nr_blocks=0x8000000000000000", 1 << 18).is_err());
}

/// Found by the `uapi` target: clone_args of 76 bytes (any size from 64 up is a version of
/// the struct) whose set_tid_size is given in its first 4 bytes. Linux's
/// copy_struct_from_user keeps those bytes (set_tid_size = 1, a valid request);
/// `CloneArgs::from_clone3` read a field not wholly inside the buffer as 0 and refused it. The
/// reverse with a partial set_tid (64 < size < 72) and no size: Linux refuses, Svelt accepted.
#[test]
fn clone3_partial_field_is_kept() {
    use svelt_abi::uapi::sched::CloneArgs;
    let mut b = [0u8; 76];
    b[64..72].copy_from_slice(&0x7000_1000u64.to_le_bytes()); // set_tid
    b[72..76].copy_from_slice(&1u32.to_le_bytes()); // set_tid_size, low half
    let a = CloneArgs::from_clone3(&b).expect("Linux accepts this clone_args");
    assert_eq!((a.set_tid, a.set_tid_size), (0x7000_1000, 1));
    let mut c = [0u8; 68];
    c[64..68].copy_from_slice(&0x1000u32.to_le_bytes()); // set_tid, low half, no size
    assert!(
        CloneArgs::from_clone3(&c).is_err(),
        "Linux refuses set_tid without a size"
    );
}

/// Found by the `sigdeliver` target (libFuzzer, 334,742 inputs in): a frame delivered with
/// every signal blocked came back from sigreturn without SIGKILL and SIGSTOP, as Linux's
/// sigreturn installs it, but the target expected the mask unchanged. The oracle was wrong,
/// not the parser; this input keeps it right.
#[test]
fn sigdeliver_mask_comes_back_without_kill_and_stop() {
    fuzz_targets::sigframe::sigdeliver(include_bytes!(
        "fuzz_regressions/sigdeliver-blocked-kill-stop"
    ));
}
