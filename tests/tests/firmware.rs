//! Boots through UEFI firmware (Debian's edk2, package qemu-efi-aarch64): edk2 starts the Image
//! as an EFI application and its stub (kernel/src/boot/efi.rs) enters the kernel as `-kernel` would.
//! With QEMU's device tree (`--firmware edk2`) and with ACPI tables only (`--firmware
//! edk2-acpi`, the stub writes the device tree from MADT, GTDT, SPCR and FADT), at EL2 and EL1:
//! each reaches the same boot report as the `-kernel` boot of the same configuration, and the
//! userland passes. Skipped, saying why, when the firmware is not installed.

use std::path::Path;
use std::time::Duration;

use svelt_tests::{check_boot_report, check_userland, ready, Config, Initrd};

const EDK2: &str = "/usr/share/qemu-efi-aarch64/QEMU_EFI.fd";

fn edk2_installed(test: &str) -> bool {
    if Path::new(EDK2).exists() {
        return true;
    }
    eprintln!(
        "SKIPPED {test}: no {EDK2}; install Debian's qemu-efi-aarch64 (.ci/run does, when it can)"
    );
    false
}

/// The boot report's lines: the kernel's `svelt:` and `cpu:` lines and its log lines (without
/// their timestamps: the GIC, timer interrupt and PSCI conduit are there), without those that
/// differ between loaders by design: the model (ACPI has no model string; the stub names its
/// own), the command line (edk2 may add words of its own) and the RAM figures (the firmware
/// keeps some memory for itself). What the firmware prints (escape sequences, its banner) is
/// not the kernel's and is left out.
fn report_lines(output: &str) -> Vec<String> {
    output
        .lines()
        .map(|l| l.trim_end())
        .filter_map(|l| {
            let at = l.find("svelt: ").or_else(|| l.find("cpu: "));
            // Log lines: "[    0.012345] cpu0 INFO  text".
            let log = l
                .strip_prefix('[')
                .and_then(|r| r.split_once("] "))
                .map(|r| r.1);
            Some(log.map_or_else(|| l[at.unwrap_or(0)..].to_string(), str::to_string))
                .filter(|_| at.is_some() || log.is_some())
        })
        .filter(|l| {
            !(l.contains("Svelt ") && l.contains(" on ")
                || l.contains("command line")
                || l.contains("memory: "))
        })
        .collect()
}

/// Boots `cfg` through `firmware` and directly, without an initramfs, and compares the reports.
fn same_report(cfg: Config, firmware: &'static str) {
    let name = format!("{firmware} {:?}", cfg.args());
    if !edk2_installed(&name) || !ready(&cfg) {
        return;
    }
    let direct = check_boot_report(&cfg);
    let via = check_boot_report(&Config {
        firmware: Some(firmware),
        ..cfg
    });
    assert!(
        via.output.contains("EFI stub: "),
        "no line from the EFI stub: was the Image started by edk2?\n{}",
        via.output
    );
    let expected = report_lines(&direct.output);
    assert!(
        expected.len() >= 9,
        "too short a report to compare: {expected:?}"
    );
    assert_eq!(
        report_lines(&via.output),
        expected,
        "boot report through {firmware} differs from -kernel's\n--- {firmware} ---\n{}\n--- -kernel ---\n{}",
        via.output,
        direct.output
    );
}

/// The whole userland through `firmware`: the initrd comes through the firmware's LoadFile2.
fn userland(cfg: Config, firmware: &'static str) {
    let cfg = Config {
        firmware: Some(firmware),
        initrd: Initrd::Default,
        timeout: Duration::from_secs(600),
        ..cfg
    };
    if !edk2_installed(&format!("{:?}", cfg.args())) || !ready(&cfg) {
        return;
    }
    let run = check_userland(&cfg);
    let r = svelt_tests::parse_report(&run.output);
    assert_eq!(r.entered_el, Some(cfg.el), "{}", run.output);
    assert_eq!(
        r.kernel_el,
        Some(cfg.expected_kernel_el()),
        "{}",
        run.output
    );
}

