//! The /init of the small initramfs that `./qemu-run.sh --guest linux` gives a Linux guest of the
//! VMM (user/src/bin/vmm.rs): prints what the guest kernel offers this process (uname, the
//! online CPUs, the SVE and SME vector lengths from the prctls and
//! /proc/sys/abi/*_default_vector_length), then `vmm-guest: exit status 0`, and powers off.
//! Not one of /bin/tests: qemu-run.sh keeps it out of the host's test userland.
#![no_std]
#![no_main]

use svelt_user::sme;
use svelt_user::sys;
use svelt_user::*;

fn field(f: &[u8]) -> &str {
    sys::field_str(f)
}

fn default_vl(path: &str) -> String {
    match svelt_user::io::read_file(path) {
        Ok(t) => String::from(core::str::from_utf8(&t).unwrap_or("?").trim()),
        Err(e) => format!("{e:?}"),
    }
}

fn main(_a: &rt::Args) -> i32 {
    svelt_user::io::ensure_console();
    svelt_user::proc::mount_when_init();
    let u = sys::uname();
    println!(
        "vmm-guest: uname {} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    );
    let cpus = sys::sched_getaffinity(0).map(u64::count_ones).unwrap_or(0);
    println!("vmm-guest: cpus {cpus}");
    if sme::has_sve() {
        let vls = svelt_user::sve::supported_vls().unwrap_or_default();
        let max = vls.last().copied().unwrap_or(0);
        println!(
            "vmm-guest: sve vls {vls:?} max {max} default {}",
            default_vl("/proc/sys/abi/sve_default_vector_length")
        );
    } else {
        println!("vmm-guest: sve none");
    }
    if sme::has_sme() {
        let vls = sme::sme_vls();
        let max = vls.last().copied().unwrap_or(0);
        println!(
            "vmm-guest: sme vls {vls:?} max {max} default {} fa64 {} sme2 {}",
            default_vl("/proc/sys/abi/sme_default_vector_length"),
            sme::has_fa64() as u8,
            sme::has_sme2() as u8
        );
    } else {
        println!("vmm-guest: sme none");
    }
    println!("vmm-guest: exit status 0");
    sys::sync();
    let _ = sys::reboot(sys::LINUX_REBOOT_CMD_POWER_OFF);
    0
}

entry!(main);
