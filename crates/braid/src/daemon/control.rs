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

/// Reads one status document from the daemon at `path`.
pub async fn query(path: &Path) -> io::Result<String> {
    let mut stream = UnixStream::connect(path).await?;
    let mut text = String::new();
    tokio::time::timeout(
        Duration::from_secs(2),
        (&mut stream)
            .take(MAX_STATUS_BYTES)
            .read_to_string(&mut text),
    )
    .await
    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no complete answer within 2 s"))??;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("braid-control-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn bind(path: &Path) -> io::Result<ControlSocket> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        rt.block_on(async { ControlSocket::bind(path) })
    }

    #[test]
    fn a_file_or_link_at_the_path_is_never_removed_but_a_stale_socket_is() {
        let d = dir("bind");
        let file = d.0.join("client.toml");
        std::fs::write(&file, b"precious").unwrap();
        let err = bind(&file).err().expect("refused");
        assert!(err.to_string().contains("is not a socket"), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), b"precious");
        let link = d.0.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(bind(&link).is_err());
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // A socket nobody answers on (a daemon that died) is replaced.
        let stale = d.0.join("stale.sock");
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        assert!(stale.exists());
        assert!(bind(&stale).is_ok());
    }
}
