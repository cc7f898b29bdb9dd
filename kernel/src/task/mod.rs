//! The task core: what the scheduler runs, and nothing of POSIX.
//!
//! A `Task` is a schedulable thread of kernel execution: an id, a run state, the CPU it last ran
//! on and the CPUs it may run on, a kernel stack with the user registers at its top, a saved
//! kernel context, its user register state (TLS, FP/SVE/SME, GCS: `TaskLocal`) and the counters
//! of its FP traps. What a task is *for* hangs off it in one data slot: the POSIX thread
//! (`process::Thread`: signals, files, credentials, ptrace...) for every task today, and the
//! layer that put it there is the only one that reads it back. The core imports arch, mm, sync
//! and the timer and IRQ plumbing below them; the layers above reach in through `hooks` for the
//! two questions a wait must ask of them (after Asterinas OSTD's `Task` with its typed data,
//! and Linux's split between `task_struct`'s scheduling part and `signal_pending`).

pub mod cputime;
pub mod fpstate;
pub mod hooks;
pub mod local;
pub mod sched;
pub mod timer;
pub mod wait;
pub mod work;

use crate::arch::context::Context;
use crate::arch::exception::TrapFrame;
use crate::arch::mmu::{phys_to_virt, PAGE_SIZE};
use crate::mm::frame;
use crate::sync::IrqLock;
use alloc::sync::Arc;
use core::any::{Any, TypeId};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
pub use local::{CurrentTask, Held, TaskLocal};
use svelt_abi::uapi::errno::{Errno, SysResult};

/// A task's id (a thread id to POSIX).
pub type Pid = u32;

pub const KSTACK_PAGES: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    Running = 0,
    Runnable = 1,
    /// Blocked; a wake-up or a signal makes it runnable.
    Sleeping = 2,
    /// Exited; waiting to be switched away from for the last time.
    Dead = 3,
    /// Held asleep while another thread reads and writes its saved state (a core dump's
    /// other threads, a tracee during a ptrace request): no wake-up or signal makes it
    /// runnable, only `sched::unpark`.
    Parked = 4,
}

pub struct KernelStack {
    pa: u64,
}

impl KernelStack {
    /// A kernel stack (ENOMEM without frames for it).
    pub fn new() -> SysResult<KernelStack> {
        let pa = frame::alloc_user(KSTACK_PAGES).ok_or(Errno::ENOMEM)?;
        frame::KSTACK_PAGES.fetch_add(KSTACK_PAGES, Ordering::Relaxed);
        Ok(KernelStack { pa })
    }

    pub fn top(&self) -> usize {
        phys_to_virt(self.pa) + KSTACK_PAGES * PAGE_SIZE
    }
    pub fn bottom(&self) -> usize {
        phys_to_virt(self.pa)
    }
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        frame::KSTACK_PAGES.fetch_sub(KSTACK_PAGES, Ordering::Relaxed);
        frame::free(self.pa, KSTACK_PAGES);
    }
}

/// The data slot: what the layer above keeps for a task, typed by that layer.
struct Data {
    /// The owning reference, released after the task's last switch away if it died.
    owner: IrqLock<Option<Arc<dyn Any + Send + Sync>>>,
    /// The same object as a plain pointer for `Task::data`, and its type.
    ptr: AtomicUsize,
    ty: UnsafeCell<Option<TypeId>>,
}

pub struct Task {
    pub tid: Pid,
    pub kstack: Option<KernelStack>,
    /// Kernel context while switched out.
    pub ctx: UnsafeCell<Context>,
    pub state: AtomicU8,
    /// In a run queue.
    pub on_rq: AtomicBool,
    /// Running on a CPU, or still being switched away from.
    pub on_cpu: AtomicBool,
    /// CPU it last ran on.
    pub cpu: AtomicUsize,
    /// CPUs it may run on (sched_setaffinity), one bit each.
    pub affinity: crate::percpu::AtomicCpuMask,
    /// Reached only through `local_unchecked` (task/local.rs says by whom).
    local: TaskLocal,
    /// TTBR0 of its user address space (0 without one), which the switch installs.
    pub user_ttbr0: AtomicU64,
    /// Syscalls accept tagged user pointers (PR_TAGGED_ADDR_ENABLE): the switch publishes it
    /// to the CPU's user-access checks.
    pub tagged_addr: AtomicBool,
    /// Set when the task must stop running user code (exit_group, exec from another thread, a
    /// fatal signal): every wait ends.
    pub killed: AtomicBool,
    /// What a syscall's entry or the way back to user mode must do (work.rs).
    pub work: work::Work,
    /// Lazy FP counters (/proc/svelt/fpstat), written only by the holder of this task's FP
    /// state.
    pub fpstat: fpstate::Counters,
    /// User and system time, switch counts (cputime.rs).
    pub cputime: cputime::CpuTime,
    data: Data,
}

// SAFETY: `ctx`, `local` and `data.ty` are touched only by the CPU running the task or switching
// it (the scheduler serialises them with on_cpu), by a holder that keeps it parked (task/local.rs),
// or before anyone reads the data slot (`set_data`); everything else is atomic or locked.
unsafe impl Sync for Task {}
// SAFETY: sending an Arc<Task> to another CPU is what the scheduler does; the reasoning for
// Sync above covers every field a task's new CPU touches.
unsafe impl Send for Task {}

