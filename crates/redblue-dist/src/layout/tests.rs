//! Tests of the layouts: one brute-force checker of the [`Layout`] contract run over random
//! shapes, plus hand-computed cases.

use super::block_cyclic::numroc;
use super::*;
use crate::DistError;
use proptest::collection::vec;
use proptest::prelude::*;
use std::collections::HashSet;

/// `blocks(rank)` computed the way the trait's default method does.
fn default_blocks<L: Layout>(l: &L, rank: usize) -> Vec<LocalBlock> {
    let (nbr, nbc) = l.num_blocks();
    let mut out = Vec::new();
    for bj in 0..nbc {
        for bi in 0..nbr {
            if l.block_owner(bi, bj) == rank {
                out.push(l.block(bi, bj));
            }
        }
    }
    out
}

/// `splits` starts at 0, ends at `len` and is strictly increasing.
fn check_splits(splits: &[usize], len: usize) {
    assert_eq!(
        splits.first(),
        Some(&0),
        "splits {splits:?} must start at 0"
    );
    assert_eq!(
        splits.last(),
        Some(&len),
        "splits {splits:?} must end at {len}"
    );
    assert!(
        splits.windows(2).all(|w| w[0] < w[1]),
        "splits {splits:?} must be strictly increasing"
    );
}

/// Checks the whole [`Layout`] contract of `l` by brute force over all elements and all local
/// positions.
fn check_layout<L: Layout>(l: &L) {
    let (m, n) = l.shape();
    let nr = l.nranks();
    assert!(nr >= 1, "{l:?}: no ranks");
    check_splits(l.row_splits(), m);
    check_splits(l.col_splits(), n);
    let (nbr, nbc) = l.num_blocks();
    for bi in 0..nbr {
        for bj in 0..nbc {
            assert!(l.block_owner(bi, bj) < nr, "{l:?}: block ({bi}, {bj})");
        }
    }

    // Walk every rank's blocks (and a few ranks past the end, which must own nothing).
    let none = usize::MAX;
    let mut holder = vec![none; m * n]; // rank whose blocks hold element (i, j), at i + j * m
    let mut owned = vec![0usize; nr];
    for rank in 0..nr + 2 {
        let blocks = l.blocks(rank);
        assert_eq!(blocks, default_blocks(l, rank), "{l:?}: blocks({rank})");
        let len = l.local_len(rank);
        if rank >= nr {
            assert!(
                blocks.is_empty(),
                "{l:?}: rank {rank} >= nranks owns blocks"
            );
            assert_eq!(len, 0, "{l:?}: rank {rank} >= nranks has a buffer");
        }
        // What the default `to_global` would answer: the element each position holds.
        let mut slot: Vec<Option<(usize, usize)>> = vec![None; len];
        for b in &blocks {
            assert!(!b.is_empty(), "{l:?}: empty block {b:?}");
            assert!(b.ld >= b.rows.len(), "{l:?}: ld too small in {b:?}");
            for j in b.cols.clone() {
                for i in b.rows.clone() {
                    let e = i + j * m;
                    assert_eq!(holder[e], none, "{l:?}: ({i}, {j}) in two blocks");
                    holder[e] = rank;
                    owned[rank] += 1;
                    let pos = b.local_index(i, j);
                    assert!(pos < len, "{l:?}: ({i}, {j}) at {pos} past local_len {len}");
                    assert_eq!(slot[pos], None, "{l:?}: two elements at ({rank}, {pos})");
                    slot[pos] = Some((i, j));
                }
            }
        }
        for (pos, want) in slot.iter().enumerate() {
            assert_eq!(
                l.to_global(rank, pos),
                *want,
                "{l:?}: to_global({rank}, {pos})"
            );
        }
        assert_eq!(
            l.to_global(rank, len),
            None,
            "{l:?}: to_global past the end"
        );
    }
    assert_eq!(owned.iter().sum::<usize>(), m * n, "{l:?}: elements owned");

    // Every element: one owner, consistent with its block and with to_global.
    let mut seen = HashSet::new();
    for j in 0..n {
        for i in 0..m {
            let owner = l.owner(i, j);
            assert!(owner < nr, "{l:?}: owner({i}, {j}) = {owner}");
            assert_eq!(
                holder[i + j * m],
                owner,
                "{l:?}: ({i}, {j}) not in its owner's blocks"
            );
            let (bi, bj) = l.block_of(i, j);
            assert_eq!(
                (bi, bj),
                (
                    split_index(l.row_splits(), i),
                    split_index(l.col_splits(), j)
                ),
                "{l:?}: block_of({i}, {j})"
            );
            let (r, pos) = l.to_local(i, j);
            assert_eq!(r, owner, "{l:?}: to_local({i}, {j}) rank");
            assert_eq!(
                pos,
                l.block(bi, bj).local_index(i, j),
                "{l:?}: to_local({i}, {j})"
            );
            assert!(
                pos < l.local_len(r),
                "{l:?}: to_local({i}, {j}) past local_len"
            );
            assert_eq!(
                l.to_global(r, pos),
                Some((i, j)),
                "{l:?}: round trip ({i}, {j})"
            );
            assert!(seen.insert((r, pos)), "{l:?}: ({r}, {pos}) used twice");
        }
    }
}

