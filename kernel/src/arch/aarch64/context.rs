//! Kernel-side context switch: callee-saved registers, frame pointer, link register and stack
//! pointer. Everything else a task owns (user registers, FP state, TPIDR_EL0, TTBR0) is switched
//! by the scheduler around `cpu_switch_to`.

/// Saved kernel context of a task that is not running. Layout shared with the assembly below.
#[repr(C)]
#[derive(Default, Debug)]
pub struct Context {
    pub x19_x28: [u64; 10],
    pub fp: u64,
    pub lr: u64,
    pub sp: u64,
}
const _: () = assert!(core::mem::size_of::<Context>() == 13 * 8);

core::arch::global_asm!(
    r#"
.section .text
.global cpu_switch_to
// x0 = &mut prev.context, x1 = &next.context. Returns on next's stack, into next's lr.
cpu_switch_to:
    stp     x19, x20, [x0, #0]
    stp     x21, x22, [x0, #16]
    stp     x23, x24, [x0, #32]
    stp     x25, x26, [x0, #48]
    stp     x27, x28, [x0, #64]
    stp     x29, x30, [x0, #80]
    mov     x9, sp
    str     x9, [x0, #96]
    ldp     x19, x20, [x1, #0]
    ldp     x21, x22, [x1, #16]
    ldp     x23, x24, [x1, #32]
    ldp     x25, x26, [x1, #48]
    ldp     x27, x28, [x1, #64]
    ldp     x29, x30, [x1, #80]
    ldr     x9, [x1, #96]
    mov     sp, x9
    ret

.global ret_from_fork
// A new task's first instructions: its context's sp points 16 bytes below its user trap frame
// (where the exception path keeps its frame record), so after the Rust tail it leaves through
// the ordinary exception return.
ret_from_fork:
    add     x0, sp, #16
    bl      {tail}
    b       exception_return
"#,
    tail = sym super::entry::svelt_ret_from_fork,
);

unsafe extern "C" {
    fn cpu_switch_to(prev: *mut Context, next: *const Context);
    fn ret_from_fork();
}

/// Switches from the current kernel context to `next`.
///
/// # Safety
/// `prev` is the running task's context slot and `next` a context saved by `cpu_switch_to` or
/// made by [`new_task_context`], whose stack is valid and not in use on another CPU.
pub unsafe fn switch_to(prev: *mut Context, next: *const Context) {
    // SAFETY: `prev` is the running task's slot and `next` a context made for a stack no
    // other CPU uses (this function's contract): what cpu_switch_to needs to resume it.
    unsafe { cpu_switch_to(prev, next) }
}

/// The context that makes a new task start in `ret_from_fork` with its user trap frame at
/// `trap_frame` (the top of its kernel stack).
pub fn new_task_context(trap_frame: usize) -> Context {
    Context {
        lr: ret_from_fork as *const () as u64,
        sp: trap_frame as u64 - 16,
        ..Context::default()
    }
}
