//! Linux's user ABI as arm64 sees it: the numbers, flags and structure layouts of the
//! syscalls, and the pure rules by which Linux reads and checks their arguments and formats
//! the texts it gives back (/proc, syslog).

pub mod auxv;
pub mod bpf;
pub mod cpumask;
pub mod errno;
pub mod fcntl;
pub mod fs;
pub mod futex;
pub mod inet;
pub mod klog;
pub mod kvm;
pub mod kvm_aarch32;
pub mod kvm_debug;
pub mod kvm_dirty;
pub mod kvm_dirty_ring;
pub mod kvm_eventfd;
pub mod kvm_gmem;
pub mod kvm_idregs;
pub mod kvm_pmu;
pub mod kvm_poe;
pub mod kvm_services;
pub mod kvm_sme;
pub mod kvm_stats;
pub mod kvm_sve;
pub mod kvm_vgic;
pub mod kvm_vgic_its;
pub mod kvm_vgic_sysregs;
pub mod ldisc;
pub mod mm;
pub mod mount;
pub mod net;
pub mod netlink;
pub mod nr;
pub mod path;
pub mod prctl;
pub mod procfs;
pub mod ptrace;
pub mod sched;
pub mod signal;
pub mod sys;
pub mod sysctl;
pub mod time;
pub mod tty;
