//! Writing the core file: each thread's notes, the process-wide notes, the mappings' pages
//! (holes for pages never touched), to `core` in the working directory and optionally to the
//! host. A user frame's bytes are copied through `mm::frame_io`.

#![forbid(unsafe_code)]

use super::{Stopped, HOST_DIR, PAGE, SEMIHOSTING};
use crate::arch::exception::TrapFrame;
use crate::arch::semihosting;
use crate::fs::{Inode, Kind};
use crate::mm::aspace::Backing;
use crate::process::signal::SigInfo;
use crate::process::{CurrentTask, Held, Process, Thread};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::format::coredump as cd;
use svelt_abi::uapi::errno::{Errno, SysResult};

fn vec_with(n: usize) -> SysResult<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    Ok(v)
}

/// One thread's notes: NT_PRSTATUS and its regsets (type, contents).
struct ThreadNotes {
    prstatus: [u8; cd::PRSTATUS_SIZE],
    regsets: Vec<(u32, Vec<u8>)>,
}

fn thread_notes(h: &Held, regs: &TrapFrame, p: &Process, signo: u32) -> SysResult<ThreadNotes> {
    let t = h.task();
    let mut regsets = Vec::new();
    regsets
        .try_reserve_exact(cd::THREAD_REGSETS.len())
        .map_err(|_| Errno::ENOMEM)?;
    for nt in cd::THREAD_REGSETS {
        if crate::process::ptrace::regset::info(nt).is_none() {
            continue;
        }
        if let Ok(data) = crate::process::ptrace::regset::get(h, nt) {
            regsets.push((nt, data));
        }
    }
    let mut r = [0u64; 34];
    r[..31].copy_from_slice(&regs.x);
    r[31] = regs.sp_el0;
    r[32] = regs.elr;
    r[33] = regs.spsr;
    let (sigpend, sighold) = {
        let s = t.sig.lock();
        (s.pending_mask(), s.blocked)
    };
    let st = cd::PrStatus {
        signo,
        sigpend,
        sighold,
        pid: t.tid,
        ppid: p.ppid(),
        pgrp: p.pgid.load(Ordering::Relaxed),
        sid: p.sid.load(Ordering::Relaxed),
        regs: r,
        fpvalid: regsets.iter().any(|(nt, _)| *nt == cd::NT_PRFPREG),
        ..Default::default()
    };
    Ok(ThreadNotes {
        prstatus: st.to_bytes(),
        regsets,
    })
}

/// What the core records of one mapping.
struct Seg {
    facts: cd::VmaFacts,
    dump: u64,
}

fn comm(p: &Process) -> String {
    let exe = p.exe.lock();
    let base = exe.rsplit('/').next().unwrap_or(&exe);
    String::from(&base[..base.len().min(15)])
}

