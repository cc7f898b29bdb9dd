//! Process and thread helpers built on the raw calls: run code in a child and get its wait
//! status, decode wait statuses, spawn a thread with glibc's clone flags.

use crate::sys::{self, SysResult};

pub fn wifexited(st: i32) -> bool {
    st & 0x7f == 0
}
pub fn wexitstatus(st: i32) -> i32 {
    (st >> 8) & 0xff
}
pub fn wifsignaled(st: i32) -> bool {
    ((st & 0x7f) + 1) as i8 >> 1 > 0
}
pub fn wtermsig(st: i32) -> i32 {
    st & 0x7f
}
pub fn wcoredump(st: i32) -> bool {
    st & 0x80 != 0
}
pub fn wifstopped(st: i32) -> bool {
    st & 0xff == 0x7f
}
pub fn wstopsig(st: i32) -> i32 {
    wexitstatus(st)
}
pub fn wifcontinued(st: i32) -> bool {
    st == 0xffff
}

/// A wait status, readable in test failure messages.
pub fn describe(st: i32) -> alloc::string::String {
    if wifexited(st) {
        alloc::format!("exited {}", wexitstatus(st))
    } else if wifsignaled(st) {
        alloc::format!(
            "killed by signal {}{}",
            wtermsig(st),
            if wcoredump(st) { " (core)" } else { "" }
        )
    } else if wifstopped(st) {
        alloc::format!("stopped by signal {}", wstopsig(st))
    } else if wifcontinued(st) {
        "continued".into()
    } else {
        alloc::format!("status {st:#x}")
    }
}

/// Forks; the child runs `f` and exits with its result. Returns the child's pid.
pub fn spawn(f: impl FnOnce() -> i32) -> SysResult<i32> {
    match sys::fork()? {
        0 => sys::exit_group(f()),
        pid => Ok(pid),
    }
}

/// Runs `f` in a forked child and returns the child's wait status.
pub fn in_child(f: impl FnOnce() -> i32) -> SysResult<i32> {
    let pid = spawn(f)?;
    let (_, st) = sys::waitpid(pid, 0)?;
    Ok(st)
}

/// Runs test code `f` in a forked child: Ok when it exits 0; otherwise the child printed its
/// message as `# child: ...` diagnostics and the error gives its wait status.
pub fn in_child_test(f: impl FnOnce() -> crate::ktap::TestResult) -> crate::ktap::TestResult {
    let st = in_child(|| crate::ktap::child_status("child", f()))
        .map_err(|e| alloc::format!("fork: {e:?}"))?;
    if wifexited(st) && wexitstatus(st) == 0 {
        Ok(())
    } else {
        Err(alloc::format!("child: {}", describe(st)))
    }
}

/// Waits at most `timeout_ns` for child `pid`. Past the deadline the child and its process group
/// (if it made one) get SIGKILL and are reaped. Returns the wait status and whether it timed out:
/// a test whose kernel misbehaves fails instead of hanging.
pub fn wait_bounded(pid: i32, timeout_ns: u64) -> SysResult<(i32, bool)> {
    let deadline = sys::now_ns() + timeout_ns;
    loop {
        match sys::waitpid(pid, sys::WNOHANG)? {
            (0, _) => {}
            (_, st) => return Ok((st, false)),
        }
        if sys::now_ns() >= deadline {
            let _ = sys::kill(-pid, crate::sig::SIGKILL);
            let _ = sys::kill(pid, crate::sig::SIGKILL);
            return reap_killed(pid).map(|st| (st, true));
        }
        sys::sleep_ns(5_000_000);
    }
}

/// Reaps `pid` after its SIGKILL, for at most 20 s. A process that SIGKILL does not end within
/// that (stuck in its kernel) is described on the console from its /proc files, and the wait
/// fails with ETIMEDOUT rather than hanging the program that waits.
fn reap_killed(pid: i32) -> SysResult<i32> {
    let deadline = sys::now_ns() + 20_000_000_000;
    loop {
        match sys::waitpid(pid, sys::WNOHANG)? {
            (0, _) => {}
            (_, st) => return Ok(st),
        }
        if sys::now_ns() >= deadline {
            let show = |what: &str| {
                let path = alloc::format!("/proc/{pid}/{what}");
                let text = crate::io::read_file(&path).unwrap_or_default();
                let text = alloc::string::String::from_utf8_lossy(&text).replace('\n', " | ");
                crate::println!("# pid {pid} lives 20 s after SIGKILL: {what}: {text}");
            };
            for what in ["stat", "wchan", "stack", "syscall"] {
                show(what);
            }
            return Err(sys::ETIMEDOUT);
        }
        sys::sleep_ns(10_000_000);
    }
}

