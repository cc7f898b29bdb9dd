//! A small static VMM on Linux's KVM API: boots an arm64 Linux `Image` (with an initramfs) as a
//! guest with N vCPUs (one thread each), a vGICv3, the architected timer, PSCI by HVC, and a
//! PL011 emulated here on MMIO exits as the guest's console (its output goes to stdout). The
//! same binary runs on Svelt's KVM and on Linux's. docs/vmm.md describes it.
//!
//! `vmm --kernel FILE [--initrd FILE] [--append ARGS] [--smp N] [--mem MIB] [--sve-vls LIST]
//! [--sme-vls LIST [--hide fa64,sme2]]`. Started as the first process with no arguments it reads them from
//! /etc/vmm-args (one per line) and powers the machine off at the end. Run with no arguments
//! otherwise (as the userland runner does) it checks its option handling (KTAP).
//!
//! The status: the guest's own if its console printed `svelt-init: exit status N`,
//! `vmm-guest: exit status N` or `svelt-soak: exit status N` (the last one counts); else 0 when
//! the guest powered off (PSCI SYSTEM_OFF) and 1 when it reset (PSCI SYSTEM_RESET, as Linux
//! does after a panic with panic=-1) or the VMM failed. It prints `svelt-vmm: exit status N`
//! last.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use svelt_abi::boot::guest as gl;
use svelt_abi::uapi::kvm::{self as k, CoreReg, KvmOneReg, KvmUserspaceMemoryRegion, KvmVcpuInit};
use svelt_abi::uapi::kvm_sme as ksme;
use svelt_abi::uapi::kvm_sve as ksve;
use svelt_abi::uapi::kvm_vgic as vg;
use svelt_user::ktap::TestResult;
use svelt_user::sys::*;
use svelt_user::*;

const MKNODAT: usize = 33;
const S_IFCHR: u32 = 0o020000;
/// KVM_CAP_ARM_SME in the posted series that gives guests SME (docs/kvm-sme.md).
const KVM_CAP_ARM_SME: usize = ksme::KVM_CAP_ARM_SME as usize;
/// MPIDR_EL1 as a ONE_REG system register.
const MPIDR_EL1: u64 = k::sysreg_id(3, 0, 0, 0, 5);
/// The console lines whose status the VMM takes as the guest's.
const STATUS_PREFIXES: [&str; 3] = ["svelt-init", "vmm-guest", "svelt-soak"];
/// How many vCPUs this VMM makes at most (the redistributor region's room).
const MAX_SMP: u32 = gl::MAX_VCPUS;

#[derive(Debug, PartialEq, Eq)]
struct Options {
    kernel: String,
    initrd: Option<String>,
    append: String,
    smp: u32,
    mem_mib: u64,
    sve_vls: Option<[u64; 8]>,
    sme_vls: Option<[u64; 8]>,
    /// SME features the guest must not see (`--hide fa64,sme2`), lowered in its ID registers.
    hide_fa64: bool,
    hide_sme2: bool,
}

const DEFAULT_APPEND: &str = "console=ttyAMA0 panic=-1";

