//! ptrace(2): request numbers, options, events, and the stop statuses a tracer reads through
//! wait (Linux's include/uapi/linux/ptrace.h, arm64), and `PtraceRequest`: a request and its
//! arguments decoded with the argument rules Linux applies.

use crate::uapi::errno::Errno;

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

/// How a tracee resumes (PTRACE_CONT, PTRACE_SYSCALL, PTRACE_SINGLESTEP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    Cont,
    /// Stop again at the next system call entry or exit.
    Syscall,
    /// Stop again after one instruction.
    SingleStep,
}

/// A ptrace request Svelt carries out, with the arguments it reads. Requests it does not know
/// are EIO, as on Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtraceRequest {
    TraceMe,
    Attach,
    /// PTRACE_SEIZE with the options to start with.
    Seize {
        options: u32,
    },
    /// PTRACE_PEEKTEXT / PEEKDATA (one address space on arm64): the word at `addr` is
    /// stored at `out`.
    Peek {
        addr: usize,
        out: usize,
    },
    /// PTRACE_POKETEXT / POKEDATA: store `word` at `addr`.
    Poke {
        addr: usize,
        word: u64,
    },
    /// Resume with `signal` (0 for none) delivered.
    Resume {
        how: Resume,
        signal: u32,
    },
    Kill,
    Detach {
        signal: u32,
    },
    Interrupt,
    Listen,
    SetOptions {
        options: u32,
    },
    GetEventMsg {
        out: usize,
    },
    GetSigInfo {
        out: usize,
    },
    SetSigInfo {
        from: usize,
    },
    GetSigMask {
        out: usize,
    },
    SetSigMask {
        from: usize,
    },
    /// PTRACE_GETREGSET / SETREGSET: the NT_* note type and the user `struct iovec`.
    RegSet {
        set: bool,
        note: u32,
        iov: usize,
    },
    /// PTRACE_GET_SYSCALL_INFO: copy at most `size` bytes to `out`.
    GetSyscallInfo {
        size: usize,
        out: usize,
    },
}

/// PTRACE_O_* bits a tracer may set. SUSPEND_SECCOMP needs checkpoint/restore support Svelt
/// does not have: EINVAL, as Linux built without it.
fn options(data: usize) -> Result<u32, Errno> {
    if data & !(PTRACE_O_MASK as usize) != 0 || data & PTRACE_O_SUSPEND_SECCOMP as usize != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(data as u32)
}

/// A signal to deliver on resume: 0 or a valid signal number, else EIO.
fn resume_signal(data: usize) -> Result<u32, Errno> {
    if data > crate::uapi::signal::NSIG as usize {
        return Err(Errno::EIO);
    }
    Ok(data as u32)
}

impl PtraceRequest {
    /// Decodes `ptrace(request, pid, addr, data)`, with the argument errors Linux gives.
    /// Linux finds the tracee (ESRCH) before it looks at these, so a caller reports them only
    /// after that.
    pub fn decode(request: u64, addr: usize, data: usize) -> Result<PtraceRequest, Errno> {
        let resume = |how| {
            Ok(PtraceRequest::Resume {
                how,
                signal: resume_signal(data)?,
            })
        };
        let sigset = |r: PtraceRequest| {
            if addr == size_of::<u64>() {
                Ok(r)
            } else {
                Err(Errno::EINVAL)
            }
        };
        match request {
            PTRACE_TRACEME => Ok(PtraceRequest::TraceMe),
            PTRACE_ATTACH => Ok(PtraceRequest::Attach),
            PTRACE_SEIZE => {
                // Unknown options are EIO here but EINVAL for PTRACE_SETOPTIONS, as in Linux.
                if addr != 0 || data & !(PTRACE_O_MASK as usize) != 0 {
                    return Err(Errno::EIO);
                }
                Ok(PtraceRequest::Seize {
                    options: options(data)?,
                })
            }
            PTRACE_PEEKTEXT | PTRACE_PEEKDATA => Ok(PtraceRequest::Peek { addr, out: data }),
            PTRACE_POKETEXT | PTRACE_POKEDATA => Ok(PtraceRequest::Poke {
                addr,
                word: data as u64,
            }),
            PTRACE_CONT => resume(Resume::Cont),
            PTRACE_SYSCALL => resume(Resume::Syscall),
            PTRACE_SINGLESTEP => resume(Resume::SingleStep),
            PTRACE_KILL => Ok(PtraceRequest::Kill),
            PTRACE_DETACH => Ok(PtraceRequest::Detach {
                signal: resume_signal(data)?,
            }),
            PTRACE_INTERRUPT => Ok(PtraceRequest::Interrupt),
            PTRACE_LISTEN => Ok(PtraceRequest::Listen),
            PTRACE_SETOPTIONS => Ok(PtraceRequest::SetOptions {
                options: options(data)?,
            }),
            PTRACE_GETEVENTMSG => Ok(PtraceRequest::GetEventMsg { out: data }),
            PTRACE_GETSIGINFO => Ok(PtraceRequest::GetSigInfo { out: data }),
            PTRACE_SETSIGINFO => Ok(PtraceRequest::SetSigInfo { from: data }),
            PTRACE_GETSIGMASK => sigset(PtraceRequest::GetSigMask { out: data }),
            PTRACE_SETSIGMASK => sigset(PtraceRequest::SetSigMask { from: data }),
            // The note type is an unsigned int in Linux.
            PTRACE_GETREGSET | PTRACE_SETREGSET => Ok(PtraceRequest::RegSet {
                set: request == PTRACE_SETREGSET,
                note: addr as u32,
                iov: data,
            }),
            PTRACE_GET_SYSCALL_INFO => Ok(PtraceRequest::GetSyscallInfo {
                size: addr,
                out: data,
            }),
            // arm64 has no USER area (PEEKUSR/POKEUSR); PEEKSIGINFO is not offered.
            _ => Err(Errno::EIO),
        }
    }
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

