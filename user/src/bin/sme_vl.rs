//! SME vector lengths: PR_SME_SET_VL / PR_SME_GET_VL (EINVAL cases, rounding down to a supported
//! power of two, SVE_VL_MAX, the INHERIT and ONEXEC flags across fork and exec, RDSVL), what a
//! VL change does to ZA (an SME change discards it, an SVE change does not, a same-VL call is not
//! a change; a change made through NT_ARM_ZA while the task is stopped in streaming mode keeps
//! PSTATE.SM) and /proc/sys/abi/sme_default_vector_length (boot value, writes, exec'd children).
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::sme::*;
use svelt_user::sys;
use svelt_user::*;

const SYSCTL: &str = "/proc/sys/abi/sme_default_vector_length";

/// Child mode: exit status = VL/16 | INHERIT (bit 5) | SVCR.ZA (bit 6) | TPIDR2 != 0 (bit 7).
fn report() -> i32 {
    let g = sme_get_vl().unwrap_or(0);
    let mut code = ((g & VL_LEN_MASK) / 16) as i32;
    if g & VL_INHERIT != 0 {
        code |= 1 << 5;
    }
    if svcr() & SVCR_ZA != 0 {
        code |= 1 << 6;
    }
    if tpidr2() != 0 {
        code |= 1 << 7;
    }
    if rdsvl() != g & VL_LEN_MASK {
        return 0xff;
    }
    code
}

/// Execs `--report` in a child and decodes (vl, inherit).
fn exec_report() -> Result<(usize, bool), String> {
    let st = exec_self(&["--report"]).map_err(|e| format!("{e:?}"))?;
    check!(proc::wifexited(st), "report child {}", proc::describe(st));
    let c = proc::wexitstatus(st) as usize;
    check!(c != 0xff, "RDSVL != PR_SME_GET_VL in the exec'd child");
    check_eq!(c & 0xc0, 0, "exec'd child starts with ZA off and TPIDR2 0");
    Ok(((c & 31) * 16, c & 32 != 0))
}

/// Child mode: exec `--report` and pass its status on (a grandchild's view).
fn chain() -> i32 {
    match exec_self(&["--report"]) {
        Ok(st) if proc::wifexited(st) => proc::wexitstatus(st),
        _ => 0xfe,
    }
}

fn rounded(vls: &[usize], want: usize) -> usize {
    let want = want.min(256);
    vls.iter().copied().rfind(|&v| v <= want).unwrap_or(vls[0])
}

fn read_default() -> Result<usize, String> {
    let b = io::read_file(SYSCTL).map_err(|e| format!("read {SYSCTL}: {e:?}"))?;
    let s = core::str::from_utf8(&b).map_err(|_| "not utf-8")?;
    check!(s.ends_with('\n'), "{SYSCTL} reads {s:?}");
    s.trim()
        .parse()
        .map_err(|_| format!("{SYSCTL} reads {s:?}"))
}

fn write_default(v: &str) -> sys::SysResult {
    let fd = sys::open(SYSCTL, sys::O_WRONLY | sys::O_CLOEXEC)?;
    let r = sys::write(fd, v.as_bytes());
    let _ = sys::close(fd);
    r
}

fn get_vl_and_rdsvl() -> TestResult {
    need_sme()?;
    let g = t!(sme_get_vl());
    check_eq!(g & !VL_LEN_MASK, 0, "no flags set at start");
    check_eq!(rdsvl(), g);
    check!(g.is_power_of_two() && (16..=256).contains(&g), "SVL {g}");
    Ok(())
}

fn set_vl_einval() -> TestResult {
    need_sme()?;
    let old = t!(sme_get_vl());
    let other = old ^ 0x30; // any VL: the call fails before looking at it
    for arg in [
        0,
        8,
        17,
        0xffff,
        8192 + 16,
        (1 << 16) | other,
        (1 << 19) | other,
        (1 << 31) | other,
        (1 << 32) | other,
        (1 << 16) | VL_INHERIT | 32,
    ] {
        check_eq!(sme_set_vl(arg), Err(sys::EINVAL), "PR_SME_SET_VL({arg:#x})");
    }
    check_eq!(t!(sme_get_vl()), old, "unchanged by the failures");
    check_eq!(
        prctl(PR_SME_GET_VL, 1).map(|v| v & VL_LEN_MASK),
        Ok(old),
        "GET_VL ignores its argument"
    );
    Ok(())
}

