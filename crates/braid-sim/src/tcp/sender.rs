//! The TCP sender: SACK scoreboard, loss recovery, retransmission timer.

use std::collections::VecDeque;
use std::time::Duration;

use super::hystart::HyStart;
use super::rto::Rto;
use super::window::{TcpCc, Window};
use super::Ack;

/// Segments SACKed above an unSACKed one before it counts as lost.
const DUP_THRESH: u64 = 3;

/// Initial window (RFC 6928).
const INITIAL_CWND: f64 = 10.0;

/// A segment to transmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub seq: u64,
    pub retransmission: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpCounters {
    pub segments_sent: u64,
    pub retransmissions: u64,
    pub fast_recoveries: u64,
    pub timeouts: u64,
    /// Retransmissions found lost because later data arrived first.
    pub lost_retransmissions: u64,
    /// Slow starts HyStart ended (with `+hystart`).
    pub hystart_exits: u64,
    /// Fast recoveries undone: every segment thought lost arrived without
    /// being retransmitted (reordering, not loss).
    pub undone_recoveries: u64,
}

impl std::ops::AddAssign<&TcpCounters> for TcpCounters {
    /// Sums several connections' counters. Destructured, so that a new
    /// counter cannot be left out of the sum.
    fn add_assign(&mut self, k: &TcpCounters) {
        let TcpCounters {
            segments_sent,
            retransmissions,
            fast_recoveries,
            timeouts,
            lost_retransmissions,
            hystart_exits,
            undone_recoveries,
        } = *k;
        self.segments_sent += segments_sent;
        self.retransmissions += retransmissions;
        self.fast_recoveries += fast_recoveries;
        self.timeouts += timeouts;
        self.lost_retransmissions += lost_retransmissions;
        self.hystart_exits += hystart_exits;
        self.undone_recoveries += undone_recoveries;
    }
}

/// What the sender knows of one segment sent and not yet cumulatively
/// acknowledged.
#[derive(Debug, Clone, Copy, Default)]
struct Scoreboard {
    sacked: bool,
    lost: bool,
    retransmitted: bool,
}

impl Scoreboard {
    /// Whether the segment counts in the pipe (RFC 6675 SetPipe, with one
    /// count for a segment and its retransmission).
    fn in_pipe(self) -> bool {
        !self.sacked && (!self.lost || self.retransmitted)
    }
}

#[derive(Debug)]
pub struct TcpSender {
    cc: TcpCc,
    window: Window,
    cwnd: f64,
    ssthresh: f64,
    /// Oldest unacknowledged segment.
    una: u64,
    /// Next new segment.
    next: u64,
    /// One entry per segment in `[una, next)`.
    board: VecDeque<Scoreboard>,
    pipe: u64,
    /// Segments below this were checked for loss by the SACK rule.
    loss_checked: u64,
    /// Segments below this are not lost-and-unretransmitted.
    retransmit_from: u64,
    /// Loss recovery lasts until `una` reaches this.
    recovery_end: Option<u64>,
    /// In fast recovery cwnd holds still; after a timeout it slow-starts.
    fast_recovery: bool,
    /// Retransmissions in the order they were sent, with their send time.
    retransmitted: VecDeque<(u64, Duration)>,
    /// The window before the current fast recovery, restored if the
    /// recovery ends with nothing retransmitted (as Linux undoes a
    /// recovery that reordering caused).
    undo: Option<(f64, f64, Window)>,
    retransmissions_in_recovery: u64,
    rto: Rto,
    timer: Option<Duration>,
    hystart: Option<HyStart>,
    pub counters: TcpCounters,
}

impl TcpSender {
    pub fn new(cc: TcpCc) -> TcpSender {
        TcpSender {
            cc,
            window: Window::new(cc),
            cwnd: INITIAL_CWND,
            ssthresh: f64::INFINITY,
            una: 0,
            next: 0,
            board: VecDeque::new(),
            pipe: 0,
            loss_checked: 0,
            retransmit_from: 0,
            recovery_end: None,
            fast_recovery: false,
            retransmitted: VecDeque::new(),
            undo: None,
            retransmissions_in_recovery: 0,
            rto: Rto::new(),
            timer: None,
            hystart: None,
            counters: TcpCounters::default(),
        }
    }

