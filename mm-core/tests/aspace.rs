//! Address-space bookkeeping driven through the fake page table: what each operation does to
//! the VMAs, to the totals Linux's limits count, and to the page-table entries.

mod fake;

use fake::{layout, new_mm, touch, touch_range, Entry, FakeTable, TestBacking, TestMm};
use svelt_abi::uapi::errno::Errno;
use svelt_mm::layout::{MMAP_MIN, MMAP_TOP, PAGE_SIZE as P, STACK_TOP};
use svelt_mm::{Access, Prot, VmBacking};

const MAX: usize = 65530;
const A: usize = 0x4000_0000;
const R: u32 = Prot::READ;
const RW: u32 = Prot::READ | Prot::WRITE;
const RX: u32 = Prot::READ | Prot::EXEC;

fn anon(mm: &mut TestMm, start: usize, pages: usize, prot: u32) {
    mm.map(start, start + pages * P, Prot(prot), TestBacking::Anon, MAX)
        .unwrap();
}

fn file(id: u32, off: u64) -> TestBacking {
    TestBacking::File {
        id,
        off,
        shared: false,
    }
}

/// The entries outside `[start, end)`, to check an operation left them alone.
fn entries_outside(mm: &TestMm, start: usize, end: usize) -> Vec<(usize, Entry)> {
    mm.table()
        .entries
        .iter()
        .filter(|(&va, _)| va < start || va >= end)
        .map(|(&va, &e)| (va, e))
        .collect()
}

// ---- map ----------------------------------------------------------------------------------

#[test]
fn map_adds_one_vma_and_counts_it() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 4, RW);
    assert_eq!(layout(&mm), [(A, A + 4 * P, RW, false)]);
    assert_eq!(mm.vmas().count(), 1);
    assert_eq!(mm.vmas().total_vm(), 4 * P);
    assert_eq!(mm.vmas().data_vm(), 4 * P);
    assert_eq!(mm.vmas().locked_vm(), 0);
    assert!(mm.table().entries.is_empty(), "mapping brings in no page");
}

#[test]
fn neighbouring_anonymous_mappings_merge_when_alike() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 2, RW);
    anon(&mut mm, A + 2 * P, 2, RW);
    // Below as well as above: the new VMA joins the one it touches from either side.
    anon(&mut mm, A - 3 * P, 3, RW);
    assert_eq!(layout(&mm), [(A - 3 * P, A + 4 * P, RW, false)]);
    anon(&mut mm, A + 4 * P, 1, R);
    assert_eq!(
        layout(&mm),
        [
            (A - 3 * P, A + 4 * P, RW, false),
            (A + 4 * P, A + 5 * P, R, false)
        ]
    );
    assert_eq!(mm.vmas().total_vm(), 8 * P);
    assert_eq!(mm.vmas().data_vm(), 7 * P);
}

#[test]
fn file_and_shared_mappings_never_merge() {
    let (mut mm, _) = new_mm();
    mm.map(A, A + 2 * P, Prot(R), file(1, 0), MAX).unwrap();
    mm.map(A + 2 * P, A + 4 * P, Prot(R), file(1, 2 * P as u64), MAX)
        .unwrap();
    mm.map(
        A + 4 * P,
        A + 5 * P,
        Prot(RW),
        TestBacking::Shared(7, 0),
        MAX,
    )
    .unwrap();
    mm.map(
        A + 5 * P,
        A + 6 * P,
        Prot(RW),
        TestBacking::Shared(7, P),
        MAX,
    )
    .unwrap();
    assert_eq!(mm.vmas().count(), 4);
    // Shared memory is not private data.
    assert_eq!(mm.vmas().data_vm(), 0);
}

