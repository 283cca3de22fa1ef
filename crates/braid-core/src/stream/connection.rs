//! A reliable multipath connection: several ordered byte streams over all
//! paths at once, after pTCP (congestion control per path, reliability per
//! connection). See the module documentation in `stream/mod.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use super::error::{code, StreamError};
use super::frame::{data_packet_overhead, MAX_SEGMENT_DATA, MAX_SEQUENCE, PATH_MTU};
use super::frame::{DataAck, Frame, PacketWriter, Segment, StreamPacket};
use super::outstanding::{Outstanding, SentSegment};
use super::path::{self, Fate, StreamPath};
use super::receive_window::{Arrival, ReceiveWindow};
use super::recv::{ReadOutcome, RecvStream};
use super::send::SendStream;
use crate::cc::CcKind;
use crate::path::OwdClock;
use crate::time::Instant;
use crate::wire::IP_UDP_OVERHEAD;

/// Most paths a connection uses (path ids are one byte; the retransmission
/// bookkeeping keeps a 64-bit mask of paths tried).
pub const MAX_PATHS: usize = 64;
/// First repeat of a window update the sender may have missed; doubles to the cap.
const WINDOW_PROBE_FIRST: Duration = Duration::from_millis(200);
const WINDOW_PROBE_MAX: Duration = Duration::from_secs(8);
/// Round-trip time assumed for a path that has not measured one.
const UNMEASURED_RTT: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct Config {
    /// Bytes the receiver buffers (out of order plus unread): the flow
    /// control window. Both ends start with the same value as the peer's credit.
    pub receive_window: u64,
    /// Bytes the sender holds, written but not yet acknowledged.
    pub send_buffer: usize,
    /// Streams the peer may open.
    pub max_streams: u32,
    /// With data unacknowledged, fail after this long without hearing the peer.
    pub idle_timeout: Duration,
    /// Bytes a carrier adds around each packet (a session's framing and
    /// AEAD, [`crate::session::STREAM_OVERHEAD`]). Segments shrink by as
    /// much, so a full packet still fits a 1500-byte IP packet, and
    /// congestion control counts what the path really carries.
    pub carrier_overhead: usize,
    /// Lateness each path's pacing may make up for (see
    /// [`crate::path::PACING_CREDIT`]): without any, a daemon's late timer
    /// wake-ups lower the rate sent, and with it the rate BBR measures
    /// (`braid send` on the lab's 8 + 2 Mbit/s paths: 3.6 Mbit/s without,
    /// 9.3 with 2 ms).
    pub pacing_credit: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            receive_window: 16 << 20,
            send_buffer: 16 << 20,
            max_streams: 64,
            idle_timeout: Duration::from_secs(30),
            carrier_overhead: 0,
            pacing_credit: crate::path::PACING_CREDIT,
        }
    }
}

/// A packet to send on a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub path: u8,
    pub data: Vec<u8>,
}

/// Exact totals, for reports and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StreamCounters {
    /// Payload bytes sent, first transmissions and resends.
    pub sent_bytes: u64,
    /// Payload bytes sent again (after a loss, a timeout or a stall).
    pub retransmitted_bytes: u64,
    /// Payload bytes that arrived a second time.
    pub redundant_bytes: u64,
    /// Copies of a stalled or timed-out path's oldest segment sent elsewhere.
    pub reassigned_segments: u64,
    /// Probes on a path that timed out (copies of the oldest segment).
    pub probes: u64,
    pub malformed_packets: u64,
    /// Segments dropped because the receiver tracks too many holes.
    pub dropped_segments: u64,
}

#[derive(Debug)]
pub struct Connection {
    config: Config,
    paths: Vec<StreamPath>,
    owd_clock: OwdClock,

    send_streams: BTreeMap<u32, SendStream>,
    next_stream_id: u32,
    /// Round-robin cursor over streams with data.
    next_stream_turn: u32,
    /// Written bytes not yet in a segment, over all streams.
    pending_bytes: usize,
    outstanding: Outstanding,
    next_conn_seq: u64,
    peer_max_data: u64,
    /// Per path: the pseq of the oldest packet whose segment was already
    /// reassigned because the path stalled, so one stall reassigns it once.
    stall_reassigned: Vec<Option<u64>>,

    recv_streams: BTreeMap<u32, RecvStream>,
    window: ReceiveWindow,
    window_probe_at: Option<Instant>,
    window_probe_interval: Duration,

