import Foundation
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

/// Issue 22: ordinary mistakes (the same export imported on two devices, a restored backup or a
/// copied store, a bad record, an import file naming this store) never stop replication.
@Suite struct SyncNeverStallsTests {
    typealias F = Facade

    /// The same rows of an export (deterministic event IDs, as ReadingImport makes them), imported
    /// at `importedAt`: a book of 300 pages, page 120 on March 5, a rating of 4.
    static func export(_ d: Devices, importedAt: String) throws -> [EventEnvelope] {
        func row(_ id: String, _ time: String, _ event: ReadingEvent) throws -> EventEnvelope {
            let context = CommandContext(reader: d.reader, occurredAt: F.at(time), timeZone: "Asia/Seoul",
                                         recordedAt: F.at(importedAt), commandID: EventID(UUID(uuidString: id)!))
            return try context.envelopes(for: [event])[0]
        }
        return [
            try row("00000000-0000-4000-8000-00000000E001", "2025-03-01T09:00:00+09:00",
                    .bookAdded(BookAdded(book: d.book, metadata: Devices.metadata, status: .reading))),
            try row("00000000-0000-4000-8000-00000000E002", "2025-03-05T21:00:00+09:00",
                    .pagesRead(PagesRead(book: d.book, position: 120))),
            try row("00000000-0000-4000-8000-00000000E003", "2025-03-05T21:30:00+09:00",
                    .ratingSet(RatingSet(book: d.book, rating: try Rating(stars: 4)))),
        ]
    }