#[test]
fn map_fixed_replaces_the_middle_of_a_mapping() {
    let (mut mm, pool) = new_mm();
    mm.map(A, A + 8 * P, Prot(R), file(3, 0x10000), MAX)
        .unwrap();
    let frames = touch_range(&mut mm, A, A + 8 * P);
    let before = entries_outside(&mm, A + 2 * P, A + 5 * P);
    mm.map(A + 2 * P, A + 5 * P, Prot(RW), TestBacking::Anon, MAX)
        .unwrap();
    assert_eq!(
        layout(&mm),
        [
            (A, A + 2 * P, R, false),
            (A + 2 * P, A + 5 * P, RW, false),
            (A + 5 * P, A + 8 * P, R, false)
        ]
    );
    let backings: Vec<TestBacking> = mm.vmas().iter().map(|v| v.backing.clone()).collect();
    assert_eq!(
        backings,
        [
            file(3, 0x10000),
            TestBacking::Anon,
            file(3, 0x10000 + 5 * P as u64)
        ]
    );
    // Exactly the replaced pages went; the rest kept their entries.
    assert_eq!(pool.borrow().freed, frames[2..5]);
    assert_eq!(entries_outside(&mm, A + 2 * P, A + 5 * P), before);
    assert!(mm.table().mapped_in(A + 2 * P, A + 5 * P).is_empty());
    assert_eq!(mm.vmas().total_vm(), 8 * P);
    assert_eq!(mm.vmas().data_vm(), 3 * P);
}

#[test]
fn map_fixed_over_several_mappings_leaves_one() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 2, R);
    anon(&mut mm, A + 3 * P, 2, RX);
    anon(&mut mm, A + 6 * P, 2, RW);
    touch_range(&mut mm, A, A + 2 * P);
    touch_range(&mut mm, A + 6 * P, A + 8 * P);
    mm.map(A + P, A + 7 * P, Prot(R), file(9, 0), MAX).unwrap();
    assert_eq!(
        layout(&mm),
        [
            (A, A + P, R, false),
            (A + P, A + 7 * P, R, false),
            (A + 7 * P, A + 8 * P, RW, false)
        ]
    );
    assert_eq!(pool.borrow().freed.len(), 2);
    assert_eq!(mm.table().mapped_in(A, A + 8 * P), [A, A + 7 * P]);
    assert_eq!(mm.vmas().total_vm(), 8 * P);
}

// ---- munmap -------------------------------------------------------------------------------

#[test]
fn munmap_of_the_middle_splits_in_two_and_frees_only_that_range() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 10, RW);
    let frames = touch_range(&mut mm, A, A + 10 * P);
    mm.unmap(A + 3 * P, A + 6 * P, MAX).unwrap();
    assert_eq!(
        layout(&mm),
        [
            (A, A + 3 * P, RW, false),
            (A + 6 * P, A + 10 * P, RW, false)
        ]
    );
    assert_eq!(pool.borrow().freed, frames[3..6]);
    assert_eq!(pool.borrow().live(), 7);
    assert_eq!(mm.vmas().total_vm(), 7 * P);
    assert_eq!(mm.vmas().data_vm(), 7 * P);
    assert!(mm.vmas().find(A + 4 * P).is_none());
    assert_eq!(mm.vmas().find(A + 6 * P).unwrap().start, A + 6 * P);
}

#[test]
fn munmap_across_mappings_and_holes_trims_both_ends() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 4, RW);
    mm.map(A + 6 * P, A + 8 * P, Prot(R), file(2, 0), MAX)
        .unwrap();
    anon(&mut mm, A + 10 * P, 4, RX);
    touch_range(&mut mm, A, A + 4 * P);
    touch_range(&mut mm, A + 6 * P, A + 8 * P);
    touch_range(&mut mm, A + 10 * P, A + 14 * P);
    mm.unmap(A + 2 * P, A + 12 * P, MAX).unwrap();
    assert_eq!(
        layout(&mm),
        [
            (A, A + 2 * P, RW, false),
            (A + 12 * P, A + 14 * P, RX, false)
        ]
    );
    assert_eq!(pool.borrow().freed.len(), 6);
    assert_eq!(
        mm.table().mapped_in(0, usize::MAX),
        [A, A + P, A + 12 * P, A + 13 * P]
    );
    assert_eq!(mm.vmas().total_vm(), 4 * P);
    assert_eq!(mm.vmas().data_vm(), 2 * P);
}

#[test]
fn munmap_where_nothing_is_mapped_changes_nothing() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 2, RW);
    touch_range(&mut mm, A, A + 2 * P);
    mm.unmap(A + 4 * P, A + 8 * P, MAX).unwrap();
    assert_eq!(layout(&mm), [(A, A + 2 * P, RW, false)]);
    assert!(pool.borrow().freed.is_empty());
}

