//! Standard output for `braid recv --stdout`, written by a thread of its
//! own: a slow reader then holds back the connection (the receiver stops
//! reading it, and flow control slows the sender) instead of blocking the
//! event loop, which must keep acknowledging and probing.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, OnceLock};

/// Bytes handed to the writer thread and not yet written, past which the
/// receiver stops reading from the connection.
const MAX_BACKLOG_BYTES: usize = 4 << 20;

enum Message {
    Data(Vec<u8>),
    /// Flush, then answer with the first write error, if any.
    Flush(mpsc::SyncSender<Result<(), String>>),
}

pub struct StdoutWriter {
    tx: mpsc::Sender<Message>,
    backlog: Arc<AtomicUsize>,
    /// The first write error (a reader that went away: `| head`, a failed
    /// `| tar x`), set by the writer thread. Nothing more can reach the
    /// reader, so the transfer stops at once rather than at the file's end.
    broken: Arc<OnceLock<String>>,
}

impl StdoutWriter {
    pub fn start() -> StdoutWriter {
        let (tx, rx) = mpsc::channel::<Message>();
        let backlog = Arc::new(AtomicUsize::new(0));
        let counter = backlog.clone();
        let broken = Arc::new(OnceLock::new());
        let broken_seen = broken.clone();
        std::thread::spawn(move || {
            let mut out = std::io::stdout().lock();
            for message in rx {
                match message {
                    Message::Data(data) => {
                        if broken_seen.get().is_none() {
                            if let Err(e) = out.write_all(&data) {
                                let _ = broken_seen.set(describe(&e));
                            }
                        }
                        counter.fetch_sub(data.len(), Ordering::AcqRel);
                    }
                    Message::Flush(answer) => {
                        let result = match broken_seen.get() {
                            Some(why) => Err(why.clone()),
                            None => out.flush().map_err(|e| describe(&e)),
                        };
                        let _ = answer.send(result);
                    }
                }
            }
        });
        StdoutWriter {
            tx,
            backlog,
            broken,
        }
    }

    /// Why standard output can take nothing more, once a write failed.
    pub fn broken(&self) -> Option<&str> {
        self.broken.get().map(String::as_str)
    }

    /// Whether the receiver may read more from the connection.
    pub fn has_room(&self) -> bool {
        self.backlog.load(Ordering::Acquire) < MAX_BACKLOG_BYTES
    }

    pub fn write(&self, data: &[u8]) -> Result<(), String> {
        if let Some(why) = self.broken() {
            return Err(why.to_owned());
        }
        self.backlog.fetch_add(data.len(), Ordering::AcqRel);
        self.tx
            .send(Message::Data(data.to_vec()))
            .map_err(|_| "the standard output writer stopped".to_owned())
    }

    /// Waits until everything handed over is written and flushed.
    pub fn flush(&self) -> Result<(), String> {
        let (answer, result) = mpsc::sync_channel(1);
        self.tx
            .send(Message::Flush(answer))
            .map_err(|_| "the standard output writer stopped".to_owned())?;
        result
            .recv()
            .map_err(|_| "the standard output writer stopped".to_owned())?
    }
}

fn describe(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        "standard output was closed (its reader went away)".to_owned()
    } else {
        format!("cannot write to standard output: {e}")
    }
}
