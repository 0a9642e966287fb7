import Foundation
import LMDB
import Projections
import ReadingEvents

// The identity rule of replication (see the Replication article): an event is its event ID, and
// two envelopes with one ID and the same fact (``ReadingEvents/EventEnvelope/recordsSameFact(as:)``)
// are two *copies* of one event, stamped by two replicas (the same export imported on two devices,
// the same host-made ID appended on two devices). Two envelopes with one *derived* ID (what imports
// make: UUID version 8, from reader, source and row) of the same reader, stream and event type but
// another fact are two *versions* of one imported row (a newer export with one page count changed,
// the export imported in another zone). A store keeps one record per event ID, the copy it saw
// first; every other copy's or version's origin is kept as an *alias* of that record, so every
// replica's version vector moves over it. Which copy places the event and which version states it
// is a function of the set of copies alone (see ``ReadingStore/noteAlias(_:of:held:_:)``), so every
// replica that has heard of the same copies shows the same views, whichever arrived first.

extension EventEnvelope {
    /// Whether `other` is another version of this imported row: the same derived event ID (UUID
    /// version 8, which imports make from reader, source and row), reader, stream and event type,
    /// and another fact. Any other envelope under a held ID with another fact is a conflict.
    func isImportVersion(of other: EventEnvelope) -> Bool {
        eventID == other.eventID && eventID.uuid.uuid.6 >> 4 == 8 && reader == other.reader && stream == other.stream
            && type == other.type && !recordsSameFact(as: other)
    }

    /// Whether this copy may place its event: its stamp is not before the instant its fact happened
    /// (`occurredAt`; every replica stamps an event at or after its `recordedAt`, which is at or
    /// after `occurredAt`). A copy stamped earlier is made up: it never moves the event.
    var mayPlaceItsEvent: Bool {
        guard let origin else { return false }
        return occurredAt.microseconds <= 0 || origin.stamp >= UInt64(occurredAt.microseconds)
    }
}

/// `sync.aliases` values: the position of the record the alias names, and the alias copy's
/// `recordedAt` (16 bytes, big-endian; the instant as its two's-complement bits); for a *version*
/// (another fact of an imported row), the version's sync record
/// (``ReadingEvents/BinaryEventCodec/encodeRecord(_:)``) follows.
enum AliasEntryCodec: LMDBValueCodec {
    typealias Item = (position: UInt64, recordedAt: Timestamp, version: [UInt8]?)
    /// 16 bytes: position, then recordedAt; then a version's record.
    static func encode(_ item: Item) -> [UInt8] {
        BigEndianUInt64.encode(item.position) + BigEndianUInt64.encode(UInt64(bitPattern: item.recordedAt.microseconds)) + (item.version ?? [])
    }
    /// 16 bytes, or more with a version's record.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        guard bytes.count >= 16 else {
            throw LMDBError.undecodable(codec: "AliasEntryCodec", "expected 16 bytes or more, found \(bytes.count)")
        }
        return (try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<8])),
                Timestamp(microseconds: Int64(bitPattern: try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[8..<16])))),
                bytes.count > 16 ? Array(bytes[16...]) : nil)
    }
}

/// `sync.placement` values: the canonical copy of an event whose record is not it (40 bytes:
/// stamp, replica, sequence, recordedAt), then, when the fact the event states is another
/// version's than the record's, that version's sync record (``ReadingEvents/BinaryEventCodec/encodeRecord(_:)``).
enum CanonicalCopyCodec: LMDBValueCodec {
    typealias Item = (origin: EventOrigin, recordedAt: Timestamp, fact: [UInt8]?)
    /// 40 bytes, then the fact's record.
    static func encode(_ item: Item) -> [UInt8] {
        BigEndianUInt64.encode(item.origin.stamp) + item.origin.replica.bytes + BigEndianUInt64.encode(item.origin.sequence)
            + BigEndianUInt64.encode(UInt64(bitPattern: item.recordedAt.microseconds)) + (item.fact ?? [])
    }
    /// 40 bytes, or more with a fact's record.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        guard bytes.count >= 40, let replica = ReplicaID(bytes: Array(bytes[8..<24])) else {
            throw LMDBError.undecodable(codec: "CanonicalCopyCodec", "expected 40 bytes or more, found \(bytes.count)")
        }
        func u64(_ range: Range<Int>) throws(LMDBError) -> UInt64 { try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[range])) }
        return (EventOrigin(stamp: try u64(0..<8), replica: replica, sequence: try u64(24..<32)),
                Timestamp(microseconds: Int64(bitPattern: try u64(32..<40))),
                bytes.count > 40 ? Array(bytes[40...]) : nil)
    }
}

/// The canonical copies of one transaction's view of the store: positions whose record is not
/// the canonical copy (usually none), read once per operation.
///
/// Not `Sendable`-relevant: a local value of one operation.
struct Placements {
    private var copies: [UInt64: (origin: EventOrigin, recordedAt: Timestamp, fact: EventEnvelope?)] = [:]

    init(_ txn: ReadTransaction, _ table: LMDBDatabase<BigEndianUInt64, CanonicalCopyCodec>) throws {
        try txn.forEach(table) { position, copy in
            copies[position] = (copy.origin, copy.recordedAt, try copy.fact.map { try ReadingStore.decodeVersion($0, at: position) })
            return true
        }
    }

    /// The stored event at `record` as its canonical copy (placed by it) stating its winning version.
    func envelope(of record: RecordedEvent) throws -> EventEnvelope {
        try placed(ReadingStore.envelope(of: record))
    }

