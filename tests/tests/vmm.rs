//! The project's VMM (user/src/bin/vmm.rs) booting Debian's Linux 7.3.4 as a KVM guest, with
//! `./qemu-run.sh --guest linux`: under Svelt's KVM, and under Linux 7.3.4's (reference mode)
//! as the check of the VMM itself. The guest's /init (user/src/bin/guest_init.rs) prints its
//! kernel, its CPUs and its SVE lengths and powers off; the VMM's status is the guest's.
//! Each boot takes about a minute under TCG (a guest inside a guest); docs/vmm.md has the
//! numbers. `SVELT_VMM_FULL=1` adds a guest with the whole test userland as its initramfs
//! (its /init is svelt-init; many minutes).

use std::time::Duration;

use svelt_tests::kselftest::{self, Known};
use svelt_tests::nested::{self, check_lines, Vmm};
use svelt_tests::{root, Config, Qemu, Run};

/// Boots the VMM with the guest options `guest`, on Svelt or (`linux`) on Linux; None when
/// what it needs could not be fetched.
fn guest_run(linux: bool, guest: &[&str], timeout: Duration) -> Option<Run> {
    guest_run_on(Qemu::Host, linux, guest, timeout)
}

/// `guest_run` on the QEMU `qemu`.
fn guest_run_on(qemu: Qemu, linux: bool, guest: &[&str], timeout: Duration) -> Option<Run> {
    nested::guest_run(Vmm::Project, qemu, linux, guest, timeout)
}

fn check_guest(what: &str, r: &Run) {
    let want = [
        "vmm-guest: uname Linux 7.3.4",
        "vmm-guest: cpus 2",
        "vmm-guest: sve vls [16, 32] max 32 default 32",
        "vmm-guest: sme none",
        "svelt-vmm: exit status 0",
    ];
    check_lines(what, r, &want);
}

/// A guest with room for a test archive: 2 vCPUs, 1 GiB, on a host with 2 GiB.
const BIG_GUEST: [&str; 6] = ["--guest-smp", "2", "--guest-mem", "1024", "--mem", "2G"];

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
    let want = [
        "vmm-guest: cpus 2",
        "vmm-guest: sve vls [16, 32, 48, 64] max 64",
        "vmm-guest: sme vls [16, 32] max 32 default 32 fa64 1",
        "svelt-vmm: exit status 0",
    ];
    check_lines("SME guest", &r, &want);
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
    let mut args = BIG_GUEST.to_vec();
    args.extend(["--guest-initrd", initrd.to_str().unwrap()]);
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

// ---- Linux's arm64 selftests inside SME guests, against bare Linux (issue 29) ----

/// One guest configuration: the VMM's options for the guest (QEMU 11.1's CPU at its default,
/// SVE 16..256 and SME 16..256 with FA64 and SME2, under Svelt), and the bare CPU Linux runs on
/// as the reference, with the same vector lengths and SME features.
struct GuestCase {
    name: &'static str,
    guest: &'static [&'static str],
    sve_max_vq: u32,
    sme: Option<Option<u32>>,
    fa64: bool,
    /// Linux's own ID-register overrides for what QEMU cannot switch off (SME2).
    append: &'static [&'static str],
}

const ALL_SME: &str = "16,32,64,128,256";

const GUEST_CASES: [GuestCase; 5] = [
    GuestCase {
        name: "everything offered",
        guest: &["--guest-sme-vls", ALL_SME],
        sve_max_vq: 16,
        sme: Some(None),
        fa64: true,
        append: &[],
    },
    GuestCase {
        name: "SME capped at 32 bytes, SVE at 64",
        guest: &["--guest-sve-vls", "16,32,48,64", "--guest-sme-vls", "16,32"],
        sve_max_vq: 4,
        sme: Some(Some(32)),
        fa64: true,
        append: &[],
    },
    GuestCase {
        name: "SVE only",
        guest: &[],
        sve_max_vq: 16,
        sme: None,
        fa64: true,
        append: &[],
    },
    GuestCase {
        name: "FA64 off",
        guest: &["--guest-sme-vls", ALL_SME, "--guest-hide", "fa64"],
        sve_max_vq: 16,
        sme: Some(None),
        fa64: false,
        append: &[],
    },
    GuestCase {
        name: "no SME2",
        guest: &["--guest-sme-vls", ALL_SME, "--guest-hide", "sme2"],
        sve_max_vq: 16,
        sme: Some(None),
        fa64: true,
        append: &["id_aa64pfr1.sme=1", "id_aa64smfr0.smever=0"],
    },
];

/// What the guest's CPU lacks beside the bare one, in every configuration: GCS, which Linux
/// 7.3's KVM hides from every VM (sanitise_id_aa64pfr1_el1) and Svelt's as well, so the bare
/// reference runs with `arm64.nogcs`. POE is given to guests where the CPU has it (issue 28,
/// `kvm::poe`), but QEMU 11.1.3's CPU has no FEAT_S1POE: the two POE signal tests skip on bare
/// Linux and in the guest alike. FPMR and the FP8 instructions are given (issue 29): hwcap's
/// F8 and fp-ptrace's "FPMR write" subtests match bare Linux.
const GUEST_KNOWN: &[Known] = &[];