impl Task {
    pub fn new(tid: Pid, kstack: Option<KernelStack>, local: TaskLocal) -> Task {
        Task {
            tid,
            kstack,
            ctx: UnsafeCell::new(Context::default()),
            state: AtomicU8::new(State::Runnable as u8),
            on_rq: AtomicBool::new(false),
            on_cpu: AtomicBool::new(false),
            cpu: AtomicUsize::new(0),
            affinity: crate::percpu::AtomicCpuMask::new(svelt_abi::uapi::cpumask::CpuMask::FULL),
            local,
            user_ttbr0: AtomicU64::new(0),
            tagged_addr: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            work: work::Work::new(),
            fpstat: fpstate::ZERO_COUNTERS,
            cputime: cputime::CpuTime::new(),
            data: Data {
                owner: IrqLock::new(None),
                ptr: AtomicUsize::new(0),
                ty: UnsafeCell::new(None),
            },
        }
    }

    /// The idle task of a CPU: runs on the CPU's boot stack, never in user mode.
    pub fn new_idle(cpu: usize) -> Task {
        let t = Task::new(0, None, TaskLocal::new(fpstate::TaskFpState::new(), 0, 0));
        t.state.store(State::Running as u8, Ordering::Relaxed);
        t.on_cpu.store(true, Ordering::Relaxed);
        t.cpu.store(cpu, Ordering::Relaxed);
        cputime::start_idle(&t);
        t
    }

    /// Hangs `d` off this task: once, before anyone reads the slot through `data` (before the
    /// task first runs; for a CPU's idle task, before anything asks the running task for it).
    pub fn set_data<T: Any + Send + Sync>(&self, d: Arc<T>) {
        let mut owner = self.data.owner.lock();
        assert!(owner.is_none(), "a task's data is set once");
        // SAFETY: nobody reads `ty` before `ptr` is published below (Release), and the slot
        // was empty: no reader has seen a type yet.
        unsafe { *self.data.ty.get() = Some(TypeId::of::<T>()) };
        self.data
            .ptr
            .store(Arc::as_ptr(&d) as usize, Ordering::Release);
        *owner = Some(d);
    }

    /// What `set_data` hung off this task, if it was a `T`. Valid while the task lives and
    /// has not died and been switched away from for the last time (`release_data`).
    pub fn data<T: Any>(&self) -> Option<&T> {
        let p = self.data.ptr.load(Ordering::Acquire);
        // SAFETY: `ty` is written only before `ptr` is published (set_data, attach_data).
        let ty = unsafe { *self.data.ty.get() };
        if p == 0 || ty != Some(TypeId::of::<T>()) {
            return None;
        }
        // SAFETY: `p` points at the `T` that `owner` keeps alive (same object, type checked).
        Some(unsafe { &*(p as *const T) })
    }

    /// What `set_data` hung off this task, untyped (null if nothing): for the layer that set
    /// it, which knows its type, on paths where `data`'s type check costs too much.
    /// Relaxed: the layer reads its own task's slot, or one the scheduler's handshake (or a
    /// lock) already ordered after `set_data`.
    pub fn data_ptr(&self) -> *const () {
        self.data.ptr.load(Ordering::Relaxed) as *const ()
    }

    /// An owned reference to the data, if it was a `T`.
    pub fn data_arc<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.data.owner.lock().clone()?.downcast::<T>().ok()
    }

    /// Drops the data slot's reference: the task died and has been switched away from for the
    /// last time (the scheduler), or never ran (its creator gave up on it). The data may hold
    /// the task itself; this is what breaks that cycle.
    pub fn release_data(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        let d = self.data.owner.lock().take();
        self.data.ptr.store(0, Ordering::Release);
        d
    }

    pub fn state(&self) -> State {
        match self.state.load(Ordering::Acquire) {
            0 => State::Running,
            1 => State::Runnable,
            2 => State::Sleeping,
            4 => State::Parked,
            _ => State::Dead,
        }
    }

    pub fn set_state(&self, s: State) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// The user trap frame at the top of the kernel stack.
    pub fn trap_frame(&self) -> *mut TrapFrame {
        let top = self.kstack.as_ref().map_or(0, KernelStack::top);
        (top - core::mem::size_of::<TrapFrame>()) as *mut TrapFrame
    }

    /// This task's own state.
    ///
    /// # Safety
    /// Only the CPU that may touch it now: the one running the task, or the one switching it
    /// in or out, or one holding it parked (task/local.rs). `CurrentTask` and `Held` are the
    /// safe ways in.
    pub(crate) unsafe fn local_unchecked(&self) -> &TaskLocal {
        &self.local
    }

    pub fn is_idle(&self) -> bool {
        self.tid == 0
    }

    /// Marks the task to stop running user code (`killed`, and its work bit); the caller kicks
    /// or wakes it.
    pub fn set_killed(&self) {
        self.killed.store(true, Ordering::Release);
        self.work.set(work::KILLED);
    }
}

/// The running task's kernel stack bounds (None before the scheduler runs or on an idle task).
pub fn current_kstack() -> Option<(usize, usize)> {
    sched::try_current()?
        .kstack
        .as_ref()
        .map(|k| (k.bottom(), k.top()))
}
