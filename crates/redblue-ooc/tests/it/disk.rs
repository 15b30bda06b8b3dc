//! The disk layer: rectangles in and out, exact counts, checksums that find damage, files that
//! are not what they claim named with what is wrong, and the ways in (a function, a raw file,
//! `.npy` in both orders) and out (`.npy`).

use redblue_core::{c32, c64, random, Scalar};
use redblue_ooc::{DiskMatrix, IoCounts, OocError};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("redblue-ooc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn value<T: Scalar>(i: usize, j: usize) -> T {
    T::from_f64_parts(random::uniform(i, j, 3), random::uniform(i, j, 4))
}

fn rectangles_round_trip<T: Scalar>() {
    let d = dir(&format!("rect-{}", std::mem::size_of::<T>()));
    let (m, n, w) = (37, 23, 5);
    let mut a = DiskMatrix::<T>::create_from_fn(d.join("a.rbm"), m, n, w, value::<T>).unwrap();
    assert_eq!(
        (a.shape(), a.panels(), a.panel_cols(4)),
        ((m, n), 5, 20..23)
    );
    assert_eq!(a.io(), IoCounts::default());
    let mut got = vec![T::zero(); 9 * 6];
    a.read(3..12, 14..20, &mut got).unwrap();
    for jj in 0..6 {
        for ii in 0..9 {
            assert_eq!(got[ii + 9 * jj], value::<T>(3 + ii, 14 + jj));
        }
    }
    let new: Vec<T> = (0..4 * 3)
        .map(|k| T::from_f64_parts(k as f64, -1.0))
        .collect();
    a.write(30..34, 4..7, &new).unwrap();
    assert_eq!(a.io().read_elems, 54);
    assert_eq!(a.io().write_elems, 12);
    a.sync().unwrap();
    a.verify().unwrap();
    // Reopened, the write is there and the rest unchanged.
    drop(a);
    let mut b = DiskMatrix::<T>::open(d.join("a.rbm")).unwrap();
    b.verify().unwrap();
    let mut all = vec![T::zero(); m * n];
    b.read(0..m, 0..n, &mut all).unwrap();
    for j in 0..n {
        for i in 0..m {
            let want = if (30..34).contains(&i) && (4..7).contains(&j) {
                new[(i - 30) + 4 * (j - 4)]
            } else {
                value::<T>(i, j)
            };
            assert_eq!(all[i + m * j], want);
        }
    }
    assert_eq!(b.io().read_elems, (m * n) as u64);
}

#[test]
fn rectangles_round_trip_with_exact_counts_for_every_scalar() {
    rectangles_round_trip::<f32>();
    rectangles_round_trip::<f64>();
    rectangles_round_trip::<c32>();
    rectangles_round_trip::<c64>();
}

