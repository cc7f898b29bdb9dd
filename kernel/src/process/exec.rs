//! execve: replace the current program with an ELF executable from the file tree.

#![deny(unsafe_code)]

use super::{fork, sched, Mm};
use crate::arch::exception::TrapFrame;
use crate::fs::{self, Inode, Kind};
use crate::mm::aspace::{
    AddrSpace, Backing, Prot, MMAP_MIN, MMAP_TOP, STACK_SIZE, STACK_TOP, USER_END,
};
use crate::mm::uaccess::UserPtr;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use spin::Mutex;
use svelt_abi::format::elf::{
    check_gnu_properties, ElfError, ElfFile, MapOp, Mapped, MAX_PROPERTY_NOTE,
};
use svelt_abi::format::script;
use svelt_abi::format::stack::{StackLayout, StackParams};
use svelt_abi::uapi::auxv::*;
use svelt_abi::uapi::errno::{Errno, SysResult};

const PAGE: u64 = 4096;
/// Where static-PIE executables are placed (as Linux's ELF_ET_DYN_BASE, 2/3 of the space).
const ET_DYN_BASE: u64 = 0x0000_aaaa_aaaa_0000;
/// Total size of argv and envp strings accepted (Linux allows a quarter of the stack limit).
const ARG_MAX: usize = STACK_SIZE / 4;

/// How much of an executable execve reads to decide what it is: ELF and program headers and
/// PT_INTERP (almost always in the first page), or a `#!` line.
const HEAD: usize = 4096;

/// A regular file that may be executed: its node (the segments are mapped from its pages), its
/// first bytes, size, canonical path and inode.
struct Exe {
    node: Arc<dyn Inode>,
    head: Vec<u8>,
    size: u64,
    path: String,
    ino: u64,
}

impl Exe {
    fn open(cur: &super::CurrentTask, path: &str) -> SysResult<Exe> {
        let r = fs::resolve(cur, svelt_abi::uapi::fs::AT_FDCWD, path, true)?;
        if r.node.kind() != Kind::File || r.node.perm() & 0o111 == 0 {
            return Err(Errno::EACCES);
        }
        let size = r.node.size();
        let mut head = crate::mm::try_zeroed_vec(HEAD.min(size as usize))?;
        let n = r.node.read_at(0, &mut head)?;
        head.truncate(n);
        Ok(Exe {
            ino: r.node.ino(),
            node: r.node,
            head,
            size,
            path: r.path,
        })
    }

    /// The whole file (for images whose headers lie past the head, or whose segments share
    /// pages and are copied).
    fn read_all(&self) -> SysResult<Vec<u8>> {
        let size = usize::try_from(self.size).map_err(|_| Errno::ENOMEM)?;
        let mut data = crate::mm::try_zeroed_vec(size)?;
        let n = self.node.read_at(0, &mut data)?;
        data.truncate(n);
        Ok(data)
    }
}

/// Parses an executable from its head, or from the whole file (read into `whole`) when the
/// headers lie past the head.
fn parse<'a>(exe: &'a Exe, whole: &'a mut Vec<u8>) -> Result<ElfFile<'a>, ElfError> {
    match ElfFile::parse_head(&exe.head, exe.size, PAGE) {
        Err(ElfError::NeedMore) => {
            *whole = exe.read_all().map_err(|_| ElfError::Truncated)?;
            ElfFile::parse(whole, PAGE)
        }
        r => r,
    }
}

/// The main thread's stack: RLIMIT_STACK (the soft limit in force at exec, as Linux's stack
/// may grow to), at least 128 KiB and at most what fits above the mmap area.
fn stack_size(cur: &super::CurrentTask) -> usize {
    let limit = cur.process.rlimit(svelt_abi::uapi::sys::RLIMIT_STACK);
    let max = STACK_TOP - crate::mm::aspace::MMAP_TOP - (1 << 20);
    (usize::try_from(limit).unwrap_or(usize::MAX))
        .clamp(128 << 10, max)
        .next_multiple_of(PAGE as usize)
}

