//! Writing flattened device trees (DTB, version 17) into a caller's buffer, without a heap: a
//! tree built node by node, and a firmware's tree copied with its RAM and boot arguments
//! replaced. The EFI stub uses both, so the kernel proper always boots from a DTB.

use crate::boot::memrange::Range;

const MAGIC: u32 = 0xd00d_feed;
const BEGIN_NODE: u32 = 1;
const END_NODE: u32 = 2;
const PROP: u32 = 3;
const NOP: u32 = 4;
const END: u32 = 9;
const HEADER_SIZE: usize = 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdtError {
    /// The output buffer (or the strings scratch area) is too small.
    NoSpace,
    /// The source tree is not a well-formed DTB.
    Malformed,
}

fn be32(b: &[u8], off: usize) -> Result<u32, FdtError> {
    let s = b.get(off..off + 4).ok_or(FdtError::Malformed)?;
    Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be64(b: &[u8], off: usize) -> Result<u64, FdtError> {
    Ok(((be32(b, off)? as u64) << 32) | be32(b, off + 4)? as u64)
}

/// Builds a DTB front to back in `buf`; property names collect in `strings` and are appended
/// when the tree is finished.
pub struct FdtWriter<'a> {
    buf: &'a mut [u8],
    strings: &'a mut [u8],
    pos: usize,
    struct_start: usize,
    strings_len: usize,
    depth: usize,
}

impl<'a> FdtWriter<'a> {
    /// Starts a tree whose memory-reservation block holds `reservations` (address, size).
    pub fn new(
        buf: &'a mut [u8],
        strings: &'a mut [u8],
        reservations: impl Iterator<Item = (u64, u64)>,
    ) -> Result<FdtWriter<'a>, FdtError> {
        let mut w = FdtWriter {
            buf,
            strings,
            pos: HEADER_SIZE,
            struct_start: 0,
            strings_len: 0,
            depth: 0,
        };
        for (addr, size) in reservations {
            w.put(&addr.to_be_bytes())?;
            w.put(&size.to_be_bytes())?;
        }
        w.put(&[0; 16])?;
        w.struct_start = w.pos;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), FdtError> {
        let end = self.pos + bytes.len();
        self.buf
            .get_mut(self.pos..end)
            .ok_or(FdtError::NoSpace)?
            .copy_from_slice(bytes);
        self.pos = end;
        Ok(())
    }

    fn put_u32(&mut self, v: u32) -> Result<(), FdtError> {
        self.put(&v.to_be_bytes())
    }

    fn pad4(&mut self) -> Result<(), FdtError> {
        while !self.pos.is_multiple_of(4) {
            self.put(&[0])?;
        }
        Ok(())
    }

    /// The offset of `name` in the strings block, added if it is not there yet.
    fn string_offset(&mut self, name: &str) -> Result<u32, FdtError> {
        let mut off = 0;
        for s in self.strings[..self.strings_len].split(|&b| b == 0) {
            if s == name.as_bytes() && off < self.strings_len {
                return Ok(off as u32);
            }
            off += s.len() + 1;
        }
        let at = self.strings_len;
        let end = at + name.len() + 1;
        let dst = self.strings.get_mut(at..end).ok_or(FdtError::NoSpace)?;
        dst[..name.len()].copy_from_slice(name.as_bytes());
        dst[name.len()] = 0;
        self.strings_len = end;
        Ok(at as u32)
    }

    pub fn begin_node(&mut self, name: &str) -> Result<(), FdtError> {
        self.put_u32(BEGIN_NODE)?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad4()?;
        self.depth += 1;
        Ok(())
    }

    pub fn end_node(&mut self) -> Result<(), FdtError> {
        self.depth = self.depth.checked_sub(1).ok_or(FdtError::Malformed)?;
        self.put_u32(END_NODE)
    }

    pub fn prop(&mut self, name: &str, value: &[u8]) -> Result<(), FdtError> {
        let off = self.string_offset(name)?;
        self.put_u32(PROP)?;
        self.put_u32(value.len() as u32)?;
        self.put_u32(off)?;
        self.put(value)?;
        self.pad4()
    }

    pub fn prop_u32(&mut self, name: &str, v: u32) -> Result<(), FdtError> {
        self.prop(name, &v.to_be_bytes())
    }

    pub fn prop_u64(&mut self, name: &str, v: u64) -> Result<(), FdtError> {
        self.prop(name, &v.to_be_bytes())
    }

    /// A string property (its value ends with a NUL). A list is one byte string with a NUL
    /// after each entry, through [`FdtWriter::prop`].
    pub fn prop_str(&mut self, name: &str, s: &str) -> Result<(), FdtError> {
        let off = self.string_offset(name)?;
        self.put_u32(PROP)?;
        self.put_u32(s.len() as u32 + 1)?;
        self.put_u32(off)?;
        self.put(s.as_bytes())?;
        self.put(&[0])?;
        self.pad4()
    }

    /// A property of 32-bit cells.
    pub fn prop_cells(&mut self, name: &str, cells: &[u32]) -> Result<(), FdtError> {
        let off = self.string_offset(name)?;
        self.put_u32(PROP)?;
        self.put_u32(cells.len() as u32 * 4)?;
        self.put_u32(off)?;
        for &c in cells {
            self.put_u32(c)?;
        }
        Ok(())
    }

    /// `reg` entries with the given cell counts (1 or 2 each; sizes 0 cells allowed).
    pub fn prop_reg(
        &mut self,
        addr_cells: u32,
        size_cells: u32,
        entries: &[(u64, u64)],
    ) -> Result<(), FdtError> {
        if !(1..=2).contains(&addr_cells) || size_cells > 2 {
            return Err(FdtError::Malformed);
        }
        let off = self.string_offset("reg")?;
        self.put_u32(PROP)?;
        self.put_u32(entries.len() as u32 * 4 * (addr_cells + size_cells))?;
        self.put_u32(off)?;
        for &(a, s) in entries {
            for (v, n) in [(a, addr_cells), (s, size_cells)] {
                if n == 2 {
                    self.put_u32((v >> 32) as u32)?;
                }
                if n >= 1 {
                    self.put_u32(v as u32)?;
                }
            }
        }
        Ok(())
    }

    /// Ends the tree, appends the strings and fills in the header; returns the total size.
    pub fn finish(mut self, boot_cpuid: u32) -> Result<usize, FdtError> {
        if self.depth != 0 {
            return Err(FdtError::Malformed);
        }
        self.put_u32(END)?;
        let struct_size = self.pos - self.struct_start;
        let strings_off = self.pos;
        let n = self.strings_len;
        let end = strings_off + n;
        self.buf
            .get_mut(strings_off..end)
            .ok_or(FdtError::NoSpace)?
            .copy_from_slice(&self.strings[..n]);
        let total = end.next_multiple_of(8);
        self.buf
            .get_mut(end..total)
            .ok_or(FdtError::NoSpace)?
            .fill(0);
        let header = [
            MAGIC,
            total as u32,
            self.struct_start as u32,
            strings_off as u32,
            HEADER_SIZE as u32,
            17,
            16,
            boot_cpuid,
            n as u32,
            struct_size as u32,
        ];
        for (i, v) in header.iter().enumerate() {
            self.buf[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
        }
        Ok(total)
    }
}

