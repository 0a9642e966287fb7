import Foundation
import LMDB
import Projections
import ReadingEvents

// Replica identity without the file's inode (see the Replication article, "Restores and copies").
//
// A store restored from a backup, by whatever means (a new file, or the bytes written over the
// old `data.mdb`), holds its replica's history up to the backup and then issues the sequences
// after it a second time. Nothing on the device tells: the inode may be the same, the backup may
// predate the recorded home. A peer tells: it holds this replica's sequences with other events
// (the ones the store wrote before the backup was restored), or beyond this store's head. When a
// store sees that (``noticeRestore(from:)`` with a peer's ``witnesses(of:)``, or a merged batch),
// it continues as a new replica in one write transaction:
//
// - its own events after the last sequence the peer is known to share (`kept`) are re-issued
//   under the new replica: each gets an alias of the new replica (new sequence, a stamp after
//   every stamp held), which becomes its canonical copy unless another replica's copy sorts first,
//   and the old origin's slot in `sync.origins` is freed for the event the peer holds there (the
//   record keeps its old origin, marked by an alias entry of that origin naming the record);
// - the old replica becomes another replica whose head is `kept`, so the peer's events of it
//   after `kept` merge like any other replica's (events shared with the store come back as copies);
// - the readers of the re-issued events are refolded (their canonical copies moved).
//
// One transaction: a crash leaves the store before or after the switch, never between.

/// What a store did when it noticed that it was restored from a backup or copied: it continued as
/// a new replica.
///
/// `Sendable`: values.
public struct RestoreNotice: Hashable, Sendable, CustomStringConvertible {
    /// The replica ID the store had (its sequences after `kept` were issued twice).
    public let retired: ReplicaID
    /// The new replica ID.
    public let replica: ReplicaID
    /// The last sequence of `retired` the peer was seen to share with this store.
    public let kept: UInt64
    /// The store's events re-issued under `replica` (those after `kept`).
    public let reissued: Int
    /// What the peer held: the first sequence of `retired` found with another event or beyond
    /// this store's head.
    public let evidence: String

    /// Creates a notice.
    public init(retired: ReplicaID, replica: ReplicaID, kept: UInt64, reissued: Int, evidence: String) {
        self.retired = retired; self.replica = replica; self.kept = kept; self.reissued = reissued; self.evidence = evidence
    }

    /// One sentence naming the cause and what the store did.
    public var description: String {
        "this store was restored from a backup or copied (\(evidence)): it continues as replica \(replica), "
            + "re-issuing \(reissued) event(s) it wrote after sequence \(kept) of replica \(retired)"
    }
}

extension ReadingStore {
    /// This store's events of `replica` at a few sequences (its highest held, then 1, 3, 7, ...
    /// below it), as ``changes(since:after:limit:)`` sends them: what a peer of that replica
    /// compares with its own events (``noticeRestore(from:)``) to learn whether it was restored.
    public func witnesses(of replica: ReplicaID) throws -> [EventEnvelope] {
        try log.environment.read { txn in
            let highest = try Self.lastOrigin(of: replica, sync: sync, txn).sequence
            var envelopes: [EventEnvelope] = []
            var step: UInt64 = 1
            var sequence = highest
            while sequence > 0 {
                if let entry = try txn.get(sync.origins, (replica, sequence)), let record = try log.event(at: entry.position, in: txn) {
                    var envelope = try Self.envelope(of: record)
                    let origin = EventOrigin(stamp: entry.stamp, replica: replica, sequence: sequence)
                    if envelope.origin != origin, let alias = try txn.get(sync.aliases, (replica, sequence)), alias.position == entry.position {
                        // Another replica's copy of the event (an alias): as that copy.
                        envelope.origin = origin
                        envelope.recordedAt = alias.recordedAt
                    }
                    if envelope.origin == origin { envelopes.append(envelope) }
                }
                guard sequence > step else { break }
                sequence -= step
                step *= 2
            }
            return envelopes
        }
    }

    /// Compares a peer's ``witnesses(of:)`` of this store's replica with this store's own events:
    /// when the peer holds one of its sequences with another event, or beyond its head, this store
    /// was restored from a backup or copied (whatever the file system says), and it continues as a
    /// new replica (see ``RestoreNotice``) so that no sequence is issued twice, nothing it wrote is
    /// lost, and the peer's events of the old replica can come in. Returns `nil` when the peer's
    /// copies agree with this store.
    public func noticeRestore(from witnesses: [EventEnvelope]) throws -> RestoreNotice? {
        let before = replica
        do {
            let notice = try log.environment.write { txn -> RestoreNotice? in
                try refreshIdentity(txn)
                try catchUpAll(txn)
                return try noticeRestore(in: witnesses, witnesses: true, txn)
            }
            if notice != nil { log.notifyObservers() }
            return notice
        } catch {
            identity.withLock { $0 = before }
            throw error
        }
    }

    /// Reads the replica ID from `sync.meta` into ``identity`` (another process may have switched it).
    func refreshIdentity(_ txn: ReadTransaction) throws {
        guard let bytes = try txn.get(sync.meta, "replica"), let stored = ReplicaID(bytes: bytes) else { return }
        identity.withLock { if $0 != stored { $0 = stored } }
    }

