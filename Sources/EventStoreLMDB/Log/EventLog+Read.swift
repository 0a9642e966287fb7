import Foundation
import LMDB

extension EventLog {
    /// The number of records one read transaction reads in the chunked reads.
    public static let readChunkSize = 1024

    /// The last position in the log (0 when it is empty).
    public func lastPosition() throws -> UInt64 {
        try environment.read { try lastPosition(in: $0) }
    }

    /// The last position as seen by `txn` (0 when the log is empty).
    public func lastPosition(in txn: ReadTransaction) throws -> UInt64 {
        guard let bytes = try txn.get(meta, MetaKey.last) else { return 0 }
        return try bytes.withUnsafeBytes { try BigEndianUInt64.decode($0) }
    }

    /// The current version of the stream `key` (0 when it has no events).
    public func streamVersion(of key: StreamKey) throws -> UInt64 {
        try environment.read { try streamVersion(of: key, in: $0) }
    }

    /// The current version of `stream` (0 when it has no events).
    public func streamVersion(of stream: String) throws -> UInt64 {
        try environment.read { try streamVersion(of: stream, in: $0) }
    }

    /// The version of `stream` as seen by `txn` (0 when it has no events).
    public func streamVersion(of stream: String, in txn: ReadTransaction) throws -> UInt64 {
        try streamVersion(of: StreamKey(name: stream), in: txn)
    }

    /// The version of the stream `key` as seen by `txn` (0 when it has no events).
    public func streamVersion(of key: StreamKey, in txn: ReadTransaction) throws -> UInt64 {
        try streamVersion(encoded: try key.encoded(), in: txn) ?? 0
    }

