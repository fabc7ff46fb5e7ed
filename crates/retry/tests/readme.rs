//! herd's README shows herd-retry's production example; the crate docs carry the same
//! example (`doc/production.md`), where `cargo test --all-features --doc` compiles and runs
//! it. This test keeps the two copies identical, so the README's code is the tested code.

use std::path::Path;

/// The fenced code blocks (language tag and body) of `text`.
fn code_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = vec![];
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.trim().to_owned(), String::new())),
            (Some(_), Some("")) => blocks.extend(open.take()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

#[test]
fn readme_production_example_is_the_doctested_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let start = readme
        .find("## Using herd-retry in production")
        .expect("README has a production section");
    let section = &readme[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let section = &section[..end];
    let doc = std::fs::read_to_string(root.join("doc/production.md")).unwrap();

    let in_readme = code_blocks(section);
    assert!(
        in_readme.iter().any(|(lang, _)| lang == "rust"),
        "{in_readme:?}"
    );
    assert_eq!(in_readme, code_blocks(&doc));
    for feature in ["`tower`", "`reqwest-middleware`"] {
        assert!(
            section.contains(feature),
            "README names the feature {feature}"
        );
    }
}