fn parse_options(words: &[&str]) -> Result<Options, String> {
    let mut o = Options {
        kernel: String::new(),
        initrd: None,
        append: String::from(DEFAULT_APPEND),
        smp: 1,
        mem_mib: 256,
        sve_vls: None,
        sme_vls: None,
        hide_fa64: false,
        hide_sme2: false,
    };
    let mut i = 0;
    while i < words.len() {
        let opt = words[i];
        let val = words
            .get(i + 1)
            .copied()
            .ok_or_else(|| format!("{opt} wants a value"))?;
        match opt {
            "--kernel" => o.kernel = String::from(val),
            "--initrd" => o.initrd = Some(String::from(val)),
            "--append" => o.append = format!("{DEFAULT_APPEND} {val}"),
            "--smp" => {
                o.smp = val
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_SMP).contains(n))
                    .ok_or_else(|| format!("--smp wants 1..{MAX_SMP}, not {val}"))?
            }
            "--mem" => {
                o.mem_mib = val
                    .parse()
                    .ok()
                    .filter(|n| (8..=65536).contains(n))
                    .ok_or_else(|| format!("--mem wants MiB in 8..65536, not {val}"))?
            }
            "--sve-vls" => {
                o.sve_vls = Some(gl::parse_vls(val).ok_or_else(|| {
                    format!("--sve-vls wants lengths in bytes (multiples of 16 up to 256, each once), not {val}")
                })?)
            }
            "--sme-vls" => {
                o.sme_vls = Some(gl::parse_vls(val).ok_or_else(|| {
                    format!("--sme-vls wants lengths in bytes (multiples of 16 up to 256, each once), not {val}")
                })?)
            }
            "--hide" => {
                for f in val.split(',') {
                    match f {
                        "fa64" => o.hide_fa64 = true,
                        "sme2" => o.hide_sme2 = true,
                        _ => return Err(format!("--hide takes fa64 and sme2, not {f}")),
                    }
                }
            }
            _ => return Err(format!("unknown option {opt}")),
        }
        i += 2;
    }
    if o.kernel.is_empty() {
        return Err(String::from("--kernel FILE is needed"));
    }
    if (o.hide_fa64 || o.hide_sme2) && o.sme_vls.is_none() {
        return Err(String::from(
            "--hide is for SME features: it needs --sme-vls",
        ));
    }
    Ok(o)
}

fn ioctl(fd: i32, req: u32, arg: usize) -> SysResult {
    sys::ioctl(fd, req as usize, arg)
}

/// /dev/kvm, made if the file system has no node for it.
fn open_kvm() -> Result<i32, String> {
    match sys::open("/dev/kvm", O_RDWR | O_CLOEXEC) {
        Ok(fd) => Ok(fd),
        Err(ENOENT) => {
            let p = CPath::new("/dev/kvm");
            let dev = (10usize << 8) | 232;
            sys::syscall(
                MKNODAT,
                &[AT_FDCWD as usize, p.ptr(), (S_IFCHR | 0o660) as usize, dev],
            )
            .map_err(|e| format!("mknod /dev/kvm: {e:?}"))?;
            sys::open("/dev/kvm", O_RDWR | O_CLOEXEC).map_err(|e| format!("open /dev/kvm: {e:?}"))
        }
        Err(e) => Err(format!("open /dev/kvm: {e:?} (no KVM in this kernel?)")),
    }
}

/// Whether the guest gets SME: only when --sme-vls asks for it, and then only from a kernel that
/// offers SME to guests (KVM_CAP_ARM_SME, which Linux 7.3 does not have); otherwise the reason.
fn check_sme(kvm: i32, o: &Options) -> Result<bool, String> {
    if o.sme_vls.is_none() {
        return Ok(false);
    }
    match ioctl(kvm, k::KVM_CHECK_EXTENSION, KVM_CAP_ARM_SME) {
        Ok(n) if n > 0 => Ok(true),
        _ => Err(format!(
            "--sme-vls: this kernel's KVM offers no SME to guests (KVM_CHECK_EXTENSION {KVM_CAP_ARM_SME} is 0)"
        )),
    }
}

fn set_reg(vcpu: i32, id: u64, v: u64) -> SysResult {
    let r = KvmOneReg {
        id,
        addr: &v as *const u64 as u64,
    };
    ioctl(vcpu, k::KVM_SET_ONE_REG, &r as *const _ as usize)
}

/// Writes a vector-length set register (SVE_VLS or SME_VLS: eight words, one bit per VQ).
fn set_vls(vcpu: i32, id: u64, vls: &[u64; 8]) -> SysResult {
    let bytes: Vec<u8> = vls.iter().flat_map(|w| w.to_le_bytes()).collect();
    svelt_user::kvm::set_one(vcpu, id, &bytes)
}

fn get_reg(vcpu: i32, id: u64) -> SysResult<u64> {
    let mut v = 0u64;
    let r = KvmOneReg {
        id,
        addr: &mut v as *mut u64 as u64,
    };
    ioctl(vcpu, k::KVM_GET_ONE_REG, &r as *const _ as usize).map(|_| v)
}

