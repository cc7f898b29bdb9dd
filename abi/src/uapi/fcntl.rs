//! fcntl(2) decoded: the command and its argument become one `FcntlCmd`, read the way Linux
//! reads them (most commands take the argument as a C `int`), so the kernel acts only on a
//! request that is already well formed. The F_* numbers live in `fs`.

use crate::uapi::errno::Errno;
use crate::uapi::fs::*;

/// Which record-lock operation (`struct flock` at the argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOp {
    /// F_GETLK / F_OFD_GETLK: report a conflicting lock.
    Get,
    /// F_SETLK / F_OFD_SETLK: take or drop a lock, EAGAIN on conflict.
    Set,
    /// F_SETLKW / F_OFD_SETLKW: take a lock, waiting for it.
    SetWait,
}

/// An fcntl request Svelt carries out. Commands it does not know are EINVAL, as on Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FcntlCmd {
    /// F_DUPFD / F_DUPFD_CLOEXEC: the lowest free descriptor from `min` (EINVAL at or above
    /// RLIMIT_NOFILE, the kernel's check).
    DupFd {
        min: u32,
        cloexec: bool,
    },
    GetFd,
    SetFd {
        cloexec: bool,
    },
    GetFl,
    /// F_SETFL: the new status flags as given; only `SETFL_MASK` of them change.
    SetFl {
        flags: u32,
    },
    /// Record locks, POSIX (per process) or open-file-description (`ofd`) ones.
    Lock {
        op: LockOp,
        ofd: bool,
        flock: usize,
    },
    GetOwn,
    SetOwn {
        owner: i32,
    },
    GetPipeSize,
    /// F_SETPIPE_SZ: the requested capacity in bytes (the kernel rounds it).
    SetPipeSize {
        size: u32,
    },
}

impl FcntlCmd {
    /// Decodes `fcntl(fd, cmd, arg)`. As in Linux, every command but the locks reads `arg` as
    /// an `int`: the upper 32 bits are ignored.
    pub fn decode(cmd: u32, arg: usize) -> Result<FcntlCmd, Errno> {
        let argi = arg as u32;
        let lock = |op, ofd| FcntlCmd::Lock {
            op,
            ofd,
            flock: arg,
        };
        Ok(match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => FcntlCmd::DupFd {
                min: argi,
                cloexec: cmd == F_DUPFD_CLOEXEC,
            },
            F_GETFD => FcntlCmd::GetFd,
            F_SETFD => FcntlCmd::SetFd {
                cloexec: argi & FD_CLOEXEC != 0,
            },
            F_GETFL => FcntlCmd::GetFl,
            F_SETFL => FcntlCmd::SetFl { flags: argi },
            F_GETLK => lock(LockOp::Get, false),
            F_SETLK => lock(LockOp::Set, false),
            F_SETLKW => lock(LockOp::SetWait, false),
            F_OFD_GETLK => lock(LockOp::Get, true),
            F_OFD_SETLK => lock(LockOp::Set, true),
            F_OFD_SETLKW => lock(LockOp::SetWait, true),
            F_GETOWN => FcntlCmd::GetOwn,
            F_SETOWN => FcntlCmd::SetOwn { owner: argi as i32 },
            F_GETPIPE_SZ => FcntlCmd::GetPipeSize,
            F_SETPIPE_SZ => FcntlCmd::SetPipeSize { size: argi },
            _ => return Err(Errno::EINVAL),
        })
    }

    /// Whether the command works on an O_PATH descriptor; the others are EBADF there, as if
    /// the descriptor were not open (Linux's `check_fcntl_cmd`).
    pub fn allowed_on_path_fd(&self) -> bool {
        matches!(
            self,
            FcntlCmd::DupFd { .. } | FcntlCmd::GetFd | FcntlCmd::SetFd { .. } | FcntlCmd::GetFl
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_numbers() {
        assert_eq!(
            (F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL),
            (0, 1, 2, 3, 4)
        );
        assert_eq!(
            (F_GETLK, F_SETLK, F_SETLKW, F_SETOWN, F_GETOWN),
            (5, 6, 7, 8, 9)
        );
        assert_eq!((F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW), (36, 37, 38));
        assert_eq!(
            (F_DUPFD_CLOEXEC, F_SETPIPE_SZ, F_GETPIPE_SZ),
            (1030, 1031, 1032)
        );
    }

    #[test]
    fn int_arguments_drop_the_upper_half() {
        assert_eq!(
            FcntlCmd::decode(F_DUPFD, 0x1_0000_0003),
            Ok(FcntlCmd::DupFd {
                min: 3,
                cloexec: false
            })
        );
        assert_eq!(
            FcntlCmd::decode(F_DUPFD_CLOEXEC, usize::MAX),
            Ok(FcntlCmd::DupFd {
                min: u32::MAX,
                cloexec: true
            })
        );
        assert_eq!(
            FcntlCmd::decode(F_SETFD, 0x1_0000_0000),
            Ok(FcntlCmd::SetFd { cloexec: false })
        );
        assert_eq!(
            FcntlCmd::decode(F_SETFD, 3),
            Ok(FcntlCmd::SetFd { cloexec: true })
        );
        assert_eq!(
            FcntlCmd::decode(F_SETPIPE_SZ, 0x1_0000_1000),
            Ok(FcntlCmd::SetPipeSize { size: 0x1000 })
        );
        assert_eq!(
            FcntlCmd::decode(F_SETOWN, 0xffff_ffff),
            Ok(FcntlCmd::SetOwn { owner: -1 })
        );
        assert_eq!(
            FcntlCmd::decode(F_SETFL, (1 << 40) | O_NONBLOCK as usize),
            Ok(FcntlCmd::SetFl { flags: O_NONBLOCK })
        );
    }

    #[test]
    fn locks_keep_the_pointer() {
        let p = 0xffff_0000_1000;
        assert_eq!(
            FcntlCmd::decode(F_SETLKW, p),
            Ok(FcntlCmd::Lock {
                op: LockOp::SetWait,
                ofd: false,
                flock: p
            })
        );
        assert_eq!(
            FcntlCmd::decode(F_OFD_GETLK, p),
            Ok(FcntlCmd::Lock {
                op: LockOp::Get,
                ofd: true,
                flock: p
            })
        );
    }

    #[test]
    fn unknown_is_einval() {
        for cmd in [
            F_SETSIG,
            F_GETSIG,
            F_SETOWN_EX,
            F_GETOWN_EX,
            F_SETLEASE,
            F_NOTIFY,
            F_DUPFD_QUERY,
            F_ADD_SEALS,
            F_GET_SEALS,
            12,
            u32::MAX,
        ] {
            assert_eq!(FcntlCmd::decode(cmd, 0), Err(Errno::EINVAL), "{cmd}");
        }
    }

    #[test]
    fn path_fds() {
        let ok = |cmd| FcntlCmd::decode(cmd, 0).unwrap().allowed_on_path_fd();
        for cmd in [F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL] {
            assert!(ok(cmd), "{cmd}");
        }
        for cmd in [F_SETFL, F_GETLK, F_GETOWN, F_GETPIPE_SZ, F_SETPIPE_SZ] {
            assert!(!ok(cmd), "{cmd}");
        }
    }
}
