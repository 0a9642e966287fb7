import Foundation
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

/// Issue 36, finding 2: one event stamped just before 2200-01-01 (an import line, a replica's
/// record) made the store's next own event stamped at the bound, which no decoder accepts, and
/// `verify`, `export`, `sync` failed for ever. A stamp is now tied to its `recordedAt`
/// (``EventOrigin/checkStamp(recordedAt:)``) at the door of every write path, and the local clock
/// never stamps what this build cannot decode.
@Suite struct StampBoundsTests {
    typealias F = Facade

    /// 2200-01-01T00:00:00Z in microseconds: the first stamp no decoder accepts
    /// (``EventOrigin/stampBound``; a literal here, so the test ran before the rule existed).
    static let bound: UInt64 = 7_258_118_400_000_000
    /// 2199-12-31T23:59:59.999999Z: the last stamp the decoders accept.
    static let lastDecodable = bound - 1
    /// A day in microseconds: how far a stamp may run ahead of its `recordedAt`
    /// (``EventOrigin/maxStampLead``).
    static let lead: UInt64 = 86_400_000_000

    /// Both stores hold a book and B has recorded pages: the line A lacks, as B exports it.
    static func setUp(_ d: Devices) throws -> EventEnvelope {
        try d.run(d.a, .addBook(Devices.metadata, status: .reading), "2025-03-03T08:00:00+09:00")
        try d.sync()
        try d.run(d.b, .recordPages(position: 100), "2025-03-03T21:00:00+09:00")
        return try #require(try d.b.changes(since: try d.a.versionVector()).first)
    }

    /// `store` still works: a new command, a log that verifies, every event decodes, and the new
    /// event's stamp is one a peer takes.
    static func expectWorking(_ d: Devices, _ store: ReadingStore, _ time: String, stars: Double,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let made = try #require(try d.run(store, .setRating(stars: stars), time), sourceLocation: sourceLocation)
        let origin = try #require(made.origin, sourceLocation: sourceLocation)
        #expect(origin.stamp < Self.bound - Self.lead, "stamp \(origin.stamp)", sourceLocation: sourceLocation)
        #expect(throws: Never.self, sourceLocation: sourceLocation) { try made.validateReplicated() }
        #expect(try store.verifyLog().isIntact, sourceLocation: sourceLocation)
        #expect(UInt64(try store.events().count) == (try store.log.lastPosition()), sourceLocation: sourceLocation)
        #expect(try store.verifyReplication().isEmpty, sourceLocation: sourceLocation)
    }

