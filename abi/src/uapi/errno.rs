//! Linux error numbers (asm-generic values, which arm64 uses) and the syscall result type.
//!
//! A syscall handler returns `SysResult`; the dispatcher turns `Err(e)` into `-e` in x0. The
//! `ERESTART*` codes above 511 are kernel-internal: they must never reach user space, the signal
//! code rewrites them to `EINTR` or restarts the syscall.

use core::fmt;

macro_rules! errnos {
    ($( $name:ident = $val:literal, $text:literal; )*) => {
        /// An error number. The discriminant is the positive Linux value.
        #[repr(i32)]
        #[allow(clippy::upper_case_acronyms, non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Errno {
            $( #[doc = $text] $name = $val, )*
        }

        impl Errno {
            /// Every error number, in ascending order.
            pub const ALL: &'static [Errno] = &[ $( Errno::$name, )* ];

            /// The error for a positive number, if Svelt names it.
            pub const fn from_raw(v: i32) -> Option<Errno> {
                match v {
                    $( $val => Some(Errno::$name), )*
                    _ => None,
                }
            }

            /// The Linux symbolic name ("ENOENT").
            pub const fn name(self) -> &'static str {
                match self {
                    $( Errno::$name => stringify!($name), )*
                }
            }

            /// The strerror-style text ("No such file or directory").
            pub const fn description(self) -> &'static str {
                match self {
                    $( Errno::$name => $text, )*
                }
            }
        }
    };
}

