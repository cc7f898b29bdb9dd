//! The rt_sigframe: written on delivery, validated and restored by rt_sigreturn.
//! (Being wired to svelt_abi::sigframe.)

use crate::arch::aarch64::exception::TrapFrame;
use crate::task::Task;
use alloc::sync::Arc;

pub fn setup(
    _t: &Arc<Task>,
    _tf: &mut TrapFrame,
    _info: &super::SigInfo,
    _a: &super::SigAction,
    _mask: u64,
    _alt: super::AltStack,
) -> Result<(), ()> {
    Err(())
}

pub fn sigreturn(_tf: &mut TrapFrame) {}

pub fn max_frame_size() -> usize {
    4688
}