    /// A sender whose slow start may also end by HyStart's delay detection.
    pub fn with_hystart(cc: TcpCc) -> TcpSender {
        TcpSender {
            hystart: Some(HyStart::default()),
            ..TcpSender::new(cc)
        }
    }

    pub fn cc(&self) -> TcpCc {
        self.cc
    }

    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    pub fn uses_hystart(&self) -> bool {
        self.hystart.is_some()
    }

    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    pub fn in_fast_recovery(&self) -> bool {
        self.fast_recovery
    }

    fn entry(&mut self, seq: u64) -> &mut Scoreboard {
        &mut self.board[(seq - self.una) as usize]
    }

    /// Changes one segment's scoreboard entry, keeping the pipe count.
    fn update(&mut self, seq: u64, f: impl FnOnce(&mut Scoreboard)) {
        let e = self.entry(seq);
        let before = e.in_pipe();
        f(e);
        let after = e.in_pipe();
        self.pipe = self.pipe + u64::from(after) - u64::from(before);
    }

    /// The next segment to send at `now`, if the window allows one: lost
    /// segments first, lowest first, then new data.
    pub fn poll_segment(&mut self, now: Duration) -> Option<Segment> {
        if self.pipe as f64 >= self.cwnd.floor().max(1.0) {
            return None;
        }
        while self.retransmit_from < self.next {
            let seq = self.retransmit_from;
            let e = self.board[(seq - self.una) as usize];
            if e.lost && !e.retransmitted && !e.sacked {
                self.update(seq, |e| e.retransmitted = true);
                self.retransmitted.push_back((seq, now));
                self.counters.retransmissions += 1;
                self.retransmissions_in_recovery += 1;
                return Some(self.sent(now, seq, true));
            }
            if seq >= self.loss_checked {
                break;
            }
            self.retransmit_from += 1;
        }
        let seq = self.next;
        self.next += 1;
        self.board.push_back(Scoreboard::default());
        self.pipe += 1;
        Some(self.sent(now, seq, false))
    }

    fn sent(&mut self, now: Duration, seq: u64, retransmission: bool) -> Segment {
        self.counters.segments_sent += 1;
        if self.timer.is_none() {
            self.timer = Some(now + self.rto.rto());
        }
        Segment {
            seq,
            retransmission,
        }
    }