errnos! {
    EPERM = 1, "Operation not permitted";
    ENOENT = 2, "No such file or directory";
    ESRCH = 3, "No such process";
    EINTR = 4, "Interrupted system call";
    EIO = 5, "I/O error";
    ENXIO = 6, "No such device or address";
    E2BIG = 7, "Argument list too long";
    ENOEXEC = 8, "Exec format error";
    EBADF = 9, "Bad file descriptor";
    ECHILD = 10, "No child processes";
    EAGAIN = 11, "Resource temporarily unavailable";
    ENOMEM = 12, "Out of memory";
    EACCES = 13, "Permission denied";
    EFAULT = 14, "Bad address";
    ENOTBLK = 15, "Block device required";
    EBUSY = 16, "Device or resource busy";
    EEXIST = 17, "File exists";
    EXDEV = 18, "Cross-device link";
    ENODEV = 19, "No such device";
    ENOTDIR = 20, "Not a directory";
    EISDIR = 21, "Is a directory";
    EINVAL = 22, "Invalid argument";
    ENFILE = 23, "File table overflow";
    EMFILE = 24, "Too many open files";
    ENOTTY = 25, "Not a typewriter";
    ETXTBSY = 26, "Text file busy";
    EFBIG = 27, "File too large";
    ENOSPC = 28, "No space left on device";
    ESPIPE = 29, "Illegal seek";
    EROFS = 30, "Read-only file system";
    EMLINK = 31, "Too many links";
    EPIPE = 32, "Broken pipe";
    EDOM = 33, "Math argument out of domain of func";
    ERANGE = 34, "Math result not representable";
    EDEADLK = 35, "Resource deadlock would occur";
    ENAMETOOLONG = 36, "File name too long";
    ENOLCK = 37, "No record locks available";
    ENOSYS = 38, "Invalid system call number";
    ENOTEMPTY = 39, "Directory not empty";
    ELOOP = 40, "Too many symbolic links encountered";
    ENOMSG = 42, "No message of desired type";
    EIDRM = 43, "Identifier removed";
    ECHRNG = 44, "Channel number out of range";
    EL2NSYNC = 45, "Level 2 not synchronized";
    EL3HLT = 46, "Level 3 halted";
    EL3RST = 47, "Level 3 reset";
    ELNRNG = 48, "Link number out of range";
    EUNATCH = 49, "Protocol driver not attached";
    ENOCSI = 50, "No CSI structure available";
    EL2HLT = 51, "Level 2 halted";
    EBADE = 52, "Invalid exchange";
    EBADR = 53, "Invalid request descriptor";
    EXFULL = 54, "Exchange full";
    ENOANO = 55, "No anode";
    EBADRQC = 56, "Invalid request code";
    EBADSLT = 57, "Invalid slot";
    EBFONT = 59, "Bad font file format";
    ENOSTR = 60, "Device not a stream";
    ENODATA = 61, "No data available";
    ETIME = 62, "Timer expired";
    ENOSR = 63, "Out of streams resources";
    ENONET = 64, "Machine is not on the network";
    ENOPKG = 65, "Package not installed";
    EREMOTE = 66, "Object is remote";
    ENOLINK = 67, "Link has been severed";
    EADV = 68, "Advertise error";
    ESRMNT = 69, "Srmount error";
    ECOMM = 70, "Communication error on send";
    EPROTO = 71, "Protocol error";
    EMULTIHOP = 72, "Multihop attempted";
    EDOTDOT = 73, "RFS specific error";
    EBADMSG = 74, "Not a data message";
    EOVERFLOW = 75, "Value too large for defined data type";
    ENOTUNIQ = 76, "Name not unique on network";
    EBADFD = 77, "File descriptor in bad state";
    EREMCHG = 78, "Remote address changed";
    ELIBACC = 79, "Can not access a needed shared library";
    ELIBBAD = 80, "Accessing a corrupted shared library";
    ELIBSCN = 81, ".lib section in a.out corrupted";
    ELIBMAX = 82, "Attempting to link in too many shared libraries";
    ELIBEXEC = 83, "Cannot exec a shared library directly";
    EILSEQ = 84, "Illegal byte sequence";
    ERESTART = 85, "Interrupted system call should be restarted";
    ESTRPIPE = 86, "Streams pipe error";
    EUSERS = 87, "Too many users";
    ENOTSOCK = 88, "Socket operation on non-socket";
    EDESTADDRREQ = 89, "Destination address required";
    EMSGSIZE = 90, "Message too long";
    EPROTOTYPE = 91, "Protocol wrong type for socket";
    ENOPROTOOPT = 92, "Protocol not available";
    EPROTONOSUPPORT = 93, "Protocol not supported";
    ESOCKTNOSUPPORT = 94, "Socket type not supported";
    EOPNOTSUPP = 95, "Operation not supported on transport endpoint";
    EPFNOSUPPORT = 96, "Protocol family not supported";
    EAFNOSUPPORT = 97, "Address family not supported by protocol";
    EADDRINUSE = 98, "Address already in use";
    EADDRNOTAVAIL = 99, "Cannot assign requested address";
    ENETDOWN = 100, "Network is down";
    ENETUNREACH = 101, "Network is unreachable";
    ENETRESET = 102, "Network dropped connection because of reset";
    ECONNABORTED = 103, "Software caused connection abort";
    ECONNRESET = 104, "Connection reset by peer";
    ENOBUFS = 105, "No buffer space available";
    EISCONN = 106, "Transport endpoint is already connected";
    ENOTCONN = 107, "Transport endpoint is not connected";
    ESHUTDOWN = 108, "Cannot send after transport endpoint shutdown";
    ETOOMANYREFS = 109, "Too many references: cannot splice";
    ETIMEDOUT = 110, "Connection timed out";
    ECONNREFUSED = 111, "Connection refused";
    EHOSTDOWN = 112, "Host is down";
    EHOSTUNREACH = 113, "No route to host";
    EALREADY = 114, "Operation already in progress";
    EINPROGRESS = 115, "Operation now in progress";
    ESTALE = 116, "Stale file handle";
    EUCLEAN = 117, "Structure needs cleaning";
    ENOTNAM = 118, "Not a XENIX named type file";
    ENAVAIL = 119, "No XENIX semaphores available";
    EISNAM = 120, "Is a named type file";
    EREMOTEIO = 121, "Remote I/O error";
    EDQUOT = 122, "Quota exceeded";
    ENOMEDIUM = 123, "No medium found";
    EMEDIUMTYPE = 124, "Wrong medium type";
    ECANCELED = 125, "Operation Canceled";
    ENOKEY = 126, "Required key not available";
    EKEYEXPIRED = 127, "Key has expired";
    EKEYREVOKED = 128, "Key has been revoked";
    EKEYREJECTED = 129, "Key was rejected by service";
    EOWNERDEAD = 130, "Owner died";
    ENOTRECOVERABLE = 131, "State not recoverable";
    ERFKILL = 132, "Operation not possible due to RF-kill";
    EHWPOISON = 133, "Memory page has hardware error";
    ERESTARTSYS = 512, "kernel-internal: restart the syscall if the handler has SA_RESTART, else EINTR";
    ERESTARTNOINTR = 513, "kernel-internal: always restart the syscall after a signal";
    ERESTARTNOHAND = 514, "kernel-internal: restart only if no handler ran, else EINTR";
    ENOIOCTLCMD = 515, "kernel-internal: ioctl not handled here (becomes ENOTTY)";
    ERESTART_RESTARTBLOCK = 516, "kernel-internal: restart through restart_syscall (nr 128)";
}