    /// The stored event read in place at `position`, placed as ``envelope(of:)`` places it.
    func envelope(of record: EventRecord.InPlace, at position: UInt64) throws -> EventEnvelope {
        try placed(ReadingStore.envelope(of: record, at: position))
    }

    /// `envelope` (decoded from its record) as its canonical copy states it, if it has one.
    private func placed(_ decoded: EventEnvelope) -> EventEnvelope {
        var envelope = decoded
        if !copies.isEmpty, let copy = copies[envelope.position] {
            if let fact = copy.fact {
                let (position, streamVersion) = (envelope.position, envelope.streamVersion)
                envelope = fact
                envelope.position = position
                envelope.streamVersion = streamVersion
            }
            envelope.origin = copy.origin
            envelope.recordedAt = copy.recordedAt
        }
        return envelope
    }
}

extension ReadingStore {
    /// The canonical copies as `txn` sees them.
    func placements(_ txn: ReadTransaction) throws -> Placements { try Placements(txn, sync.placement) }

    /// A version's sync record as stored in `sync.aliases` or `sync.placement`.
    static func decodeVersion(_ bytes: [UInt8], at position: UInt64) throws -> EventEnvelope {
        do {
            return try BinaryEventCodec.decodeRecord(bytes)
        } catch {
            throw EventStoreError.corruptView(detail: "sync: the version of the event at position \(position) does not decode: \(error)")
        }
    }

    /// The copy of the event at `position` (the record `held`) that carries `origin`: the record
    /// itself, or an alias (a copy: the record's fact with the alias's `recordedAt`; a version: its
    /// own record).
    func copy(at position: UInt64, held: EventEnvelope, origin: EventOrigin, _ txn: ReadTransaction) throws -> EventEnvelope {
        guard origin != held.origin, let alias = try txn.get(sync.aliases, (origin.replica, origin.sequence)), alias.position == position else {
            return held
        }
        if let version = alias.version { return try Self.decodeVersion(version, at: position) }
        var copy = held
        copy.origin = origin
        copy.recordedAt = alias.recordedAt
        return copy
    }

    /// Records `copy` (an envelope carrying an origin: the same fact as the record `held`, or
    /// another version of its imported row) as an alias of the held event at `record` (its
    /// `recordedAt`, and a version's record; the origins index entry, the clock and the head are
    /// written by ``noteOrigins(_:_:)`` like any copy held), then applies the placement rule to the
    /// set of copies now held. Returns whether what the views read of the event changed (the
    /// reader's views must then be refolded).
    ///
    /// The rule, a function of the set of copies (so every replica holding the same copies reads
    /// the same event), in two parts:
    /// - **place**: the event sorts by the copy whose origin sorts first among the copies that may
    ///   place it (``ReadingEvents/EventEnvelope/mayPlaceItsEvent``: stamped at or after the fact's
    ///   `occurredAt`; only when no copy may, by the first of all). A copy stamped before the fact
    ///   happened is made up: it never moves the event, however small its stamp.
    /// - **state**: the event states the fact of the copy whose origin sorts *last*: a row imported
    ///   again (a newer export, another zone) is a later statement of the row, and the later wins,
    ///   as with every other register. Copies of one fact never change what the event states.
    func noteAlias(_ copy: EventEnvelope, of record: RecordedEvent, held: EventEnvelope, _ txn: WriteTransaction) throws -> Bool {
        guard let origin = copy.origin, let own = held.origin else { return false }
        let isVersion = copy.isImportVersion(of: held)
        try txn.put(sync.aliases, (origin.replica, origin.sequence),
                    (record.position, copy.recordedAt, isVersion ? BinaryEventCodec.encodeRecord(copy) : nil))
        let current = try txn.get(sync.placement, record.position)
        // Where the event is placed now, and the copy that placed it.
        let placedBy = try current.map { try self.copy(at: record.position, held: held, origin: $0.origin, txn) } ?? held
        // The version it states now.
        let stated = try current?.fact.map { try Self.decodeVersion($0, at: record.position) } ?? held
        func placesFirst(_ a: EventEnvelope, _ b: EventEnvelope) -> Bool {
            a.mayPlaceItsEvent != b.mayPlaceItsEvent ? a.mayPlaceItsEvent : a.origin! < b.origin!
        }
        var place = placedBy, statement = stated
        if placesFirst(copy, placedBy) { place = copy }
        if origin > stated.origin! { statement = copy }
        let fact: [UInt8]? = statement.recordsSameFact(as: held) ? nil : BinaryEventCodec.encodeRecord(statement)
        guard place.origin != placedBy.origin || statement.origin != stated.origin else { return false }
        let changed = place.origin != placedBy.origin || !statement.recordsSameFact(as: stated)
        if place.origin == own, fact == nil {
            try txn.delete(sync.placement, record.position)
        } else {
            try txn.put(sync.placement, record.position, (place.origin!, place.recordedAt, fact))
        }
        return changed
    }

    /// Refolds every view of `reader` from its events (their canonical copies), in memory, and
    /// replaces the reader's records in the active generation: after a canonical copy changed
    /// (its origin moves the event in canonical order, its `recordedAt` may move the reader's
    /// latest moment). Rare: only when two copies of one fact meet.
    func refoldReader(_ reader: ReaderID, _ txn: WriteTransaction) throws {
        let (views, _) = try ViewMaintainer(self).foldReader(reader, through: .max, placements: placements(txn), txn)
        let generation = try activeGeneration(txn)
        // The records are written outside the memo: its session stops answering, and the commit
        // empties it.
        viewMemo.session(txn, generation: generation).invalidate()
        try generations[generation].replace(reader: reader, with: views, txn)
    }
}
