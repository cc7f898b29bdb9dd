//! The loopback interface's flags and the interface ioctls (SIOCGIFFLAGS and friends).

#![forbid(unsafe_code)]

use super::*;

/// lo's interface flags: up (and running) from boot.
static LO_FLAGS: AtomicU32 = AtomicU32::new(IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP);

pub fn lo_flags() -> u32 {
    LO_FLAGS.load(Ordering::Relaxed)
}

/// Sets the bits of `flags` that `change` selects (only IFF_UP can change; RUNNING and
/// LOWER_UP follow it, as on lo).
pub fn set_lo_flags(flags: u32, change: u32) {
    if change & IFF_UP == 0 {
        return;
    }
    let f = if flags & IFF_UP != 0 {
        IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP
    } else {
        IFF_LOOPBACK
    };
    LO_FLAGS.store(f, Ordering::Relaxed);
}

/// The interface ioctls on a `struct ifreq` (a name, then a union): SIOCGIFFLAGS and
/// SIOCSIFFLAGS (flags as a short), SIOCGIFINDEX, SIOCGIFMTU, SIOCGIFTXQLEN (an int), and
/// SIOCGIFNAME (the name of an index). lo is the one interface.
pub fn ifreq_ioctl(cur: &dyn Caller, cmd: u32, arg: usize) -> SysResult<usize> {
    const SIOCGIFNAME: u32 = 0x8910;
    const SIOCGIFFLAGS: u32 = 0x8913;
    const SIOCSIFFLAGS: u32 = 0x8914;
    const SIOCGIFMTU: u32 = 0x8921;
    const SIOCGIFINDEX: u32 = 0x8933;
    const SIOCGIFTXQLEN: u32 = 0x8942;
    if !matches!(
        cmd,
        SIOCGIFNAME | SIOCGIFFLAGS | SIOCSIFFLAGS | SIOCGIFMTU | SIOCGIFINDEX | SIOCGIFTXQLEN
    ) {
        return Err(Errno::ENOTTY);
    }
    let mut ifr = [0u8; 40];
    UserSlice::new(arg, 40).copy_in(&mut ifr)?;
    if cmd == SIOCGIFNAME {
        if i32::from_ne_bytes(ifr[16..20].try_into().unwrap()) != 1 {
            return Err(Errno::ENODEV);
        }
        UserSlice::new(arg, 3).copy_out(b"lo\0")?;
        return Ok(0);
    }
    let name = ifr[..16].split(|&c| c == 0).next().unwrap_or(&[]);
    if name != b"lo" {
        return Err(Errno::ENODEV);
    }
    let int = |v: u32| UserSlice::new(arg + 16, 4).copy_out(&v.to_ne_bytes());
    match cmd {
        // ifr_flags is a short: LOWER_UP (bit 16) does not fit, as on Linux.
        SIOCGIFFLAGS => {
            let f = (lo_flags() & 0xffff) as u16;
            UserSlice::new(arg + 16, 2).copy_out(&f.to_ne_bytes())?;
        }
        SIOCGIFMTU => int(stack::LO_MTU)?,
        SIOCGIFINDEX => int(1)?,
        SIOCGIFTXQLEN => int(1000)?,
        _ => {
            if cur.euid() != 0 {
                return Err(Errno::EPERM);
            }
            set_lo_flags(u16::from_ne_bytes([ifr[16], ifr[17]]) as u32, IFF_UP);
        }
    }
    Ok(0)
}
