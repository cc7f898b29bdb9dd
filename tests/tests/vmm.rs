//! The project's VMM (user/src/bin/vmm.rs) booting Debian's Linux 7.3.4 as a KVM guest, with
//! `./qemu-run.sh --guest linux`: under Svelt's KVM, and under Linux 7.3.4's (reference mode)
//! as the check of the VMM itself. The guest's /init (user/src/bin/guest_init.rs) prints its
//! kernel, its CPUs and its SVE lengths and powers off; the VMM's status is the guest's.
//! Each boot takes about a minute under TCG (a guest inside a guest); docs/vmm.md has the
//! numbers. `SVELT_VMM_FULL=1` adds a guest with the whole test userland as its initramfs
//! (its /init is svelt-init; many minutes).

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use svelt_tests::{ready, root, run_command, Config, Initrd, Run};

/// One nested boot at a time: each keeps both cores busy.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Boots the VMM with the guest options `guest`, on Svelt or (`linux`) on Linux; None when
/// what it needs could not be fetched.
fn guest_run(linux: bool, guest: &[&str], timeout: Duration) -> Option<Run> {
    let cfg = Config {
        linux,
        initrd: Initrd::Default,
        ..Config::default()
    };
    // Builds the userland (the VMM and the guest's init) and fetches Linux's Image, which the
    // guest boots on both kernels.
    if !ready(&Config {
        linux: true,
        ..cfg.clone()
    }) {
        return None;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new(root().join("qemu-run.sh"));
    cmd.args(["--no-build", "--guest", "linux"]).args(guest);
    if linux {
        cmd.arg("--linux");
    }
    Some(run_command(&mut cmd, timeout))
}

fn check_guest(what: &str, r: &Run) {
    let want = [
        "vmm-guest: uname Linux 7.3.4",
        "vmm-guest: cpus 2",
        "vmm-guest: sve vls [16, 32] max 32 default 32",
        "vmm-guest: sme none",
        "svelt-vmm: exit status 0",
    ];
    for w in want {
        assert!(
            r.output.lines().any(|l| l.starts_with(w)),
            "{what}: no line `{w}` (status {:?}):\n{}",
            r.status,
            r.output
        );
    }
    assert_eq!(r.status, Some(0), "{what}:\n{}", r.output);
}

const TWO_CPUS_SVE_32: [&str; 4] = ["--guest-smp", "2", "--guest-sve-vls", "16,32"];

#[test]
fn linux_guest_under_svelt() {
    if let Some(r) = guest_run(false, &TWO_CPUS_SVE_32, Duration::from_secs(600)) {
        check_guest("Svelt", &r);
    }
}

#[test]
fn linux_guest_under_linux() {
    if let Some(r) = guest_run(true, &TWO_CPUS_SVE_32, Duration::from_secs(600)) {
        check_guest("Linux", &r);
    }
}

/// A guest with SME (issue 29): Svelt offers KVM_CAP_ARM_SME, so the guest's Linux sees exactly
/// the streaming lengths the VMM chose (capped below the host's 16..256), beside SVE's.
#[test]
fn sme_guest_under_svelt() {
    let args = [
        "--guest-smp",
        "2",
        "--guest-sve-vls",
        "16,32,48,64",
        "--guest-sme-vls",
        "16,32",
    ];
    let Some(r) = guest_run(false, &args, Duration::from_secs(600)) else {
        return;
    };
    for w in [
        "vmm-guest: cpus 2",
        "vmm-guest: sve vls [16, 32, 48, 64] max 64",
        "vmm-guest: sme vls [16, 32] max 32 default 32 fa64 1",
        "svelt-vmm: exit status 0",
    ] {
        assert!(
            r.output.lines().any(|l| l.starts_with(w)),
            "no line `{w}` (status {:?}):\n{}",
            r.status,
            r.output
        );
    }
    assert_eq!(r.status, Some(0), "{}", r.output);
}

/// Linux 7.3's KVM has no SME for guests: the VMM refuses --guest-sme-vls naming the
/// capability (252) it asked for, and no guest starts.
#[test]
fn sme_refused_under_linux() {
    let Some(r) = guest_run(true, &["--guest-sme-vls", "32"], Duration::from_secs(300)) else {
        return;
    };
    assert!(r.output.contains("EXTENSION 252"), "{}", r.output);
    assert!(!r.output.contains("vmm-guest:"), "{}", r.output);
    assert_eq!(r.status, Some(1), "{}", r.output);
}

/// The whole test userland inside the guest (svelt-init as its /init): every program must pass
/// there as on bare Linux. Long: only with SVELT_VMM_FULL=1.
#[test]
fn userland_inside_a_guest() {
    if std::env::var("SVELT_VMM_FULL").as_deref() != Ok("1") {
        eprintln!("SKIPPED userland_inside_a_guest: set SVELT_VMM_FULL=1");
        return;
    }
    let initrd = root().join("target/initramfs.cpio.gz");
    let initrd = initrd.to_str().unwrap();
    let args = [
        "--guest-smp",
        "2",
        "--guest-mem",
        "1024",
        "--mem",
        "2G",
        "--guest-initrd",
        initrd,
    ];
    for linux in [false, true] {
        let Some(r) = guest_run(linux, &args, Duration::from_secs(3600)) else {
            return;
        };
        assert!(
            r.output.lines().any(|l| l == "svelt-init: exit status 0"),
            "linux={linux}:\n{}",
            r.output
        );
        assert_eq!(r.status, Some(0), "linux={linux}:\n{}", r.output);
    }
}
