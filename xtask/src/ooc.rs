//! `cargo xtask bench-ooc`: the out-of-core LU against the in-core LU of the same matrix in the
//! same run, and the device's own throughput next to what the run's reads and writes reached.

use std::process::Command;

/// The number after `"key":` in a one-line JSON object.
fn field(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &json[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// `dd`'s rate (bytes per second) from its last line ("..., 1.2 GB/s").
fn dd_rate(args: &[&str]) -> Result<f64, String> {
    let out = Command::new("dd")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run dd: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    let mut words = last
        .rsplit(", ")
        .next()
        .unwrap_or_default()
        .split_whitespace();
    let (value, unit) = (words.next(), words.next());
    let scale = match unit {
        Some("kB/s") => 1e3,
        Some("MB/s") => 1e6,
        Some("GB/s") => 1e9,
        _ => return Err(format!("dd said `{last}`")),
    };
    value
        .and_then(|v| v.replace(',', ".").parse::<f64>().ok())
        .map(|v| v * scale)
        .ok_or(format!("dd said `{last}`"))
}

/// `cargo xtask bench-ooc [N [MEMORY_MIB [PAIRS]]]` (default 16384, 512, 3): `redblue ooc-lu
/// --compare-in-core` (left-looking, pivoted storage, 2 threads, reads ahead) PAIRS times —
/// each run the out-of-core LU then the in-core LU of the same matrix, so the pairs
/// interleave — then `dd`'s write (fsync) and direct read of a 1 GiB file in the same folder.
pub fn bench_ooc(args: &[String]) -> Result<(), String> {
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or_else(|| default.to_string());
    let (n, mib, pairs) = (
        arg(0, "16384"),
        arg(1, "512").parse::<u64>().map_err(|e| e.to_string())?,
        arg(2, "3").parse::<usize>().map_err(|e| e.to_string())?,
    );
    crate::run("cargo", &["build", "--release", "-p", "redblue-cli"], &[])?;
    let dir = crate::workspace_root().join("target/bench-ooc");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let memory = (mib << 20).to_string();
    println!(
        "\nbench-ooc: f64, N = {n}, memory {mib} MiB, 2 threads, {pairs} pairs (out of core, then \
         in core, each run); OPENBLAS_CORETYPE unset; files in {}",
        dir.display()
    );
    let (mut ratios, mut ooc, mut core) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..pairs {
        let out = Command::new("target/release/redblue")
            .args(["ooc-lu", "--n", &n, "--memory", &memory, "--threads", "2"])
            .args(["--compare-in-core", "--json", "--dir"])
            .arg(&dir)
            .env_remove("OPENBLAS_CORETYPE")
            .output()
            .map_err(|e| format!("cannot run redblue: {e}"))?;
        let json = String::from_utf8_lossy(&out.stdout).to_string();
        if !out.status.success() {
            return Err(format!(
                "ooc-lu failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let get = |k: &str| field(&json, k).ok_or(format!("no {k} in {json}"));
        let (t, c) = (get("time_s")?, get("in_core_time_s")?);
        let bytes = |elems: f64| elems * 8.0;
        println!(
            "  pair {pair}: out of core {t:.2} s (panel {}, read {:.1} GB in {:.2} s = {:.2} GB/s, \
             waited {:.2} s; wrote {:.1} GB in {:.2} s = {:.2} GB/s; fsync {:.2} s, mostly in the \
             background), in core {c:.2} s: ratio {:.3}",
            get("panel")?,
            bytes(get("io_read_elems")?) / 1e9,
            get("io_read_s")?,
            bytes(get("io_read_elems")?) / get("io_read_s")? / 1e9,
            get("io_wait_s")?,
            bytes(get("io_write_elems")?) / 1e9,
            get("io_write_s")?,
            bytes(get("io_write_elems")?) / get("io_write_s")? / 1e9,
            get("io_sync_s")?,
            t / c
        );
        ratios.push(t / c);
        ooc.push(t);
        core.push(c);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let probe = dir.join("dd.bin");
    let of = format!("of={}", probe.display());
    let iff = format!("if={}", probe.display());
    let write = dd_rate(&["if=/dev/zero", &of, "bs=1M", "count=1024", "conv=fsync"])?;
    let read = dd_rate(&[&iff, "of=/dev/null", "bs=1M", "iflag=direct"])?;
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "out of core / in core: median {:.3} (out of core median {:.2} s, in core {:.2} s)\n\
         the device (dd, 1 GiB): write with fsync {:.2} GB/s, direct read {:.2} GB/s",
        crate::scalapack::median(ratios),
        crate::scalapack::median(ooc),
        crate::scalapack::median(core),
        write / 1e9,
        read / 1e9
    );
    Ok(())
}
