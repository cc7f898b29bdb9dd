//! execve: replace the current program with an ELF executable from the file tree.

use super::{current_arc, fork, sched, Mm};
use crate::arch::exception::TrapFrame;
use crate::fs::{self, Inode, Kind};
use crate::mm::aspace::{AddrSpace, Backing, Prot, STACK_SIZE, STACK_TOP, USER_END};
use crate::mm::uaccess::UserPtr;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use spin::Mutex;
use svelt_abi::auxv::*;
use svelt_abi::elf::{ElfError, ElfFile, LoadPlan};
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::script;
use svelt_abi::stack::{StackLayout, StackParams};

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
    fn open(path: &str) -> SysResult<Exe> {
        let r = fs::resolve(svelt_abi::fs::AT_FDCWD, path, true)?;
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
fn stack_size() -> usize {
    let limit = super::current()
        .process()
        .rlimit(svelt_abi::sys::RLIMIT_STACK);
    let max = STACK_TOP - crate::mm::aspace::MMAP_TOP - (1 << 20);
    (usize::try_from(limit).unwrap_or(usize::MAX))
        .clamp(128 << 10, max)
        .next_multiple_of(PAGE as usize)
}

/// Maps an image's PT_LOAD segments as its plan says: from the file's pages (private mappings,
/// copied on the first write, as Linux maps them), the bss in the last file page zeroed, the
/// rest of the bss anonymous. An image whose segments share a page is copied instead (a page
/// cannot map two file offsets). The `main` program's segments (not its interpreter's) are
/// recorded for /proc.
fn map_image(mm: &mut AddrSpace, plan: &LoadPlan<'_>, exe: &Exe, main: bool) -> SysResult<()> {
    let copy = if plan.segments().any(|s| s.shares_first_page) {
        Some(exe.read_all()?)
    } else {
        None
    };
    for seg in plan.segments() {
        if main {
            note_segment(&mut mm.exec, &seg);
        }
        let (s, e) = (seg.map_start as usize, seg.map_end as usize);
        let prot = Prot(seg.prot);
        if let Some(data) = &copy {
            if seg.shares_first_page {
                // The page is already mapped by the previous segment; widen its rights.
                let start = s + 4096;
                if start < e {
                    mm.map(start, e, prot, Backing::Anon)?;
                }
                let old = mm.find_vma(s).map(|v| v.prot.0).unwrap_or(0);
                mm.protect(s, s + 4096, Prot(old | seg.prot))?;
            } else {
                mm.map(s, e, prot, Backing::Anon)?;
            }
            let off = seg.file_offset as usize;
            let bytes = data
                .get(off..off + seg.file_len as usize)
                .ok_or(Errno::ENOEXEC)?;
            mm.write_kernel(seg.copy_dst as usize, bytes)?;
            continue;
        }
        let file_end = (seg.copy_dst + seg.file_len) as usize;
        let file_pages_end = file_end.next_multiple_of(PAGE as usize).min(e);
        if seg.file_len > 0 {
            let node: Arc<dyn crate::mm::aspace::MappedFile> = exe.node.clone();
            let backing = Backing::File {
                node,
                off: seg.file_offset,
                shared: false,
                maywrite: true,
            };
            mm.map(s, file_pages_end, prot, backing)?;
            // The bss starts inside the last file page: the file's bytes after the segment
            // there read as zero.
            if seg.zero_end > seg.zero_start && file_end < file_pages_end {
                let zeros = [0u8; PAGE as usize];
                mm.write_kernel(file_end, &zeros[..file_pages_end - file_end])?;
            }
        }
        let anon_start = if seg.file_len > 0 { file_pages_end } else { s };
        if anon_start < e {
            mm.map(anon_start, e, prot, Backing::Anon)?;
        }
    }
    Ok(())
}

/// Opens the program interpreter a dynamically linked executable names (PT_INTERP). Linux's
/// errors: the path's own (ENOENT, EACCES...) as for any executable, ELIBBAD for a file that is
/// not an AArch64 ELF image.
fn open_interp(name: &[u8]) -> SysResult<Exe> {
    let path = core::str::from_utf8(name).map_err(|_| Errno::ENOENT)?;
    Exe::open(path)
}

/// Where the interpreter goes: at the top of the mmap area (where Linux's mmap would put it),
/// lowered by a random number of pages (none under ADDR_NO_RANDOMIZE, as debuggers ask) and
/// aligned to its segments' alignment.
fn interp_bias(mm: &AddrSpace, elf: &ElfFile<'_>) -> SysResult<u64> {
    if !elf.is_dyn() {
        return Ok(0);
    }
    let align = elf.max_align().max(PAGE);
    let mut r = [0u8; 2];
    let persona = super::current()
        .process()
        .personality
        .load(Ordering::Relaxed);
    if persona & svelt_abi::sys::ADDR_NO_RANDOMIZE == 0 {
        crate::fs::dev::fill_random(&mut r);
    }
    let shift = u64::from(u16::from_le_bytes(r)) * PAGE;
    let room = elf.span() + align + shift;
    let low = mm
        .find_free(usize::try_from(room).map_err(|_| Errno::ENOMEM)?, 0)
        .ok_or(Errno::ENOMEM)? as u64;
    let base = (low + shift).next_multiple_of(align);
    Ok(base - elf.first_page())
}

/// Builds the new address space and initial stack; returns (mm, entry, sp). A dynamically
/// linked program gets its interpreter mapped too, and starts there (AT_BASE says where it is).
fn load(
    exe: &Exe,
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
    execfn: &[u8],
) -> SysResult<(AddrSpace, u64, u64)> {
    let mut whole = Vec::new();
    let elf = parse(exe, &mut whole)?;
    let interp = match elf.interp() {
        Some(name) => Some(open_interp(name)?),
        None => None,
    };
    let bias = if elf.is_dyn() {
        ET_DYN_BASE.next_multiple_of(elf.max_align().max(PAGE))
    } else {
        0
    };
    let plan = elf.plan(bias, STACK_TOP as u64 - STACK_SIZE as u64)?;
    let mut mm = AddrSpace::new()?;
    map_image(&mut mm, &plan, exe, true)?;
    let brk = plan.brk.next_multiple_of(PAGE) as usize;
    mm.brk_start = brk;
    mm.brk = brk;
    let (start, interp_base) = match &interp {
        Some(iexe) => {
            let mut iwhole = Vec::new();
            let ielf = parse(iexe, &mut iwhole).map_err(|_| Errno::ELIBBAD)?;
            let iplan = ielf
                .plan(interp_bias(&mm, &ielf)?, crate::mm::aspace::MMAP_TOP as u64)
                .map_err(|_| Errno::ELIBBAD)?;
            map_image(&mut mm, &iplan, iexe, false)?;
            (iplan.entry, iplan.bias)
        }
        None => (plan.entry, 0),
    };

    mm.map(
        STACK_TOP - stack_size(),
        STACK_TOP,
        Prot(Prot::READ | Prot::WRITE),
        Backing::Anon,
    )?;
    let vdso = crate::vdso::map(&mut mm)?;
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
        (AT_MINSIGSTKSZ, crate::signal::min_sigstksz() as u64),
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
    Ok((mm, start, layout.sp))
}

/// Reads the binary execve runs for `path`: the file itself, or for a `#!` script its
/// interpreter (scripts may name scripts, [`script::MAX_DEPTH`] deep), with `argv` rewritten as
/// Linux rewrites it: `[interpreter, argument?, path, argv[1..]]` at each level.
fn read_program(path: &str, argv: &mut Vec<Vec<u8>>) -> SysResult<Exe> {
    let mut file = String::from(path);
    for _ in 0..=script::MAX_DEPTH {
        let exe = Exe::open(&file)?;
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

/// Records a loaded segment for /proc: code and data bounds (as Linux's load_elf_binary sets
/// them: the executable segment is code, the writable ones data) and the range the file's
/// bytes fill.
fn note_segment(info: &mut crate::mm::aspace::ExecInfo, seg: &svelt_abi::elf::LoadSegment) {
    use crate::mm::aspace::{ExecInfo, ImageRange};
    let file_end = (seg.copy_dst + seg.file_len) as usize;
    if seg.prot & Prot::EXEC != 0 && info.start_code == 0 {
        info.start_code = seg.copy_dst as usize;
        info.end_code = file_end;
    }
    if seg.prot & Prot::WRITE != 0 {
        if info.start_data == 0 {
            info.start_data = seg.copy_dst as usize;
        }
        info.end_data = file_end;
    }
    let start = seg.map_start as usize;
    let end = file_end
        .next_multiple_of(PAGE as usize)
        .min(seg.map_end as usize);
    if seg.file_len != 0 && start < end && info.nimage < ExecInfo::MAX_IMAGE {
        info.image[info.nimage] = ImageRange {
            start,
            end,
            offset: seg.file_offset - (seg.copy_dst - seg.map_start),
        };
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
    let exe = read_program(&path, &mut argv)?;
    let (mut mm, entry, sp) = load(&exe, &argv, &envp, path.as_bytes())?;
    mm.exec.exe_ino = exe.ino;
    let canonical = exe.path;

    // Past this point the old program is gone.
    let me = current_arc();
    let p = me.process();
    de_thread(&me);
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
    *me.comm.lock() = svelt_abi::procfs::exec_comm(path.as_bytes());
    cur.local().tpidrro_el0.set(0);
    // ptrace breakpoints and watchpoints do not survive exec.
    *cur.local().hw_debug.borrow_mut() = Default::default();
    // Nor does the tagged address ABI (Linux's flush_tagged_addr_state).
    sched::set_current_tagged_addr(false);
    crate::fpstate::fpsimd_flush_thread(cur);
    crate::gcs::flush(cur);
    cur.local().rseq.set(None);
    sched::set_current_tpidr_el0(cur.local(), 0);
    *tf = TrapFrame::program_start(entry, sp);
    fork::release_vfork(&me);
    debug_assert!((sp as usize) < USER_END);
    Ok(())
}

/// Makes the caller the only thread of its process (other threads exit).
fn de_thread(me: &Arc<super::Task>) {
    let p = me.process();
    let others: Vec<_> = p
        .live_threads()
        .into_iter()
        .filter(|t| !Arc::ptr_eq(t, me))
        .collect();
    if others.is_empty() {
        return;
    }
    for t in &others {
        t.exit_code.store(0, Ordering::Relaxed);
        t.killed.store(true, Ordering::Release);
        crate::ptrace::wake_unless_frozen(t);
    }
    // Wait for them to leave (they exit on their way back to user mode).
    while p.live_threads().len() > 1 {
        sched::yield_now();
    }
}

/// Starts PID 1 running `path`, with /dev/console on descriptors 0, 1 and 2.
pub fn spawn_init(path: &str) -> SysResult<()> {
    use super::{register, KernelStack, Process, Task};
    let mut argv = vec![path.as_bytes().to_vec()];
    let exe = read_program(path, &mut argv)?;
    let envp = [b"HOME=/".to_vec(), b"TERM=linux".to_vec()];
    let (mut mm, entry, sp) = load(&exe, &argv, &envp, path.as_bytes())?;
    mm.exec.exe_ino = exe.ino;
    let canonical = exe.path;
    let new_mm: Mm = Arc::new(Mutex::new(mm));
    crate::mm::aspace::register_file_maps(&new_mm);
    let process = Process::new(super::alloc_pid(), alloc::sync::Weak::new());
    *process.exe.lock() = canonical;
    let mut files = crate::fs::FdTable::new();
    if let Ok(r) = fs::resolve(svelt_abi::fs::AT_FDCWD, "/dev/console", true) {
        let f = fs::open_node(r.node, svelt_abi::fs::O_RDWR, r.path)?;
        for _ in 0..3 {
            files.install(f.clone(), false)?;
        }
    }
    let t = Arc::new(Task::new(
        process.pid,
        process.clone(),
        Some(KernelStack::new(0, u64::MAX)?),
        Some(new_mm.clone()),
        Arc::new(Mutex::new(files)),
        Arc::new(Mutex::new(fs::FsContext::root())),
        Arc::new(crate::sync::IrqLock::new(
            crate::signal::SigHandlers::default(),
        )),
    ));
    let tf = t.trap_frame();
    // SAFETY: tf is the top of the new task's kernel stack; the task has not run.
    unsafe {
        tf.write(TrapFrame::program_start(entry, sp));
        *t.ctx.get() = crate::arch::context::new_task_context(tf as usize);
    }
    process.threads.lock().push(Arc::downgrade(&t));
    register(&t);
    sched::enqueue_new(&t);
    Ok(())
}
