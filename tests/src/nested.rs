//! Nested boots: a VMM running on the booted kernel's `/dev/kvm` (Svelt's KVM, or Linux 7.3.4's in
//! reference mode) and booting Debian's Linux as its guest, through `./qemu-run.sh --guest VMM`.
//! Each keeps both of the host's cores busy for minutes, so a test process runs one at a time.

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::{ready, root, run_command, Config, Initrd, Qemu, Run};

/// Which VMM runs the guest (`--guest`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vmm {
    /// `--guest linux`: the project's VMM, user/src/bin/vmm.rs.
    Project,
    /// `--guest qemu`: Debian's qemu-system-aarch64 with `-accel kvm`.
    Qemu,
}

/// One nested boot at a time in this process, whichever test file asks.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Boots `vmm` with the guest options `guest` on the QEMU `qemu`, on Svelt or (`linux`) on Linux,
/// after every other nested boot of this process; None when what it needs could not be fetched.
pub fn guest_run(
    vmm: Vmm,
    qemu: Qemu,
    linux: bool,
    guest: &[&str],
    timeout: Duration,
) -> Option<Run> {
    let cfg = Config {
        linux,
        qemu,
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
    let vmm = match vmm {
        Vmm::Project => "linux",
        Vmm::Qemu => "qemu",
    };
    cmd.args(["--no-build", "--guest", vmm]).args(guest);
    if qemu == Qemu::V11 {
        cmd.arg("--qemu11");
    }
    if linux {
        cmd.arg("--linux");
    }
    Some(run_command(&mut cmd, timeout))
}

/// The run printed a line starting with each of `want`, and its status is 0.
pub fn check_lines(what: &str, r: &Run, want: &[&str]) {
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