/// [`check_layout`] plus the block-cyclic specifics: local shapes and ScaLAPACK index maps.
fn check_block_cyclic(bc: &BlockCyclic) {
    check_layout(bc);
    let (m, n) = bc.shape();
    let (nprow, npcol) = bc.grid_shape();
    let mut total = 0;
    for rank in 0..bc.nranks() {
        let (rows, cols) = bc.local_shape(rank);
        total += rows * cols;
        assert_eq!(bc.local_len(rank), rows * cols);
        assert_eq!(bc.lld(rank), rows.max(1));
        let (prow, pcol) = bc.grid_coords(rank);
        assert!(prow < nprow && pcol < npcol);
        assert_eq!(bc.grid_rank(prow, pcol), rank);
        for lj in 0..cols {
            for li in 0..rows {
                let (i, j) = bc.local_to_global(rank, li, lj);
                assert!(i < m && j < n, "{bc:?}: local ({rank}, {li}, {lj})");
                assert_eq!(bc.global_to_local(i, j), (rank, li, lj));
            }
        }
    }
    assert_eq!(total, m * n, "{bc:?}: local shapes");
    assert_eq!(bc.local_shape(bc.nranks()), (0, 0));
}

fn block_cyclic_strategy() -> impl Strategy<Value = BlockCyclic> {
    let grid_dim = || prop_oneof![1..=4usize, 1..=32usize];
    (
        0..=40usize,
        0..=40usize,
        grid_dim(),
        grid_dim(),
        any::<bool>(),
    )
        .prop_flat_map(|(m, n, nprow, npcol, col_major)| {
            (
                (Just(m), Just(n), 1..=m + 2, 1..=n + 2),
                (Just(nprow), Just(npcol), 0..nprow, 0..npcol),
                Just(col_major),
            )
        })
        .prop_map(|((m, n, mb, nb), (nprow, npcol, rsrc, csrc), col_major)| {
            let order = if col_major {
                GridOrder::ColMajor
            } else {
                GridOrder::RowMajor
            };
            BlockCyclic::new(m, n, mb, nb, nprow, npcol)
                .unwrap()
                .with_source(rsrc, csrc)
                .unwrap()
                .with_order(order)
        })
}

/// Random strictly increasing splits of `0..len`.
fn splits_strategy(len: usize) -> impl Strategy<Value = Vec<usize>> {
    vec(prop::bool::weighted(0.3), len.saturating_sub(1)).prop_map(move |cuts| {
        let mut splits = vec![0];
        splits.extend(
            cuts.iter()
                .enumerate()
                .filter(|(_, &c)| c)
                .map(|(k, _)| k + 1),
        );
        if len > 0 {
            splits.push(len);
        }
        splits
    })
}