/// A reversed range (a caller's end that wrapped past the top of the address space, as
/// mremap's growth once did) changes nothing and does not panic.
#[test]
fn a_reversed_range_changes_nothing() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 4, RW);
    touch_range(&mut mm, A, A + 4 * P);
    mm.unmap(A + 2 * P, A, MAX).unwrap();
    assert_eq!(layout(&mm), [(A, A + 4 * P, RW, false)]);
    assert!(pool.borrow().freed.is_empty());
}

// ---- mprotect -----------------------------------------------------------------------------

#[test]
fn mprotect_of_the_middle_splits_in_three_and_rewrites_only_that_range() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 9, RW);
    touch_range(&mut mm, A, A + 9 * P);
    let before = entries_outside(&mm, A + 3 * P, A + 6 * P);
    mm.protect(A + 3 * P, A + 6 * P, Prot(R), MAX).unwrap();
    assert_eq!(
        layout(&mm),
        [
            (A, A + 3 * P, RW, false),
            (A + 3 * P, A + 6 * P, R, false),
            (A + 6 * P, A + 9 * P, RW, false)
        ]
    );
    for va in (A + 3 * P..A + 6 * P).step_by(P) {
        let e = mm.table().entry(va).unwrap();
        assert_eq!((e.prot, e.writable), (Prot(R), false), "page {va:#x}");
    }
    assert_eq!(entries_outside(&mm, A + 3 * P, A + 6 * P), before);
    assert!(pool.borrow().freed.is_empty(), "mprotect frees nothing");
    assert_eq!(mm.vmas().total_vm(), 9 * P);
    assert_eq!(mm.vmas().data_vm(), 6 * P);
}

#[test]
fn mprotect_back_to_the_old_rights_merges_again() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 9, RW);
    mm.protect(A + 3 * P, A + 6 * P, Prot(R), MAX).unwrap();
    assert_eq!(mm.vmas().count(), 3);
    mm.protect(A + 3 * P, A + 6 * P, Prot(RW), MAX).unwrap();
    assert_eq!(layout(&mm), [(A, A + 9 * P, RW, false)]);
    assert_eq!(mm.vmas().data_vm(), 9 * P);
}

/// One mprotect over three regions that end up alike leaves one region, as on Linux (every
/// boundary inside the range merges, not only its ends).
#[test]
fn mprotect_across_several_regions_merges_them_all() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 2, R);
    anon(&mut mm, A + 2 * P, 2, RW);
    anon(&mut mm, A + 4 * P, 2, R);
    assert_eq!(mm.vmas().count(), 3);
    mm.protect(A, A + 6 * P, Prot(RW), MAX).unwrap();
    assert_eq!(layout(&mm), [(A, A + 6 * P, RW, false)]);
    assert_eq!(mm.vmas().data_vm(), 6 * P);
}

#[test]
fn mprotect_over_a_hole_fails_and_changes_nothing() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 2, RW);
    anon(&mut mm, A + 3 * P, 2, RW);
    touch_range(&mut mm, A, A + 2 * P);
    let (vmas, entries) = (layout(&mm), mm.table().entries.clone());
    assert_eq!(
        mm.protect(A + P, A + 4 * P, Prot(R), MAX),
        Err(Errno::ENOMEM)
    );
    assert_eq!(layout(&mm), vmas);
    assert_eq!(mm.table().entries, entries);
}

#[test]
fn mprotect_of_a_file_mapping_keeps_each_piece_at_its_offset() {
    let (mut mm, _) = new_mm();
    mm.map(A, A + 6 * P, Prot(R), file(4, 0x3000), MAX).unwrap();
    mm.protect(A + 2 * P, A + 4 * P, Prot(RX), MAX).unwrap();
    let offs: Vec<TestBacking> = mm.vmas().iter().map(|v| v.backing.clone()).collect();
    assert_eq!(
        offs,
        [
            file(4, 0x3000),
            file(4, 0x3000 + 2 * P as u64),
            file(4, 0x3000 + 4 * P as u64)
        ]
    );
    // Back to read-only: file pieces stay apart (only anonymous memory merges).
    mm.protect(A + 2 * P, A + 4 * P, Prot(R), MAX).unwrap();
    assert_eq!(mm.vmas().count(), 3);
}