fn set_vl_rounds_down_to_supported() -> TestResult {
    need_sme()?;
    let old = t!(sme_get_vl());
    let vls = sme_vls();
    println!("# SME vector lengths {vls:?}");
    for v in vls.iter() {
        check!(v.is_power_of_two(), "SVL {v} is a power of two");
    }
    for want in (16..=512).step_by(16).chain([1024, 4096, SVE_VL_MAX]) {
        let r = t!(sme_set_vl(want));
        check_eq!(r, rounded(&vls, want), "PR_SME_SET_VL({want})");
        check_eq!(t!(sme_get_vl()), r);
        check_eq!(rdsvl(), r, "RDSVL after setting {want}");
    }
    check_eq!(
        t!(sme_set_vl(SVE_VL_MAX)),
        *vls.last().unwrap(),
        "SVE_VL_MAX"
    );
    t!(sme_set_vl(old));
    Ok(())
}

fn inherit_flag_and_return_values() -> TestResult {
    need_sme()?;
    let old = t!(sme_get_vl());
    let vls = sme_vls();
    let v = vls[0];
    check_eq!(t!(sme_set_vl(v | VL_INHERIT)), v | VL_INHERIT);
    check_eq!(t!(sme_get_vl()), v | VL_INHERIT);
    // fork copies VL and flag.
    let st = t!(proc::in_child(|| i32::from(
        sme_get_vl() != Ok(v | VL_INHERIT)
    )));
    check_eq!(st, 0, "forked child has VL and INHERIT");
    // exec keeps both with INHERIT.
    check_eq!(exec_report()?, (v, true), "exec with INHERIT");
    check_eq!(chain_report()?, (v, true), "and the exec after that");
    // Without INHERIT: fork copies the VL, exec resets it to the default.
    check_eq!(t!(sme_set_vl(v)), v, "a plain set clears INHERIT");
    check_eq!(t!(sme_get_vl()), v);
    let st = t!(proc::in_child(|| i32::from(sme_get_vl() != Ok(v))));
    check_eq!(st, 0);
    let def = read_default()?;
    check_eq!(
        exec_report()?,
        (def, false),
        "exec without INHERIT: default"
    );
    t!(sme_set_vl(old));
    Ok(())
}

fn chain_report() -> Result<(usize, bool), String> {
    let st = exec_self(&["--chain"]).map_err(|e| format!("{e:?}"))?;
    check!(proc::wifexited(st), "chain child {}", proc::describe(st));
    let c = proc::wexitstatus(st) as usize;
    check!(c < 0xc0, "chain child status {c:#x}");
    Ok(((c & 31) * 16, c & 32 != 0))
}

fn onexec_deferred_vl() -> TestResult {
    need_sme()?;
    let old = t!(sme_get_vl());
    let vls = sme_vls();
    let def = read_default()?;
    let target = *vls.iter().find(|&&v| v != def).unwrap_or(&vls[0]);
    check_eq!(
        t!(sme_set_vl(target | SET_VL_ONEXEC)),
        target,
        "ONEXEC returns the deferred VL"
    );
    check_eq!(
        t!(sme_get_vl()),
        old,
        "current VL unchanged, pending VL invisible"
    );
    check_eq!(rdsvl(), old);
    check_eq!(
        exec_report()?,
        (target, false),
        "exec takes the deferred VL"
    );
    check_eq!(
        chain_report()?,
        (def, false),
        "deferred VL reset by exec (no INHERIT)"
    );
    // A plain set cancels a pending ONEXEC.
    t!(sme_set_vl(target | SET_VL_ONEXEC));
    check_eq!(t!(sme_set_vl(old)), old);
    check_eq!(exec_report()?, (def, false), "cancelled");
    // ONEXEC | INHERIT: deferred and inherited on.
    check_eq!(
        t!(sme_set_vl(target | SET_VL_ONEXEC | VL_INHERIT)),
        target | VL_INHERIT
    );
    check_eq!(t!(sme_get_vl()), old | VL_INHERIT);
    check_eq!(exec_report()?, (target, true));
    check_eq!(
        chain_report()?,
        (target, true),
        "INHERIT keeps the deferred VL"
    );
    check_eq!(t!(sme_set_vl(old)), old);
    check_eq!(exec_report()?, (def, false));
    Ok(())
}