/// What the kernel reads from /chosen, as the EFI stub found it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Chosen<'a> {
    pub bootargs: &'a str,
    /// The initrd's physical range.
    pub initrd: Option<Range>,
    /// Random bytes for /chosen/rng-seed (replacing the source's, if any).
    pub rng_seed: Option<&'a [u8]>,
    /// The firmware's wall-clock time, seconds since the Unix epoch, for a machine whose real
    /// time clock the tree does not describe (/chosen/svelt,boot-realtime).
    pub realtime: Option<u64>,
}

impl Chosen<'_> {
    /// Its properties, as /chosen's last ones.
    pub fn write(&self, w: &mut FdtWriter) -> Result<(), FdtError> {
        w.prop_str("bootargs", self.bootargs)?;
        if let Some(r) = self.initrd {
            w.prop_u64("linux,initrd-start", r.start)?;
            w.prop_u64("linux,initrd-end", r.end)?;
        }
        if let Some(seed) = self.rng_seed {
            w.prop("rng-seed", seed)?;
        }
        if let Some(t) = self.realtime {
            w.prop_u64("svelt,boot-realtime", t)?;
        }
        Ok(())
    }

    fn replaces(&self, prop: &[u8]) -> bool {
        matches!(
            prop,
            b"bootargs" | b"linux,initrd-start" | b"linux,initrd-end" | b"svelt,boot-realtime"
        ) || (prop == b"rng-seed" && self.rng_seed.is_some())
    }
}

/// Writes one /memory node per RAM range, with the root's cell counts.
fn write_memory(w: &mut FdtWriter, ac: u32, sc: u32, ram: &[Range]) -> Result<(), FdtError> {
    let mut name = [0u8; 32];
    for r in ram.iter().filter(|r| !r.is_empty()) {
        w.begin_node(node_name(&mut name, "memory", r.start))?;
        w.prop_str("device_type", "memory")?;
        w.prop_reg(ac, sc, &[(r.start, r.end - r.start)])?;
        w.end_node()?;
    }
    Ok(())
}