pub(super) fn write_core(
    me: &CurrentTask,
    p: &Arc<Process>,
    tf: &TrapFrame,
    info: &SigInfo,
    others: &Stopped,
    limit: u64,
) -> SysResult<()> {
    let signo = info.signo();
    let mm = me.mm().ok_or(Errno::EINVAL)?;

    // Threads, the dumping one first.
    let mut threads = Vec::new();
    threads
        .try_reserve_exact(others.len() + 1)
        .map_err(|_| Errno::ENOMEM)?;
    threads.push(thread_notes(&me.held(), tf, p, signo)?);
    for h in others.held() {
        threads.push(thread_notes(&h, &h.trap_frame(), p, signo)?);
    }

    // Mappings, and what the process-wide notes need from the address space.
    let (segs, files, auxv, args) = {
        let mut m = mm.lock();
        let n = m.vmas().count();
        let mut segs: Vec<Seg> = Vec::new();
        segs.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        let mut files: Vec<(u64, u64, u64, &'static [u8])> = Vec::new();
        files.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        for v in m.vmas() {
            let special = crate::vdso::vma_name(v).is_some();
            let mut f = cd::VmaFacts {
                start: v.start as u64,
                end: v.end as u64,
                read: v.prot.r(),
                write: v.prot.w(),
                exec: v.prot.x(),
                special,
                shared: v.backing.is_shared(),
                ..Default::default()
            };
            match &v.backing {
                // [vvar] and [vdso] are no file's pages (Linux: special mappings), dumped whole.
                _ if special => {}
                Backing::Anon => {}
                Backing::Shared(_, off) => {
                    f.file = true;
                    f.file_unlinked = true;
                    f.offset = *off as u64;
                    files.push((f.start, f.end, f.offset / PAGE, b"/dev/zero (deleted)"));
                }
                Backing::File { node, off, .. } => {
                    f.file = true;
                    f.offset = *off;
                    f.file_exec = node.file_perm() & 0o111 != 0;
                    // Svelt keeps no name with a mapping.
                    files.push((f.start, f.end, f.offset / PAGE, b""));
                }
            }
            segs.push(Seg { facts: f, dump: 0 });
        }
        for s in segs.iter_mut() {
            let f = &mut s.facts;
            // Private memory the process wrote (Linux: the mapping has an anon_vma): any page
            // of its own (a file mapping's: a copied, writable one).
            if !f.shared && !f.special {
                let (start, end) = (f.start as usize, f.end as usize);
                let mut va = start;
                while let Some(at) = m.next_mapped(va, end) {
                    if m.dump_frame(at).is_some_and(|(_, w)| !f.file || w) {
                        f.anon_pages = true;
                        break;
                    }
                    va = at + PAGE as usize;
                }
            }
            let first = m.dump_frame(f.start as usize);
            s.dump = cd::vma_dump_size(f, cd::DEFAULT_FILTER, || {
                first.is_some_and(|(frame, _)| {
                    let mut b = [0u8; 4];
                    frame.read(0, &mut b);
                    b == svelt_abi::format::elf::ELFMAG
                })
            });
        }
        let mut auxv = vec_with(m.saved_auxv.len())?;
        auxv.extend_from_slice(&m.saved_auxv);
        let alen = m.arg_end.saturating_sub(m.arg_start).min(80);
        let mut args = [0u8; 80];
        let arg_start = m.arg_start;
        let _ = m.read(arg_start, &mut args[..alen]);
        (segs, files, auxv, args)
    };

    // Process-wide notes.
    let comm = comm(p);
    let ps = cd::PrPsInfo {
        sname: b'R',
        flag: 0x600, // PF_SIGNALED | PF_DUMPCORE
        uid: p.uid.load(Ordering::Relaxed),
        pid: p.pid,
        ppid: p.ppid(),
        pgrp: p.pgid.load(Ordering::Relaxed),
        sid: p.sid.load(Ordering::Relaxed),
        fname: cd::fname(comm.as_bytes()),
        psargs: cd::psargs(&args),
        ..Default::default()
    }
    .to_bytes();
    let maps: Vec<cd::FileMap> = {
        let mut v = Vec::new();
        v.try_reserve_exact(files.len())
            .map_err(|_| Errno::ENOMEM)?;
        v.extend(files.iter().map(|&(start, end, pgoff, name)| cd::FileMap {
            start,
            end,
            pgoff,
            name,
        }));
        v
    };
    let flen = cd::file_note_len(&maps).ok_or(Errno::ENOMEM)?;
    let mut fnote = vec_with(flen)?;
    fnote.resize(flen, 0);
    cd::put_file_note(&mut fnote, &maps, PAGE).ok_or(Errno::EINVAL)?;

    // Linux's order: first thread's PRSTATUS, PRPSINFO, SIGINFO, AUXV, FILE, its regsets; then
    // each other thread's PRSTATUS and regsets.
    let mut notes: Vec<(u32, &[u8])> = Vec::new();
    let count = threads.iter().map(|t| 1 + t.regsets.len()).sum::<usize>() + 4;
    notes.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
    for (i, t) in threads.iter().enumerate() {
        notes.push((cd::NT_PRSTATUS, &t.prstatus));
        if i == 0 {
            notes.push((cd::NT_PRPSINFO, &ps));
            notes.push((cd::NT_SIGINFO, &info.0));
            notes.push((cd::NT_AUXV, &auxv));
            notes.push((cd::NT_FILE, &fnote));
        }
        for (nt, d) in &t.regsets {
            notes.push((*nt, d));
        }
    }
    let mut nlen = 0usize;
    for (nt, d) in &notes {
        nlen = nlen
            .checked_add(cd::note_size(cd::note_name(*nt), d.len()).ok_or(Errno::ENOMEM)?)
            .ok_or(Errno::ENOMEM)?;
    }
    let lay = cd::layout(segs.len(), nlen, PAGE).ok_or(Errno::ENOMEM)?;
    let head_len = lay.notes_off as usize + nlen;
    let mut head = vec_with(head_len)?;
    head.resize(head_len, 0);
    head[..64].copy_from_slice(&cd::core_ehdr(lay.phnum));
    head[64..120].copy_from_slice(&cd::note_phdr(lay.notes_off, nlen as u64));
    let mut off = lay.data_off;
    for (i, s) in segs.iter().enumerate() {
        let at = 120 + 56 * i;
        head[at..at + 56].copy_from_slice(&cd::load_phdr(&s.facts, off, s.dump, PAGE));
        off += s.dump;
    }
    let mut at = lay.notes_off as usize;
    for (nt, d) in &notes {
        at += cd::put_note(&mut head[at..], cd::note_name(*nt), *nt, d).ok_or(Errno::EINVAL)?;
    }
    drop(notes);
    drop(threads);

    let node = open_core(me)?;
    let mut out = Out::new(node.as_ref(), limit, host_file(&comm, p.pid));
    let r = (|| {
        out.emit(&head)?;
        out.skip_to(lay.data_off);
        let mut page = vec_with(PAGE as usize)?;
        page.resize(PAGE as usize, 0);
        for s in &segs {
            let mut va = s.facts.start;
            let end = s.facts.start + s.dump;
            while va < end {
                let present = {
                    let mut m = mm.lock();
                    // Holes in bulk: up to the next mapped page.
                    let next = m
                        .next_mapped(va as usize, end as usize)
                        .map_or(end, |a| a as u64);
                    if next > va {
                        out.skip(next - va);
                        va = next;
                        if va >= end {
                            break;
                        }
                    }
                    match m.dump_frame(va as usize) {
                        Some((frame, _)) => {
                            // The lock keeps the frame mapped while it is copied.
                            frame.read(0, &mut page);
                            true
                        }
                        None => false,
                    }
                };
                if present {
                    out.emit(&page)?;
                } else {
                    out.skip(PAGE);
                }
                va += PAGE;
            }
        }
        out.finish()
    })();
    out.close_host();
    // As Linux: once the file exists and the notes are gathered the process counts as having
    // dumped core, even when RLIMIT_CORE or the file system cut the file short.
    if let Err(e) = r {
        log::debug!("coredump: pid {} core cut short: {e:?}", p.pid);
    }
    Ok(())
}

/// Linux's steps for a plain core_pattern: remove an old `core`, create a new one (0600 less
/// the umask) exclusively, and accept it only with mode 0600.
fn open_core(t: &Thread) -> SysResult<Arc<dyn Inode>> {
    let (dir, umask) = {
        let fs = t.fs();
        let g = fs.lock();
        (g.cwd_node.clone(), g.umask)
    };
    let _ = dir.unlink("core", false);
    let euid = t.process.euid.load(core::sync::atomic::Ordering::Relaxed);
    let node = dir.create("core", Kind::File, 0o600 & !umask, euid)?;
    if node.perm() & 0o677 != 0o600 {
        return Err(Errno::EACCES);
    }
    Ok(node)
}

/// The host's copy, `DIR/core.COMM.PID`, when the command line asked for one.
fn host_file(comm: &str, pid: u32) -> Option<u64> {
    if !SEMIHOSTING.load(Ordering::Relaxed) {
        return None;
    }
    let mut path = String::new();
    if let Some(d) = HOST_DIR.get() {
        path.push_str(d);
        path.push('/');
    }
    path.push_str(&alloc::format!("core.{comm}.{pid}"));
    let h = semihosting::open_write(path.as_bytes());
    if h.is_none() {
        log::warn!("coredump: the host refused {path}");
    }
    h
}

static ZEROES: [u8; 4096] = [0; 4096];

/// The core file being written: sequential, holes for pages never touched, at most RLIMIT_CORE
/// bytes of data (holes do not count, as on Linux); the first write that would pass the limit
/// ends the dump.
struct Out<'a> {
    node: &'a dyn Inode,
    pos: u64,
    written: u64,
    limit: u64,
    /// Bytes of hole not yet followed by data.
    pending: u64,
    host: Option<u64>,
}

