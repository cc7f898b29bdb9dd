//! The initial user stack of a new program, laid out as Linux's execve builds it for a static
//! arm64 binary (fs/exec.c copies the strings, binfmt_elf.c `create_elf_tables` the rest).
//!
//! From `stack_top` down (addresses decrease):
//!
//! ```text
//! stack_top-8   8 zero bytes
//!               exec filename (AT_EXECFN), NUL
//!               envp strings (envp[0] lowest), each NUL-terminated
//!               argv strings (argv[0] lowest)               <- arg_start
//!               (round down to 16)
//!               platform "aarch64", NUL (AT_PLATFORM)
//!               16 random bytes (AT_RANDOM)
//!               zero padding so that sp is 16-aligned
//!               auxv pairs ..., AT_NULL, 0
//!               NULL, envp pointers
//!               NULL, argv pointers
//! sp            argc
//! ```

use crate::uapi::auxv::{AT_EXECFN, AT_NULL, AT_PLATFORM, AT_RANDOM};
use crate::uapi::errno::{Errno, SysResult};
use crate::util::bytes::put_u64;

/// Longest single argument or environment string, NUL included (`MAX_ARG_STRLEN`, 32 pages).
pub const MAX_ARG_STRLEN: usize = 32 * 4096;
/// Most argv or envp entries (`MAX_ARG_STRINGS`).
pub const MAX_ARG_STRINGS: usize = 0x7fff_ffff;
/// The floor of the argument space (`ARG_MAX`, 32 pages).
pub const ARG_MAX: usize = 32 * 4096;

/// The argument space Linux allows for a stack rlimit (`bprm_stack_limits`): a quarter of the
/// soft RLIMIT_STACK, at most 3/4 of the default 8 MiB, at least ARG_MAX. It covers the
/// argv/envp pointers and all the strings including the exec filename.
pub const fn exec_arg_limit(rlimit_stack_cur: u64) -> usize {
    let mut limit = (crate::uapi::sys::STK_LIM / 4 * 3) as usize;
    let quarter = rlimit_stack_cur / 4;
    if (quarter as usize as u64) == quarter && (quarter as usize) < limit {
        limit = quarter as usize;
    }
    if limit < ARG_MAX {
        limit = ARG_MAX;
    }
    limit
}

/// What goes on the stack.
#[derive(Clone, Copy, Debug)]
pub struct StackParams<'a> {
    /// Highest user address of the stack + 1 (16-aligned).
    pub stack_top: u64,
    pub argv: &'a [&'a [u8]],
    pub envp: &'a [&'a [u8]],
    /// The path execve was given (AT_EXECFN).
    pub execfn: &'a [u8],
    /// AT_PLATFORM's string, "aarch64" on arm64 (`None` omits it, as Linux does without one).
    pub platform: Option<&'a [u8]>,
    pub random: [u8; 16],
    /// The caller's auxv entries, without AT_NULL. Entries keyed AT_RANDOM, AT_EXECFN or
    /// AT_PLATFORM get their value filled in where they stand (so the caller controls the
    /// order, e.g. Linux's); whichever of the three is missing is appended, then AT_NULL.
    pub auxv: &'a [(u64, u64)],
    /// `exec_arg_limit(rlimit)`: strings + pointers beyond this give E2BIG.
    pub arg_limit: usize,
}

/// Where everything went. All addresses are user addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackLayout {
    /// The initial SP (16-aligned); the image covers [sp, stack_top).
    pub sp: u64,
    pub size: usize,
    /// argc as written (1 with an empty argv: Linux then supplies "" as argv[0]).
    pub argc: usize,
    pub argv: u64,
    pub envp: u64,
    pub auxv: u64,
    /// [arg_start, arg_end) holds the argv strings, [env_start, env_end) the envp strings
    /// (/proc/PID/cmdline and environ).
    pub arg_start: u64,
    pub arg_end: u64,
    pub env_start: u64,
    pub env_end: u64,
    pub execfn: u64,
    pub platform: u64,
    pub random: u64,
}

fn strings_len(list: &[&[u8]]) -> SysResult<usize> {
    let mut total = 0usize;
    for s in list {
        let n = s.len() + 1;
        if n > MAX_ARG_STRLEN || s.contains(&0) {
            // An embedded NUL cannot come from a C string; treat it like an over-long one.
            return Err(Errno::E2BIG);
        }
        total += n;
    }
    Ok(total)
}

