//! Seed 002's sequential algorithms on the simulated two-level memory: every algorithm ×
//! layout factors correctly, small cases move exactly the words and messages derived by hand,
//! and the fitted exponents of words and messages match Table 1.

use redblue_cholesky::sequential::{
    cholesky_flops, lapack_block_size, simulate, simulate_with_conversion, table1, Algorithm,
    IoCounts, SimError, Storage, Table1Layout, Table1Scale,
};

// ---------------------------------------------------------------------------------------------
// Matrices and references.

/// A deterministic SPD matrix `A = B·Bᵀ + n·I`, `B` uniform in `[−1, 1)` from a 64-bit LCG
/// (Knuth's MMIX constants), column-major; the strict upper triangle holds `upper` (never read).
fn spd_matrix(n: usize, seed: u64, upper: f64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let b: Vec<f64> = (0..n * n).map(|_| next()).collect();
    let mut a = vec![0.0; n * n];
    for j in 0..n {
        for i in 0..n {
            a[i + j * n] = if i < j {
                upper
            } else {
                let dot: f64 = (0..n).map(|k| b[i + k * n] * b[j + k * n]).sum();
                dot + if i == j { n as f64 } else { 0.0 }
            };
        }
    }
    a
}

/// The textbook Cholesky (right-looking, in place on the lower triangle).
fn reference_cholesky(a: &[f64], n: usize) -> Vec<f64> {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        for i in j..n {
            l[i + j * n] = a[i + j * n];
        }
    }
    for j in 0..n {
        let d = l[j + j * n].sqrt();
        l[j + j * n] = d;
        for i in j + 1..n {
            l[i + j * n] /= d;
        }
        for k in j + 1..n {
            for i in k..n {
                l[i + k * n] -= l[i + j * n] * l[k + j * n];
            }
        }
    }
    l
}

fn frobenius(x: impl Iterator<Item = f64>) -> f64 {
    x.map(|v| v * v).sum::<f64>().sqrt()
}

/// `‖A − L·Lᵀ‖_F / (‖A‖_F · n · ε)` over the lower triangle.
fn scaled_residual(a: &[f64], l: &[f64], n: usize) -> f64 {
    let lower = |i: usize, j: usize| if i >= j { l[i + j * n] } else { 0.0 };
    let diff = (0..n)
        .flat_map(|j| (j..n).map(move |i| (i, j)))
        .map(|(i, j)| {
            let llt: f64 = (0..=j).map(|k| lower(i, k) * lower(j, k)).sum();
            a[i + j * n] - llt
        });
    let norm_a = frobenius((0..n).flat_map(|j| (j..n).map(move |i| a[i + j * n])));
    frobenius(diff) / (norm_a * n as f64 * f64::EPSILON)
}

// ---------------------------------------------------------------------------------------------
// Correctness: one check function, a table of cases.

/// Runs `algorithm` with values on `stored` (converted to `working`), and checks the factor
/// against the reference, the residual, the untouched upper triangle and the flop count.
fn check_factor(
    algorithm: Algorithm,
    stored: Storage,
    working: Storage,
    n: usize,
    m: usize,
) -> IoCounts {
    let upper = 7.25;
    let a = spd_matrix(n, (n * 131 + m) as u64, upper);
    let mut values = a.clone();
    let case = format!("{algorithm} on {stored} → {working}, n={n}, M={m}");
    let counts = simulate_with_conversion(algorithm, stored, working, n, m, Some(&mut values))
        .unwrap_or_else(|e| panic!("{case}: {e}"));
    let reference = reference_cholesky(&a, n);
    for j in 0..n {
        for i in 0..n {
            let (got, want) = (values[i + j * n], reference[i + j * n]);
            if i < j {
                assert_eq!(got, upper, "{case}: upper ({i},{j}) changed");
            } else {
                let tol = 1e-12 * want.abs().max(1.0) * n as f64;
                assert!(
                    (got - want).abs() <= tol,
                    "{case}: L({i},{j}) = {got}, want {want}"
                );
            }
        }
    }
    let residual = scaled_residual(&a, &values, n);
    assert!(residual < 4.0, "{case}: scaled residual {residual}");
    assert_eq!(counts.flops, cholesky_flops(n), "{case}: flops");
    assert!(counts.peak_fast_words <= m as u64, "{case}: peak");
    counts
}

