//! prctl(PR_SVE_SET_VL / PR_SME_SET_VL) arguments and the default-VL sysctl text.

use super::util::Take;
use std::format;
use std::vec::Vec;
use svelt_abi::fp::vl::VlSet;
use svelt_abi::fp::vlctl::*;
use svelt_abi::uapi::errno::Errno;
use svelt_abi::uapi::sys::{PR_SVE_SET_VL_ONEXEC, PR_SVE_VL_INHERIT, PR_SVE_VL_LEN_MASK};

/// The lengths a request may end at: the supported set, plus 16 bytes for SVE.
fn usable(kind: VecKind, set: VlSet) -> VlSet {
    let mut s = set;
    if kind == VecKind::Sve && !s.is_empty() {
        s.insert_bytes(16);
    }
    s
}

/// SET_VL with an arbitrary argument, then GET_VL, exec and fork; the sysctl parser on the
/// rest of the input.
///
/// Input: kind, the supported set, the task's state, the prctl argument, then sysctl text.
///
/// Asserts: a request is refused exactly when the extension is absent, a flag is unknown or
/// the length is not a valid VL; an accepted one ends at a usable length: the largest not
/// above min(request, 256), else the smallest; only a plain request changes the live length,
/// and only to a new value; the return value is the length shown plus INHERIT; GET_VL, exec
/// and fork follow from the new state. The sysctl parser never consumes more than it was
/// given, re-parses its own consumed prefix identically, reads back every number it prints,
/// and a default it accepts is a usable length.
pub fn vlctl(data: &[u8]) {
    let mut t = Take::new(data);
    let kind = if t.bool() { VecKind::Sme } else { VecKind::Sve };
    let set = VlSet::from_bits(t.u16());
    let u = usable(kind, set);
    let round =
        |v: u8| find_supported_vector_length(kind, set, u32::from(v % 17) * 16).unwrap_or(0);
    let task = TaskVl {
        cur: round(t.u8()),
        onexec: if t.bool() { round(t.u8()) } else { 0 },
        inherit: t.bool(),
    };
    let arg = match t.u8() % 4 {
        // Mostly a length with known flags.
        0 | 1 => u64::from(t.u16()) | (t.u64() & (PR_SVE_VL_INHERIT | PR_SVE_SET_VL_ONEXEC)),
        2 => (u64::from(t.u8()) * 16) | (t.u64() & (PR_SVE_VL_INHERIT | PR_SVE_SET_VL_ONEXEC)),
        _ => t.u64(),
    };

    let flags = arg & !PR_SVE_VL_LEN_MASK;
    let req = (arg & PR_SVE_VL_LEN_MASK) as u32;
    let valid = !set.is_empty()
        && flags & !(PR_SVE_VL_INHERIT | PR_SVE_SET_VL_ONEXEC) == 0
        && req.is_multiple_of(16)
        && (16..=8192).contains(&req);
    match set_vl(kind, arg, set, &task) {
        Err(e) => {
            assert_eq!(e, Errno::EINVAL);
            assert!(!valid, "refused {arg:#x}");
        }
        Ok(r) => {
            assert!(valid, "accepted {arg:#x}");
            let capped = req.min(VL_ARCH_MAX);
            let vl = u
                .iter_bytes()
                .rfind(|&v| v <= capped)
                .or(u.min_bytes())
                .unwrap();
            let onexec = flags & PR_SVE_SET_VL_ONEXEC != 0;
            let inherit = flags & PR_SVE_VL_INHERIT != 0;
            assert!(u.contains_bytes(vl));
            match r.live_change {
                Some(v) => assert!(!onexec && v == vl && v != task.cur),
                None => assert!(onexec || vl == task.cur),
            }
            assert_eq!(r.new.cur, if onexec { task.cur } else { vl });
            assert_eq!(r.new.inherit, inherit);
            assert_eq!(r.new.onexec, if onexec || inherit { vl } else { 0 });
            let shown = if onexec { r.new.onexec } else { r.new.cur };
            assert_eq!(
                r.ret,
                u64::from(shown) | if inherit { PR_SVE_VL_INHERIT } else { 0 }
            );
            let g = get_vl(&r.new);
            assert_eq!(g & PR_SVE_VL_LEN_MASK, u64::from(r.new.cur));
            if !onexec {
                assert_eq!(g, r.ret);
            }
            let def = boot_default(kind, set);
            assert!(u.contains_bytes(def));
            let e = on_exec(&r.new, def);
            assert_eq!(e.cur, if r.new.onexec != 0 { r.new.onexec } else { def });
            assert_eq!(e.inherit, r.new.inherit);
            assert_eq!(on_fork(&r.new), r.new);
            // A second identical request is not a change.
            let again = set_vl(kind, arg, set, &r.new).unwrap();
            assert_eq!(again.live_change, None);
        }
    }

    let text = t.rest();
    dointvec(text);
    match default_vl_write(kind, text, set) {
        Ok((vl, used)) => {
            assert!(u.contains_bytes(vl), "default {vl} not usable");
            assert_eq!(parse_dointvec(text).map(|r| r.1), Ok(used));
            let mut buf = [0u8; 16];
            let n = default_vl_read(vl, &mut buf);
            assert_eq!(parse_dointvec(&buf[..n]), Ok((vl as i32, n)));
            assert_eq!(buf[n - 1], b'\n');
        }
        Err(e) => assert_eq!(e, Errno::EINVAL),
    }
}