    /// The version of the stream whose encoded key is `streamBytes`: the version in its last
    /// `streamIndex` key (stream key + version, big-endian), `nil` when it has no events. Since
    /// format 4 no table stores it apart, so an append writes one stream entry, not two.
    func streamVersion(encoded streamBytes: [UInt8], in txn: ReadTransaction) throws -> UInt64? {
        var version: UInt64?
        let count = streamBytes.count + 8
        try txn.forEachRaw(streamIndex, from: streamBytes + [UInt8](repeating: 0xFF, count: 8), direction: .backward,
                           prefix: streamBytes) { key, _ in
            // A longer stream key that starts with this one (a raw log's stream names) is another stream.
            guard key.count == count else { return true }
            version = try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: key[streamBytes.count...]))
            return false
        }
        return version
    }

    /// The event at `position` as seen by `txn`, or nil.
    ///
    /// - Throws: ``EventStoreError/corruptRecord(position:reason:)`` when the record is damaged.
    public func event(at position: UInt64, in txn: ReadTransaction) throws -> RecordedEvent? {
        guard let bytes = try txn.rawValue(events, BigEndianUInt64.encode(position)) else { return nil }
        return try EventRecord.decode(bytes, key: position)
    }

    /// Calls `body` with the checked record at `position` read in place (its payload points into
    /// `txn`'s memory map and is valid only during the call); nil when there is no such record.
    /// Damage throws the same error as ``event(at:in:)``.
    func withEvent<R>(at position: UInt64, in txn: ReadTransaction, _ body: (EventRecord.InPlace) throws -> R) throws -> R? {
        // The key's 8 big-endian bytes on the stack (`BigEndianUInt64.encode` makes an array).
        let found = try withUnsafeBytes(of: position.bigEndian) { key throws(LMDBError) in try txn.rawValue(events, key) }
        guard let bytes = found else { return nil }
        return try body(EventRecord.decodeInPlace(bytes, key: position))
    }

    /// The event with `eventID`, or nil.
    public func event(withID eventID: UUID) throws -> RecordedEvent? {
        try environment.read { txn in try event(withID: eventID, in: txn) }
    }

    /// The event with this ID, read by `txn`, or nil when it is not stored.
    public func event(withID eventID: UUID, in txn: ReadTransaction) throws -> RecordedEvent? {
        guard let position = try txn.get(eventIDs, eventID) else { return nil }
        guard let event = try event(at: position, in: txn), event.eventID == eventID else {
            throw EventStoreError.corruptRecord(
                position: position, reason: "the eventIDs index points here for \(eventID) but the record differs")
        }
        return event
    }

    /// Up to `limit` events with positions at or after `position`, in order, read by `txn`.
    public func events(from position: UInt64, limit: Int, in txn: ReadTransaction) throws -> [RecordedEvent] {
        try events(from: position, direction: .forward, limit: limit, in: txn)
    }

    /// Up to `limit` events with positions at or after `position`, in ascending order.
    ///
    /// Long reads run in chunks of ``readChunkSize`` records, each in its own short read
    /// transaction (all chunks see a consistent prefix of the append-only log).
    public func read(from position: UInt64 = 1, limit: Int = .max) throws -> [RecordedEvent] {
        var result: [RecordedEvent] = []
        var next = max(position, 1)
        while result.count < limit {
            let want = min(limit - result.count, Self.readChunkSize)
            let chunk = try environment.read { txn in
                try events(from: next, direction: .forward, limit: want, in: txn)
            }
            result.append(contentsOf: chunk)
            guard let newest = chunk.last, chunk.count == want else { break }
            next = newest.position + 1
        }
        return result
    }

    /// Up to `limit` events with positions at or before `position` (nil: the end), newest first.
    public func readBackward(from position: UInt64? = nil, limit: Int = .max) throws -> [RecordedEvent] {
        var result: [RecordedEvent] = []
        var next = position ?? UInt64.max
        while result.count < limit {
            let want = min(limit - result.count, Self.readChunkSize)
            let chunk = try environment.read { txn in
                try events(from: next, direction: .backward, limit: want, in: txn)
            }
            result.append(contentsOf: chunk)
            guard let oldest = chunk.last, chunk.count == want, oldest.position > 1 else { break }
            next = oldest.position - 1
        }
        return result
    }

    /// Calls `body` with each event from `position` on, in order, until it returns false; reads
    /// in chunks of ``readChunkSize`` records, one short read transaction per chunk (`body` runs
    /// outside the transactions).
    public func forEachEvent(from position: UInt64 = 1, _ body: (RecordedEvent) throws -> Bool) throws {
        var next = max(position, 1)
        while true {
            let chunk = try environment.read { txn in
                try events(from: next, direction: .forward, limit: Self.readChunkSize, in: txn)
            }
            for event in chunk {
                guard try body(event) else { return }
            }
            guard let newest = chunk.last, chunk.count == Self.readChunkSize else { return }
            next = newest.position + 1
        }
    }

    /// Up to `limit` events of `stream` with versions at or after `version`, in version order.
    ///
    /// - Throws: ``EventStoreError/invalidStreamName(_:)``, or
    ///   ``EventStoreError/corruptRecord(position:reason:)`` when a record is damaged or does not
    ///   match the stream index.
    public func readStream(_ stream: String, from version: UInt64 = 1, limit: Int = .max) throws -> [RecordedEvent] {
        try readStream(StreamKey(name: stream), from: version, limit: limit)
    }

    /// Up to `limit` events of the stream `key` with versions at or after `version`, in version
    /// order, in chunks of ``readChunkSize`` records (one short read transaction each).
    ///
    /// - Throws: as ``readStream(_:from:limit:)-(String,_,_)``.
    public func readStream(_ key: StreamKey, from version: UInt64 = 1, limit: Int = .max) throws -> [RecordedEvent] {
        let streamBytes = try key.encoded()
        var result: [RecordedEvent] = []
        var nextVersion = max(version, 1)
        while result.count < limit {
            let want = min(limit - result.count, Self.readChunkSize)
            let chunk = try environment.read { txn in
                try streamEvents(streamBytes, key: key, from: nextVersion, limit: want, in: txn)
            }
            result.append(contentsOf: chunk)
            guard let newest = chunk.last, chunk.count == want else { break }
            nextVersion = newest.streamVersion + 1
        }
        return result
    }

    /// Up to `limit` events of `stream` from `version` on, read by `txn`.
    public func readStream(_ stream: String, from version: UInt64 = 1, limit: Int, in txn: ReadTransaction) throws -> [RecordedEvent] {
        try readStream(StreamKey(name: stream), from: version, limit: limit, in: txn)
    }

    /// Up to `limit` events of the stream `key` from `version` on, read by `txn`.
    public func readStream(_ key: StreamKey, from version: UInt64 = 1, limit: Int, in txn: ReadTransaction) throws -> [RecordedEvent] {
        try streamEvents(try key.encoded(), key: key, from: max(version, 1), limit: limit, in: txn)
    }

    private func streamEvents(
        _ streamBytes: [UInt8], key: StreamKey, from version: UInt64, limit: Int, in txn: ReadTransaction
    ) throws -> [RecordedEvent] {
        var result: [RecordedEvent] = []
        guard limit > 0 else { return result }
        let versionOffset = streamBytes.count
        try txn.forEachRaw(streamIndex, from: streamBytes + BigEndianUInt64.encode(version), direction: .forward,
                           prefix: streamBytes) { keyBytes, value in
            // The prefix is a whole self-delimiting stream key, so 8 version bytes must follow.
            guard keyBytes.count == versionOffset + 8 else {
                throw EventStoreError.corruptRecord(
                    position: 0, reason: "a streamIndex key of \(key) has \(keyBytes.count - versionOffset) bytes after the stream key, not 8")
            }
            let indexedVersion = try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: keyBytes[versionOffset...]))
            let position = try BigEndianUInt64.decode(value)
            guard let event = try event(at: position, in: txn) else {
                throw EventStoreError.corruptRecord(position: position, reason: "indexed by stream \(key) but missing")
            }
            guard event.key == key, event.streamVersion == indexedVersion else {
                throw EventStoreError.corruptRecord(
                    position: position, reason: "indexed as \(key) v\(indexedVersion) but holds \(event.key) v\(event.streamVersion)")
            }
            result.append(event)
            return result.count < limit
        }
        return result
    }

    /// Up to `limit` events from `position` in `direction`, read by `txn`.
    func events(from position: UInt64, direction: LMDBDirection, limit: Int, in txn: ReadTransaction) throws -> [RecordedEvent] {
        var result: [RecordedEvent] = []
        guard limit > 0 else { return result }
        try txn.forEachRaw(events, from: BigEndianUInt64.encode(position), direction: direction, prefix: nil) { key, value in
            let position = try BigEndianUInt64.decode(key)
            result.append(try EventRecord.decode(value, key: position))
            return result.count < limit
        }
        return result
    }
}