#[allow(non_upper_case_globals)]
impl Errno {
    /// Same number as `EAGAIN`.
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;
    /// Same number as `EDEADLK`.
    pub const EDEADLOCK: Errno = Errno::EDEADLK;
    /// Same number as `EOPNOTSUPP` (user-visible; not the kernel-internal 524).
    pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;

    /// The positive number.
    pub const fn raw(self) -> i32 {
        self as i32
    }

    /// The value a syscall returns in x0 for this error: `-errno`.
    pub const fn as_neg(self) -> isize {
        -(self as i32 as isize)
    }

    /// Decode a raw syscall return value: values in `-4095..=-1` are errors (Linux's
    /// `IS_ERR_VALUE` window), anything else is a success value.
    pub const fn from_ret(ret: isize) -> Option<Errno> {
        if ret < 0 && ret >= -4095 {
            Errno::from_raw(-ret as i32)
        } else {
            None
        }
    }

    /// Is this one of the kernel-internal restart codes that must not reach user space?
    pub const fn is_restart(self) -> bool {
        matches!(
            self,
            Errno::ERESTARTSYS
                | Errno::ERESTARTNOINTR
                | Errno::ERESTARTNOHAND
                | Errno::ERESTART_RESTARTBLOCK
        )
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What every syscall handler returns; `Ok` is the non-negative x0 value.
pub type SysResult<T = usize> = Result<T, Errno>;

/// Encode a handler's result as the x0 value the user sees.
pub fn syscall_ret(r: SysResult) -> usize {
    match r {
        Ok(v) => v,
        Err(e) => e.as_neg() as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    #[test]
    fn values_match_linux() {
        assert_eq!(Errno::EPERM as i32, 1);
        assert_eq!(Errno::EINTR as i32, 4);
        assert_eq!(Errno::EAGAIN as i32, 11);
        assert_eq!(Errno::EFAULT as i32, 14);
        assert_eq!(Errno::EINVAL as i32, 22);
        assert_eq!(Errno::ENOSYS as i32, 38);
        assert_eq!(Errno::ELOOP as i32, 40);
        assert_eq!(Errno::EOVERFLOW as i32, 75);
        assert_eq!(Errno::ENOTSUP as i32, 95);
        assert_eq!(Errno::ETIMEDOUT as i32, 110);
        assert_eq!(Errno::EHWPOISON as i32, 133);
        assert_eq!(Errno::ERESTARTSYS as i32, 512);
        assert_eq!(Errno::ERESTART_RESTARTBLOCK as i32, 516);
    }

    #[test]
    fn table_is_sorted_and_round_trips() {
        for w in Errno::ALL.windows(2) {
            assert!(w[0] < w[1]);
        }
        for &e in Errno::ALL {
            assert_eq!(Errno::from_raw(e.raw()), Some(e));
            assert!(e.name().starts_with('E'));
        }
        assert_eq!(Errno::from_raw(41), None);
        assert_eq!(Errno::from_raw(58), None);
        assert_eq!(Errno::from_raw(0), None);
    }

    #[test]
    fn negative_encoding() {
        assert_eq!(Errno::ENOENT.as_neg(), -2);
        assert_eq!(syscall_ret(Err(Errno::EBADF)), (-9isize) as usize);
        assert_eq!(syscall_ret(Ok(7)), 7);
        assert_eq!(Errno::from_ret(-22), Some(Errno::EINVAL));
        assert_eq!(Errno::from_ret(0), None);
        assert_eq!(Errno::from_ret(-5000), None);
        assert!(Errno::ERESTARTNOHAND.is_restart());
        assert!(!Errno::EINTR.is_restart());
    }

    #[test]
    fn display_is_the_name() {
        assert_eq!(format!("{}", Errno::ENAMETOOLONG), "ENAMETOOLONG");
        assert_eq!(Errno::ENOENT.description(), "No such file or directory");
    }
}
