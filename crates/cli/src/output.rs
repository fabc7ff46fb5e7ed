//! Writing results: stdout, or a file written atomically (temp file in the same directory,
//! then rename), so a run that fails never leaves a half-written report behind. A path that
//! is not a regular file (`/dev/null`, a FIFO) is written in place, never renamed over.

use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically, or to stdout when `path` is `-`.
pub fn write_out(path: &str, bytes: &[u8]) -> anyhow::Result<()> {
    if path == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()?;
        return Ok(());
    }
    let target = Path::new(path);
    // A device, a FIFO or a socket (`/dev/null`, `/dev/stdout`, a named pipe) is written
    // in place: a rename over it would replace the device with a plain file, for every
    // program on the machine.
    if let Ok(meta) = std::fs::metadata(target) {
        if !meta.is_file() && !meta.is_dir() {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(target)
                .with_context(|| format!("cannot open {path}"))?;
            f.write_all(bytes)
                .and_then(|()| f.flush())
                .with_context(|| format!("cannot write {path}"))?;
            return Ok(());
        }
    }
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .with_context(|| format!("{path}: not a file path"))?
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, target))
        .with_context(|| format!("cannot write {path}"));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Checks up front that `path` can be written (its directory exists), so bad input fails
/// before a long run rather than after it.
pub fn check_writable(path: &str) -> anyhow::Result<()> {
    if path == "-" {
        return Ok(());
    }
    let target = Path::new(path);
    if target.is_dir() {
        anyhow::bail!("{path}: is a directory");
    }
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        anyhow::bail!("{path}: directory {} does not exist", dir.display());
    }
    Ok(())
}