#[test]
fn every_algorithm_and_layout_factors_correctly() {
    let layouts = [
        Storage::ColMajor,
        Storage::Blocked { b: 3 },
        Storage::Blocked { b: 4 },
        Storage::Morton,
    ];
    for algorithm in Algorithm::ALL {
        for n in [1, 2, 3, 5, 8, 13, 16, 21] {
            let least = algorithm.min_fast_words(n).max(3);
            for m in [least, least + 5, 48, (2 * n * n).max(least)] {
                for storage in layouts {
                    check_factor(algorithm, storage, storage, n, m);
                }
            }
        }
    }
}

#[test]
fn conversions_on_the_fly_factor_correctly() {
    for algorithm in [Algorithm::Square, Algorithm::Lapack, Algorithm::Rectangular] {
        for n in [1, 6, 16, 19] {
            for m in [4, 12, 48, 300] {
                check_factor(algorithm, Storage::ColMajor, Storage::Morton, n, m);
                check_factor(algorithm, Storage::Morton, Storage::ColMajor, n, m);
                let b = lapack_block_size(m).max(1);
                check_factor(algorithm, Storage::ColMajor, Storage::Blocked { b }, n, m);
            }
        }
    }
}

#[test]
fn flops_are_the_same_for_every_algorithm_and_layout_when_counting() {
    for algorithm in Algorithm::ALL {
        for storage in [
            Storage::ColMajor,
            Storage::Blocked { b: 5 },
            Storage::Morton,
        ] {
            for n in [7, 32, 45] {
                let counts = simulate(algorithm, storage, n, 2 * n + 40, None).unwrap();
                assert_eq!(
                    counts.flops,
                    cholesky_flops(n),
                    "{algorithm} {storage} n={n}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parameters and errors.

#[test]
fn bad_parameters_are_errors() {
    assert!(matches!(
        simulate(Algorithm::Square, Storage::Blocked { b: 0 }, 4, 48, None),
        Err(SimError::InvalidParameter(_))
    ));
    assert_eq!(
        simulate(Algorithm::LeftLooking, Storage::ColMajor, 10, 17, None),
        Err(SimError::FastMemoryTooSmall {
            algorithm: Algorithm::LeftLooking,
            needed: 18,
            available: 17
        })
    );
    assert_eq!(
        simulate(Algorithm::RightLooking, Storage::ColMajor, 10, 18, None),
        Err(SimError::FastMemoryTooSmall {
            algorithm: Algorithm::RightLooking,
            needed: 19,
            available: 18
        })
    );
    for algorithm in [Algorithm::Lapack, Algorithm::Rectangular, Algorithm::Square] {
        assert!(matches!(
            simulate(algorithm, Storage::Morton, 4, 2, None),
            Err(SimError::FastMemoryTooSmall { needed: 3, .. })
        ));
    }
    let mut short = vec![1.0; 15];
    assert_eq!(
        simulate(Algorithm::Square, Storage::Morton, 4, 48, Some(&mut short)),
        Err(SimError::ValuesLength {
            expected: 16,
            found: 15
        })
    );
    assert!(matches!(
        simulate_with_conversion(
            Algorithm::Square,
            Storage::Morton,
            Storage::Blocked { b: 2 },
            4,
            48,
            None
        ),
        Err(SimError::InvalidParameter(_))
    ));
    assert!(matches!(
        simulate_with_conversion(
            Algorithm::Square,
            Storage::ColMajor,
            Storage::Blocked { b: 8 },
            16,
            48,
            None
        ),
        Err(SimError::InvalidParameter(_))
    ));
}

#[test]
fn order_zero_costs_nothing() {
    for algorithm in Algorithm::ALL {
        let mut empty: [f64; 0] = [];
        let counts = simulate(algorithm, Storage::Morton, 0, 1, Some(&mut empty)).unwrap();
        assert_eq!(counts, IoCounts::default());
    }
}

#[test]
fn an_indefinite_matrix_is_reported_and_left_as_given() {
    let n = 6;
    let mut a = spd_matrix(n, 3, 0.0);
    a[4 + 4 * n] = -1000.0;
    for algorithm in Algorithm::ALL {
        let mut values = a.clone();
        let result = simulate(algorithm, Storage::ColMajor, n, 48, Some(&mut values));
        assert_eq!(
            result,
            Err(SimError::NotPositiveDefinite { column: 4 }),
            "{algorithm}"
        );
        assert_eq!(values, a);
    }
}

#[test]
fn names_round_trip() {
    for algorithm in Algorithm::ALL {
        assert_eq!(algorithm.to_string().parse::<Algorithm>(), Ok(algorithm));
    }
    assert!("potrf".parse::<Algorithm>().is_err());
}

// ---------------------------------------------------------------------------------------------
// Closed forms on small cases, derived from the algorithms by hand.

fn counts(algorithm: Algorithm, storage: Storage, n: usize, m: usize) -> (u64, u64) {
    let c = simulate(algorithm, storage, n, m, None).unwrap();
    (c.words, c.messages)
}

/// Algorithm 4: column `j` (1-based) is loaded and stored (`n−j+1` words each) and each of the
/// `j − 1` earlier columns is loaded over rows `j..n`: `(j+1)` transfers of `n−j+1` words, so
/// `W = Σ_j (n−j+1)(j+1) = n(n+1)(n+5)/6`. Column-major, each transfer is one column segment
/// (at most `n ≤ M` words): `S = Σ_j (j+1) = n(n+3)/2`.
#[test]
fn left_looking_moves_the_closed_form() {
    for n in 1..=8u64 {
        let by_sum: u64 = (1..=n).map(|j| (n - j + 1) * (j + 1)).sum();
        assert_eq!(by_sum, n * (n + 1) * (n + 5) / 6);
        let (w, s) = counts(
            Algorithm::LeftLooking,
            Storage::ColMajor,
            n as usize,
            2 * n as usize,
        );
        assert_eq!((w, s), (by_sum, n * (n + 3) / 2), "n={n}");
    }
}

/// Algorithm 5: column `j` (0-based) is loaded and stored (`n−j` words each) and each later
/// column `k` is loaded and stored over rows `k..n`: `W = Σ_j 2(n−j) + Σ_k 2k(n−k) =
/// n(n+1) + (n³−n)/3 = n(n+1)(n+2)/3`; `2 + 2(n−1−j)` transfers for column `j`, one message
/// each: `S = Σ_j 2(n−j) = n(n+1)`.
#[test]
fn right_looking_moves_the_closed_form() {
    for n in 1..=8u64 {
        let (w, s) = counts(
            Algorithm::RightLooking,
            Storage::ColMajor,
            n as usize,
            2 * n as usize,
        );
        assert_eq!((w, s), (n * (n + 1) * (n + 2) / 3, n * (n + 1)), "n={n}");
    }
}

/// Algorithm 6 with `N = n/b` blocks: block column `J` (0-based) makes `J + 2` block transfers
/// for SYRK + POTF2 (load `A_JJ`, load each `L_JK`, store), `(N−1−J)(2J+2)` for the GEMM when
/// `J > 0` (per block below: load, `2J` operands, store), `2(N−1−J) + 1` for the TRSM when
/// blocks lie below (load `L_JJ`, then load and store each block). Each transfer is `b²` words;
/// one message in the blocked layout of block size `b`, `b` messages column-major (`N ≥ 2`).
/// Summed: `T(N) = N(N−1)/2 + 2N + 2[(K³−K)/6 + K(K−1)/2] + K² + 2K` with `K = N − 1`.
#[test]
fn lapack_moves_the_closed_form() {
    for (n, m) in [(8, 12), (6, 12), (8, 48), (4, 3), (6, 27)] {
        let b = lapack_block_size(m);
        assert_eq!(n % b, 0);
        let big_n = (n / b) as u64;
        let by_sum: u64 = (0..big_n)
            .map(|j| {
                let below = big_n - 1 - j;
                (j + 2)
                    + if j > 0 { below * (2 * j + 2) } else { 0 }
                    + if below > 0 { 2 * below + 1 } else { 0 }
            })
            .sum();
        let k = big_n - 1;
        let closed = big_n * (big_n - 1) / 2
            + 2 * big_n
            + 2 * ((k * k * k - k) / 6 + k * (k.max(1) - 1) / 2)
            + k * k
            + 2 * k;
        assert_eq!(by_sum, closed, "n={n} M={m}");
        let block = (b * b) as u64;
        let blocked = counts(Algorithm::Lapack, Storage::Blocked { b }, n, m);
        assert_eq!(blocked, (block * by_sum, by_sum), "blocked n={n} M={m}");
        let col_major = counts(Algorithm::Lapack, Storage::ColMajor, n, m);
        assert_eq!(
            col_major,
            (block * by_sum, b as u64 * by_sum),
            "col-major n={n} M={m}"
        );
    }
}

/// Algorithm 8 with one level of recursion: `n = 2s`, `s² ≤ M` (the halves fit) and
/// `2s² ≤ M` (the TRSM's `L11` and `A21`, the SYRK's `A22` and `L21`, fit) but `n² > M`.
/// Then: factor `A11` (load + store `s²`), TRSM (load `L11`, `A21`, store `A21`: `3s²`), SYRK
/// (load `A22`, `L21`, store `A22`: `3s²`), factor `A22` (`2s²`): `W = 10s²` in 10 transfers
/// of an aligned `s × s` block, one message each in Morton storage, `s` column-major.
#[test]
fn square_recursive_one_level_moves_the_closed_form() {
    for (n, m) in [(4, 8), (4, 12), (8, 32), (8, 63), (16, 128)] {
        let s = (n / 2) as u64;
        assert_eq!(
            counts(Algorithm::Square, Storage::Morton, n, m),
            (10 * s * s, 10),
            "n={n} M={m}"
        );
        assert_eq!(
            counts(Algorithm::Square, Storage::ColMajor, n, m),
            (10 * s * s, 10 * s),
            "n={n} M={m}"
        );
    }
    // Fitting whole: one load and one store, one run each (whole columns, or the Morton block).
    for storage in [Storage::ColMajor, Storage::Morton] {
        assert_eq!(counts(Algorithm::Square, storage, 8, 64), (128, 2));
    }
}

/// Algorithm 7 traced by hand for `n = 4`, `M = 4`, column-major (words, messages):
/// - rect(cols 0..2), a `4 × 2` panel (8 > 4), splits:
///   - rect(col 0): the `4 × 1` panel fits: load + store a whole column: (8, 2);
///   - SYRK on `(1,1)` by column 0: load `A11`, `A10`, store `A11`: (3, 3);
///   - GEMM rows 2..4 × col 1 × col 0: `2+2+1 > 4`, split rows: two `1×1×1` leaves of
///     (4, 4): (8, 8);
///   - rect(col 1): rows 1..4 fit: (6, 2).
/// - SYRK on `A[2..4, 2..4]` by columns 0..2 (`4 + 4 > 4`, `k = s`, split the block):
///   - SYRK `(2,2)` by `A[2, 0..2]`: load 1, load 2 (two runs), store 1: (4, 4);
///   - GEMM `(3,2)` by columns 0..2: `1+2+2 > 4`, split `k`: two leaves of (4, 4): (8, 8);
///   - SYRK `(3,3)` by `A[3, 0..2]`: (4, 4).
/// - GEMM below row 4: empty.
/// - rect(cols 2..4): the `2 × 2` panel fits: load + store, two runs each: (8, 4).
///
/// Total `W = 25 + 16 + 8 = 49`, `S = 15 + 16 + 4 = 35`.
#[test]
fn rectangular_recursive_small_case_moves_the_hand_count() {
    assert_eq!(
        counts(Algorithm::Rectangular, Storage::ColMajor, 4, 4),
        (49, 35)
    );
}

/// The conversion of §3.1.1 for `n = 8`, `M = 16` to Morton: tiles of `t = 4`, three of them
/// on or below the diagonal, each loaded column-major (`t²` words, `t` runs) and stored to
/// Morton (`t²` words, one run): `(2·3·16, 3·(4+1)) = (96, 15)` each way. In general
/// `W = 2t²N(N+1)`, `S = N(N+1)(t+1)` for both ways with `N = n/t ≥ 2`.
#[test]
fn conversion_moves_the_closed_form() {
    let cost = |n: usize, m: usize| {
        let with = simulate_with_conversion(
            Algorithm::Square,
            Storage::ColMajor,
            Storage::Morton,
            n,
            m,
            None,
        )
        .unwrap();
        let without = simulate(Algorithm::Square, Storage::Morton, n, m, None).unwrap();
        (with.words - without.words, with.messages - without.messages)
    };
    assert_eq!(cost(8, 16), (192, 30));
    for (n, m, t) in [(64, 48, 4u64), (64, 300, 16), (32, 1024, 32)] {
        let big_n = n as u64 / t;
        let expected = if big_n >= 2 {
            (
                2 * t * t * big_n * (big_n + 1),
                big_n * (big_n + 1) * (t + 1),
            )
        } else {
            // One tile of whole columns: one run each way and direction.
            (2 * 2 * t * t, 4)
        };
        assert_eq!(cost(n, m), expected, "n={n} M={m}");
    }
}

// ---------------------------------------------------------------------------------------------
// Table 1.

/// Every row's fitted exponents agree with the paper's orders within ±0.25 on the quick
/// sweeps (see `table1`'s documentation for why each sweep is in the asymptotic regime).
#[test]
fn table1_exponents_match_the_paper() {
    let table = table1(Table1Scale::Quick).unwrap();
    println!("{table}");
    let mismatches: Vec<String> = table.rows.iter().flat_map(|r| r.mismatches(0.25)).collect();
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    assert_eq!(table.rows.len(), 9);
}

/// The square recursive algorithm on Morton storage stays within a constant of both
/// lower-bound curves over the sweep (measured: `W ≤ 1.22·n³/√M`, `S ≤ 3.66·n³/M^{3/2}`;
/// the constant of messages tends to about 3.47 as `n/√M` grows), and the conversion adds
/// little when `n ≥ M`. LAPACK on its blocked layout is within a constant too, while the
/// column-major latencies are a factor `Θ(√M)` above.
#[test]
fn optimal_rows_stay_within_constants_of_the_lower_bound() {
    let table = table1(Table1Scale::Quick).unwrap();
    let row = |algorithm, layout| {
        table
            .rows
            .iter()
            .find(|r| r.algorithm == algorithm && r.layout == layout)
            .unwrap()
    };
    let morton = row(Algorithm::Square, Table1Layout::Morton);
    assert!(
        morton.max_words_ratio() <= 1.25,
        "{}",
        morton.max_words_ratio()
    );
    assert!(
        morton.max_messages_ratio() <= 3.7,
        "{}",
        morton.max_messages_ratio()
    );
    let converted = row(Algorithm::Square, Table1Layout::ColMajorViaMorton);
    assert!(converted.max_messages_ratio() <= 5.5);
    let blocked = row(Algorithm::Lapack, Table1Layout::BlockedLapack);
    assert!(blocked.max_words_ratio() <= 0.75 && blocked.max_messages_ratio() <= 2.25);
    for algorithm in [Algorithm::Lapack, Algorithm::Square] {
        let col_major = row(algorithm, Table1Layout::ColMajor);
        for p in &col_major.points {
            // S ≈ c·n³/M: the ratio to n³/M^{3/2} grows like √M.
            let per_sqrt_m = p.messages_ratio() / (p.fast_words as f64).sqrt();
            assert!((0.9..2.2).contains(&per_sqrt_m), "{algorithm} {p:?}");
        }
    }
}

/// The rectangular recursive algorithm on Morton storage is not latency-optimal (Table 1:
/// `Ω(n²)`): every column longer than `M` is streamed, and a Morton column is runs of two
/// elements, so loading and storing column `j` costs at least `n − j − 1` messages:
/// `S ≥ Σ_{m=M+1}^{n} (m − 1) = (n(n−1) − M(M−1))/2`. At fixed `n` its ratio to
/// `n³/M^{3/2}` grows with `M`, while the square recursive algorithm's stays put.
#[test]
fn rectangular_recursive_on_morton_is_not_latency_optimal() {
    for (n, m) in [(64usize, 12usize), (128, 48), (256, 48), (256, 192)] {
        let (_, s) = counts(Algorithm::Rectangular, Storage::Morton, n, m);
        let floor = (n * (n - 1) - m * (m - 1)) as u64 / 2;
        assert!(s >= floor, "n={n} M={m}: {s} < {floor}");
    }
    let n = 256;
    let ratio = |algorithm, m: usize| {
        let (_, s) = counts(algorithm, Storage::Morton, n, m);
        s as f64 * (m as f64).powf(1.5) / (n as f64).powi(3)
    };
    let (rect_small, rect_large) = (
        ratio(Algorithm::Rectangular, 12),
        ratio(Algorithm::Rectangular, 192),
    );
    let (square_small, square_large) =
        (ratio(Algorithm::Square, 12), ratio(Algorithm::Square, 192));
    assert!(rect_large / rect_small > 3.0, "{rect_small} → {rect_large}");
    assert!(
        (square_large / square_small - 1.0).abs() < 0.05,
        "{square_small} → {square_large}"
    );
}