#[test]
fn data_vm_counts_private_writable_memory_but_not_the_stack() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 4, RW);
    anon(&mut mm, STACK_TOP - 8 * P, 8, RW);
    mm.map(
        A + 8 * P,
        A + 10 * P,
        Prot(RW),
        TestBacking::Shared(1, 0),
        MAX,
    )
    .unwrap();
    assert_eq!(mm.vmas().data_vm(), 4 * P);
    assert_eq!(mm.vmas().total_vm(), 14 * P);
    mm.protect(A, A + P, Prot(R), MAX).unwrap();
    assert_eq!(mm.vmas().data_vm(), 3 * P);
    mm.protect(A + 8 * P, A + 10 * P, Prot(R), MAX).unwrap();
    assert_eq!(mm.vmas().data_vm(), 3 * P);
    mm.unmap(A + 2 * P, A + 3 * P, MAX).unwrap();
    assert_eq!(mm.vmas().data_vm(), 2 * P);
    assert_eq!(mm.vmas().total_vm(), 13 * P);
}

// ---- placement (find_free) ----------------------------------------------------------------

#[test]
fn find_free_places_mappings_top_down_from_mmap_top() {
    let (mut mm, _) = new_mm();
    let a = mm.vmas().find_free(4 * P, 0).unwrap();
    assert_eq!(a, MMAP_TOP - 4 * P);
    anon(&mut mm, a, 4, RW);
    let b = mm.vmas().find_free(2 * P, 0).unwrap();
    assert_eq!(b, a - 2 * P);
    anon(&mut mm, b, 2, R);
    let c = mm.vmas().find_free(P, 0).unwrap();
    assert_eq!(c, b - P);
}

/// A length close to the whole address space fits nowhere (mmap's ENOMEM), and a hint whose end
/// overflows is ignored, not an error: neither wraps around.
#[test]
fn find_free_refuses_a_huge_length_and_ignores_an_overflowing_hint() {
    let (mm, _) = new_mm();
    assert_eq!(mm.vmas().find_free(usize::MAX & !(P - 1), 0), None);
    assert_eq!(mm.vmas().find_free(MMAP_TOP, 0), None);
    assert_eq!(
        mm.vmas().find_free(2 * P, usize::MAX & !(P - 1)),
        Some(MMAP_TOP - 2 * P)
    );
}

#[test]
fn find_free_takes_a_free_hint_and_ignores_a_bad_one() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 4, RW);
    assert_eq!(mm.vmas().find_free(2 * P, A + 8 * P), Some(A + 8 * P));
    // Taken, below mmap_min_addr, or reaching past MMAP_TOP: placed top-down instead.
    assert_eq!(
        mm.vmas().find_free(2 * P, A + 3 * P),
        Some(MMAP_TOP - 2 * P)
    );
    assert_eq!(
        mm.vmas().find_free(2 * P, MMAP_MIN - P),
        Some(MMAP_TOP - 2 * P)
    );
    assert_eq!(
        mm.vmas().find_free(2 * P, MMAP_TOP - P),
        Some(MMAP_TOP - 2 * P)
    );
    assert_eq!(mm.vmas().find_free(2 * P, MMAP_MIN), Some(MMAP_MIN));
}

#[test]
fn find_free_reuses_the_hole_munmap_leaves() {
    let (mut mm, _) = new_mm();
    let mut starts = Vec::new();
    for _ in 0..8 {
        let a = mm.vmas().find_free(P, 0).unwrap();
        anon(&mut mm, a, 1, if starts.len() % 2 == 0 { R } else { RW });
        starts.push(a);
    }
    // The search starts below the packed range; a hole in it must still be found.
    mm.unmap(starts[2], starts[2] + P, MAX).unwrap();
    assert_eq!(mm.vmas().find_free(P, 0), Some(starts[2]));
    assert_eq!(mm.vmas().find_free(2 * P, 0), Some(starts[7] - 2 * P));
}

