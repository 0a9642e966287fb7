import Foundation
import LMDB
import ReadingEvents

/// A disagreement between the replication tables and the log (see
/// ``ReadingStore/verifyReplication()``): sync from such a store may skip or repeat events.
///
/// `Sendable`: values.
public struct ReplicationFault: Hashable, Sendable, CustomStringConvertible {
    /// The position concerned (0 when the fault is of a replica's head or the clock).
    public let position: UInt64
    /// What disagrees.
    public let detail: String

    /// Creates a fault.
    public init(position: UInt64, detail: String) {
        self.position = position
        self.detail = detail
    }

    /// "position N: detail".
    public var description: String { "position \(position): \(detail)" }
}

extension ReadingStore {
    /// Checks the replication tables against the log, in one read transaction:
    /// - every stamped record is named by the origins index under its own origin (with its stamp),
    ///   unless that origin was given up when the store noticed a restore (an alias entry of it
    ///   names the record; see ``noticeRestore(from:)``);
    /// - every origins entry names a record that carries that origin, or is a recorded alias of it;
    /// - every canonical-copy entry is an alias of its record;
    /// - each replica's head in the version vector is the highest sequence up to which every
    ///   sequence is held or quarantined (not lower: sync would resend; not higher: sync would
    ///   never deliver what it claims);
    /// - the clock is not behind any stamp held (a new local event must sort after all of them).
    ///
    /// Returns the faults found (empty: consistent). `replay verify` runs it.
    public func verifyReplication() throws -> [ReplicationFault] {
        try log.environment.read { txn in
            var faults: [ReplicationFault] = []
            var position: UInt64 = 0
            var maxStamp: UInt64 = 0
            let last = try log.lastPosition(in: txn)
            while position < last {
                let records = try log.events(from: position + 1, limit: EventLog.readChunkSize, in: txn)
                guard !records.isEmpty else { break }
                for record in records {
                    guard let origin = try Self.envelope(of: record).origin, origin.replica != .provisional else { continue }
                    let entry = try txn.get(sync.origins, (origin.replica, origin.sequence))
                    // A record whose own origin was given up when the store noticed a restore
                    // (its slot is free, or holds the event a peer held there) is marked by an
                    // alias entry of that origin naming it.
                    let givenUp = try entry?.position != record.position
                        && txn.get(sync.aliases, (origin.replica, origin.sequence))?.position == record.position
                    if entry?.position != record.position || entry?.stamp != origin.stamp, !givenUp {
                        faults.append(ReplicationFault(position: record.position, detail: "sync.origins names its origin \(origin) as \(entry.map { "position \($0.position), stamp \($0.stamp)" } ?? "nothing")"))
                    }
                }
                position = records.last!.position
            }
            var sequences: [ReplicaID: [UInt64]] = [:]
            try txn.forEach(sync.origins) { key, entry in
                let (replica, sequence) = key
                sequences[replica, default: []].append(sequence)
                maxStamp = max(maxStamp, entry.stamp)
                let origin = EventOrigin(stamp: entry.stamp, replica: replica, sequence: sequence)
                guard let record = try log.event(at: entry.position, in: txn) else {
                    faults.append(ReplicationFault(position: entry.position, detail: "sync.origins names \(origin) at a position the log does not hold"))
                    return true
                }
                if try Self.envelope(of: record).origin != origin, try txn.get(sync.aliases, (replica, sequence))?.position != entry.position {
                    faults.append(ReplicationFault(position: entry.position, detail: "sync.origins names \(origin) here, but the record carries another origin and no alias of it is recorded"))
                }
                return true
            }
            try txn.forEach(sync.placement) { position, copy in
                // The canonical copy is an alias, or the record itself when only the version it
                // states is another's.
                let own = try log.event(at: position, in: txn).flatMap { try Self.envelope(of: $0).origin }
                if copy.origin != own || copy.fact == nil, try txn.get(sync.aliases, (copy.origin.replica, copy.origin.sequence))?.position != position {
                    faults.append(ReplicationFault(position: position, detail: "its canonical copy \(copy.origin) is not a recorded alias of it"))
                }
                return true
            }
            var slots: [ReplicaID: Set<UInt64>] = [:]
            try txn.forEach(sync.quarantine) { key, _ in
                if key.count == 25, key[0] == 1, let replica = ReplicaID(bytes: key[1..<17]) {
                    slots[replica, default: []].insert(try key.withUnsafeBytes { try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: $0[17..<25])) })
                }
                return true
            }
            let heads = try heads(txn)
            for replica in Set(heads.keys).union(sequences.keys) {
                let held = Set(sequences[replica] ?? []).union(slots[replica] ?? [])
                var expected: UInt64 = 0
                while held.contains(expected + 1) { expected += 1 }
                let head = heads[replica] ?? 0
                if head != expected {
                    faults.append(ReplicationFault(position: 0, detail: "the version vector's head of replica \(replica) is \(head), but every sequence is held up to \(expected)"))
                }
            }
            let clock = try clock(txn)
            if clock < maxStamp {
                faults.append(ReplicationFault(position: 0, detail: "the clock \(clock) is behind the latest stamp held, \(maxStamp)"))
            }
            return faults
        }
    }
}