    error: Option<StreamError>,
    /// Code our abort notice carries (0: the peer aborted, nothing to tell).
    abort_code: u32,
    /// Paths still to carry our abort notice.
    abort_paths: Vec<u8>,
    last_heard: Instant,
    pub counters: StreamCounters,
}

impl Connection {
    /// A connection over one path per entry of `paths`, each with its own
    /// congestion controller. At most [`MAX_PATHS`] paths are used.
    pub fn new(config: Config, paths: &[CcKind], now: Instant) -> Connection {
        let paths: Vec<StreamPath> = paths
            .iter()
            .take(MAX_PATHS)
            .enumerate()
            .map(|(i, &cc)| StreamPath::new(i as u8, path::controller(cc), config.pacing_credit))
            .collect();
        Connection {
            window: ReceiveWindow::new(config.receive_window),
            peer_max_data: config.receive_window,
            stall_reassigned: vec![None; paths.len()],
            config,
            paths,
            owd_clock: OwdClock::for_sender(),
            send_streams: BTreeMap::new(),
            next_stream_id: 0,
            next_stream_turn: 0,
            pending_bytes: 0,
            outstanding: Outstanding::default(),
            next_conn_seq: 0,
            recv_streams: BTreeMap::new(),
            window_probe_at: None,
            window_probe_interval: WINDOW_PROBE_FIRST,
            error: None,
            abort_code: 0,
            abort_paths: Vec::new(),
            last_heard: now,
            counters: StreamCounters::default(),
        }
    }

    /// Largest payload of a segment with these numbers that fills a
    /// [`PATH_MTU`] packet with this carrier (at least one byte: a bare fin
    /// takes one sequence number).
    fn max_segment(&self, conn_seq: u64, stream: u32, offset: u64) -> usize {
        PATH_MTU
            .saturating_sub(self.wire_bytes(conn_seq, stream, offset, 0))
            .clamp(1, MAX_SEGMENT_DATA)
    }

    /// Bytes a packet carrying a segment with these numbers and `payload`
    /// bytes occupies on a path.
    fn wire_bytes(&self, conn_seq: u64, stream: u32, offset: u64, payload: usize) -> usize {
        data_packet_overhead(conn_seq, stream, offset)
            + payload
            + IP_UDP_OVERHEAD
            + self.config.carrier_overhead
    }

    /// Bytes a full-size data packet occupies on a path: segments are cut
    /// to fill the path MTU.
    fn full_packet(&self) -> u64 {
        PATH_MTU as u64
    }

    pub fn path(&self, i: usize) -> Option<&crate::path::PathSender> {
        self.paths.get(i).map(|p| &p.sender)
    }

    /// Why the connection failed, once it has.
    pub fn error(&self) -> Option<&StreamError> {
        self.error.as_ref()
    }

    fn check_open(&self) -> Result<(), StreamError> {
        self.error.clone().map_or(Ok(()), Err)
    }

    /// Opens a sending stream; its id is what the peer reads it by.
    pub fn open_stream(&mut self) -> Result<u32, StreamError> {
        self.check_open()?;
        let id = self.next_stream_id;
        self.next_stream_id = id.checked_add(1).ok_or(StreamError::StreamLimit(id))?;
        self.send_streams.insert(id, SendStream::default());
        Ok(id)
    }

    /// Room in the send buffer.
    pub fn send_capacity(&self) -> usize {
        self.config
            .send_buffer
            .saturating_sub(self.pending_bytes + self.outstanding.bytes())
    }

    /// Queues bytes on a stream; returns how many fitted in the send buffer.
    pub fn write(&mut self, stream: u32, data: &[u8]) -> Result<usize, StreamError> {
        self.check_open()?;
        let room = self.send_capacity();
        let s = self
            .send_streams
            .get_mut(&stream)
            .ok_or(StreamError::UnknownStream(stream))?;
        if s.is_finished() {
            return Err(StreamError::Finished(stream));
        }
        let n = data.len().min(room);
        s.write(&data[..n]);
        self.pending_bytes += n;
        Ok(n)
    }

    /// Ends a stream after the bytes written so far.
    pub fn finish(&mut self, stream: u32) -> Result<(), StreamError> {
        self.check_open()?;
        self.send_streams
            .get_mut(&stream)
            .ok_or(StreamError::UnknownStream(stream))?
            .finish();
        Ok(())
    }

    /// Every stream finished and every byte acknowledged: a graceful close is complete.
    pub fn is_send_complete(&self) -> bool {
        self.error.is_none()
            && self.outstanding.is_empty()
            && self
                .send_streams
                .values()
                .all(|s| s.is_finished() && !s.has_data())
    }