const EMPTY_ARGV: [&[u8]; 1] = [b""];

impl StackLayout {
    /// Compute the layout; E2BIG when the strings exceed MAX_ARG_STRLEN / the argument limit,
    /// or when the whole image would not fit below `stack_top`.
    pub fn plan(p: &StackParams) -> SysResult<StackLayout> {
        if p.argv.len() > MAX_ARG_STRINGS || p.envp.len() > MAX_ARG_STRINGS {
            return Err(Errno::E2BIG);
        }
        let argv = if p.argv.is_empty() {
            &EMPTY_ARGV[..]
        } else {
            p.argv
        };
        let argc = argv.len();
        let envc = p.envp.len();
        let ptr_bytes = (argc + envc) * 8;
        if p.arg_limit <= ptr_bytes {
            return Err(Errno::E2BIG);
        }
        let exec_len = strings_len(&[p.execfn])?;
        let env_len = strings_len(p.envp)?;
        let arg_len = strings_len(argv)?;
        let strings = exec_len + env_len + arg_len;
        if strings > p.arg_limit - ptr_bytes {
            return Err(Errno::E2BIG);
        }

        let top = p.stack_top;
        let execfn = top.checked_sub(8 + exec_len as u64).ok_or(Errno::E2BIG)?;
        let env_start = execfn.checked_sub(env_len as u64).ok_or(Errno::E2BIG)?;
        let arg_start = env_start.checked_sub(arg_len as u64).ok_or(Errno::E2BIG)?;
        let mut pos = arg_start & !15;
        let platform = match p.platform {
            Some(s) => {
                pos = pos.checked_sub(s.len() as u64 + 1).ok_or(Errno::E2BIG)?;
                pos
            }
            None => 0,
        };
        pos = pos.checked_sub(16).ok_or(Errno::E2BIG)?;
        let random = pos;
        let aux_words = 2 * (Self::auxv_entries(p) + 1);
        let words = (1 + argc + 1 + envc + 1 + aux_words) as u64;
        let sp = pos.checked_sub(words * 8).ok_or(Errno::E2BIG)? & !15;
        let argv_addr = sp + 8;
        let envp_addr = argv_addr + (argc as u64 + 1) * 8;
        let auxv_addr = envp_addr + (envc as u64 + 1) * 8;
        Ok(StackLayout {
            sp,
            size: (top - sp) as usize,
            argc,
            argv: argv_addr,
            envp: envp_addr,
            auxv: auxv_addr,
            arg_start,
            arg_end: env_start,
            env_start,
            env_end: execfn,
            execfn,
            platform,
            random,
        })
    }

    /// The number of auxv entries before AT_NULL.
    fn auxv_entries(p: &StackParams) -> usize {
        let has = |k| p.auxv.iter().any(|&(key, _)| key == k);
        let given = p.auxv.iter().take_while(|&&(k, _)| k != AT_NULL).count();
        given
            + !has(AT_RANDOM) as usize
            + !has(AT_EXECFN) as usize
            + (p.platform.is_some() && !has(AT_PLATFORM)) as usize
    }