fn grid_layout_strategy() -> impl Strategy<Value = GridLayout> {
    (0..=30usize, 0..=30usize, 1..=16usize)
        .prop_flat_map(|(m, n, nranks)| (splits_strategy(m), splits_strategy(n), Just(nranks)))
        .prop_flat_map(|(rs, cs, nranks)| {
            let nblocks = (rs.len() - 1) * (cs.len() - 1);
            (Just(rs), Just(cs), vec(0..nranks, nblocks), Just(nranks))
        })
        .prop_map(|(rs, cs, owners, nranks)| GridLayout::new(rs, cs, owners, nranks).unwrap())
}

proptest! {
    #[test]
    fn prop_block_cyclic_is_consistent(bc in block_cyclic_strategy()) {
        check_block_cyclic(&bc);
    }

    #[test]
    fn prop_grid_from_block_cyclic_is_consistent(bc in block_cyclic_strategy()) {
        let g = GridLayout::from_layout(&bc);
        check_layout(&g);
        prop_assert_eq!(g.shape(), bc.shape());
        prop_assert_eq!(g.nranks(), bc.nranks());
        prop_assert_eq!(g.row_splits(), bc.row_splits());
        prop_assert_eq!(g.col_splits(), bc.col_splits());
        for rank in 0..bc.nranks() {
            prop_assert_eq!(g.local_len(rank), bc.local_len(rank));
        }
        let (m, n) = bc.shape();
        for j in 0..n {
            for i in 0..m {
                prop_assert_eq!(g.owner(i, j), bc.owner(i, j));
            }
        }
    }

    #[test]
    fn prop_numroc_counts_owned_indices(
        (n, nb, nprocs, isrc) in (0..=60usize, 1..=10usize, 1..=12usize)
            .prop_flat_map(|(n, nb, p)| (Just(n), Just(nb), Just(p), 0..p)),
    ) {
        let mut total = 0;
        for iproc in 0..nprocs {
            let count = (0..n).filter(|&x| (isrc + x / nb) % nprocs == iproc).count();
            prop_assert_eq!(numroc(n, nb, iproc, isrc, nprocs), count);
            total += count;
        }
        prop_assert_eq!(total, n);
    }

    #[test]
    fn prop_grid_layout_is_consistent(g in grid_layout_strategy()) {
        check_layout(&g);
        let (nbr, nbc) = g.num_blocks();
        prop_assert_eq!(g.owners().len(), nbr * nbc);
        prop_assert_eq!(&GridLayout::from_layout(&g), &g);
    }

    #[test]
    fn prop_grid_even_is_consistent(m in 0..=40usize, n in 0..=40usize, prow in 1..=32usize, pcol in 1..=32usize) {
        let g = GridLayout::even(m, n, prow, pcol).unwrap();
        check_layout(&g);
        prop_assert_eq!(g.nranks(), prow * pcol);
        let (nbr, nbc) = g.num_blocks();
        prop_assert_eq!(nbr, m.min(prow));
        prop_assert_eq!(nbc, n.min(pcol));
        for w in g.row_splits().windows(2) {
            prop_assert!(w[1] - w[0] == m / prow || w[1] - w[0] == m / prow + 1);
        }
        for w in g.col_splits().windows(2) {
            prop_assert!(w[1] - w[0] == n / pcol || w[1] - w[0] == n / pcol + 1);
        }
        for bi in 0..nbr {
            for bj in 0..nbc {
                prop_assert_eq!(g.block_owner(bi, bj), bi * pcol + bj);
            }
        }
    }

    #[test]
    fn prop_row_permuted_is_consistent(
        (bc, keys) in block_cyclic_strategy()
            .prop_flat_map(|bc| { let m = bc.shape().0; (Just(bc), vec(any::<u32>(), m)) }),
    ) {
        // A permutation from sorting random keys.
        let mut perm: Vec<usize> = (0..keys.len()).collect();
        perm.sort_by_key(|&i| keys[i]);
        let l = RowPermuted::new(bc.clone(), perm.clone()).unwrap();
        check_layout(&l);
        let (m, n) = bc.shape();
        for j in 0..n {
            for i in 0..m {
                prop_assert_eq!(l.to_local(i, j), bc.to_local(perm[i], j));
            }
        }
    }

    #[test]
    fn prop_relabeled_is_consistent(
        (bc, row_keys, col_keys) in block_cyclic_strategy().prop_flat_map(|bc| {
            let (m, n) = bc.shape();
            (Just(bc), vec(0..4u32, m), vec(0..4u32, n))
        }),
    ) {
        // Random orders (sorting few distinct keys keeps runs of consecutive indices), and
        // the owners' buffer order.
        let order = |keys: &[u32]| {
            let mut p: Vec<usize> = (0..keys.len()).collect();
            p.sort_by_key(|&i| keys[i]);
            p
        };
        for (rows, cols) in [
            (order(&row_keys), order(&col_keys)),
            (owner_row_order(&bc), owner_col_order(&bc)),
        ] {
            let l = Relabeled::new(bc.clone(), rows.clone(), cols.clone()).unwrap();
            check_layout(&l);
            let (m, n) = bc.shape();
            for j in 0..n {
                for i in 0..m {
                    prop_assert_eq!(l.to_local(i, j), bc.to_local(rows[i], cols[j]));
                }
            }
        }
        // In the owners' order every process holds one block.
        let l = Relabeled::new(bc.clone(), owner_row_order(&bc), owner_col_order(&bc)).unwrap();
        for rank in 0..bc.nranks() {
            prop_assert!(l.blocks(rank).len() <= 1, "{:?}: rank {} has {:?}", bc, rank, l.blocks(rank));
        }
    }

    #[test]
    fn prop_on_rank_is_consistent(
        (m, n, nranks, root) in (0..=40usize, 0..=40usize, 1..=64usize)
            .prop_flat_map(|(m, n, p)| (Just(m), Just(n), Just(p), 0..p)),
    ) {
        let l = OnRank::new(m, n, root, nranks).unwrap();
        check_layout(&l);
        prop_assert_eq!(l.root(), root);
        prop_assert_eq!(l.local_len(root), m * n);
        prop_assert_eq!(l.blocks(root).len(), usize::from(m > 0 && n > 0));
    }
}