/// ID_AA64PFR1_EL1 and ID_AA64SMFR0_EL1 as ONE_REG system registers.
const ID_AA64PFR1_EL1: u64 = k::sysreg_id(3, 0, 0, 4, 1);
const ID_AA64SMFR0_EL1: u64 = k::sysreg_id(3, 0, 0, 4, 5);
/// ID_AA64SMFR0_EL1.SMEver (bits 59:56): 1 or more is SME2.
const SMFR0_SMEVER: u64 = 0xf << 56;

/// Lowers the VM's SME ID fields for `--hide` (before any vCPU runs: the VM's ID registers are
/// shared by its vCPUs): FA64 off in ID_AA64SMFR0_EL1; SME2 off as SMEver 0 there and
/// ID_AA64PFR1_EL1.SME 1 (SME without ZT0).
fn hide_sme_features(vcpu: i32, o: &Options) -> Result<(), String> {
    let mut smfr0 =
        get_reg(vcpu, ID_AA64SMFR0_EL1).map_err(|e| format!("ID_AA64SMFR0_EL1: {e:?}"))?;
    if o.hide_fa64 {
        smfr0 &= !ksme::SMFR0_FA64;
    }
    if o.hide_sme2 {
        smfr0 &= !SMFR0_SMEVER;
        let pfr1 = get_reg(vcpu, ID_AA64PFR1_EL1).map_err(|e| format!("ID_AA64PFR1_EL1: {e:?}"))?;
        let one = (pfr1 & !ksme::PFR1_SME) | 1 << ksme::PFR1_SME_SHIFT;
        set_reg(vcpu, ID_AA64PFR1_EL1, one)
            .map_err(|e| format!("--hide sme2: ID_AA64PFR1_EL1.SME 1 refused ({e:?})"))?;
    }
    set_reg(vcpu, ID_AA64SMFR0_EL1, smfr0)
        .map_err(|e| format!("--hide: ID_AA64SMFR0_EL1 {smfr0:#x} refused ({e:?})"))?;
    Ok(())
}

/// Reads all of `path` into guest memory at `dst` (at most `room` bytes); its length.
fn load_file(path: &str, dst: usize, room: u64) -> Result<u64, String> {
    let fd = sys::open(path, O_RDONLY | O_CLOEXEC).map_err(|e| format!("open {path}: {e:?}"))?;
    let size = sys::fstat(fd)
        .map_err(|e| format!("fstat {path}: {e:?}"))?
        .st_size as u64;
    if size > room {
        return Err(format!("{path}: {size} bytes do not fit in {room}"));
    }
    let mut done = 0u64;
    while done < size {
        let chunk = (size - done).min(1 << 20) as usize;
        // SAFETY: dst..dst+room is guest RAM mapped by this process, and done+chunk <= size <=
        // room.
        let buf =
            unsafe { core::slice::from_raw_parts_mut((dst + done as usize) as *mut u8, chunk) };
        match sys::read(fd, buf) {
            Ok(0) => return Err(format!("{path}: short read at {done}")),
            Ok(n) => done += n as u64,
            Err(EINTR) => {}
            Err(e) => return Err(format!("read {path}: {e:?}")),
        }
    }
    let _ = sys::close(fd);
    Ok(size)
}

fn file_size(path: &str) -> Result<u64, String> {
    sys::stat(path)
        .map(|s| s.st_size as u64)
        .map_err(|e| format!("stat {path}: {e:?}"))
}

// ---- the PL011 ----

/// PL011 registers (Arm's PrimeCell UART TRM, DDI 0183): offsets and bits used here.
mod pl011 {
    pub const DR: u64 = 0x000;
    pub const FR: u64 = 0x018;
    pub const IMSC: u64 = 0x038;
    pub const RIS: u64 = 0x03c;
    pub const MIS: u64 = 0x040;
    pub const FR_RXFE: u64 = 1 << 4;
    pub const FR_TXFE: u64 = 1 << 7;
    /// The transmit interrupt: the FIFO never fills here, so it is always raised.
    pub const INT_TX: u32 = 1 << 5;
    /// Peripheral and PrimeCell IDs at 0xfe0..0x1000: a PL011 r1p5.
    pub const IDS: [u8; 8] = [0x11, 0x10, 0x34, 0x00, 0x0d, 0xf0, 0x05, 0xb1];
}

