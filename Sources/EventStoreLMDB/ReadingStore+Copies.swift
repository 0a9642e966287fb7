import Foundation
import LMDB
import Projections
import ReadingEvents

// The identity rule of replication (see the Replication article): an event is its event ID, and
// two envelopes with one ID and the same fact (``ReadingEvents/EventEnvelope/recordsSameFact(as:)``)
// are two *copies* of one event, stamped by two replicas (the same export imported on two devices,
// the same host-made ID appended on two devices). A store keeps one record per event ID, the copy
// it saw first; every other copy's origin is kept as an *alias* of that record, so every replica's
// version vector moves over it. The copy whose origin sorts first is the *canonical* copy: views
// place the event by its origin and read its `recordedAt`. Every replica that has heard of the same
// copies chooses the same one, so views are a function of the set of facts, whichever copy
// arrived first.

/// `sync.aliases` values: the position of the record the alias names, and the alias copy's
/// `recordedAt` (16 bytes, big-endian; the instant as its two's-complement bits).
enum AliasEntryCodec: LMDBValueCodec {
    typealias Item = (position: UInt64, recordedAt: Timestamp)
    /// 16 bytes: position, then recordedAt.
    static func encode(_ item: Item) -> [UInt8] {
        BigEndianUInt64.encode(item.position) + BigEndianUInt64.encode(UInt64(bitPattern: item.recordedAt.microseconds))
    }
    /// Exactly 16 bytes.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        guard bytes.count == 16 else {
            throw LMDBError.undecodable(codec: "AliasEntryCodec", "expected 16 bytes, found \(bytes.count)")
        }
        return (try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<8])),
                Timestamp(microseconds: Int64(bitPattern: try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[8..<16])))))
    }
}

/// `sync.placement` values: the canonical copy of an event whose record is not it (40 bytes:
/// stamp, replica, sequence, recordedAt).
enum CanonicalCopyCodec: LMDBValueCodec {
    typealias Item = (origin: EventOrigin, recordedAt: Timestamp)
    /// 40 bytes.
    static func encode(_ item: Item) -> [UInt8] {
        BigEndianUInt64.encode(item.origin.stamp) + item.origin.replica.bytes + BigEndianUInt64.encode(item.origin.sequence)
            + BigEndianUInt64.encode(UInt64(bitPattern: item.recordedAt.microseconds))
    }
    /// Exactly 40 bytes.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        guard bytes.count == 40, let replica = ReplicaID(bytes: Array(bytes[8..<24])) else {
            throw LMDBError.undecodable(codec: "CanonicalCopyCodec", "expected 40 bytes, found \(bytes.count)")
        }
        func u64(_ range: Range<Int>) throws(LMDBError) -> UInt64 { try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[range])) }
        return (EventOrigin(stamp: try u64(0..<8), replica: replica, sequence: try u64(24..<32)),
                Timestamp(microseconds: Int64(bitPattern: try u64(32..<40))))
    }
}

/// The canonical copies of one transaction's view of the store: positions whose record is not
/// the canonical copy (usually none), read once per operation.
///
/// Not `Sendable`-relevant: a local value of one operation.
struct Placements {
    private var copies: [UInt64: CanonicalCopyCodec.Item] = [:]

    init(_ txn: ReadTransaction, _ table: LMDBDatabase<BigEndianUInt64, CanonicalCopyCodec>) throws {
        try txn.forEach(table) { position, copy in
            copies[position] = copy
            return true
        }
    }

    /// The stored event at `record` as its canonical copy.
    func envelope(of record: RecordedEvent) throws -> EventEnvelope {
        var envelope = try ReadingStore.envelope(of: record)
        if let copy = copies[record.position] {
            envelope.origin = copy.origin
            envelope.recordedAt = copy.recordedAt
        }
        return envelope
    }
}

extension ReadingStore {
    /// The canonical copies as `txn` sees them.
    func placements(_ txn: ReadTransaction) throws -> Placements { try Placements(txn, sync.placement) }

    /// The canonical origin of the event at `position` whose record carries `own`.
    func canonicalOrigin(at position: UInt64, own: EventOrigin, _ txn: ReadTransaction) throws -> EventOrigin {
        try txn.get(sync.placement, position)?.origin ?? own
    }

    /// Records `copy` (an envelope carrying an origin) as an alias of the held event at `record`
    /// (its `recordedAt`; the origins index entry, the clock and the head are written by
    /// ``noteOrigins(_:_:)`` like any copy held), and when the copy's origin sorts before the
    /// event's canonical one it becomes the canonical copy. Returns whether the canonical copy
    /// changed (the reader's views must then be refolded).
    func noteAlias(_ copy: EventEnvelope, of record: RecordedEvent, own: EventOrigin, _ txn: WriteTransaction) throws -> Bool {
        guard let origin = copy.origin else { return false }
        try txn.put(sync.aliases, (origin.replica, origin.sequence), (record.position, copy.recordedAt))
        guard origin < (try canonicalOrigin(at: record.position, own: own, txn)) else { return false }
        try txn.put(sync.placement, record.position, (origin, copy.recordedAt))
        return true
    }

    /// Refolds every view of `reader` from its events (their canonical copies), in memory, and
    /// replaces the reader's records in the active generation: after a canonical copy changed
    /// (its origin moves the event in canonical order, its `recordedAt` may move the reader's
    /// latest moment). Rare: only when two copies of one fact meet.
    func refoldReader(_ reader: ReaderID, _ txn: WriteTransaction) throws {
        var positions: [UInt64] = []
        try txn.forEach(readerIndex, from: (reader, 0), prefix: ReaderIDKey.encode(reader)) { key, _ in
            positions.append(key.1)
            return true
        }
        let placements = try placements(txn)
        var envelopes: [EventEnvelope] = []
        envelopes.reserveCapacity(positions.count)
        for position in positions {
            guard let record = try log.event(at: position, in: txn) else {
                throw EventStoreError.corruptView(detail: "index.reader: reader \(reader) lists position \(position), which the log does not hold")
            }
            envelopes.append(try placements.envelope(of: record))
        }
        var views = SingleReaderViewStore(reader: reader)
        try ReadingProjector(dayStartHour: dayStartHour).fold(envelopes, into: &views)
        let generation = try activeGeneration(txn)
        // The records are written outside the memo: its session stops answering, and the commit
        // empties it.
        viewMemo.session(txn, generation: generation).invalidate()
        try generations[generation].replace(reader: reader, with: views, txn)
    }
}