    /// Aborts the connection; the peer is told on every path.
    pub fn abort(&mut self, code: u32) {
        self.fail(StreamError::LocalAbort(code), code);
    }

    fn fail(&mut self, error: StreamError, code: u32) {
        if self.error.is_some() {
            return;
        }
        self.error = Some(error);
        if code != 0 {
            self.abort_code = code;
            self.abort_paths = (0..self.paths.len() as u8).collect();
        }
    }

    /// Streams the peer opened, by id.
    pub fn received_streams(&self) -> impl Iterator<Item = u32> + '_ {
        self.recv_streams.keys().copied()
    }

    /// Bytes the receiver holds, over all streams (bounded by the window).
    pub fn buffered_bytes(&self) -> usize {
        self.recv_streams
            .values()
            .map(RecvStream::buffered_bytes)
            .sum()
    }

    /// Reads in-order bytes of a stream the peer opened.
    pub fn read(
        &mut self,
        now: Instant,
        stream: u32,
        buf: &mut [u8],
    ) -> Result<ReadOutcome, StreamError> {
        self.check_open()?;
        let Some(s) = self.recv_streams.get_mut(&stream) else {
            return Ok(ReadOutcome::Blocked);
        };
        let (outcome, released) = s.read(buf);
        self.release(now, released as u64);
        Ok(outcome)
    }

    /// Frees receive credit; a big enough step is announced on every path
    /// at once, then repeated until data shows the sender heard it.
    fn release(&mut self, now: Instant, bytes: u64) {
        if bytes > 0 && self.window.release(bytes) {
            for p in &mut self.paths {
                p.inbound.request_ack(now);
            }
            self.window_probe_interval = WINDOW_PROBE_FIRST;
            self.window_probe_at = Some(now + WINDOW_PROBE_FIRST);
        }
    }

    /// A packet from the peer arrived on `path`.
    pub fn handle_packet(
        &mut self,
        now: Instant,
        path: u8,
        bytes: &[u8],
    ) -> Result<(), StreamError> {
        if usize::from(path) >= self.paths.len() {
            return Err(StreamError::UnknownPath(path));
        }
        let packet = match StreamPacket::parse(bytes) {
            Ok(p) => p,
            Err(e) => {
                self.counters.malformed_packets += 1;
                return Err(e.into());
            }
        };
        if self.error.is_some() {
            // Tell a peer still sending that we are gone.
            if self.abort_code != 0 && !self.abort_paths.contains(&path) {
                self.abort_paths.push(path);
            }
            return self.check_open();
        }
        self.last_heard = now;
        if let Some((_, pseq)) = packet.numbered {
            self.paths[usize::from(path)].inbound.on_packet(now, pseq);
        }
        let mut fates = Vec::new();
        for frame in &packet.frames {
            match frame {
                Frame::Segment(seg) => {
                    if let Err(e) = self.on_segment(now, seg) {
                        self.fail(e.clone(), code::PROTOCOL);
                        return Err(e);
                    }
                }
                Frame::PathAck(ack) => {
                    if let Some(p) = self.paths.get_mut(usize::from(ack.path)) {
                        p.on_ack(now, ack, &mut self.owd_clock, &mut fates);
                    }
                }
                Frame::DataAck(ack) => self.on_data_ack(ack),
                Frame::Abort(code) => {
                    self.fail(StreamError::PeerAbort(*code), 0);
                    return Err(StreamError::PeerAbort(*code));
                }
            }
        }
        self.apply_fates(&fates);
        Ok(())
    }

    fn on_segment(&mut self, now: Instant, seg: &Segment<'_>) -> Result<(), StreamError> {
        // Data shows the sender heard our latest window.
        self.window_probe_at = None;
        if seg.stream >= self.config.max_streams {
            return Err(StreamError::StreamLimit(seg.stream));
        }
        match self.window.on_segment(seg)? {
            Arrival::Duplicate => {
                self.counters.redundant_bytes += seg.data.len() as u64;
                return Ok(());
            }
            Arrival::Dropped => {
                self.counters.dropped_segments += 1;
                return Ok(());
            }
            Arrival::New => {}
        }
        let stream = self.recv_streams.entry(seg.stream).or_default();
        let unkept = stream.on_segment(seg.stream, seg.offset, seg.fin, seg.data)?;
        // A bare fin's sequence number holds no memory.
        let phantom = u64::from(seg.data.is_empty());
        self.release(now, unkept as u64 + phantom);
        Ok(())
    }

    fn on_data_ack(&mut self, ack: &DataAck) {
        self.outstanding.on_data_ack(ack);
        self.peer_max_data = self.peer_max_data.max(ack.max_data);
    }

    fn apply_fates(&mut self, fates: &[Fate]) {
        for fate in fates {
            match *fate {
                Fate::Acked(seq) => {
                    self.outstanding.on_copy_acked(seq);
                }
                Fate::Lost { seq, probe } => self.outstanding.on_copy_lost(seq, probe),
            }
        }
    }

    /// The next packet to send, if any: aborts, then acknowledgements, then data.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(path) = self.abort_paths.pop() {
            let mut w = PacketWriter::control();
            w.abort(self.abort_code);
            return Some(Transmit {
                path,
                data: w.finish(),
            });
        }
        if self.error.is_some() {
            return None;
        }
        if self.window_probe_at.is_some_and(|t| t <= now) {
            for p in &mut self.paths {
                p.inbound.request_ack(now);
            }
            self.window_probe_interval = (self.window_probe_interval * 2).min(WINDOW_PROBE_MAX);
            self.window_probe_at = Some(now + self.window_probe_interval);
        }
        for i in 0..self.paths.len() {
            let Some(ack) = self.paths[i].inbound.take_ack(now, i as u8) else {
                continue;
            };
            let mut w = PacketWriter::control();
            w.path_ack(&ack);
            for (j, p) in self.paths.iter_mut().enumerate() {
                if let Some(copy) = (j != i).then(|| p.inbound.copy_ack(now, j as u8)).flatten() {
                    w.path_ack(&copy);
                }
            }
            w.data_ack(&self.window.ack());
            return Some(Transmit {
                path: i as u8,
                data: w.finish(),
            });
        }
        self.reassign_stalled(now);
        self.poll_data(now)
    }

    /// pTCP's reassignment: a path whose window is full and that has heard
    /// nothing for a round trip (a fade, a blackout starting), or whose
    /// oldest packet is two round trips late although acknowledgements
    /// still trickle in (heard through another path's, see
    /// [`super::path::InboundAcks::copy_ack`]), gets the oldest segment it carries that
    /// is still unacknowledged copied onto another path before its
    /// timeout fires. (Older ones it carries may have arrived already,
    /// acknowledged through another path.)
    fn reassign_stalled(&mut self, now: Instant) {
        if self.paths.len() < 2 {
            return;
        }
        let full = self.full_packet();
        for i in 0..self.paths.len() {
            let p = &self.paths[i];
            if !p.sender.is_stalled(now, full) && !p.sender.is_overdue(now, full) {
                continue;
            }
            let outstanding = &self.outstanding;
            let Some((pseq, seq)) = p.carried().find(|&(_, seq)| outstanding.get(seq).is_some())
            else {
                continue;
            };
            if self.stall_reassigned[i].is_some_and(|done| done >= pseq) {
                continue;
            }
            self.stall_reassigned[i] = Some(pseq);
            if self.outstanding.mark_for_resend(seq) {
                self.counters.reassigned_segments += 1;
            }
        }
    }

    /// Estimated delivery time of a packet handed to path `i` now: a wait
    /// for window or pacing, then half a round trip.
    fn delivery_estimate(&self, now: Instant, i: usize) -> Duration {
        let s = &self.paths[i].sender;
        let rtt = s.rtt.srtt().unwrap_or(UNMEASURED_RTT);
        let wait = if s.cwnd_open(self.full_packet()) {
            s.pacing_ready_at() - now
        } else {
            rtt
        };
        wait + rtt / 2
    }

    /// Late binding: a path that may send now takes a resend it delivers
    /// soonest, else the next unsent data. A path that timed out only
    /// probes with a copy of the oldest segment while another path works.
    fn poll_data(&mut self, now: Instant) -> Option<Transmit> {
        let healthy: Vec<usize> = (0..self.paths.len())
            .filter(|&i| !self.paths[i].sender.is_suspect())
            .collect();
        let mut order: Vec<usize> = (0..self.paths.len()).collect();
        order.sort_by_key(|&i| self.delivery_estimate(now, i));
        let full = self.full_packet();
        for &i in &order {
            if !self.paths[i].sender.can_send(now, full) {
                continue;
            }
            if self.paths[i].sender.is_suspect() && !healthy.is_empty() {
                if self.paths[i].sender.bytes_in_flight() > 0 {
                    continue; // one probe at a time
                }
                if let Some(seq) = self.outstanding.oldest() {
                    self.counters.probes += 1;
                    return Some(self.send_copy(now, i, seq, true));
                }
                continue;
            }
            if let Some(seq) = self.outstanding.next_lost() {
                // `order` is by delivery estimate: the first healthy path
                // that could send is the soonest; anything later waits for it.
                let soonest = order
                    .iter()
                    .copied()
                    .find(|&j| healthy.is_empty() || healthy.contains(&j));
                if soonest == Some(i) || !self.has_new_data() {
                    return Some(self.send_copy(now, i, seq, false));
                }
            }
            if let Some(t) = self.send_new(now, i) {
                return Some(t);
            }
        }
        None
    }

    /// Whether [`Connection::poll_data`] has something for path `p` once
    /// its window and pacing allow.
    fn wants_to_send(&self, p: &StreamPath, any_healthy: bool) -> bool {
        if p.sender.is_suspect() && any_healthy {
            p.sender.bytes_in_flight() == 0 && !self.outstanding.is_empty()
        } else {
            self.has_new_data() || self.outstanding.has_lost()
        }
    }

    fn has_new_data(&self) -> bool {
        self.send_streams.values().any(SendStream::has_data)
            && self.next_conn_seq < self.peer_max_data
    }

    /// Sends another copy of an outstanding segment on path `i`.
    fn send_copy(&mut self, now: Instant, i: usize, seq: u64, probe: bool) -> Transmit {
        let seg = self.outstanding.get(seq).expect("outstanding").clone();
        self.counters.retransmitted_bytes += seg.data.len() as u64;
        self.transmit(now, i, seq, &seg, probe)
    }

    /// Cuts the next segment from the streams, round robin, within the
    /// peer's flow-control limit, and sends it on path `i`.
    fn send_new(&mut self, now: Instant, i: usize) -> Option<Transmit> {
        let credit = self.peer_max_data.saturating_sub(self.next_conn_seq);
        if credit == 0 {
            return None;
        }
        let turn = self.next_stream_turn;
        let (id, offset) = self
            .send_streams
            .range(turn..)
            .chain(self.send_streams.range(..turn))
            .find(|(_, s)| s.has_data())
            .map(|(&id, s)| (id, s.next_offset()))?;
        let seq = self.next_conn_seq;
        let max = usize::try_from(credit)
            .unwrap_or(usize::MAX)
            .min(self.max_segment(seq, id, offset));
        // Past this a segment's numbers no longer fit the wire (2^62 bytes:
        // years at 100 Gbit/s), so the connection ends instead of wrapping.
        let fits = |n: u64| n.checked_add(max as u64).is_some_and(|e| e <= MAX_SEQUENCE);
        if !fits(seq) || !fits(offset) {
            self.fail(StreamError::SequenceExhausted, code::PROTOCOL);
            return None;
        }
        let cut = self.send_streams.get_mut(&id)?.cut(max)?;
        self.next_stream_turn = id.wrapping_add(1);
        self.pending_bytes -= cut.data.len();
        let seg = SentSegment {
            stream: id,
            offset: cut.offset,
            fin: cut.fin,
            data: cut.data,
            copies_in_flight: 0,
            paths_tried: 0,
        };
        self.next_conn_seq += seg.conn_len();
        self.outstanding.insert(seq, seg.clone());
        Some(self.transmit(now, i, seq, &seg, false))
    }

    fn transmit(
        &mut self,
        now: Instant,
        i: usize,
        seq: u64,
        seg: &SentSegment,
        probe: bool,
    ) -> Transmit {
        let ip_bytes = self.wire_bytes(seq, seg.stream, seg.offset, seg.data.len());
        let app_limited = !self.has_new_data();
        let pseq = self.paths[i].on_sent(now, seq, ip_bytes as u64, app_limited, probe);
        self.outstanding.on_copy_sent(seq, i as u8, probe);
        self.counters.sent_bytes += seg.data.len() as u64;
        let data = PacketWriter::data(i as u8, pseq).finish_with_segment(&Segment {
            conn_seq: seq,
            stream: seg.stream,
            offset: seg.offset,
            fin: seg.fin,
            data: &seg.data,
        });
        debug_assert_eq!(
            data.len() + IP_UDP_OVERHEAD + self.config.carrier_overhead,
            ip_bytes
        );
        Transmit {
            path: i as u8,
            data,
        }
    }

    /// Earliest instant [`Connection::handle_timeout`] or
    /// [`Connection::poll_transmit`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.error.is_some() {
            return None;
        }
        let any_healthy = self.paths.iter().any(|p| !p.sender.is_suspect());
        let full = self.full_packet();
        let paths = self.paths.iter().flat_map(|p| {
            let pacing = (self.wants_to_send(p, any_healthy) && p.sender.cwnd_open(full))
                .then(|| p.sender.pacing_ready_at());
            [p.sender.timeout_at(), p.inbound.ack_due(), pacing]
        });
        let idle =
            (!self.outstanding.is_empty()).then(|| self.last_heard + self.config.idle_timeout);
        paths.chain([self.window_probe_at, idle]).flatten().min()
    }

    /// Fires what is due: path timeouts (their data is resent elsewhere)
    /// and the idle timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.error.is_some() {
            return;
        }
        let mut fates = Vec::new();
        for p in &mut self.paths {
            if p.sender.timeout_at().is_some_and(|t| t <= now) {
                p.on_timeout(now, &mut fates);
            }
        }
        self.apply_fates(&fates);
        if !self.outstanding.is_empty() && now - self.last_heard >= self.config.idle_timeout {
            self.fail(
                StreamError::IdleTimeout(self.config.idle_timeout),
                code::IDLE,
            );
        }
    }

    /// Test-only fault: lost segments are forgotten instead of resent.
    #[cfg(test)]
    pub fn break_retransmission(&mut self) {
        self.outstanding.drop_retransmissions = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(carrier_overhead: usize) -> (Connection, u32) {
        let config = Config {
            carrier_overhead,
            ..Config::default()
        };
        let mut conn = Connection::new(config, &[CcKind::Bbr], Instant::from_nanos(0));
        let stream = conn.open_stream().unwrap();
        (conn, stream)
    }

    /// Each segment is cut for its own header, so that its packet, with the
    /// carrier's overhead, fills the path MTU exactly, and the path counts
    /// the IP bytes it carries.
    #[test]
    fn segments_fill_the_path_mtu_and_the_path_counts_their_ip_bytes() {
        for carrier in [0, crate::session::STREAM_OVERHEAD] {
            let (mut conn, stream) = connection(carrier);
            conn.write(stream, &[5; 400_000]).unwrap();
            let mut sent = Vec::new();
            // No acknowledgement comes: the initial window and pacing
            // decide how many leave in the first 50 ms.
            for ms in 0..50 {
                let now = Instant::from_nanos(ms * 1_000_000);
                while let Some(t) = conn.poll_transmit(now) {
                    sent.push(t.data.len());
                }
            }
            assert!(sent.len() >= 10, "{sent:?}");
            for &len in &sent {
                assert_eq!(len + IP_UDP_OVERHEAD + carrier, PATH_MTU, "{sent:?}");
            }
            let counters = &conn.path(0).unwrap().counters;
            assert_eq!(counters.sent_packets, sent.len() as u64);
            assert_eq!(counters.sent_bytes, (sent.len() * PATH_MTU) as u64);
        }
    }

    /// Past 2^62 a segment's numbers no longer fit the wire: the
    /// connection fails with an error instead of wrapping, whether the
    /// connection's sequence or the stream's offset runs out.
    #[test]
    fn a_connection_whose_numbers_run_out_fails_instead_of_wrapping() {
        let now = Instant::from_nanos(0);
        for (conn_seq, offset) in [(MAX_SEQUENCE - 100, 0), (0, MAX_SEQUENCE - 100)] {
            let (mut conn, stream) = connection(0);
            conn.next_conn_seq = conn_seq;
            conn.peer_max_data = u64::MAX;
            let s = conn.send_streams.get_mut(&stream).unwrap();
            s.next_offset_for_test(offset);
            conn.write(stream, &[1; 5_000]).unwrap();
            let sent = std::iter::from_fn(|| conn.poll_transmit(now))
                .take(8)
                .filter(|t| StreamPacket::parse(&t.data).unwrap().numbered.is_some())
                .count();
            assert_eq!(sent, 0, "no segment past the limit");
            assert_eq!(conn.error(), Some(&StreamError::SequenceExhausted));
        }
        // Below the limit the same write goes out.
        let (mut conn, stream) = connection(0);
        conn.next_conn_seq = MAX_SEQUENCE - 10_000;
        conn.peer_max_data = u64::MAX;
        conn.write(stream, &[1; 5_000]).unwrap();
        assert!(conn.poll_transmit(now).is_some());
        assert_eq!(conn.error(), None);
    }
}