/// Maps an image's PT_LOAD segments at `bias` as Linux's elf_load does: private file mappings
/// (pages past the end of the file fault with SIGBUS), the bss part of the last file page
/// cleared, the rest of the bss anonymous, each segment over what the earlier ones mapped. The
/// `main` program's segments (not its interpreter's) are recorded for /proc. Err: the image
/// cannot be mapped (past the point of no return: the caller kills the process).
fn map_image(
    mm: &mut AddrSpace,
    elf: &ElfFile<'_>,
    bias: u64,
    exe: &Exe,
    main: bool,
) -> SysResult<Mapped> {
    let node: Arc<dyn crate::mm::aspace::MappedFile> = exe.node.clone();
    let task_size = if main {
        STACK_TOP as u64 - STACK_SIZE as u64
    } else {
        MMAP_TOP as u64
    };
    elf.map(bias, MMAP_MIN as u64, task_size, |op| match op {
        MapOp::File {
            start,
            end,
            off,
            prot,
        } => {
            if main {
                note_segment(&mut mm.exec, start, end, off, prot);
            }
            let backing = Backing::File {
                node: node.clone(),
                off,
                shared: false,
                maywrite: true,
            };
            mm.map(start as usize, end as usize, Prot(prot), backing)
        }
        MapOp::Zero { start, end, fatal } => {
            let zeros = [0u8; PAGE as usize];
            let len = (end - start) as usize;
            match mm.write(start as usize, &zeros[..len]) {
                Err(e) if fatal => Err(e),
                _ => Ok(()),
            }
        }
        MapOp::Anon { start, end, exec } => {
            let mut prot = Prot::READ | Prot::WRITE;
            if exec {
                prot |= Prot::EXEC;
            }
            mm.map(start as usize, end as usize, Prot(prot), Backing::Anon)
        }
    })
}

/// Checks the PT_GNU_PROPERTY note execve looks at (Linux's parse_elf_properties).
fn check_properties(elf: &ElfFile<'_>, exe: &Exe) -> SysResult<()> {
    let Some(ph) = elf.property() else {
        return Ok(());
    };
    if ph.p_filesz > MAX_PROPERTY_NOTE {
        return Err(Errno::ENOEXEC);
    }
    let mut note = [0u8; MAX_PROPERTY_NOTE as usize];
    let want = &mut note[..ph.p_filesz as usize];
    let n = if ph.p_offset > i64::MAX as u64 {
        0
    } else {
        exe.node.read_at(ph.p_offset, want).unwrap_or(0)
    };
    check_gnu_properties(ph.p_filesz, &note[..n]).map(|_| ())
}

/// Opens the program interpreter a dynamically linked executable names (PT_INTERP). Linux's
/// errors: the path's own (ENOENT, EACCES...) as for any executable, ELIBBAD for a file that is
/// not an AArch64 ELF image.
fn open_interp(cur: &super::CurrentTask, name: &[u8]) -> SysResult<Exe> {
    let path = core::str::from_utf8(name).map_err(|_| Errno::ENOENT)?;
    Exe::open(cur, path)
}