#[test]
fn numroc_matches_scalapack() {
    // 10 rows in blocks of 3 over 2 processes: blocks 0, 2 (3 + 3) and 1, 3 (3 + 1).
    assert_eq!(numroc(10, 3, 0, 0, 2), 6);
    assert_eq!(numroc(10, 3, 1, 0, 2), 4);
    assert_eq!(numroc(10, 3, 0, 1, 2), 4);
    assert_eq!(numroc(10, 3, 1, 1, 2), 6);
    // 7 in blocks of 2 over 3: blocks of 2, 2, 2, 1 on processes isrc, isrc+1, isrc+2, isrc.
    assert_eq!(
        [0, 1, 2].map(|p| numroc(7, 2, p, 0, 3)),
        [3, 2, 2],
        "isrc = 0"
    );
    assert_eq!(
        [0, 1, 2].map(|p| numroc(7, 2, p, 2, 3)),
        [2, 2, 3],
        "isrc = 2"
    );
    // One short block; nothing at all.
    assert_eq!(numroc(5, 10, 0, 0, 2), 5);
    assert_eq!(numroc(5, 10, 1, 0, 2), 0);
    assert_eq!(numroc(0, 4, 0, 0, 3), 0);
    assert_eq!(numroc(9, 3, 0, 0, 1), 9);
}

