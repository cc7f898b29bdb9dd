//! ptrace(2): request numbers, options, events, and the stop statuses a tracer reads through
//! wait (Linux's include/uapi/linux/ptrace.h, arm64).

pub const PTRACE_TRACEME: u64 = 0;
pub const PTRACE_PEEKTEXT: u64 = 1;
pub const PTRACE_PEEKDATA: u64 = 2;
pub const PTRACE_PEEKUSR: u64 = 3;
pub const PTRACE_POKETEXT: u64 = 4;
pub const PTRACE_POKEDATA: u64 = 5;
pub const PTRACE_POKEUSR: u64 = 6;
pub const PTRACE_CONT: u64 = 7;
pub const PTRACE_KILL: u64 = 8;
pub const PTRACE_SINGLESTEP: u64 = 9;
pub const PTRACE_ATTACH: u64 = 16;
pub const PTRACE_DETACH: u64 = 17;
pub const PTRACE_SYSCALL: u64 = 24;
pub const PTRACE_SETOPTIONS: u64 = 0x4200;
pub const PTRACE_GETEVENTMSG: u64 = 0x4201;
pub const PTRACE_GETSIGINFO: u64 = 0x4202;
pub const PTRACE_SETSIGINFO: u64 = 0x4203;
pub const PTRACE_GETREGSET: u64 = 0x4204;
pub const PTRACE_SETREGSET: u64 = 0x4205;
pub const PTRACE_SEIZE: u64 = 0x4206;
pub const PTRACE_INTERRUPT: u64 = 0x4207;
pub const PTRACE_LISTEN: u64 = 0x4208;
pub const PTRACE_PEEKSIGINFO: u64 = 0x4209;
pub const PTRACE_GETSIGMASK: u64 = 0x420a;
pub const PTRACE_SETSIGMASK: u64 = 0x420b;
pub const PTRACE_GET_SYSCALL_INFO: u64 = 0x420e;

pub const PTRACE_O_TRACESYSGOOD: u32 = 1;
pub const PTRACE_O_TRACEFORK: u32 = 1 << 1;
pub const PTRACE_O_TRACEVFORK: u32 = 1 << 2;
pub const PTRACE_O_TRACECLONE: u32 = 1 << 3;
pub const PTRACE_O_TRACEEXEC: u32 = 1 << 4;
pub const PTRACE_O_TRACEVFORKDONE: u32 = 1 << 5;
pub const PTRACE_O_TRACEEXIT: u32 = 1 << 6;
pub const PTRACE_O_TRACESECCOMP: u32 = 1 << 7;
pub const PTRACE_O_EXITKILL: u32 = 1 << 20;
pub const PTRACE_O_SUSPEND_SECCOMP: u32 = 1 << 21;
/// Every option bit Linux knows.
pub const PTRACE_O_MASK: u32 = 0xff | PTRACE_O_EXITKILL | PTRACE_O_SUSPEND_SECCOMP;

pub const PTRACE_EVENT_FORK: u32 = 1;
pub const PTRACE_EVENT_VFORK: u32 = 2;
pub const PTRACE_EVENT_CLONE: u32 = 3;
pub const PTRACE_EVENT_EXEC: u32 = 4;
pub const PTRACE_EVENT_VFORK_DONE: u32 = 5;
pub const PTRACE_EVENT_EXIT: u32 = 6;
pub const PTRACE_EVENT_SECCOMP: u32 = 7;
pub const PTRACE_EVENT_STOP: u32 = 128;

/// The option that asks for an event's stops.
pub const fn option_for_event(event: u32) -> u32 {
    1 << event
}

/// PTRACE_GET_SYSCALL_INFO's `op`.
pub const PTRACE_SYSCALL_INFO_NONE: u8 = 0;
pub const PTRACE_SYSCALL_INFO_ENTRY: u8 = 1;
pub const PTRACE_SYSCALL_INFO_EXIT: u8 = 2;
pub const PTRACE_SYSCALL_INFO_SECCOMP: u8 = 3;

