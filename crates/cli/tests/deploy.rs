//! deploy/kubernetes: the manifests validate against the Kubernetes object schema
//! (`kubernetes-validate --strict`, which rejects unknown fields), the values the schema
//! does not check are checked here (an Indexed Job with parallelism = completions =
//! HERD_SHARDS, the scenario the pods read), and the README's local commands are run as
//! written: a front, four shards as processes with the index in the environment, the merge.
//!
//! kubernetes-validate comes from the registry into a virtual environment that `.ci/run`
//! makes under the target directory (or `HERD_KUBERNETES_VALIDATE` names the program);
//! without it this test fails and says how to install it.

mod common;

use common::{herd, stderr, tempdir};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes")
}

fn validator() -> PathBuf {
    if let Some(p) = std::env::var_os("HERD_KUBERNETES_VALIDATE") {
        return PathBuf::from(p);
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .to_path_buf();
    let p = target.join("kubernetes-validate/bin/kubernetes-validate");
    assert!(
        p.exists(),
        "{} is missing: python3 -m venv {} && {}/bin/pip install kubernetes-validate==1.37.0 \
         (as .ci/run does), or set HERD_KUBERNETES_VALIDATE",
        p.display(),
        target.join("kubernetes-validate").display(),
        target.join("kubernetes-validate").display()
    );
    p
}

fn manifests() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(deploy())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    assert!(v.len() >= 3, "manifests found: {v:?}");
    v
}

/// The checks the schema leaves out, in the validator's own Python (it has PyYAML).
const CHECKS: &str = r#"
import sys, yaml
docs = [d for f in sys.argv[2:] for d in yaml.safe_load_all(open(f)) if d]
kinds = {d["kind"]: d for d in docs}
job = kinds["Job"]["spec"]
assert job.get("completionMode") == "Indexed", "completionMode must be Indexed: %r" % job.get("completionMode")
env = {e["name"]: e.get("value") for e in job["template"]["spec"]["containers"][0].get("env", [])}
assert "HERD_SHARDS" in env and "HERD_START_AT" in env, "the drivers need HERD_SHARDS and HERD_START_AT"
n = int(env["HERD_SHARDS"])
assert job["completions"] == n and job["parallelism"] == n, "parallelism = completions = HERD_SHARDS"
assert job["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")
front = kinds["Deployment"]["spec"]["template"]["spec"]["containers"][0]
assert front["args"][0] == "upstream" and "--target" in front["args"], "fronts run herd upstream in proxy mode"
svc = kinds["Service"]["spec"]
assert svc["selector"] == kinds["Deployment"]["spec"]["selector"]["matchLabels"], "the Service selects the fronts"
ports = [p["name"] for p in front["ports"]]
assert all(p["targetPort"] in ports for p in svc["ports"]), "the Service's targetPort is a front port"
for kind in ("Job", "Deployment"):
    vols = kinds[kind]["spec"]["template"]["spec"]["volumes"]
    assert any(v.get("configMap", {}).get("name") == kinds["ConfigMap"]["metadata"]["name"] for v in vols)
open(sys.argv[1], "w").write(kinds["ConfigMap"]["data"]["scenario.toml"])
"#;

fn python(validator: &Path) -> PathBuf {
    validator.parent().unwrap().join("python")
}

fn checks(validator: &Path, scenario_out: &Path, files: &[PathBuf]) -> std::process::Output {
    Command::new(python(validator))
        .arg("-c")
        .arg(CHECKS)
        .arg(scenario_out)
        .args(files)
        .output()
        .expect("the validator's python runs")
}