/// Where the interpreter goes: at the top of the mmap area (where Linux's mmap would put it),
/// lowered by a random number of pages (none under ADDR_NO_RANDOMIZE, as debuggers ask) and
/// aligned to its segments' alignment.
fn interp_bias(persona: u32, mm: &AddrSpace, elf: &ElfFile<'_>) -> SysResult<u64> {
    if !elf.is_dyn() {
        return Ok(0);
    }
    let align = elf.max_align().max(PAGE);
    let mut r = [0u8; 2];
    if persona & svelt_abi::uapi::sys::ADDR_NO_RANDOMIZE == 0 {
        crate::fs::dev::fill_random(&mut r);
    }
    let shift = u64::from(u16::from_le_bytes(r)) * PAGE;
    let span = elf.span().ok_or(Errno::ENOMEM)?;
    let room = span.checked_add(align + shift).ok_or(Errno::ENOMEM)?;
    let low = mm
        .find_free(usize::try_from(room).map_err(|_| Errno::ENOMEM)?, 0)
        .ok_or(Errno::ENOMEM)? as u64;
    // The free range is taken from the top down, so its low end is already lowered by the
    // random gap: the interpreter goes there (adding the gap back would cancel it).
    let base = low.next_multiple_of(align);
    Ok(base.wrapping_sub(elf.first_page().unwrap_or(0)))
}

/// The bias of the main program: 0 for ET_EXEC; for ET_DYN, its lowest page goes to
/// ET_DYN_BASE (aligned as its segments ask).
fn main_bias(elf: &ElfFile<'_>) -> u64 {
    if !elf.is_dyn() {
        return 0;
    }
    let base = ET_DYN_BASE.next_multiple_of(elf.max_align().clamp(PAGE, 1 << 30));
    base.wrapping_sub(elf.first_page().unwrap_or(0))
}

/// A loaded program: its address space and where it starts, or `fatal` when mapping it failed
/// past the point of no return (Linux then kills the process with SIGSEGV).
struct Loaded {
    mm: AddrSpace,
    entry: u64,
    sp: u64,
    fatal: bool,
}

/// Builds the new address space and initial stack. A dynamically linked program gets its
/// interpreter mapped too, and starts there (AT_BASE says where it is). Err: execve fails
/// (what Linux checks before the old program is gone).
fn load(
    cur: &super::CurrentTask,
    exe: &Exe,
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
    execfn: &[u8],
) -> SysResult<Loaded> {
    let persona = cur.process.personality.load(Ordering::Relaxed);
    let mut whole = Vec::new();
    let elf = parse(exe, &mut whole)?;
    let interp = match elf.interp() {
        Some(name) => Some(open_interp(cur, name)?),
        None => None,
    };
    let mut iwhole = Vec::new();
    let ielf = match &interp {
        Some(iexe) => Some(parse(iexe, &mut iwhole).map_err(|_| Errno::ELIBBAD)?),
        None => None,
    };
    match (&ielf, &interp) {
        (Some(ie), Some(iexe)) => check_properties(ie, iexe)?,
        _ => check_properties(&elf, exe)?,
    }
    let mut mm = AddrSpace::new()?;
    let mapped = (|| -> SysResult<(Mapped, u64, u64)> {
        let plan = map_image(&mut mm, &elf, main_bias(&elf), exe, true)?;
        let brk = plan.brk as usize;
        mm.brk_start = brk;
        mm.brk = brk;
        match (&ielf, &interp) {
            (Some(ie), Some(iexe)) => {
                let bias = interp_bias(persona, &mm, ie)?;
                let iplan = map_image(&mut mm, ie, bias, iexe, false)?;
                Ok((plan, iplan.entry, iplan.bias))
            }
            _ => Ok((plan, plan.entry, 0)),
        }
    })();
    let (plan, start, interp_base) = match mapped {
        Ok(m) => m,
        Err(_) => {
            return Ok(Loaded {
                mm: AddrSpace::new()?,
                entry: 0,
                sp: 0,
                fatal: true,
            })
        }
    };

    mm.map(
        STACK_TOP - stack_size(cur),
        STACK_TOP,
        Prot(Prot::READ | Prot::WRITE),
        Backing::Anon,
    )?;
    let vdso = crate::vdso::map(&mut mm, persona)?;
    let [hwcap, hwcap2, hwcap3] = crate::cpufeature::hwcaps().0;
    let auxv = [
        (AT_SYSINFO_EHDR, vdso as u64),
        (AT_HWCAP, hwcap),
        (AT_PAGESZ, PAGE),
        (AT_CLKTCK, 100),
        (AT_PHDR, plan.phdr),
        (AT_PHENT, plan.phent),
        (AT_PHNUM, plan.phnum),
        (AT_BASE, interp_base),
        (AT_FLAGS, 0),
        (AT_ENTRY, plan.entry),
        (AT_UID, 0),
        (AT_EUID, 0),
        (AT_GID, 0),
        (AT_EGID, 0),
        (AT_SECURE, 0),
        (AT_HWCAP2, hwcap2),
        (AT_HWCAP3, hwcap3),
        (
            AT_MINSIGSTKSZ,
            crate::process::signal::min_sigstksz() as u64,
        ),
    ];
    let mut random = [0u8; 16];
    crate::fs::dev::fill_random(&mut random);
    let argv_refs: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
    let envp_refs: Vec<&[u8]> = envp.iter().map(|a| &a[..]).collect();
    let params = StackParams {
        stack_top: STACK_TOP as u64,
        argv: &argv_refs,
        envp: &envp_refs,
        execfn,
        platform: Some(ELF_PLATFORM),
        random,
        auxv: &auxv,
        arg_limit: ARG_MAX,
    };
    let layout = StackLayout::plan(&params)?;
    let mut img = vec![0u8; layout.size];
    layout.write(&params, &mut img)?;
    mm.write(layout.sp as usize, &img)?;
    // A copy of the auxv for core dumps (the stack's may be overwritten by then).
    let a = (layout.auxv - layout.sp) as usize;
    let mut end = a;
    while let Some(key) = img.get(end..end + 8) {
        end += 16;
        if key == [0u8; 8] {
            break;
        }
    }
    mm.saved_auxv = img.get(a..end).unwrap_or_default().to_vec();
    mm.arg_start = layout.arg_start as usize;
    mm.arg_end = layout.arg_end as usize;
    mm.exec.env_start = layout.env_start as usize;
    mm.exec.env_end = layout.env_end as usize;
    mm.exec.start_stack = layout.sp as usize;
    Ok(Loaded {
        mm,
        entry: start,
        sp: layout.sp,
        fatal: false,
    })
}