static VM_FD: AtomicI32 = AtomicI32::new(-1);
/// The registers the guest writes and reads back (0x000..0x050, by word).
static UART_REGS: [AtomicU32; 20] = [const { AtomicU32::new(0) }; 20];
static UART_LEVEL: AtomicBool = AtomicBool::new(false);
/// The last status line the console printed (-1: none).
static GUEST_STATUS: AtomicI32 = AtomicI32::new(-1);
static LINE_LOCK: AtomicBool = AtomicBool::new(false);
static LINE_LEN: AtomicUsize = AtomicUsize::new(0);
static mut LINE: [u8; 128] = [0; 128];

/// Serialises IMSC writes with the KVM_IRQ_LINE calls they cause: two vCPUs writing IMSC at once
/// could otherwise issue their calls in the other order than their levels were decided, leaving
/// the line low while TX is unmasked (the guest's driver would then wait for a TX interrupt
/// that never comes).
static UART_IRQ_LOCK: AtomicBool = AtomicBool::new(false);

/// Writes IMSC and raises or lowers the UART's SPI when its masked status changes.
fn uart_set_imsc(v: u32) {
    while UART_IRQ_LOCK
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    UART_REGS[(pl011::IMSC / 4) as usize].store(v, Ordering::Relaxed);
    let level = v & pl011::INT_TX != 0;
    if UART_LEVEL.swap(level, Ordering::Relaxed) != level {
        // struct kvm_irq_level: the SPI's type (1) in bits 27:24 and its INTID.
        let irq: [u32; 2] = [(1 << 24) | (32 + gl::UART_SPI), level as u32];
        let _ = ioctl(
            VM_FD.load(Ordering::Relaxed),
            vg::KVM_IRQ_LINE,
            irq.as_ptr() as usize,
        );
    }
    UART_IRQ_LOCK.store(false, Ordering::Release);
}

/// One byte the guest sent: to stdout, and into the line the status is read from.
fn uart_out(b: u8) {
    let _ = sys::write(1, &[b]);
    while LINE_LOCK
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    let len = LINE_LEN.load(Ordering::Relaxed);
    // SAFETY: LINE is only touched while LINE_LOCK is held.
    let line = unsafe { &mut *core::ptr::addr_of_mut!(LINE) };
    if b == b'\n' {
        if let Some(s) = gl::status_line(&line[..len], &STATUS_PREFIXES) {
            GUEST_STATUS.store(s, Ordering::Relaxed);
        }
        LINE_LEN.store(0, Ordering::Relaxed);
    } else if len < line.len() {
        line[len] = b;
        LINE_LEN.store(len + 1, Ordering::Relaxed);
    }
    LINE_LOCK.store(false, Ordering::Release);
}

fn uart_access(off: u64, write: bool, data: u64) -> u64 {
    use pl011::*;
    if write {
        match off {
            DR => uart_out(data as u8),
            // ICR and the read-only registers: nothing to keep (TX stays raised).
            RIS | MIS | 0x044 => {}
            IMSC => uart_set_imsc(data as u32),
            _ if off < 0x50 => UART_REGS[(off / 4) as usize].store(data as u32, Ordering::Relaxed),
            _ => {}
        }
        return 0;
    }
    match off {
        DR => 0,
        FR => FR_TXFE | FR_RXFE,
        RIS => INT_TX as u64,
        MIS => (INT_TX & UART_REGS[(IMSC / 4) as usize].load(Ordering::Relaxed)) as u64,
        0xfe0..=0xffc => IDS[((off - 0xfe0) / 4) as usize] as u64,
        _ if off < 0x50 => UART_REGS[(off / 4) as usize].load(Ordering::Relaxed) as u64,
        _ => 0,
    }
}

// ---- vCPUs ----

struct Vcpu {
    index: u32,
    fd: i32,
    run: *mut u8,
}

impl Vcpu {
    fn run_u32(&self, off: usize) -> u32 {
        // SAFETY: inside the vCPU's mapped kvm_run page.
        unsafe { (self.run.add(off) as *const u32).read_volatile() }
    }
    fn run_u64(&self, off: usize) -> u64 {
        // SAFETY: as in run_u32.
        unsafe { (self.run.add(off) as *const u64).read_volatile() }
    }
    fn set_run_u64(&self, off: usize, v: u64) {
        // SAFETY: as in run_u32.
        unsafe { (self.run.add(off) as *mut u64).write_volatile(v) }
    }
}