    /// The check of ``noticeRestore(from:)`` on `envelopes` (a peer's witnesses, or a merge
    /// batch), in `txn`: continues as a new replica when one of them names this replica with a
    /// sequence beyond its head and an event it never held (a merge batch, and witnesses), or with
    /// another event than this store's at a sequence it issued (witnesses only: in a merge batch,
    /// such an envelope may as well be a forged or damaged one, and the merge quarantines it).
    func noticeRestore(in envelopes: [EventEnvelope], witnesses: Bool = false, _ txn: WriteTransaction) throws -> RestoreNotice? {
        let own = replica
        var mine = envelopes.filter { $0.origin?.replica == own }
        guard !mine.isEmpty else { return nil }
        mine.sort { $0.origin!.sequence < $1.origin!.sequence }
        let head = try Self.lastOrigin(of: own, sync: sync, txn).sequence
        var matched: [UInt64] = []
        var mismatch: (sequence: UInt64, detail: String)?
        var beyond: String?
        for envelope in mine {
            let sequence = envelope.origin!.sequence
            if sequence > head {
                // An event this store never held: written by this replica after the backup the
                // store was restored from. (A copy of an event it holds, under a sequence it never
                // issued, is no such sign: the merge quarantines it.)
                if beyond == nil, try log.event(withID: envelope.eventID.uuid, in: txn) == nil {
                    beyond = "a peer holds sequence \(sequence) of replica \(own), beyond its last, \(head), as an event it never held"
                }
                continue
            }
            guard mismatch == nil else { continue }
            guard let entry = try txn.get(sync.origins, (own, sequence)), let record = try log.event(at: entry.position, in: txn) else {
                mismatch = (sequence, "a peer holds sequence \(sequence) of replica \(own), which this store does not hold")
                continue
            }
            let held = try Self.envelope(of: record)
            // One event ID is one event: the peer's copy may show another *version* of an
            // imported row (two exports of one account, another zone), which the identity rule
            // keeps under this origin as a version, not as another event. A restored store's own
            // new events have new IDs (a row re-imported after the restore has its old ID and is
            // the same row).
            guard held.eventID == envelope.eventID else {
                mismatch = (sequence, "a peer holds sequence \(sequence) of replica \(own) as event \(envelope.eventID), this store as event \(held.eventID)")
                continue
            }
            matched.append(sequence)
        }
        let evidence: String
        if witnesses, let mismatch {
            evidence = mismatch.detail
        } else if let beyond {
            evidence = beyond
        } else {
            return nil
        }
        // Every sequence from the first that differs on is this store's own since the restore.
        let bound = mismatch?.sequence ?? (head + 1)
        let kept = matched.last(where: { $0 < bound }) ?? 0
        return try continueAsNewReplica(keepingUpTo: kept, evidence: evidence, txn)
    }

    /// The switch itself (see the comment at the top of this file), in `txn`.
    func continueAsNewReplica(keepingUpTo kept: UInt64, evidence: String, _ txn: WriteTransaction) throws -> RestoreNotice {
        let old = replica
        let new = ReplicaID()
        var owned: [(sequence: UInt64, position: UInt64)] = []
        try txn.forEach(sync.origins, from: (old, kept + 1), prefix: old.bytes) { key, entry in
            owned.append((key.1, entry.position))
            return true
        }
        // Every stamp held, the old replica's included, stays behind the clock.
        var stamp = try clock(txn)
        try txn.put(sync.clock, "clock", stamp)
        var readers: Set<ReaderID> = []
        for (index, entry) in owned.enumerated() {
            guard let record = try log.event(at: entry.position, in: txn) else {
                throw EventStoreError.corruptRecord(position: entry.position, reason: "sync.origins names it, but the log has no such position")
            }
            let envelope = try Self.envelope(of: record)
            // The re-issued copy is stamped like any new event of this replica (the stamp rule
            // every receiver keeps): an event written long before the restore was noticed gets a
            // `recordedAt` a day before its new stamp, or no receiver would take the copy.
            guard let next = EventOrigin.nextStamp(after: stamp, recordedAt: envelope.recordedAt) else {
                throw EventStoreError.invalidArgument(
                    field: "origin.stamp",
                    detail: "this store's clock (\(stamp)) has reached 2200-01-01, which no decoder accepts; the restore could not re-issue its events, nothing was changed")
            }
            stamp = next.stamp
            let origin = EventOrigin(stamp: stamp, replica: new, sequence: UInt64(index + 1))
            // The old origin's slot is freed; an alias entry of it keeps naming the record (the
            // mark of a record whose own origin was given up).
            _ = try txn.delete(sync.origins, (old, entry.sequence))
            try txn.put(sync.aliases, (old, entry.sequence), (entry.position, envelope.recordedAt, nil))
            try txn.put(sync.origins, (new, origin.sequence), (entry.position, origin.stamp))
            try txn.put(sync.aliases, (new, origin.sequence), (entry.position, next.recordedAt, nil))
            if try txn.get(sync.placement, entry.position) == nil {
                try txn.put(sync.placement, entry.position, (origin, next.recordedAt, nil))
            }
            readers.insert(envelope.reader)
        }
        if !owned.isEmpty { try txn.put(sync.clock, "clock", stamp) }
        // The old replica is now another replica: its head is the last sequence held (or
        // quarantined) without a gap.
        var head = kept
        while try txn.get(sync.origins, (old, head + 1)) != nil
                || txn.get(sync.quarantine, Self.quarantineSlot(EventOrigin(stamp: 0, replica: old, sequence: head + 1))) != nil {
            head += 1
        }
        try txn.put(sync.vector, old, head)
        try txn.put(sync.meta, "replica", new.bytes)
        identity.withLock { $0 = new }
        for reader in readers { try refoldReader(reader, txn) }
        return RestoreNotice(retired: old, replica: new, kept: kept, reissued: owned.count, evidence: evidence)
    }
}
