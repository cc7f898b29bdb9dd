//! Debian's QEMU (trixie's qemu-system-aarch64 10.0) as the VMM on `/dev/kvm`, with
//! `./qemu-run.sh --guest qemu`: `-accel kvm -cpu host` booting Debian's Linux 7.3.4 with the
//! small guest init of user/src/bin/guest_init.rs (it prints its kernel, its CPUs and its SVE
//! lengths and powers off), under Svelt's KVM and under Linux 7.3.4's (reference mode) as the
//! check of the test. The machine is `virt,gic-version=3`: QEMU's `virt` with KVM's in-kernel
//! vGICv3 and its in-kernel ITS (docs/kvm.md). Each boot takes about half a minute under QEMU
//! 10's TCG (a guest inside a guest), so both run by default.

use std::time::Duration;

use svelt_tests::nested::{self, Vmm};
use svelt_tests::{Qemu, Run};

/// QEMU's guest: 2 vCPUs with SVE capped at 32 bytes, on a host with 2 GiB.
const GUEST: [&str; 8] = [
    "--guest-smp",
    "2",
    "--guest-sve-vls",
    "16,32",
    "--mem",
    "2G",
    "--guest-machine",
    "virt,gic-version=3",
];

/// Boots QEMU with the guest on Svelt or (`linux`) on Linux; None when what it needs could
/// not be fetched.
fn qemu_run(linux: bool) -> Option<Run> {
    let r = nested::guest_run(
        Vmm::Qemu,
        Qemu::Host,
        linux,
        &GUEST,
        Duration::from_secs(900),
    )?;
    if r.output.contains("a download failed") {
        eprintln!("SKIPPED: Debian's QEMU could not be fetched:\n{}", r.output);
        return None;
    }
    Some(r)
}

fn check_guest(what: &str, r: &Run) {
    let want = [
        "vmm-guest: uname Linux 7.3.4",
        "vmm-guest: cpus 2",
        "vmm-guest: sve vls [16, 32] max 32 default 32",
        "vmm-guest: sme none",
        "vmm-guest: exit status 0",
        "svelt-qemu: exit status 0",
    ];
    nested::check_lines(what, r, &want);
}

#[test]
fn qemu_kvm_guest_under_svelt() {
    if let Some(r) = qemu_run(false) {
        check_guest("Svelt", &r);
    }
}

#[test]
fn qemu_kvm_guest_under_linux() {
    if let Some(r) = qemu_run(true) {
        check_guest("Linux", &r);
    }
}
