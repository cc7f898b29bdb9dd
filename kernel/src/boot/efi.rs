//! The EFI stub: the Image is also a PE/COFF EFI application (boot/head.s), and UEFI firmware
//! starts it here. The stub gathers what a Linux Image loader would have given the kernel:
//!
//! - the command line, from the loaded image's options (UCS-2), without its `initrd=` words;
//! - the initrd, from the LINUX_EFI_INITRD_MEDIA_GUID LoadFile2 protocol or else the
//!   `initrd=` files on the volume the image came from, or else the one the firmware's DTB
//!   names in /chosen (where an older GRUB puts it);
//! - the machine's description: the firmware's DTB (configuration table), or, without one or
//!   with `acpi=force`, a DTB written from the ACPI tables (svelt_abi::boot::acpi);
//! - the memory map, as the DTB's /memory nodes;
//!
//! then copies the image to a 2 MiB-aligned block, exits boot services and enters the Image's
//! first instruction with x0 = the DTB, exactly as `-kernel` does. The kernel proper is the same
//! either way.
//!
//! This runs wherever the firmware loaded the image, before the kernel is at its link address:
//! only PC-relative code (no statics holding pointers, no trait objects, no core::fmt, no heap,
//! no panics: every index from firmware data is checked with `get`). Strings it prints are
//! byte-string literals.

use crate::arch::efi as arch_efi;
use core::ffi::c_void;
use svelt_abi::boot::acpi::{self, PhysMem};
use svelt_abi::boot::efi as abi_efi;
use svelt_abi::boot::fdt::{self, Chosen};
use svelt_abi::boot::memrange::Range;

type Handle = *mut c_void;
type Status = usize;

const ERROR: Status = 1 << 63;
const LOAD_ERROR: Status = ERROR | 1;
const INVALID_PARAMETER: Status = ERROR | 2;
const BUFFER_TOO_SMALL: Status = ERROR | 5;
const OUT_OF_RESOURCES: Status = ERROR | 9;
const NOT_FOUND: Status = ERROR | 14;

#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
struct Guid(u32, u16, u16, [u8; 8]);

const LOADED_IMAGE: Guid = Guid(
    0x5b1b31a1,
    0x9562,
    0x11d2,
    [0x8e, 0x3f, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b],
);
const DEVICE_TREE: Guid = Guid(
    0xb1b621d5,
    0xf19c,
    0x41a5,
    [0x83, 0x0b, 0xd9, 0x15, 0x2c, 0x69, 0xaa, 0xe0],
);
const ACPI_20: Guid = Guid(
    0x8868e871,
    0xe4f1,
    0x11d3,
    [0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81],
);
const LINUX_INITRD_MEDIA: Guid = Guid(
    0x5568e427,
    0x68fc,
    0x4f3d,
    [0xac, 0x74, 0xca, 0x55, 0x52, 0x31, 0xcc, 0x68],
);
const LOAD_FILE2: Guid = Guid(
    0x4006c0c1,
    0xfcb3,
    0x403e,
    [0x99, 0x6d, 0x4a, 0x6c, 0x87, 0x24, 0xe0, 0x6d],
);
const SIMPLE_FILE_SYSTEM: Guid = Guid(
    0x964e5b22,
    0x6459,
    0x11d2,
    [0x8e, 0x39, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b],
);
const FILE_INFO: Guid = Guid(
    0x09576e92,
    0x6d3f,
    0x11d2,
    [0x8e, 0x39, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b],
);
const RNG: Guid = Guid(
    0x3152bca5,
    0xeade,
    0x433d,
    [0x86, 0x2e, 0xc0, 0x1c, 0xdc, 0x29, 0x1f, 0x44],
);

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct TableHeader {
    signature: u64,
    revision: u32,
    header_size: u32,
    crc32: u32,
    reserved: u32,
}

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct SystemTable {
    hdr: TableHeader,
    firmware_vendor: *const u16,
    firmware_revision: u32,
    console_in_handle: Handle,
    con_in: *mut c_void,
    console_out_handle: Handle,
    con_out: *mut TextOutput,
    standard_error_handle: Handle,
    std_err: *mut c_void,
    runtime_services: *const RuntimeServices,
    boot_services: *const BootServices,
    number_of_table_entries: usize,
    configuration_table: *const ConfigTable,
}
const _: () = assert!(core::mem::offset_of!(SystemTable, con_out) == 64);
const _: () = assert!(core::mem::offset_of!(SystemTable, boot_services) == 96);
const _: () = assert!(core::mem::offset_of!(SystemTable, configuration_table) == 112);

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct RuntimeServices {
    hdr: TableHeader,
    get_time: unsafe extern "efiapi" fn(*mut EfiTime, *mut c_void) -> Status,
}

