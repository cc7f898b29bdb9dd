//! Process entry, the panic handler and the heap.
//!
//! Linux (and Svelt) start a static executable at `e_entry` with SP pointing at
//! `argc, argv[0..argc], NULL, envp[..], NULL, auxv pairs ..., AT_NULL`, SP 16-aligned, and all
//! other registers zero except as the ABI allows. `_start` passes that SP to Rust.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::sys;

core::arch::global_asm!(
    ".section .text._start, \"ax\"",
    ".global _start",
    ".type _start, %function",
    "_start:",
    "    mov x0, sp",
    "    mov x29, #0",
    "    mov x30, #0",
    "    and sp, x0, #~15", // keep going even if the loader misaligned SP; the test checks x0
    "    bl {start}",
    "    brk #1",
    ".size _start, . - _start",
    start = sym start_rust,
);

/// Where `_start` found the stack; the ELF tests check its alignment and layout.
pub static INITIAL_SP: AtomicUsize = AtomicUsize::new(0);

/// What the process was started with.
pub struct Args {
    pub argc: usize,
    argv: *const *const u8,
    envp: *const *const u8,
    auxv: *const [usize; 2],
}

// SAFETY: the pointers refer to the initial stack, which lives and is unchanged for the whole
// process; the runtime never writes through them.
unsafe impl Sync for Args {}

/// A NUL-terminated string from the initial stack as bytes (without the NUL).
///
/// # Safety
/// `p` points at a NUL-terminated string that lives for 'static.
unsafe fn cstr(p: *const u8) -> &'static [u8] {
    let mut n = 0;
    // SAFETY: per the contract, every byte up to the NUL is readable.
    while unsafe { *p.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: the n bytes were just read.
    unsafe { core::slice::from_raw_parts(p, n) }
}

impl Args {
    pub fn argv(&self) -> impl Iterator<Item = &'static [u8]> + '_ {
        // SAFETY: argv has argc valid entries followed by NULL (the kernel's exec contract).
        (0..self.argc).map(move |i| unsafe { cstr(*self.argv.add(i)) })
    }

    pub fn arg(&self, i: usize) -> Option<&'static str> {
        self.argv()
            .nth(i)
            .map(|a| core::str::from_utf8(a).unwrap_or("?"))
    }

    /// argv\[argc\], which must be NULL.
    pub fn argv_terminator(&self) -> usize {
        // SAFETY: the kernel's exec contract places a NULL after the last argument.
        unsafe { *self.argv.add(self.argc) as usize }
    }

    pub fn envp(&self) -> impl Iterator<Item = &'static [u8]> + '_ {
        let mut i = 0;
        core::iter::from_fn(move || {
            // SAFETY: envp is a NULL-terminated array of strings on the initial stack.
            let p = unsafe { *self.envp.add(i) };
            if p.is_null() {
                return None;
            }
            i += 1;
            // SAFETY: as above.
            Some(unsafe { cstr(p) })
        })
    }

    pub fn env(&self, name: &str) -> Option<&'static str> {
        self.envp().find_map(|e| {
            let rest = e.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
            core::str::from_utf8(rest).ok()
        })
    }

    /// The auxiliary vector's (type, value) pairs, AT_NULL excluded.
    pub fn auxv(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let mut i = 0;
        core::iter::from_fn(move || {
            // SAFETY: the auxv array ends with an AT_NULL pair.
            let [k, v] = unsafe { *self.auxv.add(i) };
            if k == 0 {
                return None;
            }
            i += 1;
            Some((k, v))
        })
    }

    pub fn getauxval(&self, key: usize) -> Option<usize> {
        self.auxv().find(|&(k, _)| k == key).map(|(_, v)| v)
    }

    /// The address of the argc word (the initial SP).
    pub fn stack_base(&self) -> usize {
        self.argv as usize - 8
    }
}

static mut ARGS: Args = Args {
    argc: 0,
    argv: core::ptr::null(),
    envp: core::ptr::null(),
    auxv: core::ptr::null(),
};

/// The process's arguments (valid once `main` runs).
pub fn args() -> &'static Args {
    // SAFETY: ARGS is written once in start_rust before main and any other thread exist.
    unsafe { &*core::ptr::addr_of!(ARGS) }
}

extern "Rust" {
    fn svelt_main(args: &Args) -> i32;
}

unsafe extern "C" fn start_rust(sp: *const usize) -> ! {
    INITIAL_SP.store(sp as usize, Ordering::Relaxed);
    // SAFETY: sp is the initial stack laid out by the kernel (see the module comment).
    unsafe {
        let argc = *sp;
        let argv = sp.add(1) as *const *const u8;
        let envp = argv.add(argc + 1);
        let mut e = envp;
        while !(*e).is_null() {
            e = e.add(1);
        }
        let auxv = e.add(1) as *const [usize; 2];
        ARGS = Args {
            argc,
            argv,
            envp,
            auxv,
        };
    }
    // SAFETY: svelt_main is defined by the program through `entry!`.
    let status = unsafe { svelt_main(args()) };
    sys::exit_group(status)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    crate::io::print_fd(2, format_args!("# panic: {info}\n"));
    sys::exit_group(101)
}

/// A bump allocator over a static arena (zero pages cost nothing until touched) with mmap for
/// what does not fit. Frees are ignored: test programs are short-lived.
struct Bump;

const ARENA: usize = 8 << 20;
#[repr(align(4096))]
struct Arena(#[allow(dead_code)] [u8; ARENA]);
static mut HEAP: Arena = Arena([0; ARENA]);
static NEXT: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every allocation is a distinct, suitably aligned range of the arena or a fresh mapping.
unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = core::ptr::addr_of_mut!(HEAP) as usize;
        let mut cur = NEXT.load(Ordering::Relaxed);
        loop {
            let start = (base + cur).next_multiple_of(layout.align()) - base;
            let end = start + layout.size();
            if end > ARENA {
                break;
            }
            match NEXT.compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return (base + start) as *mut u8,
                Err(now) => cur = now,
            }
        }
        let len = layout.size().max(layout.align()).next_multiple_of(4096);
        match sys::mmap(
            0,
            len,
            sys::PROT_READ | sys::PROT_WRITE,
            sys::MAP_PRIVATE | sys::MAP_ANONYMOUS,
            -1,
            0,
        ) {
            Ok(p) => p as *mut u8,
            Err(_) => core::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

#[global_allocator]
static ALLOC: Bump = Bump;