    /// Write the image of [sp, stack_top) into `buf` (which must be `size` bytes or longer;
    /// only the first `size` are written). Call with the same params `plan` saw.
    pub fn write(&self, p: &StackParams, buf: &mut [u8]) -> SysResult<()> {
        let buf = buf.get_mut(..self.size).ok_or(Errno::E2BIG)?;
        buf.fill(0);
        let sp = self.sp;
        let off = |addr: u64| (addr - sp) as usize;
        let argv = if p.argv.is_empty() {
            &EMPTY_ARGV[..]
        } else {
            p.argv
        };

        let put_str = |buf: &mut [u8], addr: u64, s: &[u8]| {
            let o = off(addr);
            buf[o..o + s.len()].copy_from_slice(s);
            buf[o + s.len()] = 0;
        };
        put_str(buf, self.execfn, p.execfn);
        if let Some(s) = p.platform {
            put_str(buf, self.platform, s);
        }
        let r = off(self.random);
        buf[r..r + 16].copy_from_slice(&p.random);

        put_u64(buf, 0, self.argc as u64);
        let mut addr = self.arg_start;
        for (i, s) in argv.iter().enumerate() {
            put_str(buf, addr, s);
            put_u64(buf, off(self.argv) + i * 8, addr);
            addr += s.len() as u64 + 1;
        }
        for (i, s) in p.envp.iter().enumerate() {
            put_str(buf, addr, s);
            put_u64(buf, off(self.envp) + i * 8, addr);
            addr += s.len() as u64 + 1;
        }
        // The NULL after each pointer array is already zero.

        let mut a = off(self.auxv);
        let mut put_pair = |buf: &mut [u8], k: u64, v: u64| {
            put_u64(buf, a, k);
            put_u64(buf, a + 8, v);
            a += 16;
        };
        let fill = |k: u64, v: u64| match k {
            AT_RANDOM => self.random,
            AT_EXECFN => self.execfn,
            AT_PLATFORM if p.platform.is_some() => self.platform,
            _ => v,
        };
        let mut seen = (false, false, false);
        for &(k, v) in p.auxv.iter().take_while(|&&(k, _)| k != AT_NULL) {
            seen.0 |= k == AT_RANDOM;
            seen.1 |= k == AT_EXECFN;
            seen.2 |= k == AT_PLATFORM;
            put_pair(buf, k, fill(k, v));
        }
        if !seen.0 {
            put_pair(buf, AT_RANDOM, self.random);
        }
        if !seen.1 {
            put_pair(buf, AT_EXECFN, self.execfn);
        }
        if !seen.2 && p.platform.is_some() {
            put_pair(buf, AT_PLATFORM, self.platform);
        }
        put_pair(buf, AT_NULL, 0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uapi::auxv::*;
    use crate::util::bytes::get_u64;
    use std::vec;

    fn cstr_at(img: &[u8], sp: u64, addr: u64) -> &[u8] {
        let o = (addr - sp) as usize;
        let n = img[o..].iter().position(|&c| c == 0).unwrap();
        &img[o..o + n]
    }

    #[test]
    fn exact_linux_layout() {
        let top = 0x0000_ffff_ffff_f000u64;
        let auxv = [
            (AT_HWCAP, 0x3),
            (AT_PAGESZ, 4096),
            (AT_RANDOM, 0),
            (AT_HWCAP2, 0),
            (AT_EXECFN, 0),
            (AT_PLATFORM, 0),
        ];
        let p = StackParams {
            stack_top: top,
            argv: &[b"/init", b"-v"],
            envp: &[b"HOME=/"],
            execfn: b"/init",
            platform: Some(b"aarch64"),
            random: [0xAB; 16],
            auxv: &auxv,
            arg_limit: exec_arg_limit(8 << 20),
        };
        let l = StackLayout::plan(&p).unwrap();
        // Strings: 8 zero bytes, "/init\0" (6), "HOME=/\0" (7), "/init\0-v\0" (9).
        assert_eq!(l.execfn, top - 8 - 6);
        assert_eq!(l.env_start, l.execfn - 7);
        assert_eq!(l.arg_start, l.env_start - 9);
        assert_eq!(l.arg_start, top - 30);
        // Align down to 16, then "aarch64\0", then 16 random bytes.
        assert_eq!(l.platform, top - 32 - 8);
        assert_eq!(l.random, top - 32 - 8 - 16);
        // argc + 2 argv + NULL + 1 envp + NULL + 7 auxv pairs (incl. AT_NULL) = 20 words.
        assert_eq!(l.sp, (l.random - 20 * 8) & !15);
        assert_eq!(l.sp % 16, 0);
        assert_eq!(l.size as u64, top - l.sp);

        let mut img = vec![0xEEu8; l.size];
        l.write(&p, &mut img).unwrap();
        let w = |addr: u64| get_u64(&img, (addr - l.sp) as usize);
        assert_eq!(w(l.sp), 2);
        assert_eq!(l.argv, l.sp + 8);
        assert_eq!(cstr_at(&img, l.sp, w(l.argv)), b"/init");
        assert_eq!(cstr_at(&img, l.sp, w(l.argv + 8)), b"-v");
        assert_eq!(w(l.argv + 16), 0);
        assert_eq!(l.envp, l.sp + 32);
        assert_eq!(cstr_at(&img, l.sp, w(l.envp)), b"HOME=/");
        assert_eq!(w(l.envp + 8), 0);
        assert_eq!(l.auxv, l.sp + 48);
        let pairs: std::vec::Vec<(u64, u64)> = (0..7)
            .map(|i| (w(l.auxv + i * 16), w(l.auxv + i * 16 + 8)))
            .collect();
        assert_eq!(
            pairs,
            [
                (AT_HWCAP, 3),
                (AT_PAGESZ, 4096),
                (AT_RANDOM, l.random),
                (AT_HWCAP2, 0),
                (AT_EXECFN, l.execfn),
                (AT_PLATFORM, l.platform),
                (AT_NULL, 0)
            ]
        );
        assert_eq!(cstr_at(&img, l.sp, l.platform), b"aarch64");
        assert_eq!(cstr_at(&img, l.sp, l.execfn), b"/init");
        let r = (l.random - l.sp) as usize;
        assert_eq!(img[r..r + 16], [0xAB; 16]);
        // Padding between the auxv end and the random bytes, and the top word, are zero.
        assert!(img[(l.auxv + 7 * 16 - l.sp) as usize..r]
            .iter()
            .all(|&b| b == 0));
        assert!(img[img.len() - 8..].iter().all(|&b| b == 0));
    }

    #[test]
    fn missing_aux_keys_are_appended_and_empty_argv_gets_one() {
        let p = StackParams {
            stack_top: 0x10_0000,
            argv: &[],
            envp: &[],
            execfn: b"/bin/x",
            platform: None,
            random: [1; 16],
            auxv: &[(AT_PAGESZ, 4096)],
            arg_limit: ARG_MAX,
        };
        let l = StackLayout::plan(&p).unwrap();
        assert_eq!(l.argc, 1);
        assert_eq!(l.platform, 0);
        let mut img = vec![0u8; l.size];
        l.write(&p, &mut img).unwrap();
        let w = |addr: u64| get_u64(&img, (addr - l.sp) as usize);
        assert_eq!(w(l.sp), 1);
        assert_eq!(cstr_at(&img, l.sp, w(l.argv)), b"");
        assert_eq!(w(l.argv + 8), 0);
        assert_eq!(w(l.envp), 0);
        assert_eq!((w(l.auxv), w(l.auxv + 8)), (AT_PAGESZ, 4096));
        assert_eq!((w(l.auxv + 16), w(l.auxv + 24)), (AT_RANDOM, l.random));
        assert_eq!((w(l.auxv + 32), w(l.auxv + 40)), (AT_EXECFN, l.execfn));
        assert_eq!((w(l.auxv + 48), w(l.auxv + 56)), (AT_NULL, 0));
        assert!(l.auxv + 64 <= l.random);
        let mut small = [0u8; 8];
        assert_eq!(l.write(&p, &mut small), Err(Errno::E2BIG));
    }

    #[test]
    fn e2big_limits() {
        let long = vec![b'a'; MAX_ARG_STRLEN];
        let base = StackParams {
            stack_top: 1 << 40,
            argv: &[b"x"],
            envp: &[],
            execfn: b"/x",
            platform: Some(ELF_PLATFORM),
            random: [0; 16],
            auxv: &[],
            arg_limit: exec_arg_limit(8 << 20),
        };
        let too_long = [&long[..]];
        assert_eq!(
            StackLayout::plan(&StackParams {
                argv: &too_long,
                ..base
            }),
            Err(Errno::E2BIG)
        );
        let just_fits = [&long[..MAX_ARG_STRLEN - 1]];
        assert!(StackLayout::plan(&StackParams {
            argv: &just_fits,
            ..base
        })
        .is_ok());
        // A small limit: strings + pointers must fit.
        let args = [&b"0123456789"[..]; 3];
        let tight = StackParams {
            argv: &args,
            arg_limit: 3 * 8 + 33 + 3,
            ..base
        };
        assert!(StackLayout::plan(&tight).is_ok());
        assert_eq!(
            StackLayout::plan(&StackParams {
                arg_limit: tight.arg_limit - 1,
                ..tight
            }),
            Err(Errno::E2BIG)
        );
        assert_eq!(
            StackLayout::plan(&StackParams {
                stack_top: 64,
                ..base
            }),
            Err(Errno::E2BIG)
        );
        assert_eq!(exec_arg_limit(8 << 20), 2 << 20);
        assert_eq!(exec_arg_limit(u64::MAX), 6 << 20);
        assert_eq!(exec_arg_limit(0), ARG_MAX);
    }
}