#[repr(C)]
#[derive(Default)]
struct EfiTime {
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    pad1: u8,
    nanosecond: u32,
    time_zone: i16,
    daylight: u8,
    pad2: u8,
}
const _: () = assert!(core::mem::size_of::<EfiTime>() == 16);

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct ConfigTable {
    guid: Guid,
    table: *mut c_void,
}

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct TextOutput {
    reset: usize,
    output_string: unsafe extern "efiapi" fn(*mut TextOutput, *const u16) -> Status,
}

type Unused = usize;

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct BootServices {
    hdr: TableHeader,
    raise_tpl: Unused,
    restore_tpl: Unused,
    allocate_pages: unsafe extern "efiapi" fn(u32, u32, usize, *mut u64) -> Status,
    free_pages: Unused,
    get_memory_map:
        unsafe extern "efiapi" fn(*mut usize, *mut u8, *mut usize, *mut usize, *mut u32) -> Status,
    allocate_pool: Unused,
    free_pool: Unused,
    events: [Unused; 6],
    protocol_interfaces: [Unused; 3],
    handle_protocol: unsafe extern "efiapi" fn(Handle, *const Guid, *mut *mut c_void) -> Status,
    reserved: Unused,
    register_protocol_notify: Unused,
    locate_handle: Unused,
    locate_device_path:
        unsafe extern "efiapi" fn(*const Guid, *mut *const u8, *mut Handle) -> Status,
    install_configuration_table: Unused,
    images: [Unused; 4],
    exit_boot_services: unsafe extern "efiapi" fn(Handle, usize) -> Status,
    misc: [Unused; 3],
    controllers: [Unused; 2],
    open_close_protocol: [Unused; 3],
    protocols_per_handle: Unused,
    locate_handle_buffer: Unused,
    locate_protocol:
        unsafe extern "efiapi" fn(*const Guid, *mut c_void, *mut *mut c_void) -> Status,
}
const _: () = assert!(core::mem::offset_of!(BootServices, allocate_pages) == 40);
const _: () = assert!(core::mem::offset_of!(BootServices, get_memory_map) == 56);
const _: () = assert!(core::mem::offset_of!(BootServices, handle_protocol) == 152);
const _: () = assert!(core::mem::offset_of!(BootServices, locate_device_path) == 184);
const _: () = assert!(core::mem::offset_of!(BootServices, exit_boot_services) == 232);
const _: () = assert!(core::mem::offset_of!(BootServices, locate_protocol) == 320);

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct LoadedImage {
    revision: u32,
    parent_handle: Handle,
    system_table: *mut SystemTable,
    device_handle: Handle,
    file_path: *mut c_void,
    reserved: *mut c_void,
    load_options_size: u32,
    load_options: *const u16,
    image_base: *const u8,
    image_size: u64,
}
const _: () = assert!(core::mem::offset_of!(LoadedImage, load_options) == 56);
const _: () = assert!(core::mem::offset_of!(LoadedImage, image_size) == 72);

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct LoadFile2 {
    load_file:
        unsafe extern "efiapi" fn(*mut LoadFile2, *const u8, u8, *mut usize, *mut c_void) -> Status,
}

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct SimpleFileSystem {
    revision: u64,
    open_volume: unsafe extern "efiapi" fn(*mut SimpleFileSystem, *mut *mut File) -> Status,
}

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct File {
    revision: u64,
    open: unsafe extern "efiapi" fn(*mut File, *mut *mut File, *const u16, u64, u64) -> Status,
    close: unsafe extern "efiapi" fn(*mut File) -> Status,
    delete: Unused,
    read: unsafe extern "efiapi" fn(*mut File, *mut usize, *mut c_void) -> Status,
    write: Unused,
    get_position: Unused,
    set_position: Unused,
    get_info: unsafe extern "efiapi" fn(*mut File, *const Guid, *mut usize, *mut c_void) -> Status,
}