fn za_on_with(z: &[u8]) {
    let mut op = Op {
        flags: F_ZA | F_KEEP_ZA | F_TPIDR2,
        tpidr2_in: 0xabcd,
        za_in: z.as_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
}

fn read_za(svl: usize) -> (u64, Vec<u8>) {
    let mut z = vec![0u8; svl * svl];
    let mut op = Op {
        flags: F_KEEP_ZA,
        za_out: z.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    (op.svcr_before, z)
}

fn sme_vl_change_discards_za() -> TestResult {
    need_sme()?;
    let old = t!(sme_get_vl());
    let vls = sme_vls();
    if vls.len() < 2 {
        return ktap::skip("one SME vector length");
    }
    for &v in &vls {
        let other = if v == vls[0] { vls[1] } else { vls[0] };
        check_eq!(t!(sme_set_vl(v)), v);
        let z = pattern(v as u64, v * v);
        za_on_with(&z);
        // Same VL: not a change.
        check_eq!(t!(sme_set_vl(v)), v);
        let (s, got) = read_za(v);
        check_eq!(s, SVCR_ZA, "ZA kept by a same-VL set");
        check!(got == z, "ZA contents kept by a same-VL set");
        // ONEXEC: not a change now.
        check_eq!(t!(sme_set_vl(other | SET_VL_ONEXEC)), other);
        check_eq!(read_za(v).0, SVCR_ZA, "ZA kept by an ONEXEC set");
        // A real change: PSTATE.ZA := 0, TPIDR2 untouched.
        check_eq!(t!(sme_set_vl(other)), other);
        check_eq!(svcr(), 0, "SVL {v} -> {other}: ZA off");
        check_eq!(tpidr2(), 0xabcd, "TPIDR2 untouched by a VL change");
        // ZA turned on again starts zeroed at the new length.
        let (s, got) = {
            let mut op = Op {
                flags: F_ZA,
                za_out: 0,
                ..Op::default()
            };
            let mut z2 = vec![1u8; other * other];
            op.za_out = z2.as_mut_ptr() as usize;
            run(&mut op);
            (op.svl_after, z2)
        };
        check_eq!(s, other as u64);
        check!(got.iter().all(|&b| b == 0), "ZA zero after re-enabling");
        set_tpidr2(0);
    }
    t!(sme_set_vl(old));
    Ok(())
}

fn sve_vl_change_keeps_za() -> TestResult {
    need_sme()?;
    let svls = sve_vls();
    if svls.len() < 2 {
        return ktap::skip("one SVE vector length");
    }
    let (old_sve, svl) = (t!(sve_get_vl()), svl());
    let z = pattern(99, svl * svl);
    za_on_with(&z);
    for &v in svls.iter().rev() {
        t!(sve_set_vl(v));
        let (s, got) = read_za(svl);
        check_eq!(s, SVCR_ZA, "SVE VL {v}: ZA still on");
        check!(got == z, "SVE VL {v}: ZA contents kept");
        check_eq!(t!(sme_get_vl()), svl, "SVL unaffected");
    }
    t!(sve_set_vl(old_sve));
    smstop_za();
    set_tpidr2(0);
    // And the other way round: an SME change leaves the SVE VL alone.
    let svevl = sve_vl();
    for v in sme_vls() {
        t!(sme_set_vl(v));
        check_eq!(sve_vl(), svevl);
    }
    t!(sme_set_vl(svl));
    Ok(())
}

const PTRACE_DETACH: usize = 17;
const PTRACE_GETREGSET: usize = 0x4204;
const PTRACE_SETREGSET: usize = 0x4205;
const PTRACE_SEIZE: usize = 0x4206;
const PTRACE_INTERRUPT: usize = 0x4207;
const NT_ARM_ZA: usize = 0x40c;

fn ptrace(req: usize, pid: i32, addr: usize, data: usize) -> sys::SysResult {
    sys::syscall(117, &[req, pid as usize, addr, data])
}

#[derive(Clone, Copy, Default)]
struct Spin {
    ready: u64,
    go: u64,
    svcr_after: u64,
    svl_after: u64,
    z_ok: u64,
}

/// The only way to change the SVL of a task that is in streaming mode (a syscall would leave
/// it): NT_ARM_ZA written while the task is stopped mid-spin. Linux 6.16+ keeps PSTATE.SM,
/// turns ZA off, keeps V0-V31 and zeroes the rest of the streaming Z and P registers.
fn vl_change_in_streaming_mode_keeps_sm() -> TestResult {
    need_sme()?;
    let vls = sme_vls();
    if vls.len() < 2 {
        return ktap::skip("one SME vector length");
    }
    let svl = svl();
    let other = *vls.iter().find(|&&v| v != svl).unwrap();
    let sh = proc::Shared::new(Spin::default());
    let base = sh.addr() as *mut u64;
    let pid = t!(proc::spawn(|| {
        let zin = z_pattern(1, svl, has_fa64());
        let zain = pattern(2, svl * svl);
        let mut zout = vec![0xaau8; z_image_len(256)];
        let mut op = Op {
            flags: F_SM | F_ZA | if has_fa64() { F_FA64 } else { 0 },
            z_in: zin.as_ptr() as usize,
            za_in: zain.as_ptr() as usize,
            action: A_SPIN_FLAG,
            // SAFETY: `go` is the second word of the shared page.
            spin: unsafe { base.add(1) } as usize,
            z_out: zout.as_mut_ptr() as usize,
            ..Op::default()
        };
        let mut s = sh.get();
        s.ready = 1;
        sh.set(s);
        run(&mut op);
        // V0-V31 (the low 128 bits) survive; the rest of Z and P are zero.
        let vl = op.vl_after as usize;
        let mut want = zeros(ffr_off(vl));
        for r in 0..32 {
            want[r * vl..r * vl + 16].copy_from_slice(&zin[r * svl..r * svl + 16]);
        }
        let mut s = sh.get();
        s.svcr_after = op.svcr_after;
        s.svl_after = op.svl_after;
        s.z_ok = u64::from(zout[..want.len()] == want[..]);
        sh.set(s);
        0
    }));
    while sh.get().ready == 0 {
        sys::sleep_ns(1_000_000);
    }
    sys::sleep_ns(50_000_000); // well inside the spin by now
    let r = (|| -> TestResult {
        match ptrace(PTRACE_SEIZE, pid, 0, 0) {
            Ok(_) => {}
            Err(e) if e == sys::ENOSYS || e == sys::EPERM => {
                return ktap::skip("no ptrace");
            }
            Err(e) => return Err(format!("PTRACE_SEIZE: {e:?}")),
        }
        t!(ptrace(PTRACE_INTERRUPT, pid, 0, 0));
        let (_, st) = t!(sys::waitpid(pid, 0));
        check!(proc::wifstopped(st), "tracee {}", proc::describe(st));
        // user_za_header, header only: VL change and PSTATE.ZA := 0.
        let mut hdr = [0u8; 16];
        hdr[0..4].copy_from_slice(&16u32.to_ne_bytes());
        hdr[8..10].copy_from_slice(&(other as u16).to_ne_bytes());
        let iov = sys::Iovec {
            base: hdr.as_mut_ptr() as usize,
            len: 16,
        };
        t!(ptrace(
            PTRACE_SETREGSET,
            pid,
            NT_ARM_ZA,
            &iov as *const _ as usize
        ));
        let mut back = [0u8; 16];
        let mut iov = sys::Iovec {
            base: back.as_mut_ptr() as usize,
            len: 16,
        };
        t!(ptrace(
            PTRACE_GETREGSET,
            pid,
            NT_ARM_ZA,
            &mut iov as *mut _ as usize
        ));
        check_eq!(
            u16::from_ne_bytes([back[8], back[9]]) as usize,
            other,
            "NT_ARM_ZA vl"
        );
        check_eq!(
            u32::from_ne_bytes([back[0], back[1], back[2], back[3]]),
            16,
            "ZA off"
        );
        Ok(())
    })();
    let mut s = sh.get();
    s.go = 1;
    sh.set(s);
    let _ = ptrace(PTRACE_DETACH, pid, 0, 0);
    let (_, st) = t!(sys::waitpid(pid, 0));
    r?;
    check_eq!(st, 0);
    let s = sh.get();
    println!(
        "# SVL {svl} -> {other} while stopped in streaming mode with ZA on: SVCR {:#x}",
        s.svcr_after
    );
    check_eq!(s.svcr_after, SVCR_SM, "PSTATE.SM kept, PSTATE.ZA cleared");
    check_eq!(s.svl_after as usize, other);
    check_eq!(
        s.z_ok,
        1,
        "V0-V31 kept, the rest of Z and P zeroed by the change"
    );
    Ok(())
}

fn default_vector_length_sysctl() -> TestResult {
    need_sme()?;
    let vls = sme_vls();
    let (min, max) = (vls[0], *vls.last().unwrap());
    let orig = read_default()?;
    let boot = vls.iter().copied().rfind(|&v| v <= 32).unwrap_or(min);
    check_eq!(orig, boot, "boot default: largest <= 32, else the minimum");
    let mut r = Ok(());
    for (w, want) in [
        ("-1", Ok(max)),
        ("16", Ok(rounded(&vls, 16))),
        ("48\n", Ok(rounded(&vls, 48))),
        ("8192", Ok(max)),
        ("4096", Ok(max)),
        ("0", Err(sys::EINVAL)),
        ("17", Err(sys::EINVAL)),
        ("8208", Err(sys::EINVAL)),
        ("-16", Err(sys::EINVAL)),
    ] {
        let before = read_default()?;
        let res = write_default(w);
        let now = read_default()?;
        let got = res.map(|_| now);
        let want_now = *want.as_ref().unwrap_or(&before);
        if got != want || now != want_now {
            r = Err(format!(
                "write {w:?}: got {got:?} (reads {now}), want {want:?}"
            ));
            break;
        }
    }
    // Exec'd children take it; the writer and forked children do not.
    let target = *vls.iter().find(|&&v| v != orig).unwrap_or(&orig);
    if r.is_ok() {
        let cur = t!(sme_get_vl());
        r = write_default(&format!("{target}"))
            .map_err(|e| format!("write {target}: {e:?}"))
            .and_then(|_| {
                check_eq!(t!(sme_get_vl()), cur, "the writer's own VL unchanged");
                check_eq!(exec_report()?, (target, false), "exec'd child");
                Ok(())
            });
    }
    let restore = write_default(&format!("{orig}\n"));
    r?;
    t!(restore);
    check_eq!(read_default()?, orig, "restored");
    check_eq!(exec_report()?, (orig, false));
    Ok(())
}

fn main(args: &rt::Args) -> i32 {
    match args.arg(1) {
        Some("--report") => return report(),
        Some("--chain") => return chain(),
        _ => {}
    }
    ktap::run(&[
        ("get_vl_and_rdsvl", get_vl_and_rdsvl),
        ("set_vl_einval", set_vl_einval),
        (
            "set_vl_rounds_down_to_supported",
            set_vl_rounds_down_to_supported,
        ),
        (
            "inherit_flag_and_return_values",
            inherit_flag_and_return_values,
        ),
        ("onexec_deferred_vl", onexec_deferred_vl),
        ("sme_vl_change_discards_za", sme_vl_change_discards_za),
        ("sve_vl_change_keeps_za", sve_vl_change_keeps_za),
        (
            "vl_change_in_streaming_mode_keeps_sm",
            vl_change_in_streaming_mode_keeps_sm,
        ),
        ("default_vector_length_sysctl", default_vector_length_sysctl),
    ])
}

entry!(main);