/// AUDIT_ARCH_AARCH64 (EM_AARCH64 | 64-bit | little-endian).
pub const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;

/// The `exit_code` of a stop (what wait shows in bits 8-23): the signal, with an event in
/// bits 8-15 for event stops.
pub const fn event_code(signo: u32, event: u32) -> u32 {
    signo | (event << 8)
}

/// The wait4 status of a ptrace stop with `exit_code`.
pub const fn stop_status(exit_code: u32) -> i32 {
    ((exit_code << 8) | 0x7f) as i32
}

/// Where a tracee stopped, for PTRACE_GET_SYSCALL_INFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SyscallStop {
    #[default]
    None,
    Entry {
        nr: u64,
        args: [u64; 6],
    },
    Exit {
        rval: i64,
    },
    Seccomp {
        nr: u64,
        args: [u64; 6],
        ret_data: u32,
    },
}

/// struct ptrace_syscall_info: 24 bytes of header, then the op's part. Returns the bytes
/// and how many of them are meaningful for this op (what the request returns).
pub fn syscall_info(stop: SyscallStop, pc: u64, sp: u64) -> ([u8; 88], usize) {
    let mut b = [0u8; 88];
    let op = match stop {
        SyscallStop::None => PTRACE_SYSCALL_INFO_NONE,
        SyscallStop::Entry { .. } => PTRACE_SYSCALL_INFO_ENTRY,
        SyscallStop::Exit { .. } => PTRACE_SYSCALL_INFO_EXIT,
        SyscallStop::Seccomp { .. } => PTRACE_SYSCALL_INFO_SECCOMP,
    };
    b[0] = op;
    b[4..8].copy_from_slice(&AUDIT_ARCH_AARCH64.to_le_bytes());
    b[8..16].copy_from_slice(&pc.to_le_bytes());
    b[16..24].copy_from_slice(&sp.to_le_bytes());
    let put_args = |b: &mut [u8; 88], nr: u64, args: &[u64; 6]| {
        b[24..32].copy_from_slice(&nr.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            b[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
    };
    let len = match stop {
        SyscallStop::None => 24,
        SyscallStop::Entry { nr, args } => {
            put_args(&mut b, nr, &args);
            80
        }
        SyscallStop::Exit { rval } => {
            b[24..32].copy_from_slice(&rval.to_le_bytes());
            b[32] = (-4095..0).contains(&rval) as u8;
            33
        }
        SyscallStop::Seccomp { nr, args, ret_data } => {
            put_args(&mut b, nr, &args);
            b[80..84].copy_from_slice(&ret_data.to_le_bytes());
            84
        }
    };
    (b, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        // SIGTRAP | PTRACE_EVENT_EXEC << 8, as wait4 shows it.
        assert_eq!(stop_status(event_code(5, PTRACE_EVENT_EXEC)), 0x0004_057f);
        assert_eq!(stop_status(5 | 0x80), 0x857f);
        assert_eq!(option_for_event(PTRACE_EVENT_EXIT), PTRACE_O_TRACEEXIT);
        assert_eq!(
            option_for_event(PTRACE_EVENT_SECCOMP),
            PTRACE_O_TRACESECCOMP
        );
    }

    #[test]
    fn syscall_info_sizes() {
        let (b, n) = syscall_info(
            SyscallStop::Entry {
                nr: 172,
                args: [1, 2, 3, 4, 5, 6],
            },
            0x1000,
            0x2000,
        );
        assert_eq!((b[0], n), (PTRACE_SYSCALL_INFO_ENTRY, 80));
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 172);
        assert_eq!(u64::from_le_bytes(b[72..80].try_into().unwrap()), 6);
        let (b, n) = syscall_info(SyscallStop::Exit { rval: -38 }, 0, 0);
        assert_eq!((b[0], b[32], n), (PTRACE_SYSCALL_INFO_EXIT, 1, 33));
        assert_eq!(syscall_info(SyscallStop::None, 0, 0).1, 24);
    }
}