/// Prints the status line and ends: powers off as the first process, else exits.
fn finish(status: i32) -> ! {
    println!("svelt-vmm: exit status {status}");
    if sys::getpid() == 1 {
        sys::sync();
        let _ = sys::reboot(LINUX_REBOOT_CMD_POWER_OFF);
    }
    sys::exit_group(status)
}

fn guest_status(otherwise: i32) -> i32 {
    match GUEST_STATUS.load(Ordering::Relaxed) {
        s if s >= 0 => s,
        _ => otherwise,
    }
}

/// Runs a vCPU until the guest powers off or resets; never returns.
fn vcpu_loop(v: &Vcpu) -> ! {
    loop {
        match ioctl(v.fd, k::KVM_RUN, 0) {
            Ok(_) => {}
            Err(EINTR) => continue,
            Err(e) => {
                eprintln!("vmm: vCPU {}: KVM_RUN: {e:?}", v.index);
                finish(1)
            }
        }
        match v.run_u32(k::run::EXIT_REASON) {
            k::KVM_EXIT_MMIO => {
                let addr = v.run_u64(k::run::MMIO_PHYS_ADDR);
                let len = v.run_u32(k::run::MMIO_LEN);
                let write = v.run_u32(k::run::MMIO_IS_WRITE) & 0xff != 0;
                let data = v.run_u64(k::run::MMIO_DATA);
                let mask = if len >= 8 {
                    u64::MAX
                } else {
                    (1u64 << (len * 8)) - 1
                };
                let r = if (gl::UART_BASE..gl::UART_BASE + gl::UART_SIZE).contains(&addr) {
                    uart_access(addr - gl::UART_BASE, write, data & mask)
                } else {
                    0
                };
                if !write {
                    v.set_run_u64(k::run::MMIO_DATA, r & mask);
                }
            }
            k::KVM_EXIT_SYSTEM_EVENT => match v.run_u32(k::run::SYSTEM_EVENT_TYPE) {
                k::KVM_SYSTEM_EVENT_SHUTDOWN => finish(guest_status(0)),
                k::KVM_SYSTEM_EVENT_RESET => {
                    eprintln!("vmm: the guest reset (PSCI SYSTEM_RESET)");
                    finish(guest_status(1))
                }
                t => {
                    eprintln!("vmm: vCPU {}: system event {t}", v.index);
                    finish(guest_status(1))
                }
            },
            k::KVM_EXIT_INTR => {}
            r => {
                eprintln!("vmm: vCPU {}: unexpected exit reason {r}", v.index);
                finish(1)
            }
        }
    }
}

extern "C" fn vcpu_thread(arg: usize) -> i32 {
    // SAFETY: arg is a Vcpu leaked by `boot`, alive for the rest of the process.
    let v = unsafe { &*(arg as *const Vcpu) };
    vcpu_loop(v)
}