#[test]
fn find_free_goes_no_lower_than_mmap_min() {
    let (mut mm, _) = new_mm();
    mm.map(MMAP_MIN + 2 * P, MMAP_TOP, Prot(0), TestBacking::Anon, MAX)
        .unwrap();
    assert_eq!(mm.vmas().find_free(2 * P, 0), Some(MMAP_MIN));
    assert_eq!(mm.vmas().find_free(3 * P, 0), None);
    anon(&mut mm, MMAP_MIN, 1, RW);
    assert_eq!(mm.vmas().find_free(P, 0), Some(MMAP_MIN + P));
    assert_eq!(mm.vmas().find_free(2 * P, 0), None);
}

#[test]
fn find_free_never_overlaps_and_always_finds_the_highest_fit() {
    const LOW: usize = MMAP_TOP - 256 * P;
    let (mut mm, _) = new_mm();
    // Keep the search inside a small window: everything below it is taken.
    mm.map(MMAP_MIN, LOW, Prot(0), TestBacking::Anon, MAX)
        .unwrap();
    let mut rng = svelt_abi::util::rng::XorShift64(0x9e37_79b9_7f4a_7c15);
    for step in 0..3000 {
        let len = (1 + rng.below(6) as usize) * P;
        match rng.below(4) {
            0 | 1 => {
                let hint = if rng.below(3) == 0 {
                    LOW + rng.below(256) as usize * P
                } else {
                    0
                };
                let got = mm.vmas().find_free(len, hint);
                // The reference: the hint if it fits, else the highest free start.
                let fits = |a: usize| {
                    a >= MMAP_MIN && a + len <= MMAP_TOP && mm.vmas().is_free(a, a + len)
                };
                let want = if hint != 0 && fits(hint) {
                    Some(hint)
                } else {
                    (LOW..=MMAP_TOP - len).rev().step_by(P).find(|&a| fits(a))
                };
                assert_eq!(got, want, "step {step}: len {len:#x} hint {hint:#x}");
                if let Some(a) = got {
                    assert!(mm.vmas().is_free(a, a + len));
                    let prot = [R, RW, RX][rng.below(3) as usize];
                    mm.map(a, a + len, Prot(prot), TestBacking::Anon, MAX)
                        .unwrap();
                }
            }
            2 => {
                let s = LOW + rng.below(256) as usize * P;
                mm.unmap(s, (s + len).min(MMAP_TOP), MAX).unwrap();
            }
            _ => {
                let s = LOW + rng.below(256) as usize * P;
                let e = (s + len).min(MMAP_TOP);
                let _ = mm.protect(s, e, Prot([R, RW][rng.below(2) as usize]), MAX);
            }
        }
        // The VMAs stay sorted, disjoint and non-empty, and the totals add up.
        let mut last = 0;
        let mut total = 0;
        for v in mm.vmas().iter() {
            assert!(last <= v.start && v.start < v.end, "step {step}");
            last = v.end;
            total += v.size();
        }
        assert_eq!(mm.vmas().total_vm(), total, "step {step}");
    }
}

// ---- vm.max_map_count ---------------------------------------------------------------------

#[test]
fn a_new_mapping_is_refused_once_the_count_passes_max_map_count() {
    const LIMIT: usize = 4;
    let (mut mm, _) = new_mm();
    // Alternating rights keep neighbours apart; as on Linux the count may reach LIMIT + 1.
    for i in 0..=LIMIT {
        let prot = if i % 2 == 0 { R } else { RW };
        mm.map(
            A + i * P,
            A + (i + 1) * P,
            Prot(prot),
            TestBacking::Anon,
            LIMIT,
        )
        .unwrap();
    }
    assert_eq!(mm.vmas().count(), LIMIT + 1);
    let next = A + (LIMIT + 1) * P;
    assert_eq!(
        mm.map(next, next + P, Prot(R), TestBacking::Anon, LIMIT),
        Err(Errno::ENOMEM)
    );
    assert_eq!(mm.vmas().count(), LIMIT + 1);
    // Once one goes, there is room again.
    mm.unmap(A, A + P, LIMIT).unwrap();
    mm.map(next + P, next + 2 * P, Prot(R), TestBacking::Anon, LIMIT)
        .unwrap();
}

