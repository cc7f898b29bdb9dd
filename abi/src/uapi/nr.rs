//! arm64 syscall numbers (the asm-generic table, `include/uapi/asm-generic/unistd.h`).
//!
//! arm64 has no architecture-specific calls in the 244..=259 window, and 295..=423 are the
//! 32-bit time64 variants that 64-bit kernels do not have. Each constant is Linux's `__NR_x`
//! upper-cased: `nr::READ` is `__NR_read`.

macro_rules! syscalls {
    ($( $name:ident = $val:literal, $text:literal; )*) => {
        $( #[doc = concat!("`__NR_", $text, "`")] pub const $name: usize = $val; )*

        /// The Linux name of a syscall number ("openat"), for logs and traces.
        pub const fn name(nr: usize) -> Option<&'static str> {
            match nr {
                $( $val => Some($text), )*
                _ => None,
            }
        }

        /// Every (number, name) pair, ascending.
        pub const ALL: &[(usize, &str)] = &[ $( ($val, $text), )* ];
    };
}

syscalls! {
    IO_SETUP = 0, "io_setup";
    IO_DESTROY = 1, "io_destroy";
    IO_SUBMIT = 2, "io_submit";
    IO_CANCEL = 3, "io_cancel";
    IO_GETEVENTS = 4, "io_getevents";
    SETXATTR = 5, "setxattr";
    LSETXATTR = 6, "lsetxattr";
    FSETXATTR = 7, "fsetxattr";
    GETXATTR = 8, "getxattr";
    LGETXATTR = 9, "lgetxattr";
    FGETXATTR = 10, "fgetxattr";
    LISTXATTR = 11, "listxattr";
    LLISTXATTR = 12, "llistxattr";
    FLISTXATTR = 13, "flistxattr";
    REMOVEXATTR = 14, "removexattr";
    LREMOVEXATTR = 15, "lremovexattr";
    FREMOVEXATTR = 16, "fremovexattr";
    GETCWD = 17, "getcwd";
    LOOKUP_DCOOKIE = 18, "lookup_dcookie";
    EVENTFD2 = 19, "eventfd2";
    EPOLL_CREATE1 = 20, "epoll_create1";
    EPOLL_CTL = 21, "epoll_ctl";
    EPOLL_PWAIT = 22, "epoll_pwait";
    DUP = 23, "dup";
    DUP3 = 24, "dup3";
    FCNTL = 25, "fcntl";
    INOTIFY_INIT1 = 26, "inotify_init1";
    INOTIFY_ADD_WATCH = 27, "inotify_add_watch";
    INOTIFY_RM_WATCH = 28, "inotify_rm_watch";
    IOCTL = 29, "ioctl";
    IOPRIO_SET = 30, "ioprio_set";
    IOPRIO_GET = 31, "ioprio_get";
    FLOCK = 32, "flock";
    MKNODAT = 33, "mknodat";
    MKDIRAT = 34, "mkdirat";
    UNLINKAT = 35, "unlinkat";
    SYMLINKAT = 36, "symlinkat";
    LINKAT = 37, "linkat";
    RENAMEAT = 38, "renameat";
    UMOUNT2 = 39, "umount2";
    MOUNT = 40, "mount";
    PIVOT_ROOT = 41, "pivot_root";
    NFSSERVCTL = 42, "nfsservctl";
    STATFS = 43, "statfs";
    FSTATFS = 44, "fstatfs";
    TRUNCATE = 45, "truncate";
    FTRUNCATE = 46, "ftruncate";
    FALLOCATE = 47, "fallocate";
    FACCESSAT = 48, "faccessat";
    CHDIR = 49, "chdir";
    FCHDIR = 50, "fchdir";
    CHROOT = 51, "chroot";
    FCHMOD = 52, "fchmod";
    FCHMODAT = 53, "fchmodat";
    FCHOWNAT = 54, "fchownat";
    FCHOWN = 55, "fchown";
    OPENAT = 56, "openat";
    CLOSE = 57, "close";
    VHANGUP = 58, "vhangup";
    PIPE2 = 59, "pipe2";
    QUOTACTL = 60, "quotactl";
    GETDENTS64 = 61, "getdents64";
    LSEEK = 62, "lseek";
    READ = 63, "read";
    WRITE = 64, "write";
    READV = 65, "readv";
    WRITEV = 66, "writev";
    PREAD64 = 67, "pread64";
    PWRITE64 = 68, "pwrite64";
    PREADV = 69, "preadv";
    PWRITEV = 70, "pwritev";
    SENDFILE = 71, "sendfile";
    PSELECT6 = 72, "pselect6";
    PPOLL = 73, "ppoll";
    SIGNALFD4 = 74, "signalfd4";
    VMSPLICE = 75, "vmsplice";
    SPLICE = 76, "splice";
    TEE = 77, "tee";
    READLINKAT = 78, "readlinkat";
    NEWFSTATAT = 79, "newfstatat";
    FSTAT = 80, "fstat";
    SYNC = 81, "sync";
    FSYNC = 82, "fsync";
    FDATASYNC = 83, "fdatasync";
    SYNC_FILE_RANGE = 84, "sync_file_range";
    TIMERFD_CREATE = 85, "timerfd_create";
    TIMERFD_SETTIME = 86, "timerfd_settime";
    TIMERFD_GETTIME = 87, "timerfd_gettime";
    UTIMENSAT = 88, "utimensat";
    ACCT = 89, "acct";
    CAPGET = 90, "capget";
    CAPSET = 91, "capset";
    PERSONALITY = 92, "personality";
    EXIT = 93, "exit";
    EXIT_GROUP = 94, "exit_group";
    WAITID = 95, "waitid";
    SET_TID_ADDRESS = 96, "set_tid_address";
    UNSHARE = 97, "unshare";
    FUTEX = 98, "futex";
    SET_ROBUST_LIST = 99, "set_robust_list";
    GET_ROBUST_LIST = 100, "get_robust_list";
    NANOSLEEP = 101, "nanosleep";
    GETITIMER = 102, "getitimer";
    SETITIMER = 103, "setitimer";
    KEXEC_LOAD = 104, "kexec_load";
    INIT_MODULE = 105, "init_module";
    DELETE_MODULE = 106, "delete_module";
    TIMER_CREATE = 107, "timer_create";
    TIMER_GETTIME = 108, "timer_gettime";
    TIMER_GETOVERRUN = 109, "timer_getoverrun";
    TIMER_SETTIME = 110, "timer_settime";
    TIMER_DELETE = 111, "timer_delete";
    CLOCK_SETTIME = 112, "clock_settime";
    CLOCK_GETTIME = 113, "clock_gettime";
    CLOCK_GETRES = 114, "clock_getres";
    CLOCK_NANOSLEEP = 115, "clock_nanosleep";
    SYSLOG = 116, "syslog";
    PTRACE = 117, "ptrace";
    SCHED_SETPARAM = 118, "sched_setparam";
    SCHED_SETSCHEDULER = 119, "sched_setscheduler";
    SCHED_GETSCHEDULER = 120, "sched_getscheduler";
    SCHED_GETPARAM = 121, "sched_getparam";
    SCHED_SETAFFINITY = 122, "sched_setaffinity";
    SCHED_GETAFFINITY = 123, "sched_getaffinity";
    SCHED_YIELD = 124, "sched_yield";
    SCHED_GET_PRIORITY_MAX = 125, "sched_get_priority_max";
    SCHED_GET_PRIORITY_MIN = 126, "sched_get_priority_min";
    SCHED_RR_GET_INTERVAL = 127, "sched_rr_get_interval";
    RESTART_SYSCALL = 128, "restart_syscall";
    KILL = 129, "kill";
    TKILL = 130, "tkill";
    TGKILL = 131, "tgkill";
    SIGALTSTACK = 132, "sigaltstack";
    RT_SIGSUSPEND = 133, "rt_sigsuspend";
    RT_SIGACTION = 134, "rt_sigaction";
    RT_SIGPROCMASK = 135, "rt_sigprocmask";
    RT_SIGPENDING = 136, "rt_sigpending";
    RT_SIGTIMEDWAIT = 137, "rt_sigtimedwait";
    RT_SIGQUEUEINFO = 138, "rt_sigqueueinfo";
    RT_SIGRETURN = 139, "rt_sigreturn";
    SETPRIORITY = 140, "setpriority";
    GETPRIORITY = 141, "getpriority";
    REBOOT = 142, "reboot";
    SETREGID = 143, "setregid";
    SETGID = 144, "setgid";
    SETREUID = 145, "setreuid";
    SETUID = 146, "setuid";
    SETRESUID = 147, "setresuid";
    GETRESUID = 148, "getresuid";
    SETRESGID = 149, "setresgid";
    GETRESGID = 150, "getresgid";
    SETFSUID = 151, "setfsuid";
    SETFSGID = 152, "setfsgid";
    TIMES = 153, "times";
    SETPGID = 154, "setpgid";
    GETPGID = 155, "getpgid";
    GETSID = 156, "getsid";
    SETSID = 157, "setsid";
    GETGROUPS = 158, "getgroups";
    SETGROUPS = 159, "setgroups";
    UNAME = 160, "uname";
    SETHOSTNAME = 161, "sethostname";
    SETDOMAINNAME = 162, "setdomainname";
    GETRLIMIT = 163, "getrlimit";
    SETRLIMIT = 164, "setrlimit";
    GETRUSAGE = 165, "getrusage";
    UMASK = 166, "umask";
    PRCTL = 167, "prctl";
    GETCPU = 168, "getcpu";
    GETTIMEOFDAY = 169, "gettimeofday";
    SETTIMEOFDAY = 170, "settimeofday";
    ADJTIMEX = 171, "adjtimex";
    GETPID = 172, "getpid";
    GETPPID = 173, "getppid";
    GETUID = 174, "getuid";
    GETEUID = 175, "geteuid";
    GETGID = 176, "getgid";
    GETEGID = 177, "getegid";
    GETTID = 178, "gettid";
    SYSINFO = 179, "sysinfo";
    MQ_OPEN = 180, "mq_open";
    MQ_UNLINK = 181, "mq_unlink";
    MQ_TIMEDSEND = 182, "mq_timedsend";
    MQ_TIMEDRECEIVE = 183, "mq_timedreceive";
    MQ_NOTIFY = 184, "mq_notify";
    MQ_GETSETATTR = 185, "mq_getsetattr";
    MSGGET = 186, "msgget";
    MSGCTL = 187, "msgctl";
    MSGRCV = 188, "msgrcv";
    MSGSND = 189, "msgsnd";
    SEMGET = 190, "semget";
    SEMCTL = 191, "semctl";
    SEMTIMEDOP = 192, "semtimedop";
    SEMOP = 193, "semop";
    SHMGET = 194, "shmget";
    SHMCTL = 195, "shmctl";
    SHMAT = 196, "shmat";
    SHMDT = 197, "shmdt";
    SOCKET = 198, "socket";
    SOCKETPAIR = 199, "socketpair";
    BIND = 200, "bind";
    LISTEN = 201, "listen";
    ACCEPT = 202, "accept";
    CONNECT = 203, "connect";
    GETSOCKNAME = 204, "getsockname";
    GETPEERNAME = 205, "getpeername";
    SENDTO = 206, "sendto";
    RECVFROM = 207, "recvfrom";
    SETSOCKOPT = 208, "setsockopt";
    GETSOCKOPT = 209, "getsockopt";
    SHUTDOWN = 210, "shutdown";
    SENDMSG = 211, "sendmsg";
    RECVMSG = 212, "recvmsg";
    READAHEAD = 213, "readahead";
    BRK = 214, "brk";
    MUNMAP = 215, "munmap";
    MREMAP = 216, "mremap";
    ADD_KEY = 217, "add_key";
    REQUEST_KEY = 218, "request_key";
    KEYCTL = 219, "keyctl";
    CLONE = 220, "clone";
    EXECVE = 221, "execve";
    MMAP = 222, "mmap";
    FADVISE64 = 223, "fadvise64";
    SWAPON = 224, "swapon";
    SWAPOFF = 225, "swapoff";
    MPROTECT = 226, "mprotect";
    MSYNC = 227, "msync";
    MLOCK = 228, "mlock";
    MUNLOCK = 229, "munlock";
    MLOCKALL = 230, "mlockall";
    MUNLOCKALL = 231, "munlockall";
    MINCORE = 232, "mincore";
    MADVISE = 233, "madvise";
    REMAP_FILE_PAGES = 234, "remap_file_pages";
    MBIND = 235, "mbind";
    GET_MEMPOLICY = 236, "get_mempolicy";
    SET_MEMPOLICY = 237, "set_mempolicy";
    MIGRATE_PAGES = 238, "migrate_pages";
    MOVE_PAGES = 239, "move_pages";
    RT_TGSIGQUEUEINFO = 240, "rt_tgsigqueueinfo";
    PERF_EVENT_OPEN = 241, "perf_event_open";
    ACCEPT4 = 242, "accept4";
    RECVMMSG = 243, "recvmmsg";
    WAIT4 = 260, "wait4";
    PRLIMIT64 = 261, "prlimit64";
    FANOTIFY_INIT = 262, "fanotify_init";
    FANOTIFY_MARK = 263, "fanotify_mark";
    NAME_TO_HANDLE_AT = 264, "name_to_handle_at";
    OPEN_BY_HANDLE_AT = 265, "open_by_handle_at";
    CLOCK_ADJTIME = 266, "clock_adjtime";
    SYNCFS = 267, "syncfs";
    SETNS = 268, "setns";
    SENDMMSG = 269, "sendmmsg";
    PROCESS_VM_READV = 270, "process_vm_readv";
    PROCESS_VM_WRITEV = 271, "process_vm_writev";
    KCMP = 272, "kcmp";
    FINIT_MODULE = 273, "finit_module";
    SCHED_SETATTR = 274, "sched_setattr";
    SCHED_GETATTR = 275, "sched_getattr";
    RENAMEAT2 = 276, "renameat2";
    SECCOMP = 277, "seccomp";
    GETRANDOM = 278, "getrandom";
    MEMFD_CREATE = 279, "memfd_create";
    BPF = 280, "bpf";
    EXECVEAT = 281, "execveat";
    USERFAULTFD = 282, "userfaultfd";
    MEMBARRIER = 283, "membarrier";
    MLOCK2 = 284, "mlock2";
    COPY_FILE_RANGE = 285, "copy_file_range";
    PREADV2 = 286, "preadv2";
    PWRITEV2 = 287, "pwritev2";
    PKEY_MPROTECT = 288, "pkey_mprotect";
    PKEY_ALLOC = 289, "pkey_alloc";
    PKEY_FREE = 290, "pkey_free";
    STATX = 291, "statx";
    IO_PGETEVENTS = 292, "io_pgetevents";
    RSEQ = 293, "rseq";
    KEXEC_FILE_LOAD = 294, "kexec_file_load";
    PIDFD_SEND_SIGNAL = 424, "pidfd_send_signal";
    IO_URING_SETUP = 425, "io_uring_setup";
    IO_URING_ENTER = 426, "io_uring_enter";
    IO_URING_REGISTER = 427, "io_uring_register";
    OPEN_TREE = 428, "open_tree";
    MOVE_MOUNT = 429, "move_mount";
    FSOPEN = 430, "fsopen";
    FSCONFIG = 431, "fsconfig";
    FSMOUNT = 432, "fsmount";
    FSPICK = 433, "fspick";
    PIDFD_OPEN = 434, "pidfd_open";
    CLONE3 = 435, "clone3";
    CLOSE_RANGE = 436, "close_range";
    OPENAT2 = 437, "openat2";
    PIDFD_GETFD = 438, "pidfd_getfd";
    FACCESSAT2 = 439, "faccessat2";
    PROCESS_MADVISE = 440, "process_madvise";
    EPOLL_PWAIT2 = 441, "epoll_pwait2";
    MOUNT_SETATTR = 442, "mount_setattr";
    QUOTACTL_FD = 443, "quotactl_fd";
    LANDLOCK_CREATE_RULESET = 444, "landlock_create_ruleset";
    LANDLOCK_ADD_RULE = 445, "landlock_add_rule";
    LANDLOCK_RESTRICT_SELF = 446, "landlock_restrict_self";
    MEMFD_SECRET = 447, "memfd_secret";
    PROCESS_MRELEASE = 448, "process_mrelease";
    FUTEX_WAITV = 449, "futex_waitv";
    SET_MEMPOLICY_HOME_NODE = 450, "set_mempolicy_home_node";
    CACHESTAT = 451, "cachestat";
    FCHMODAT2 = 452, "fchmodat2";
    MAP_SHADOW_STACK = 453, "map_shadow_stack";
    FUTEX_WAKE = 454, "futex_wake";
    FUTEX_WAIT = 455, "futex_wait";
    FUTEX_REQUEUE = 456, "futex_requeue";
    STATMOUNT = 457, "statmount";
    LISTMOUNT = 458, "listmount";
    LSM_GET_SELF_ATTR = 459, "lsm_get_self_attr";
    LSM_SET_SELF_ATTR = 460, "lsm_set_self_attr";
    LSM_LIST_MODULES = 461, "lsm_list_modules";
    MSEAL = 462, "mseal";
    SETXATTRAT = 463, "setxattrat";
    GETXATTRAT = 464, "getxattrat";
    LISTXATTRAT = 465, "listxattrat";
    REMOVEXATTRAT = 466, "removexattrat";
    OPEN_TREE_ATTR = 467, "open_tree_attr";
    FILE_GETATTR = 468, "file_getattr";
    FILE_SETATTR = 469, "file_setattr";
    LISTNS = 470, "listns";
}

