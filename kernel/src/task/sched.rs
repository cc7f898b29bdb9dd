//! The scheduler: per-CPU run queues, round robin with a one-tick slice, idle CPUs steal work.
//!
//! The kernel is not preemptible: a task leaves the CPU only in `schedule()`, which it calls when
//! it blocks, yields, or on the way back to user mode when its slice is over. A task can be woken
//! (made runnable, queued on another CPU) while it is still switching away; the CPU that picks it
//! waits for `on_cpu` to drop before running it.

use super::{State, Task, TaskLocal};
use crate::arch::{context, cpu};
use crate::percpu::{self, PerCpuArray};
use crate::sync::IrqLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

struct RunQueue {
    queue: VecDeque<Arc<Task>>,
    current: Option<Arc<Task>>,
    idle: Option<Arc<Task>>,
    /// The task switched away from, until the switch is complete.
    prev: Option<Arc<Task>>,
    /// `prev` had died (read once by `schedule`, which saw it Dead).
    prev_dead: bool,
}

impl RunQueue {
    const fn new() -> RunQueue {
        RunQueue {
            queue: VecDeque::new(),
            current: None,
            idle: None,
            prev: None,
            prev_dead: false,
        }
    }
}

/// One CPU's scheduling state (its running task and need-resched flag are in its `PerCpu`).
/// `queued` mirrors the run queue's length so that other CPUs can look for work without
/// taking its lock.
struct CpuSched {
    rq: IrqLock<RunQueue>,
    queued: AtomicUsize,
    /// A task other than the idle task runs here.
    busy: AtomicBool,
    /// Context switches on this CPU (written only here, IRQs masked: a load and a store).
    switches: AtomicU64,
}

static CPUS: PerCpuArray<CpuSched> = PerCpuArray::new(|_| CpuSched {
    rq: IrqLock::new(RunQueue::new()),
    queued: AtomicUsize::new(0),
    busy: AtomicBool::new(false),
    switches: AtomicU64::new(0),
});
/// CPUs with more than one task waiting: an idle CPU looks at the others only when there are
/// some, so idling costs the same whatever the CPU count. Changed only when a queue crosses
/// that line, so a busy CPU's switches do not touch it.
static OVERLOADED: AtomicUsize = AtomicUsize::new(0);

fn runq(cpu: usize) -> &'static IrqLock<RunQueue> {
    &CPUS.get(cpu).rq
}

