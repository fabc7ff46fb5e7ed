//! The Node kit's `packageVersion` on an ESM package whose `exports` leave out
//! `./package.json` (as got and ky do): `require('NAME/package.json')` and
//! `require.resolve('NAME')` both fail there, so the kit resolves the entry point and walks
//! up to the package.json that names the package. Needs `node` (fails without it).

use std::path::Path;
use std::process::Command;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn an_esm_only_package_has_its_version_found_through_its_resolved_path() {
    let dir = std::env::temp_dir().join(format!("herd-node-kit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let kit = Path::new(env!("CARGO_MANIFEST_DIR")).join("kits/node/kit.mjs");
    std::fs::copy(&kit, dir.join("kit.mjs"))
        .or_else(|_| {
            std::fs::create_dir_all(&dir)?;
            std::fs::copy(&kit, dir.join("kit.mjs"))
        })
        .unwrap();
    let pkg = dir.join("node_modules/esm-only");
    write(
        &pkg.join("package.json"),
        r#"{"name":"esm-only","version":"4.5.6","type":"module","exports":{".":{"import":"./dist/source/index.js"}}}"#,
    );
    // A nested package.json without the name, as some builds write for `type`.
    write(&pkg.join("dist/package.json"), r#"{"type":"module"}"#);
    write(&pkg.join("dist/source/index.js"), "export default 1;\n");
    write(
        &dir.join("check.mjs"),
        "import { packageVersion } from './kit.mjs';\n\
         console.log(packageVersion('esm-only'), packageVersion('no-such-package'));\n",
    );
    let out = Command::new("node")
        .arg(dir.join("check.mjs"))
        .output()
        .expect("node on PATH");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "4.5.6 unknown\n");
    let _ = std::fs::remove_dir_all(&dir);
}
