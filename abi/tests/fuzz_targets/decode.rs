//! Multiplexed system calls decoded into one request each: fcntl and ptrace (futex is in
//! `uapi`, with the WAKE_OP encoding).

use super::util::Take;
use std::vec;
use std::vec::Vec;
use svelt_abi::uapi::errno::Errno;
use svelt_abi::uapi::fcntl::{FcntlCmd, LockOp};
use svelt_abi::uapi::fs::*;
use svelt_abi::uapi::ptrace::*;

/// Input: a selector byte, the command or request, then its arguments.
///
/// Asserts:
/// - fcntl: exactly the known commands decode, unknown ones are EINVAL; every argument but
///   a lock's `struct flock` pointer is read as a C int (its upper half never matters); only
///   dup, getfd, setfd and getfl are allowed on O_PATH descriptors;
/// - ptrace: exactly the known requests decode, unknown ones are EIO; resume signals are
///   0..=64, options within PTRACE_O_MASK (EINVAL, EIO for SEIZE, whose addr must be 0),
///   sigmask sizes 8; the decoded fields are the arguments as given.
pub fn decode(data: &[u8]) {
    let mut t = Take::new(data);
    if t.u8() & 1 == 0 {
        fcntl(&mut t)
    } else {
        ptrace(&mut t)
    }
}

fn fcntl(t: &mut Take) {
    // Mostly real commands, sometimes any number.
    let cmd = match t.u8() {
        n @ 0..=200 => [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 36, 37, 38, 1024, 1030, 1031, 1032,
        ][usize::from(n) % 19],
        _ => t.u32(),
    };
    let arg = t.u64() as usize;
    let r = FcntlCmd::decode(cmd, arg);
    let known = [
        F_DUPFD,
        F_DUPFD_CLOEXEC,
        F_GETFD,
        F_SETFD,
        F_GETFL,
        F_SETFL,
        F_GETLK,
        F_SETLK,
        F_SETLKW,
        F_OFD_GETLK,
        F_OFD_SETLK,
        F_OFD_SETLKW,
        F_GETOWN,
        F_SETOWN,
        F_GETPIPE_SZ,
        F_SETPIPE_SZ,
    ];
    let Ok(c) = r else {
        assert_eq!(r, Err(Errno::EINVAL));
        assert!(!known.contains(&cmd), "fcntl {cmd} refused");
        return;
    };
    assert!(known.contains(&cmd), "fcntl {cmd} accepted");
    let flipped = arg ^ (t.u32() as usize) << 32;
    match c {
        FcntlCmd::Lock { op, ofd, flock } => {
            assert_eq!(flock, arg);
            assert_eq!(ofd, cmd >= F_OFD_GETLK);
            let want = match cmd {
                F_GETLK | F_OFD_GETLK => LockOp::Get,
                F_SETLK | F_OFD_SETLK => LockOp::Set,
                _ => LockOp::SetWait,
            };
            assert_eq!(op, want);
        }
        _ => assert_eq!(FcntlCmd::decode(cmd, flipped), Ok(c), "upper half read"),
    }
    match c {
        FcntlCmd::DupFd { min, cloexec } => {
            assert_eq!((min, cloexec), (arg as u32, cmd == F_DUPFD_CLOEXEC))
        }
        FcntlCmd::SetFd { cloexec } => assert_eq!(cloexec, arg & 1 != 0),
        FcntlCmd::SetFl { flags } => assert_eq!(flags, arg as u32),
        FcntlCmd::SetPipeSize { size } => assert_eq!(size, arg as u32),
        FcntlCmd::SetOwn { owner } => assert_eq!(owner, arg as u32 as i32),
        _ => {}
    }
    assert_eq!(
        c.allowed_on_path_fd(),
        matches!(cmd, F_DUPFD | F_DUPFD_CLOEXEC | F_GETFD | F_SETFD | F_GETFL)
    );
}