#[repr(C)]
#[allow(dead_code)] // firmware layouts: every field is there for the offsets
struct Rng {
    get_info: Unused,
    get_rng: unsafe extern "efiapi" fn(*mut Rng, *const Guid, usize, *mut u8) -> Status,
}

const PAGE: u64 = 4096;
const MIB2: u64 = 2 << 20;
/// LoaderData: what the kernel later sees as ordinary RAM (the stub's own blocks are kept from
/// its allocator by the DTB: the image, the DTB itself and the initrd).
const LOADER_DATA: u32 = abi_efi::memtype::LOADER_DATA;

/// The firmware's services, while boot services last.
struct Efi<'a> {
    st: &'a SystemTable,
    bs: &'a BootServices,
}

impl Efi<'_> {
    /// Prints ASCII through ConOut (firmware consoles want UCS-2 and CR LF).
    fn print(&self, s: &[u8]) {
        let out = self.st.con_out;
        if out.is_null() {
            return;
        }
        let mut buf = [0u16; 80];
        let mut n = 0;
        for &b in s {
            if b == b'\n' {
                buf[n] = b'\r' as u16;
                n += 1;
            }
            buf[n] = b as u16;
            n += 1;
            if n >= buf.len() - 3 {
                buf[n] = 0;
                // SAFETY: `out` is the firmware's ConOut; the string is NUL-terminated.
                unsafe { ((*out).output_string)(out, buf.as_ptr()) };
                n = 0;
            }
        }
        buf[n] = 0;
        // SAFETY: as above.
        unsafe { ((*out).output_string)(out, buf.as_ptr()) };
    }

    /// Prints `msg` and a status in hex, then a newline.
    fn print_status(&self, msg: &[u8], status: Status) {
        self.print(msg);
        let mut hex = [0u8; 19];
        hex[0] = b'0';
        hex[1] = b'x';
        for i in 0..16 {
            let d = ((status >> ((15 - i) * 4)) & 0xf) as u8;
            hex[2 + i] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
        }
        hex[18] = b'\n';
        self.print(&hex);
    }

    fn allocate(&self, bytes: u64) -> Result<u64, Status> {
        let mut pa = 0u64;
        let pages = bytes.div_ceil(PAGE) as usize;
        // SAFETY: AllocatePages(AllocateAnyPages, LoaderData, pages, &pa).
        let s = unsafe { (self.bs.allocate_pages)(0, LOADER_DATA, pages, &mut pa) };
        if s != 0 {
            return Err(s);
        }
        Ok(pa)
    }

    fn protocol<T>(&self, handle: Handle, guid: &Guid) -> Option<*mut T> {
        let mut p: *mut c_void = core::ptr::null_mut();
        // SAFETY: HandleProtocol writes the interface pointer or fails.
        let s = unsafe { (self.bs.handle_protocol)(handle, guid, &mut p) };
        (s == 0 && !p.is_null()).then_some(p.cast())
    }

    fn config_table(&self, guid: &Guid) -> Option<u64> {
        let n = self.st.number_of_table_entries;
        let base = self.st.configuration_table;
        if base.is_null() {
            return None;
        }
        (0..n).find_map(|i| {
            // SAFETY: the firmware's configuration table has `n` entries.
            let e = unsafe { &*base.add(i) };
            (e.guid == *guid && !e.table.is_null()).then_some(e.table as u64)
        })
    }

    /// The initrd through LINUX_EFI_INITRD_MEDIA_GUID's LoadFile2: `Ok(None)` when no such
    /// protocol is installed.
    fn initrd_from_media(&self) -> Result<Option<Range>, Status> {
        // A vendor media device path node (type 4, subtype 3, 20 bytes) and the end node.
        let mut path = [0u8; 24];
        path[0] = 4;
        path[1] = 3;
        path[2] = 20;
        let g = LINUX_INITRD_MEDIA;
        path[4..8].copy_from_slice(&g.0.to_le_bytes());
        path[8..10].copy_from_slice(&g.1.to_le_bytes());
        path[10..12].copy_from_slice(&g.2.to_le_bytes());
        path[12..20].copy_from_slice(&g.3);
        path[20] = 0x7f;
        path[21] = 0xff;
        path[22] = 4;
        let mut dp: *const u8 = path.as_ptr();
        let mut handle: Handle = core::ptr::null_mut();
        // SAFETY: LocateDevicePath reads the device path and writes the handle and the rest
        // of the path.
        let s = unsafe { (self.bs.locate_device_path)(&LOAD_FILE2, &mut dp, &mut handle) };
        if s != 0 {
            return Ok(None);
        }
        let Some(lf) = self.protocol::<LoadFile2>(handle, &LOAD_FILE2) else {
            return Ok(None);
        };
        // LoadFile gets what LocateDevicePath left of the path: the end node.
        let mut size = 0usize;
        // SAFETY: LoadFile with no buffer reports the size.
        let s = unsafe { ((*lf).load_file)(lf, dp, 0, &mut size, core::ptr::null_mut()) };
        match s {
            BUFFER_TOO_SMALL if size > 0 => {}
            0 | NOT_FOUND | BUFFER_TOO_SMALL => return Ok(None),
            _ => return Err(s),
        }
        let pa = self.allocate(size as u64)?;
        // SAFETY: the buffer holds `size` bytes.
        let s = unsafe { ((*lf).load_file)(lf, dp, 0, &mut size, pa as *mut c_void) };
        if s != 0 {
            return Err(s);
        }
        Ok(Some(Range::from_base_size(pa, size as u64)))
    }

    /// Opens `path` on the volume the image came from.
    fn open_file(&self, device: Handle, path: &str) -> Result<*mut File, Status> {
        let fs = self
            .protocol::<SimpleFileSystem>(device, &SIMPLE_FILE_SYSTEM)
            .ok_or(LOAD_ERROR)?;
        let mut root: *mut File = core::ptr::null_mut();
        // SAFETY: OpenVolume writes the root directory's handle.
        let s = unsafe { ((*fs).open_volume)(fs, &mut root) };
        if s != 0 {
            return Err(s);
        }
        let mut name = [0u16; 256];
        abi_efi::file_path_ucs2(path, &mut name).ok_or(INVALID_PARAMETER)?;
        let mut f: *mut File = core::ptr::null_mut();
        // SAFETY: Open(read-only) with a NUL-terminated name.
        let s = unsafe { ((*root).open)(root, &mut f, name.as_ptr(), 1, 0) };
        // SAFETY: closing the directory handle OpenVolume gave.
        unsafe { ((*root).close)(root) };
        if s != 0 {
            return Err(s);
        }
        Ok(f)
    }

    /// The size of an open file (EFI_FILE_INFO.FileSize).
    fn file_size(&self, f: *mut File) -> Result<u64, Status> {
        let mut info = [0u64; 64];
        let mut size = core::mem::size_of_val(&info);
        // SAFETY: GetInfo fills at most `size` bytes.
        let s = unsafe { ((*f).get_info)(f, &FILE_INFO, &mut size, info.as_mut_ptr().cast()) };
        if s != 0 {
            return Err(s);
        }
        Ok(info[1])
    }

    /// The `initrd=` files, concatenated (as Linux's stub does): `Ok(None)` when there are none.
    fn initrd_from_files(&self, device: Handle, cmdline: &str) -> Result<Option<Range>, Status> {
        let mut total = 0u64;
        for path in abi_efi::initrd_paths(cmdline) {
            let f = self.open_file(device, path)?;
            let size = self.file_size(f);
            // SAFETY: closing the file opened above.
            unsafe { ((*f).close)(f) };
            total = total.checked_add(size?).ok_or(OUT_OF_RESOURCES)?;
        }
        if total == 0 {
            return Ok(None);
        }
        let pa = self.allocate(total)?;
        let mut at = pa;
        for path in abi_efi::initrd_paths(cmdline) {
            let f = self.open_file(device, path)?;
            let mut size = (pa + total - at) as usize;
            // SAFETY: the buffer has `size` bytes left.
            let s = unsafe { ((*f).read)(f, &mut size, at as *mut c_void) };
            // SAFETY: closing the file opened above.
            unsafe { ((*f).close)(f) };
            if s != 0 {
                return Err(s);
            }
            at += size as u64;
        }
        Ok(Some(Range::new(pa, at)))
    }

    /// The wall-clock time (GetTime is callable while boot services last), in Unix seconds.
    fn realtime(&self) -> Option<u64> {
        let rt = self.st.runtime_services;
        if rt.is_null() {
            return None;
        }
        let mut t = EfiTime::default();
        // SAFETY: GetTime fills an EFI_TIME; no capabilities wanted.
        let s = unsafe { ((*rt).get_time)(&mut t, core::ptr::null_mut()) };
        if s != 0 {
            return None;
        }
        abi_efi::efi_time_to_unix(
            t.year,
            t.month,
            t.day,
            t.hour,
            t.minute,
            t.second,
            t.time_zone,
        )
    }

    /// 64 bytes from EFI_RNG_PROTOCOL, when the firmware has one.
    fn rng_seed(&self, out: &mut [u8; 64]) -> bool {
        let mut p: *mut c_void = core::ptr::null_mut();
        // SAFETY: LocateProtocol writes the interface pointer or fails.
        let s = unsafe { (self.bs.locate_protocol)(&RNG, core::ptr::null_mut(), &mut p) };
        if s != 0 || p.is_null() {
            return false;
        }
        let rng: *mut Rng = p.cast();
        // SAFETY: GetRNG with the default algorithm fills `out`.
        let s = unsafe { ((*rng).get_rng)(rng, core::ptr::null(), out.len(), out.as_mut_ptr()) };
        s == 0
    }
}

