//! Build script (named in Cargo.toml): the commit steptop is built from, for `--version`.
//! Outside a git checkout (a source tarball) it says "commit unknown".

use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=STEPTOP_COMMIT=commit {commit}");
    // A new commit or a checkout changes HEAD or the ref it points at. Uncommitted changes
    // are not looked for: watching the index would rebuild on every `git status`.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head_ref}");
        }
    }
    println!("cargo:rerun-if-changed=src/build.rs");
}