/// "base@hex" in `buf`.
pub fn node_name<'b>(buf: &'b mut [u8; 32], base: &str, addr: u64) -> &'b str {
    let mut n = 0;
    for &b in base.as_bytes().iter().take(12) {
        buf[n] = b;
        n += 1;
    }
    buf[n] = b'@';
    n += 1;
    let digits = if addr == 0 {
        1
    } else {
        (16 - addr.leading_zeros() as usize / 4).max(1)
    };
    for i in (0..digits).rev() {
        let d = ((addr >> (i * 4)) & 0xf) as u8;
        buf[n] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
        n += 1;
    }
    core::str::from_utf8(&buf[..n]).unwrap_or("node")
}

/// Copies the DTB `src` into `out` (property names through `strings`), with its /memory nodes
/// replaced by `ram` and /chosen's boot arguments, initrd (and rng-seed when given) by `chosen`.
/// Everything else, reservations included, is kept. Returns the new tree's size.
pub fn rewrite(
    src: &[u8],
    out: &mut [u8],
    strings: &mut [u8],
    ram: &[Range],
    chosen: &Chosen,
) -> Result<usize, FdtError> {
    if be32(src, 0)? != MAGIC {
        return Err(FdtError::Malformed);
    }
    let total = (be32(src, 4)? as usize).min(src.len());
    let src = &src[..total];
    let off_struct = be32(src, 8)? as usize;
    let off_strings = be32(src, 12)? as usize;
    let off_rsv = be32(src, 16)? as usize;
    let boot_cpuid = be32(src, 28)?;
    let strings_size = be32(src, 32)? as usize;
    let src_strings = src
        .get(off_strings..off_strings + strings_size)
        .ok_or(FdtError::Malformed)?;

    // Reservations end with a zero pair; an unterminated block is refused.
    let mut n_rsv = 0;
    loop {
        let at = off_rsv + n_rsv * 16;
        if be64(src, at)? == 0 && be64(src, at + 8)? == 0 {
            break;
        }
        n_rsv += 1;
    }
    let rsv = (0..n_rsv).map(|i| {
        let at = off_rsv + i * 16;
        (be64(src, at).unwrap_or(0), be64(src, at + 8).unwrap_or(0))
    });
    let mut w = FdtWriter::new(out, strings, rsv)?;

    let name_of = |off: usize| -> Result<&[u8], FdtError> {
        let s = src_strings.get(off..).ok_or(FdtError::Malformed)?;
        let end = s.iter().position(|&b| b == 0).ok_or(FdtError::Malformed)?;
        Ok(&s[..end])
    };

    let mut pos = off_struct;
    let mut depth = 0usize;
    // Depth at which a skipped subtree (a /memory node) started, while skipping.
    let mut skip_from: Option<usize> = None;
    let mut in_chosen = false;
    let mut saw_chosen = false;
    let (mut ac, mut sc) = (2u32, 1u32);
    loop {
        let token = be32(src, pos)?;
        pos += 4;
        match token {
            BEGIN_NODE => {
                let rest = src.get(pos..).ok_or(FdtError::Malformed)?;
                let len = rest
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or(FdtError::Malformed)?;
                let name = core::str::from_utf8(&rest[..len]).map_err(|_| FdtError::Malformed)?;
                pos = (pos + len + 1).next_multiple_of(4);
                depth += 1;
                if skip_from.is_some() {
                    continue;
                }
                if depth == 2 && (name == "memory" || name.starts_with("memory@")) {
                    skip_from = Some(depth);
                    continue;
                }
                in_chosen = depth == 2 && name == "chosen";
                saw_chosen |= in_chosen;
                w.begin_node(name)?;
            }
            END_NODE => {
                if depth == 0 {
                    return Err(FdtError::Malformed);
                }
                if let Some(d) = skip_from {
                    if d == depth {
                        skip_from = None;
                    }
                    depth -= 1;
                    continue;
                }
                if depth == 2 && in_chosen {
                    chosen.write(&mut w)?;
                    in_chosen = false;
                }
                if depth == 1 {
                    if !saw_chosen {
                        w.begin_node("chosen")?;
                        chosen.write(&mut w)?;
                        w.end_node()?;
                    }
                    write_memory(&mut w, ac, sc, ram)?;
                }
                depth -= 1;
                w.end_node()?;
            }
            PROP => {
                let len = be32(src, pos)? as usize;
                let nameoff = be32(src, pos + 4)? as usize;
                let value = src.get(pos + 8..pos + 8 + len).ok_or(FdtError::Malformed)?;
                pos = (pos + 8 + len).next_multiple_of(4);
                if skip_from.is_some() {
                    continue;
                }
                let name = name_of(nameoff)?;
                if depth == 2 && in_chosen && chosen.replaces(name) {
                    continue;
                }
                if depth == 1 && value.len() == 4 {
                    let v = be32(value, 0)?;
                    match name {
                        b"#address-cells" => ac = v,
                        b"#size-cells" => sc = v,
                        _ => {}
                    }
                }
                let name = core::str::from_utf8(name).map_err(|_| FdtError::Malformed)?;
                w.prop(name, value)?;
            }
            NOP => {}
            END => break,
            _ => return Err(FdtError::Malformed),
        }
    }
    if depth != 0 {
        return Err(FdtError::Malformed);
    }
    w.finish(boot_cpuid)
}