impl<'a> Out<'a> {
    fn new(node: &'a dyn Inode, limit: u64, host: Option<u64>) -> Out<'a> {
        Out {
            node,
            pos: 0,
            written: 0,
            limit,
            pending: 0,
            host,
        }
    }

    fn emit(&mut self, data: &[u8]) -> SysResult<()> {
        let n = data.len() as u64;
        if self.written.checked_add(n).is_none_or(|w| w > self.limit) {
            return Err(Errno::EFBIG);
        }
        self.pos += self.pending;
        self.host_zeroes(self.pending);
        self.pending = 0;
        let mut done = 0;
        while done < data.len() {
            let k = self.node.write_at(self.pos + done as u64, &data[done..])?;
            if k == 0 {
                return Err(Errno::ENOSPC);
            }
            done += k;
        }
        if let Some(h) = self.host {
            if !semihosting::write(h, data) {
                self.close_host();
            }
        }
        self.pos += n;
        self.written += n;
        Ok(())
    }

    fn skip(&mut self, n: u64) {
        self.pending += n;
    }

    fn skip_to(&mut self, off: u64) {
        let at = self.pos + self.pending;
        if off > at {
            self.pending += off - at;
        }
    }

    fn host_zeroes(&mut self, mut n: u64) {
        while n > 0 {
            let Some(h) = self.host else { return };
            let k = n.min(ZEROES.len() as u64);
            if !semihosting::write(h, &ZEROES[..k as usize]) {
                self.close_host();
            }
            n -= k;
        }
    }

    /// A trailing hole becomes file size: its last byte is written, as Linux does.
    fn finish(&mut self) -> SysResult<()> {
        if self.pending > 0 {
            self.pending -= 1;
            self.emit(&[0])?;
        }
        Ok(())
    }

    fn close_host(&mut self) {
        if let Some(h) = self.host.take() {
            semihosting::close(h);
        }
    }
}
