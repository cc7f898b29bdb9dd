//! futex(2) decoded: the `op` word (command and modifier flags) and the arguments each command
//! reads become one `FutexOp`, with Linux's argument rules (ENOSYS for a command or clock it
//! does not offer, EINVAL for an empty bitset or a negative count), so the kernel only carries
//! out a request that is already well formed. Also the FUTEX_WAKE_OP encoding, the futex word
//! bits and the robust-list sizes (linux/futex.h).

use crate::uapi::errno::{Errno, SysResult};

pub const FUTEX_WAIT: u32 = 0;
pub const FUTEX_WAKE: u32 = 1;
pub const FUTEX_FD: u32 = 2;
pub const FUTEX_REQUEUE: u32 = 3;
pub const FUTEX_CMP_REQUEUE: u32 = 4;
pub const FUTEX_WAKE_OP: u32 = 5;
pub const FUTEX_LOCK_PI: u32 = 6;
pub const FUTEX_UNLOCK_PI: u32 = 7;
pub const FUTEX_TRYLOCK_PI: u32 = 8;
pub const FUTEX_WAIT_BITSET: u32 = 9;
pub const FUTEX_WAKE_BITSET: u32 = 10;
pub const FUTEX_WAIT_REQUEUE_PI: u32 = 11;
pub const FUTEX_CMP_REQUEUE_PI: u32 = 12;
pub const FUTEX_LOCK_PI2: u32 = 13;
pub const FUTEX_PRIVATE_FLAG: u32 = 128;
pub const FUTEX_CLOCK_REALTIME: u32 = 256;
/// The command bits of `op`: everything but the two modifiers. (Linux 7.x adds robust-unlock
/// modifiers; Svelt does not offer them, so they stay part of the command, which is then
/// unknown: ENOSYS, as on kernels before them.)
pub const FUTEX_CMD_MASK: u32 = !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
pub const FUTEX_WAIT_PRIVATE: u32 = FUTEX_WAIT | FUTEX_PRIVATE_FLAG;
pub const FUTEX_WAKE_PRIVATE: u32 = FUTEX_WAKE | FUTEX_PRIVATE_FLAG;
pub const FUTEX_BITSET_MATCH_ANY: u32 = 0xffff_ffff;

/// Bits of a robust/PI futex word.
pub const FUTEX_WAITERS: u32 = 0x8000_0000;
pub const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
pub const FUTEX_TID_MASK: u32 = 0x3fff_ffff;

/// `struct robust_list_head`: list.next, futex_offset, list_op_pending (24 bytes).
/// set_robust_list rejects any other `len` with EINVAL.
pub const ROBUST_LIST_HEAD_SIZE: usize = 24;
/// Robust futex list walks stop after this many entries (a loop guard).
pub const ROBUST_LIST_LIMIT: usize = 2048;

/// FUTEX_WAKE_OP operations and comparisons.
pub const FUTEX_OP_SET: u32 = 0;
pub const FUTEX_OP_ADD: u32 = 1;
pub const FUTEX_OP_OR: u32 = 2;
pub const FUTEX_OP_ANDN: u32 = 3;
pub const FUTEX_OP_XOR: u32 = 4;
/// With an operation: the operand is `1 << oparg`.
pub const FUTEX_OP_OPARG_SHIFT: u32 = 8;
pub const FUTEX_OP_CMP_EQ: u32 = 0;
pub const FUTEX_OP_CMP_NE: u32 = 1;
pub const FUTEX_OP_CMP_LT: u32 = 2;
pub const FUTEX_OP_CMP_LE: u32 = 3;
pub const FUTEX_OP_CMP_GT: u32 = 4;
pub const FUTEX_OP_CMP_GE: u32 = 5;

/// Encode a FUTEX_WAKE_OP argument (the uapi `FUTEX_OP` macro).
pub const fn futex_op(op: u32, oparg: u32, cmp: u32, cmparg: u32) -> u32 {
    ((op & 0xf) << 28) | ((cmp & 0xf) << 24) | ((oparg & 0xfff) << 12) | (cmparg & 0xfff)
}

/// What FUTEX_WAKE_OP does to the word at uaddr2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeOpKind {
    Set,
    Add,
    Or,
    AndNot,
    Xor,
}

/// How FUTEX_WAKE_OP compares the old word with `cmparg` (signed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeOpCmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A FUTEX_WAKE_OP argument (`val3`) decoded: store `old <op> oparg` at uaddr2, and wake the
/// waiters on uaddr2 too if `old <cmp> cmparg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FutexWakeOp {
    pub op: WakeOpKind,
    /// The operand, already sign-extended from 12 bits or turned into `1 << n`.
    pub oparg: u32,
    pub cmp: WakeOpCmp,
    pub cmparg: i32,
}