/// Reads the binary execve runs for `path`: the file itself, or for a `#!` script its
/// interpreter (scripts may name scripts, [`script::MAX_DEPTH`] deep), with `argv` rewritten as
/// Linux rewrites it: `[interpreter, argument?, path, argv[1..]]` at each level.
fn read_program(cur: &super::CurrentTask, path: &str, argv: &mut Vec<Vec<u8>>) -> SysResult<Exe> {
    let mut file = String::from(path);
    for _ in 0..=script::MAX_DEPTH {
        let exe = Exe::open(cur, &file)?;
        let sb = match script::parse(&exe.head) {
            None => return Ok(exe),
            Some(Err(())) => return Err(Errno::ENOEXEC),
            // The empty name is looked up as Linux looks up "": the working directory, which
            // cannot be executed.
            Some(Ok(sb)) if sb.interp.is_empty() => return Err(Errno::EACCES),
            Some(Ok(sb)) => sb,
        };
        let mut args = Vec::new();
        args.try_reserve(argv.len() + 2)
            .map_err(|_| Errno::ENOMEM)?;
        args.push(sb.interp.to_vec());
        if let Some(a) = sb.arg {
            args.push(a.to_vec());
        }
        args.push(file.into_bytes());
        args.extend(argv.drain(..).skip(1));
        *argv = args;
        file = String::from_utf8(sb.interp.to_vec()).map_err(|_| Errno::ENOENT)?;
    }
    Err(Errno::ELOOP)
}

