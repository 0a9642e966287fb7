import Foundation
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

/// Issue 36: one checker for every rule. A replica's lines in an import keep the rules a line
/// without an origin keeps, against the store's state and across files (goal starts, page counts,
/// metadata corrections); an origin names one fact for good.
@Suite struct OneCheckerTests {
    typealias F = Facade

    /// A page record of 99,999 on a book whose `BookAdded` (247 pages) comes in a later file:
    /// before, the first file imported (the page count was unknown), and the book then held page
    /// 99,999 of 247.
    @Test func aReplicaLineOfABookNotAddedYetIsRefusedAcrossFiles() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.b, .addBook(BookMetadata(title: "Piranesi", authors: "Susanna Clarke", pageCount: 247), status: .reading),
                      "2025-03-01T08:00:00+09:00")
            try d.run(d.b, .recordPages(position: 100), "2025-03-02T08:00:00+09:00")
            let lines = try d.b.changes(since: VersionVector())
            var pages = lines[1]
            pages.event = .pagesRead(PagesRead(book: d.book, position: 99_999))
            let refused = #expect(throws: MergeRejection.self) { try d.a.importHistory([pages]) }
            #expect(refused?.field == "book" && refused?.rule == .bookNotAdded, "\(String(describing: refused))")
            #expect(try d.a.log.lastPosition() == 0)
            // In order, the files import.
            #expect(try d.a.importHistory([lines[0]]).added == 1)
            #expect(try d.a.importHistory([lines[1]]).added == 1)
        }
    }

    /// A replica's `GoalChanged` whose target is before the start of the goal the store holds
    /// (set in an earlier sync): before, only a goal set earlier in the same file was checked.
    @Test func aReplicaGoalChangeBeforeTheStoredGoalStartIsRefused() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.b, .addBook(Devices.metadata, status: .reading), "2025-03-01T08:00:00+09:00")
            try d.run(d.b, .setGoal(startDate: F.day("2025-03-10"), targetDate: F.day("2025-04-10"), theme: nil), "2025-03-01T08:10:00+09:00")
            try d.sync()
            try d.run(d.b, .changeGoal(targetDate: F.day("2025-04-20"), theme: nil), "2025-03-01T08:20:00+09:00")
            var line = try #require(try d.b.changes(since: try d.a.versionVector()).first)
            guard case .goalChanged(var change) = line.event else { Issue.record("\(line.event)"); return }
            change.targetDate = F.day("2025-03-01")
            line.event = .goalChanged(change)
            let last = try d.a.log.lastPosition()
            let early = #expect(throws: MergeRejection.self) { try d.a.importHistory([line]) }
            #expect(early?.field == "targetDate" && early?.rule == .targetBeforeStart, "\(String(describing: early))")
            #expect(try d.a.log.lastPosition() == last)
        }
    }

    /// A replica's `MetadataCorrected` whose page count is below the position the book reached in
    /// the store: a `correctMetadata` command is refused for it, the line was imported.
    @Test func aReplicaMetadataCorrectionBelowThePositionReachedIsRefused() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.b, .addBook(Devices.metadata, status: .reading), "2025-03-01T08:00:00+09:00")
            try d.run(d.b, .recordPages(position: 200), "2025-03-02T08:00:00+09:00")
            try d.sync()
            var smaller = Devices.metadata
            smaller.pageCount = 320
            try d.run(d.b, .correctMetadata(smaller), "2025-03-03T08:00:00+09:00")
            var line = try #require(try d.b.changes(since: try d.a.versionVector()).first)
            smaller.pageCount = 150
            line.event = .metadataCorrected(MetadataCorrected(book: d.book, metadata: smaller))
            let last = try d.a.log.lastPosition()
            let below = #expect(throws: MergeRejection.self) { try d.a.importHistory([line]) }
            #expect(below?.field == "metadata.pageCount" && below?.rule == .outOfRange, "\(String(describing: below))")
            #expect(try d.a.log.lastPosition() == last)
        }
    }

    /// An origin names one copy for good: an edited copy of a held event under its origin (the
    /// same event ID, replica and sequence with another stamp: it would claim another place in
    /// the canonical order) is set aside. Before, the merge counted it "already held" and nothing
    /// noticed; another fact under a held origin was, and is, set aside too.
    @Test func anEditedCopyUnderAHeldOriginIsRefused() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            try d.run(d.b, .addBook(Devices.metadata, status: .reading), "2025-03-01T08:00:00+09:00")
            try d.run(d.b, .recordPages(position: 50), "2025-03-02T08:00:00+09:00")
            try d.sync()
            let digest = try d.a.viewDigest()
            var restamped = try #require(try d.b.changes(since: VersionVector()).last)
            // Another stamp the stamp rule takes (a microsecond later), so only the origin rule refuses it.
            restamped.origin!.stamp += 1
            let result = try d.a.merge([restamped])
            #expect(result.quarantined == 1 && result.alreadyHeld == 0, "\(result)")
            #expect(try d.a.quarantine().first?.reason.hasPrefix("origin:") == true)
            var edited = try #require(try d.b.changes(since: VersionVector()).first)
            edited.event = .bookAdded(BookAdded(book: d.book, metadata: BookMetadata(title: "Other", authors: "X", pageCount: 300), status: .reading))
            #expect(try d.a.merge([edited]).quarantined == 1)
            #expect(try d.a.viewDigest() == digest && d.a.log.lastPosition() == 2)
        }
    }
}

@Suite struct MergeReadersTests {
    /// A pull keeps only the events of its reader and its partners: a record of a reader never
    /// paired (a server's mistake, a hostile server) is kept in the quarantine, never merged.
    /// Before, `merge` had no notion of the readers a device syncs, and took every reader's events.
    @Test func aPullKeepsOnlyTheReaderAndItsPartners() throws {
        try withTempDirectory { dir in
            let d = try Devices(dir)
            let partner = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-0000000000BB")!)
            let stranger = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-0000000000CC")!)
            for reader in [d.reader, partner, stranger] {
                try d.b.execute(.addBook(Devices.metadata, status: .reading), book: d.book,
                                context: Facade.context(reader, "2025-03-01T08:00:00+09:00"))
            }
            let lines = try d.b.changes(since: VersionVector())
            let result = try d.a.merge(lines, readers: [d.reader, partner])
            #expect(result.appended == 2 && result.quarantined == 1, "\(result)")
            #expect(try d.a.quarantine().map(\.envelope?.reader) == [stranger])
            #expect(try d.a.withViews { try $0.bookView(reader: stranger, book: d.book) } == nil)
            // The vector steps over the set-aside record: it is not sent again.
            #expect(try d.a.versionVector() == d.b.versionVector())
        }
    }
}