/// Runs `f` in a forked child for at most `timeout_ns` (see [`wait_bounded`]).
pub fn in_child_bounded(f: impl FnOnce() -> i32, timeout_ns: u64) -> SysResult<(i32, bool)> {
    let pid = spawn(f)?;
    wait_bounded(pid, timeout_ns)
}

/// Anonymous shared memory holding a `T`, visible to the children forked after it is made.
pub struct Shared<T: Copy> {
    ptr: *mut T,
}

impl<T: Copy> Shared<T> {
    pub fn new(v: T) -> Shared<T> {
        let len = core::mem::size_of::<T>().next_multiple_of(4096).max(4096);
        let p = sys::mmap_shared(len).expect("mmap shared") as *mut T;
        // SAFETY: p is a fresh, page-aligned read/write mapping at least size_of::<T>() long.
        unsafe { p.write_volatile(v) };
        Shared { ptr: p }
    }
    pub fn get(&self) -> T {
        // SAFETY: ptr stays mapped for the life of self; T is Copy (plain data).
        unsafe { self.ptr.read_volatile() }
    }
    pub fn set(&self, v: T) {
        // SAFETY: as in get.
        unsafe { self.ptr.write_volatile(v) }
    }
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }
}

core::arch::global_asm!(
    ".text",
    // long svelt_clone(flags, stack, ptid, tls, ctid, fn, arg)
    // The child starts on `stack` with fn and arg popped from it, calls fn(arg), then exit(ret).
    ".global svelt_clone",
    ".type svelt_clone, %function",
    "svelt_clone:",
    "    stp x5, x6, [x1, #-16]!",
    "    mov x8, #220",
    "    svc #0",
    "    cbz x0, 1f",
    "    ret",
    "1:  ldp x5, x6, [sp], #16",
    "    mov x29, #0",
    "    mov x30, #0",
    "    mov x0, x6",
    "    blr x5",
    "    mov x8, #93",
    "    svc #0",
    "    udf #0",
    ".size svelt_clone, . - svelt_clone",
    // pid svelt_vfork_exec(path, argv, envp): vfork; the child execs or exits 127.
    ".global svelt_vfork_exec",
    ".type svelt_vfork_exec, %function",
    "svelt_vfork_exec:",
    "    mov x9, x0",
    "    mov x10, x1",
    "    mov x11, x2",
    "    mov x0, #0x4111", // CLONE_VM | CLONE_VFORK | SIGCHLD
    "    mov x1, #0",
    "    mov x2, #0",
    "    mov x3, #0",
    "    mov x4, #0",
    "    mov x8, #220",
    "    svc #0",
    "    cbz x0, 1f",
    "    ret",
    "1:  mov x0, x9",
    "    mov x1, x10",
    "    mov x2, x11",
    "    mov x8, #221",
    "    svc #0",
    "    mov x0, #127",
    "    mov x8, #93",
    "    svc #0",
    ".size svelt_vfork_exec, . - svelt_vfork_exec",
    // pid svelt_vfork_store(addr, value, code): vfork; the child stores value at addr
    // (shared memory: CLONE_VM) and _exits with code.
    ".global svelt_vfork_store",
    ".type svelt_vfork_store, %function",
    "svelt_vfork_store:",
    "    mov x9, x0",
    "    mov x10, x1",
    "    mov x11, x2",
    "    mov x0, #0x4111",
    "    mov x1, #0",
    "    mov x2, #0",
    "    mov x3, #0",
    "    mov x4, #0",
    "    mov x8, #220",
    "    svc #0",
    "    cbz x0, 1f",
    "    ret",
    "1:  str x10, [x9]",
    "    mov x0, x11",
    "    mov x8, #93",
    "    svc #0",
    ".size svelt_vfork_store, . - svelt_vfork_store",
);