fn selftests_in_guest_match_bare_linux(case: &GuestCase) {
    let Some(archive) = kselftest::archive(&nested::SELFTESTS) else {
        return;
    };
    let archive = archive.to_str().unwrap().to_string();
    let mut args = BIG_GUEST.to_vec();
    args.extend(["--guest-initrd", &archive]);
    args.extend_from_slice(case.guest);
    let Some(guest) = guest_run_on(Qemu::V11, false, &args, Duration::from_secs(1500)) else {
        return;
    };
    let what = case.name;
    assert!(
        guest
            .output
            .lines()
            .any(|l| l == "svelt-vmm: exit status 0"),
        "{what}: the guest's runner did not end well (status {:?}):\n{}",
        guest.status,
        guest.output
    );
    let bare = Config {
        qemu: Qemu::V11,
        sve_max_vq: case.sve_max_vq,
        sme: case.sme,
        fa64: case.fa64,
        append: ["arm64.nogcs"]
            .iter()
            .chain(case.append)
            .map(|s| s.to_string())
            .collect(),
        timeout: kselftest::RUN_TIMEOUT,
        mem: Some("2G".into()),
        ..Config::default()
    };
    let Some(linux) = nested::bare_run(std::path::Path::new(&archive), &bare) else {
        return;
    };
    nested::assert_guest_matches_bare(what, "guest", &guest, &linux, GUEST_KNOWN);
}

fn full() -> bool {
    if std::env::var("SVELT_VMM_FULL").as_deref() == Ok("1") {
        return true;
    }
    eprintln!(
        "SKIPPED: set SVELT_VMM_FULL=1 (Linux's selftests inside SME guests, against bare Linux)"
    );
    false
}

/// Issue 29's first configuration: a guest given everything (SVE and SME at every length,
/// FA64, SME2 with ZT0). About four minutes; with SVELT_VMM_FULL=1. (fp-ptrace's "Timed out
/// waiting for child" in the guest was the vGIC losing an SGI, fixed; one run of the five
/// configurations on 2026-12-04 hung instead, unexplained: docs/vmm.md.)
#[test]
fn selftests_in_an_sme_guest_match_bare_linux() {
    if full() {
        selftests_in_guest_match_bare_linux(&GUEST_CASES[0]);
    }
}

/// The other four configurations (capped lengths, SVE only, FA64 off, no SME2): about three
/// minutes each; with SVELT_VMM_FULL=1.
#[test]
fn selftests_in_sme_guests_match_bare_linux_every_cap() {
    if full() {
        for case in &GUEST_CASES[1..] {
            selftests_in_guest_match_bare_linux(case);
        }
    }
}

// ---- Guests and host sharing the CPUs under fp-stress (issues 28 and 29) ----

/// `./qemu-run.sh --soak 1 --guest linux --guest-vms 2`: two VMs of two vCPUs each boot the
/// soak archive and run Linux's fp-stress (and the fuzzers) inside, while the host runs its own
/// fp-stress and switchers on the same two CPUs until both VMMs have ended. Every guest's soak
/// and VMM must end with status 0, the host's fp-stress must pass with no FP state mismatch
/// counted, and on Svelt /proc/svelt/kvm must show every VM, VMID and stage-2 page given back.
fn soak_with_guests(qemu: Qemu, linux: bool, guest: &[&str]) -> Option<Run> {
    let mut args = vec![
        "--soak",
        "1",
        "--guest-vms",
        "2",
        "--guest-smp",
        "2",
        "--guest-mem",
        "512",
        "--mem",
        "3G",
    ];
    args.extend_from_slice(guest);
    let r = guest_run_on(qemu, linux, &args, Duration::from_secs(3000))?;
    let mut want = vec![
        "# svelt-soak: VM 0: pass",
        "# svelt-soak: VM 1: pass",
        "# svelt-soak: fp-stress: pass",
        "svelt-soak: exit status 0",
    ];
    if !linux {
        want.push("# svelt-soak: FP state mismatches: 0");
        want.push("# svelt-soak: kvm: vms 0, vmids 0,");
    }
    check_lines(&format!("soak with guests (linux={linux})"), &r, &want);
    Some(r)
}

/// Two SME guests with different caps (SME 16,32 with FA64; SME 16..64 without FA64; SVE
/// 16..64 for both) beside the host's fp-stress with SME and SME2, under Svelt on QEMU 11.1.
/// About ten minutes; with SVELT_VMM_FULL=1. It found the streaming-mode bug of docs/kvm-sme.md
/// (`streaming_guest_never_sees_an_sve_trap`).
#[test]
fn two_sme_guests_soak_beside_the_host() {
    if full() {
        let guest = [
            "--guest-sve-vls",
            "16,32,48,64",
            "--guest-sme-vls",
            "16,32/16,32,64",
            "--guest-hide",
            "/fa64",
        ];
        soak_with_guests(Qemu::V11, false, &guest);
    }
}

/// The same with SVE guests on Svelt and on Linux's KVM (the check of the run itself), on the
/// host's QEMU. About ten minutes each; with SVELT_VMM_FULL=1.
#[test]
fn two_sve_guests_soak_beside_the_host() {
    if full() {
        for linux in [false, true] {
            soak_with_guests(Qemu::Host, linux, &["--guest-sve-vls", "16,32,48,64"]);
        }
    }
}