#[test]
fn edk2_dtb_at_el2() {
    same_report(Config::default(), "edk2");
}

#[test]
fn edk2_acpi_at_el2() {
    same_report(Config::default(), "edk2-acpi");
}

#[test]
fn edk2_acpi_at_el1_gicv2() {
    same_report(
        Config {
            el: 1,
            gic: 2,
            smp: 4,
            ..Config::default()
        },
        "edk2-acpi",
    );
}

/// Past 123 CPUs QEMU's MADT has two GICR structures (a second, high redistributor region):
/// all 256 CPUs come online through ACPI, as with `-kernel` and QEMU's device tree.
#[test]
fn edk2_acpi_with_256_cpus() {
    same_report(
        Config {
            smp: 256,
            ..Config::default()
        },
        "edk2-acpi",
    );
}

#[test]
fn edk2_dtb_userland() {
    userland(Config::default(), "edk2");
}

#[test]
fn edk2_acpi_userland() {
    userland(
        Config {
            el: 1,
            ..Config::default()
        },
        "edk2-acpi",
    );
}

/// The Image's PE/COFF header, read as a UEFI loader reads it: "MZ" and the PE header's offset,
/// an AArch64 EFI application, sections whose file offsets equal their addresses and cover the
/// whole file, SizeOfImage equal to the Image header's image_size (BSS included), and an entry
/// point in the code section that branches (the stub's first instruction).
#[test]
fn pe_header_describes_the_image() {
    let cfg = Config::default();
    assert!(ready(&cfg));
    let image =
        svelt_tests::root().join("target/kernel/aarch64-unknown-none-softfloat/release/svelt.img");
    let d = std::fs::read(&image).expect("the built Image");
    let u16_at = |o: usize| u16::from_le_bytes(d[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(d[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(d[o..o + 8].try_into().unwrap());
    assert_eq!(&d[0..2], b"MZ");
    assert_eq!(&d[0x38..0x3c], b"ARM\x64");
    let pe = u32_at(0x3c) as usize;
    assert_eq!(&d[pe..pe + 4], b"PE\0\0");
    assert_eq!(u16_at(pe + 4), 0xaa64, "machine");
    let nsec = u16_at(pe + 6) as usize;
    let opt = pe + 24;
    let opt_size = u16_at(pe + 20) as usize;
    assert_eq!(
        u16_at(pe + 22) & 1,
        0,
        "relocations not stripped: loadable anywhere"
    );
    assert_eq!(u16_at(opt), 0x20b, "PE32+");
    assert_eq!(u16_at(opt + 68), 10, "EFI application");
    // Linux's stub's version: 1.0 and up take the initrd through LoadFile2 (GRUB's `initrd`
    // offers it only then), 1.1 reads `initrd=` words as well.
    assert_eq!(
        (u16_at(opt + 44), u16_at(opt + 46)),
        (1, 1),
        "image version"
    );
    let entry = u32_at(opt + 16) as usize;
    let (section_align, file_align) = (u32_at(opt + 32), u32_at(opt + 36));
    assert_eq!((section_align, file_align), (4096, 4096));
    let size_of_image = u32_at(opt + 56) as u64;
    assert_eq!(
        size_of_image,
        u64_at(16),
        "SizeOfImage = the Image header's image_size"
    );
    let headers = u32_at(opt + 60) as usize;
    let mut end_in_file = headers;
    let mut end_in_memory = headers as u64;
    let mut entry_in_code = false;
    for i in 0..nsec {
        let s = opt + opt_size + 40 * i;
        let (vsize, va, rsize, raw) = (
            u32_at(s + 8),
            u32_at(s + 12),
            u32_at(s + 16),
            u32_at(s + 20),
        );
        assert_eq!(va, raw, "section {i}: RVA = file offset");
        assert_eq!(
            raw as usize, end_in_file,
            "section {i} follows the previous one"
        );
        assert!(rsize <= vsize);
        end_in_file = (raw + rsize) as usize;
        end_in_memory = (va + vsize) as u64;
        if u32_at(s + 36) & 0x20 != 0 && (va as usize..(va + vsize) as usize).contains(&entry) {
            entry_in_code = true;
        }
    }
    assert_eq!(end_in_file, d.len(), "the sections cover the file");
    assert_eq!(end_in_memory, size_of_image, "and the image, BSS included");
    assert!(entry_in_code, "entry point {entry:#x} in the code section");
    // The entry is `b svelt_efi_main`: an unconditional branch.
    assert_eq!(
        u32_at(entry) >> 26,
        0b000101,
        "entry instruction {:#x}",
        u32_at(entry)
    );
}

/// The EFI stub runs before the kernel is at its link address, so the code it reaches must not
/// read a pointer the linker wrote (a link address): no literal-pool loads, and no reference to
/// a data object that holds a link address (a table of string slices, a vtable). This walks the
/// kernel's disassembly from `svelt_efi_main` through every direct branch (the panic machinery,
/// reached only on a bug, excepted) and checks each object it addresses with ADRP.
#[test]
fn efi_stub_reaches_no_link_address() {
    let cfg = Config::default();
    assert!(ready(&cfg));
    let elf =
        svelt_tests::root().join("target/kernel/aarch64-unknown-none-softfloat/release/svelt");
    let image = std::fs::read(elf.with_extension("img")).expect("the built Image");
    const BASE: u64 = 0xffff_ff80_0000_0000;
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc");
    let sysroot = String::from_utf8(sysroot.stdout).unwrap();
    let bin = std::fs::read_dir(Path::new(sysroot.trim()).join("lib/rustlib"))
        .unwrap()
        .map(|e| e.unwrap().path().join("bin"))
        .find(|p| p.join("llvm-objdump").exists())
        .expect("llvm-tools (rustup component add llvm-tools)");
    let run = |tool: &str, args: &[&str]| {
        let o = std::process::Command::new(bin.join(tool))
            .args(args)
            .arg(&elf)
            .output()
            .expect(tool);
        String::from_utf8(o.stdout).unwrap()
    };
    let dis = run("llvm-objdump", &["-d", "--no-show-raw-insn"]);
    let nm = run("llvm-nm", &["-S", "--defined-only"]);

    // Functions: name -> [(mnemonic, operands)].
    let mut funcs: std::collections::HashMap<String, Vec<(String, String)>> = Default::default();
    let mut cur = None;
    for line in dis.lines() {
        if let Some(name) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")) {
            cur = Some(name.1.to_string());
            funcs.insert(name.1.to_string(), vec![]);
        } else if let (Some(f), Some((_, insn))) = (&cur, line.split_once(':')) {
            let mut parts = insn.trim().splitn(2, '\t');
            let op = parts.next().unwrap_or("").to_string();
            let args = parts.next().unwrap_or("").to_string();
            funcs.get_mut(f).unwrap().push((op, args));
        }
    }
    // Data objects: (start, size, name).
    let objects: Vec<(u64, u64, String)> = nm
        .lines()
        .filter_map(|l| {
            let p: Vec<_> = l.split_whitespace().collect();
            (p.len() == 4 && "rRdD".contains(p[2])).then(|| {
                (
                    u64::from_str_radix(p[0], 16).unwrap(),
                    u64::from_str_radix(p[1], 16).unwrap(),
                    p[3].to_string(),
                )
            })
        })
        .collect();
    // The object at `target`: its symbol's extent; an anonymous constant (no symbol) is checked
    // at the address itself, where a table of pointers or a vtable starts with a pointer (a
    // string constant, not 8-aligned or holding text, passes).
    let holds_link_address = |target: u64| -> Option<String> {
        let (start, end, name) = match objects
            .iter()
            .find(|(s, z, _)| *s <= target && target < s + (*z).max(1))
        {
            Some((s, z, n)) => (*s, s + z, n.clone()),
            None if target.is_multiple_of(8) => {
                (target, target + 8, format!("the constant at {target:#x}"))
            }
            None => return None,
        };
        let bytes = image.get((start.checked_sub(BASE)? as usize)..(end - BASE) as usize)?;
        let first = ((8 - start % 8) % 8) as usize;
        bytes
            .get(first..)?
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .any(|v| v >> 39 == BASE >> 39)
            .then_some(name)
    };
    let target_name = |args: &str| {
        let (_, rest) = args.split_once('<')?;
        let name = rest.split(['>', '+']).next()?;
        Some(name.to_string())
    };
    let mut todo = vec!["svelt_efi_main".to_string()];
    let mut seen = std::collections::HashSet::new();
    let mut bad = vec![];
    while let Some(f) = todo.pop() {
        if f.contains("panic") || !seen.insert(f.clone()) {
            continue;
        }
        let Some(body) = funcs.get(&f) else { continue };
        let mut pages: std::collections::HashMap<String, u64> = Default::default();
        let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok();
        for (i, (op, args)) in body.iter().enumerate() {
            let branch = ["b", "bl", "cbz", "cbnz", "tbz", "tbnz"].contains(&op.as_str())
                || op.starts_with("b.");
            if branch {
                if let Some(t) = target_name(args).filter(|t| *t != f) {
                    todo.push(t);
                }
                continue;
            }
            if op == "ldr" && !args.contains('[') && args.contains('<') {
                bad.push(format!("{f}: literal load {op} {args}"));
                continue;
            }
            let regs: Vec<&str> = args.split(", ").collect();
            let operand = |n: usize| regs.get(n).and_then(|r| r.split_whitespace().next());
            let target = match op.as_str() {
                "adrp" => {
                    if let (Some(r), Some(p)) = (operand(0), operand(1).and_then(hex)) {
                        pages.insert(r.to_string(), p);
                    }
                    continue;
                }
                "adr" => operand(1).and_then(hex),
                "add" if regs.len() == 3 => pages
                    .get(regs[1])
                    .zip(regs[2].strip_prefix("#0x").and_then(hex))
                    .map(|(p, o)| p + o),
                _ if op.starts_with("ld") => args.split_once('[').and_then(|(_, m)| {
                    let mut it = m.trim_end_matches(['!', ']']).split(", ");
                    let base = pages.get(it.next()?)?;
                    let off = it
                        .next()
                        .map_or(Some(0), |o| hex(o.trim_start_matches('#')))?;
                    Some(base + off)
                }),
                _ => None,
            };
            // Whatever this instruction writes no longer holds an ADRP page (e.g. `add x2, sp,
            // #0x1, lsl #12` then `add x2, x2, #0x670` is a stack slot, not a constant).
            let writes_first = !(op.starts_with("st")
                || op.starts_with("cmp")
                || op.starts_with("cmn")
                || op.starts_with("tst")
                || op.starts_with("prfm"));
            if writes_first {
                if let Some(r) = operand(0) {
                    pages.remove(r);
                }
            }
            let Some(obj) = target.and_then(holds_link_address) else {
                continue;
            };
            // A panic's location (file name, line) is only read when the stub is already lost.
            let for_a_panic = body[i + 1..]
                .iter()
                .take(8)
                .find(|(op, _)| op == "bl")
                .and_then(|(_, a)| target_name(a))
                .is_some_and(|t| t.contains("panic") || t.contains("_fail"));
            if !for_a_panic {
                bad.push(format!(
                    "{f}: {op} {args} addresses {obj}, which holds a link address"
                ));
            }
        }
    }
    assert!(
        seen.len() > 20 && seen.iter().any(|f| f.contains("write_fdt")),
        "the walk found too little: {seen:?}"
    );
    assert!(
        bad.is_empty(),
        "the EFI stub reaches link addresses:\n{}",
        bad.join("\n")
    );
}

/// Started the way docs/boards.md tells a board's user to: from the EFI shell, by a startup.nsh on
/// a FAT disk (QEMU's vvfat over a directory, on virtio-blk), with no `-kernel` at all. The
/// shell passes its command line as the load options, so the stub must read the initrd from
/// `initrd=` files on the volume it was loaded from (edk2 offers no LoadFile2 initrd here), and
/// concatenate two of them: a plain archive of our own holding a test program under a path the
/// userland lacks, then the userland's gzip archive (in that order, as an early cpio goes first:
/// a cpio member must start at a multiple of 4, which the gzip file's length is not, on Linux
/// too). The program from the first archive then runs as the first process.
#[test]
fn edk2_shell_starts_the_image_with_initrd_files() {
    let cfg = Config {
        initrd: Initrd::Default,
        ..Config::default()
    };
    if !edk2_installed("edk2_shell_starts_the_image_with_initrd_files") || !ready(&cfg) {
        return;
    }
    let root = svelt_tests::root();
    let esp = root.join("target/firmware/esp");
    let _ = std::fs::remove_dir_all(&esp);
    std::fs::create_dir_all(esp.join("EFI/svelt")).unwrap();
    let release = root.join("target/kernel/aarch64-unknown-none-softfloat/release");
    std::fs::copy(release.join("svelt.img"), esp.join("EFI/svelt/svelt.efi")).unwrap();
    std::fs::copy(
        root.join("target/initramfs.cpio.gz"),
        esp.join("EFI/svelt/initrd.img"),
    )
    .unwrap();
    // The first archive: /extra/sve_regs, a copy of a test program.
    let program =
        std::fs::read(root.join("target/user/aarch64-unknown-none/release/sve_regs")).unwrap();
    let mut extra = Vec::new();
    let mut w = svelt_abi::boot::cpio::Writer::new(|b: &[u8]| extra.extend_from_slice(b));
    w.dir("extra", 0o755);
    w.file("extra/sve_regs", 0o755, &program);
    let _ = w.finish();
    std::fs::write(esp.join("extra.cpio"), extra).unwrap();
    // Backslash and slash paths both name files on the boot volume (Linux's stub's rule).
    std::fs::write(
        esp.join("startup.nsh"),
        "fs0:\r\n\\EFI\\svelt\\svelt.efi initrd=/extra.cpio initrd=\\EFI\\svelt\\initrd.img \
         svelt.exit=semihosting init=/extra/sve_regs\r\n",
    )
    .unwrap();

    let run = boot_esp(&esp, Duration::from_secs(300));
    // The kernel's command line: the shell's words (the image's path first) without the
    // initrd= ones; the program is only in the first archive, so both were unpacked.
    check_esp_run(
        &run,
        "\\EFI\\svelt\\svelt.efi svelt.exit=semihosting init=/extra/sve_regs",
    );
}

/// Debian's arm64 GRUB (the signed monolithic grubaa64.efi of `suite`), fetched once into
/// target/grub/SUITE/ by tests/grub.sh: its path and the package's version, or `None` (the test
/// skips, saying why) when it cannot be downloaded for want of a network or of a Debian mirror.
fn grub_image(test: &str, suite: &str) -> Option<(std::path::PathBuf, String)> {
    let root = svelt_tests::root();
    let o = std::process::Command::new(root.join("tests/grub.sh"))
        .arg(suite)
        .current_dir(&root)
        .output()
        .expect("run tests/grub.sh");
    let why = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        if why.contains("network") || why.contains("mirror") || why.contains("Debian host") {
            eprintln!("SKIPPED {test}: Debian's GRUB could not be fetched:\n{why}");
            return None;
        }
        panic!("tests/grub.sh failed:\n{why}");
    }
    let path = String::from_utf8(o.stdout).unwrap().trim().to_string();
    let version = std::fs::read_to_string(root.join("target/grub").join(suite).join("version"))
        .expect("target/grub/SUITE/version");
    Some((path.into(), version.trim().to_string()))
}

/// Boots `suite`'s GRUB the way edk2 boots a removable disk with no boot entries: an ESP (QEMU's
/// vvfat over `target/firmware/TEST`) holding GRUB as EFI/BOOT/BOOTAA64.EFI, `grub_cfg` beside it
/// (Debian's image reads $cmdpath/grub.cfg when the volume has no EFI/debian; tests/grub.sh),
/// and `files` (name in the ESP, file to copy) at the top; no `-kernel`. EL2, 2 CPUs, the
/// device tree (acpi=off) and semihosting, so that `svelt.exit=semihosting` makes the run's
/// status QEMU's.
fn boot_grub(
    test: &str,
    suite: &str,
    grub_cfg: &str,
    files: &[(&str, &Path)],
) -> Option<svelt_tests::Run> {
    let cfg = Config {
        initrd: Initrd::Default,
        ..Config::default()
    };
    if !edk2_installed(test) || !ready(&cfg) {
        return None;
    }
    let (grub, version) = grub_image(test, suite)?;
    eprintln!("{test}: GRUB from {suite}'s grub-efi-arm64-signed {version}");
    let esp = svelt_tests::root().join("target/firmware").join(test);
    let _ = std::fs::remove_dir_all(&esp);
    std::fs::create_dir_all(esp.join("EFI/BOOT")).unwrap();
    std::fs::copy(&grub, esp.join("EFI/BOOT/BOOTAA64.EFI")).unwrap();
    std::fs::write(esp.join("EFI/BOOT/grub.cfg"), grub_cfg).unwrap();
    for (name, from) in files {
        std::fs::copy(from, esp.join(name)).unwrap();
    }
    Some(boot_esp(&esp, Duration::from_secs(120)))
}

/// Boots from an ESP only (QEMU's vvfat over `esp`, read-only, on virtio-blk; no `-kernel`):
/// EL2, 2 CPUs, the device tree (acpi=off) and semihosting, so that `svelt.exit=semihosting`
/// on the command line makes the run's status QEMU's.
fn boot_esp(esp: &Path, timeout: Duration) -> svelt_tests::Run {
    let qemu = std::env::var("QEMU").unwrap_or_else(|_| "qemu-system-aarch64".into());
    svelt_tests::run_command(
        std::process::Command::new(qemu)
            .args([
                "-M",
                "virt,gic-version=3,virtualization=on,acpi=off",
                "-cpu",
                "max,pauth-impdef=on",
                "-smp",
                "2",
                "-m",
                "1G",
                "-nographic",
                "-nodefaults",
                "-serial",
                "stdio",
                "-monitor",
                "none",
                "-no-reboot",
                "-nic",
                "none",
                "-semihosting-config",
                "enable=on,target=native",
                "-bios",
                EDK2,
                "-drive",
            ])
            .arg(format!(
                "if=none,id=esp,format=raw,readonly=on,file=fat:{}",
                esp.display()
            ))
            .args(["-device", "virtio-blk-pci,drive=esp"]),
        timeout,
    )
}

/// What a user sees after a boot from the ESP (the shell or GRUB started Svelt) with a test
/// program as the first process: the stub's line, the kernel's command line exactly `cmdline`
/// (the words passed, no `initrd=`), the boot report (entered at EL2, kernel at EL2 with VHE,
/// both CPUs), the program's KTAP with no failure (it comes from an initrd, so the initrd
/// arrived), and status 0.
fn check_esp_run(run: &svelt_tests::Run, cmdline: &str) {
    let ctx = || format!("--- output ---\n{}", run.output);
    assert!(
        run.output
            .contains("EFI stub: using the firmware's device tree"),
        "{}",
        ctx()
    );
    let logged = run
        .output
        .lines()
        .find_map(|l| l.split_once("command line: ").map(|p| p.1.trim_end()))
        .unwrap_or_else(|| panic!("no command line logged; {}", ctx()));
    assert_eq!(logged, format!("\"{cmdline}\""), "{}", ctx());
    let r = svelt_tests::parse_report(&run.output);
    assert_eq!(r.entered_el, Some(2), "{}", ctx());
    assert_eq!(r.kernel_el, Some((2, true)), "{}", ctx());
    assert_eq!(r.cpus_online, Some(2), "{}", ctx());
    let k = svelt_tests::parse_ktap(&run.output);
    assert!(
        run.output.contains("\nok ") && k.failures().is_empty(),
        "{}",
        ctx()
    );
    assert!(run.output.contains("svelt: exit status 0"), "{}", ctx());
    assert_eq!(r.exit_status, Some(0), "{}", ctx());
    assert_eq!(run.status, Some(0), "QEMU's status; {}", ctx());
}

/// docs/boards.md's GRUB lines, first half: GRUB 2.12's `linux` and `initrd` (Debian trixie).
/// GRUB checks the Image header (the arm64 magic, "MZ" and the PE header), starts the image
/// through the firmware and, since the PE header's MajorImageVersion is 1 or more, hands the
/// initrd over through the LINUX_EFI_INITRD_MEDIA_GUID LoadFile2 protocol (so the stub does not
/// fall back on the device tree's). GRUB puts `BOOT_IMAGE=<path>` first on the command line, as
/// it does for Linux.
#[test]
fn grub_linux_and_initrd_commands_boot_the_image() {
    let Some(run) = grub_linux_boot("grub_linux", "trixie") else {
        return;
    };
    assert!(
        !run.output
            .contains("EFI stub: using the initrd the device tree names"),
        "{}",
        run.output
    );
}

/// The same with GRUB 2.06 (Debian bookworm), whose `initrd` knows no LoadFile2: it loads the
/// initrd itself and names it in /chosen of the device tree it installs for the firmware, which
/// the stub then keeps.
#[test]
fn grub_2_06_linux_and_initrd_commands_boot_the_image() {
    let Some(run) = grub_linux_boot("grub_2_06_linux", "bookworm") else {
        return;
    };
    assert!(
        run.output
            .contains("EFI stub: using the initrd the device tree names"),
        "{}",
        run.output
    );
}

/// `linux /svelt.img WORDS`, `initrd /initrd.img`, `boot` through `suite`'s GRUB, checked.
fn grub_linux_boot(test: &str, suite: &str) -> Option<svelt_tests::Run> {
    let root = svelt_tests::root();
    let release = root.join("target/kernel/aarch64-unknown-none-softfloat/release");
    let words = "svelt.exit=semihosting init=/bin/tests/sve_regs";
    let run = boot_grub(
        test,
        suite,
        &format!("set timeout=0\nlinux /svelt.img {words}\ninitrd /initrd.img\nboot\n"),
        &[
            ("svelt.img", &release.join("svelt.img")),
            ("initrd.img", &root.join("target/initramfs.cpio.gz")),
        ],
    )?;
    check_esp_run(&run, &format!("BOOT_IMAGE=/svelt.img {words}"));
    Some(run)
}

/// docs/boards.md's GRUB lines, second half: `chainloader` starts the image as any EFI application,
/// with the rest of the line as its load options; the stub reads the `initrd=` file from the volume
/// it was loaded from (GRUB offers no LoadFile2 initrd here) and drops that word.
#[test]
fn grub_chainloader_starts_the_image_with_an_initrd_file() {
    let root = svelt_tests::root();
    let release = root.join("target/kernel/aarch64-unknown-none-softfloat/release");
    let words = "svelt.exit=semihosting init=/bin/tests/sve_regs";
    let Some(run) = boot_grub(
        "grub_chainloader",
        "trixie",
        &format!("set timeout=0\nchainloader /svelt.efi initrd=/initrd.img {words}\nboot\n"),
        &[
            ("svelt.efi", &release.join("svelt.img")),
            ("initrd.img", &root.join("target/initramfs.cpio.gz")),
        ],
    ) else {
        return;
    };
    check_esp_run(&run, words);
}
