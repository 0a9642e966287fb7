import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents
import ReadingImport
import Testing

/// Issue 36, findings 4 and 5: two devices importing different exports of the same Goodreads
/// account (a newer export with one page count changed, or another zone) converge with identical
/// views and nothing lost; a forged copy of held facts (same event IDs and facts, a made-up replica,
/// tiny stamps) never changes the views the held copies defined.
@Suite struct ImportOnTwoDevicesTests {
    static let phoneReplica = ReplicaID(UUID(uuidString: "F0000000-0000-4000-8000-000000000001")!)
    static let tabletReplica = ReplicaID(UUID(uuidString: "10000000-0000-4000-8000-000000000002")!)

    /// Syncs both ways until nothing moves; returns every merge's quarantined count.
    static func sync(_ a: ReadingStore, _ b: ReadingStore) throws -> Int {
        var quarantined = 0
        for _ in 0..<4 {
            quarantined += try b.merge(try a.changes(since: try b.versionVector(), limit: .max)).quarantined
            quarantined += try a.merge(try b.changes(since: try a.versionVector(), limit: .max)).quarantined
        }
        return quarantined
    }

    static func finished(_ store: ReadingStore) throws -> [String] {
        try store.withViews { try $0.bookshelf(reader: Fixtures.reader, showing: .finished) }.items.map(\.metadata.title).sorted()
    }

    /// Imports `phoneText` on a phone and `tabletText` (one day later) on a tablet, syncs both ways
    /// and checks the stores converged with nothing lost or set aside.
    static func importOnTwoDevicesAndSync(_ dir: ImportTempDirectory, phoneText: String, tabletText: String,
                                          tabletZone: ZoneID = Fixtures.seoul,
                                          sourceLocation: SourceLocation = #_sourceLocation) throws -> (phone: ReadingStore, tablet: ReadingStore) {
        let phone = try ReadingStore.open(at: dir.child("phone"), replica: phoneReplica)
        let tablet = try ReadingStore.open(at: dir.child("tablet"), replica: tabletReplica)
        try phone.importHistory(try HistoryImport.read(.goodreads, csv: phoneText, options: Fixtures.options()).envelopes)
        var later = Fixtures.options(zone: tabletZone)
        later.importedAt = Timestamp(iso8601: "2026-11-24T00:00:00Z")!
        try tablet.importHistory(try HistoryImport.read(.goodreads, csv: tabletText, options: later).envelopes)
        let phoneShelf = try finished(phone), tabletShelf = try finished(tablet)
        #expect(!phoneShelf.isEmpty && phoneShelf == tabletShelf, sourceLocation: sourceLocation)
        let quarantined = try sync(phone, tablet)
        #expect(quarantined == 0, "a merge set \(quarantined) records aside", sourceLocation: sourceLocation)
        #expect(try phone.quarantine().isEmpty && tablet.quarantine().isEmpty, sourceLocation: sourceLocation)
        #expect(try phone.viewDigest() == tablet.viewDigest(), sourceLocation: sourceLocation)
        // Nothing lost: every finished book stays on both bookshelves.
        #expect(try finished(phone) == phoneShelf, sourceLocation: sourceLocation)
        #expect(try finished(tablet) == phoneShelf, sourceLocation: sourceLocation)
        // The views are the fold of the events on both.
        #expect(try phone.rebuild().digest == phone.viewDigest(), sourceLocation: sourceLocation)
        #expect(try tablet.rebuild().digest == tablet.viewDigest(), sourceLocation: sourceLocation)
        return (phone, tablet)
    }

