//! The shell completions and the man pages, generated from the CLI
//! definition, tried the way a user meets them: bash completing a word,
//! groff rendering the page.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("running rdma-analyzer")
}

/// What bash offers for `line` (the words typed so far, the last one being
/// completed), with the script `completions bash` printed loaded.
fn bash_completes(line: &[&str]) -> Vec<String> {
    let script = run(&["completions", "bash"]);
    assert!(script.status.success());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rdma-analyzer.bash");
    std::fs::write(&path, &script.stdout).unwrap();
    let words = line
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let probe = format!(
        // The function the script registers for the command, called as
        // bash calls it: command, word being completed, word before it.
        "set -e; source '{}'; f=$(complete -p rdma-analyzer | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p'); \
         test -n \"$f\"; COMP_WORDS=({words}); COMP_CWORD={}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; \
         \"$f\" rdma-analyzer '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        line.len() - 1,
        line.join(" "),
        line[line.len() - 1],
        line[line.len().saturating_sub(2)],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output()
        .expect("bash is installed by scripts/setup.sh's base system");
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_their_options() {
    let subcommands = bash_completes(&["rdma-analyzer", "rep"]);
    assert_eq!(subcommands, ["report"], "{subcommands:?}");
    let options = bash_completes(&["rdma-analyzer", "report", "--mem"]);
    assert_eq!(options, ["--memory-limit"], "{options:?}");
    let live = bash_completes(&["rdma-analyzer", "live", "--pro"]);
    assert_eq!(live, ["--probes"], "{live:?}");
}

#[test]
fn every_shell_the_generator_knows_gets_a_script() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("memory-limit"), "{shell}: {text}");
    }
    let bad = run(&["completions", "tcsh"]);
    assert!(!bad.status.success());
}

/// The page as groff renders it for a terminal, with groff's warnings.
fn render(args: &[&str]) -> (String, String) {
    let page = run(args);
    assert!(page.status.success(), "{args:?}");
    let mut groff = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-P", "-cbou"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("groff (Debian's groff-base, which man needs)");
    use std::io::Write;
    groff.stdin.take().unwrap().write_all(&page.stdout).unwrap();
    let out = groff.wait_with_output().unwrap();
    assert!(out.status.success());
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn the_man_pages_render_and_name_what_the_cli_takes() {
    let (main, warnings) = render(&["man"]);
    assert_eq!(warnings, "", "groff warned on the main page");
    for sub in [
        "frames",
        "report",
        "transactions",
        "anomalies",
        "open",
        "live",
        "export",
    ] {
        assert!(main.contains(sub), "the main page lacks {sub}:\n{main}");
    }
    let (report, warnings) = render(&["man", "report"]);
    assert_eq!(warnings, "", "groff warned on report's page");
    assert!(report.contains("rdma-analyzer-report"), "{report}");
    for option in ["--filter", "--memory-limit", "--metrics-out", "--json"] {
        assert!(report.contains(option), "report's page lacks {option}");
    }
}

#[test]
fn a_man_page_of_no_subcommand_says_which_there_are() {
    let out = run(&["man", "raport"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no subcommand \"raport\""), "{err}");
    assert!(err.contains("report"), "{err}");
}
