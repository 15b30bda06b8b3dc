//! The miniapp's command line under random arguments: commands, flags and values drawn from
//! its own vocabulary and from garbage (zeros, negative and huge numbers, words, repeated and
//! unknown flags). Every run ends by itself with status 0 (it ran, or planned), 1 (a check
//! failed) or 2 (refused, with a message) — never a panic (101), a signal or a hang.

use proptest::prelude::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const COMMANDS: [&[&str]; 7] = [
    &["gemm"],
    &["lu"],
    &["cholesky"],
    &["plan", "gemm"],
    &["plan", "lu"],
    &["plan", "cholesky"],
    &["io-sim", "cholesky"],
];

const FLAGS: [&str; 24] = [
    "--m",
    "--n",
    "--k",
    "--ranks",
    "--type",
    "--algorithm",
    "--block",
    "--layers",
    "--grid",
    "--memory",
    "--idle",
    "--nrhs",
    "--reps",
    "--layout",
    "--uplo",
    "--strategy",
    "--op-a",
    "--op-b",
    "--alpha",
    "--beta",
    "--look-ahead",
    "--threads",
    "--backend",
    "--bogus",
];

const VALUES: [&str; 35] = [
    "0",
    "1",
    "2",
    "3",
    "7",
    "16",
    "33",
    "-1",
    "1e9",
    "100000",
    "10000000000",
    "18446744073709551616",
    "abc",
    "",
    "f32",
    "f64",
    "c32",
    "c64",
    "cosma",
    "summa",
    "2.5d",
    "cannon",
    "conflux",
    "2d",
    "confchox",
    "native",
    "block-cyclic",
    "lower",
    "upper",
    "2x1x2",
    "9x9x9",
    "pm2,sk2",
    "T",
    "0.5",
    "threads",
];

/// Runs the miniapp with `args`, killing it after `limit`: its exit code (`None`: killed by a
/// signal) and whether it ended in time.
fn run(args: &[String], limit: Duration) -> (Option<i32>, bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_redblue"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting works") {
            let mut err = String::new();
            use std::io::Read;
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return (status.code(), true, err);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return (None, false, String::new());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn argv() -> impl Strategy<Value = Vec<String>> {
    (
        0..COMMANDS.len(),
        prop::collection::vec((0..FLAGS.len(), 0..VALUES.len(), any::<bool>()), 0..7),
    )
        .prop_map(|(command, flags)| {
            let mut out: Vec<String> = COMMANDS[command].iter().map(|s| s.to_string()).collect();
            // Small problems, unless a drawn flag says otherwise.
            out.extend(["--n", "40", "--m", "30", "--k", "20"].map(String::from));
            out.retain(|a| command != 6 || !matches!(a.as_str(), "--m" | "--k" | "30" | "20"));
            for (flag, value, with_value) in flags {
                out.push(FLAGS[flag].to_string());
                if with_value {
                    out.push(VALUES[value].to_string());
                }
            }
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_command_lines_run_or_are_refused(args in argv()) {
        let (code, in_time, err) = run(&args, Duration::from_secs(60));
        prop_assert!(in_time, "{args:?} did not end within a minute");
        prop_assert!(matches!(code, Some(0..=2)), "{args:?} ended with {code:?}: {err}");
        if code == Some(2) {
            prop_assert!(!err.trim().is_empty(), "{args:?}: refused without a message");
        }
        prop_assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