/// One past the highest number in the table (`__NR_syscalls`); a dispatch table of this size
/// covers every call.
pub const NR_SYSCALLS: usize = LISTNS + 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_numbers() {
        assert_eq!(READ, 63);
        assert_eq!(WRITE, 64);
        assert_eq!(OPENAT, 56);
        assert_eq!(CLOSE, 57);
        assert_eq!(EXIT, 93);
        assert_eq!(EXIT_GROUP, 94);
        assert_eq!(PTRACE, 117);
        assert_eq!(KILL, 129);
        assert_eq!(TGKILL, 131);
        assert_eq!(RT_SIGRETURN, 139);
        assert_eq!(PRCTL, 167);
        assert_eq!(BRK, 214);
        assert_eq!(CLONE, 220);
        assert_eq!(EXECVE, 221);
        assert_eq!(MMAP, 222);
        assert_eq!(WAIT4, 260);
        assert_eq!(STATX, 291);
        assert_eq!(RSEQ, 293);
        assert_eq!(PIDFD_SEND_SIGNAL, 424);
        assert_eq!(PIDFD_OPEN, 434);
        assert_eq!(CLONE3, 435);
        assert_eq!(FACCESSAT2, 439);
        assert_eq!(FUTEX_WAITV, 449);
        assert_eq!(SET_MEMPOLICY_HOME_NODE, 450);
    }

    #[test]
    fn names_and_gaps() {
        assert_eq!(name(63), Some("read"));
        assert_eq!(name(435), Some("clone3"));
        assert_eq!(name(250), None);
        assert_eq!(name(300), None);
        assert_eq!(name(NR_SYSCALLS), None);
        for w in ALL.windows(2) {
            assert!(w[0].0 < w[1].0);
        }
        for &(n, s) in ALL {
            assert_eq!(name(n), Some(s));
        }
        // 0..=243 is dense.
        assert!((0..=243).all(|n| name(n).is_some()));
    }
}