/// Physical memory through the firmware's identity map, for the ACPI parser.
struct Identity;

impl PhysMem for Identity {
    fn read(&self, pa: u64, len: usize) -> Option<&[u8]> {
        if pa == 0 || pa.checked_add(len as u64).is_none() {
            return None;
        }
        // SAFETY: UEFI identity-maps all memory its tables live in; the tables stay in place
        // (ACPI reclaim memory) for as long as the stub runs.
        Some(unsafe { core::slice::from_raw_parts(pa as *const u8, len) })
    }
}

/// Where the machine's description comes from. Lives once, on the firmware's stack.
#[allow(clippy::large_enum_variant)]
enum Source {
    /// The firmware's DTB, at this address.
    Dtb(u64),
    /// A DTB written from the ACPI tables.
    Acpi(acpi::Machine),
}

/// The stub, from head.s's PE entry point.
#[unsafe(no_mangle)]
pub extern "efiapi" fn svelt_efi_main(image: *mut c_void, st: *mut c_void) -> usize {
    if st.is_null() {
        return INVALID_PARAMETER;
    }
    // SAFETY: the firmware passes its system table, and its boot services table is valid
    // until ExitBootServices.
    let st = unsafe { &*(st as *const SystemTable) };
    // SAFETY: as above.
    let bs = unsafe { &*st.boot_services };
    let efi = Efi { st, bs };
    match boot(&efi, image) {
        Ok(never) => match never {},
        Err(s) => {
            efi.print_status(b"EFI stub: Svelt cannot boot, status ", s);
            s
        }
    }
}