impl FutexWakeOp {
    /// Unknown operations and comparisons are ENOSYS. (Linux looks at the comparison only
    /// after storing the new word, so it writes uaddr2 before refusing one; Svelt refuses
    /// before touching memory.) A shift beyond 31 uses its low five bits, as Linux does.
    pub fn decode(encoded: u32) -> SysResult<FutexWakeOp> {
        let sext12 = |v: u32| ((v << 20) as i32) >> 20;
        let raw_op = encoded >> 28;
        let mut oparg = sext12((encoded >> 12) & 0xfff);
        if raw_op & FUTEX_OP_OPARG_SHIFT != 0 {
            oparg = 1i32.wrapping_shl(oparg as u32 & 31);
        }
        let op = match raw_op & !FUTEX_OP_OPARG_SHIFT {
            FUTEX_OP_SET => WakeOpKind::Set,
            FUTEX_OP_ADD => WakeOpKind::Add,
            FUTEX_OP_OR => WakeOpKind::Or,
            FUTEX_OP_ANDN => WakeOpKind::AndNot,
            FUTEX_OP_XOR => WakeOpKind::Xor,
            _ => return Err(Errno::ENOSYS),
        };
        let cmp = match (encoded >> 24) & 0xf {
            FUTEX_OP_CMP_EQ => WakeOpCmp::Eq,
            FUTEX_OP_CMP_NE => WakeOpCmp::Ne,
            FUTEX_OP_CMP_LT => WakeOpCmp::Lt,
            FUTEX_OP_CMP_LE => WakeOpCmp::Le,
            FUTEX_OP_CMP_GT => WakeOpCmp::Gt,
            FUTEX_OP_CMP_GE => WakeOpCmp::Ge,
            _ => return Err(Errno::ENOSYS),
        };
        Ok(FutexWakeOp {
            op,
            oparg: oparg as u32,
            cmp,
            cmparg: sext12(encoded & 0xfff),
        })
    }

    /// The word to store at uaddr2 over `old`, and whether uaddr2's waiters are woken too.
    pub fn apply(&self, old: u32) -> (u32, bool) {
        let a = self.oparg;
        let new = match self.op {
            WakeOpKind::Set => a,
            WakeOpKind::Add => old.wrapping_add(a),
            WakeOpKind::Or => old | a,
            WakeOpKind::AndNot => old & !a,
            WakeOpKind::Xor => old ^ a,
        };
        let (o, c) = (old as i32, self.cmparg);
        let hit = match self.cmp {
            WakeOpCmp::Eq => o == c,
            WakeOpCmp::Ne => o != c,
            WakeOpCmp::Lt => o < c,
            WakeOpCmp::Le => o <= c,
            WakeOpCmp::Gt => o > c,
            WakeOpCmp::Ge => o >= c,
        };
        (new, hit)
    }
}

/// A futex command with the arguments it reads. Counts are Linux's `int`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexCmd {
    /// FUTEX_WAIT (bitset MATCH_ANY) and FUTEX_WAIT_BITSET: sleep while the word is `val`.
    Wait {
        val: u32,
        bitset: u32,
    },
    /// FUTEX_WAKE and FUTEX_WAKE_BITSET: wake up to `count` waiters whose bitset meets
    /// `bitset`. Linux wakes at least one, so a count of 0 or below is 1 here.
    Wake {
        count: u32,
        bitset: u32,
    },
    /// FUTEX_REQUEUE and FUTEX_CMP_REQUEUE (with `cmp`, the value the word must hold): wake
    /// up to `wake` waiters and move up to `requeue` more onto `uaddr2`.
    Requeue {
        wake: u32,
        requeue: u32,
        uaddr2: usize,
        cmp: Option<u32>,
    },
    /// FUTEX_WAKE_OP: wake up to `wake` on uaddr, apply `op` to uaddr2, and if its
    /// comparison holds wake up to `wake2` on uaddr2.
    WakeOp {
        wake: u32,
        wake2: u32,
        uaddr2: usize,
        op: FutexWakeOp,
    },
    /// FUTEX_LOCK_PI (timeout on CLOCK_REALTIME) and FUTEX_LOCK_PI2 (on the op's clock).
    LockPi {
        pi2: bool,
    },
    UnlockPi,
    TrylockPi,
    WaitRequeuePi {
        val: u32,
        uaddr2: usize,
    },
    CmpRequeuePi {
        wake: u32,
        requeue: u32,
        uaddr2: usize,
        cmp: u32,
    },
}

