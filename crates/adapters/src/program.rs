//! A command arm: any program that speaks the protocol
//! (`client = { command = [...], cwd = "..." }`), checked before it is started.
//!
//! herd appends the protocol's flags to the command as written, and `--client <arm id>`
//! unless the command already passes its own `--client` (then the handshake must name
//! that one). A program that is not there or cannot be executed is a named
//! [`ExternalError::Program`], found before any request is sent.

use super::adapter::{find_on_path, AdapterOptions};
use super::command::ArmCommand;
use super::error::ExternalError;
use herd_scenario::CommandClient;
use std::path::{Path, PathBuf};

/// The command that runs arm `arm` (its id) with `opts`.
pub fn command_arm(
    arm: &str,
    client: &CommandClient,
    opts: &AdapterOptions,
) -> Result<ArmCommand, ExternalError> {
    let Some((program, rest)) = client.argv.split_first() else {
        return Err(ExternalError::Program {
            client: arm.to_string(),
            program: String::new(),
            detail: "is empty".into(),
        });
    };
    let path = resolve(arm, program)?;
    let own_client = rest
        .iter()
        .position(|a| a == "--client")
        .and_then(|i| rest.get(i + 1));
    let mut cmd = ArmCommand::new(arm, path).with_cwd(&client.cwd);
    if let Some(c) = own_client {
        cmd = cmd.with_handshake_client(c);
    }
    let flags = opts.protocol_args(own_client.is_none().then_some(arm));
    Ok(rest
        .iter()
        .map(Into::into)
        .chain(flags)
        .fold(cmd, ArmCommand::with_arg))
}

/// `program` as a path (it has a `/`) or on `PATH`; it must be an executable file.
fn resolve(arm: &str, program: &str) -> Result<PathBuf, ExternalError> {
    let err = |detail: &str| ExternalError::Program {
        client: arm.to_string(),
        program: program.to_string(),
        detail: detail.to_string(),
    };
    let path = if program.contains('/') {
        let p = PathBuf::from(program);
        if !p.exists() {
            return Err(err("does not exist"));
        }
        p
    } else {
        find_on_path(program).ok_or_else(|| err("was not found on PATH"))?
    };
    if !path.is_file() {
        return Err(err("is not a file"));
    }
    if !is_executable(&path) {
        return Err(err(
            "is not executable (chmod +x it, or name its interpreter first)",
        ));
    }
    Ok(path)
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(argv: &[&str]) -> CommandClient {
        CommandClient {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: std::env::temp_dir(),
        }
    }

    #[test]
    fn the_protocol_flags_follow_the_command() {
        let mut opts = AdapterOptions::new("http://127.0.0.1:1/");
        opts.options = Some(r#"{"a":1}"#.into());
        let argv = command_arm("mine", &client(&["sh", "x.sh"]), &opts)
            .unwrap()
            .argv();
        assert!(argv[0].ends_with("/sh"), "{argv:?}");
        assert_eq!(
            argv[1..],
            [
                "x.sh",
                "--client",
                "mine",
                "--url",
                "http://127.0.0.1:1/",
                "--method",
                "GET",
                "--pool",
                "256",
                "--timeout-ms",
                "0",
                "--options",
                r#"{"a":1}"#
            ]
        );
        let own = command_arm("mine", &client(&["sh", "--client", "theirs"]), &opts).unwrap();
        assert_eq!(own.argv().iter().filter(|a| *a == "--client").count(), 1);
        assert_eq!(own.handshake_client.as_deref(), Some("theirs"));
    }

    #[test]
    fn a_missing_or_unexecutable_program_is_named() {
        let opts = AdapterOptions::new("http://127.0.0.1:1/");
        let e = command_arm("mine", &client(&["/nonexistent/arm"]), &opts).unwrap_err();
        assert_eq!(
            e.to_string(),
            "arm mine: program `/nonexistent/arm` does not exist"
        );
        let e = command_arm("mine", &client(&["herd-no-such-program"]), &opts).unwrap_err();
        assert!(e.to_string().contains("was not found on PATH"), "{e}");
        let f = std::env::temp_dir().join(format!("herd-not-exec-{}", std::process::id()));
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        let e = command_arm("mine", &client(&[f.to_str().unwrap()]), &opts).unwrap_err();
        let _ = std::fs::remove_file(&f);
        assert!(e.to_string().contains("is not executable"), "{e}");
    }
}