fn ptrace(t: &mut Take) {
    let request = match t.u8() {
        n @ 0..=200 => [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 24, 0x4200, 0x4201, 0x4202, 0x4203, 0x4204,
            0x4205, 0x4206, 0x4207, 0x4208, 0x4209, 0x420a, 0x420b, 0x420e,
        ][usize::from(n) % 26],
        _ => t.u64(),
    };
    // Small values often, so that the valid ranges are hit.
    let mut arg = || match t.u8() % 4 {
        0 => usize::from(t.u8()),
        1 => t.u32() as usize,
        _ => t.u64() as usize,
    };
    let (addr, data) = (arg(), arg());
    let r = PtraceRequest::decode(request, addr, data);
    let options_ok = data & !(PTRACE_O_MASK as usize) == 0;
    let suspend = data & PTRACE_O_SUSPEND_SECCOMP as usize != 0;
    let want_err = match request {
        PTRACE_TRACEME | PTRACE_ATTACH | PTRACE_KILL | PTRACE_INTERRUPT | PTRACE_LISTEN => None,
        PTRACE_PEEKTEXT | PTRACE_PEEKDATA | PTRACE_POKETEXT | PTRACE_POKEDATA => None,
        PTRACE_GETEVENTMSG | PTRACE_GETSIGINFO | PTRACE_SETSIGINFO => None,
        PTRACE_GETREGSET | PTRACE_SETREGSET | PTRACE_GET_SYSCALL_INFO => None,
        PTRACE_CONT | PTRACE_SYSCALL | PTRACE_SINGLESTEP | PTRACE_DETACH => {
            (data > 64).then_some(Errno::EIO)
        }
        PTRACE_SETOPTIONS => (!options_ok || suspend).then_some(Errno::EINVAL),
        PTRACE_SEIZE => {
            if addr != 0 || !options_ok {
                Some(Errno::EIO)
            } else {
                suspend.then_some(Errno::EINVAL)
            }
        }
        PTRACE_GETSIGMASK | PTRACE_SETSIGMASK => (addr != 8).then_some(Errno::EINVAL),
        _ => Some(Errno::EIO),
    };
    let req = match (r, want_err) {
        (Err(e), Some(w)) => return assert_eq!(e, w, "ptrace {request:#x}"),
        (Ok(req), None) => req,
        (r, w) => panic!("ptrace {request:#x} ({addr:#x}, {data:#x}): {r:?}, want {w:?}"),
    };
    use PtraceRequest as R;
    match req {
        R::Peek { addr: a, out } => assert_eq!((a, out), (addr, data)),
        R::Poke { addr: a, word } => assert_eq!((a, word), (addr, data as u64)),
        R::Resume { how, signal } => {
            assert_eq!(signal as usize, data);
            let want = match request {
                PTRACE_CONT => Resume::Cont,
                PTRACE_SYSCALL => Resume::Syscall,
                _ => Resume::SingleStep,
            };
            assert_eq!(how, want);
        }
        R::Detach { signal } => assert_eq!(signal as usize, data),
        R::SetOptions { options } | R::Seize { options } => assert_eq!(options as usize, data),
        R::GetEventMsg { out } | R::GetSigInfo { out } | R::GetSigMask { out } => {
            assert_eq!(out, data)
        }
        R::SetSigInfo { from } | R::SetSigMask { from } => assert_eq!(from, data),
        R::RegSet { set, note, iov } => {
            assert_eq!(
                (set, note, iov),
                (request == PTRACE_SETREGSET, addr as u32, data)
            )
        }
        R::GetSyscallInfo { size, out } => assert_eq!((size, out), (addr, data)),
        R::TraceMe | R::Attach | R::Kill | R::Interrupt | R::Listen => {}
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    // fcntl: F_DUPFD_CLOEXEC from 3 with junk above, F_SETLKW.
    let mut v = vec![0u8, 255];
    v.extend_from_slice(&F_DUPFD_CLOEXEC.to_le_bytes());
    v.extend_from_slice(&0xdead_0000_0003u64.to_le_bytes());
    out.push(v);
    let mut v = vec![0u8, 7];
    v.extend_from_slice(&0x7fff_0000_1000u64.to_le_bytes());
    out.push(v);
    // ptrace: PTRACE_SEIZE with options, PTRACE_CONT with a signal, GETSIGMASK.
    let mut v = vec![1u8, 255];
    v.extend_from_slice(&PTRACE_SEIZE.to_le_bytes());
    v.extend_from_slice(&[0, 0, 2]);
    v.extend_from_slice(&u64::from(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL).to_le_bytes());
    out.push(v);
    out.push(vec![1, 7, 0, 0, 0, 19]);
    out.push(vec![1, 23, 0, 8, 2, 0, 0x10, 0, 0, 0, 0, 0, 0]);
    out
}
