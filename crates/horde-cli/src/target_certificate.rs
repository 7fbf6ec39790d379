//! The file `horde target --tls` writes its certificate to, so that a user can give it to
//! `--cacert` (horde's, curl's) while the target runs.

use anyhow::Context;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The written certificate. The default file is removed when this is dropped, as the target
/// stops: the certificate is made anew at each start, so it is useless afterwards. A path the
/// user chose is left alone.
pub(crate) struct CertificateFile {
    path: PathBuf,
    remove_on_drop: bool,
}

impl CertificateFile {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CertificateFile {
    fn drop(&mut self) {
        if self.remove_on_drop {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes `pem` to `chosen`, or else to `horde-target-PORT.pem` in the temporary directory.
pub(crate) fn write(pem: &str, chosen: Option<PathBuf>, port: u16) -> anyhow::Result<CertificateFile> {
    let (path, remove_on_drop) = match chosen {
        Some(path) => {
            std::fs::write(&path, pem).with_context(|| format!("writing the certificate to {}", path.display()))?;
            (path, false)
        }
        None => {
            let path = std::env::temp_dir().join(format!("horde-target-{port}.pem"));
            // The temporary directory is shared: a file left there by an earlier target on the
            // same port is replaced, and the new one is created afresh (O_EXCL), so a link
            // planted under that name is never followed.
            let _ = std::fs::remove_file(&path);
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut file| file.write_all(pem.as_bytes()))
                .with_context(|| format!("writing the certificate to {}", path.display()))?;
            (path, true)
        }
    };
    Ok(CertificateFile { path, remove_on_drop })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_file_is_replaced_then_removed_and_a_chosen_one_kept() {
        // A port no real listener has, so no running target's file is touched.
        let stale = std::env::temp_dir().join("horde-target-0.pem");
        std::fs::write(&stale, "stale").unwrap();
        let file = write("PEM", None, 0).unwrap();
        assert_eq!(file.path(), stale);
        assert_eq!(std::fs::read_to_string(&stale).unwrap(), "PEM");
        drop(file);
        assert!(!stale.exists());

        let chosen = std::env::temp_dir().join(format!("horde-target-chosen-{}.pem", std::process::id()));
        let file = write("PEM", Some(chosen.clone()), 0).unwrap();
        drop(file);
        assert_eq!(std::fs::read_to_string(&chosen).unwrap(), "PEM");
        std::fs::remove_file(&chosen).unwrap();
    }
}
