//! A child fills Z0, P0 and ZA with fixed patterns and dies of `brk` (SIGTRAP, which
//! dumps core): the wait status must carry the core bit and `core` must be an ELF core. The host
//! test tests/tests/coredump.rs boots this program with `--core-dir` and reads the host's copy
//! of the core with gdb: Z0's 64-bit lanes are 0x0123456789abcdef, P0's bytes 0x55, FFR all
//! ones, ZA's bytes 0x5a, the other Z/P registers zero, pc at the `brk`.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, Ordering};
use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sme;
use svelt_user::sys::*;
use svelt_user::*;

const DIR: &str = "/coredump_gdb.d";
const RLIMIT_CORE: u32 = 4;
pub const Z0_LANE: u64 = 0x0123_4567_89ab_cdef;
pub const P0_BYTE: u8 = 0x55;
pub const ZA_BYTE: u8 = 0x5a;
static MOUNTED: AtomicBool = AtomicBool::new(false);

fn crash_with_patterns() -> TestResult {
    if !sme::has_sve() {
        return skip("no SVE");
    }
    // The register-filling routine (sme::run) reads SVCR, SVL and TPIDR2: SME instructions.
    if !sme::has_sme() {
        return skip("no SME (the pattern routine uses SME instructions)");
    }
    match sys::mkdirat(AT_FDCWD, DIR, 0o755) {
        Ok(_) | Err(EEXIST) => {}
        Err(e) => return Err(format!("mkdir {DIR}: {e:?}")),
    }
    if !MOUNTED.swap(true, Ordering::Relaxed) {
        t!(sys::mount("none", DIR, "tmpfs", 0));
    }
    let core_path = format!("{DIR}/core");
    let _ = sys::unlinkat(AT_FDCWD, &core_path, 0);
    let vl = sme::sve_vl();
    let svl = sme::svl();
    let mut z = vec![0u8; sme::z_image_len(vl)];
    for lane in z[..vl].chunks_mut(8) {
        lane.copy_from_slice(&Z0_LANE.to_le_bytes());
    }
    z[32 * vl..32 * vl + vl / 8].fill(P0_BYTE);
    z[sme::ffr_off(vl)..].fill(0xff);
    let za = vec![ZA_BYTE; svl * svl];
    let pid = t!(spawn(|| {
        let lim = Rlimit {
            cur: RLIM_INFINITY,
            max: RLIM_INFINITY,
        };
        if sys::setrlimit(RLIMIT_CORE, &lim).is_err() || sys::chdir(DIR).is_err() {
            return 100;
        }
        let mut op = sme::Op {
            z_in: z.as_ptr() as usize,
            action: sme::A_BRK,
            flags: sme::F_ZA | sme::F_KEEP_ZA,
            za_in: za.as_ptr() as usize,
            ..Default::default()
        };
        // No SIGTRAP handler: the brk kills the child, which dumps core.
        sme::run(&mut op);
        101
    }));
    let (st, timed_out) = t!(wait_bounded(pid, 60_000_000_000));
    check!(!timed_out, "the child did not end within 60 s");
    check!(
        wifsignaled(st) && wtermsig(st) == SIGTRAP && wcoredump(st),
        "status: {}, want killed by SIGTRAP with a core",
        describe(st)
    );
    let fd = t!(sys::open(&core_path, O_RDONLY | O_CLOEXEC));
    let mut eh = [0u8; 20];
    let n = sys::pread(fd, &mut eh, 0);
    let _ = sys::close(fd);
    check_eq!(n, Ok(20), "ELF header read");
    check_eq!(&eh[..4], b"\x7fELF", "ELF magic");
    check_eq!(u16::from_le_bytes([eh[16], eh[17]]), 4, "e_type (ET_CORE)");
    // For the host test: what gdb should find in the host's copy.
    println!(
        "# coredump_gdb: pid={pid} vl={vl} svl={svl} pc={:#x}",
        sme::brk_addr()
    );
    t!(sys::unlinkat(AT_FDCWD, &core_path, 0));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[("crash_with_z_p_za_patterns", crash_with_patterns)])
}

entry!(main);
