//! Nested boots: a VMM running on the booted kernel's `/dev/kvm` (Svelt's KVM, or Linux 7.3.4's in
//! reference mode) and booting Debian's Linux as its guest, through `./qemu-run.sh --guest VMM`.
//! Each keeps both of the host's cores busy for minutes, so a test process runs one at a time.

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::kselftest::{self, Known, Selection};
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
    // Timed once the boots before it have ended, so the number is this boot's alone.
    let t0 = std::time::Instant::now();
    let r = run_command(&mut cmd, timeout);
    eprintln!(
        "--guest {vmm} on {}: {:.1} s, status {:?}",
        if linux { "Linux" } else { "Svelt" },
        t0.elapsed().as_secs_f64(),
        r.status
    );
    Some(r)
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

// ---- Linux's arm64 selftests inside a guest, against bare Linux ----

/// The host tests' archive of Linux's arm64 fp/, signal/, abi/ and gcs/ selftests, given to a
/// guest as its initramfs (tests/tests/kselftests.rs builds the same one; it is cached under
/// target/selftests/).
pub const SELFTESTS: Selection = Selection {
    name: "kselftests",
    subtargets: "fp signal abi gcs",
    only: "",
    extra: "zt-ptrace",
    long: "",
};

/// Boots `archive` on bare Linux with `cfg` (kselftest::run), after every other nested boot of
/// this process, so that no two boots share the host's cores: the selftests' own time limits
/// (fp-ptrace's one-second alarm) must not see another run's load.
pub fn bare_run(archive: &std::path::Path, cfg: &Config) -> Option<Run> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    kselftest::run(archive, cfg, true)
}

/// Compares the guest's run of the selftests archive (`guest`, its console) with bare Linux's
/// run of the same archive on a CPU with the guest's features (`bare`): every program and
/// subtest must end alike, except the differences `known` lists for `config` (the guest's
/// side is the entries' `svelt`), and each of those must still differ. `what` names the case
/// in messages and in the two consoles kept for reading a difference,
/// target/vmm-selftests/WHAT.{guest,linux}.log.
pub fn assert_guest_matches_bare(
    what: &str,
    config: &str,
    guest: &Run,
    bare: &Run,
    known: &[Known],
) {
    let dir = root().join("target/vmm-selftests");
    let _ = std::fs::create_dir_all(&dir);
    let stem = what.replace([' ', ',', '(', ')', '='], "-");
    let _ = std::fs::write(dir.join(format!("{stem}.guest.log")), &guest.output);
    let _ = std::fs::write(dir.join(format!("{stem}.linux.log")), &bare.output);
    let (g, l) = (
        kselftest::outcomes(&guest.output),
        kselftest::outcomes(&bare.output),
    );
    eprintln!("{what}: guest | bare Linux\n{}", kselftest::table(&g, &l));
    let diffs = kselftest::differences(&g, &l);
    let sorted = kselftest::sort_out(config, &diffs, known);
    assert!(
        sorted.unexpected.is_empty(),
        "{what}: the guest's selftests end otherwise than bare Linux's:\n{}",
        sorted
            .unexpected
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        sorted.gone.is_empty(),
        "{what}: known differences that no longer differ:\n{}",
        sorted.gone.join("\n")
    );
    assert!(
        g.len() == l.len() && g.len() >= 50,
        "{what}: {} programs in the guest, {} bare",
        g.len(),
        l.len()
    );
}
