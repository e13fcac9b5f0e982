// What every Rust client test shares (each crate's src/main.rs includes it):
// a small runner (each test a function; its outcome printed as "ok - NAME" or
// "not ok - NAME: WHY"; the process exits 1 if one failed), the node the IDs
// must decode to, and the u64 trap, which is a compile error: the test builds
// the crate's examples/u64_key.rs and checks that rustc refuses it. No test
// framework: `cargo test` would build every crate a second time, in its test
// profile, and these tests need only this.

use std::process::Command;

pub type Outcome = Result<(), String>;

pub fn check(condition: bool, what: impl Into<String>) -> Outcome {
    if condition {
        Ok(())
    } else {
        Err(what.into())
    }
}

/// The node the layer's server is (test/clients/run.sh sets the variables).
pub fn node() -> (i32, i32) {
    let read = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(-1);
    (read("SNOWFLAKE_DATACENTER_ID"), read("SNOWFLAKE_WORKER_ID"))
}

pub fn database_url() -> String {
    std::env::var("DATABASE_URL").expect("DATABASE_URL (test/clients/run.sh sets it)")
}

/// Prints each outcome; exits 1 if one failed.
pub fn report(outcomes: Vec<(&str, Outcome)>) {
    let mut failed = 0;
    for (name, outcome) in &outcomes {
        match outcome {
            Ok(()) => println!("ok - {name}"),
            Err(why) => {
                failed += 1;
                println!("not ok - {name}: {why}");
            }
        }
    }
    println!("{} passed, {} failed", outcomes.len() - failed, failed);
    if failed > 0 {
        std::process::exit(1);
    }
}

/// Builds examples/u64_key.rs of this crate: the build must fail, with
/// rustc's E0277 (a trait the crate needs is not implemented) for u64.
pub fn u64_key_refused(manifest_dir: &str) -> Outcome {
    let output = Command::new("cargo")
        .args(["build", "--offline", "--quiet", "--example", "u64_key", "--manifest-path"])
        .arg(format!("{manifest_dir}/Cargo.toml"))
        .current_dir(manifest_dir) // where cargo finds ../.cargo/config.toml
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    let errors = String::from_utf8_lossy(&output.stderr);
    for line in errors.lines().filter(|line| line.starts_with("error")) {
        println!("# rustc on examples/u64_key.rs: {line}");
    }
    check(!output.status.success(), "examples/u64_key.rs compiled: a u64 key was accepted")?;
    check(
        errors.contains("error[E0277]") && errors.contains("u64"),
        format!("rustc refused examples/u64_key.rs, but not with E0277 on u64:\n{errors}"),
    )
}