#[test]
fn munmap_that_would_split_at_max_map_count_is_refused() {
    const LIMIT: usize = 3;
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 4, R);
    anon(&mut mm, A + 4 * P, 4, RW);
    anon(&mut mm, A + 8 * P, 4, R);
    touch_range(&mut mm, A, A + 12 * P);
    let vmas = layout(&mm);
    assert_eq!(mm.unmap(A + P, A + 2 * P, LIMIT), Err(Errno::ENOMEM));
    assert_eq!(layout(&mm), vmas);
    assert!(pool.borrow().freed.is_empty());
    // Trimming an end or removing whole VMAs adds none: allowed at the limit.
    mm.unmap(A, A + P, LIMIT).unwrap();
    mm.unmap(A + 4 * P, A + 8 * P, LIMIT).unwrap();
    assert_eq!(mm.vmas().count(), 2);
    mm.unmap(A + 9 * P, A + 10 * P, LIMIT).unwrap();
    assert_eq!(mm.vmas().count(), 3);
}

#[test]
fn mprotect_that_would_split_past_max_map_count_is_refused() {
    const LIMIT: usize = 3;
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 4, RW);
    anon(&mut mm, A + 4 * P, 4, R);
    // One split makes three: allowed. Two more would make five: refused, nothing changes.
    mm.protect(A, A + P, Prot(R), LIMIT).unwrap();
    assert_eq!(mm.vmas().count(), 3);
    let vmas = layout(&mm);
    assert_eq!(
        mm.protect(A + 2 * P, A + 3 * P, Prot(RX), LIMIT),
        Err(Errno::ENOMEM)
    );
    assert_eq!(layout(&mm), vmas);
    // A whole VMA needs no split.
    mm.protect(A + 4 * P, A + 8 * P, Prot(RX), LIMIT).unwrap();
}

// ---- mlock --------------------------------------------------------------------------------

#[test]
fn mlock_of_the_middle_splits_and_counts_locked_bytes() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 8, RW);
    assert_eq!(mm.vmas().unlocked_in(A + 2 * P, A + 5 * P), 3 * P);
    mm.set_locked(A + 2 * P, A + 5 * P, true);
    assert_eq!(
        layout(&mm),
        [
            (A, A + 2 * P, RW, false),
            (A + 2 * P, A + 5 * P, RW, true),
            (A + 5 * P, A + 8 * P, RW, false)
        ]
    );
    assert_eq!(mm.vmas().locked_vm(), 3 * P);
    // What a wider mlock would add: only the part not locked yet.
    assert_eq!(mm.vmas().unlocked_in(A + P, A + 6 * P), 2 * P);
    assert_eq!(mm.vmas().unlocked_in(A + 3 * P, A + 4 * P), 0);
}

#[test]
fn munlock_merges_the_pieces_back() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 8, RW);
    mm.set_locked(A + 2 * P, A + 5 * P, true);
    mm.set_locked(A + 4 * P, A + 6 * P, true);
    assert_eq!(mm.vmas().locked_vm(), 4 * P);
    assert_eq!(mm.vmas().count(), 3, "locked neighbours join");
    mm.set_locked(A, A + 8 * P, false);
    assert_eq!(layout(&mm), [(A, A + 8 * P, RW, false)]);
    assert_eq!(mm.vmas().locked_vm(), 0);
}

#[test]
fn mlockall_future_locks_new_mappings_and_munmap_releases_them() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 2, RW);
    mm.set_lock_future(true);
    anon(&mut mm, A + 4 * P, 4, RW);
    assert_eq!(layout(&mm)[1], (A + 4 * P, A + 8 * P, RW, true));
    assert_eq!(mm.vmas().locked_vm(), 4 * P);
    // Locked and unlocked neighbours stay apart.
    anon(&mut mm, A + 2 * P, 2, RW);
    assert_eq!(mm.vmas().count(), 2);
    assert_eq!(mm.vmas().locked_vm(), 6 * P);
    mm.unmap(A + 3 * P, A + 5 * P, MAX).unwrap();
    assert_eq!(mm.vmas().locked_vm(), 4 * P);
    mm.set_lock_future(false);
    anon(&mut mm, A + 10 * P, 1, RW);
    assert_eq!(mm.vmas().locked_vm(), 4 * P);
}

// ---- fork ---------------------------------------------------------------------------------

