//! `file://` URLs on the command line: the local path they name, percent-escapes
//! decoded (`Location::parse`); other schemes are never local paths.

use std::path::{Path, PathBuf};

use crate::common::{copy_dir, testdata, zarrow};

/// A `file://` URL, percent-escapes and all, is the plain path: the same output
/// from reading, the same `info`, the same files written; a host other than
/// `localhost` is refused.
#[test]
fn file_urls_are_plain_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my atlas #1 %41");
    std::fs::create_dir(&dir).unwrap();
    let src = testdata().join("stores").join("obs.zarr");
    let store = dir.join("obs.zarr");
    copy_dir(&src, &store);
    // The URL of `store`, as a browser or Path.as_uri() writes it.
    let url = format!(
        "file://{}",
        store
            .to_str()
            .unwrap()
            .replace('%', "%25")
            .replace(' ', "%20")
            .replace('#', "%23")
    );
    let localhost = url.replacen("file://", "file://localhost", 1);
    let plain = tmp.path().join("plain.arrow");
    assert!(
        zarrow(&["convert", store.to_str().unwrap(), plain.to_str().unwrap()])
            .status
            .success()
    );
    for (i, src) in [&url, &localhost].iter().enumerate() {
        let out = tmp.path().join(format!("url{i}.arrow"));
        let result = zarrow(&["convert", src, out.to_str().unwrap()]);
        assert!(
            result.status.success(),
            "{}",
            String::from_utf8_lossy(&result.stderr)
        );
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&plain).unwrap(),
            "{src}"
        );
    }
    let info = |p: &str| zarrow(&["info", p]).stdout;
    assert_eq!(info(&url), info(store.to_str().unwrap()));

    // Writing: the same files as to the plain path.
    let written = dir.join("back.zarr");
    let written_url = format!("{}/back.zarr", url.rsplit_once('/').unwrap().0);
    let result = zarrow(&["convert", plain.to_str().unwrap(), &written_url]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let again = tmp.path().join("back.zarr");
    assert!(
        zarrow(&["convert", plain.to_str().unwrap(), again.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(files(&written), files(&again));

    let refused = zarrow(&["info", "file://server/share/x.zarr"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("names no local path"));
}

/// A text shaped like a URL is never a local path: an unknown scheme (one
/// with `+`, `-` or `.` too) is refused and nothing is written, for inputs,
/// outputs and `info`.
#[test]
fn unknown_schemes_are_not_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path().join("t.parquet");
    let obs = testdata().join("stores").join("obs.zarr");
    assert!(
        zarrow(&["convert", obs.to_str().unwrap(), table.to_str().unwrap()])
            .status
            .success()
    );
    for dst in [
        "icechunk+ftp://host/repo?path=t",
        "s4://bucket/t.zarr",
        "my-store.v2://x/t.zarr",
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zarrow"))
            .current_dir(tmp.path())
            .args(["convert", table.to_str().unwrap(), dst])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{dst}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("unknown URL scheme"), "{dst}: {stderr}");
        // Nothing made in the working directory (it held only the table).
        let made: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(made, ["t.parquet"], "{dst}");
    }
    let info = zarrow(&["info", "icechunk+ftp://host/repo"]);
    assert!(!info.status.success());
}

/// Every file under `root`: relative path -> bytes.
fn files(root: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let mut bytes = std::fs::read(&path).unwrap();
                if path.ends_with("zarrow.stats") {
                    bytes = without_versions(&bytes);
                }
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), bytes);
            }
        }
    }
    out
}

/// A chunk statistics file's rows without their `version` column (each
/// file's own times and inode), which must be there, as text.
fn without_versions(bytes: &[u8]) -> Vec<u8> {
    use datafusion::arrow::array::Array;
    let reader =
        datafusion::arrow::ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None)
            .unwrap();
    let mut text = String::new();
    for batch in reader {
        let batch = batch.unwrap();
        let version = batch.schema().index_of("version").unwrap();
        assert_eq!(
            batch.column(version).null_count(),
            0,
            "a chunk without its version"
        );
        let rest = batch.project(&(0..version).collect::<Vec<_>>()).unwrap();
        text.push_str(&format!("{rest:?}"));
    }
    text.into_bytes()
}

/// The library's `convert` (what Python's `zarrow.convert` and `zarrow.write`
/// run) takes `file://` URLs as the command line does, for the source and the
/// destination, and refuses a table file at an object store URL rather than
/// writing it under a local directory named like the URL.
#[test]
fn the_library_converts_file_urls_and_refuses_table_files_at_urls() {
    use zarrow::convert::{ConvertOptions, Quiet, convert};
    let tmp = tempfile::tempdir().unwrap();
    let src = testdata().join("stores").join("obs.zarr");
    let plain = tmp.path().join("plain.arrow");
    assert!(
        zarrow(&["convert", src.to_str().unwrap(), plain.to_str().unwrap()])
            .status
            .success()
    );
    let out = tmp.path().join("via url.arrow");
    let src_url = format!("file://{}", src.canonicalize().unwrap().display());
    let out_url = format!("file://{}", out.to_str().unwrap().replace(' ', "%20"));
    let options = ConvertOptions::default();
    let loc = |s: &str| zarrow::Location::parse(s).unwrap();
    convert(
        &loc(&src_url),
        &loc(&out_url),
        &options,
        &zarrow::ExecutionContext::default(),
        &Quiet,
    )
    .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&plain).unwrap());
    // Nothing under ./file:/...
    assert!(!Path::new("file:").exists());
    let src = zarrow::Location::Path(src);
    let context = zarrow::ExecutionContext::default();
    let err = convert(
        &src,
        &loc("s3://bucket/out.parquet"),
        &options,
        &context,
        &Quiet,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            zarrow::Error::Location {
                reason: zarrow::location::LocationError::RemoteFile,
                ..
            }
        ),
        "{err}"
    );
    assert!(!Path::new("s3:").exists());
}
