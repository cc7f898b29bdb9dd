//! The userland (user/: init and every test program) booted on Svelt over {EL1, EL2} x {1, 2
//! CPUs} at the default SVE maximum (VQ 16, SME up to 256 bytes), plus SVE maximum VQ 1 and 4
//! (SME lengths kept within it), and the same initramfs on Debian's Linux (reference mode):
//! every nested KTAP test must pass on both. A test that fails on Linux is a wrong test.

use svelt_tests::{build, check_userland, Config, Initrd};

fn svelt(el: u8, smp: u32) {
    svelt_vq(el, smp, 16);
}

fn svelt_vq(el: u8, smp: u32, sve_max_vq: u32) {
    check_userland(&Config {
        el,
        smp,
        sve_max_vq,
        initrd: Initrd::Default,
        // The whole suite, possibly sharing the host with another QEMU.
        timeout: std::time::Duration::from_secs(600),
        ..Config::default()
    });
}

#[test]
fn svelt_el2_smp2_vq1() {
    svelt_vq(2, 2, 1);
}

#[test]
fn svelt_el1_smp1_vq1() {
    svelt_vq(1, 1, 1);
}

#[test]
fn svelt_el2_smp1_vq4() {
    svelt_vq(2, 1, 4);
}

#[test]
fn svelt_el1_smp2_vq4() {
    svelt_vq(1, 2, 4);
}

#[test]
fn svelt_el1_smp1() {
    svelt(1, 1);
}

#[test]
fn svelt_el1_smp2() {
    svelt(1, 2);
}

#[test]
fn svelt_el2_smp1() {
    svelt(2, 1);
}

#[test]
fn svelt_el2_smp2() {
    svelt(2, 2);
}

/// Reference mode. Skipped (with the reason printed) only when Linux cannot be downloaded.
#[test]
fn linux_reference() {
    let cfg = Config {
        linux: true,
        initrd: Initrd::Default,
        sve_max_vq: 4,
        timeout: std::time::Duration::from_secs(600),
        ..Config::default()
    };
    if let Err(why) = build(&cfg) {
        if why.contains("network") {
            eprintln!("SKIPPED linux_reference: Debian's Linux could not be fetched:\n{why}");
            return;
        }
        panic!("reference-mode set-up failed: {why}");
    }
    for (el, smp, sve_max_vq) in [(2, 2, 4), (1, 1, 4), (2, 2, 16), (1, 2, 1)] {
        check_userland(&Config {
            el,
            smp,
            sve_max_vq,
            ..cfg.clone()
        });
    }
}
