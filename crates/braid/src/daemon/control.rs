//! The control socket: a unix stream socket; each connection gets one
//! JSON status document and is closed. `braid status` is its client.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// Longest status document `braid status` accepts.
const MAX_STATUS_BYTES: u64 = 4 << 20;

/// The listening socket, removed from the file system on drop.
pub struct ControlSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl ControlSocket {
    /// Listens on `path`, replacing a stale socket left by a daemon that
    /// died, but never a live one, nor anything that is not a socket (a
    /// mistyped path naming a config file must not delete it). Its directory is created if missing
    /// (`/run/braid` after a reboot), but not a whole tree: a mistyped
    /// path fails here instead of leaving directories behind.
    pub fn bind(path: &Path) -> io::Result<ControlSocket> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                std::fs::create_dir(dir).map_err(|e| {
                    io::Error::new(e.kind(), format!("creating {}: {e}", dir.display()))
                })?;
            }
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("a daemon already answers on {}", path.display()),
            ));
        }
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => {
                let _ = std::fs::remove_file(path);
            }
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} exists and is not a socket; not replaced (control_socket must name a socket's path)",
                        path.display()
                    ),
                ))
            }
            Err(_) => {}
        }
        let listener = UnixListener::bind(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(ControlSocket {
            listener,
            path: path.to_owned(),
        })
    }

    /// Answers every connection with `status()` until the task is dropped.
    pub async fn serve(&self, status: Rc<dyn Fn() -> String>) {
        loop {
            let Ok((mut stream, _)) = self.listener.accept().await else {
                continue;
            };
            let text = status();
            // A slow reader must not stall the data plane: the write is
            // bounded in time, and done on its own task.
            tokio::task::spawn_local(async move {
                let _ = tokio::time::timeout(Duration::from_secs(1), async {
                    stream.write_all(text.as_bytes()).await?;
                    stream.shutdown().await
                })
                .await;
            });
        }
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Why `braid status` got no status document.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("no daemon answers on {path}: {source}")]
    Connect { path: String, source: io::Error },
    #[error("the daemon on {path} {what}")]
    Answer { path: String, what: String },
}

/// Reads one status document from the daemon at `path`: all of it, within
/// 2 s, at most 4 MiB (a longer answer is refused, not cut), UTF-8.
pub async fn query(path: &Path) -> Result<String, QueryError> {
    let answer = |what: String| QueryError::Answer {
        path: path.display().to_string(),
        what,
    };
    let mut stream = UnixStream::connect(path).await.map_err(|source| {
        // A file that is no socket refuses the connection too: say what it is.
        use std::os::unix::fs::FileTypeExt as _;
        let source = match std::fs::metadata(path) {
            Ok(m) if !m.file_type().is_socket() => io::Error::new(
                source.kind(),
                "it is not a socket (is it another file than the daemon's control_socket?)",
            ),
            _ => source,
        };
        QueryError::Connect {
            path: path.display().to_string(),
            source,
        }
    })?;
    let mut bytes = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(2),
        (&mut stream)
            .take(MAX_STATUS_BYTES + 1)
            .read_to_end(&mut bytes),
    )
    .await
    .map_err(|_| answer("sent no complete answer within 2 s".to_owned()))?
    .map_err(|e| answer(format!("could not be read: {e}")))?;
    if bytes.len() as u64 > MAX_STATUS_BYTES {
        return Err(answer(format!(
            "answered with more than {} MiB",
            MAX_STATUS_BYTES >> 20
        )));
    }
    if bytes.is_empty() {
        return Err(answer("closed the connection without an answer".to_owned()));
    }
    String::from_utf8(bytes)
        .map_err(|_| answer("answered with bytes that are not UTF-8".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(path: &Path) -> io::Result<ControlSocket> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        rt.block_on(async { ControlSocket::bind(path) })
    }

    #[test]
    fn a_file_or_link_at_the_path_is_never_removed_but_a_stale_socket_is() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("client.toml");
        std::fs::write(&file, b"precious").unwrap();
        let err = bind(&file).err().expect("refused");
        assert!(err.to_string().contains("is not a socket"), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), b"precious");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(bind(&link).is_err());
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // A socket nobody answers on (a daemon that died) is replaced.
        let stale = d.path().join("stale.sock");
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        assert!(stale.exists());
        assert!(bind(&stale).is_ok());
    }

    /// What `query` makes of a daemon that answers `answer` and closes.
    fn query_answered(answer: Vec<u8>) -> Result<String, QueryError> {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("fake.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let daemon = std::thread::spawn(move || {
            use std::io::Write;
            let (mut stream, _) = listener.accept().unwrap();
            // The reader may stop early (an answer too long): not an error here.
            let _ = stream.write_all(&answer);
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got = rt.block_on(query(&path));
        daemon.join().unwrap();
        got
    }

    #[test]
    fn an_answer_that_is_empty_too_long_or_not_text_is_an_error_that_says_so() {
        let said = |r: Result<String, QueryError>| r.expect_err("refused").to_string();
        assert!(
            said(query_answered(Vec::new())).ends_with("closed the connection without an answer")
        );
        let long = vec![b' '; (MAX_STATUS_BYTES + 1) as usize];
        assert!(said(query_answered(long)).ends_with("answered with more than 4 MiB"));
        assert!(said(query_answered(vec![b'{', 0xff, b'}'])).ends_with("not UTF-8"));
        let whole = vec![b' '; MAX_STATUS_BYTES as usize];
        assert_eq!(
            query_answered(whole).unwrap().len() as u64,
            MAX_STATUS_BYTES
        );
        let missing = std::env::temp_dir().join("braid-control-none.sock");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt.block_on(query(&missing)).expect_err("nobody there");
        assert!(err.to_string().starts_with("no daemon answers on"), "{err}");
        // A regular file where the socket should be is named as such.
        let file = tempfile::NamedTempFile::new().unwrap();
        let err = rt.block_on(query(file.path())).expect_err("no socket");
        assert!(
            err.to_string().ends_with(
                "it is not a socket (is it another file than the daemon's control_socket?)"
            ),
            "{err}"
        );
    }
}