/// The clock a futex timeout is measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexClock {
    /// FUTEX_WAIT: a relative interval.
    Relative,
    /// An absolute CLOCK_MONOTONIC time.
    Monotonic,
    /// An absolute CLOCK_REALTIME time.
    Realtime,
}

/// The timespec a futex call waits until, when the command reads one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FutexTimeout {
    /// User address of the `struct timespec`.
    pub addr: usize,
    pub clock: FutexClock,
}

/// A futex call decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FutexOp {
    pub cmd: FutexCmd,
    /// FUTEX_PRIVATE_FLAG: the word is not shared with other processes.
    pub private: bool,
    pub clock_realtime: bool,
}

/// A count argument: Linux reads it as an `int`, so from 2^31 it is negative.
fn count(v: u32) -> SysResult<u32> {
    i32::try_from(v)
        .map(|c| c as u32)
        .map_err(|_| Errno::EINVAL)
}

impl FutexOp {
    /// The timeout `futex(uaddr, op, val, utime, ...)` reads, if `op`'s command takes one and
    /// `utime` is not NULL. Linux reads and checks it (EFAULT, EINVAL) before it looks at the
    /// rest of the call, so the kernel does too; for other commands `utime` is a count.
    pub fn timeout(op: u32, utime: usize) -> Option<FutexTimeout> {
        let clock = match op & FUTEX_CMD_MASK {
            _ if utime == 0 => return None,
            FUTEX_WAIT => FutexClock::Relative,
            FUTEX_LOCK_PI => FutexClock::Realtime,
            FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2 => {
                if op & FUTEX_CLOCK_REALTIME != 0 {
                    FutexClock::Realtime
                } else {
                    FutexClock::Monotonic
                }
            }
            _ => return None,
        };
        Some(FutexTimeout { addr: utime, clock })
    }

