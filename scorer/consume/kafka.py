"""The scorer's Kafka consumer: RecordConsumer over a consumer group on ragpulse.records.

At-least-once, with scoring running concurrently:
- auto-commit is off; a delivery is marked finished by the worker after its scores are exported
  and published (or it was dead-lettered or skipped by a rule);
- OffsetTracker commits, per partition, only up to the lowest offset not yet finished, so a slow
  record holds back the commit of faster ones after it instead of being skipped on a crash;
- before committing, the score/DLQ producer is flushed (`before_commit`), so no offset is
  committed ahead of an output that is not yet acknowledged by the broker;
- on a rebalance, in-flight records of revoked partitions get `rebalance_timeout_s` to finish
  and be committed; after that they are released (the next owner scores them again).
Lag is the broker's high watermark minus the lowest unfinished offset, per partition.
A record that kills the scorer process is found through notes on the commits (crash_guard.py).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kafka import AsyncConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka import errors as kafka_errors
from kafka.consumer.fetcher import ConsumerRecord
from kafka.future import Future
from kafka.structs import OffsetAndMetadata
from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.bus import Delivery
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.connection import connection_config, poll_group, subscribe_known_topic
from ragpulse.scorer.consume.crash_guard import CommitNote, PartitionGuard

log = logging.getLogger(__name__)

# Records taken from Kafka per KafkaConsumer.poll; the worker gets them `max_records` at a time.
FETCH_RECORDS = 200


@dataclass(frozen=True)
class OffsetToken:
    """Delivery.token: where the record came from and in which assignment of its partition."""

    partition: TopicPartition
    offset: int
    epoch: int


@dataclass
class _PartitionState:
    epoch: int
    # Offsets handed out and not yet committable, in the order handed out (increasing).
    pending: collections.deque[int] = field(default_factory=collections.deque)
    done: set[int] = field(default_factory=set)
    # Next offset to commit (one past the last contiguous finished record), if it moved.
    position: int | None = None
    committed: int | None = None


class OffsetTracker:
    """Per partition, the commit position is one past the longest finished prefix of the offsets
    handed out. Thread-safe: the poll thread starts records, scoring threads finish them, the
    consumer's IO thread revokes partitions."""

    def __init__(self) -> None:
        self._parts: dict[TopicPartition, _PartitionState] = {}
        self._epochs = 0
        self._lock = threading.Lock()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                if tp not in self._parts:
                    self._epochs += 1
                    self._parts[tp] = _PartitionState(self._epochs)

    def start(self, tp: TopicPartition, offset: int) -> OffsetToken:
        with self._lock:
            state = self._parts.get(tp)
            if state is None:  # records of a partition we were not told about: track it anyway
                self._epochs += 1
                state = self._parts[tp] = _PartitionState(self._epochs)
            state.pending.append(offset)
            return OffsetToken(tp, offset, state.epoch)

    def finish(self, token: OffsetToken) -> None:
        with self._lock:
            state = self._parts.get(token.partition)
            if state is None or state.epoch != token.epoch:
                return  # finished after its partition was released: the next owner has it
            state.done.add(token.offset)
            while state.pending and state.pending[0] in state.done:
                offset = state.pending.popleft()
                state.done.discard(offset)
                state.position = offset + 1

    def committable(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, int]:
        with self._lock:
            wanted = self._parts if partitions is None else partitions
            return {tp: s.position for tp in wanted if (s := self._parts.get(tp)) is not None
                    and s.position is not None and s.position != s.committed}

    def committed(self, positions: dict[TopicPartition, int]) -> None:
        with self._lock:
            for tp, position in positions.items():
                if (state := self._parts.get(tp)) is not None:
                    state.committed = max(position, state.committed or 0)

    def finished(self, token: OffsetToken) -> bool:
        """True once the record is finished, or released with its partition."""
        with self._lock:
            state = self._parts.get(token.partition)
            if state is None or state.epoch != token.epoch:
                return True
            return token.offset in state.done or token.offset not in state.pending

    def in_flight(self, partitions: Iterable[TopicPartition] | None = None) -> int:
        with self._lock:
            wanted = self._parts if partitions is None else partitions
            return sum(len(self._parts[tp].pending) for tp in wanted if tp in self._parts)

    def lowest_unfinished(self, tp: TopicPartition) -> int | None:
        with self._lock:
            state = self._parts.get(tp)
            if state is None:
                return None
            return state.pending[0] if state.pending else state.position

    def release(self, partitions: Iterable[TopicPartition]) -> int:
        """Forget the partitions; returns how many records were still in flight."""
        with self._lock:
            released = 0
            for tp in partitions:
                state = self._parts.pop(tp, None)
                if state is not None:
                    released += len(state.pending)
            return released


class KafkaConsumerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.lag = catalog.gauge(registry, "ragpulse_kafka_consumer_lag")
        self.commits = catalog.counter(registry, "ragpulse_kafka_commits_total")
        self.rebalances = catalog.counter(registry, "ragpulse_kafka_rebalance_partitions_total")
        self.assigned = catalog.gauge(registry, "ragpulse_kafka_assigned_partitions")
        self.alone = catalog.counter(registry, "ragpulse_kafka_records_taken_alone_total")
        self.released = catalog.counter(registry, "ragpulse_kafka_released_in_flight_total")


class _Rebalance(AsyncConsumerRebalanceListener):
    # Async: kafka-python 3 runs listeners on the consumer's IO thread, where only awaiting keeps
    # heartbeats going and where a blocking commit() is refused.

    def __init__(self, owner: KafkaRecordConsumer) -> None:
        self._owner = owner

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        owner = self._owner
        owner._rebalancing = True
        owner._generation += 1
        # On close the worker has stopped: what is still in flight will not finish, release it.
        deadline = time.monotonic() + (0 if owner._closing else owner._rebalance_timeout_s)
        while owner._tracker.in_flight(revoked) and time.monotonic() < deadline:
            await owner._sleep(0.05)
        positions = owner._tracker.committable(revoked)
        # A graceful hand-over is no crash: commit without a note, so the next owner need not be
        # careful (where this owner wrote notes: a dead predecessor's note stays).
        for tp in revoked:
            if (guard := owner._guards.get(tp)) is not None and guard.position is not None:
                positions.setdefault(tp, guard.position)
        if positions and owner._flush_outputs():
            try:
                await owner._consumer.commit_async({tp: OffsetAndMetadata(p, "", -1) for tp, p in positions.items()})
                owner._tracker.committed(positions)
                owner._metrics.commits.labels(outcome="ok").inc()
            except kafka_errors.KafkaError as e:
                owner._metrics.commits.labels(outcome="failed").inc()
                log.warning("commit on revocation failed (%s): the next owner may score some records again", e)
        released = owner._tracker.release(revoked)
        owner._forget_guards(revoked)
        if released:
            owner._metrics.released.inc(released)
            log.warning("released %d unfinished records of revoked partitions", released)
        owner._forget_lag(revoked)
        owner._metrics.rebalances.labels(event="revoked").inc(len(revoked))
        owner._metrics.assigned.dec(len(revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self._owner._tracker.assign(assigned)
        self._owner._rewind_pending = True
        self._owner._rebalancing = False
        self._owner._metrics.rebalances.labels(event="assigned").inc(len(assigned))
        self._owner._metrics.assigned.inc(len(assigned))
        log.info("assigned partitions %s", sorted((tp.topic, tp.partition) for tp in assigned))
        self._owner._tell_share()

    async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        # Evicted from the group: a commit would be refused; the new owner redoes the work.
        self._owner._generation += 1
        released = self._owner._tracker.release(lost)
        self._owner._forget_guards(lost)
        self._owner._metrics.released.inc(released)
        self._owner._forget_lag(lost)
        self._owner._metrics.rebalances.labels(event="lost").inc(len(lost))
        self._owner._metrics.assigned.dec(len(lost))


class KafkaRecordConsumer:
    """RecordConsumer for the scorer worker; poll() and depth() must be called from one thread
    (the worker's poll thread), commit() from any."""

    def __init__(
        self,
        kafka: KafkaConfig,
        metrics: KafkaConsumerMetrics,
        before_commit: Callable[[float], bool] | None = None,
        topic: str | None = None,
        on_share: Callable[[float], None] | None = None,
    ) -> None:
        self._topic = topic or kafka.records_topic
        # Told the share of the topic's partitions this member owns after every assignment: the
        # judge's budget and rate limits follow it (docs/design/kafka.md, "One budget for the group").
        self._on_share = on_share
        self._metrics = metrics
        self._before_commit = before_commit
        self._commit_interval_s = kafka.commit_interval_ms / 1000
        self._rebalance_timeout_s = kafka.rebalance_timeout_s
        self._tracker = OffsetTracker()
        self._fetched: collections.deque[tuple[int, TopicPartition, ConsumerRecord]] = collections.deque()
        # Bumped on every revocation, so records fetched before it are never handed out after it.
        self._generation = 0
        # Set when partitions are assigned; the poll thread then rewinds them (see below).
        self._rewind_pending = False
        self._rebalancing = False
        self._closing = False
        self._guards: dict[TopicPartition, PartitionGuard] = {}
        # Horizons being moved ahead by an asynchronous commit, so the hand-out never waits for one.
        self._extending: dict[TopicPartition, tuple[Future, int]] = {}
        # A record handed out alone (crash_guard.py): nothing else goes out until it finishes.
        self._alone: OffsetToken | None = None
        self._next_commit = 0.0
        self._lag_every_s = 1.0
        self._next_lag = 0.0
        self._lag = 0
        self._consumer = KafkaConsumer(
            **connection_config(kafka, "scorer"),
            group_id=kafka.group_id,
            enable_auto_commit=False,
            # A new group starts at the oldest record: records published before the first scorer
            # started are scored, not skipped.
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=kafka.max_message_bytes + 1024,
            allow_auto_create_topics=False,
            reconnect_backoff_max_ms=2000,
            session_timeout_ms=kafka.session_timeout_ms,
            heartbeat_interval_ms=max(1000, kafka.session_timeout_ms // 10),
            max_poll_interval_ms=kafka.max_poll_interval_ms,
        )
        # A quarter of the allowance: a slow judge still working through one fetch's records
        # polls with its partitions paused this often (_keep_membership).
        self._membership_poll_s = kafka.max_poll_interval_ms / 4000
        self._last_kafka_poll = time.monotonic()
        subscribe_known_topic(self._consumer, self._topic, _Rebalance(self))

    def _tell_share(self) -> None:
        # Only on assignment: a revocation is followed by the new assignment, and records still
        # finishing in between keep the share they were taken under.
        if self._on_share is None:
            return
        partitions = self._consumer.partitions_for_topic(self._topic)
        owned = sum(1 for tp in self._consumer.assignment() if tp.topic == self._topic)
        if partitions:
            share = owned / len(partitions)
            log.info("owning %d of %d partitions: judge budget and rate limits at %.3f", owned,
                     len(partitions), share)
            self._on_share(share)

    async def _sleep(self, seconds: float) -> None:
        # kafka-python 3 has no public sleep for listener coroutines; its IO loop's own sleep
        # keeps heartbeats and the commit request running while we wait.
        await self._consumer._net.sleep(seconds)

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        self._keep_membership()
        if self._alone is not None:
            if not self._tracker.finished(self._alone):
                time.sleep(min(timeout_s, 0.05))
                return []
            self._alone = None
            self._maybe_commit(force=True)  # on record as finished before anything else goes out
        self._maybe_commit()
        if not self._fetched:
            # Fetch in larger batches than the worker asks for: each KafkaConsumer.poll is a
            # round trip to kafka-python's IO thread, which would otherwise cap a scorer near
            # 4,000 records/s. Fetched records are not handed out (nor tracked) until returned.
            # Read before polling: records of a poll during which partitions were revoked are
            # stale (dropped below); an assignment during it is seen by the rewind check.
            generation = self._generation
            try:
                batches = poll_group(self._consumer, int(timeout_s * 1000), FETCH_RECORDS)
                self._last_kafka_poll = time.monotonic()
                if self._rewind_after_rebalance():
                    return []
            except kafka_errors.KafkaError as e:
                # A broker restart or a rebalance in progress: the worker's poll thread must live
                # on; the next poll retries.
                log.warning("poll failed (%s: %s); retrying", type(e).__name__, e)
                time.sleep(min(timeout_s, 1.0))
                return []
            for tp, messages in batches.items():
                self._fetched.extend((generation, tp, m) for m in messages)
        out: list[Delivery] = []
        while self._fetched and len(out) < max_records:
            generation, tp, m = self._fetched[0]
            if generation != self._generation:
                self._fetched.popleft()
                continue  # fetched before a rebalance: the partition restarts from its commit
            guard = self._guards.get(tp)
            if guard is None:  # not seen at the rewind (assigned during this poll)
                guard = self._guards[tp] = PartitionGuard(None, None)
            alone = guard.careful(m.offset)
            if alone and (out or self._tracker.in_flight()):
                break  # it goes out alone, once everything else has finished
            if not self._put_on_record(tp, guard, m.offset, alone):
                break  # the commit was refused (a rebalance?): the next poll tries again
            self._fetched.popleft()
            token = self._tracker.start(tp, m.offset)
            # A null key or value (a tombstone, a foreign producer) still gets a delivery: the
            # worker dead-letters what it cannot parse instead of the stream stalling on it.
            out.append(Delivery(m.key or b"", m.value or b"", token, guard.abandoned(m.offset)))
            if alone:
                self._alone = token
                self._metrics.alone.inc()
                break
        if not out and self._fetched:
            time.sleep(min(timeout_s, 0.05))  # waiting to hand a record out alone
        return out

    def _keep_membership(self) -> None:
        """Poll Kafka, every partition paused, when records fetched long ago still wait.

        Kafka polls happen when the fetched records are all handed out; a slow judge (an LLM at
        seconds per record, FETCH_RECORDS of them) can take longer than max_poll_interval_ms over
        them, and kafka-python then takes this scorer out of its group: a rebalance, and its
        records scored twice. A paused poll fetches nothing and keeps the membership."""
        if time.monotonic() - self._last_kafka_poll < self._membership_poll_s:
            return
        assigned = self._consumer.assignment()
        self._consumer.pause(*assigned)
        try:
            poll_group(self._consumer, 0, 1)
        except kafka_errors.KafkaError as e:
            log.warning("poll for group membership failed (%s: %s); retrying", type(e).__name__, e)
        finally:
            self._consumer.resume(*(assigned & self._consumer.assignment()))
        self._last_kafka_poll = time.monotonic()
        self._rewind_after_rebalance()

    def _put_on_record(self, tp: TopicPartition, guard: PartitionGuard, offset: int, alone: bool) -> bool:
        """Commit what a successor must know before `offset` goes out (crash_guard.py): alone,
        the offset itself with one more owner taking it (all before it is finished: flush
        first); otherwise a horizon beyond it, at the last committed position. The horizon is
        moved ahead asynchronously halfway through, so in a steady stream nothing waits."""
        self._settle_extension(tp, guard)
        if alone:
            if not self._flush_outputs():
                return False
            position, note = offset, guard.taken_note(offset)
        elif guard.needs_horizon(offset):
            if self._extended_in_time(tp, guard, offset):
                return True
            if tp in self._extending:
                return False  # the extension is late (a rebalance?): the next poll tries again
            position = guard.safe_position(offset)
            note = CommitNote(0, guard.next_horizon(offset, time.monotonic()))
        else:
            self._extend_early(tp, guard, offset)
            return True
        try:
            self._consumer.commit({tp: OffsetAndMetadata(position, note.encode(), -1)})
        except kafka_errors.KafkaError as e:
            self._metrics.commits.labels(outcome="failed").inc()
            log.warning("commit before handing out offset %d of %s failed (%s); will retry", offset, tp, e)
            return False
        self._tracker.committed({tp: position})
        guard.position, guard.horizon = position, note.horizon
        return True

    def _extend_early(self, tp: TopicPartition, guard: PartitionGuard, offset: int) -> None:
        if guard.position is None or tp in self._extending or not guard.wants_extension(offset):
            return
        horizon = guard.next_horizon(offset, time.monotonic())
        future = self._consumer.commit_async(
            {tp: OffsetAndMetadata(guard.position, CommitNote(0, horizon).encode(), -1)})
        self._extending[tp] = (future, horizon)

    def _extended_in_time(self, tp: TopicPartition, guard: PartitionGuard, offset: int) -> bool:
        """Wait for the extension on its way, if any (the hand-out outran it); True once the
        horizon covers `offset`."""
        extending = self._extending.get(tp)
        if extending is None:
            return False
        deadline = time.monotonic() + 5.0
        while not extending[0].is_done and time.monotonic() < deadline:
            time.sleep(0.001)
        self._settle_extension(tp, guard)
        return not guard.needs_horizon(offset)

    def _settle_extension(self, tp: TopicPartition, guard: PartitionGuard) -> None:
        extending = self._extending.get(tp)
        if extending is not None and extending[0].is_done:
            del self._extending[tp]
            if extending[0].succeeded():
                guard.horizon = max(guard.horizon, extending[1])

    def _forget_guards(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._guards.pop(tp, None)
            self._extending.pop(tp, None)

    def commit(self, delivery: Delivery) -> None:
        self._tracker.finish(delivery.token)

    def _rewind_after_rebalance(self) -> bool:
        """After a rebalance, start every assigned partition again at its committed offset.

        kafka-python 3 keeps the fetch position of a partition that is revoked and assigned back
        to the same member; records fetched but not handed out, or released unfinished, lie
        before that position and would be skipped, and a later commit past them would lose
        them. True when it rewound (what the last poll returned is dropped: it is fetched again)."""
        if not self._rewind_pending:
            return False
        self._rewind_pending = False
        self._fetched.clear()
        self._guards.clear()
        self._extending.clear()
        for tp in self._consumer.assignment():
            committed = self._consumer.committed(tp, metadata=True)
            if committed is None:
                self._consumer.seek_to_beginning(tp)  # auto_offset_reset="earliest"
                self._guards[tp] = PartitionGuard(None, None)
                continue
            self._consumer.seek(tp, committed.offset)
            guard = self._guards[tp] = PartitionGuard(committed.offset, CommitNote.decode(committed.metadata))
            if guard.careful(committed.offset):
                log.warning("the previous owner of %s-%d stopped without handing it over (a crash?): "
                            "offsets %d to %d go out one at a time", tp.topic, tp.partition,
                            committed.offset, guard.careful_to)
        return True

    def _flush_outputs(self) -> bool:
        if self._before_commit is None:
            return True
        if self._before_commit(5.0):
            return True
        self._metrics.commits.labels(outcome="not_flushed").inc()
        return False

    def _maybe_commit(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and (now < self._next_commit or self._rebalancing):
            return
        self._next_commit = now + self._commit_interval_s
        positions = self._tracker.committable()
        if not positions or not self._flush_outputs():
            return
        try:
            self._consumer.commit({tp: OffsetAndMetadata(p, self._running_note(tp), -1)
                                   for tp, p in positions.items()})
        except kafka_errors.KafkaError as e:
            # A rebalance or a broker restart: the records stay uncommitted and finished; the
            # next commit (or the next owner, after redelivery) covers them.
            self._metrics.commits.labels(outcome="failed").inc()
            log.warning("offset commit failed (%s: %s); will retry", type(e).__name__, e)
            return
        self._tracker.committed(positions)
        for tp, position in positions.items():
            if (guard := self._guards.get(tp)) is not None:
                guard.position = position
        self._metrics.commits.labels(outcome="ok").inc()

    def _running_note(self, tp: TopicPartition) -> str:
        """The note of a periodic commit: the furthest horizon announced, confirmed or on its way
        (a lower one landing after the extension would let a crash fall beyond it)."""
        guard = self._guards.get(tp)
        if guard is None or guard.horizon < 0:
            return ""
        return CommitNote(0, max(guard.horizon, self._extending.get(tp, (None, -1))[1])).encode()

    def depth(self) -> int:
        now = time.monotonic()
        if now >= self._next_lag:
            self._next_lag = now + self._lag_every_s
            self._lag = self._measure_lag()
        return self._lag

    def _measure_lag(self) -> int:
        partitions = list(self._consumer.assignment())
        highwater: dict[TopicPartition, int] = {}
        unknown: list[TopicPartition] = []
        for tp in partitions:
            try:
                hw = self._consumer.highwater(tp)
            except kafka_errors.IllegalStateError:
                continue  # revoked since assignment() was read
            if hw is None:
                unknown.append(tp)
            else:
                highwater[tp] = hw
        if unknown:  # no fetch response yet for these: ask the broker for the end offsets
            try:
                highwater.update(self._consumer.end_offsets(unknown, timeout_ms=2000))
            except kafka_errors.KafkaError as e:
                log.debug("end offsets unavailable: %s", e)
        total = 0
        for tp, hw in highwater.items():
            base = self._tracker.lowest_unfinished(tp)
            if base is None:
                try:
                    base = self._consumer.position(tp, timeout_ms=2000)
                except kafka_errors.KafkaError:
                    continue
            lag = max(0, hw - base)
            self._metrics.lag.labels(topic=tp.topic, partition=str(tp.partition)).set(lag)
            total += lag
        return total

    def _forget_lag(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            try:
                self._metrics.lag.remove(tp.topic, str(tp.partition))
            except KeyError:
                pass

    def close(self) -> None:
        """Commit what is finished, then leave the group (its partitions move at once). Call it
        after the worker stopped: records still unfinished are released to the next owner."""
        self._closing = True
        self._maybe_commit(force=True)
        self._consumer.close(autocommit=False)

