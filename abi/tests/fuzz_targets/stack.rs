//! execve's initial stack: argv, envp and the exec file name come from the caller.

use super::util::Take;
use std::vec;
use std::vec::Vec;
use svelt_abi::format::stack::*;
use svelt_abi::uapi::auxv::*;
use svelt_abi::uapi::errno::Errno;
use svelt_abi::util::bytes::get_u64;

const STACK_TOP: u64 = 0x0000_ffff_ffff_0000;

fn cstr(img: &[u8], sp: u64, addr: u64) -> &[u8] {
    assert!(addr >= sp, "pointer below the stack");
    let o = (addr - sp) as usize;
    let n = img[o..]
        .iter()
        .position(|&c| c == 0)
        .expect("unterminated string");
    &img[o..o + n]
}

/// `StackLayout::plan` and `write` for arbitrary argv/envp/file name, then the image read
/// back the way a C runtime reads it.
///
/// Input: counts and flags, the stack rlimit, then the strings (a length byte, then bytes).
///
/// Asserts: refused (E2BIG) only when a string holds a NUL or is over MAX_ARG_STRLEN, the
/// strings and pointers exceed the limit, or the image does not fit below the stack top; an
/// accepted image is exactly `size` bytes, 16-aligned at SP, and reads back: argc, argv
/// (with "" for an empty argv), envp, the strings inside their ranges, the auxv with the
/// caller's entries in order and AT_RANDOM, AT_EXECFN and AT_PLATFORM pointing at the right
/// bytes, then AT_NULL, and 8 zero bytes at the top.
pub fn stack(data: &[u8]) {
    let mut t = Take::new(data);
    let argc = usize::from(t.u8() % 24);
    let envc = usize::from(t.u8() % 24);
    let flags = t.u8();
    let rlimit = match t.u8() % 4 {
        0 => t.u64(),
        1 => u64::MAX,
        _ => 8 << 20,
    };
    let top = if flags & 1 != 0 {
        u64::from(t.u32()) & !15
    } else {
        STACK_TOP
    };
    let mut strs: Vec<Vec<u8>> = Vec::new();
    for i in 0..argc + envc + 1 {
        let len = usize::from(t.u8());
        let mut s = t.bytes(len).to_vec();
        if flags & 2 == 0 {
            s.retain(|&c| c != 0);
        }
        // Sometimes a string right at the length limit, or over it.
        if flags & 4 != 0 && i == argc / 2 {
            s = vec![b'A'; MAX_ARG_STRLEN - 1 + usize::from(flags >> 7)];
        }
        strs.push(s);
    }
    let execfn = strs.pop().unwrap();
    let refs: Vec<&[u8]> = strs.iter().map(|s| &s[..]).collect();
    let (argv, envp) = refs.split_at(argc);
    let platform: Option<&[u8]> = if flags & 8 != 0 {
        None
    } else {
        Some(b"aarch64")
    };
    let random: [u8; 16] = core::array::from_fn(|i| i as u8 ^ flags);
    // A kernel-like auxv; sometimes naming the three filled-in keys itself.
    let mut auxv = vec![(AT_HWCAP, 0x1234), (AT_PAGESZ, 4096), (AT_PHDR, 0x40_0040)];
    if flags & 16 != 0 {
        auxv.insert(1, (AT_RANDOM, 0));
        auxv.push((AT_EXECFN, 0));
        auxv.push((AT_PLATFORM, 7));
    }
    auxv.push((AT_MINSIGSTKSZ, 5120));
    let p = StackParams {
        stack_top: top,
        argv,
        envp,
        execfn: &execfn,
        platform,
        random,
        auxv: &auxv,
        arg_limit: exec_arg_limit(rlimit),
    };
    let limit = exec_arg_limit(rlimit);
    assert!(limit >= ARG_MAX && limit <= (STK_LIM_Q3 as usize).max(ARG_MAX));

    let bad_str = refs
        .iter()
        .copied()
        .chain([&execfn[..]])
        .any(|s| s.len() + 1 > MAX_ARG_STRLEN || s.contains(&0));
    let n_argv = argv.len().max(1);
    let strings: usize = argv.iter().chain(envp).map(|s| s.len() + 1).sum::<usize>()
        + execfn.len()
        + 1
        + if argv.is_empty() { 1 } else { 0 };
    let over = strings + 8 * (n_argv + envp.len()) > limit;

    let l = match StackLayout::plan(&p) {
        Ok(l) => l,
        Err(e) => {
            assert_eq!(e, Errno::E2BIG);
            assert!(bad_str || over || top < (1 << 32), "refused a fitting exec");
            return;
        }
    };
    assert!(!bad_str && !over, "accepted over-long arguments");
    assert!(l.sp.is_multiple_of(16) && l.sp < top);
    assert_eq!(l.size as u64, top - l.sp);
    assert_eq!(l.argc, n_argv);
    let mut img = vec![0x77u8; l.size + 16];
    l.write(&p, &mut img).unwrap();
    assert!(img[l.size..].iter().all(|&b| b == 0x77), "write past size");
    let img = &img[..l.size];
    assert!(img[l.size - 8..].iter().all(|&b| b == 0));
    let word = |addr: u64| get_u64(img, (addr - l.sp) as usize);

    assert_eq!(word(l.sp), n_argv as u64);
    assert_eq!(l.argv, l.sp + 8);
    let empty: [&[u8]; 1] = [b""];
    let want_argv: &[&[u8]] = if argv.is_empty() { &empty } else { argv };
    for (i, s) in want_argv.iter().enumerate() {
        let a = word(l.argv + 8 * i as u64);
        assert!(a >= l.arg_start && a < l.arg_end);
        assert_eq!(cstr(img, l.sp, a), *s);
    }
    assert_eq!(word(l.argv + 8 * n_argv as u64), 0);
    assert_eq!(l.envp, l.argv + 8 * (n_argv as u64 + 1));
    for (i, s) in envp.iter().enumerate() {
        let a = word(l.envp + 8 * i as u64);
        assert!(a >= l.env_start && a < l.env_end);
        assert_eq!(cstr(img, l.sp, a), *s);
    }
    assert_eq!(word(l.envp + 8 * envp.len() as u64), 0);
    assert_eq!(l.auxv, l.envp + 8 * (envp.len() as u64 + 1));
    assert_eq!(l.arg_end, l.env_start);
    assert_eq!(l.env_end, l.execfn);
    assert_eq!(cstr(img, l.sp, l.execfn), &execfn[..]);
    assert_eq!(l.execfn + execfn.len() as u64 + 1 + 8, top);

    let mut got = Vec::new();
    let mut a = l.auxv;
    loop {
        let (k, v) = (word(a), word(a + 8));
        a += 16;
        if k == AT_NULL {
            break;
        }
        got.push((k, v));
    }
    assert!(a <= l.random, "auxv runs into the strings");
    let find = |k| got.iter().find(|e| e.0 == k).map(|e| e.1);
    let r = find(AT_RANDOM).expect("no AT_RANDOM");
    assert_eq!(r, l.random);
    assert_eq!(
        &img[(r - l.sp) as usize..(r - l.sp) as usize + 16],
        &random[..]
    );
    assert_eq!(find(AT_EXECFN), Some(l.execfn));
    match platform {
        Some(pl) => assert_eq!(cstr(img, l.sp, find(AT_PLATFORM).unwrap()), pl),
        None => assert_eq!(
            find(AT_PLATFORM),
            if flags & 16 != 0 { Some(7) } else { None }
        ),
    }
    let filled = [AT_RANDOM, AT_EXECFN, AT_PLATFORM];
    let mine: Vec<(u64, u64)> = got
        .iter()
        .copied()
        .filter(|e| !filled.contains(&e.0))
        .collect();
    let given: Vec<(u64, u64)> = auxv
        .iter()
        .copied()
        .filter(|e| !filled.contains(&e.0))
        .collect();
    assert_eq!(mine, given);
    if flags & 16 != 0 {
        // The caller's order is kept for the keys it named.
        assert_eq!(got[1].0, AT_RANDOM);
    }
}

/// Three quarters of the default 8 MiB stack: the most argument space exec allows.
const STK_LIM_Q3: u64 = (8 << 20) / 4 * 3;

pub fn seeds() -> Vec<Vec<u8>> {
    let mut v = vec![3, 2, 0, 2];
    for s in [
        &b"/bin/prog"[..],
        b"-v",
        b"arg with spaces",
        b"HOME=/root",
        b"PATH=/bin",
        b"/bin/prog",
    ] {
        v.push(s.len() as u8);
        v.extend_from_slice(s);
    }
    let mut w = vec![0, 0, 16 | 8, 1];
    w.push(4);
    w.extend_from_slice(b"/x/y");
    vec![v, w]
}
