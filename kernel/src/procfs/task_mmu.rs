//! The memory views of /proc/PID (Linux's fs/proc/task_mmu.c): maps, smaps and statm, and the
//! address-space figures stat and status show.

#![forbid(unsafe_code)]

use super::base::Target;
use crate::fs::generic::{write_str, Text};
use core::fmt::Write;
use svelt_abi::uapi::errno::SysResult;
use svelt_abi::uapi::procfs::{self, MapsLine, SmapsFields, VmFlags};

/// What status, stat and statm say about an address space.
#[derive(Default)]
pub(super) struct MmFigures {
    pub(super) info: crate::mm::aspace::ExecInfo,
    pub(super) total: usize,
    pub(super) locked: usize,
    pub(super) data: usize,
    pub(super) stack: usize,
    pub(super) exec_vm: usize,
    pub(super) rss_anon: usize,
    pub(super) rss_file: usize,
    pub(super) rss_shmem: usize,
    pub(super) brk_start: usize,
    pub(super) arg_start: usize,
    pub(super) arg_end: usize,
}

impl MmFigures {
    /// The figures; `split` walks the page tables to count resident pages by kind (without
    /// it they all count as anonymous, from the table's running count).
    pub(super) fn of(mm: &crate::process::Mm, split: bool) -> MmFigures {
        use crate::mm::aspace::Backing;
        let g = mm.lock();
        let mut f = MmFigures {
            info: g.exec,
            total: g.total_vm(),
            locked: g.locked_vm(),
            data: g.data_vm(),
            brk_start: g.brk_start,
            arg_start: g.arg_start,
            arg_end: g.arg_end,
            ..Default::default()
        };
        if !split {
            f.rss_anon = g.resident_pages();
        }
        for v in g.vmas() {
            if split {
                let pages = g.resident_in(v.start, v.end);
                match v.backing {
                    Backing::Anon => f.rss_anon += pages,
                    Backing::Shared(..) => f.rss_shmem += pages,
                    Backing::File { .. } => f.rss_file += pages,
                }
            }
            if is_stack(v.start, v.end, &f.info) {
                f.stack += v.size();
            } else if v.prot.x() && !v.prot.w() {
                f.exec_vm += v.size();
            }
        }
        f
    }
    pub(super) fn rss_pages(&self) -> usize {
        self.rss_anon + self.rss_file + self.rss_shmem
    }
    /// Text (the program's code) and the rest of the executable memory.
    pub(super) fn text_lib(&self) -> (usize, usize) {
        let code = self.info.end_code.next_multiple_of(PAGE) - (self.info.start_code & !(PAGE - 1));
        let text = code.min(self.exec_vm);
        (text, self.exec_vm - text)
    }
}

pub(super) const PAGE: usize = crate::arch::mmu::PAGE_SIZE;

fn is_stack(start: usize, end: usize, info: &crate::mm::aspace::ExecInfo) -> bool {
    if info.start_stack != 0 {
        start <= info.start_stack && end >= info.start_stack
    } else {
        end == crate::mm::aspace::STACK_TOP
    }
}

pub(super) fn statm(t: Target, out: &mut Text) -> SysResult<()> {
    let th = t.task()?;
    let Some(m) = th.mm().map(|m| MmFigures::of(&m, true)) else {
        return write_str(out, "0 0 0 0 0 0 0\n");
    };
    let code = m.info.end_code.next_multiple_of(PAGE) - (m.info.start_code & !(PAGE - 1));
    let _ = writeln!(
        out,
        "{} {} {} {} 0 {} 0",
        m.total / PAGE,
        m.rss_pages(),
        m.rss_file + m.rss_shmem,
        code / PAGE,
        (m.data + m.stack) / PAGE
    );
    Ok(())
}

/// One maps line's worth of a VMA: the VMA is cut where the executable's file bytes and the
/// heap begin and end, as Linux has them in separate mappings.
struct Piece {
    start: usize,
    end: usize,
    /// The executable's file offset at `start`, for its pages.
    image: Option<u64>,
}

