import DemoHistory
import Foundation
import Projections
import ReadingEvents
import TestSupport
import Testing
@testable import EventStoreLMDB

/// Stores written before replicas (format 1: no origins in the records, no sync tables) are
/// migrated when opened writable, and refused with a message naming the format when read-only.
@Suite struct FormatMigrationTests {
    typealias F = Facade

    /// Writes `history` the way a format-1 build did: raw records without origins, then marks the
    /// log format 1 and drops what format 2 adds (the sync tables, the views version).
    static func makeFormatOneStore(at url: URL, _ history: [EventEnvelope]) throws {
        let log = try EventLog.open(at: url)
        var versions: [StreamID: UInt64] = [:]
        let parts = history.map { envelope -> StreamAppend in
            var plain = envelope
            plain.origin = nil
            versions[envelope.stream, default: 0] += 1
            return StreamAppend(stream: envelope.stream.description, expectedVersion: .any,
                                events: [NewEvent(eventID: envelope.eventID.uuid, payload: BinaryEventCodec.encode(plain))])
        }
        try log.append(parts)
        try log.environment.write { txn in
            try txn.put(log.meta, "format", BigEndianUInt32.encode(1))
        }
    }

    @Test func aFormatOneStoreIsMigratedAtOpenKeepingItsOrderAndItsViews() throws {
        try withTempDirectory { dir in
            let url = dir.child("old")
            let history = F.history(readers: 2, days: 60, seed: 11)
            try Self.makeFormatOneStore(at: url, history)
            // The same events folded in log order by the reference fold (no origins: arrival order).
            var reference = InMemoryViewStore()
            try ReadingProjector().fold(history.map { var e = $0; e.origin = nil; return e }, into: &reference)

            let store = try ReadingStore.open(at: url)
            let format = try store.log.environment.read { try $0.get(store.log.meta, "format") }
            #expect(format == BigEndianUInt32.encode(EventLog.formatVersion))
            let events = try store.events()
            #expect(events.count == history.count)
            // Every record now carries its origin: this replica, sequence = position, stamp 0, so the
            // canonical order is the old log order.
            #expect(events.allSatisfy { $0.origin == EventOrigin(stamp: 0, replica: store.replica, sequence: $0.position) })
            #expect(events.map(\.eventID) == history.map(\.eventID))
            #expect(try store.versionVector() == VersionVector([store.replica: UInt64(history.count)]))
            // The hash chain was recomputed: verify finds nothing wrong.
            #expect(try store.log.verify().isIntact)
            // The views were rebuilt with this build's rules and equal the reference fold.
            #expect(try store.viewDigest() == ViewDigest.of(reference))
            #expect(try store.viewDigest() == store.freshFoldDigest())
            // A new command continues the replica's sequence after the migrated events.
            let reader = history[0].reader
            let stored = try store.execute(ReaderCommand.updateProfile(nickname: "after", imageFileName: nil, theme: nil),
                                           context: F.context(reader, "2026-01-01T09:00:00+09:00"))
            #expect(stored.first?.origin?.sequence == UInt64(history.count) + 1)
            #expect(stored.first?.origin?.replica == store.replica)
            #expect(try store.changes(since: VersionVector([store.replica: UInt64(history.count)])).map(\.eventID) == stored.map(\.eventID))
        }
    }

    @Test func aFormatOneStoreOpenedReadOnlyIsRefusedNamingItsFormatAndNothingIsWritten() throws {
        try withTempDirectory { dir in
            let url = dir.child("old")
            try Self.makeFormatOneStore(at: url, F.history(readers: 1, days: 10, seed: 12))
            // The data file is untouched (lock.mdb records readers, so it is left out).
            let before = try snapshot(of: url)["data.mdb"]
            #expect(throws: EventStoreError.formatNeedsMigration(found: 1, current: EventLog.formatVersion)) {
                _ = try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(readOnly: true))
            }
            #expect(try snapshot(of: url)["data.mdb"] == before)
            let message = EventStoreError.formatNeedsMigration(found: 1, current: 2).description
            #expect(message.contains("store format 1") && message.contains("format 2") && message.contains("writable"))
        }
    }
}