    /// Case 1: a phone imports the export at 09:00 and reads on (page 150 at 10:00); a tablet
    /// imports the same export at 11:00 and rates the book 5. Before the identity rule, every sync
    /// failed with "event ID is already held ... with other content or another origin" and neither
    /// new event ever crossed. Now the tablet keeps its copies as aliases of the phone's, the
    /// phone's copies (09:00) are the canonical ones on both, so the page record of 10:00 sorts
    /// after the book it reads in on both devices: position 150, rating 5, identical views. A third
    /// store synced with each in turn converges too.
    @Test func theSameExportImportedOnTwoDevicesConverges() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            let c = try ReadingStore.open(at: dir.child("c"))
            #expect(try d.a.importHistory(try Self.export(d, importedAt: "2025-03-10T09:00:00+09:00")).added == 3)
            try d.run(d.a, .recordPages(position: 150), "2025-03-10T10:00:00+09:00")
            #expect(try d.b.importHistory(try Self.export(d, importedAt: "2025-03-10T11:00:00+09:00")).added == 3)
            try d.run(d.b, .setRating(stars: 5), "2025-03-10T11:30:00+09:00")
            // Through the third store first (tablet -> c -> phone), then directly, in both orders.
            try Devices.deliver(from: d.b, to: c)
            try Devices.deliver(from: c, to: d.a)
            try Devices.deliver(from: d.a, to: c)
            try d.sync()
            try Devices.deliver(from: c, to: d.b)
            try d.sync()
            try Devices.deliver(from: d.a, to: c)
            try Devices.deliver(from: d.b, to: c)
            try Devices.expectConverged([d.a, d.b, c])
            for store in [d.a, d.b, c] {
                // One record per fact: the three imported events, the page record and the rating.
                #expect(try store.log.lastPosition() == 5)
                let view = try #require(try d.view(store))
                #expect(view.position == 150 && view.rating?.stars == 5)
                // The canonical copies are the phone's (stamped at 09:00, before the tablet's 11:00).
                let imported = try store.auditTrail(reader: d.reader, book: d.book).filter { $0.recordedAt == F.at("2025-03-10T09:00:00+09:00") }
                #expect(imported.count == 3 && imported.allSatisfy { $0.origin?.replica == Devices.replicaA })
                #expect(try store.quarantine().isEmpty)
            }
            // Nothing more to send either way.
            #expect(try d.sync() == 0)
            #expect(try d.a.changes(since: try d.b.versionVector()).isEmpty && d.b.changes(since: try d.a.versionVector()).isEmpty)
        }
    }

    /// Case 2: `backup` (mdb_env_copy2) and a file copy of a store get a new replica ID at their
    /// first writable open, so each keeps writing under its own sequence numbers; a third store
    /// receives every device's new events (before: the copy's events never reached it, since its
    /// vector already claimed those sequence numbers of the original).
    @Test func aBackupAndAFileCopyContinueAsNewReplicas() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.a, .addBook(Devices.metadata, status: .reading), "2025-03-03T08:00:00+09:00")
            try d.run(d.a, .recordPages(position: 10), "2025-03-03T21:00:00+09:00")
            _ = try d.a.log.backup(to: dir.child("restored"))
            try FileManager.default.copyItem(at: dir.child("a"), to: dir.child("copied"))
            let restored = try ReadingStore.open(at: dir.child("restored"))
            let copied = try ReadingStore.open(at: dir.child("copied"))
            #expect(Set([d.a.replica, restored.replica, copied.replica]).count == 3)
            // Each keeps what it held of the original.
            #expect(try restored.versionVector()[Devices.replicaA] == 2 && copied.versionVector()[Devices.replicaA] == 2)
            try d.run(d.a, .recordPages(position: 30), "2025-03-04T21:00:00+09:00")
            try d.run(restored, .collectSentence(SentenceID(), text: "복원된 문장", page: 5), "2025-03-04T22:00:00+09:00")
            try d.run(copied, .like, "2025-03-04T23:00:00+09:00")
            for store in [d.a, restored, copied] {
                try Devices.deliver(from: store, to: d.b)
            }
            for store in [d.a, restored, copied] {
                try Devices.deliver(from: d.b, to: store)
            }
            try Devices.expectConverged([d.a, restored, copied, d.b])
            let view = try #require(try d.view(d.b))
            #expect(view.position == 30 && view.sentences.count == 1 && view.liked)
            #expect(try d.b.log.lastPosition() == 5)
        }
    }

    /// Case 4: lines of an import that carry an origin keep the value rules with the book's page
    /// count (page 100000 of a 300-page book is refused, nothing written), and none may name the
    /// importing store's own replica with a sequence it never issued.
    @Test func importedLinesWithOriginsKeepTheRulesAndCannotNameThisStore() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.a, .addBook(Devices.metadata, status: .reading), "2025-03-03T08:00:00+09:00")
            try d.sync()
            try d.run(d.b, .recordPages(position: 100), "2025-03-03T21:00:00+09:00")
            let line = try #require(try d.b.changes(since: try d.a.versionVector()).first)
            var beyond = line
            beyond.event = .pagesRead(PagesRead(book: d.book, position: 100_000))
            let last = try d.a.log.lastPosition(), vector = try d.a.versionVector()
            let tooFar = #expect(throws: MergeRejection.self) { try d.a.importHistory([beyond]) }
            #expect(tooFar?.field == "position" && tooFar?.rule == .outOfRange, "\(String(describing: tooFar))")
            var mine = line
            mine.eventID = EventID()
            mine.origin = EventOrigin(stamp: line.origin!.stamp, replica: d.a.replica, sequence: 7)
            let own = #expect(throws: MergeRejection.self) { try d.a.importHistory([mine]) }
            #expect(own?.field == "origin.replica", "\(String(describing: own))")
            #expect(try d.a.log.lastPosition() == last && d.a.versionVector() == vector)
            // The line as the other store wrote it imports.
            #expect(try d.a.importHistory([line]).added == 1)
        }
    }

    /// Lines with origins keep the batch's goal rule too: a `GoalChanged` whose target is before
    /// the start of the goal set earlier in the file is refused (nothing written), as it is for
    /// lines without origins (`RecordedBatch.check`) and for `changeGoal`. Before the batch facts
    /// were one type, the replicated path checked page counts only and imported it.
    @Test func importedLinesWithOriginsKeepTheGoalRuleOfTheBatch() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.b, .addBook(Devices.metadata, status: .reading), "2025-03-01T08:00:00+09:00")
            try d.run(d.b, .setGoal(startDate: try LocalDate(iso: "2025-03-10"), targetDate: try LocalDate(iso: "2025-04-10"), theme: nil),
                      "2025-03-01T08:10:00+09:00")
            try d.run(d.b, .changeGoal(targetDate: try LocalDate(iso: "2025-04-20"), theme: nil), "2025-03-01T08:20:00+09:00")
            var lines = try d.b.changes(since: VersionVector())
            #expect(lines.count == 3)
            guard case .goalChanged(var change) = lines[2].event else { Issue.record("\(lines[2].event)"); return }
            change.targetDate = try LocalDate(iso: "2025-03-01")
            lines[2].event = .goalChanged(change)
            let early = #expect(throws: MergeRejection.self) { try d.a.importHistory(lines) }
            #expect(early?.field == "targetDate" && early?.rule == .targetBeforeStart, "\(String(describing: early))")
            #expect(try d.a.log.lastPosition() == 0)
        }
    }

    /// A page holding two copies of an event the store holds under both origins (its record and an
    /// alias: what a server's page or a peer's changes carry once two devices imported the same
    /// rows) is held, not quarantined. Found by the server's randomized convergence test: the
    /// second copy was refused as "sequence already names another event" although it named this one.
    @Test func aBatchRepeatingHeldCopiesOfAnEventIsHeld() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            #expect(try d.a.importHistory(try Self.export(d, importedAt: "2025-03-10T09:00:00+09:00")).added == 3)
            #expect(try d.b.importHistory(try Self.export(d, importedAt: "2025-03-10T11:00:00+09:00")).added == 3)
            try d.sync()
            let copies = try d.a.changes(since: VersionVector(), limit: .max) + d.b.changes(since: VersionVector(), limit: .max)
            #expect(copies.count == 12 && Set(copies.map(\.eventID)).count == 3)
            for store in [d.a, d.b] {
                let result = try store.merge(copies)
                #expect(result.quarantined == 0 && result.appended == 0 && result.alreadyHeld == 12, "\(result)")
                #expect(try store.quarantine().isEmpty)
            }
            try Devices.expectConverged([d.a, d.b])
        }
    }

    /// Quarantined events can be listed and retried; a retry that still refuses keeps them.
    @Test func theQuarantineIsListedAndRetried() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.b, .addBook(Devices.metadata, status: .reading), "2025-03-03T08:00:00+09:00")
            var batch = try d.b.changes(since: VersionVector())
            batch[0].origin?.replica = .provisional
            #expect(try d.a.merge(batch).quarantined == 1)
            let retried = try d.a.retryQuarantine()
            #expect(retried.quarantined == 1 && retried.appended == 0)
            #expect(try d.a.quarantine().map(\.eventID) == [batch[0].eventID])
        }
    }

    /// Case 6: `verifyReplication` (what `replay verify` runs) finds nothing on stores that hold
    /// aliases and a quarantine, and names a version vector that claims more than the log holds,
    /// an origins entry that names nothing, and a clock behind the stamps (before, `verify` said OK
    /// and sync never delivered).
    @Test func verifyChecksTheReplicationTablesAgainstTheLog() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.a.importHistory(try Self.export(d, importedAt: "2025-03-10T09:00:00+09:00"))
            try d.b.importHistory(try Self.export(d, importedAt: "2025-03-10T11:00:00+09:00"))
            try d.sync()
            var bad = try d.b.changes(since: VersionVector())
            bad[0].origin?.replica = .provisional
            try d.a.merge(bad)
            #expect(try d.a.verifyReplication() == [] && d.b.verifyReplication() == [])
            try d.a.log.environment.write { txn in
                try txn.put(d.a.sync.vector, Devices.replicaB, 9)
                try txn.put(d.a.sync.origins, (Devices.replicaB, 40), (77, 1))
                try txn.put(d.a.sync.clock, "clock", 1)
            }
            let faults = try d.a.verifyReplication().map(\.detail)
            #expect(faults.contains { $0.contains("head of replica \(Devices.replicaB) is 9") }, "\(faults)")
            #expect(faults.contains { $0.contains("a position the log does not hold") }, "\(faults)")
            // The clock is the later of the stored one and this replica's latest stamp (format 4):
            // B's later stamps are ahead of both now.
            #expect(faults.contains { $0.contains("is behind the latest stamp held") }, "\(faults)")
        }
    }
}