enum Never {}

fn boot(efi: &Efi, image: Handle) -> Result<Never, Status> {
    let li = efi
        .protocol::<LoadedImage>(image, &LOADED_IMAGE)
        .ok_or(LOAD_ERROR)?;
    // SAFETY: the firmware's loaded-image protocol for this image.
    let li = unsafe { &*li };

    // The command line: the load options, UCS-2, up to their size or a NUL.
    let mut raw = [0u8; 2048];
    let mut raw_len = 0;
    if !li.load_options.is_null() {
        let units = li.load_options_size as usize / 2;
        // SAFETY: the firmware's load options hold `load_options_size` bytes.
        let opts = unsafe { core::slice::from_raw_parts(li.load_options, units) };
        raw_len = abi_efi::ucs2_to_ascii(opts.iter().copied(), &mut raw);
    }
    let raw = core::str::from_utf8(&raw[..raw_len]).unwrap_or("");
    let mut args = [0u8; 2048];
    let args_len = abi_efi::strip_initrd(raw, &mut args);
    let bootargs = core::str::from_utf8(&args[..args_len]).unwrap_or("");

    let dtb = efi.config_table(&DEVICE_TREE);
    let rsdp = efi.config_table(&ACPI_20);
    let source = match abi_efi::choose_description(dtb.is_some(), rsdp.is_some(), raw) {
        abi_efi::Description::Dtb => Source::Dtb(dtb.unwrap_or(0)),
        abi_efi::Description::Acpi => match acpi::parse(&Identity, rsdp.unwrap_or(0)) {
            Ok(m) => Source::Acpi(m),
            Err(_) => {
                efi.print(b"EFI stub: the ACPI tables do not describe the machine (no valid RSDP, XSDT or MADT)\n");
                return Err(LOAD_ERROR);
            }
        },
        abi_efi::Description::Neither => {
            efi.print(b"EFI stub: the firmware gives neither a device tree nor ACPI tables\n");
            return Err(LOAD_ERROR);
        }
    };
    if let Source::Acpi(m) = &source {
        efi.print(b"EFI stub: describing the machine from ACPI\n");
        // Svelt drives a PL011 (SBSA's subset too) and a 16550 with byte or 32-bit registers.
        let driven =
            |u: &acpi::Uart| u.kind != acpi::UartKind::Ns16550 || matches!(u.access_bytes, 1 | 4);
        if !m.uart.as_ref().is_some_and(driven) {
            efi.print(b"EFI stub: SPCR names no UART Svelt drives: Svelt will have no console\n");
        }
    } else {
        efi.print(b"EFI stub: using the firmware's device tree\n");
    }

    let initrd = match efi.initrd_from_media() {
        Ok(Some(r)) => Some(r),
        Ok(None) => efi
            .initrd_from_files(li.device_handle, raw)
            .inspect_err(|_| efi.print(b"EFI stub: an initrd= file cannot be read\n"))?,
        Err(s) => {
            efi.print(b"EFI stub: the firmware's initrd (LoadFile2) cannot be read\n");
            return Err(s);
        }
    };
    let mut seed = [0u8; 64];
    let rng_seed = efi.rng_seed(&mut seed).then_some(&seed[..]);
    let realtime = efi.realtime();

    // The image, copied to a 2 MiB-aligned block with room for its BSS (the header's
    // image_size; head.s zeroes the BSS).
    // SAFETY: the firmware loaded SizeOfImage bytes at image_base; the Image header is first.
    let header = unsafe { core::slice::from_raw_parts(li.image_base, 64) };
    let image_size = u64::from_le_bytes(header[16..24].try_into().unwrap_or([0; 8]));
    if image_size == 0 || image_size > 1 << 30 || li.image_size == 0 {
        return Err(LOAD_ERROR);
    }
    let block = efi.allocate(image_size + MIB2)?;
    let kernel_pa = block.next_multiple_of(MIB2);
    // SAFETY: both ranges are ours: the loaded image (li.image_size bytes) and the new block.
    unsafe {
        core::ptr::copy_nonoverlapping(
            li.image_base,
            kernel_pa as *mut u8,
            li.image_size.min(image_size) as usize,
        )
    };

    // The DTB's block: the output, then scratch room for property names.
    let src_size = match source {
        // SAFETY: a DTB header's totalsize (big-endian) at offset 4.
        Source::Dtb(d) => u32::from_be_bytes(unsafe { *((d + 4) as *const [u8; 4]) }) as u64,
        Source::Acpi(_) => 0,
    };
    if src_size > MIB2 {
        return Err(LOAD_ERROR);
    }
    // Neither LoadFile2 nor `initrd=` words gave an initrd: the one a loader named in the
    // firmware's tree is kept, as Linux's stub keeps it (an older GRUB's `initrd`, 2.06, installs
    // a tree whose /chosen has linux,initrd-start/-end, in memory it allocated from the firmware).
    let initrd = match (initrd, &source) {
        (None, Source::Dtb(d)) => {
            // SAFETY: the firmware's DTB, src_size bytes by its header.
            let src = unsafe { core::slice::from_raw_parts(*d as *const u8, src_size as usize) };
            let named = fdt::chosen_initrd(src);
            if named.is_some() {
                efi.print(b"EFI stub: using the initrd the device tree names\n");
            }
            named
        }
        (initrd, _) => initrd,
    };
    // Room for a written tree of 512 CPUs (about 100 bytes each) and the rest.
    let out_cap = src_size + 0x20000;
    let strings_cap = 0x4000;
    let fdt_pa = efi.allocate(out_cap + strings_cap)?;

    // The memory map, with room for the descriptors allocations may still add.
    let mut map_size = 0usize;
    let (mut key, mut desc_size, mut desc_ver) = (0usize, 0usize, 0u32);
    // SAFETY: GetMemoryMap with no buffer reports the size needed.
    unsafe {
        (efi.bs.get_memory_map)(
            &mut map_size,
            core::ptr::null_mut(),
            &mut key,
            &mut desc_size,
            &mut desc_ver,
        )
    };
    let map_cap = map_size as u64 + 16 * desc_size.max(48) as u64;
    let map_pa = efi.allocate(map_cap)?;

    let mut fdt_len = 0;
    for attempt in 0..4 {
        let mut size = map_cap as usize;
        // SAFETY: the buffer holds map_cap bytes.
        let s = unsafe {
            (efi.bs.get_memory_map)(
                &mut size,
                map_pa as *mut u8,
                &mut key,
                &mut desc_size,
                &mut desc_ver,
            )
        };
        if s != 0 {
            if attempt == 0 {
                efi.print_status(b"EFI stub: GetMemoryMap failed, status ", s);
            }
            return Err(s);
        }
        // SAFETY: GetMemoryMap wrote `size` bytes there.
        let map = unsafe { core::slice::from_raw_parts(map_pa as *const u8, size) };
        let keep = [
            Range::from_base_size(kernel_pa, image_size),
            Range::from_base_size(fdt_pa, out_cap),
            initrd.unwrap_or(Range::new(0, 0)),
        ];
        let (ram, nram, _) = abi_efi::usable_ram::<16>(map, desc_size, &keep);
        // SAFETY: the block allocated above for the DTB and its scratch room.
        let (out, strings) = unsafe {
            (
                core::slice::from_raw_parts_mut(fdt_pa as *mut u8, out_cap as usize),
                core::slice::from_raw_parts_mut(
                    (fdt_pa + out_cap) as *mut u8,
                    strings_cap as usize,
                ),
            )
        };
        let chosen = Chosen {
            bootargs,
            initrd,
            rng_seed,
            realtime,
        };
        let built = match &source {
            Source::Dtb(d) => {
                // SAFETY: the firmware's DTB, src_size bytes by its header.
                let src =
                    unsafe { core::slice::from_raw_parts(*d as *const u8, src_size as usize) };
                fdt::rewrite(src, out, strings, &ram[..nram], &chosen)
            }
            Source::Acpi(m) => acpi::write_fdt(m, out, strings, &ram[..nram], &chosen),
        };
        fdt_len = match built {
            Ok(n) => n as u64,
            Err(_) => {
                efi.print(b"EFI stub: the device tree could not be written\n");
                return Err(LOAD_ERROR);
            }
        };
        // SAFETY: ExitBootServices with the key of the map just read; on failure (the map
        // changed) the map is read again, which is allowed after a failed exit.
        let s = unsafe { (efi.bs.exit_boot_services)(image, key) };
        if s == 0 {
            break;
        }
        if attempt == 3 {
            return Err(s);
        }
    }
    // Boot services are gone: no more firmware calls, no printing.
    arch_efi::clean_to_poc(kernel_pa, image_size);
    arch_efi::clean_to_poc(fdt_pa, fdt_len);
    if let Some(r) = initrd {
        arch_efi::clean_to_poc(r.start, r.end - r.start);
    }
    // SAFETY: boot services have exited; the image, DTB and initrd are in place and cleaned.
    unsafe { arch_efi::enter_image(kernel_pa, fdt_pa) }
}
