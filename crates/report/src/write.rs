//! Writing a report directory: everything rendered in memory first, then each file through
//! a temp file in the same directory and a rename, so that a reader (or a failed run) never
//! sees a half-written file, and an error part-way removes its temp files.

use crate::{render_csv, render_html, render_json, render_latency_svg, render_timeline_svg};
use crate::{Inputs, ReportError};
use herd_scenario::table::Table;
use std::path::{Path, PathBuf};

/// The files [`write_dir`] writes, in order.
pub const FILES: [&str; 6] = [
    "report.json",
    "summary.csv",
    "timeline.csv",
    "timeline.svg",
    "latency.svg",
    "report.html",
];

/// Checks up front that `dir` can hold a report: an existing, writable directory, or a
/// path whose nearest existing ancestor is a directory (it is created later). Nothing is
/// left behind.
pub fn check_dir(dir: &Path) -> Result<(), ReportError> {
    if dir.exists() {
        if !dir.is_dir() {
            return Err(ReportError::NotADirectory {
                path: dir.to_owned(),
            });
        }
        let probe = dir.join(format!(".herd-probe-{}", std::process::id()));
        std::fs::write(&probe, b"").map_err(|error| ReportError::Io {
            path: dir.to_owned(),
            error,
        })?;
        let _ = std::fs::remove_file(&probe);
        return Ok(());
    }
    let mut up = dir.parent();
    while let Some(p) = up {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        if p.exists() {
            return if p.is_dir() {
                Ok(())
            } else {
                Err(ReportError::NotADirectory { path: p.to_owned() })
            };
        }
        up = p.parent();
    }
    Ok(())
}

/// Renders every report file and writes them into `dir` (created if missing).
pub fn write_dir(dir: &Path, inputs: &Inputs<'_>) -> Result<(), ReportError> {
    let timeline = render_timeline_svg(inputs)?;
    let latency = render_latency_svg(inputs.report, inputs.latency)?;
    let html = render_html(inputs, &timeline, &latency);
    let contents = [
        render_json(inputs.report)?,
        Table::of(inputs.report).to_csv(),
        render_csv(inputs.report),
        timeline,
        latency,
        html,
    ];
    let files: Vec<(&str, &str)> = FILES
        .iter()
        .zip(&contents)
        .map(|(n, c)| (*n, c.as_str()))
        .collect();
    write_files(dir, &files)
}

/// Writes each `(name, contents)` into `dir` (created if missing), all or nothing: every
/// file goes to a temp file first, and only when all are written are they renamed into
/// place; on an error the temp files are removed.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|error| ReportError::Io {
        path: dir.to_owned(),
        error,
    })?;
    let mut temps: Vec<PathBuf> = Vec::with_capacity(files.len());
    let result = (|| {
        for (name, body) in files {
            let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
            temps.push(tmp.clone());
            std::fs::write(&tmp, body).map_err(|error| ReportError::Io { path: tmp, error })?;
        }
        for ((name, _), tmp) in files.iter().zip(&temps) {
            let target = dir.join(name);
            std::fs::rename(tmp, &target).map_err(|error| ReportError::Io {
                path: target,
                error,
            })?;
        }
        Ok(())
    })();
    if result.is_err() {
        for t in &temps {
            let _ = std::fs::remove_file(t);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::Fixture;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("herd-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn writes_the_five_files_and_no_temps() {
        let d = temp("write").join("nested");
        let f = Fixture::new(2, 20);
        check_dir(&d).unwrap();
        write_dir(&d, &f.inputs()).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut want = FILES.to_vec();
        want.sort();
        assert_eq!(names, want);
        let json = std::fs::read_to_string(d.join("report.json")).unwrap();
        assert_eq!(json, render_json(&f.report).unwrap());
        let _ = std::fs::remove_dir_all(d.parent().unwrap());
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let d = temp("file");
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("x");
        std::fs::write(&file, b"x").unwrap();
        assert!(matches!(
            check_dir(&file),
            Err(ReportError::NotADirectory { .. })
        ));
        assert!(matches!(
            check_dir(&file.join("sub")),
            Err(ReportError::NotADirectory { .. })
        ));
        let f = Fixture::new(1, 5);
        assert!(write_dir(&file, &f.inputs()).is_err());
        assert!(check_dir(Path::new("relative/new/dir")).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_render_error_writes_nothing() {
        let d = temp("mismatch");
        let f = Fixture::new(2, 5);
        let mut inputs = f.inputs();
        inputs.latency = &f.cdfs[..1];
        assert!(matches!(
            write_dir(&d, &inputs),
            Err(ReportError::Mismatch(_))
        ));
        assert!(!d.exists());
    }
}