#[test]
fn manifests_are_valid_and_consistent() {
    let v = validator();
    let files = manifests();
    let o = Command::new(&v)
        .arg("--strict")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "kubernetes-validate: {}{}",
        stderr(&o),
        String::from_utf8_lossy(&o.stdout)
    );
    let dir = tempdir("deploy-checks");
    let scenario = dir.join("scenario.toml");
    let o = checks(&v, &scenario, &files);
    assert!(o.status.success(), "{}", stderr(&o));
    // The ConfigMap's scenario is one herd runs.
    let o = herd(&[
        "sim",
        scenario.to_str().unwrap(),
        "--requests",
        "200",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Both checks catch what they are for: a misspelt field, a wrong enum value.
    let job = std::fs::read_to_string(deploy().join("drivers-job.yaml")).unwrap();
    for (name, from, to, strict) in [
        ("misspelt.yaml", "parallelism:", "paralellism:", true),
        (
            "enum.yaml",
            "completionMode: Indexed",
            "completionMode: Indexd",
            false,
        ),
    ] {
        let bad = dir.join(name);
        std::fs::write(&bad, job.replace(from, to)).unwrap();
        let mut with_bad: Vec<PathBuf> = files.clone();
        with_bad.retain(|f| !f.ends_with("drivers-job.yaml"));
        with_bad.push(bad.clone());
        let schema = Command::new(&v).arg("--strict").arg(&bad).output().unwrap();
        let own = checks(&v, &scenario, &with_bad);
        if strict {
            assert!(!schema.status.success(), "{name}: the schema rejects it");
        } else {
            assert!(!own.status.success(), "{name}: the own checks reject it");
        }
    }
}

/// The fenced `sh` block of the README that runs the shards locally.
fn readme_block() -> String {
    let readme = std::fs::read_to_string(deploy().join("README.md")).unwrap();
    let mut blocks = Vec::new();
    let mut cur: Option<String> = None;
    for line in readme.lines() {
        match (&mut cur, line.trim_start()) {
            (None, l) if l.starts_with("```sh") => cur = Some(String::new()),
            (Some(_), "```") => blocks.push(cur.take().unwrap()),
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    let local: Vec<String> = blocks
        .into_iter()
        .filter(|b| b.contains("JOB_COMPLETION_INDEX=$i herd bench"))
        .collect();
    assert_eq!(local.len(), 1, "one local block in the README");
    local.into_iter().next().unwrap()
}

struct Front(Child, String);

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn front(scenario: &Path) -> Front {
    let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
        .args([
            "upstream",
            scenario.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    Front(child, url)
}

#[test]
fn the_readmes_local_commands_run_and_merge() {
    let dir = tempdir("deploy-local");
    // The ConfigMap's scenario, smaller: the README's commands as written.
    let v = validator();
    let scenario = dir.join("scenario.toml");
    let o = checks(&v, &scenario, &manifests());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&scenario).unwrap();
    let small = text
        .replace("requests = 80000", "requests = 2000")
        .replace("rate = 8000", "rate = 400");
    assert_ne!(
        small, text,
        "the scenario's load is where this test expects it"
    );
    std::fs::write(&scenario, small).unwrap();
    let f = front(&scenario);
    let bin = Path::new(env!("CARGO_BIN_EXE_herd")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &readme_block()])
        .current_dir(&dir)
        .env("PATH", path)
        .env("SCENARIO", &scenario)
        .env("FRONT", &f.1)
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    assert!(o.status.success(), "the README's commands: {}", stderr(&o));
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("merged/report.json")).unwrap()).unwrap();
    let arm = &merged["arms"][0];
    assert_eq!(arm["logical_requests"], 2000, "{arm}");
    let attempts: u64 = (0..4)
        .map(|i| {
            let s: serde_json::Value = serde_json::from_slice(
                &std::fs::read(dir.join(format!("shard-{i}.json"))).unwrap(),
            )
            .unwrap();
            assert_eq!(s["shard"]["indices"][0], i);
            s["arms"][0]["client_attempts"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(arm["client_attempts"].as_u64(), Some(attempts));
    assert_eq!(
        arm["server_requests"].as_u64(),
        Some(attempts),
        "the front saw every attempt"
    );
    assert!(merged.get("shard").is_none() && merged.get("direct").is_none());
}
