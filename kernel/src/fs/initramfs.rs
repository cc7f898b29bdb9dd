//! Unpacking the initramfs into the root ramfs as it streams: newc cpio archives, plain or as
//! gzip members, one after another with zero padding between them (as Linux accepts). The cpio
//! is parsed by `svelt_abi::boot::cpio::Parser` and file data goes straight into the files' pages;
//! nothing the size of the archive is allocated, only a 32 KiB window for inflate.
//!
//! A corrupt or truncated archive is an error for the caller to log; what was unpacked before
//! it stays.

#![forbid(unsafe_code)]

use super::ramfs::{DevNode, RamDir, RamFile, RamSymlink};
use super::{Inode, Kind};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use alloc::{format, vec};
use miniz_oxide::inflate::core::{decompress, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;
use svelt_abi::boot::cpio::{self, Event, Parser};
use svelt_abi::uapi::errno::Errno;
use svelt_abi::uapi::fs::{S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG};

/// What was unpacked.
#[derive(Default)]
pub struct Stats {
    pub entries: usize,
    pub file_bytes: u64,
    /// Bytes of (decompressed) cpio read.
    pub cpio_bytes: u64,
    /// The first failed write into a file (ENOSPC: the root file system is full).
    pub write_error: Option<(String, Errno)>,
}

/// Unpacks `archive` into `root`. On error, what came before it stays unpacked (see `stats`).
pub fn unpack(archive: &[u8], root: &Arc<RamDir>, stats: &mut Stats) -> Result<(), String> {
    let mut u = Unpacker {
        root,
        cur: Current::None,
        stats,
    };
    let mut off = 0;
    while off < archive.len() {
        let rest = &archive[off..];
        match rest {
            [0, ..] => off += rest.iter().take_while(|&&b| b == 0).count(),
            [0x1f, 0x8b, ..] => {
                off += gunzip_member(rest, &mut u).map_err(|e| format!("gzip at {off}: {e}"))?
            }
            [b'0', ..] => {
                let mut p = Parser::starting_at(off as u64);
                let n = p.push(rest, &mut |e| u.event(e)).map_err(cpio_error)?;
                p.finish().map_err(cpio_error)?;
                u.stats.cpio_bytes += n as u64;
                off += n;
            }
            [0xfd, b'7', b'z', b'X', b'Z', ..] => return Err(unsupported("xz", off)),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => return Err(unsupported("zstd", off)),
            [b'B', b'Z', b'h', ..] => return Err(unsupported("bzip2", off)),
            [0x02, 0x21, 0x4c, 0x18, ..] => return Err(unsupported("lz4", off)),
            _ => return Err(format!("junk at offset {off} (not cpio, not gzip)")),
        }
    }
    Ok(())
}

fn unsupported(what: &str, off: usize) -> String {
    format!("{what}-compressed data at offset {off}: only gzip is supported")
}

fn cpio_error(e: cpio::CpioError) -> String {
    format!("malformed cpio: {e:?}")
}

/// The member being unpacked.
enum Current {
    None,
    File {
        node: Arc<RamFile>,
        path: String,
        off: u64,
        failed: bool,
    },
    Symlink {
        dir: Arc<dyn Inode>,
        leaf: String,
        target: Vec<u8>,
    },
}

struct Unpacker<'a> {
    root: &'a Arc<RamDir>,
    cur: Current,
    stats: &'a mut Stats,
}

impl Unpacker<'_> {
    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::Begin(h) => self.begin(&h),
            Event::Data(d) => self.data(d),
            Event::End => {
                if let Current::Symlink { dir, leaf, target } =
                    core::mem::replace(&mut self.cur, Current::None)
                {
                    let node = RamSymlink::new(String::from_utf8_lossy(&target).into_owned());
                    put(&dir, &leaf, node);
                }
            }
        }
    }

    fn begin(&mut self, h: &cpio::Header<'_>) {
        self.cur = Current::None;
        let name = h.name;
        if name.is_empty() {
            return;
        }
        let (dir_path, leaf) = match name.rfind('/') {
            Some(i) => (&name[..i], &name[i + 1..]),
            None => ("", name),
        };
        let dir = mkdir_p(self.root, dir_path);
        let perm = h.perm();
        match h.file_type() {
            S_IFDIR => {
                if !dir.lookup(leaf).is_ok_and(|d| d.kind() == Kind::Dir) {
                    put(&dir, leaf, RamDir::new(perm));
                }
            }
            S_IFREG => {
                let node = RamFile::new(perm);
                put(&dir, leaf, node.clone());
                self.cur = Current::File {
                    node,
                    path: String::from(name),
                    off: 0,
                    failed: false,
                };
            }
            S_IFLNK => {
                self.cur = Current::Symlink {
                    dir,
                    leaf: String::from(leaf),
                    target: Vec::new(),
                }
            }
            S_IFCHR => put(&dir, leaf, DevNode::new(perm, h.rdev_major, h.rdev_minor)),
            _ => return,
        }
        self.stats.entries += 1;
    }

    fn data(&mut self, mut d: &[u8]) {
        match &mut self.cur {
            Current::File {
                node,
                path,
                off,
                failed: failed @ false,
            } => {
                while !d.is_empty() {
                    match node.write_at(*off, d) {
                        Ok(n) => {
                            *off += n as u64;
                            self.stats.file_bytes += n as u64;
                            d = &d[n..];
                        }
                        Err(e) => {
                            *failed = true;
                            if self.stats.write_error.is_none() {
                                self.stats.write_error = Some((core::mem::take(path), e));
                            }
                            return;
                        }
                    }
                }
            }
            Current::Symlink { target, .. } => {
                let room = svelt_abi::uapi::path::PATH_MAX.saturating_sub(target.len());
                target.extend_from_slice(&d[..d.len().min(room)]);
            }
            _ => {}
        }
    }
}