#[test]
fn fork_shares_every_page_and_makes_private_ones_copy_on_write() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 2, RW);
    mm.map(
        A + 4 * P,
        A + 6 * P,
        Prot(RW),
        TestBacking::Shared(5, 0),
        MAX,
    )
    .unwrap();
    let private = touch_range(&mut mm, A, A + 2 * P);
    let shared = touch_range(&mut mm, A + 4 * P, A + 6 * P);
    let child = mm.fork(FakeTable::new(&pool)).unwrap();
    assert_eq!(layout(&child), layout(&mm));
    assert_eq!(child.table().entries, mm.table().entries);
    for f in private.iter().chain(&shared) {
        assert_eq!(pool.borrow().refs(*f), 2);
    }
    for va in [A, A + P] {
        assert!(!mm.table().entry(va).unwrap().writable);
        assert!(!child.table().entry(va).unwrap().writable);
    }
    for va in [A + 4 * P, A + 5 * P] {
        assert!(mm.table().entry(va).unwrap().writable);
        assert!(child.table().entry(va).unwrap().writable);
    }
    // The child going frees nothing the parent still maps.
    drop(child);
    assert!(pool.borrow().freed.is_empty());
    for f in private.iter().chain(&shared) {
        assert_eq!(pool.borrow().refs(*f), 1);
    }
}

#[test]
fn fork_keeps_the_totals_but_not_the_locks() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 4, RW);
    mm.set_locked(A, A + 2 * P, true);
    mm.set_lock_future(true);
    let mut child = mm.fork(FakeTable::new(&pool)).unwrap();
    assert_eq!(mm.vmas().locked_vm(), 2 * P);
    assert_eq!(child.vmas().locked_vm(), 0);
    assert!(!child.vmas().lock_future());
    assert!(child.vmas().iter().all(|v| !v.locked));
    assert_eq!(child.vmas().total_vm(), 4 * P);
    assert_eq!(child.vmas().data_vm(), 4 * P);
    // The child's pieces no longer differ: the next munlock over them joins them.
    assert_eq!(child.vmas().count(), 2);
    child.set_locked(A, A + 4 * P, false);
    assert_eq!(layout(&child), [(A, A + 4 * P, RW, false)]);
}

#[test]
fn a_failed_fork_gives_every_reference_back() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 4, RW);
    let frames = touch_range(&mut mm, A, A + 4 * P);
    let mut table = FakeTable::new(&pool);
    table.fail_alloc = true;
    assert_eq!(mm.fork(table).err(), Some(Errno::ENOMEM));
    assert!(pool.borrow().freed.is_empty());
    assert!(frames.iter().all(|&f| pool.borrow().refs(f) == 1));
    assert_eq!(layout(&mm), [(A, A + 4 * P, RW, false)]);
}

#[test]
fn mprotect_after_fork_leaves_shared_private_frames_read_only() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 2, R);
    mm.map(
        A + 2 * P,
        A + 4 * P,
        Prot(R),
        TestBacking::Shared(8, 0),
        MAX,
    )
    .unwrap();
    touch_range(&mut mm, A, A + 4 * P);
    let child = mm.fork(FakeTable::new(&pool)).unwrap();
    mm.protect(A, A + 4 * P, Prot(RW), MAX).unwrap();
    // Private frames the child also maps stay read-only until a write copies them; shared
    // memory is writable at once.
    let writable: Vec<bool> = (0..4)
        .map(|i| mm.table().entry(A + i * P).unwrap().writable)
        .collect();
    assert_eq!(writable, [false, false, true, true]);
    drop(child);
    mm.protect(A, A + 2 * P, Prot(RW), MAX).unwrap();
    assert!(
        mm.table().entry(A).unwrap().writable,
        "last reference: writable in place"
    );
}

// ---- mremap, MADV_DONTNEED ------------------------------------------------------------------

#[test]
fn mremap_shrinking_frees_the_tail() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 6, RW);
    let frames = touch_range(&mut mm, A, A + 6 * P);
    // mremap(A, 6 pages, 2 pages): the syscall unmaps the tail.
    mm.unmap(A + 2 * P, A + 6 * P, MAX).unwrap();
    assert_eq!(layout(&mm), [(A, A + 2 * P, RW, false)]);
    assert_eq!(pool.borrow().freed, frames[2..]);
    assert_eq!(mm.table().mapped_in(A, A + 2 * P), [A, A + P]);
}

