//! Unpacking the initramfs (cpio newc, optionally gzip-compressed) into the root ramfs.

use super::ramfs::{DevNode, RamDir, RamFile, RamSymlink};
use super::{Inode, Kind};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use svelt_abi::cpio;
use svelt_abi::fs as f;

/// Unpacks `archive` into `root`; returns the number of entries.
pub fn unpack(archive: &[u8], root: &Arc<RamDir>) -> Result<usize, &'static str> {
    let inflated;
    let data = if archive.starts_with(&[0x1f, 0x8b]) {
        inflated = gunzip(archive)?;
        &inflated[..]
    } else {
        archive
    };
    let mut n = 0;
    for e in cpio::entries(data) {
        let e = e.map_err(|_| "malformed cpio archive")?;
        let name = e.name.trim_start_matches("./").trim_start_matches('/');
        if name.is_empty() || name == "." {
            continue;
        }
        let (dir_path, leaf) = match name.rfind('/') {
            Some(i) => (&name[..i], &name[i + 1..]),
            None => ("", name),
        };
        let dir = mkdir_p(root, dir_path);
        let perm = e.mode & 0o7777;
        let node: Arc<dyn Inode> = match e.mode & f::S_IFMT {
            f::S_IFDIR => {
                if dir.lookup(leaf).is_ok_and(|d| d.kind() == Kind::Dir) {
                    n += 1;
                    continue;
                }
                RamDir::new(perm)
            }
            f::S_IFREG => RamFile::new(perm, e.data.to_vec()),
            f::S_IFLNK => RamSymlink::new(String::from_utf8_lossy(e.data).into_owned()),
            f::S_IFCHR => DevNode::new(perm, e.rdev_major, e.rdev_minor),
            _ => continue,
        };
        if let Some(d) = dir.as_any().downcast_ref::<RamDir>() {
            d.replace(leaf, node);
        }
        n += 1;
    }
    Ok(n)
}

fn mkdir_p(root: &Arc<RamDir>, path: &str) -> Arc<dyn Inode> {
    let mut cur: Arc<dyn Inode> = root.clone();
    for comp in path.split('/').filter(|c| !c.is_empty()) {
        cur = match cur.lookup(comp) {
            Ok(n) => n,
            Err(_) => cur
                .create(comp, Kind::Dir, 0o755)
                .unwrap_or_else(|_| RamDir::new(0o755)),
        };
    }
    cur
}

/// Decompresses a gzip member (RFC 1952).
fn gunzip(data: &[u8]) -> Result<Vec<u8>, &'static str> {
    if data.len() < 18 || data[2] != 8 {
        return Err("unsupported gzip header");
    }
    let flg = data[3];
    let mut pos = 10;
    if flg & 4 != 0 {
        let xlen = u16::from_le_bytes([
            *data.get(pos).ok_or("short gzip")?,
            *data.get(pos + 1).ok_or("short gzip")?,
        ]);
        pos += 2 + xlen as usize;
    }
    for bit in [8u8, 16] {
        if flg & bit != 0 {
            while *data.get(pos).ok_or("short gzip")? != 0 {
                pos += 1;
            }
            pos += 1;
        }
    }
    if flg & 2 != 0 {
        pos += 2;
    }
    let body = data.get(pos..).ok_or("short gzip")?;
    miniz_oxide::inflate::decompress_to_vec(body).map_err(|_| "corrupt gzip data")
}