fn dointvec(text: &[u8]) {
    if let Ok((v, used)) = parse_dointvec(text) {
        assert!(used > 0 && used <= text.len());
        assert_eq!(parse_dointvec(&text[..used]), Ok((v, used)));
        // Leading white space, an optional '-', digits: the value in some base.
        let s = &text[..used.min(4095)];
        assert!(s.iter().any(u8::is_ascii_digit));
    }
    // Every i32 as the kernel prints it reads back, in decimal, hex and octal, with the
    // separators proc_dointvec allows.
    let v = i32::from_le_bytes(
        text.iter()
            .chain([0u8; 4].iter())
            .take(4)
            .copied()
            .collect::<Vec<u8>>()
            .try_into()
            .unwrap(),
    );
    for (s, end) in [
        (format!("{v}"), ""),
        (format!("  {v}\n"), ""),
        (format!("{v}\tjunk"), "junk"),
    ] {
        let used = s.len() - end.len();
        assert_eq!(parse_dointvec(s.as_bytes()), Ok((v, used)), "{s:?}");
    }
    if v >= 0 {
        assert_eq!(
            parse_dointvec(format!("{v:#x}").as_bytes()).map(|r| r.0),
            Ok(v)
        );
        assert_eq!(
            parse_dointvec(format!("0{v:o}").as_bytes()).map(|r| r.0),
            Ok(v)
        );
    }
    // Out of int range (ten more digits), trailing junk, a '+' sign.
    let big = if v != 0 {
        format!("{v}0000000000")
    } else {
        format!("{}", 1u64 << 31)
    };
    for bad in [format!("{v}x"), format!("+{v}"), big] {
        if bad.len() < 21 {
            assert!(parse_dointvec(bad.as_bytes()).is_err(), "{bad:?} accepted");
        }
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (kind, bits, arg) in [
        (0u8, 0xffffu16, 64u64),
        (0, 0x000b, 128 | PR_SVE_SET_VL_ONEXEC),
        (1, 0x0082, 48 | PR_SVE_VL_INHERIT),
        (1, 0x0000, 32),
    ] {
        let mut v = vec![kind];
        v.extend_from_slice(&bits.to_le_bytes());
        v.extend_from_slice(&[4, 1, 8, 1, 3]);
        v.extend_from_slice(&arg.to_le_bytes());
        v.extend_from_slice(b" 0x40\n");
        out.push(v);
    }
    out
}
