//! prctl(2) decoded: the option and its four arguments become one `PrctlCmd`, with the argument
//! rules Linux applies before acting (unused arguments that must be zero, flag masks), so the
//! kernel only carries out a request that is already known to be well formed.

use crate::fp::vlctl::VecKind;
use crate::uapi::errno::Errno;
use crate::uapi::sys::*;

/// A prctl request Svelt carries out. Options it does not know are EINVAL, as on Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrctlCmd {
    GetSeccomp,
    /// PR_SET_SECCOMP: the mode as given (seccomp decides), and the filter pointer.
    SetSeccomp {
        mode: usize,
        filter: usize,
    },
    SetNoNewPrivs,
    GetNoNewPrivs,
    /// PR_SET_TAGGED_ADDR_CTRL with PR_TAGGED_ADDR_ENABLE set or clear (no MTE controls).
    SetTaggedAddr {
        enable: bool,
    },
    GetTaggedAddr,
    /// PR_SET_NAME: the user address of the new name (accepted, as before, without effect).
    SetName {
        name: usize,
    },
    /// PR_GET_NAME: where to write the 16-byte name.
    GetName {
        buf: usize,
    },
    SetDumpable {
        value: usize,
    },
    GetDumpable,
    SetPdeathsig {
        signal: usize,
    },
    /// PR_SVE_SET_VL / PR_SME_SET_VL: the length and flags word (vlctl checks it).
    SetVl {
        kind: VecKind,
        arg: u64,
    },
    GetVl {
        kind: VecKind,
    },
    /// PR_GET/SET/LOCK_SHADOW_STACK_STATUS (arg3..arg5 zero): the pointer or the mode bits.
    GetShadowStack {
        ptr: usize,
    },
    SetShadowStack {
        arg: u64,
    },
    LockShadowStack {
        arg: u64,
    },
    /// PR_CAPBSET_READ of a capability Linux 7.3 has (0..=CAP_LAST_CAP).
    CapbsetRead {
        cap: usize,
    },
    /// PR_SET_TIMERSLACK: the new slack in ns (0: the thread's default).
    SetTimerSlack {
        ns: usize,
    },
    GetTimerSlack,
    /// PR_MCE_KILL: the policy PR_MCE_KILL_GET then reports (PR_MCE_KILL_LATE, _EARLY or
    /// _DEFAULT; PR_MCE_KILL_CLEAR is _DEFAULT).
    SetMceKill {
        policy: u8,
    },
    GetMceKill,
}

/// The highest capability number of Linux 7.3 (CAP_CHECKPOINT_RESTORE).
pub const CAP_LAST_CAP: usize = 40;
pub const PR_MCE_KILL_CLEAR: usize = 0;
pub const PR_MCE_KILL_SET: usize = 1;
pub const PR_MCE_KILL_LATE: usize = 0;
pub const PR_MCE_KILL_EARLY: usize = 1;
pub const PR_MCE_KILL_DEFAULT: usize = 2;