/// The structure block's bounds (offset, size) of a version-17 DTB, checked against the blob.
fn struct_block(dtb: &[u8]) -> Result<(usize, usize), FdtError> {
    if be32(dtb, 0)? != MAGIC || be32(dtb, 20)? < 17 {
        return Err(FdtError::Malformed);
    }
    let off = be32(dtb, 8)? as usize;
    let size = be32(dtb, 36)? as usize;
    let total = (be32(dtb, 4)? as usize).min(dtb.len());
    off.checked_add(size)
        .filter(|&end| end <= total)
        .ok_or(FdtError::Malformed)?;
    Ok((off, size))
}

/// The token at `pos` of a structure block ending at `end`: its tag and length in bytes
/// (name or value and padding included).
fn token_at(dtb: &[u8], pos: usize, end: usize) -> Result<(u32, usize), FdtError> {
    let tag = be32(dtb, pos)?;
    let len = match tag {
        BEGIN_NODE => {
            let rest = dtb.get(pos + 4..end).ok_or(FdtError::Malformed)?;
            let name = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or(FdtError::Malformed)?;
            4 + (name + 1).next_multiple_of(4)
        }
        PROP => 12 + (be32(dtb, pos + 4)? as usize).next_multiple_of(4),
        END_NODE | NOP | END => 4,
        _ => return Err(FdtError::Malformed),
    };
    if pos + len > end {
        return Err(FdtError::Malformed);
    }
    Ok((tag, len))
}

/// Removes the `FDT_NOP` tokens from a DTB's structure block in place and shrinks
/// `size_dt_struct` to match (the strings block stays where it is); returns how many went.
/// libfdt leaves NOPs where a loader deleted or shrank something (QEMU's `-dtb` with its
/// /memory and /chosen edits, U-Boot's fix-ups), and the fdt crate Svelt reads trees with
/// panics on a NOP between a node's properties and its children. A tree that is not well
/// formed is left as it is (`Malformed`).
pub fn drop_nops(dtb: &mut [u8]) -> Result<usize, FdtError> {
    let (off, size) = struct_block(dtb)?;
    let end = off + size;
    // A dry run first, so that nothing moves in a tree that turns out malformed.
    let (mut pos, mut nops) = (off, 0);
    loop {
        let (tag, len) = token_at(dtb, pos, end)?;
        nops += (tag == NOP) as usize;
        pos += len;
        if tag == END {
            break;
        }
    }
    if nops == 0 {
        return Ok(0);
    }
    // Tokens only move towards the start, so reading ahead of the copies is safe.
    let (mut pos, mut to) = (off, off);
    loop {
        let (tag, len) = token_at(dtb, pos, end)?;
        if tag != NOP {
            dtb.copy_within(pos..pos + len, to);
            to += len;
        }
        pos += len;
        if tag == END {
            break;
        }
    }
    dtb[to..end].fill(0);
    dtb[36..40].copy_from_slice(&((to - off) as u32).to_be_bytes());
    Ok(nops)
}

