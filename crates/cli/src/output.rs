//! Writing results: stdout, or a file written atomically (temp file in the same directory,
//! then rename), so a run that fails never leaves a half-written report behind. A path that
//! is not a regular file (`/dev/null`, a FIFO) is written in place, never renamed over.

use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically, or to stdout when `path` is `-`.
pub fn write_out(path: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = Out::create(path)?;
    out.write_all(bytes)
        .with_context(|| format!("cannot write {path}"))?;
    out.commit()
}

/// An output written as it is produced (a trace of millions of lines), with
/// [`write_out`]'s guarantee: stdout for `-`; a device or FIFO in place; any other path
/// through a temp file in the same directory that [`Out::commit`] renames over it, and
/// that is removed if the `Out` is dropped uncommitted (an error half-way).
pub struct Out {
    sink: std::io::BufWriter<Box<dyn Write>>,
    /// The temp file and its target, when renaming.
    rename: Option<(PathBuf, PathBuf)>,
    path: String,
}

impl Out {
    /// Opens `path` for writing (see [`Out`]).
    pub fn create(path: &str) -> anyhow::Result<Out> {
        let out = |w: Box<dyn Write>, rename| Out {
            sink: std::io::BufWriter::new(w),
            rename,
            path: path.to_owned(),
        };
        if path == "-" {
            return Ok(out(Box::new(std::io::stdout()), None));
        }
        let target = Path::new(path);
        // A device, a FIFO or a socket (`/dev/null`, `/dev/stdout`, a named pipe) is written
        // in place: a rename over it would replace the device with a plain file, for every
        // program on the machine.
        if let Ok(meta) = std::fs::metadata(target) {
            if !meta.is_file() && !meta.is_dir() {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(target)
                    .with_context(|| format!("cannot open {path}"))?;
                return Ok(out(Box::new(f), None));
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
        let f = std::fs::File::create(&tmp).with_context(|| format!("cannot write {path}"))?;
        Ok(out(Box::new(f), Some((tmp, target.to_owned()))))
    }

    /// Flushes, and renames the temp file over the target.
    pub fn commit(mut self) -> anyhow::Result<()> {
        self.sink
            .flush()
            .with_context(|| format!("cannot write {}", self.path))?;
        if let Some((tmp, target)) = self.rename.take() {
            if let Err(e) = std::fs::rename(&tmp, &target) {
                let _ = std::fs::remove_file(&tmp);
                return Err(e).with_context(|| format!("cannot write {}", self.path));
            }
        }
        Ok(())
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.sink.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.sink.flush()
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        if let Some((tmp, _)) = &self.rename {
            let _ = std::fs::remove_file(tmp);
        }
    }
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