    /// Before: every record of the changed row was quarantined on both sides ("the event ID is
    /// already held ... with another fact"), the views differed, and the tablet's bookshelf lost
    /// its finished book (the phone's copy of the finish sorted before the tablet's own BookAdded).
    @Test func aNewerExportWithOnePageCountChangedConvergesAndTheNewerRowWins() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let text = try String(contentsOf: Fixtures.url("goodreads-24.csv"), encoding: .utf8)
        let newer = text.replacingOccurrences(of: "Mass Market Paperback,304,", with: "Mass Market Paperback,310,")
        #expect(newer != text)
        let (phone, tablet) = try Self.importOnTwoDevicesAndSync(dir, phoneText: text, tabletText: newer)
        for store in [phone, tablet] {
            let shelf = try store.withViews { try $0.bookshelf(reader: Fixtures.reader, showing: .finished) }
            let book = try #require(shelf.items.first { $0.metadata.title == "The Left Hand of Darkness" })
            // The row imported last (the newer export) wins.
            #expect(book.metadata.pageCount == 310)
        }
    }

    /// The same export imported with another `--zone` on the tablet: every event of it is another
    /// fact under the same ID. Before: all quarantined, the views never converged.
    @Test func theSameExportInAnotherZoneConverges() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let text = try String(contentsOf: Fixtures.url("goodreads-24.csv"), encoding: .utf8)
        let (phone, _) = try Self.importOnTwoDevicesAndSync(dir, phoneText: text, tabletText: text, tabletZone: try ZoneID("America/New_York"))
        // The row imported last wins: the events are in the tablet's zone.
        let zones = Set(try phone.events(from: 1, limit: 1_000).map(\.timeZone))
        #expect(zones == [try ZoneID("America/New_York")], "\(zones)")
    }

    /// Finding 5: a forged copy of every held event (same IDs and facts, a made-up replica, tiny
    /// stamps in the reverse order) imports as nothing new and must leave the views alone, here and
    /// on a replica it is synced to. Before: the copies became canonical and reordered the history
    /// (the goal change before its goal, the pages before their book).
    @Test func aForgedCopyOfHeldFactsChangesNoView() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let phone = try ReadingStore.open(at: dir.child("phone"), replica: Self.phoneReplica)
        let tablet = try ReadingStore.open(at: dir.child("tablet"), replica: Self.tabletReplica)
        let reader = Fixtures.reader, book = BookID()
        func at(_ text: String) -> CommandContext {
            CommandContext(reader: reader, occurredAt: Timestamp(iso8601: text)!, timeZone: "Asia/Seoul")
        }
        try phone.execute(.addBook(BookMetadata(title: "Piranesi", authors: "Susanna Clarke", pageCount: 247), status: .reading),
                          book: book, context: at("2025-03-01T08:00:00Z"))
        try phone.execute(.setGoal(startDate: try LocalDate(iso: "2025-03-01"), targetDate: try LocalDate(iso: "2025-03-10"), theme: nil),
                          book: book, context: at("2025-03-01T08:10:00Z"))
        try phone.execute(.changeGoal(targetDate: try LocalDate(iso: "2025-03-20"), theme: nil), book: book, context: at("2025-03-02T08:00:00Z"))
        try phone.execute(.recordPages(position: 120), book: book, context: at("2025-03-03T08:00:00Z"))
        try phone.execute(.recordPages(position: 242), book: book, context: at("2025-03-04T08:00:00Z"))
        #expect(try Self.sync(phone, tablet) == 0)
        let digest = try phone.viewDigest()
        let view = try #require(try phone.withViews { try $0.bookView(reader: reader, book: book) })
        #expect(view.position == 242)
        let held = try phone.changes(since: VersionVector(), limit: .max)
        #expect(held.count == 5)
        let forger = ReplicaID(UUID(uuidString: "00000000-0000-4000-8000-00000000F0F0")!)
        // Tiny stamps (the finding's forgery) break the stamp rule: refused at the door, whole.
        let tiny = held.enumerated().map { index, envelope in
            var copy = envelope
            copy.origin = EventOrigin(stamp: UInt64(held.count - index), replica: forger, sequence: UInt64(index + 1))
            return copy
        }
        let refusal = #expect(throws: MergeRejection.self) { try phone.importHistory(tiny) }
        #expect(refusal?.field == "origin.stamp", "\(String(describing: refusal))")
        #expect(try phone.viewDigest() == digest)
        // Within the stamp rule (each stamp at most a day after its recordedAt) but in reversed
        // order: the placement rule keeps every event where its first copy put it.
        let forged = held.enumerated().map { index, envelope in
            var copy = envelope
            let lead = UInt64(held.count - index) * 1_000_000
            copy.origin = EventOrigin(stamp: UInt64(envelope.recordedAt.microseconds) + lead, replica: forger, sequence: UInt64(index + 1))
            return copy
        }
        let outcome = try phone.importHistory(forged)
        #expect(outcome.added == 0)
        #expect(try phone.viewDigest() == digest)
        #expect(try phone.withViews { try $0.bookView(reader: reader, book: book) }?.position == 242)
        // Sync carries the copies (aliases) to the tablet: its views stay as they were too.
        #expect(try Self.sync(phone, tablet) == 0)
        #expect(try tablet.viewDigest() == digest && phone.viewDigest() == digest)
        #expect(try phone.rebuild().digest == digest && tablet.rebuild().digest == digest)
        // A store that meets the forged copies first and the real ones later shows the same views.
        let third = try ReadingStore.open(at: dir.child("third"))
        try third.merge(forged)
        try third.merge(held)
        #expect(try third.viewDigest() == digest)
    }
}