    /// Takes an ACK at `now`; returns the round trip it measured.
    pub fn on_ack(&mut self, now: Duration, ack: &Ack) -> Option<Duration> {
        let rtt = now.checked_sub(Duration::from_nanos(ack.echo_nanos));
        if let Some(r) = rtt {
            self.rto.on_sample(r);
        }
        let mut delivered = 0u64;
        // Cumulative part; an ACK for data never sent is ignored.
        let cumulative = ack.cumulative.min(self.next);
        let advanced = cumulative > self.una;
        while self.una < cumulative {
            let e = self.board.pop_front().expect("board covers [una, next)");
            if !e.sacked {
                delivered += 1;
            }
            if e.in_pipe() {
                self.pipe -= 1;
            }
            self.una += 1;
        }
        self.loss_checked = self.loss_checked.max(self.una);
        self.retransmit_from = self.retransmit_from.max(self.una);
        // SACK blocks, clipped to what is outstanding.
        let mut high_sacked = None;
        for &(start, end) in &ack.sack {
            let (start, end) = (start.max(self.una), end.min(self.next));
            for seq in start..end {
                if !self.entry(seq).sacked {
                    self.update(seq, |e| e.sacked = true);
                    delivered += 1;
                }
            }
            if end > start {
                high_sacked = high_sacked.max(Some(end - 1));
            }
        }
        // RFC 6675 IsLost, simplified: DupThresh segments SACKed above.
        let mut new_loss = false;
        if let Some(high) = high_sacked {
            let limit = high.saturating_sub(DUP_THRESH - 1);
            while self.loss_checked < limit {
                let seq = self.loss_checked;
                if !self.entry(seq).sacked && !self.entry(seq).lost {
                    self.update(seq, |e| e.lost = true);
                    new_loss = true;
                }
                self.loss_checked += 1;
            }
        }
        self.detect_lost_retransmissions(Duration::from_nanos(ack.echo_nanos));
        if advanced {
            self.rto.reset_backoff();
            self.timer = (self.una < self.next).then(|| now + self.rto.rto());
        }
        if self.recovery_end.is_some_and(|end| self.una >= end) {
            self.recovery_end = None;
            self.fast_recovery = false;
            if let Some((cwnd, ssthresh, window)) = self.undo.take() {
                if self.retransmissions_in_recovery == 0 {
                    self.counters.undone_recoveries += 1;
                    (self.cwnd, self.ssthresh, self.window) = (cwnd, ssthresh, window);
                }
            }
        }
        if new_loss && self.recovery_end.is_none() {
            // One reduction per window of data (RFC 6582/6675).
            self.counters.fast_recoveries += 1;
            self.undo = Some((self.cwnd, self.ssthresh, self.window.clone()));
            self.retransmissions_in_recovery = 0;
            self.ssthresh = self.window.on_congestion(self.cwnd);
            self.cwnd = self.ssthresh;
            self.recovery_end = Some(self.next);
            self.fast_recovery = true;
        } else if !self.fast_recovery && delivered > 0 {
            self.grow(now, delivered);
            if let (Some(h), Some(r)) = (self.hystart.as_mut(), rtt) {
                if self.cwnd < self.ssthresh && h.on_sample(r, self.una, self.next, self.cwnd) {
                    self.ssthresh = self.cwnd;
                    self.counters.hystart_exits += 1;
                }
            }
        }
        rtt
    }

    /// A retransmission sent before a segment that has since arrived was
    /// lost (the network delivers in order; braid's receiver restores
    /// order): it is marked for retransmission again. This is the part of
    /// RACK (RFC 8985) without which every lost retransmission costs a
    /// timeout.
    fn detect_lost_retransmissions(&mut self, delivered_sent: Duration) {
        while let Some(&(seq, sent)) = self.retransmitted.front() {
            if sent >= delivered_sent {
                break;
            }
            self.retransmitted.pop_front();
            if seq < self.una {
                continue;
            }
            let e = self.board[(seq - self.una) as usize];
            if e.retransmitted && !e.sacked {
                self.update(seq, |e| e.retransmitted = false);
                self.retransmit_from = self.retransmit_from.min(seq);
                self.counters.lost_retransmissions += 1;
            }
        }
    }

    fn grow(&mut self, now: Duration, delivered: u64) {
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + delivered as f64).min(self.ssthresh);
        } else {
            let srtt = self.rto.srtt().unwrap_or(Duration::ZERO);
            self.cwnd = self.window.on_ack(self.cwnd, delivered, now, srtt);
        }
    }

    pub fn poll_timeout(&self) -> Option<Duration> {
        self.timer
    }

    /// The retransmission timer fired: every unSACKed segment is lost, the
    /// window drops to one segment and the timer backs off.
    pub fn on_timeout(&mut self, now: Duration) {
        if self.timer.is_none_or(|t| t > now) {
            return;
        }
        self.counters.timeouts += 1;
        self.undo = None;
        if self.recovery_end.is_none() || self.fast_recovery {
            self.ssthresh = self.window.on_congestion(self.cwnd);
        }
        self.cwnd = 1.0;
        for seq in self.una..self.next {
            self.update(seq, |e| {
                if !e.sacked {
                    e.lost = true;
                    e.retransmitted = false;
                }
            });
        }
        self.loss_checked = self.next;
        self.retransmit_from = self.una;
        self.retransmitted.clear();
        self.recovery_end = Some(self.next);
        self.fast_recovery = false;
        self.rto.back_off();
        self.timer = (self.una < self.next).then(|| now + self.rto.rto());
    }
}

#[cfg(test)]
mod tests;