/// Publishes a run queue's new length (`before` it changed); called with it locked.
fn queue_changed(s: &CpuSched, rq: &RunQueue, before: usize) {
    let now = rq.queue.len();
    s.queued.store(now, Ordering::Relaxed);
    match (before > 1, now > 1) {
        (false, true) => {
            OVERLOADED.fetch_add(1, Ordering::Relaxed);
        }
        (true, false) => {
            OVERLOADED.fetch_sub(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

fn push_queued(s: &CpuSched, rq: &mut RunQueue, t: Arc<Task>) {
    let before = rq.queue.len();
    rq.queue.push_back(t);
    queue_changed(s, rq, before);
}

/// This CPU's running task, as `PerCpu::current_task` holds it.
fn set_current(t: &Arc<Task>) {
    percpu::this()
        .current_task
        .store(Arc::as_ptr(t) as usize, Ordering::Release);
}
/// Context switches so far on all CPUs, for /proc/stat's ctxt.
pub fn switches() -> u64 {
    (0..percpu::possible())
        .map(|c| CPUS.get(c).switches.load(Ordering::Relaxed))
        .sum()
}

static STARTED: AtomicBool = AtomicBool::new(false);

/// Whether any CPU runs the scheduler yet.
pub fn started() -> bool {
    STARTED.load(Ordering::Acquire)
}

/// Makes the code running on this CPU its idle task, which it returns.
pub fn init_cpu() -> Arc<Task> {
    let id = percpu::cpu_id();
    let idle = Arc::new(Task::new_idle(id));
    set_current(&idle);
    let mut rq = runq(id).lock();
    rq.current = Some(idle.clone());
    rq.idle = Some(idle.clone());
    STARTED.store(true, Ordering::Release);
    idle
}

// The running task, known to the task core alone: everything above reaches it through the
// token made at entry (`CurrentTask::enter`), and the timer tick, which runs for no task, is
// handed the task it interrupted (`on_tick_with_task`).

pub(super) fn current() -> &'static Task {
    let p = percpu::this().current_task.load(Ordering::Acquire) as *const Task;
    // SAFETY: this CPU's `current_task` points at the task running on it, which is us; the run
    // queue's `current` Arc keeps it alive for as long as it runs, and a task only calls this
    // while running.
    unsafe { &*p }
}

/// The running task, if the scheduler runs on this CPU yet.
pub(super) fn try_current() -> Option<&'static Task> {
    let p = percpu::this().current_task.load(Ordering::Acquire) as *const Task;
    // SAFETY: as in `current`; null before init_cpu.
    unsafe { p.as_ref() }
}

pub(super) fn current_arc() -> Arc<Task> {
    runq(percpu::cpu_id())
        .lock()
        .current
        .clone()
        .expect("scheduler not started on this CPU")
}

pub fn need_resched() -> bool {
    percpu::this().need_resched.load(Ordering::Relaxed)
}

/// Asks this CPU to reschedule: the per-CPU flag, and its work bit on the running task (whose
/// way back to user mode then looks at the flag).
pub fn set_need_resched() {
    percpu::this().need_resched.store(true, Ordering::Relaxed);
    if let Some(t) = try_current() {
        t.work.set(super::work::NEED_RESCHED);
    }
}

/// What the timer interrupt tells a layer above about the task it interrupted.
static TASK_TICK: spin::Once<fn(Option<&Task>)> = spin::Once::new();

/// Has every timer interrupt run `f` with the task it interrupted (None before the scheduler
/// runs on that CPU), in this place among the tick's handlers: the process layer's CPU-time
/// accounting. The tick runs for no task, so this is how it learns whose time went. Boot time,
/// once.
pub fn on_tick_with_task(f: fn(Option<&Task>)) {
    TASK_TICK.call_once(|| f);
    crate::irq::on_tick(|| {
        if let Some(f) = TASK_TICK.get() {
            f(try_current());
        }
    });
}

/// Has the timer interrupt run `tick` and the reschedule IPI set `need_resched`. Boot time,
/// before the scheduler starts.
pub fn init_irqs() {
    crate::irq::on_tick(tick);
    crate::irq::on_ipi(crate::irq::SGI_RESCHEDULE, set_need_resched);
}

/// Timer tick on this CPU, once the scheduler runs: the running task's time goes into the
/// CPU's sums, and the slice ends if someone is waiting.
fn tick() {
    if let Some(t) = try_current() {
        super::cputime::tick(t);
    }
    if started() && CPUS.this().queued.load(Ordering::Relaxed) != 0 {
        set_need_resched();
    }
}

fn online_cpus() -> impl Iterator<Item = usize> {
    (0..percpu::possible()).filter(|&c| percpu::is_online(c))
}

/// The online CPUs other than `me`, starting after it (so idle CPUs do not all look at CPU 0
/// first).
fn other_online_cpus(me: usize) -> impl Iterator<Item = usize> {
    let n = percpu::possible();
    (1..n)
        .map(move |i| (me + i) % n)
        .filter(|&c| percpu::is_online(c))
}

/// Puts a runnable task on a run queue: its last CPU if online, and pokes that CPU. `woken`:
/// it had blocked (its `active` clock starts), else it was preempted and moves (the clock runs
/// on).
fn enqueue(t: &Arc<Task>, woken: bool) {
    let last = t.cpu.load(Ordering::Relaxed);
    let target = if percpu::is_online(last) && allowed(t, last) {
        last
    } else {
        online_cpus()
            .find(|&c| allowed(t, c))
            .unwrap_or(percpu::cpu_id())
    };
    enqueue_on(t, target, woken);
}

/// The task's affinity mask lets it run on `cpu`.
fn allowed(t: &Task, cpu: usize) -> bool {
    t.affinity.contains(cpu)
}

fn enqueue_on(t: &Arc<Task>, target: usize, woken: bool) {
    {
        let mut rq = runq(target).lock();
        if t.on_rq.swap(true, Ordering::AcqRel) {
            return;
        }
        if woken {
            super::cputime::woken(t, cpu::counter_unordered());
        }
        push_queued(CPUS.get(target), &mut rq, t.clone());
    }
    if target == percpu::cpu_id() {
        // The running task's work bit with the flag, as the reschedule IPI would set them on
        // another CPU: its way back to user mode gives the CPU up (to a woken task, a new
        // child) instead of running on until the next tick or block.
        set_need_resched();
    } else {
        percpu::get(target)
            .need_resched
            .store(true, Ordering::Release);
        crate::irq::send_reschedule(target);
    }
}

/// A new task: placed on the least busy online CPU.
pub fn enqueue_new(t: &Arc<Task>) {
    let target = online_cpus()
        .filter(|&c| allowed(t, c))
        .min_by_key(|&c| {
            let s = CPUS.get(c);
            s.queued.load(Ordering::Relaxed) + s.busy.load(Ordering::Relaxed) as usize
        })
        .unwrap_or(0);
    t.cpu.store(target, Ordering::Relaxed);
    enqueue_on(t, target, true);
}

/// Makes a sleeping task runnable.
pub fn wake(t: &Arc<Task>) {
    if t.state
        .compare_exchange(
            State::Sleeping as u8,
            State::Runnable as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
    {
        enqueue(t, true);
    }
}

/// Parks a task that is `Sleeping` (see `State::Parked`); false if it was not asleep.
pub fn park_sleeping(t: &Task) -> bool {
    t.state
        .compare_exchange(
            State::Sleeping as u8,
            State::Parked as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
}

/// Makes a `Parked` task runnable (plain wake-ups leave it parked).
pub fn unpark(t: &Arc<Task>) {
    if t.state
        .compare_exchange(
            State::Parked as u8,
            State::Runnable as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
    {
        enqueue(t, true);
    }
}

/// Undoes a `Sleeping` the current task set before it decided not to block after all. If a
/// waker got in first, the task is already Runnable and on (or about to be on) a run queue; it
/// then gives up the CPU so that queued entry is what runs it next, never a second copy of it.
pub fn cancel_sleep(t: &Arc<Task>) {
    let woken = t
        .state
        .compare_exchange(
            State::Sleeping as u8,
            State::Running as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err();
    if woken {
        schedule();
    }
}

/// Takes a queued task from a busier CPU, for an idle one.
fn steal(me: usize) -> Option<Arc<Task>> {
    for c in other_online_cpus(me) {
        // A CPU running its idle task is about to take its one queued task itself.
        let spare = |s: &CpuSched| {
            s.queued.load(Ordering::Relaxed) > usize::from(!s.busy.load(Ordering::Relaxed))
        };
        let s = CPUS.get(c);
        if !spare(s) {
            continue;
        }
        if let Some(mut rq) = s.rq.try_lock() {
            let before = rq.queue.len();
            if before > usize::from(rq.current.as_ref().is_some_and(|t| t.is_idle())) {
                if let Some(i) = rq.queue.iter().rposition(|t| allowed(t, me)) {
                    let t = rq.queue.remove(i);
                    queue_changed(s, &rq, before);
                    return t;
                }
            }
        }
    }
    None
}

/// Gives the CPU to the next runnable task. Returns when the caller runs again.
pub fn schedule() {
    // Held across the switch: this task's stack keeps it, and it unmasks when the task is
    // scheduled back in and returns from here.
    let irqs = cpu::IrqGuard::new();
    let id = percpu::cpu_id();
    let here = CPUS.get(id);
    percpu::this().need_resched.store(false, Ordering::Relaxed);
    let mut rq = here.rq.lock();
    // One counter read for the switch: the CPU clocks of both tasks, and the `active` clock
    // of a task that blocked.
    let now = cpu::counter_unordered();
    // The running task's reference moves out of `current` (to `prev` below), the next task's
    // from the queue to `current`: a reference is cloned only where a second holder appears
    // (the queue, for a task still runnable).
    let prev = rq.current.take().expect("scheduler running");
    // Still runnable: preempted or yielding (an involuntary switch, as Linux counts them).
    let state = prev.state();
    let preempted = state == State::Running;
    // A dead task's last switch: finish_switch folds its time and lets its data go.
    let dead = state == State::Dead;
    // A running task whose affinity no longer includes this CPU goes to one it allows.
    let mut migrate = false;
    // The queue's length is published once, after the push and the pop below (both under the
    // lock, so nobody sees the length in between): a yield that requeues itself and takes the
    // next task leaves it as it was and touches OVERLOADED not at all.
    let before = rq.queue.len();
    if !prev.is_idle() && preempted {
        prev.set_state(State::Runnable);
        if !allowed(&prev, id) {
            migrate = true;
        } else if !prev.on_rq.swap(true, Ordering::AcqRel) {
            rq.queue.push_back(prev.clone());
        }
    }
    let next = rq.queue.pop_front();
    if rq.queue.len() != before {
        queue_changed(here, &rq, before);
    }
    let next = next
        .or_else(|| {
            let idle_now = prev.is_idle() || prev.state() != State::Runnable;
            if idle_now {
                steal(id)
            } else {
                None
            }
        })
        .or_else(|| rq.idle.clone())
        .unwrap();
    // Off the queue (the idle task never is on it: storing false there changes nothing).
    next.on_rq.store(false, Ordering::Release);
    if Arc::ptr_eq(&prev, &next) {
        next.set_state(State::Running);
        rq.current = Some(prev);
        drop(rq);
        return;
    }
    set_current(&next);
    here.busy.store(!next.is_idle(), Ordering::Relaxed);
    let migrating = migrate.then(|| prev.clone());
    let (prev_t, next_t) = (Arc::as_ptr(&prev), Arc::as_ptr(&next));
    rq.current = Some(next);
    rq.prev = Some(prev);
    rq.prev_dead = dead;
    drop(rq);
    // SAFETY: rq.prev keeps prev alive until finish_switch and rq.current keeps next alive
    // until this CPU schedules again, both after the switch below; neither reference is used
    // once the switch has happened.
    let (prev, next) = unsafe { (&*prev_t, &*next_t) };
    if let Some(p) = migrating {
        enqueue(&p, false);
    }

    // The task may still be switching away on the CPU it was woken from.
    while next.on_cpu.load(Ordering::Acquire) {
        core::hint::spin_loop();
    }
    // Running only now: until it has left its old CPU, that CPU's schedule() must see it as
    // Runnable (already queued), or it would queue it a second time and run on.
    next.set_state(State::Running);
    next.on_cpu.store(true, Ordering::Relaxed);
    next.cpu.store(id, Ordering::Relaxed);
    here.switches
        .store(here.switches.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    super::cputime::switch(prev, next, !preempted, now);

    // User state: TLS and the address space are switched here; FP/SVE state is saved if the
    // outgoing task holds the registers, and loaded lazily on the way back to user mode.
    // SAFETY: prev is the task running here, so its locals are this CPU's; next is off every
    // CPU (on_cpu was clear) and this CPU claimed it, so its locals are ours until it runs.
    let (pl, nl) = unsafe { (prev.local_unchecked(), next.local_unchecked()) };
    let prev_user = !prev.is_idle() && !dead;
    if !prev.is_idle() {
        pl.tpidr_el0.set(cpu::tpidr_el0());
        // Only a task with an rseq area has anything to do about the switch on its way back.
        if pl.rseq.get().is_some() {
            pl.rseq_resched.set(true);
            prev.work.set(super::work::RSEQ);
        }
    }
    if prev_user {
        crate::task::fpstate::fpsimd_thread_switch(prev, pl, &irqs);
    }
    if !next.is_idle() {
        cpu::set_user_tls(nl.tpidr_el0.get(), nl.tpidrro_el0.get());
        crate::task::fpstate::fpsimd_thread_switch_in(next);
    }
    percpu::this()
        .user_tagged_addr
        .store(next.tagged_addr.load(Ordering::Relaxed), Ordering::Relaxed);
    crate::task::fpstate::switch_tpidr2(prev_user.then_some(pl), (!next.is_idle()).then_some(nl));
    switch_gcs(prev_user.then_some(pl), (!next.is_idle()).then_some(nl));
    match next.user_ttbr0.load(Ordering::Relaxed) {
        0 => crate::arch::mmu::clear_user_table(),
        ttbr0 => crate::arch::mmu::set_user_ttbr0(ttbr0),
    }

    let prev_ctx = prev.ctx.get();
    let next_ctx = next.ctx.get() as *const _;
    // SAFETY: prev_ctx is the running task's slot (kept alive by rq.prev until finish_switch);
    // next_ctx belongs to a task no other CPU runs (on_cpu handshake above).
    unsafe { context::switch_to(prev_ctx, next_ctx) };
    finish_switch();
    drop(irqs);
}

/// Context switch (IRQs masked): the outgoing thread's GCSPR_EL0 saved, the incoming one's
/// loaded with its mode.
fn switch_gcs(prev: Option<&TaskLocal>, next: Option<&TaskLocal>) {
    if !crate::cpufeature::gcs() {
        return;
    }
    let mut old_mode = 0;
    let mut any = false;
    if let Some(p) = prev {
        let mut s = p.gcs.get();
        s.gcspr = crate::arch::gcs::read_gcspr_el0();
        p.gcs.set(s);
        old_mode = s.mode;
        any |= s.enabled();
    }
    let n = next.map(|n| n.gcs.get()).unwrap_or_default();
    crate::arch::gcs::write_gcspr_el0(n.gcspr);
    if prev.is_none() || n.mode != old_mode {
        crate::arch::gcs::set_el0_mode(n.mode);
    }
    if any || n.enabled() {
        crate::arch::gcs::barrier();
    }
}

/// Completes a switch on the CPU that made it: the previous task may now run elsewhere.
pub fn finish_switch() {
    let (prev, dead) = {
        let mut rq = runq(percpu::cpu_id()).lock();
        (rq.prev.take(), rq.prev_dead)
    };
    if let Some(p) = prev {
        // A dead task is never switched to again: its time since the last tick goes into this
        // CPU's sums, and what the layer above hung off it goes now (it may hold the task
        // itself), outside the run queue's lock.
        let data = dead.then(|| {
            super::cputime::fold_dead(&p);
            p.release_data()
        });
        p.on_cpu.store(false, Ordering::Release);
        drop(data);
    }
}

pub fn yield_now() {
    schedule();
}

/// This CPU's idle loop: run whatever is runnable, else wait for an interrupt.
pub fn idle_loop() -> ! {
    loop {
        cpu::irq_disable();
        let id = percpu::cpu_id();
        let runnable = CPUS.get(id).queued.load(Ordering::Relaxed) != 0
            || percpu::this().need_resched.load(Ordering::Relaxed);
        // Work to steal: another CPU with more than one task waiting.
        let elsewhere = || {
            OVERLOADED.load(Ordering::Relaxed) != 0
                && other_online_cpus(id).any(|c| CPUS.get(c).queued.load(Ordering::Relaxed) > 1)
        };
        if runnable || elsewhere() {
            schedule();
        } else {
            cpu::wait_for_interrupt();
        }
        cpu::irq_enable();
    }
}

/// The current task's TPIDR_EL0 as user mode sees it now.
pub fn current_tpidr_el0() -> u64 {
    cpu::tpidr_el0()
}

/// Turns the tagged address ABI on or off for the running task (PR_SET_TAGGED_ADDR_CTRL, exec).
pub fn set_current_tagged_addr(cur: &super::CurrentTask, on: bool) {
    let _irqs = cpu::IrqGuard::new();
    cur.tagged_addr.store(on, Ordering::Relaxed);
    percpu::this().user_tagged_addr.store(on, Ordering::Relaxed);
}

/// Sets the running task's TPIDR_EL0 (live, and in `l`, its locals).
pub fn set_current_tpidr_el0(l: &super::TaskLocal, v: u64) {
    cpu::set_user_tls(v, 0);
    l.tpidr_el0.set(v);
}
