import DemoHistory
import Foundation
import Projections
import ReadingEvents
import TestSupport
import Testing
@_spi(RawLog) @testable import EventStoreLMDB

/// Stores written before replicas (format 1: no origins in the records, no sync tables) and
/// before binary stream keys (format 2: every record, `streams` and `streamIndex` name streams
/// by their text) are migrated when opened writable, and refused with a message naming the
/// format when read-only.
@Suite struct FormatMigrationTests {
    typealias F = Facade

    /// Writes `history` the way a format-1 build did: raw records without origins (no sync tables,
    /// no views), in the record layout of formats 1 and 2, and marks the log format 1.
    static func makeFormatOneStore(at url: URL, _ history: [EventEnvelope]) throws {
        let log = try EventLog.open(at: url)
        let parts = history.map { envelope -> StreamAppend in
            var plain = envelope
            plain.origin = nil
            return StreamAppend(key: StreamKey(envelope.stream), expectedVersion: .any,
                                events: [NewEvent(eventID: envelope.eventID.uuid, payload: BinaryEventCodec.encode(plain))])
        }
        try log.append(parts)
        try rewriteInLegacyLayout(log, format: 1)
    }

    /// Rewrites a log of the current format the way builds of formats 1 and 2 laid it out: every
    /// record in record format 1 (the stream's text after a 2-byte length), the hash chain and
    /// checksums recomputed, `streams` keyed by the text and `streamIndex` by the text, 0x00 and
    /// the big-endian version; then marks the log `format`.
    static func rewriteInLegacyLayout(_ log: EventLog, format: UInt32) throws {
        try log.environment.write { txn in
            let records = try log.events(from: 1, limit: Int(try log.lastPosition(in: txn)), in: txn)
            try txn.removeAll(log.streamIndex)
            try txn.removeAll(log.streams)
            var head = EventRecord.zeroHash
            var versions: [String: UInt64] = [:]
            for record in records {
                let bytes = EventRecord.encodeLegacy(
                    position: record.position, streamVersion: record.streamVersion, eventID: record.eventID,
                    stream: record.stream, payload: record.payload, prevHash: head)
                try txn.putRaw(log.events, BigEndianUInt64.encode(record.position), bytes, flags: [])
                try txn.putRaw(log.streamIndex, Array(record.stream.utf8) + [0] + BigEndianUInt64.encode(record.streamVersion),
                               BigEndianUInt64.encode(record.position), flags: .noOverwrite)
                versions[record.stream] = record.streamVersion
                head = EventRecord.hash(bytes)
            }
            for (stream, version) in versions {
                try txn.putRaw(log.streams, Array(stream.utf8), BigEndianUInt64.encode(version), flags: [])
            }
            if !records.isEmpty { try txn.put(log.meta, "head", head) }
            try txn.put(log.meta, "format", BigEndianUInt32.encode(format))
        }
    }