fn put(dir: &Arc<dyn Inode>, leaf: &str, node: Arc<dyn Inode>) {
    if let Some(d) = dir.as_any().downcast_ref::<RamDir>() {
        d.put(leaf, node);
    }
}

fn mkdir_p(root: &Arc<RamDir>, path: &str) -> Arc<dyn Inode> {
    let mut cur: Arc<dyn Inode> = root.clone();
    for comp in path.split('/').filter(|c| !c.is_empty()) {
        cur = match cur.lookup(comp) {
            Ok(n) => n,
            Err(_) => cur
                .create(comp, Kind::Dir, 0o755, 0)
                .unwrap_or_else(|_| RamDir::new(0o755)),
        };
    }
    cur
}

/// Length of a gzip member's header (RFC 1952).
fn gzip_header_len(data: &[u8]) -> Result<usize, &'static str> {
    let short = "truncated gzip header";
    if data.len() < 10 {
        return Err(short);
    }
    if data[2] != 8 {
        return Err("gzip: not deflate");
    }
    let flg = data[3];
    let mut pos = 10;
    if flg & 4 != 0 {
        let x = data.get(pos..pos + 2).ok_or(short)?;
        pos += 2 + usize::from(u16::from_le_bytes([x[0], x[1]]));
    }
    for bit in [8u8, 16] {
        if flg & bit != 0 {
            pos += data
                .get(pos..)
                .ok_or(short)?
                .iter()
                .position(|&b| b == 0)
                .ok_or(short)?
                + 1;
        }
    }
    if flg & 2 != 0 {
        pos += 2;
    }
    if pos > data.len() {
        return Err(short);
    }
    Ok(pos)
}

/// Size of inflate's output window: deflate refers back at most 32 KiB.
const WINDOW: usize = 32 * 1024;

/// Inflates the gzip member at the start of `data` into a cpio parser of its own (an archive
/// must end inside the member, as on Linux). Returns the member's length.
fn gunzip_member(data: &[u8], u: &mut Unpacker<'_>) -> Result<usize, String> {
    let mut inpos = gzip_header_len(data)?;
    let mut r: Box<DecompressorOxide> = Box::default();
    let mut window = vec![0u8; WINDOW];
    let mut outpos = 0;
    let mut total: u64 = 0;
    let mut parser = Parser::new();
    loop {
        // All of the input is there, so no TINFL_FLAG_HAS_MORE_INPUT; raw deflate (no zlib
        // header); the window wraps.
        let (status, nin, nout) = decompress(&mut r, &data[inpos..], &mut window, outpos, 0);
        inpos += nin;
        let out = &window[outpos..outpos + nout];
        let used = parser.push(out, &mut |e| u.event(e)).map_err(cpio_error)?;
        if used < out.len() {
            return Err(format!(
                "junk inside the compressed archive at its offset {}",
                total + used as u64
            ));
        }
        total += nout as u64;
        outpos = (outpos + nout) % WINDOW;
        match status {
            TINFLStatus::Done => break,
            TINFLStatus::HasMoreOutput => {}
            TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
                return Err(format!("truncated deflate data after {total} bytes"))
            }
            s => return Err(format!("corrupt deflate data after {total} bytes ({s:?})")),
        }
    }
    parser.finish().map_err(cpio_error)?;
    u.stats.cpio_bytes += total;
    // The trailer: CRC-32 (not checked) and the length modulo 2^32.
    let t = data.get(inpos..inpos + 8).ok_or("truncated gzip trailer")?;
    if u32::from_le_bytes([t[4], t[5], t[6], t[7]]) != total as u32 {
        return Err(format!("gzip length mismatch ({total} bytes inflated)"));
    }
    Ok(inpos + 8)
}

/// The archive built into the image (`SVELT_EMBED_ARCHIVE` at build time, see build.rs): the
/// self-checking image's userland. Empty in an ordinary build.
static EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/embedded-archive"));

/// The built-in archive, if the image has one.
pub fn embedded() -> Option<&'static [u8]> {
    (!EMBEDDED.is_empty()).then_some(EMBEDDED)
}
