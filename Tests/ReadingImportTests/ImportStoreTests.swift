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
            #expect(first.added == result.envelopes.count)
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
            #expect(second.alreadyStored == again.envelopes.count)
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
}