/// Records a segment's file mapping for /proc: code and data bounds (as Linux's
/// load_elf_binary sets them: the executable segment is code, the writable ones data) and the
/// range the file's pages fill.
fn note_segment(
    info: &mut crate::mm::aspace::ExecInfo,
    start: u64,
    end: u64,
    offset: u64,
    prot: u32,
) {
    use crate::mm::aspace::{ExecInfo, ImageRange};
    let (start, end) = (start as usize, end as usize);
    if prot & Prot::EXEC != 0 && info.start_code == 0 {
        info.start_code = start;
        info.end_code = end;
    }
    if prot & Prot::WRITE != 0 {
        if info.start_data == 0 {
            info.start_data = start;
        }
        info.end_data = end;
    }
    if info.nimage < ExecInfo::MAX_IMAGE {
        info.image[info.nimage] = ImageRange { start, end, offset };
        info.nimage += 1;
    }
}

/// Reads a NULL-terminated array of string pointers.
fn read_strings(va: usize, total: &mut usize) -> SysResult<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    if va == 0 {
        return Ok(out);
    }
    loop {
        let p = UserPtr::<u64>::new(va).add(out.len()).read()? as usize;
        if p == 0 {
            return Ok(out);
        }
        let s = UserPtr::<u8>::new(p).read_cstring(ARG_MAX)?;
        *total += s.len() + 1 + 8;
        if *total > ARG_MAX || out.len() >= 0x7fff_ffff {
            return Err(Errno::E2BIG);
        }
        out.push(s);
    }
}

pub fn do_execve(
    cur: &super::CurrentTask,
    path_va: usize,
    argv_va: usize,
    envp_va: usize,
    tf: &mut TrapFrame,
) -> SysResult<()> {
    let path = UserPtr::<u8>::new(path_va).read_path()?;
    let mut total = 0;
    let mut argv = read_strings(argv_va, &mut total)?;
    let envp = read_strings(envp_va, &mut total)?;
    let exe = read_program(cur, &path, &mut argv)?;
    let Loaded {
        mut mm,
        entry,
        sp,
        fatal,
    } = load(cur, &exe, &argv, &envp, path.as_bytes())?;
    mm.exec.exe_ino = exe.ino;
    let canonical = exe.path;

    // Past this point the old program is gone.
    let me = cur.task();
    let p = me.process();
    de_thread(me);
    // The old program's timers go (Linux's exit_itimers; the interval timers stay), its
    // peak size stays in ru_maxrss.
    super::posix_timer::clear(&p);
    super::cputime::sample_rss(&p, me);
    let new_mm: Mm = Arc::new(Mutex::new(mm));
    crate::mm::aspace::register_file_maps(&new_mm);
    new_mm.lock().activate();
    let old = me.set_mm(Some(new_mm));
    drop(old);
    // Files shared with another process are unshared first; close-on-exec descriptors go.
    let files = Arc::new(Mutex::new(me.files().lock().clone()));
    files.lock().close_on_exec();
    *me.files.lock() = files;
    let handlers = me.sighand().lock().for_exec();
    *me.sighand.lock() = Arc::new(crate::sync::IrqLock::new(handlers));
    me.sig.lock().altstack = Default::default();
    *p.exe.lock() = canonical;
    *me.comm.lock() = svelt_abi::uapi::procfs::exec_comm(path.as_bytes());
    cur.local().tpidrro_el0.set(0);
    // ptrace breakpoints and watchpoints do not survive exec.
    *cur.local().hw_debug.borrow_mut() = Default::default();
    // Nor does the tagged address ABI (Linux's flush_tagged_addr_state).
    sched::set_current_tagged_addr(cur.core(), false);
    crate::task::fpstate::fpsimd_flush_thread(cur.core());
    crate::process::gcs::flush(cur);
    cur.local().rseq.set(None);
    sched::set_current_tpidr_el0(cur.local(), 0);
    *tf = TrapFrame::program_start(entry, sp);
    fork::release_vfork(me);
    debug_assert!((sp as usize) < USER_END);
    if fatal {
        // The image could not be mapped, and the old program is gone (Linux's exec kills
        // with SIGSEGV past the point of no return).
        let segv = svelt_abi::uapi::signal::SIGSEGV;
        crate::process::signal::force(me, segv, crate::process::signal::SigInfo::kernel(segv));
    }
    Ok(())
}

