import Foundation
import LMDB
import ReadingEvents

/// What the store lets hosts and tools read of its log. The log itself is not public: every write
/// goes through the append pipeline (commands, imports, merges), so no event can skip its checks.
extension ReadingStore {
    /// The position of the last event in the log (0 for an empty store).
    public func lastPosition() throws -> UInt64 { try log.lastPosition() }

    /// Walks every record of the log and reports every fault (checksums, gaps, the hash chain,
    /// the indexes, the head); see ``EventLog/verify(chunkSize:progress:)``. Never throws for a
    /// damaged record: it reports it.
    public func verifyLog(progress: ((UInt64) -> Void)? = nil) throws -> VerificationReport {
        try log.verify(progress: progress)
    }

    /// Calls `body` with each stored record from `position` on, in log order, until it returns
    /// false (one short read transaction per chunk; `body` runs outside them). Read-only: an audit
    /// that must report an undecodable record rather than stop at it (decode with
    /// ``envelope(of:)``).
    public func forEachRecord(from position: UInt64 = 1, _ body: (RecordedEvent) throws -> Bool) throws {
        try log.forEachEvent(from: position, body)
    }

    /// Calls `body` with each event from `position` on, decoded, as its canonical copy (see
    /// ``events(from:limit:)``), in log order, until it returns false.
    ///
    /// - Throws: ``EventStoreError`` for a record that does not decode, or what `body` throws.
    public func forEachEvent(from position: UInt64 = 1, _ body: (EventEnvelope) throws -> Bool) throws {
        let placements = try log.environment.read { txn in try self.placements(txn) }
        try log.forEachEvent(from: position) { record in try body(placements.envelope(of: record)) }
    }

    /// The stored event with `id` (its canonical copy), or `nil`.
    public func event(withID id: EventID) throws -> EventEnvelope? {
        try log.environment.read { txn in
            guard let record = try log.event(withID: id.uuid, in: txn) else { return nil }
            return try placements(txn).envelope(of: record)
        }
    }

    /// Writes a consistent copy of the store to `destination` (see ``EventLog/backup(to:)``); the
    /// copy, once opened writable, continues under a new replica ID. Returns its size in bytes.
    @discardableResult
    public func backup(to destination: URL) throws -> Int { try log.backup(to: destination) }

    /// The LMDB environment underneath, for the benchmarks' raw-LMDB baselines only (reading the
    /// same bytes without the store): not API, since a write through it would skip every check.
    @_spi(Benchmarks) public var environment: LMDBEnvironment { log.environment }

    /// The size of the store's memory map in bytes (its largest possible data file).
    public var mapSize: Int { log.environment.mapSize }
}