fn pieces(
    start: usize,
    end: usize,
    info: &crate::mm::aspace::ExecInfo,
    brk_start: usize,
) -> impl Iterator<Item = Piece> + '_ {
    let mut cuts = [0usize; 2 * crate::mm::aspace::ExecInfo::MAX_IMAGE + 1];
    let mut n = 0;
    for r in info.image() {
        for c in [r.start, r.end] {
            if c > start && c < end {
                cuts[n] = c;
                n += 1;
            }
        }
    }
    if brk_start > start && brk_start < end {
        cuts[n] = brk_start;
        n += 1;
    }
    cuts[..n].sort_unstable();
    let mut bounds = [0usize; 2 * crate::mm::aspace::ExecInfo::MAX_IMAGE + 3];
    bounds[0] = start;
    bounds[1..=n].copy_from_slice(&cuts[..n]);
    bounds[n + 1] = end;
    (0..=n).filter_map(move |i| {
        let (s, e) = (bounds[i], bounds[i + 1]);
        (s < e).then(|| Piece {
            start: s,
            end: e,
            image: info
                .image()
                .iter()
                .find(|r| r.start <= s && e <= r.end)
                .map(|r| r.offset + (s - r.start) as u64),
        })
    })
}

pub(super) fn maps(t: Target, out: &mut Text) -> SysResult<()> {
    write_maps(t, out, false)
}

pub(super) fn smaps(t: Target, out: &mut Text) -> SysResult<()> {
    write_maps(t, out, true)
}

fn write_maps(t: Target, out: &mut Text, smaps: bool) -> SysResult<()> {
    use crate::mm::aspace::Backing;
    let th = t.task()?;
    let Some(mm) = th.mm() else {
        return Ok(());
    };
    let exe = th.process().exe.lock().clone();
    let g = mm.lock();
    let info = g.exec;
    let heap_end = g.brk.next_multiple_of(PAGE);
    for v in g.vmas() {
        for piece in pieces(v.start, v.end, &info, g.brk_start) {
            let mut line = MapsLine {
                start: piece.start as u64,
                end: piece.end as u64,
                read: v.prot.r(),
                write: v.prot.w(),
                exec: v.prot.x(),
                shared: v.backing.is_shared(),
                ..Default::default()
            };
            let special = crate::vdso::vma_name(v);
            let name: &[u8] = match (&v.backing, piece.image) {
                _ if special.is_some() => special.unwrap_or_default(),
                (_, Some(off)) => {
                    line.offset = off;
                    (line.major, line.minor) = procfs::dev_split(1);
                    line.ino = info.exe_ino;
                    exe.as_bytes()
                }
                (Backing::File { node, off, .. }, _) => {
                    line.offset = off + (piece.start - v.start) as u64;
                    (line.major, line.minor) = procfs::dev_split(1);
                    line.ino = node.file_ino();
                    b""
                }
                (Backing::Shared(_, off), _) => {
                    line.offset = (off + (piece.start - v.start)) as u64;
                    (line.major, line.minor) = procfs::dev_split(1);
                    b"/dev/zero (deleted)"
                }
                _ if is_stack(piece.start, piece.end, &info) => b"[stack]",
                _ if g.brk > g.brk_start
                    && piece.start >= g.brk_start
                    && piece.start < heap_end =>
                {
                    b"[heap]"
                }
                _ => b"",
            };
            let _ = line.write(out, name);
            if smaps {
                let kb = |pages: usize| (pages * PAGE / 1024) as u64;
                let rss = kb(g.resident_in(piece.start, piece.end));
                let shared = v.backing.is_shared();
                let anon = matches!(v.backing, Backing::Anon);
                let f = SmapsFields {
                    size: ((piece.end - piece.start) / 1024) as u64,
                    rss,
                    shared_dirty: if shared { rss } else { 0 },
                    private_dirty: if !shared && v.prot.w() { rss } else { 0 },
                    private_clean: if !shared && !v.prot.w() { rss } else { 0 },
                    anonymous: if anon { rss } else { 0 },
                    locked: if v.locked { rss } else { 0 },
                    ..Default::default()
                };
                let _ = f.write(
                    out,
                    VmFlags {
                        read: v.prot.r(),
                        write: v.prot.w(),
                        exec: v.prot.x(),
                        shared,
                        may_write: !shared || v.prot.w(),
                        stack: is_stack(piece.start, piece.end, &info),
                        locked: v.locked,
                    },
                );
            }
        }
    }
    Ok(())
}