#[test]
fn block_cyclic_2x3_with_source_and_col_major() {
    // 5 x 7 in 2 x 3 blocks on a 2 x 3 grid, first block on (1, 2).
    // Block rows: rows 0..2 -> prow 1, 2..4 -> prow 0, 4..5 -> prow 1.
    // Block cols: cols 0..3 -> pcol 2, 3..6 -> pcol 0, 6..7 -> pcol 1.
    let row_major = BlockCyclic::new(5, 7, 2, 3, 2, 3)
        .unwrap()
        .with_source(1, 2)
        .unwrap();
    let bc = row_major.clone().with_order(GridOrder::ColMajor);
    assert_eq!(row_major.order(), GridOrder::RowMajor);
    assert_eq!(bc.order(), GridOrder::ColMajor);
    assert_eq!(bc.source(), (1, 2));
    assert_eq!(bc.block_size(), (2, 3));
    assert_eq!(bc.grid_shape(), (2, 3));
    assert_eq!(bc.nranks(), 6);
    assert_eq!(bc.row_splits(), &[0, 2, 4, 5]);
    assert_eq!(bc.col_splits(), &[0, 3, 6, 7]);

    // ColMajor: rank = prow + 2 * pcol; RowMajor: rank = 3 * prow + pcol.
    assert_eq!(bc.grid_coords(5), (1, 2));
    assert_eq!(bc.grid_rank(1, 1), 3);
    assert_eq!(row_major.grid_coords(5), (1, 2));
    assert_eq!(row_major.grid_rank(1, 1), 4);
    for (i, j, col_major_owner, row_major_owner) in [
        (0, 0, 5, 5), // (1, 2)
        (2, 3, 0, 0), // (0, 0)
        (4, 6, 3, 4), // (1, 1)
        (3, 6, 2, 1), // (0, 1)
        (0, 4, 1, 3), // (1, 0)
        (2, 1, 4, 2), // (0, 2)
    ] {
        assert_eq!(bc.owner(i, j), col_major_owner, "ColMajor ({i}, {j})");
        assert_eq!(
            row_major.owner(i, j),
            row_major_owner,
            "RowMajor ({i}, {j})"
        );
    }

    // Local shapes: prow 1 has 2 + 1 rows, prow 0 has 2; pcol 2 and 0 have 3 columns, pcol 1 has 1.
    assert_eq!(bc.local_shape(5), (3, 3));
    assert_eq!(bc.local_shape(0), (2, 3));
    assert_eq!(bc.local_shape(3), (3, 1));
    assert_eq!(bc.local_shape(2), (2, 1));
    assert_eq!(bc.local_shape(6), (0, 0));
    assert_eq!(bc.local_len(6), 0);
    assert_eq!(bc.lld(5), 3);

    // Element (4, 1) is in block (2, 0), the second block row of rank 5.
    assert_eq!(bc.global_to_local(4, 1), (5, 2, 1));
    assert_eq!(bc.to_local(4, 1), (5, 2 + 3));
    assert_eq!(bc.local_to_global(5, 2, 1), (4, 1));
    assert_eq!(bc.to_global(5, 5), Some((4, 1)));
    assert_eq!(bc.to_global(5, 9), None);
    assert_eq!(
        bc.blocks(5),
        vec![
            LocalBlock {
                rows: 0..2,
                cols: 0..3,
                offset: 0,
                ld: 3
            },
            LocalBlock {
                rows: 4..5,
                cols: 0..3,
                offset: 2,
                ld: 3
            },
        ]
    );
    check_block_cyclic(&bc);
    check_block_cyclic(&row_major);
}

