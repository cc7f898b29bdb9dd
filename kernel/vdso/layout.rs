// The [vvar] data page as the kernel writes it and the vDSO reads it: byte offsets, shared by
// kernel/src/vdso.rs and the vDSO's assembly (kernel/vdso/vdso.s, through vdso.rs).
//
// A reader takes `SEQ` (odd: an update is under way, retry), the fields, then `SEQ` again, and
// retries if it changed. Time is `((counter * MULT) >> SHIFT) + OFFSET[kind]`: kind 1 (monotonic
// clocks) has offset 0, kind 2 (realtime clocks) the realtime offset.

/// The page count of [vvar], mapped just below the vDSO image (as many as Linux 7.3 maps; the
/// data is in the first, the rest read as zero).
pub const VVAR_PAGES: usize = 4;
/// u32: the sequence count.
pub const VVAR_SEQ: usize = 0;
/// u32: the right shift of the 128-bit product counter * MULT.
pub const VVAR_SHIFT: usize = 4;
/// u64 [3]: the offset added per clock kind (index 0 unused, 1 monotonic = 0, 2 realtime).
pub const VVAR_OFFSET: usize = 0;
/// u64: nanoseconds per counter tick, scaled by 2^SHIFT.
pub const VVAR_MULT: usize = 24;
/// u64: clock_getres's answer for the clocks the vDSO serves, in nanoseconds.
pub const VVAR_RES: usize = 32;
/// u64: the time zone (struct timezone: minutes west, DST type), copied whole.
pub const VVAR_TZ: usize = 40;
/// The clock kinds (byte table in the vDSO, per clock id below `CLOCK_IDS`).
pub const KIND_MONO: usize = 1;
pub const KIND_REAL: usize = 2;
pub const CLOCK_IDS: usize = 16;