#[test]
fn a_corrupted_panel_is_named_by_verify() {
    let d = dir("corrupt");
    let path = d.join("a.rbm");
    let mut a = DiskMatrix::<f64>::create_from_fn(&path, 20, 12, 4, value::<f64>).unwrap();
    a.verify().unwrap();
    drop(a);
    // Flip one byte of column 9 (panel 2).
    let data_start = 4096u64;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .open(&path)
        .unwrap();
    let at = data_start + (3 + 9 * 20) * 8 + 2;
    let mut byte = [0u8];
    f.read_exact_at(&mut byte, at).unwrap();
    f.write_all_at(&[byte[0] ^ 0x40], at).unwrap();
    let mut a = DiskMatrix::<f64>::open(&path).unwrap();
    let e = a.verify().unwrap_err();
    assert!(matches!(e, OocError::Panel { panel: 2, .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("a.rbm") && msg.contains("panel 2") && msg.contains("checksum"),
        "{msg}"
    );
}

#[test]
fn files_that_are_not_what_they_claim_are_refused_with_the_reason() {
    let d = dir("bad");
    let path = d.join("a.rbm");
    DiskMatrix::<f64>::create_from_fn(&path, 10, 10, 3, value::<f64>).unwrap();
    let why = |e: OocError| e.to_string();
    // Another scalar type.
    let e = DiskMatrix::<f32>::open(&path).unwrap_err();
    assert!(why(e).contains("holds f64, opened as f32"));
    // Truncated.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len - 8).unwrap();
    let e = DiskMatrix::<f64>::open(&path).unwrap_err();
    assert!(why(e).contains("truncated"));
    f.set_len(len).unwrap();
    DiskMatrix::<f64>::open(&path).unwrap();
    // Another version, a damaged header, not this format at all, missing.
    let patch = |at: u64, byte: u8| f.write_all_at(&[byte], at).unwrap();
    patch(8, 2);
    assert!(why(DiskMatrix::<f64>::open(&path).unwrap_err()).contains("format version 2"));
    patch(8, 1);
    patch(17, 0xff);
    assert!(why(DiskMatrix::<f64>::open(&path).unwrap_err()).contains("corrupted"));
    patch(0, b'X');
    assert!(why(DiskMatrix::<f64>::open(&path).unwrap_err()).contains("bad magic"));
    let e = DiskMatrix::<f64>::open(d.join("missing.rbm")).unwrap_err();
    assert!(matches!(e, OocError::Io { .. }) && why(e).contains("missing.rbm"));
    // A rectangle outside, a buffer of the wrong length, a zero panel width.
    let mut a = DiskMatrix::<f64>::create(d.join("b.rbm"), 4, 4, 2).unwrap();
    assert!(matches!(
        a.read(0..5, 0..1, &mut [0.0; 5]),
        Err(OocError::Invalid(_))
    ));
    assert!(matches!(
        a.write(0..2, 0..2, &[0.0; 3]),
        Err(OocError::Invalid(_))
    ));
    assert!(matches!(
        DiskMatrix::<f64>::create(d.join("c.rbm"), 4, 4, 0),
        Err(OocError::Invalid(_))
    ));
}

/// A `.npy` file written by hand (version 1.0), in C or Fortran order.
fn write_npy(
    path: &std::path::Path,
    descr: &str,
    fortran: bool,
    rows: usize,
    cols: usize,
    data: &[u8],
) {
    let order = if fortran { "True" } else { "False" };
    let mut text =
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': ({rows}, {cols}), }}");
    while (10 + text.len() + 1) % 64 != 0 {
        text.push(' ');
    }
    text.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
    bytes.extend_from_slice(text.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn npy_and_raw_files_come_in_in_either_order_and_go_out_in_fortran_order() {
    let d = dir("npy");
    let (m, n) = (7, 5);
    let le = |x: f64| x.to_le_bytes();
    let c_order: Vec<u8> = (0..m)
        .flat_map(|i| (0..n).flat_map(move |j| le((10 * i + j) as f64)))
        .collect();
    let f_order: Vec<u8> = (0..n)
        .flat_map(|j| (0..m).flat_map(move |i| le((10 * i + j) as f64)))
        .collect();
    write_npy(&d.join("c.npy"), "<f8", false, m, n, &c_order);
    write_npy(&d.join("f.npy"), "<f8", true, m, n, &f_order);
    std::fs::write(d.join("raw.bin"), &f_order).unwrap();
    let mut from_c = DiskMatrix::<f64>::from_npy(d.join("c.npy"), d.join("c.rbm"), 2).unwrap();
    let mut from_f = DiskMatrix::<f64>::from_npy(d.join("f.npy"), d.join("f.rbm"), 3).unwrap();
    let mut from_raw =
        DiskMatrix::<f64>::from_raw(d.join("raw.bin"), d.join("r.rbm"), m, n, 4).unwrap();
    for a in [&mut from_c, &mut from_f, &mut from_raw] {
        a.verify().unwrap();
        let mut all = vec![0.0; m * n];
        a.read(0..m, 0..n, &mut all).unwrap();
        assert!((0..n).all(|j| (0..m).all(|i| all[i + m * j] == (10 * i + j) as f64)));
    }
    from_c.to_npy(d.join("out.npy")).unwrap();
    let out = std::fs::read(d.join("out.npy")).unwrap();
    assert_eq!(out.len() % 64, (m * n * 8) % 64);
    assert!(out.starts_with(b"\x93NUMPY\x01\x00"));
    assert_eq!(&out[out.len() - m * n * 8..], &f_order[..]);
    let back = DiskMatrix::<f64>::from_npy(d.join("out.npy"), d.join("back.rbm"), 5).unwrap();
    assert_eq!(back.shape(), (m, n));
    // The wrong element type, a raw file of the wrong length.
    let e = DiskMatrix::<c64>::from_npy(d.join("c.npy"), d.join("x.rbm"), 2).unwrap_err();
    assert!(e.to_string().contains("holds <f8"), "{e}");
    let e =
        DiskMatrix::<f64>::from_raw(d.join("raw.bin"), d.join("y.rbm"), m, n + 1, 2).unwrap_err();
    assert!(e.to_string().contains("raw.bin"), "{e}");
}

#[test]
fn a_rectangle_is_written_from_a_strided_buffer_and_a_short_one_is_refused() {
    let path = std::env::temp_dir().join(format!("redblue-ooc-strided-{}.rbm", std::process::id()));
    let mut a = DiskMatrix::<f64>::create(&path, 6, 5, 2).unwrap();
    // A 7-row array whose rows 2..5 of columns 0..3 go to rows 1..4 of columns 1..4.
    let big: Vec<f64> = (0..7 * 3).map(|x| x as f64).collect();
    a.write_strided(1..4, 1..4, &big[2..], 7).unwrap();
    let mut back = vec![0.0; 9];
    a.read(1..4, 1..4, &mut back).unwrap();
    let want: Vec<f64> = (0..3)
        .flat_map(|j| (2..5).map(move |i| (j * 7 + i) as f64))
        .collect();
    assert_eq!(back, want);
    assert_eq!(a.io().write_elems, 9);
    assert!(
        a.write_strided(1..4, 1..4, &big[2..], 2).is_err(),
        "ld below the height"
    );
    assert!(
        a.write_strided(1..4, 1..4, &big[..10], 7).is_err(),
        "too short"
    );
    let _ = std::fs::remove_file(&path);
}