#[test]
fn block_cyclic_errors() {
    assert_eq!(
        BlockCyclic::new(4, 4, 0, 2, 2, 2),
        Err(DistError::ZeroBlockSize { what: "mb" })
    );
    assert_eq!(
        BlockCyclic::new(4, 4, 2, 0, 2, 2),
        Err(DistError::ZeroBlockSize { what: "nb" })
    );
    assert_eq!(
        BlockCyclic::new(4, 4, 2, 2, 0, 3),
        Err(DistError::EmptyGrid { rows: 0, cols: 3 })
    );
    assert_eq!(
        BlockCyclic::new(4, 4, 2, 2, 2, 0),
        Err(DistError::EmptyGrid { rows: 2, cols: 0 })
    );
    let bc = BlockCyclic::new(4, 4, 2, 2, 2, 3).unwrap();
    assert_eq!(
        bc.clone().with_source(2, 0),
        Err(DistError::RankOutOfRange {
            what: "rsrc",
            rank: 2,
            bound: 2
        })
    );
    assert_eq!(
        bc.clone().with_source(1, 3),
        Err(DistError::RankOutOfRange {
            what: "csrc",
            rank: 3,
            bound: 3
        })
    );
    assert!(bc.with_source(1, 2).is_ok());
}

#[test]
fn block_cyclic_empty_and_default_order() {
    assert_eq!(GridOrder::default(), GridOrder::RowMajor);
    let bc = BlockCyclic::new(0, 5, 3, 2, 2, 2).unwrap();
    assert_eq!(bc.row_splits(), &[0]);
    assert_eq!(bc.col_splits(), &[0, 2, 4, 5]);
    assert_eq!(bc.num_blocks(), (0, 3));
    assert_eq!(bc.local_shape(0), (0, 3));
    assert_eq!(bc.local_shape(1), (0, 2));
    assert_eq!(bc.lld(1), 1);
    check_block_cyclic(&bc);
}

#[test]
fn grid_layout_non_product_owners() {
    // Rows 0..2 | 2..5, cols 0..3 | 3..4; owners [[0, 1], [1, 0]].
    let g = GridLayout::new(vec![0, 2, 5], vec![0, 3, 4], vec![0, 1, 1, 0], 2).unwrap();
    assert_eq!(g.shape(), (5, 4));
    assert_eq!(g.owner(0, 0), 0);
    assert_eq!(g.owner(0, 3), 1);
    assert_eq!(g.owner(4, 0), 1);
    assert_eq!(g.owner(4, 3), 0);
    let block = |rows, cols, offset, ld| LocalBlock {
        rows,
        cols,
        offset,
        ld,
    };
    // Packed in column-major block order: rank 0 holds (0, 0) then (1, 1).
    assert_eq!(
        g.blocks(0),
        vec![block(0..2, 0..3, 0, 2), block(2..5, 3..4, 6, 3)]
    );
    assert_eq!(
        g.blocks(1),
        vec![block(2..5, 0..3, 0, 3), block(0..2, 3..4, 9, 2)]
    );
    assert_eq!(g.local_len(0), 9);
    assert_eq!(g.local_len(1), 11);
    assert_eq!(g.local_len(2), 0);
    assert_eq!(g.to_local(3, 3), (0, 7));
    assert_eq!(g.to_global(1, 10), Some((1, 3)));
    check_layout(&g);
}

#[test]
fn grid_layout_errors() {
    let invalid = |r: Result<GridLayout, DistError>| matches!(r, Err(DistError::InvalidLayout(_)));
    assert!(invalid(GridLayout::new(vec![], vec![0, 1], vec![], 1)));
    assert!(invalid(GridLayout::new(vec![1, 2], vec![0, 1], vec![0], 1)));
    assert!(invalid(GridLayout::new(
        vec![0, 2, 2],
        vec![0, 1],
        vec![0, 0],
        1
    )));
    assert!(invalid(GridLayout::new(
        vec![0, 1],
        vec![0, 3, 2],
        vec![0, 0],
        1
    )));
    assert!(invalid(GridLayout::new(
        vec![0, 1],
        vec![0, 1],
        vec![0, 0],
        1
    )));
    assert!(invalid(GridLayout::new(vec![0, 1], vec![0, 1], vec![0], 0)));
    assert_eq!(
        GridLayout::new(vec![0, 1, 2], vec![0, 1], vec![0, 3], 3),
        Err(DistError::RankOutOfRange {
            what: "block owner",
            rank: 3,
            bound: 3
        })
    );
    let msg = GridLayout::new(vec![0, 2, 2], vec![0, 1], vec![0, 0], 1)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("row_splits") && msg.contains("strictly increasing"),
        "{msg}"
    );
    assert_eq!(
        GridLayout::even(3, 3, 0, 2),
        Err(DistError::EmptyGrid { rows: 0, cols: 2 })
    );
    assert_eq!(
        GridLayout::even(3, 3, 2, 0),
        Err(DistError::EmptyGrid { rows: 2, cols: 0 })
    );
    // An empty matrix is a valid layout with no blocks.
    let empty = GridLayout::new(vec![0], vec![0], vec![], 2).unwrap();
    assert_eq!(empty.num_blocks(), (0, 0));
    check_layout(&empty);
}