/// The initrd a loader named in the DTB `src`: /chosen's `linux,initrd-start` and
/// `linux,initrd-end` (one or two cells each, as Linux reads them). `None` when either is missing
/// or malformed, the range is empty, or the tree is not a well-formed DTB. An older GRUB's
/// `initrd` (2.06) hands the initrd over this way, in the tree it installs for the firmware.
pub fn chosen_initrd(src: &[u8]) -> Option<Range> {
    if be32(src, 0).ok()? != MAGIC {
        return None;
    }
    let total = (be32(src, 4).ok()? as usize).min(src.len());
    let src = &src[..total];
    let mut pos = be32(src, 8).ok()? as usize;
    let off_strings = be32(src, 12).ok()? as usize;
    let strings = src.get(off_strings..)?;
    let cells = |v: &[u8]| match v.len() {
        4 => be32(v, 0).ok().map(u64::from),
        8 => be64(v, 0).ok(),
        _ => None,
    };
    let (mut depth, mut in_chosen) = (0usize, false);
    let (mut start, mut end) = (None, None);
    loop {
        let token = be32(src, pos).ok()?;
        pos += 4;
        match token {
            BEGIN_NODE => {
                let rest = src.get(pos..)?;
                let len = rest.iter().position(|&b| b == 0)?;
                depth += 1;
                in_chosen = depth == 2 && &rest[..len] == b"chosen";
                pos = (pos + len + 1).next_multiple_of(4);
            }
            END_NODE => {
                if depth == 2 && in_chosen {
                    break;
                }
                in_chosen = false;
                depth = depth.checked_sub(1)?;
            }
            PROP => {
                let len = be32(src, pos).ok()? as usize;
                let nameoff = be32(src, pos + 4).ok()? as usize;
                let value = src.get(pos + 8..(pos + 8).checked_add(len)?)?;
                pos = (pos + 8 + len).next_multiple_of(4);
                if depth == 2 && in_chosen {
                    let name = strings.get(nameoff..)?;
                    let name = &name[..name.iter().position(|&b| b == 0)?];
                    match name {
                        b"linux,initrd-start" => start = cells(value),
                        b"linux,initrd-end" => end = cells(value),
                        _ => {}
                    }
                }
            }
            NOP => {}
            _ => return None,
        }
    }
    let (start, end) = (start?, end?);
    (end > start).then(|| Range::new(start, end))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Reads a property of the node at `path` with the fdt crate's rules, by a tiny walker of
    /// our own (the host tests have no fdt crate): returns its bytes.
    pub(crate) fn find_prop<'a>(dtb: &'a [u8], path: &str, prop: &str) -> Option<&'a [u8]> {
        let off_struct = be32(dtb, 8).ok()? as usize;
        let off_strings = be32(dtb, 12).ok()? as usize;
        let want: std::vec::Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let mut stack: std::vec::Vec<std::string::String> = std::vec::Vec::new();
        let mut pos = off_struct;
        loop {
            let t = be32(dtb, pos).ok()?;
            pos += 4;
            match t {
                BEGIN_NODE => {
                    let len = dtb[pos..].iter().position(|&b| b == 0)?;
                    stack.push(std::string::String::from_utf8(dtb[pos..pos + len].to_vec()).ok()?);
                    pos = (pos + len + 1).next_multiple_of(4);
                }
                END_NODE => {
                    stack.pop();
                }
                PROP => {
                    let len = be32(dtb, pos).ok()? as usize;
                    let no = be32(dtb, pos + 4).ok()? as usize;
                    let s = &dtb[off_strings + no..];
                    let name = &s[..s.iter().position(|&b| b == 0)?];
                    let here: std::vec::Vec<&str> =
                        stack.iter().skip(1).map(|s| s.as_str()).collect();
                    if here == want && name == prop.as_bytes() {
                        return Some(&dtb[pos + 8..pos + 8 + len]);
                    }
                    pos = (pos + 8 + len).next_multiple_of(4);
                }
                NOP => {}
                _ => return None,
            }
        }
    }

    pub(crate) fn node_names(dtb: &[u8]) -> std::vec::Vec<std::string::String> {
        let off_struct = be32(dtb, 8).unwrap() as usize;
        let mut out = std::vec::Vec::new();
        let mut pos = off_struct;
        let mut depth = 0;
        loop {
            let t = be32(dtb, pos).unwrap();
            pos += 4;
            match t {
                BEGIN_NODE => {
                    let len = dtb[pos..].iter().position(|&b| b == 0).unwrap();
                    depth += 1;
                    out.push(std::format!(
                        "{}{}",
                        "  ".repeat(depth - 1),
                        std::str::from_utf8(&dtb[pos..pos + len]).unwrap()
                    ));
                    pos = (pos + len + 1).next_multiple_of(4);
                }
                END_NODE => depth -= 1,
                PROP => {
                    let len = be32(dtb, pos).unwrap() as usize;
                    pos = (pos + 8 + len).next_multiple_of(4);
                }
                NOP => {}
                _ => return out,
            }
        }
    }

    const QEMU_DTB: &[u8] = include_bytes!("../../testdata/fdt/qemu-virt-gicv3-smp2.dtb");

    /// A tree QEMU edited (`-M ast2700a1-evb -dtb tests/data/ast2700-evb.dtb -append ...`,
    /// written out by `dumpdtb=`): libfdt left NOPs where it replaced /memory and /chosen.
    const EDITED_DTB: &[u8] = include_bytes!("../../testdata/fdt/qemu-ast2700-edited.dtb");

    fn count_nops(dtb: &[u8]) -> usize {
        let (off, size) = struct_block(dtb).unwrap();
        let mut pos = off;
        let mut n = 0;
        loop {
            let (tag, len) = token_at(dtb, pos, off + size).unwrap();
            n += (tag == NOP) as usize;
            pos += len;
            if tag == END {
                return n;
            }
        }
    }

    #[test]
    fn drop_nops_compacts_an_edited_tree_and_keeps_its_content() {
        let mut dtb = EDITED_DTB.to_vec();
        let nops = count_nops(&dtb);
        assert!(nops > 0, "the sample has NOPs");
        let size_before = be32(&dtb, 36).unwrap();
        assert_eq!(drop_nops(&mut dtb), Ok(nops));
        assert_eq!(count_nops(&dtb), 0);
        assert_eq!(be32(&dtb, 36).unwrap(), size_before - 4 * nops as u32);
        // Every property reads as before.
        for (path, prop) in [
            ("/chosen", "bootargs"),
            ("/chosen", "stdout-path"),
            ("/aliases", "serial0"),
            ("/cpus/cpu@3", "reg"),
            ("/soc/serial@12c1a000", "reg-shift"),
        ] {
            assert_eq!(
                find_prop(&dtb, path, prop),
                find_prop(EDITED_DTB, path, prop),
                "{path} {prop}"
            );
            assert!(find_prop(&dtb, path, prop).is_some(), "{path} {prop}");
        }
        // Nothing left to do the second time.
        assert_eq!(drop_nops(&mut dtb), Ok(0));
        // A tree without NOPs is not touched.
        let mut clean = QEMU_DTB.to_vec();
        let n = count_nops(&clean);
        assert_eq!(drop_nops(&mut clean), Ok(n));
    }

    #[test]
    fn drop_nops_leaves_a_malformed_tree_alone() {
        // Cut short inside the structure block: refused, and not a byte changed.
        let (off, size) = struct_block(EDITED_DTB).unwrap();
        let mut cut = EDITED_DTB[..off + size / 2].to_vec();
        let before = cut.clone();
        assert_eq!(drop_nops(&mut cut), Err(FdtError::Malformed));
        assert_eq!(cut, before);
        // An unknown token where the last NOP was: refused after NOPs were seen, untouched.
        let mut bad = EDITED_DTB.to_vec();
        let (mut pos, mut last_nop) = (off, None);
        loop {
            let (tag, len) = token_at(&bad, pos, off + size).unwrap();
            if tag == NOP {
                last_nop = Some(pos);
            }
            pos += len;
            if tag == END {
                break;
            }
        }
        let at = last_nop.unwrap();
        bad[at..at + 4].copy_from_slice(&7u32.to_be_bytes());
        let before = bad.clone();
        assert_eq!(drop_nops(&mut bad), Err(FdtError::Malformed));
        assert_eq!(bad, before);
        assert_eq!(drop_nops(&mut [0u8; 8]), Err(FdtError::Malformed));
    }

    #[test]
    fn writer_builds_a_valid_tree() {
        let mut buf = [0u8; 1024];
        let mut strings = [0u8; 128];
        let mut w = FdtWriter::new(&mut buf, &mut strings, [(0x1000, 0x2000)].into_iter()).unwrap();
        w.begin_node("").unwrap();
        w.prop_u32("#address-cells", 2).unwrap();
        w.prop_u32("#size-cells", 2).unwrap();
        w.begin_node("chosen").unwrap();
        w.prop_str("bootargs", "a b").unwrap();
        w.end_node().unwrap();
        w.begin_node("memory@40000000").unwrap();
        w.prop_reg(2, 2, &[(0x4000_0000, 0x1000_0000)]).unwrap();
        w.end_node().unwrap();
        w.end_node().unwrap();
        let n = w.finish(0).unwrap();
        let dtb = &buf[..n];
        assert_eq!(be32(dtb, 0).unwrap(), MAGIC);
        assert_eq!(be32(dtb, 4).unwrap() as usize, n);
        assert_eq!(find_prop(dtb, "/chosen", "bootargs"), Some(&b"a b\0"[..]));
        assert_eq!(
            find_prop(dtb, "/memory@40000000", "reg"),
            Some(&[0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0][..])
        );
        // The reservation block: one entry, then the terminator.
        let rsv = be32(dtb, 16).unwrap() as usize;
        assert_eq!(be64(dtb, rsv).unwrap(), 0x1000);
        assert_eq!(be64(dtb, rsv + 8).unwrap(), 0x2000);
        assert_eq!(be64(dtb, rsv + 16).unwrap(), 0);
        // "#address-cells", "#size-cells", "bootargs", "reg": each name stored once.
        assert_eq!(be32(dtb, 32).unwrap(), 15 + 12 + 9 + 4);
    }

    #[test]
    fn writer_reports_a_short_buffer() {
        let mut buf = [0u8; 64];
        let mut strings = [0u8; 16];
        let mut w = FdtWriter::new(&mut buf, &mut strings, core::iter::empty()).unwrap();
        w.begin_node("").unwrap();
        assert_eq!(w.prop_str("bootargs", "x"), Err(FdtError::NoSpace));
        let mut buf = [0u8; 256];
        let mut strings = [0u8; 4];
        let mut w = FdtWriter::new(&mut buf, &mut strings, core::iter::empty()).unwrap();
        assert_eq!(w.prop_u32("#address-cells", 2), Err(FdtError::NoSpace));
    }

    #[test]
    fn rewrite_replaces_memory_and_chosen_of_qemus_tree() {
        let mut out = [0u8; 0x20000];
        let mut strings = [0u8; 0x2000];
        let ram = [
            Range::new(0x4000_0000, 0x7c00_0000),
            Range::new(0x7c10_0000, 0x8000_0000),
        ];
        let chosen = Chosen {
            bootargs: "svelt.exit=semihosting init=/bin/x",
            initrd: Some(Range::new(0x4800_0000, 0x4810_0000)),
            rng_seed: None,
            realtime: None,
        };
        let n = rewrite(QEMU_DTB, &mut out, &mut strings, &ram, &chosen).unwrap();
        let dtb = &out[..n];
        let names = node_names(dtb);
        let before = node_names(QEMU_DTB);
        // Every node of QEMU's tree but its one /memory is still there, in order.
        let kept: std::vec::Vec<_> = before
            .iter()
            .filter(|n| !n.starts_with("  memory@"))
            .cloned()
            .collect();
        let now: std::vec::Vec<_> = names
            .iter()
            .filter(|n| !n.starts_with("  memory@"))
            .cloned()
            .collect();
        assert_eq!(kept, now);
        assert!(before.contains(&"  memory@40000000".into()));
        assert!(names.contains(&"  memory@40000000".into()));
        assert!(names.contains(&"  memory@7c100000".into()));
        assert_eq!(
            find_prop(dtb, "/memory@7c100000", "reg"),
            Some(&[0, 0, 0, 0, 0x7c, 0x10, 0, 0, 0, 0, 0, 0, 0x03, 0xf0, 0, 0][..])
        );
        assert_eq!(
            find_prop(dtb, "/chosen", "bootargs"),
            Some(&b"svelt.exit=semihosting init=/bin/x\0"[..])
        );
        assert_eq!(
            find_prop(dtb, "/chosen", "linux,initrd-start"),
            Some(&0x4800_0000u64.to_be_bytes()[..])
        );
        assert_eq!(
            find_prop(dtb, "/chosen", "linux,initrd-end"),
            Some(&0x4810_0000u64.to_be_bytes()[..])
        );
        // QEMU's own /chosen properties survive (stdout-path, its rng-seed).
        assert_eq!(
            find_prop(dtb, "/chosen", "stdout-path"),
            find_prop(QEMU_DTB, "/chosen", "stdout-path")
        );
        assert!(find_prop(dtb, "/chosen", "rng-seed").is_some());
        assert_eq!(
            find_prop(dtb, "/pl011@9000000", "reg"),
            find_prop(QEMU_DTB, "/pl011@9000000", "reg")
        );
    }

    #[test]
    fn rewrite_adds_chosen_when_missing_and_refuses_junk() {
        // A tree of a root only, written here, then rewritten.
        let mut buf = [0u8; 512];
        let mut strings = [0u8; 64];
        let mut w = FdtWriter::new(&mut buf, &mut strings, core::iter::empty()).unwrap();
        w.begin_node("").unwrap();
        w.prop_u32("#address-cells", 1).unwrap();
        w.prop_u32("#size-cells", 1).unwrap();
        w.end_node().unwrap();
        let n = w.finish(0).unwrap();
        let mut out = [0u8; 1024];
        let mut s2 = [0u8; 128];
        let ram = [Range::new(0x8000_0000, 0x9000_0000)];
        let chosen = Chosen {
            bootargs: "x",
            initrd: None,
            rng_seed: Some(&[1, 2, 3, 4]),
            realtime: Some(1_795_537_155),
        };
        let m = rewrite(&buf[..n], &mut out, &mut s2, &ram, &chosen).unwrap();
        let dtb = &out[..m];
        assert_eq!(find_prop(dtb, "/chosen", "bootargs"), Some(&b"x\0"[..]));
        assert_eq!(
            find_prop(dtb, "/chosen", "rng-seed"),
            Some(&[1, 2, 3, 4][..])
        );
        assert_eq!(find_prop(dtb, "/chosen", "linux,initrd-start"), None);
        assert_eq!(
            find_prop(dtb, "/chosen", "svelt,boot-realtime"),
            Some(&1_795_537_155u64.to_be_bytes()[..])
        );
        assert_eq!(
            find_prop(dtb, "/memory@80000000", "reg"),
            Some(&[0x80, 0, 0, 0, 0x10, 0, 0, 0][..])
        );

        let mut junk = QEMU_DTB.to_vec();
        junk[0] = 0;
        assert_eq!(
            rewrite(&junk, &mut out, &mut s2, &ram, &chosen),
            Err(FdtError::Malformed)
        );
        // Cut short: every truncation is refused or rewritten, never a panic.
        let mut big = std::vec![0u8; 0x20000];
        let mut bs = std::vec![0u8; 0x2000];
        for cut in (0..QEMU_DTB.len()).step_by(97) {
            let mut t = QEMU_DTB[..cut].to_vec();
            if t.len() >= 8 {
                t[4..8].copy_from_slice(&(cut as u32).to_be_bytes());
            }
            let _ = rewrite(&t, &mut big, &mut bs, &ram, &chosen);
        }
    }

    #[test]
    fn chosen_initrd_reads_a_loaders_range() {
        // QEMU's tree without -initrd names none.
        assert_eq!(chosen_initrd(QEMU_DTB), None);
        // Rewritten with one (two cells each), it is found.
        let mut out = [0u8; 0x20000];
        let mut strings = [0u8; 0x2000];
        let ram = [Range::new(0x4000_0000, 0x8000_0000)];
        let mut chosen = Chosen {
            bootargs: "x",
            initrd: Some(Range::new(0x4800_0000, 0x4812_3456)),
            rng_seed: None,
            realtime: None,
        };
        let n = rewrite(QEMU_DTB, &mut out, &mut strings, &ram, &chosen).unwrap();
        assert_eq!(
            chosen_initrd(&out[..n]),
            Some(Range::new(0x4800_0000, 0x4812_3456))
        );
        // One cell each, as some loaders write them; a property of another node is not read.
        let mut buf = [0u8; 512];
        let mut s = [0u8; 64];
        let mut w = FdtWriter::new(&mut buf, &mut s, core::iter::empty()).unwrap();
        w.begin_node("").unwrap();
        w.begin_node("other").unwrap();
        w.prop_u32("linux,initrd-start", 0x100).unwrap();
        w.end_node().unwrap();
        w.begin_node("chosen").unwrap();
        w.prop_u32("linux,initrd-start", 0x4000_0000).unwrap();
        w.prop_u32("linux,initrd-end", 0x4000_1000).unwrap();
        w.end_node().unwrap();
        w.end_node().unwrap();
        let m = w.finish(0).unwrap();
        assert_eq!(
            chosen_initrd(&buf[..m]),
            Some(Range::new(0x4000_0000, 0x4000_1000))
        );
        // An empty or reversed range, or only one end, is no initrd.
        chosen.initrd = Some(Range::new(0x4800_0000, 0x4800_0000));
        let n = rewrite(QEMU_DTB, &mut out, &mut strings, &ram, &chosen).unwrap();
        assert_eq!(chosen_initrd(&out[..n]), None);
        let mut w = FdtWriter::new(&mut buf, &mut s, core::iter::empty()).unwrap();
        w.begin_node("").unwrap();
        w.begin_node("chosen").unwrap();
        w.prop_u64("linux,initrd-start", 0x4000_0000).unwrap();
        w.prop("linux,initrd-end", &[1, 2, 3]).unwrap();
        w.end_node().unwrap();
        w.end_node().unwrap();
        let m = w.finish(0).unwrap();
        assert_eq!(chosen_initrd(&buf[..m]), None);
        // Junk and every truncation: `None` or a range, never a panic.
        assert_eq!(chosen_initrd(&[0; 64]), None);
        let full = out[..n].to_vec();
        for cut in 0..full.len() {
            let mut t = full[..cut].to_vec();
            if t.len() >= 8 {
                t[4..8].copy_from_slice(&(cut as u32).to_be_bytes());
            }
            let _ = chosen_initrd(&t);
        }
    }

    #[test]
    fn node_names_in_hex() {
        let mut b = [0u8; 32];
        assert_eq!(node_name(&mut b, "memory", 0x4000_0000), "memory@40000000");
        assert_eq!(node_name(&mut b, "cpu", 0), "cpu@0");
        assert_eq!(node_name(&mut b, "cpu", 0x1_0000_0203), "cpu@100000203");
    }
}
