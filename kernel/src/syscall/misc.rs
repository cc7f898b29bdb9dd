//! uname, getrandom, reboot, sysinfo, getcpu, syslog.

#![forbid(unsafe_code)]

use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::process::CurrentTask;
use crate::uts::RELEASE;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::sys;

pub fn uname(buf: usize) -> SysResult<usize> {
    let (host, len) = crate::uts::hostname();
    let u = sys::Utsname {
        sysname: b"Linux",
        nodename: &host[..len],
        release: RELEASE.as_bytes(),
        version: b"#1 SMP Svelt",
        machine: b"aarch64",
        domainname: b"(none)",
    };
    UserPtr::new(buf).write(&u.to_bytes())?;
    Ok(0)
}

/// sethostname: for a privileged caller (uid 0 stands for CAP_SYS_ADMIN), at most 64 bytes.
pub fn sethostname(cur: &CurrentTask, name: usize, len: usize) -> SysResult<usize> {
    use core::sync::atomic::Ordering;
    if cur.process().euid.load(Ordering::Relaxed) != 0 {
        return Err(Errno::EPERM);
    }
    if len > crate::uts::NEW_UTS_LEN {
        return Err(Errno::EINVAL);
    }
    let mut buf = [0u8; crate::uts::NEW_UTS_LEN];
    UserSlice::new(name, len)
        .copy_in(&mut buf[..len])
        .map_err(|_| Errno::EFAULT)?;
    crate::uts::set_hostname(&buf[..len])?;
    Ok(0)
}

pub fn getrandom(cur: &CurrentTask, buf: usize, len: usize, flags: u32) -> SysResult<usize> {
    const GRND_NONBLOCK: u32 = 1;
    const GRND_RANDOM: u32 = 2;
    const GRND_INSECURE: u32 = 4;
    if flags & !(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE) != 0
        || flags & (GRND_RANDOM | GRND_INSECURE) == (GRND_RANDOM | GRND_INSECURE)
    {
        return Err(Errno::EINVAL);
    }
    // Linux caps a request at INT_MAX bytes.
    let user = UserSlice::new(buf, len.min(i32::MAX as usize));
    user.check()?;
    crate::fs::dev::fill_random_user(cur, user)
}

pub fn reboot(cur: &CurrentTask, magic1: u32, magic2: u32, cmd: u32) -> SysResult<usize> {
    sys::reboot_check_magic(magic1, magic2)?;
    match cmd {
        sys::LINUX_REBOOT_CMD_POWER_OFF
        | sys::LINUX_REBOOT_CMD_HALT
        | sys::LINUX_REBOOT_CMD_RESTART
        | sys::LINUX_REBOOT_CMD_RESTART2 => {
            log::info!("reboot(cur, {cmd:#x}) from pid {}: powering off", cur.pid());
            crate::power::exit(0)
        }
        sys::LINUX_REBOOT_CMD_CAD_ON | sys::LINUX_REBOOT_CMD_CAD_OFF => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

pub fn sysinfo(buf: usize) -> SysResult<usize> {
    let info = sys::Sysinfo {
        uptime: (crate::time::now_ns() / 1_000_000_000) as i64,
        totalram: (crate::mm::frame::total() * 4096) as u64,
        freeram: (crate::mm::frame::free_count() * 4096) as u64,
        procs: crate::process::all_processes().len() as u16,
        mem_unit: 1,
        ..Default::default()
    };
    UserPtr::new(buf).write(&info)?;
    Ok(0)
}

pub fn getcpu(cpu: usize, node: usize) -> SysResult<usize> {
    let id = crate::percpu::cpu_id() as u32;
    if cpu != 0 {
        UserPtr::new(cpu).write(&id)?;
    }
    if node != 0 {
        UserPtr::new(node).write(&0u32)?;
    }
    Ok(0)
}

/// syslog(cur, 2) (klogctl): the kernel log for root (Debian's kernels restrict it, dmesg_restrict=1,
/// so others get EPERM), Linux's do_syslog.
pub fn syslog(cur: &CurrentTask, action: i32, buf: usize, len: i32) -> SysResult<usize> {
    use crate::klog::syslog as s;
    use core::sync::atomic::Ordering;
    use svelt_abi::uapi::klog::SyslogAction as A;
    use svelt_abi::uapi::klog::SyslogAction;
    let action = SyslogAction::from_raw(action)?;
    if cur.process().euid.load(Ordering::Relaxed) != 0 {
        return Err(Errno::EPERM);
    }
    let reading = matches!(action, A::Read | A::ReadAll | A::ReadClear);
    if reading {
        if buf == 0 || len < 0 {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        UserSlice::new(buf, len as usize).check()?;
    }
    let copy = |text: alloc::vec::Vec<u8>| -> SysResult<usize> {
        UserSlice::new(buf, text.len())
            .copy_out(&text)
            .map_err(|p| p.err)?;
        Ok(text.len())
    };
    match action {
        A::Close | A::Open => Ok(0),
        A::Read => {
            while !s::unread() {
                crate::klog::pause(crate::task::wait::sleep_until)?;
            }
            copy(s::read(len as usize)?)
        }
        A::ReadAll => copy(s::read_all(len as usize, false)?),
        A::ReadClear => copy(s::read_all(len as usize, true)?),
        A::Clear => {
            s::clear();
            Ok(0)
        }
        A::ConsoleOff => {
            s::console_off();
            Ok(0)
        }
        A::ConsoleOn => {
            s::console_on();
            Ok(0)
        }
        A::ConsoleLevel => s::console_level(len as usize).map(|()| 0),
        A::SizeUnread => s::size_unread(),
        A::SizeBuffer => Ok(crate::klog::RING_SIZE),
    }
}
