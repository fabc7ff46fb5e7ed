//! Command arms (`client = { command = [...] }`) and arms' `options`, end to end through
//! the herd binary: a program run as an arm, and every way bad input is refused with
//! exit 2, naming the arm and the key or program, before any request.
//!
//! The Python tests need `python3` (and, for the built-in clients, its venv module):
//! they fail without it, they never skip.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn minimal_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters/kits/examples/minimal.py")
}

/// Writes `toml` as `name.toml` in a fresh directory and returns the file.
fn scenario(name: &str, toml: &str) -> PathBuf {
    let dir = tempdir(name);
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, toml).unwrap();
    file
}

const HEAD: &str = r#"
name = "cmd"
seed = 3
[load]
requests = 20
rate = 40
[client]
attempt_timeout_ms = 2000
[upstream]
error_rate = 0.5
"#;

#[test]
fn a_program_runs_as_an_arm_with_its_options() {
    let toml = format!(
        "{HEAD}[[arms]]\nid = \"example-minimal\"\nclient = {{ command = [\"python3\", {:?}] }}\noptions = {{ retries = 2, delay_ms = 100 }}\n",
        minimal_py().canonicalize().unwrap().to_str().unwrap()
    );
    let file = scenario("cmd-minimal", &toml);
    let json = file.with_file_name("r.json");
    let o = herd(&[
        "bench",
        file.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stdout(&o).contains("client counts") && !stdout(&o).contains("warning"),
        "an honest adapter's counts draw no warning: {}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("herd: arm example-minimal: ")
            && stderr(&o).contains(r#"--options '{"delay_ms":100,"retries":2}'"#),
        "the command line is printed: {}",
        stderr(&o)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let a = arm(&v, "example-minimal");
    assert_eq!(a["logical_requests"], 20);
    // The upstream's own count equals the attempts the adapter reported, and it retried.
    assert_eq!(a["client_attempts"], a["server_requests"], "{a}");
    assert!(a["server_requests"].as_u64().unwrap() > 20, "{a}");
    assert!(a["policy"]
        .as_str()
        .unwrap()
        .contains("503 retried 2 times after 100 ms"));
    let cmd: Vec<&str> = a["command"]
        .as_array()
        .expect("command recorded")
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(cmd[0].ends_with("python3"), "{cmd:?}");
    assert!(cmd.contains(&"--client") && cmd.contains(&"example-minimal"));
    assert_eq!(cmd.last(), Some(&r#"{"delay_ms":100,"retries":2}"#));
}

/// An adapter that always reports 1 attempt while its client retries: the report's
/// `client_attempts` falls short of the server's count, and the text under the table names
/// the arm with both numbers.
#[test]
fn an_adapter_that_undercounts_its_attempts_is_named_under_the_table() {
    let dir = tempdir("cmd-undercount");
    let liar = dir.join("liar.py");
    let source = std::fs::read_to_string(minimal_py()).unwrap();
    let lying = source.replace(r#""attempts": attempts}"#, r#""attempts": 1}"#);
    assert_ne!(source, lying, "minimal.py reports `attempts`");
    std::fs::write(&liar, lying).unwrap();
    let toml = format!(
        "{HEAD}[[arms]]\nid = \"example-minimal\"\nclient = {{ command = [\"python3\", {:?}] }}\noptions = {{ retries = 2, delay_ms = 50 }}\n",
        liar.to_str().unwrap()
    );
    let file = dir.join("s.toml");
    std::fs::write(&file, toml).unwrap();
    let json = dir.join("r.json");
    let o = herd(&[
        "bench",
        file.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let a = arm(&v, "example-minimal");
    let (client, server) = (
        a["client_attempts"].as_u64().unwrap(),
        a["server_requests"].as_u64().unwrap(),
    );
    assert_eq!(client, 20, "one attempt reported per request: {a}");
    assert!(server > 22, "the client retried: {a}");
    let text = stdout(&o);
    assert!(
        text.contains(&format!("| example-minimal | {client} | {server} |")),
        "both columns for the arm: {text}"
    );
    assert!(
        text.contains(&format!(
            "warning: arm example-minimal: its client reported {client} attempt(s), herd's front received {server} request(s)"
        )),
        "{text}"
    );
}

#[test]
fn relative_paths_are_the_scenario_files() {
    let toml = format!(
        "{HEAD}[[arms]]\nid = \"example-minimal\"\nclient = {{ command = [\"python3\", \"arms/minimal.py\"], cwd = \"arms\" }}\n"
    )
    .replace("requests = 20", "requests = 5");
    let file = scenario("cmd-relative", &toml);
    let arms = file.with_file_name("arms");
    std::fs::create_dir_all(&arms).unwrap();
    std::fs::copy(minimal_py(), arms.join("minimal.py")).unwrap();
    // Run from elsewhere: the paths resolve against the scenario file, not the cwd.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_herd"))
        .args(["bench", file.to_str().unwrap(), "--json", "-"])
        .current_dir("/")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let a = arm(&v, "example-minimal");
    assert_eq!(a["client_attempts"], a["server_requests"], "{a}");
    let script = a["command"][1].as_str().unwrap();
    assert!(
        Path::new(script).is_absolute() && script.ends_with("arms/minimal.py"),
        "{script}"
    );
}

/// Runs `herd bench` on `toml` and expects exit 2 with every one of `needles` on stderr
/// and no report written.
fn refused(name: &str, toml: &str, needles: &[&str]) {
    let file = scenario(name, toml);
    let json = file.with_file_name("r.json");
    let o = herd(&[
        "bench",
        file.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
    assert!(!err.contains("wall time"), "nothing ran: {err}");
    assert!(!json.exists(), "no report on bad input");
}

#[test]
fn an_unknown_option_of_a_program_is_refused() {
    let toml = format!(
        "{HEAD}[[arms]]\nid = \"example-minimal\"\nclient = {{ command = [\"python3\", {:?}] }}\noptions = {{ nope = 1 }}\n",
        minimal_py().to_str().unwrap()
    );
    refused(
        "cmd-unknown-option",
        &toml,
        &[
            "arm example-minimal: the adapter refused its options:",
            "nope",
        ],
    );
}

#[test]
fn an_unknown_or_ill_typed_option_of_a_built_in_client_is_refused() {
    let unknown = format!(
        "{HEAD}[[arms]]\nid = \"py\"\nclient = \"py-requests\"\noptions = {{ bogus = 1 }}\n"
    );
    refused(
        "cmd-py-bogus",
        &unknown,
        &["arm py: the adapter refused its options:", "bogus"],
    );
    let ill_typed = format!(
        "{HEAD}[[arms]]\nid = \"py\"\nclient = \"py-requests\"\noptions = {{ total = \"three\" }}\n"
    );
    refused(
        "cmd-py-type",
        &ill_typed,
        &["arm py: the adapter refused its options:", "total"],
    );
}

#[test]
fn a_missing_program_is_refused() {
    let toml = format!(
        "{HEAD}[[arms]]\nid = \"mine\"\nclient = {{ command = [\"/nonexistent/herd-arm\"] }}\n"
    );
    refused(
        "cmd-missing",
        &toml,
        &["arm mine: program `/nonexistent/herd-arm` does not exist"],
    );
    let toml = format!(
        "{HEAD}[[arms]]\nid = \"mine\"\nclient = {{ command = [\"herd-no-such-program\"] }}\n"
    );
    refused(
        "cmd-not-on-path",
        &toml,
        &["arm mine: program `herd-no-such-program` was not found on PATH"],
    );
}

#[test]
fn a_program_that_is_not_executable_is_refused() {
    let toml = format!("{HEAD}[[arms]]\nid = \"mine\"\nclient = {{ command = [\"./arm.sh\"] }}\n");
    let file = scenario("cmd-not-executable", &toml);
    std::fs::write(file.with_file_name("arm.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    let o = herd(&["bench", file.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("arm mine: program `") && err.contains("arm.sh` is not executable"),
        "{err}"
    );
}

#[test]
fn herd_sim_refuses_a_command_arm() {
    let toml = format!(
        "{HEAD}[[arms]]\nid = \"r\"\npolicy = \"none\"\n[[arms]]\nid = \"mine\"\nclient = {{ command = [\"python3\", \"x.py\"] }}\n"
    );
    let file = scenario("cmd-sim", &toml);
    let o = herd(&["sim", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("arm mine runs a real client"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn options_on_a_replica_arm_are_refused() {
    let toml = format!("{HEAD}[[arms]]\nid = \"r\"\npolicy = \"none\"\noptions = {{ a = 1 }}\n");
    let file = scenario("cmd-replica-options", &toml);
    let o = herd(&["bench", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("options"), "{}", stderr(&o));
}

#[test]
fn a_program_exiting_2_before_its_handshake_is_bad_input_too() {
    // No `options`, so no probe: the refusal comes when the arm starts, and is still exit 2.
    let toml = format!("{HEAD}[[arms]]\nid = \"mine\"\nclient = {{ command = [\"./arm.sh\"] }}\n");
    let file = scenario("cmd-exit-2", &toml);
    let script = file.with_file_name("arm.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'arm.sh: unknown flag --pool' >&2\nexit 2\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = herd(&["bench", file.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("arm mine: adapter mine refused its options: arm.sh: unknown flag --pool"),
        "{err}"
    );
}

/// A command arm's ids leave on the driver's microsecond pacer, as a replica arm's
/// arrivals do: on tokio's 1 ms timer the median lag was about a millisecond (each
/// instant rounded up to the next tick), on the pacer it is microseconds. The bound is
/// generous for a busy CI machine and still fails on the millisecond timer; a quiet
/// machine keeps p99 under 1 ms too.
#[test]
fn a_command_arm_leaves_on_time() {
    let toml = format!(
        "name = \"lag\"\nseed = 3\n[load]\nrequests = 400\nrate = 200\n[client]\nattempt_timeout_ms = 2000\n\
         [[arms]]\nid = \"example-minimal\"\nclient = {{ command = [\"python3\", {:?}] }}\n",
        minimal_py().canonicalize().unwrap().to_str().unwrap()
    );
    let file = scenario("cmd-lag", &toml);
    let mut medians = vec![];
    for _ in 0..3 {
        let o = herd(&["bench", file.to_str().unwrap(), "--json", "-", "--quiet"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
        let a = arm(&v, "example-minimal");
        assert_eq!(a["logical_requests"], 400, "{a}");
        assert_eq!(a["driver_dropped"], 0, "{a}");
        let p50 = a["driver_lag_ms"]["p50"].as_f64().expect("lag p50");
        if p50 < 0.5 {
            return;
        }
        medians.push(p50);
    }
    panic!(
        "a command arm's median lag was half a millisecond or more in every run: {medians:?} ms"
    );
}

/// An id that finds the backlog full is not sent and counts as dropped, as a plain arm's
/// arrival does: with room for 2 requests and each held 50 ms by the upstream, most of 40
/// ids at 200 req/s are dropped, and the run fails.
#[test]
fn a_command_arms_full_backlog_drops_ids() {
    let toml = format!(
        "name = \"drop\"\nseed = 3\n[load]\nrequests = 40\nrate = 200\nbacklog = 2\n[client]\nattempt_timeout_ms = 2000\n\
         [upstream]\nservice_time = {{ dist = \"constant\", ms = 50 }}\n\
         [[arms]]\nid = \"example-minimal\"\nclient = {{ command = [\"python3\", {:?}] }}\n",
        minimal_py().canonicalize().unwrap().to_str().unwrap()
    );
    let file = scenario("cmd-drop", &toml);
    let o = herd(&["bench", file.to_str().unwrap(), "--json", "-", "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    let a = arm(&v, "example-minimal");
    let dropped = a["driver_dropped"].as_u64().expect("dropped");
    assert!(dropped > 10, "{a}");
    assert_eq!(a["logical_requests"].as_u64().unwrap() + dropped, 40, "{a}");
}
