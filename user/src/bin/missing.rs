//! Calls Svelt once answered ENOSYS, with Linux's semantics and errors: chroot.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sys::*;
use svelt_user::*;

fn chroot(path: &str) -> SysResult {
    let p = CPath::new(path);
    sys::syscall(nr::CHROOT, &[p.ptr() as usize])
}

fn cwd() -> String {
    let mut b = [0u8; 256];
    match sys::getcwd(&mut b) {
        Ok(n) => String::from_utf8_lossy(&b[..n.saturating_sub(1)]).into_owned(),
        Err(e) => format!("error {e:?}"),
    }
}

/// Runs `f` in a child; Ok when it exits 0, else the status and what the child printed.
fn child(f: impl FnOnce() -> TestResult) -> TestResult {
    let st = t!(in_child(|| match f() {
        Ok(()) => 0,
        Err(e) => {
            println!("# child: {e}");
            1
        }
    }));
    check!(
        wifexited(st) && wexitstatus(st) == 0,
        "child: {}",
        describe(st)
    );
    Ok(())
}

/// chroot: absolute paths and `..` stop at the new root; the cwd stays where it was (outside:
/// getcwd shows "(unreachable)"); lookup errors come first, then search permission (EACCES),
/// then the capability (EPERM for a non-root caller).
fn chroot_root() -> TestResult {
    let dir = format!("/tmp/missing-chroot-{}", sys::getpid());
    t!(sys::mkdirat(AT_FDCWD, &dir, 0o755));
    t!(sys::mkdirat(AT_FDCWD, &format!("{dir}/sub"), 0o755));
    t!(sys::mkdirat(AT_FDCWD, &format!("{dir}/priv"), 0o700));
    t!(io::write_file(&format!("{dir}/f"), b"inside", 0o644));
    let d = dir.clone();
    let r = child(move || {
        t!(sys::chdir("/"));
        check_eq!(chroot("/nonexistent-dir"), Err(ENOENT));
        check_eq!(chroot(&format!("{d}/f")), Err(ENOTDIR));
        check_eq!(chroot(&format!("{d}/f/x")), Err(ENOTDIR));
        t!(chroot(&d));
        check_eq!(cwd(), "(unreachable)/");
        t!(sys::chdir("/"));
        check_eq!(cwd(), "/");
        check_eq!(io::read_file("/f"), Ok(b"inside".to_vec()));
        t!(sys::chdir("sub"));
        check_eq!(cwd(), "/sub");
        t!(sys::chdir("../../.."));
        check_eq!(cwd(), "/");
        check_eq!(io::read_file("/../../f"), Ok(b"inside".to_vec()));
        check_eq!(io::read_file("../sub/../f"), Ok(b"inside".to_vec()));
        // A second chroot is relative to the first.
        t!(chroot("sub"));
        check_eq!(cwd(), format!("(unreachable){d}"));
        t!(sys::chdir("/"));
        check!(io::read_file("/f").is_err());
        Ok(())
    });
    let d = dir.clone();
    let r2 = child(move || {
        t!(sys::setuid(1000));
        check_eq!(chroot("/nonexistent-dir"), Err(ENOENT));
        check_eq!(chroot(&format!("{d}/priv")), Err(EACCES));
        check_eq!(chroot("/"), Err(EPERM));
        check_eq!(chroot(&d), Err(EPERM));
        Ok(())
    });
    let _ = sys::unlinkat(AT_FDCWD, &format!("{dir}/f"), 0);
    for s in ["sub", "priv"] {
        let _ = sys::unlinkat(AT_FDCWD, &format!("{dir}/{s}"), AT_REMOVEDIR);
    }
    let _ = sys::unlinkat(AT_FDCWD, &dir, AT_REMOVEDIR);
    r?;
    r2
}

fn main(_a: &rt::Args) -> i32 {
    svelt_user::proc::mount_when_init();
    ktap::run(&[("chroot_root", chroot_root)])
}

entry!(main);