    #[test]
    fn requests_decode() {
        use PtraceRequest as R;
        let d = PtraceRequest::decode;
        assert_eq!(d(PTRACE_TRACEME, 5, 6), Ok(R::TraceMe));
        assert_eq!(d(PTRACE_ATTACH, 5, 6), Ok(R::Attach));
        assert_eq!(
            d(PTRACE_PEEKDATA, 0x1000, 0x2000),
            Ok(R::Peek {
                addr: 0x1000,
                out: 0x2000
            })
        );
        assert_eq!(d(PTRACE_PEEKTEXT, 1, 2), d(PTRACE_PEEKDATA, 1, 2));
        assert_eq!(
            d(PTRACE_POKETEXT, 0x1000, usize::MAX),
            Ok(R::Poke {
                addr: 0x1000,
                word: u64::MAX
            })
        );
        assert_eq!(
            d(PTRACE_SYSCALL, 0, 5),
            Ok(R::Resume {
                how: Resume::Syscall,
                signal: 5
            })
        );
        assert_eq!(
            d(PTRACE_SINGLESTEP, 0, 0),
            Ok(R::Resume {
                how: Resume::SingleStep,
                signal: 0
            })
        );
        assert_eq!(
            d(PTRACE_GETREGSET, 0x1_0000_0202, 0x3000),
            Ok(R::RegSet {
                set: false,
                note: 0x202,
                iov: 0x3000
            })
        );
        assert_eq!(
            d(PTRACE_GET_SYSCALL_INFO, 88, 0x3000),
            Ok(R::GetSyscallInfo {
                size: 88,
                out: 0x3000
            })
        );
        assert_eq!(d(PTRACE_KILL, 1, 2), Ok(R::Kill));
        assert_eq!(d(PTRACE_INTERRUPT, 1, 2), Ok(R::Interrupt));
        assert_eq!(d(PTRACE_LISTEN, 1, 2), Ok(R::Listen));
    }

    #[test]
    fn request_argument_errors() {
        let d = PtraceRequest::decode;
        // Resume signals: 0..=64, else EIO.
        for r in [
            PTRACE_CONT,
            PTRACE_SYSCALL,
            PTRACE_SINGLESTEP,
            PTRACE_DETACH,
        ] {
            assert!(d(r, 0, 64).is_ok(), "{r}");
            assert_eq!(d(r, 0, 65), Err(Errno::EIO), "{r}");
            assert_eq!(d(r, 0, usize::MAX), Err(Errno::EIO), "{r}");
        }
        // Options: unknown bits are EINVAL for SETOPTIONS, EIO for SEIZE (Linux's history).
        let all = (PTRACE_O_MASK & !PTRACE_O_SUSPEND_SECCOMP) as usize;
        assert_eq!(
            d(PTRACE_SETOPTIONS, 0, all),
            Ok(PtraceRequest::SetOptions {
                options: all as u32
            })
        );
        assert_eq!(
            d(PTRACE_SEIZE, 0, all),
            Ok(PtraceRequest::Seize {
                options: all as u32
            })
        );
        assert_eq!(d(PTRACE_SETOPTIONS, 0, 1 << 8), Err(Errno::EINVAL));
        assert_eq!(d(PTRACE_SETOPTIONS, 0, 1 << 32), Err(Errno::EINVAL));
        assert_eq!(d(PTRACE_SEIZE, 0, 1 << 8), Err(Errno::EIO));
        assert_eq!(d(PTRACE_SEIZE, 0, 1 << 32), Err(Errno::EIO));
        assert_eq!(d(PTRACE_SEIZE, 8, 0), Err(Errno::EIO));
        let suspend = PTRACE_O_SUSPEND_SECCOMP as usize;
        assert_eq!(d(PTRACE_SETOPTIONS, 0, suspend), Err(Errno::EINVAL));
        assert_eq!(d(PTRACE_SEIZE, 0, suspend), Err(Errno::EINVAL));
        // The signal mask requests want sizeof(sigset_t) in addr.
        for r in [PTRACE_GETSIGMASK, PTRACE_SETSIGMASK] {
            assert!(d(r, 8, 0x1000).is_ok());
            assert_eq!(d(r, 4, 0x1000), Err(Errno::EINVAL));
            assert_eq!(d(r, 16, 0x1000), Err(Errno::EINVAL));
        }
        // No USER area on arm64; unknown requests.
        for r in [
            PTRACE_PEEKUSR,
            PTRACE_POKEUSR,
            PTRACE_PEEKSIGINFO,
            10,
            0x420c,
            u64::MAX,
        ] {
            assert_eq!(d(r, 0, 0), Err(Errno::EIO), "{r:#x}");
        }
    }
}