impl PrctlCmd {
    /// Decodes `prctl(option, a[0], a[1], a[2], a[3])`.
    pub fn decode(option: u32, a: [usize; 4]) -> Result<PrctlCmd, Errno> {
        let [a2, a3, ..] = a;
        let zero_from = |i: usize| a[i..].iter().all(|&v| v == 0);
        let need = |ok: bool, cmd: PrctlCmd| if ok { Ok(cmd) } else { Err(Errno::EINVAL) };
        match option {
            PR_GET_SECCOMP => Ok(PrctlCmd::GetSeccomp),
            PR_SET_SECCOMP => Ok(PrctlCmd::SetSeccomp {
                mode: a2,
                filter: a3,
            }),
            PR_SET_NO_NEW_PRIVS => need(a2 == 1 && zero_from(1), PrctlCmd::SetNoNewPrivs),
            PR_GET_NO_NEW_PRIVS => need(zero_from(0), PrctlCmd::GetNoNewPrivs),
            PR_SET_TAGGED_ADDR_CTRL => need(
                a2 & !PR_TAGGED_ADDR_ENABLE == 0 && zero_from(1),
                PrctlCmd::SetTaggedAddr {
                    enable: a2 & PR_TAGGED_ADDR_ENABLE != 0,
                },
            ),
            PR_GET_TAGGED_ADDR_CTRL => need(zero_from(0), PrctlCmd::GetTaggedAddr),
            PR_SET_NAME => Ok(PrctlCmd::SetName { name: a2 }),
            PR_GET_NAME => Ok(PrctlCmd::GetName { buf: a2 }),
            PR_SET_DUMPABLE => Ok(PrctlCmd::SetDumpable { value: a2 }),
            PR_GET_DUMPABLE => Ok(PrctlCmd::GetDumpable),
            PR_SET_PDEATHSIG => Ok(PrctlCmd::SetPdeathsig { signal: a2 }),
            PR_SVE_SET_VL => Ok(PrctlCmd::SetVl {
                kind: VecKind::Sve,
                arg: a2 as u64,
            }),
            PR_SVE_GET_VL => Ok(PrctlCmd::GetVl { kind: VecKind::Sve }),
            PR_SME_SET_VL => Ok(PrctlCmd::SetVl {
                kind: VecKind::Sme,
                arg: a2 as u64,
            }),
            PR_SME_GET_VL => Ok(PrctlCmd::GetVl { kind: VecKind::Sme }),
            PR_GET_SHADOW_STACK_STATUS => need(zero_from(1), PrctlCmd::GetShadowStack { ptr: a2 }),
            PR_SET_SHADOW_STACK_STATUS => {
                need(zero_from(1), PrctlCmd::SetShadowStack { arg: a2 as u64 })
            }
            PR_LOCK_SHADOW_STACK_STATUS => {
                need(zero_from(1), PrctlCmd::LockShadowStack { arg: a2 as u64 })
            }
            PR_CAPBSET_READ => need(a2 <= CAP_LAST_CAP, PrctlCmd::CapbsetRead { cap: a2 }),
            // Any value but zero is the slack (Linux takes it unsigned).
            PR_SET_TIMERSLACK => Ok(PrctlCmd::SetTimerSlack { ns: a2 }),
            PR_GET_TIMERSLACK => Ok(PrctlCmd::GetTimerSlack),
            // kernel/sys.c: arg4 and arg5 zero; CLEAR wants arg3 zero, SET one of the three.
            PR_MCE_KILL => {
                let policy = match (a2, a3) {
                    _ if !zero_from(2) => return Err(Errno::EINVAL),
                    (PR_MCE_KILL_CLEAR, 0) => PR_MCE_KILL_DEFAULT,
                    (PR_MCE_KILL_SET, p @ (PR_MCE_KILL_LATE | PR_MCE_KILL_EARLY)) => p,
                    (PR_MCE_KILL_SET, PR_MCE_KILL_DEFAULT) => PR_MCE_KILL_DEFAULT,
                    _ => return Err(Errno::EINVAL),
                };
                Ok(PrctlCmd::SetMceKill {
                    policy: policy as u8,
                })
            }
            PR_MCE_KILL_GET => need(zero_from(0), PrctlCmd::GetMceKill),
            _ => Err(Errno::EINVAL),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capbset_timerslack_and_mce_kill_as_linux() {
        let d = PrctlCmd::decode;
        assert_eq!(
            d(PR_CAPBSET_READ, [40, 0, 0, 0]),
            Ok(PrctlCmd::CapbsetRead { cap: 40 })
        );
        assert_eq!(d(PR_CAPBSET_READ, [41, 0, 0, 0]), Err(Errno::EINVAL));
        assert_eq!(
            d(PR_SET_TIMERSLACK, [0, 0, 0, 0]),
            Ok(PrctlCmd::SetTimerSlack { ns: 0 })
        );
        let mce = |a: [usize; 4]| d(PR_MCE_KILL, a);
        assert_eq!(mce([1, 1, 0, 0]), Ok(PrctlCmd::SetMceKill { policy: 1 }));
        assert_eq!(mce([1, 0, 0, 0]), Ok(PrctlCmd::SetMceKill { policy: 0 }));
        assert_eq!(mce([1, 2, 0, 0]), Ok(PrctlCmd::SetMceKill { policy: 2 }));
        assert_eq!(mce([0, 0, 0, 0]), Ok(PrctlCmd::SetMceKill { policy: 2 }));
        assert_eq!(mce([0, 1, 0, 0]), Err(Errno::EINVAL));
        assert_eq!(mce([1, 3, 0, 0]), Err(Errno::EINVAL));
        assert_eq!(mce([2, 0, 0, 0]), Err(Errno::EINVAL));
        assert_eq!(mce([1, 1, 1, 0]), Err(Errno::EINVAL));
        assert_eq!(d(PR_MCE_KILL_GET, [0, 0, 0, 0]), Ok(PrctlCmd::GetMceKill));
        assert_eq!(d(PR_MCE_KILL_GET, [0, 0, 0, 1]), Err(Errno::EINVAL));
    }

    #[test]
    fn no_new_privs_wants_one_and_zeroes() {
        assert_eq!(
            PrctlCmd::decode(PR_SET_NO_NEW_PRIVS, [1, 0, 0, 0]),
            Ok(PrctlCmd::SetNoNewPrivs)
        );
        assert_eq!(
            PrctlCmd::decode(PR_SET_NO_NEW_PRIVS, [0, 0, 0, 0]),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            PrctlCmd::decode(PR_SET_NO_NEW_PRIVS, [2, 0, 0, 0]),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            PrctlCmd::decode(PR_SET_NO_NEW_PRIVS, [1, 0, 0, 7]),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            PrctlCmd::decode(PR_GET_NO_NEW_PRIVS, [0, 0, 0, 0]),
            Ok(PrctlCmd::GetNoNewPrivs)
        );
        assert_eq!(
            PrctlCmd::decode(PR_GET_NO_NEW_PRIVS, [1, 0, 0, 0]),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn tagged_addr_takes_only_the_enable_flag() {
        assert_eq!(
            PrctlCmd::decode(PR_SET_TAGGED_ADDR_CTRL, [1, 0, 0, 0]),
            Ok(PrctlCmd::SetTaggedAddr { enable: true })
        );
        assert_eq!(
            PrctlCmd::decode(PR_SET_TAGGED_ADDR_CTRL, [0, 0, 0, 0]),
            Ok(PrctlCmd::SetTaggedAddr { enable: false })
        );
        // MTE's TCF and tag-mask bits: not without MTE.
        assert_eq!(
            PrctlCmd::decode(PR_SET_TAGGED_ADDR_CTRL, [1 << 1, 0, 0, 0]),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            PrctlCmd::decode(PR_SET_TAGGED_ADDR_CTRL, [1, 1, 0, 0]),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            PrctlCmd::decode(PR_GET_TAGGED_ADDR_CTRL, [0, 0, 0, 1]),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            PrctlCmd::decode(PR_GET_TAGGED_ADDR_CTRL, [0; 4]),
            Ok(PrctlCmd::GetTaggedAddr)
        );
    }

    #[test]
    fn vector_length_requests_name_their_kind() {
        assert_eq!(
            PrctlCmd::decode(PR_SVE_SET_VL, [32 | (1 << 17), 9, 9, 9]),
            Ok(PrctlCmd::SetVl {
                kind: VecKind::Sve,
                arg: 32 | (1 << 17)
            })
        );
        assert_eq!(
            PrctlCmd::decode(PR_SME_GET_VL, [0; 4]),
            Ok(PrctlCmd::GetVl { kind: VecKind::Sme })
        );
        assert_eq!(
            PrctlCmd::decode(PR_SME_SET_VL, [16, 0, 0, 0]),
            Ok(PrctlCmd::SetVl {
                kind: VecKind::Sme,
                arg: 16
            })
        );
    }

    #[test]
    fn unknown_options_are_einval() {
        for option in [0, 17, 18, 57, 0x5953_5345, u32::MAX] {
            assert_eq!(
                PrctlCmd::decode(option, [0; 4]),
                Err(Errno::EINVAL),
                "{option}"
            );
        }
    }

    #[test]
    fn seccomp_passes_mode_and_filter_on() {
        assert_eq!(
            PrctlCmd::decode(PR_SET_SECCOMP, [2, 0x1000, 0, 0]),
            Ok(PrctlCmd::SetSeccomp {
                mode: 2,
                filter: 0x1000
            })
        );
    }
}
