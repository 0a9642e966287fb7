import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents
import ReadingImport
import Testing

/// `ReadingStore.importHistory`: re-import adds nothing, a newer export adds only what is new.
@Suite struct ImportStoreTests {
    @Test func importingTwiceEqualsImportingOnce() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        try KOReaderFixture.standard(at: dir.child("k.sqlite3").path).close()
        let options = Fixtures.options()
        let results = [
            try HistoryImport.read(.goodreads, from: Fixtures.url("goodreads-24.csv"), options: options),
            try HistoryImport.read(.goodreads, from: Fixtures.url("goodreads-31.csv"), options: options),
            try HistoryImport.read(.storygraph, from: Fixtures.url("storygraph.csv"), options: options),
            try HistoryImport.read(.koreader, from: dir.child("k.sqlite3"), options: options),
        ]
        let store = try ReadingStore.open(at: dir.child("store"))
        var total = 0
        for result in results {
            let first = try store.importHistory(result.envelopes)
            #expect(try first.added == result.envelopes.count)
            total += first.added
        }
        let digest = try store.viewDigest(), last = try store.lastPosition()
        #expect(last == UInt64(total))
        for result in results {
            // Read again (a new ImportResult, a later importedAt) and import again: nothing is added.
            var options = options; options.importedAt = Timestamp(iso8601: "2027-01-01T00:00:00Z")!
            let again = result.report.source == .koreader
                ? try HistoryImport.read(.koreader, from: dir.child("k.sqlite3"), options: options)
                : result
            let second = try store.importHistory(again.envelopes)
            #expect(second.added == 0)
            #expect(try second.alreadyStored == again.envelopes.count)
        }
        #expect(try store.viewDigest() == digest)
        #expect(try store.lastPosition() == last)
        // The views are the fold of the events: a rebuild gives the same digest.
        #expect(try store.rebuild().digest == digest)
    }

    @Test func aNewerExportAddsOnlyWhatIsNew() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let text = try String(contentsOf: Fixtures.url("goodreads-31.csv"), encoding: .utf8)
        let store = try ReadingStore.open(at: dir.child("store"))
        let old = try HistoryImport.read(.goodreads, csv: text, options: Fixtures.options())
        try store.importHistory(old.envelopes)
        // Later: Atomic Habits moved to read, finished on 2023/01/15, rated 5 stars.
        var lines = text.split(separator: "\n").map(String.init)
        let header = lines[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let values = ["Book Id": "2002", "Title": "Atomic Habits", "Exclusive Shelf": "read", "Author": "James Clear",
                      "My Rating": "5", "Number of Pages": "320", "Date Read": "2023/01/15", "Date Added": "2022/07/07", "Read Count": "1"]
        lines[2] = header.map { values[$0] ?? "" }.joined(separator: ",")
        let newer = lines.joined(separator: "\n") + "\n"
        #expect(newer != text)
        let update = try HistoryImport.read(.goodreads, csv: newer, options: Fixtures.options())
        let outcome = try store.importHistory(update.envelopes)
        #expect(outcome.added == 2)   // the finish and the rating; the book itself is already there
        let atomic = try Fixtures.book(update, "Atomic Habits")
        let view = try #require(try store.withViews { try $0.bookView(reader: Fixtures.reader, book: atomic.book) })
        #expect(view.finishes == [Fixtures.day("2023-01-15")])
        #expect(view.rating == (try Rating(stars: 5)))
    }

    @Test func anEventThatDoesNotFitTheStoredHistoryIsNotAppendedAndIsReported() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let text = try String(contentsOf: Fixtures.url("goodreads-31.csv"), encoding: .utf8)
        let store = try ReadingStore.open(at: dir.child("store"))
        let first = try HistoryImport.read(.goodreads, csv: text, options: Fixtures.options())
        #expect(try store.importHistory(first.envelopes).rejected.isEmpty)
        // The reader corrected Klara's Date Read on Goodreads: the new finish is a new event, but
        // the book is finished already, so the decide step refuses it on the stored history.
        let moved = try HistoryImport.read(.goodreads, csv: text.replacingOccurrences(of: "2021-04-20", with: "2021-04-22"),
                                           options: Fixtures.options())
        // Alone, the moved file is valid: it is the stored history that it does not fit.
        #expect(moved.report.skipped.isEmpty)
        let outcome = try store.importHistory(moved.envelopes)
        #expect(outcome.added == 0)
        #expect(outcome.rejected.map(\.type) == ["BookFinished"])
        #expect(outcome.rejected.first?.reason.contains("bookFinished") == true)
        let klara = try Fixtures.book(moved, "Klara and the Sun")
        let view = try #require(try store.withViews { try $0.bookView(reader: Fixtures.reader, book: klara.book) })
        #expect(view.finishes == [Fixtures.day("2021-04-20")])
    }

    /// Issue 26: a re-import under a corrected zone never keeps a second copy of the same rows:
    /// refused whole, naming the earlier zone and how to import again (KOReader, whose days split
    /// differently in another zone, and Goodreads, whose dates are placed at noon there).
    @Test(arguments: [ImportSource.koreader, .goodreads])
    func aReImportUnderAnotherZoneIsRefusedNamingTheEarlierZone(source: ImportSource) throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let file = source == .koreader ? dir.child("k.sqlite3") : Fixtures.url("goodreads-24.csv")
        if source == .koreader { try KOReaderFixture.standard(at: file.path).close() }
        let store = try ReadingStore.open(at: dir.child("store"))
        try store.importHistory(HistoryImport.read(source, from: file, options: Fixtures.options()).envelopes)
        let digest = try store.viewDigest(), last = try store.lastPosition()
        for zone in ["UTC", "America/Argentina/Buenos_Aires"] {
            let other = try HistoryImport.read(source, from: file, options: Fixtures.options(zone: try ZoneID(zone)))
            #expect {
                try store.importHistory(other.envelopes)
            } throws: { error in
                guard let rejection = error as? RecordedEventRejection, case .invalid(let invalid) = rejection.reason else { return false }
                return invalid.field == "timeZone" && invalid.detail.contains("--zone Asia/Seoul") && invalid.detail.contains(zone)
            }
            #expect(try store.lastPosition() == last)
            #expect(try store.viewDigest() == digest)
        }
        // The same zone again adds nothing and is not refused.
        #expect(try store.importHistory(HistoryImport.read(source, from: file, options: Fixtures.options()).envelopes).added == 0)
    }

    /// Issue 26: the warning says to name the did-not-finish shelf with --dnf-shelf; re-importing
    /// with it corrects the stored status (a status change through the decide step), once.
    @Test func aReImportWithTheDidNotFinishShelfNamedCorrectsTheStatus() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let text = """
            Book Id,Title,Author,Exclusive Shelf,Date Read,Date Added
            7,Abandoned,A. Writer,wont-finish,,2024/03/01
            8,Kept,B. Writer,to-read,,2024/03/02

            """
        let store = try ReadingStore.open(at: dir.child("store"))
        let first = try HistoryImport.read(.goodreads, csv: text, options: Fixtures.options())
        #expect(first.report.warnings.contains { $0.message.contains("wont-finish") })
        try store.importHistory(first.envelopes)
        let book = try Fixtures.book(first, "Abandoned").book
        func status() throws -> ReadingStatus? { try store.withViews { try $0.bookView(reader: Fixtures.reader, book: book) }?.status }
        #expect(try status() == .wantToRead)
        var options = Fixtures.options(); options.didNotFinishShelf = "wont-finish"
        let mapped = try HistoryImport.read(.goodreads, csv: text, options: options)
        let outcome = try store.importHistory(mapped.envelopes)
        #expect(outcome.added == 1)
        #expect(outcome.rejected.isEmpty)
        #expect(try status() == .didNotFinish)
        // Imported fresh with the mapping: the same status; importing it again adds nothing.
        let fresh = try ReadingStore.open(at: dir.child("fresh"))
        try fresh.importHistory(mapped.envelopes)
        #expect(try fresh.withViews { try $0.bookView(reader: Fixtures.reader, book: book) }?.status == .didNotFinish)
        #expect(try store.importHistory(mapped.envelopes).added == 0)
        #expect(try store.rebuild().digest == store.viewDigest())
    }
}