    /// A JSON Lines import of a line whose stamp is far from its `recordedAt` is refused, naming
    /// `origin.stamp` and the rule; nothing is written; the store keeps working, and the line as
    /// its replica wrote it imports. Before: the 2199 line was imported, the next command was
    /// stamped 2200-01-01 and every later read of the log failed to decode.
    @Test func aFarStampOnAnImportedLineIsRefusedAndTheStoreKeepsWorking() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            let line = try Self.setUp(d)
            let last = try d.a.log.lastPosition(), vector = try d.a.versionVector()
            for (stamp, words) in [(Self.lastDecodable, "more than a day"), (line.origin!.stamp + Self.lead + 1, "more than a day"),
                                   (1, "before"), (line.origin!.stamp - 1, "before")] {
                var far = line
                far.origin!.stamp = stamp
                // Through the JSON Lines codec, as `replay import` reads a file.
                let decoded = try JSONEventCodec.decode(JSONEventCodec.encodeLine(far))
                let refused = #expect(throws: MergeRejection.self) { try d.a.importHistory([decoded]) }
                #expect(refused?.field == "origin.stamp" && refused?.rule == .outOfRange, "\(String(describing: refused))")
                #expect(refused?.detail.contains(words) == true, "\(String(describing: refused))")
                #expect(try d.a.log.lastPosition() == last && d.a.versionVector() == vector)
            }
            try Self.expectWorking(d, d.a, "2025-03-04T09:00:00+09:00", stars: 4)
            #expect(try d.a.importHistory([line]).added == 1)
            try d.sync()
            try d.expectConverged()
            #expect(try d.a.quarantine().isEmpty && d.b.quarantine().isEmpty)
        }
    }

    /// A merged record with a far stamp goes to the quarantine with its reason and does not stop
    /// the merge; the receiver's clock does not follow it, and its next own events reach the
    /// other store. When the record's true copy arrives it is taken. Before: the far record was
    /// appended and both stores broke for good.
    @Test func aFarStampMergedFromAnotherStoreIsQuarantinedAndBothStoresKeepWorking() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            let line = try Self.setUp(d)
            var far = line
            far.origin!.stamp = Self.lastDecodable
            let other = try #require(try d.run(d.b, .like, "2025-03-03T22:00:00+09:00"))
            let result = try d.a.merge([far, other])
            #expect(result.quarantined == 1 && result.appended == 1, "\(result)")
            let kept = try d.a.quarantine()
            #expect(kept.count == 1 && kept[0].reason.hasPrefix("origin.stamp:") && kept[0].reason.contains("[rule: outOfRange]"), "\(kept)")
            try Self.expectWorking(d, d.a, "2025-03-04T09:00:00+09:00", stars: 4)
            // The true copy is taken; everything converges, nothing stays aside.
            try d.sync()
            #expect(try d.a.retryQuarantine().appended == 0)
            try d.expectConverged()
            try Self.expectWorking(d, d.b, "2025-03-04T10:00:00+09:00", stars: 2)
            try d.sync()
            try d.expectConverged()
        }
    }

    /// The local clock follows a stamp held from elsewhere (an event after another seen sorts
    /// after it) but never stamps what a receiver refuses: when the clock runs more than a day
    /// ahead of a new event's `recordedAt` (a peer's clock ahead, a back-dated `recordedAt`), the
    /// event is stored with `recordedAt` a day before its stamp, and every receiver takes it.
    @Test func theLocalClockNeverStampsWhatAReceiverRefuses() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            _ = try Self.setUp(d)
            // B's clock is far ahead: its event is recorded and stamped in December 2199.
            try d.run(d.b, .like, "2199-12-30T09:00:00+09:00")
            #expect(try Devices.deliver(from: d.b, to: d.a).appended == 2)
            let made = try #require(try d.run(d.a, .setRating(stars: 3), "2025-03-05T09:00:00+09:00"))
            let stamp = try #require(made.origin?.stamp)
            #expect(stamp > UInt64(F.at("2199-12-30T09:00:00+09:00").microseconds))
            #expect(made.recordedAt == Timestamp(microseconds: Int64(stamp - Self.lead)))
            #expect(made.occurredAt == F.at("2025-03-05T09:00:00+09:00"))
            // A back-dated command on B (recorded a week before B's own last stamp).
            try d.run(d.b, .recordPages(position: 120), "2025-03-04T21:00:00+09:00")
            try d.sync()
            #expect(try d.a.quarantine().isEmpty && d.b.quarantine().isEmpty)
            try d.expectConverged()
            for event in try d.a.events() {
                #expect(throws: Never.self) { try event.validateReplicated() }
            }
        }
    }
}

/// Issue 36, also found: `export --since-vector R:18446744073709551615` trapped on an overflow in
/// `changes(since:)` (the head + 1 of a peer claiming the last sequence there is).
@Suite struct VectorBoundsTests {
    @Test func aPeerVectorAtTheLargestSequenceLacksNothingOfThatReplica() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.a, .addBook(Devices.metadata, status: .reading), "2025-03-03T08:00:00+09:00")
            try d.run(d.a, .recordPages(position: 10), "2025-03-03T21:00:00+09:00")
            #expect(try d.a.changes(since: VersionVector([Devices.replicaA: .max])).isEmpty)
            #expect(try d.a.changes(since: VersionVector([Devices.replicaB: .max])).count == 2)
            #expect(throws: ValidationError.self) { try VersionVector(parsing: "\(Devices.replicaA):18446744073709551615") }
            #expect(try VersionVector(parsing: "\(Devices.replicaA):9223372036854775807")[Devices.replicaA] == UInt64(Int64.max))
        }
    }
}