    /// Decodes `futex(uaddr, op, val, utime, uaddr2, val3)`; `utime` is passed as given (a
    /// timeout pointer for the waits, the second count for the requeues and WAKE_OP).
    /// FUTEX_CLOCK_REALTIME is accepted only on WAIT_BITSET, WAIT_REQUEUE_PI and LOCK_PI2,
    /// and unknown commands (FUTEX_FD among them) are ENOSYS; an empty bitset and negative
    /// counts are EINVAL.
    pub fn decode(op: u32, val: u32, utime: usize, uaddr2: usize, val3: u32) -> SysResult<Self> {
        let cmd = op & FUTEX_CMD_MASK;
        let clock_realtime = op & FUTEX_CLOCK_REALTIME != 0;
        if clock_realtime
            && !matches!(
                cmd,
                FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2
            )
        {
            return Err(Errno::ENOSYS);
        }
        let val2 = utime as u32;
        let bitset = |b: u32| if b == 0 { Err(Errno::EINVAL) } else { Ok(b) };
        let cmd = match cmd {
            FUTEX_WAIT => FutexCmd::Wait {
                val,
                bitset: FUTEX_BITSET_MATCH_ANY,
            },
            FUTEX_WAIT_BITSET => FutexCmd::Wait {
                val,
                bitset: bitset(val3)?,
            },
            FUTEX_WAKE | FUTEX_WAKE_BITSET => FutexCmd::Wake {
                count: (val as i32).max(1) as u32,
                bitset: if cmd == FUTEX_WAKE {
                    FUTEX_BITSET_MATCH_ANY
                } else {
                    bitset(val3)?
                },
            },
            FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => FutexCmd::Requeue {
                wake: count(val)?,
                requeue: count(val2)?,
                uaddr2,
                cmp: (cmd == FUTEX_CMP_REQUEUE).then_some(val3),
            },
            FUTEX_WAKE_OP => FutexCmd::WakeOp {
                wake: val,
                wake2: val2,
                uaddr2,
                op: FutexWakeOp::decode(val3)?,
            },
            FUTEX_LOCK_PI | FUTEX_LOCK_PI2 => FutexCmd::LockPi {
                pi2: cmd == FUTEX_LOCK_PI2,
            },
            FUTEX_UNLOCK_PI => FutexCmd::UnlockPi,
            FUTEX_TRYLOCK_PI => FutexCmd::TrylockPi,
            FUTEX_WAIT_REQUEUE_PI => FutexCmd::WaitRequeuePi { val, uaddr2 },
            FUTEX_CMP_REQUEUE_PI => FutexCmd::CmpRequeuePi {
                wake: count(val)?,
                requeue: count(val2)?,
                uaddr2,
                cmp: val3,
            },
            _ => return Err(Errno::ENOSYS),
        };
        Ok(FutexOp {
            cmd,
            private: op & FUTEX_PRIVATE_FLAG != 0,
            clock_realtime,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(op: u32, val: u32, utime: usize, val3: u32) -> SysResult<FutexCmd> {
        FutexOp::decode(op, val, utime, 0x2000, val3).map(|o| o.cmd)
    }

    #[test]
    fn linux_numbers() {
        assert_eq!(
            (FUTEX_WAIT, FUTEX_WAKE, FUTEX_REQUEUE, FUTEX_CMP_REQUEUE),
            (0, 1, 3, 4)
        );
        assert_eq!((FUTEX_WAKE_OP, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET), (5, 6, 9));
        assert_eq!((FUTEX_CMP_REQUEUE_PI, FUTEX_LOCK_PI2), (12, 13));
        assert_eq!((FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME), (0x80, 0x100));
    }

    #[test]
    fn flags_and_commands() {
        let o = FutexOp::decode(FUTEX_WAIT_PRIVATE, 7, 0, 0, 0).unwrap();
        assert!(o.private && !o.clock_realtime);
        assert_eq!(
            o.cmd,
            FutexCmd::Wait {
                val: 7,
                bitset: FUTEX_BITSET_MATCH_ANY
            }
        );
        // The realtime clock only where an absolute timeout is taken on it.
        for cmd in [FUTEX_WAIT_BITSET, FUTEX_WAIT_REQUEUE_PI, FUTEX_LOCK_PI2] {
            let o = FutexOp::decode(cmd | FUTEX_CLOCK_REALTIME, 0, 0, 0, 1).unwrap();
            assert!(o.clock_realtime, "{cmd}");
        }
        for cmd in [FUTEX_WAIT, FUTEX_WAKE, FUTEX_LOCK_PI, FUTEX_CMP_REQUEUE, 14] {
            assert_eq!(
                d(cmd | FUTEX_CLOCK_REALTIME, 0, 0, 1),
                Err(Errno::ENOSYS),
                "{cmd}"
            );
        }
        for cmd in [FUTEX_FD, 14, 0x200 | FUTEX_WAKE, FUTEX_CMD_MASK] {
            assert_eq!(d(cmd, 0, 0, 1), Err(Errno::ENOSYS), "{cmd}");
        }
        assert_eq!(
            d(FUTEX_LOCK_PI, 0, 0, 0),
            Ok(FutexCmd::LockPi { pi2: false })
        );
        assert_eq!(d(FUTEX_UNLOCK_PI, 0, 0, 0), Ok(FutexCmd::UnlockPi));
        assert_eq!(d(FUTEX_TRYLOCK_PI, 0, 0, 0), Ok(FutexCmd::TrylockPi));
    }

    #[test]
    fn bitsets() {
        assert_eq!(d(FUTEX_WAIT_BITSET, 1, 0, 0), Err(Errno::EINVAL));
        assert_eq!(d(FUTEX_WAKE_BITSET, 1, 0, 0), Err(Errno::EINVAL));
        assert_eq!(
            d(FUTEX_WAIT_BITSET, 1, 0, 6),
            Ok(FutexCmd::Wait { val: 1, bitset: 6 })
        );
        assert_eq!(
            d(FUTEX_WAKE_BITSET, 2, 0, 6),
            Ok(FutexCmd::Wake {
                count: 2,
                bitset: 6
            })
        );
        // Plain WAIT/WAKE ignore val3.
        assert!(d(FUTEX_WAIT, 1, 0, 0).is_ok());
        assert!(d(FUTEX_WAKE, 1, 0, 0).is_ok());
    }

    #[test]
    fn counts() {
        let wake = |n| match d(FUTEX_WAKE, n, 0, 0) {
            Ok(FutexCmd::Wake { count, .. }) => count,
            r => panic!("{r:?}"),
        };
        // Linux wakes at least one.
        assert_eq!((wake(0), wake(1), wake(5), wake(u32::MAX)), (1, 1, 5, 1));
        assert_eq!(wake(i32::MAX as u32), i32::MAX as u32);
        // The requeue counts are ints that may not be negative; the second is in utime.
        assert_eq!(
            d(FUTEX_CMP_REQUEUE, 1, 0x7fff_ffff, 9),
            Ok(FutexCmd::Requeue {
                wake: 1,
                requeue: i32::MAX as u32,
                uaddr2: 0x2000,
                cmp: Some(9)
            })
        );
        assert_eq!(
            d(FUTEX_REQUEUE, 0, 1 << 32 | 3, 9),
            Ok(FutexCmd::Requeue {
                wake: 0,
                requeue: 3,
                uaddr2: 0x2000,
                cmp: None
            })
        );
        assert_eq!(d(FUTEX_REQUEUE, 1 << 31, 0, 0), Err(Errno::EINVAL));
        assert_eq!(d(FUTEX_CMP_REQUEUE, 0, 0xffff_ffff, 0), Err(Errno::EINVAL));
        assert_eq!(d(FUTEX_CMP_REQUEUE_PI, 1 << 31, 0, 0), Err(Errno::EINVAL));
    }

    #[test]
    fn timeouts() {
        let t = |op, at| FutexOp::timeout(op, at).map(|t| t.clock);
        assert_eq!(t(FUTEX_WAIT, 0x1000), Some(FutexClock::Relative));
        assert_eq!(t(FUTEX_WAIT, 0), None);
        assert_eq!(t(FUTEX_WAIT_BITSET, 0x1000), Some(FutexClock::Monotonic));
        assert_eq!(
            t(
                FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME | FUTEX_PRIVATE_FLAG,
                0x1000
            ),
            Some(FutexClock::Realtime)
        );
        assert_eq!(t(FUTEX_LOCK_PI, 0x1000), Some(FutexClock::Realtime));
        assert_eq!(t(FUTEX_LOCK_PI2, 0x1000), Some(FutexClock::Monotonic));
        assert_eq!(
            t(FUTEX_WAIT_REQUEUE_PI, 0x1000),
            Some(FutexClock::Monotonic)
        );
        // Here the argument is a count, not a pointer.
        for op in [
            FUTEX_WAKE,
            FUTEX_REQUEUE,
            FUTEX_CMP_REQUEUE,
            FUTEX_WAKE_OP,
            14,
        ] {
            assert_eq!(t(op, 0x1000), None, "{op}");
        }
    }

    #[test]
    fn wake_op() {
        // SET 0, wake uaddr2's waiters if old > 1.
        let enc = futex_op(FUTEX_OP_SET, 0, FUTEX_OP_CMP_GT, 1);
        assert_eq!(enc, 0x0400_0001);
        let w = FutexWakeOp::decode(enc).unwrap();
        assert_eq!((w.apply(2), w.apply(1)), ((0, true), (0, false)));
        // 12-bit operands are signed.
        let add_neg = FutexWakeOp::decode(futex_op(FUTEX_OP_ADD, 0xfff, FUTEX_OP_CMP_LT, 0));
        assert_eq!(add_neg.unwrap().apply(5), (4, false));
        let cmp_neg = FutexWakeOp::decode(futex_op(FUTEX_OP_SET, 1, FUTEX_OP_CMP_GE, 0x800));
        assert_eq!(cmp_neg.unwrap().cmparg, -2048);
        // OPARG_SHIFT: 1 << oparg, a shift of 32 or more wraps to its low five bits.
        let shift = futex_op(FUTEX_OP_OR | FUTEX_OP_OPARG_SHIFT, 4, FUTEX_OP_CMP_EQ, 0);
        assert_eq!(FutexWakeOp::decode(shift).unwrap().apply(0), (0x10, true));
        let wide = futex_op(FUTEX_OP_SET | FUTEX_OP_OPARG_SHIFT, 33, FUTEX_OP_CMP_EQ, 0);
        assert_eq!(FutexWakeOp::decode(wide).unwrap().oparg, 2);
        let andn = futex_op(FUTEX_OP_ANDN, 6, FUTEX_OP_CMP_NE, 0);
        assert_eq!(FutexWakeOp::decode(andn).unwrap().apply(7), (1, true));
        let xor = futex_op(FUTEX_OP_XOR, 1, FUTEX_OP_CMP_LE, 3);
        assert_eq!(FutexWakeOp::decode(xor).unwrap().apply(3), (2, true));
        assert_eq!(
            FutexWakeOp::decode(futex_op(5, 0, 0, 0)),
            Err(Errno::ENOSYS)
        );
        assert_eq!(
            FutexWakeOp::decode(futex_op(0, 0, 6, 0)),
            Err(Errno::ENOSYS)
        );
        // Decoded as part of the call, with both wake counts.
        assert_eq!(
            d(FUTEX_WAKE_OP, 1, 2, enc),
            Ok(FutexCmd::WakeOp {
                wake: 1,
                wake2: 2,
                uaddr2: 0x2000,
                op: FutexWakeOp::decode(enc).unwrap()
            })
        );
        assert_eq!(
            d(FUTEX_WAKE_OP, 1, 2, futex_op(7, 0, 0, 0)),
            Err(Errno::ENOSYS)
        );
    }
}