    /// Writes `history` the way a format-2 build did: a store made by this build (origins, sync
    /// tables, views), then its log rewritten in the layout of format 2 (``rewriteInLegacyLayout(_:format:)``).
    /// Returns what the store answered before the rewrite: its view digest, the audit trail of
    /// every reader and of one book, and its records.
    static func makeFormatTwoStore(at url: URL, _ history: [EventEnvelope]) throws
        -> (digest: String, trails: [[EventEnvelope]], bookTrail: [EventEnvelope], records: [RecordedEvent]) {
        let before: (String, [[EventEnvelope]], [EventEnvelope], [RecordedEvent])
        do {
            let store = try ReadingStore.open(at: url)
            _ = try F.appendInChunks(store, history)
            let readers = try store.readers()
            let books = history.compactMap { envelope -> (ReaderID, BookID)? in
                guard case .book(let reader, let book) = envelope.stream else { return nil }
                return (reader, book)
            }
            guard let (reader, bookID) = books.first else {
                throw EventStoreError.invalidArgument(field: "history", detail: "has no book events")
            }
            before = (try store.viewDigest(), try readers.map { try store.auditTrail(reader: $0) },
                      try store.auditTrail(reader: reader, book: bookID), try store.log.read())
        }
        let log = try EventLog.open(at: url)
        try rewriteInLegacyLayout(log, format: 2)
        return before
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

    @Test func aFormatTwoStoreIsMigratedAtOpenToBinaryStreamKeysKeepingItsViewsAndAuditTrail() throws {
        try withTempDirectory { dir in
            let url = dir.child("two")
            let history = F.history(readers: 2, days: 60, seed: 21)
            let before = try Self.makeFormatTwoStore(at: url, history)
            // The fabricated store is marked format 2: a raw open refuses it, naming its format.
            #expect(throws: EventStoreError.formatNeedsMigration(found: 2, current: EventLog.formatVersion)) {
                _ = try EventLog.open(at: url)
            }

            let store = try ReadingStore.open(at: url)
            let format = try store.log.environment.read { try $0.get(store.log.meta, "format") }
            #expect(format == BigEndianUInt32.encode(EventLog.formatVersion))
            // The same records (positions, IDs, streams, versions, payloads with their origins); only
            // their bytes and so the hash chain changed, and verify finds nothing wrong.
            let records = try store.log.read()
            #expect(records.count == history.count)
            #expect(records.map(\.position) == before.records.map(\.position))
            #expect(records.map(\.eventID) == before.records.map(\.eventID))
            #expect(records.map(\.key) == before.records.map(\.key))
            #expect(records.map(\.streamVersion) == before.records.map(\.streamVersion))
            #expect(records.map(\.payload) == before.records.map(\.payload))
            #expect(records.allSatisfy { $0.key.streamID != nil })
            let report = try store.log.verify()
            #expect(report.isIntact, "\(report.faults.prefix(3))")
            #expect(report.recordCount == UInt64(history.count))
            // Every stored stream key is binary (33 bytes), in the records and in `streamIndex`; the
            // `streams` table is empty (format 4: a stream's version is its last `streamIndex` key).
            try store.log.environment.read { txn in
                try txn.forEachRaw(store.log.events, from: nil, direction: .forward, prefix: nil) { _, value in
                    #expect(value[0] == 2 && [1, 2].contains(value[53]))
                    return true
                }
                try txn.forEachRaw(store.log.streamIndex, from: nil, direction: .forward, prefix: nil) { key, _ in
                    #expect(key.count == 41)
                    return true
                }
                #expect(try txn.count(store.log.streams) == 0)
            }
            // Views, audit trails and the fresh fold are those of the store before it was rewritten.
            #expect(try store.viewDigest() == before.digest)
            #expect(try store.freshFoldDigest() == before.digest)
            #expect(try store.readers().map { try store.auditTrail(reader: $0) } == before.trails)
            let reader = before.bookTrail[0].reader
            guard case .book(_, let book) = before.bookTrail[0].stream else { Issue.record("not a book stream"); return }
            #expect(try store.auditTrail(reader: reader, book: book) == before.bookTrail)
            // Streams and their versions are found by their binary keys: a command continues the
            // book's stream after its migrated events.
            let version = try store.log.streamVersion(of: StreamKey(.book(reader: reader, book: book)))
            #expect(version == UInt64(before.bookTrail.count))
            let stored = try store.execute(ReaderCommand.updateProfile(nickname: "after", imageFileName: nil, theme: nil),
                                           context: F.context(reader, "2026-01-01T09:00:00+09:00"))
            #expect(stored.first?.position == UInt64(history.count) + 1)
            #expect(try store.log.verify().isIntact)
        }
    }

    @Test func aFormatTwoStoreOpenedReadOnlyIsRefusedNamingItsFormatAndNothingIsWritten() throws {
        try withTempDirectory { dir in
            let url = dir.child("two")
            _ = try Self.makeFormatTwoStore(at: url, F.history(readers: 1, days: 10, seed: 22))
            let before = try snapshot(of: url)["data.mdb"]
            #expect(throws: EventStoreError.formatNeedsMigration(found: 2, current: EventLog.formatVersion)) {
                _ = try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(readOnly: true))
            }
            #expect(throws: EventStoreError.formatNeedsMigration(found: 2, current: EventLog.formatVersion)) {
                _ = try EventLog.open(at: url, options: LMDBEnvironmentOptions(readOnly: true))
            }
            #expect(try snapshot(of: url)["data.mdb"] == before)
            let message = EventStoreError.formatNeedsMigration(found: 2, current: 3).description
            #expect(message.contains("store format 2") && message.contains("format 3") && message.contains("binary stream keys")
                    && message.contains("writable"))
        }
    }
}