extern "C" {
    fn svelt_clone(
        flags: usize,
        stack: usize,
        ptid: *mut i32,
        tls: usize,
        ctid: *mut i32,
        f: extern "C" fn(usize) -> i32,
        arg: usize,
    ) -> isize;
    fn svelt_vfork_exec(path: usize, argv: usize, envp: usize) -> isize;
    fn svelt_vfork_store(addr: usize, value: u64, code: usize) -> isize;
}

fn result(r: isize) -> SysResult<i32> {
    if (-4095..0).contains(&r) {
        Err(sys::Errno(-r as i32))
    } else {
        Ok(r as i32)
    }
}

/// vfork + execve(path, argv, envp) with raw NULL-terminated arrays.
pub fn vfork_exec(path: usize, argv: usize, envp: usize) -> SysResult<i32> {
    // SAFETY: the child only makes two syscalls with the given pointers and never returns, so
    // the parent's stack (shared until execve/exit) is not disturbed.
    result(unsafe { svelt_vfork_exec(path, argv, envp) })
}

/// vfork; the child stores `value` at `addr` and exits with `code`.
pub fn vfork_store(addr: *mut u64, value: u64, code: i32) -> SysResult<i32> {
    // SAFETY: the child writes one word to addr (valid, owned by the caller) and exits.
    result(unsafe { svelt_vfork_store(addr as usize, value, code as usize) })
}

/// A thread made with glibc's pthread flags. Its stack and the word the kernel clears at exit
/// (CLONE_CHILD_CLEARTID) live in one mapping that `join` releases.
pub struct Thread {
    pub tid: i32,
    ctid: *mut i32,
    map: usize,
    len: usize,
}

const THREAD_STACK: usize = 64 * 1024;

/// Starts `f(arg)` in a new thread with TPIDR_EL0 = `tls` (CLONE_SETTLS).
pub fn spawn_thread(f: extern "C" fn(usize) -> i32, arg: usize, tls: usize) -> SysResult<Thread> {
    let len = THREAD_STACK + 4096;
    let map = sys::mmap_anon(len)?;
    let ctid = map as *mut i32; // first page: the tid word; the stack grows down from the top
    let stack = map + len;
    // SAFETY: ctid points into the fresh mapping; svelt_clone runs f on the new stack, and the
    // mapping stays until join has seen the kernel clear ctid (the thread is gone).
    let r = unsafe { svelt_clone(sys::CLONE_PTHREAD, stack, ctid, tls, ctid, f, arg) };
    let tid = result(r)?;
    Ok(Thread {
        tid,
        ctid,
        map,
        len,
    })
}

impl Thread {
    /// The tid word as the parent sees it (CLONE_PARENT_SETTID stored the tid there).
    pub fn tid_word(&self) -> i32 {
        // SAFETY: the mapping lives until join returns.
        unsafe { core::ptr::read_volatile(self.ctid) }
    }

    /// Waits for the kernel to clear the tid word and wake it (CLONE_CHILD_CLEARTID).
    pub fn join(self) {
        loop {
            let v = self.tid_word();
            if v == 0 {
                break;
            }
            let _ = sys::futex(self.ctid as *const u32, sys::FUTEX_WAIT, v as u32, 0);
        }
        let _ = sys::munmap(self.map, self.len);
    }
}

/// TPIDR_EL0 of the calling thread.
pub fn tpidr_el0() -> usize {
    let v;
    // SAFETY: reading TPIDR_EL0 is allowed at EL0 and has no side effects.
    unsafe { core::arch::asm!("mrs {}, tpidr_el0", out(reg) v, options(nomem, nostack)) };
    v
}

/// As the first process (a lone boot), mounts what the tests use: /dev, /proc and /tmp.
pub fn mount_when_init() {
    if sys::getpid() != 1 {
        return;
    }
    for (target, fstype) in [("/dev", "devtmpfs"), ("/proc", "proc"), ("/tmp", "tmpfs")] {
        let _ = sys::mkdirat(sys::AT_FDCWD, target, 0o755);
        let _ = sys::mount(fstype, target, fstype, 0);
    }
}
