//! More live VMs than the CPU has VMIDs for, each run in turn: every guest reads its own
//! memory. Svelt hands VMIDs out by generations (kernel/src/kvm/vmid.rs); booted with
//! `svelt.vmid_bits=3` (7 VMIDs) the run below goes through many generations, which
//! /proc/svelt/kvm counts. Linux (16-bit VMIDs on QEMU's CPUs) runs the same VMs.

use super::*;
use svelt_user::kvm::{SmallVm, SmallVmOpts, SMALL_MMIO};

/// A guest that stores, forever, the doubleword at its code's offset 0x10 to the address in
/// x1: `ldr x2, lit; str x2, [x1]; b .-8; nop; lit: .quad value`.
fn guest(value: u64) -> [u8; 24] {
    let mut code = [0u8; 24];
    let words: [u32; 4] = [0x5800_0082, 0xf900_0022, 0x17ff_fffe, 0xd503_201f];
    for (i, w) in words.iter().enumerate() {
        code[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    code[16..].copy_from_slice(&value.to_le_bytes());
    code
}

/// A number from /proc/svelt/kvm (None on Linux).
fn svelt_kvm(key: &str) -> Option<u64> {
    svelt_kvm_field(&svelt_kvm_text()?, key)?.parse().ok()
}

pub fn more_vms_than_vmids() -> TestResult {
    const VMS: usize = 24;
    const ROUNDS: usize = 8;
    // Skips where there is no KVM.
    let _ = sys::close(kvm!());
    let generations = svelt_kvm("vmid_generations");
    let mut vms = Vec::new();
    for i in 0..VMS {
        let kvm = kvm!();
        let value = 0x5eed_0000_0000 | (i as u64) << 8 | 0xa5;
        let vm = t!(SmallVm::new(kvm, &guest(value), SmallVmOpts::default()));
        t!(vm.set_x(1, SMALL_MMIO));
        vms.push((vm, value));
    }
    // In turns, so that each VM's entry finds its VMID taken back (a new generation) as
    // often as the count allows; every entry must still see its own memory.
    for round in 0..ROUNDS {
        for (i, (vm, value)) in vms.iter().enumerate() {
            let (addr, data) = t!(vm.run_to_mmio_write());
            check_eq!(
                (addr, data),
                (SMALL_MMIO, *value),
                "VM {i}, round {round}: its guest stored another VM's value"
            );
        }
    }
    if let Some(held) = svelt_kvm("vmids") {
        check!(held >= VMS as u64, "vmids {held} with {VMS} VMs run");
    }
    let cmdline = io::read_file("/proc/cmdline").unwrap_or_default();
    let small = String::from_utf8_lossy(&cmdline).contains("svelt.vmid_bits=3");
    if let (Some(before), Some(after), true) = (generations, svelt_kvm("vmid_generations"), small) {
        // 24 VMs over 7 VMIDs, each round: at least one new generation per round.
        check!(
            after >= before + ROUNDS as u64,
            "VMID generations {before} -> {after} with svelt.vmid_bits=3"
        );
        println!("    # VMID generations {before} -> {after}");
    }
    drop(vms);
    Ok(())
}
