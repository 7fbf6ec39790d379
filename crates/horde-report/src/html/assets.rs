//! What every report.html embeds: uPlot (vendored under assets/uplot, MIT, with its licence),
//! the report's own script and styles, and the Content-Security-Policy that lets exactly these
//! run and nothing be loaded.

use base64::Engine;
use sha2::{Digest, Sha256};

pub const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
pub const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
pub const UPLOT_LICENSE: &str = include_str!("../../assets/uplot/LICENSE");
pub const REPORT_JS: &str = include_str!("../../assets/report.js");
pub const REPORT_CSS: &str = include_str!("../../assets/report.css");
/// The dashboard's page only: puts each update in place (`horde run --dashboard`).
pub const LIVE_JS: &str = include_str!("../../assets/live.js");

/// The CSP source that allows one inline `<script>` or `<style>` with exactly this content.
pub fn csp_hash(content: &str) -> String {
    let digest = Sha256::digest(content.as_bytes());
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest))
}

/// Nothing may be fetched (`default-src 'none'`: no script, style, image, font, frame or
/// connection from anywhere), and the only code that runs is the inline scripts and styles
/// whose hashes are listed: a script that an unescaped name could inject has no hash, so it
/// would not run. uPlot sets element styles through the DOM, which a CSP does not restrict.
pub fn content_security_policy(scripts: &[&str], styles: &[&str]) -> String {
    let hashes = |blocks: &[&str]| blocks.iter().map(|b| csp_hash(b)).collect::<Vec<_>>().join(" ");
    format!(
        "default-src 'none'; script-src {}; style-src {}; img-src data:; base-uri 'none'; form-action 'none'",
        hashes(scripts),
        hashes(styles)
    )
}

/// The dashboard's page: as [`content_security_policy`], and it may connect back to the server
/// that sent it (its stream of updates, the Stop button), nowhere else.
pub fn live_content_security_policy(scripts: &[&str], styles: &[&str]) -> String {
    format!("{}; connect-src 'self'", content_security_policy(scripts, styles))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha256_hex(content: &str) -> String {
        Sha256::digest(content.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The vendored files are the ones of the npm package uplot@1.6.32 (assets/uplot/README.md).
    #[test]
    fn vendored_uplot_matches_its_pinned_hashes() {
        assert_eq!(sha256_hex(UPLOT_JS), "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f");
        assert_eq!(sha256_hex(UPLOT_CSS), "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04");
        assert!(UPLOT_JS.starts_with("/*! https://github.com/leeoniya/uPlot (v1.6.32) */"));
        assert!(UPLOT_LICENSE.contains("The MIT License") && UPLOT_LICENSE.contains("Leon Sorokin"));
    }

    #[test]
    fn csp_hashes_are_base64_sha256_of_the_exact_content() {
        // echo -n 'alert(1)' | openssl dgst -sha256 -binary | base64
        assert_eq!(csp_hash("alert(1)"), "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='");
        let policy = content_security_policy(&["a"], &["b"]);
        assert!(policy.starts_with("default-src 'none'; script-src 'sha256-"), "{policy}");
        assert!(!policy.contains("unsafe"), "{policy}");
    }

    /// No script in the page may close the element it sits in.
    #[test]
    fn embedded_code_never_ends_its_own_element() {
        for code in [UPLOT_JS, REPORT_JS, LIVE_JS] {
            assert!(!code.to_ascii_lowercase().contains("</script"));
        }
        for css in [UPLOT_CSS, REPORT_CSS] {
            assert!(!css.to_ascii_lowercase().contains("</style"));
        }
    }
}