/// Sets up the VM and runs it; returns only on an error before the guest starts.
fn boot(o: &Options) -> Result<(), String> {
    let kvm = open_kvm()?;
    let sme = check_sme(kvm, o)?;
    let sve_cap = ioctl(kvm, k::KVM_CHECK_EXTENSION, ksve::KVM_CAP_ARM_SVE as usize) == Ok(1);
    let pauth_cap = [
        k::KVM_CAP_ARM_PTRAUTH_ADDRESS,
        k::KVM_CAP_ARM_PTRAUTH_GENERIC,
    ]
    .iter()
    .all(|&c| ioctl(kvm, k::KVM_CHECK_EXTENSION, c as usize) == Ok(1));
    if o.sve_vls.is_some() && !sve_cap {
        return Err(String::from(
            "--sve-vls: this kernel's KVM offers no SVE to guests",
        ));
    }
    let vm = ioctl(kvm, k::KVM_CREATE_VM, 0).map_err(|e| format!("KVM_CREATE_VM: {e:?}"))? as i32;
    VM_FD.store(vm, Ordering::Relaxed);

    // Guest RAM, and what goes in it.
    let ram_size = o.mem_mib << 20;
    let ram = sys::mmap(
        0,
        ram_size as usize,
        PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
        -1,
        0,
    )
    .map_err(|e| format!("mmap {} MiB of guest RAM: {e:?}", o.mem_mib))?;
    ioctl(
        vm,
        k::KVM_SET_USER_MEMORY_REGION,
        &KvmUserspaceMemoryRegion {
            slot: 0,
            flags: 0,
            guest_phys_addr: gl::RAM_BASE,
            memory_size: ram_size,
            userspace_addr: ram as u64,
        } as *const _ as usize,
    )
    .map_err(|e| format!("KVM_SET_USER_MEMORY_REGION: {e:?}"))?;
    let mut head = [0u8; 64];
    let kfd = sys::open(&o.kernel, O_RDONLY | O_CLOEXEC)
        .map_err(|e| format!("open {}: {e:?}", o.kernel))?;
    let _ = sys::read(kfd, &mut head);
    let _ = sys::close(kfd);
    let h =
        gl::parse_image(&head).map_err(|e| format!("{}: not an arm64 Image: {e:?}", o.kernel))?;
    let klen = file_size(&o.kernel)?;
    let ilen = match &o.initrd {
        Some(p) => file_size(p)?,
        None => 0,
    };
    let l = gl::layout(&h, klen, ilen, ram_size).map_err(|_| {
        format!(
            "{} MiB of RAM hold no kernel, initramfs and device tree",
            o.mem_mib
        )
    })?;
    let at = |ipa: u64| ram + (ipa - gl::RAM_BASE) as usize;
    load_file(&o.kernel, at(l.kernel), l.initrd - l.kernel)?;
    if let Some(p) = &o.initrd {
        load_file(p, at(l.initrd), l.dtb - l.initrd)?;
    }

    // vCPUs: the first runs the kernel, the others wait for PSCI CPU_ON.
    let run_size = ioctl(kvm, k::KVM_GET_VCPU_MMAP_SIZE, 0)
        .map_err(|e| format!("KVM_GET_VCPU_MMAP_SIZE: {e:?}"))?;
    let mut vcpus = Vec::new();
    let mut mpidrs = Vec::new();
    for i in 0..o.smp {
        let fd = ioctl(vm, k::KVM_CREATE_VCPU, i as usize)
            .map_err(|e| format!("KVM_CREATE_VCPU {i}: {e:?}"))? as i32;
        let mut init = KvmVcpuInit::default();
        ioctl(
            vm,
            k::KVM_ARM_PREFERRED_TARGET,
            &mut init as *mut _ as usize,
        )
        .map_err(|e| format!("KVM_ARM_PREFERRED_TARGET: {e:?}"))?;
        init.features[0] |= 1 << k::KVM_ARM_VCPU_PSCI_0_2;
        if i > 0 {
            init.features[0] |= 1 << k::KVM_ARM_VCPU_POWER_OFF;
        }
        if sve_cap {
            init.features[0] |= 1 << ksve::KVM_ARM_VCPU_SVE;
        }
        if sme {
            init.features[0] |= 1 << ksme::KVM_ARM_VCPU_SME;
        }
        // Pointer authentication wherever KVM offers it, as QEMU's `-cpu host` asks.
        if pauth_cap {
            init.features[0] |=
                1 << k::KVM_ARM_VCPU_PTRAUTH_ADDRESS | 1 << k::KVM_ARM_VCPU_PTRAUTH_GENERIC;
        }
        ioctl(fd, k::KVM_ARM_VCPU_INIT, &init as *const _ as usize)
            .map_err(|e| format!("KVM_ARM_VCPU_INIT {i}: {e:?}"))?;
        if let (true, Some(vls)) = (sve_cap, &o.sve_vls) {
            set_vls(fd, ksve::KVM_REG_ARM64_SVE_VLS, vls).map_err(|e| {
                format!("--sve-vls: KVM refused the set ({e:?}); Linux's KVM takes exactly the host's lengths up to the largest")
            })?;
        }
        if let (true, Some(vls)) = (sme, &o.sme_vls) {
            set_vls(fd, ksme::KVM_REG_ARM64_SME_VLS, vls).map_err(|e| {
                format!("--sme-vls: KVM refused the set ({e:?}); it takes the host's streaming lengths up to the largest")
            })?;
        }
        // One finalize covers every vector feature the vCPU has (SVE's number is also the
        // series' KVM_ARM_VCPU_VEC).
        if sve_cap || sme {
            svelt_user::kvm::finalize(fd, ksme::KVM_ARM_VCPU_VEC)
                .map_err(|e| format!("KVM_ARM_VCPU_FINALIZE(VEC): {e:?}"))?;
        }
        mpidrs.push(get_reg(fd, MPIDR_EL1).map_err(|e| format!("MPIDR_EL1 of vCPU {i}: {e:?}"))?);
        let run = sys::mmap(0, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            .map_err(|e| format!("mmap kvm_run: {e:?}"))? as *mut u8;
        vcpus.push(Vcpu { index: i, fd, run });
    }

    if sme {
        hide_sme_features(vcpus[0].fd, o)?;
    }

    // The vGICv3, at the addresses the device tree gives.
    let mut dev = k::KvmCreateDevice {
        ty: vg::KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: 0,
    };
    ioctl(vm, k::KVM_CREATE_DEVICE, &mut dev as *mut _ as usize)
        .map_err(|e| format!("KVM_CREATE_DEVICE(VGIC_V3): {e:?}"))?;
    let gic = dev.fd as i32;
    let addr = vg::KVM_DEV_ARM_VGIC_GRP_ADDR;
    svelt_user::kvm::set_device_u64(gic, addr, vg::KVM_VGIC_V3_ADDR_TYPE_DIST, gl::GICD_BASE)
        .map_err(|e| format!("vGIC distributor address: {e:?}"))?;
    svelt_user::kvm::set_device_u64(gic, addr, vg::KVM_VGIC_V3_ADDR_TYPE_REDIST, gl::GICR_BASE)
        .map_err(|e| format!("vGIC redistributor address: {e:?}"))?;
    svelt_user::kvm::set_device_u64(
        gic,
        vg::KVM_DEV_ARM_VGIC_GRP_CTRL,
        vg::KVM_DEV_ARM_VGIC_CTRL_INIT,
        0,
    )
    .map_err(|e| format!("vGIC init: {e:?}"))?;

    // The device tree.
    let mut dtb = vec![0u8; 16384];
    let mut strings = vec![0u8; 1024];
    let initrd = o.initrd.as_ref().map(|_| (l.initrd, l.initrd + ilen));
    let cfg = gl::GuestConfig {
        ram_size,
        mpidrs: &mpidrs,
        bootargs: &o.append,
        initrd,
    };
    let n =
        gl::write_dtb(&mut dtb, &mut strings, &cfg).map_err(|e| format!("device tree: {e:?}"))?;
    // SAFETY: the last DTB_MAX bytes of guest RAM, which nothing else uses; n <= 16 KiB.
    unsafe { core::ptr::copy_nonoverlapping(dtb.as_ptr(), at(l.dtb) as *mut u8, n) };

    // booting.rst: x0 = the device tree's address, x1..x3 = 0, MMU off, interrupts masked.
    let v0 = &vcpus[0];
    set_reg(v0.fd, CoreReg::Pc.id(), l.entry).map_err(|e| format!("PC: {e:?}"))?;
    set_reg(v0.fd, CoreReg::X(0).id(), l.dtb).map_err(|e| format!("x0: {e:?}"))?;

    let vcpus = vcpus.leak();
    for v in vcpus.iter().skip(1) {
        let p = v as *const Vcpu as usize;
        svelt_user::proc::spawn_thread(vcpu_thread, p, 0)
            .map_err(|e| format!("vCPU thread {}: {e:?}", v.index))?;
    }
    vcpu_loop(&vcpus[0])
}

/// The arguments a first process reads from /etc/vmm-args, one per line.
fn args_file() -> Option<Vec<String>> {
    let text = svelt_user::io::read_file("/etc/vmm-args").ok()?;
    let text = core::str::from_utf8(&text).ok()?;
    Some(
        text.lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
    )
}

// ---- the checks run without arguments ----

fn options_are_checked() -> TestResult {
    let o = parse_options(&["--kernel", "/k", "--smp", "2", "--sve-vls", "16,32"])?;
    check_eq!(o.smp, 2);
    check_eq!(o.sve_vls.map(|s| s[0]), Some(0b11));
    check_eq!(o.mem_mib, 256);
    check!(
        parse_options(&["--smp", "2"]).is_err(),
        "no kernel accepted"
    );
    check!(parse_options(&["--kernel", "/k", "--smp", "0"]).is_err());
    check!(parse_options(&["--kernel", "/k", "--sve-vls", "24"]).is_err());
    check!(parse_options(&["--kernel", "/k", "--mem"]).is_err());
    check!(parse_options(&["--kernel", "/k", "--bogus", "1"]).is_err());
    let o = parse_options(&["--kernel", "/k", "--sme-vls", "32", "--hide", "fa64,sme2"])?;
    check!(o.hide_fa64 && o.hide_sme2);
    check!(
        parse_options(&["--kernel", "/k", "--hide", "fa64"]).is_err(),
        "--hide without SME"
    );
    check!(parse_options(&["--kernel", "/k", "--sme-vls", "32", "--hide", "zt"]).is_err());
    Ok(())
}

/// --sme-vls is taken where the kernel offers SME to guests (capability 252) and refused, naming
/// the capability, where it does not (Linux 7.3).
fn sme_needs_the_capability() -> TestResult {
    let kvm = match sys::open("/dev/kvm", O_RDWR | O_CLOEXEC) {
        Ok(fd) => fd,
        Err(_) => return ktap::skip("no /dev/kvm"),
    };
    let o = t!(parse_options(&["--kernel", "/k", "--sme-vls", "16,32"]).map_err(|_| EINVAL));
    check_eq!(o.sme_vls.map(|s| s[0]), Some(0b11));
    let offered = svelt_user::kvm::has_cap(kvm, KVM_CAP_ARM_SME as u64);
    match check_sme(kvm, &o) {
        Ok(got) => check!(got && offered, "--sme-vls taken without the capability"),
        Err(e) => {
            check!(!offered, "refused although offered: {e}");
            check!(e.contains("EXTENSION 252"), "{e}");
        }
    }
    check!(parse_options(&["--kernel", "/k", "--sme-vls", "24"]).is_err());
    let _ = sys::close(kvm);
    Ok(())
}

/// A file that is not an Image is refused by name.
fn not_an_image() -> TestResult {
    let e = match boot_in_child_error("/etc/hello.txt") {
        Some(e) => e,
        None => return ktap::skip("no /dev/kvm or no /etc/hello.txt"),
    };
    check!(e.contains("not an arm64 Image"), "{e}");
    Ok(())
}

/// What `boot` says for this kernel file (it fails before any vCPU runs).
fn boot_in_child_error(kernel: &str) -> Option<String> {
    if sys::stat(kernel).is_err() {
        return None;
    }
    // The node can exist where the kernel has no KVM (a kernel at EL1 answers ENXIO, as Linux's
    // misc device does when its driver is absent).
    let kvm = sys::open("/dev/kvm", O_RDWR | O_CLOEXEC).ok()?;
    let _ = sys::close(kvm);
    let o = parse_options(&["--kernel", kernel]).ok()?;
    boot(&o).err()
}

fn main(a: &rt::Args) -> i32 {
    let words: Vec<&str> = a
        .argv()
        .skip(1)
        .filter_map(|w| core::str::from_utf8(w).ok())
        .collect();
    let from_file;
    let words: Vec<&str> = if words.is_empty() && sys::getpid() == 1 {
        svelt_user::proc::mount_when_init();
        from_file = args_file().unwrap_or_default();
        from_file.iter().map(String::as_str).collect()
    } else {
        words
    };
    if words.is_empty() {
        return ktap::run(&[
            ("options_are_checked", options_are_checked),
            ("sme_needs_the_capability", sme_needs_the_capability),
            ("not_an_image", not_an_image),
        ]);
    }
    let o = match parse_options(&words) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("vmm: {e}");
            finish(2)
        }
    };
    if let Err(e) = boot(&o) {
        eprintln!("vmm: {e}");
        finish(1)
    }
    0
}

entry!(main);