/// Makes the caller the only thread of its process (other threads exit).
fn de_thread(me: &super::Thread) {
    let p = &me.process;
    // The common case: the caller is the only thread listed (a thread leaves the list in its
    // exit), and there is nobody to wait for.
    if p.threads.lock().len() == 1 {
        return;
    }
    let others: Vec<_> = p
        .live_threads()
        .into_iter()
        .filter(|t| !core::ptr::eq(&**t, me))
        .collect();
    if others.is_empty() {
        return;
    }
    for t in &others {
        t.exit_code.store(0, Ordering::Relaxed);
        t.set_killed();
        crate::process::ptrace::wake_unless_frozen(t);
    }
    // Wait for them to leave (they exit on their way back to user mode).
    while p.live_threads().len() > 1 {
        sched::yield_now();
    }
}

/// Starts PID 1 running `path`, with /dev/console on descriptors 0, 1 and 2.
// The file's one unsafe: writing the first task's trap frame and context before it runs.
#[allow(unsafe_code)]
pub fn spawn_init(cur: &super::CurrentTask, path: &str) -> SysResult<()> {
    use super::{register, Process, Thread, ThreadCharge};
    use crate::task::{fpstate::TaskFpState, KernelStack, Task, TaskLocal};
    let mut argv = vec![path.as_bytes().to_vec()];
    let exe = read_program(cur, path, &mut argv)?;
    let envp = [b"HOME=/".to_vec(), b"TERM=linux".to_vec()];
    let loaded = load(cur, &exe, &argv, &envp, path.as_bytes())?;
    if loaded.fatal {
        return Err(Errno::ENOEXEC);
    }
    let (mut mm, entry, sp) = (loaded.mm, loaded.entry, loaded.sp);
    mm.exec.exe_ino = exe.ino;
    let canonical = exe.path;
    let new_mm: Mm = Arc::new(Mutex::new(mm));
    crate::mm::aspace::register_file_maps(&new_mm);
    let process = Process::new(super::alloc_pid(), alloc::sync::Weak::new());
    *process.exe.lock() = canonical;
    let mut files = crate::fs::FdTable::new();
    if let Ok(r) = fs::resolve(cur, svelt_abi::uapi::fs::AT_FDCWD, "/dev/console", true) {
        let f = fs::open_node(cur, r.node, svelt_abi::uapi::fs::O_RDWR, r.path)?;
        for _ in 0..3 {
            files.install(cur, f.clone(), false)?;
        }
    }
    let charge = ThreadCharge::new(0, u64::MAX)?;
    let core = Task::new(
        process.pid,
        Some(KernelStack::new()?),
        TaskLocal::new(TaskFpState::new(), 0, 0),
    );
    let comm = svelt_abi::uapi::procfs::exec_comm(process.exe.lock().as_bytes());
    let t = Thread::new(
        Arc::new(core),
        process.clone(),
        Some(charge),
        Some(new_mm.clone()),
        Arc::new(Mutex::new(files)),
        Arc::new(Mutex::new(fs::FsContext::root())),
        Arc::new(crate::sync::IrqLock::new(
            crate::process::signal::SigHandlers::default(),
        )),
    );
    *t.comm.lock() = comm;
    let tf = t.trap_frame();
    // SAFETY: tf is the top of the new task's kernel stack; the task has not run.
    unsafe {
        tf.write(TrapFrame::program_start(entry, sp));
        *t.ctx.get() = crate::arch::context::new_task_context(tf as usize);
    }
    process.threads.lock().push(Arc::downgrade(&t));
    register(&t);
    sched::enqueue_new(t.core());
    Ok(())
}