#[test]
fn mremap_moving_carries_the_pages_along() {
    let (mut mm, pool) = new_mm();
    mm.map(A, A + 4 * P, Prot(RW), file(6, 0x8000), MAX)
        .unwrap();
    let frames = touch_range(&mut mm, A + P, A + 3 * P);
    // mremap(A + P, 2 pages, 3 pages, MAYMOVE) to a free place, as the syscall does it: map
    // the new range with the moved part's backing, move the entries, unmap the old range.
    let new = mm.vmas().find_free(3 * P, 0).unwrap();
    let (prot, backing) = {
        let v = mm.vmas().find(A + P).unwrap();
        (v.prot, v.backing.advanced_by(A + P - v.start))
    };
    mm.map(new, new + 3 * P, prot, backing, MAX).unwrap();
    mm.move_entries(A + P, new, 2 * P).unwrap();
    mm.unmap(A + P, A + 3 * P, MAX).unwrap();
    assert!(pool.borrow().freed.is_empty(), "moved pages are not freed");
    assert_eq!(mm.table().entry(new).unwrap().frame, frames[0]);
    assert_eq!(mm.table().entry(new + P).unwrap().frame, frames[1]);
    assert!(mm.table().mapped_in(A, A + 4 * P).is_empty());
    assert_eq!(
        mm.vmas().find(new).unwrap().backing,
        file(6, 0x8000 + P as u64)
    );
    assert_eq!(mm.vmas().count(), 3);
    assert_eq!(mm.vmas().total_vm(), 5 * P);
}

#[test]
fn mremap_growing_in_place_joins_the_old_mapping() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 2, RW);
    assert!(mm.vmas().is_free(A + 2 * P, A + 5 * P));
    anon(&mut mm, A + 2 * P, 3, RW);
    assert_eq!(layout(&mm), [(A, A + 5 * P, RW, false)]);
    assert_eq!(mm.vmas().data_vm(), 5 * P);
}

#[test]
fn a_failed_move_of_entries_reports_enomem() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 2, RW);
    anon(&mut mm, A + 8 * P, 2, RW);
    touch(&mut mm, A);
    mm.table_mut().fail_alloc = true;
    assert_eq!(mm.move_entries(A, A + 8 * P, 2 * P), Err(Errno::ENOMEM));
}

#[test]
fn madv_dontneed_drops_pages_but_keeps_mappings() {
    let (mut mm, pool) = new_mm();
    anon(&mut mm, A, 4, RW);
    let frames = touch_range(&mut mm, A, A + 4 * P);
    mm.zap(A + P, A + 3 * P);
    assert_eq!(layout(&mm), [(A, A + 4 * P, RW, false)]);
    assert_eq!(pool.borrow().freed, frames[1..3]);
    assert_eq!(mm.table().mapped_in(A, A + 4 * P), [A, A + 3 * P]);
    assert_eq!(mm.vmas().total_vm(), 4 * P);
}

// ---- queries ------------------------------------------------------------------------------

#[test]
fn range_checks_need_cover_without_holes_and_the_rights() {
    let (mut mm, _) = new_mm();
    anon(&mut mm, A, 2, RW);
    anon(&mut mm, A + 2 * P, 2, R);
    anon(&mut mm, A + 5 * P, 1, RX);
    assert!(mm.vmas().range_ok(A, 4 * P, Access::Read));
    assert!(!mm.vmas().range_ok(A, 4 * P, Access::Write));
    assert!(mm.vmas().range_ok(A + P, 10, Access::Write));
    assert!(
        !mm.vmas().range_ok(A, 6 * P, Access::Read),
        "hole at A + 4P"
    );
    assert!(mm.vmas().range_ok(A + 5 * P, P, Access::Exec));
    assert!(!mm.vmas().range_ok(usize::MAX - 1, 4, Access::Read));
    assert_eq!(mm.vmas().mapped_until(A, A + 8 * P), A + 4 * P);
    assert_eq!(mm.vmas().mapped_until(A + 5 * P, A + 6 * P), A + 6 * P);
    assert!(mm.vmas().is_free(A + 4 * P, A + 5 * P));
    assert!(!mm.vmas().is_free(A + 4 * P, A + 5 * P + 1));
}