#[test]
fn grid_even_more_ranks_than_rows() {
    // 3 rows over 4 process rows: the fourth part is empty and dropped.
    let g = GridLayout::even(3, 5, 4, 2).unwrap();
    assert_eq!(g.row_splits(), &[0, 1, 2, 3]);
    assert_eq!(g.col_splits(), &[0, 3, 5]);
    assert_eq!(g.nranks(), 8);
    assert_eq!(g.owner(0, 0), 0);
    assert_eq!(g.owner(2, 4), 5);
    assert_eq!(g.local_len(0), 3);
    assert_eq!(g.local_len(5), 2);
    assert_eq!(g.local_len(6), 0);
    assert_eq!(g.local_len(7), 0);
    assert!(g.blocks(6).is_empty());
    check_layout(&g);
}

#[test]
fn on_rank_basic_and_empty() {
    let l = OnRank::new(3, 4, 2, 4).unwrap();
    assert_eq!(l.num_blocks(), (1, 1));
    assert_eq!(l.owner(1, 2), 2);
    assert_eq!(l.to_local(1, 2), (2, 7));
    assert_eq!(l.to_global(2, 7), Some((1, 2)));
    assert_eq!(l.to_global(2, 12), None);
    assert_eq!(l.to_global(0, 0), None);
    assert_eq!((l.local_len(2), l.local_len(0)), (12, 0));
    check_layout(&l);

    let empty = OnRank::new(0, 5, 1, 3).unwrap();
    assert_eq!(empty.row_splits(), &[0]);
    assert_eq!(empty.col_splits(), &[0, 5]);
    assert_eq!(empty.num_blocks(), (0, 1));
    assert_eq!(empty.local_len(1), 0);
    assert!(empty.blocks(1).is_empty());
    assert_eq!(empty.to_global(1, 0), None);
    check_layout(&empty);
    check_layout(&OnRank::new(0, 0, 0, 1).unwrap());
    check_layout(&OnRank::new(4, 0, 0, 1).unwrap());
}

#[test]
fn on_rank_errors() {
    assert_eq!(
        OnRank::new(2, 2, 3, 3),
        Err(DistError::RankOutOfRange {
            what: "root",
            rank: 3,
            bound: 3
        })
    );
    assert!(matches!(
        OnRank::new(2, 2, 0, 0),
        Err(DistError::InvalidLayout(_))
    ));
}

#[test]
fn row_permuted_errors() {
    let bc = BlockCyclic::new(4, 3, 2, 2, 2, 1).unwrap();
    for bad in [
        vec![0, 1, 2],
        vec![0, 1, 2, 2],
        vec![0, 1, 2, 4],
        vec![3, 2, 1, 0, 4],
    ] {
        assert!(matches!(
            RowPermuted::new(bc.clone(), bad),
            Err(DistError::InvalidLayout(_))
        ));
    }
    let l = RowPermuted::new(bc.clone(), vec![3, 2, 1, 0]).unwrap();
    assert_eq!(l.inner(), &bc);
    assert_eq!(l.to_local(0, 1), bc.to_local(3, 1));
}
