import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents
import ReadingImport
import Testing

/// KOReader's statistics database: the figures KOReader itself shows, WAL files, snapshots.
@Suite struct KOReaderImportTests {
    func read(_ url: URL, _ options: ImportOptions = Fixtures.options()) throws -> ImportResult {
        try HistoryImport.read(.koreader, from: url, options: options)
    }

    @Test func dailyPagesAndMinutesEqualKOReadersOwnDailyFigures() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let path = dir.child("statistics.sqlite3").path
        let fixture = try KOReaderFixture.standard(at: path)
        let expected = try fixture.dailyFigures(offsetSeconds: 9 * 3600)
        fixture.close()
        let result = try read(URL(fileURLWithPath: path))
        let store = try store(at: dir.child("store"), importing: result.envelopes)
        let days = try store.withViews { try $0.dailyPages(reader: Fixtures.reader, in: Fixtures.day("2026-02-01")...Fixtures.day("2026-04-01")) }
        let actual = Dictionary(uniqueKeysWithValues: days.filter { $0.total.isReadingDay }.map { ($0.day.description, $0.total) })
        #expect(Set(actual.keys) == Set(expected.keys))
        #expect(expected.count == 4)
        for (day, figure) in expected {
            #expect(actual[day]?.pages == figure.pages, "pages on \(day)")
            #expect(actual[day]?.seconds == figure.seconds, "seconds on \(day)")
        }
        // Turning back (25-28) and jumping ahead (150) credit nothing extra; re-reading 15-20 of
        // the short book on a later day counts again on that day, as KOReader counts it.
        #expect(expected["2026-03-01"]!.pages > 0)

        let report = result.report
        // Six sessions (gaps over 5 minutes), one pause inside the 07:30 session and one between
        // the page-0 stay and page 81 of the 09:00 session.
        #expect(report.eventsByType["SessionStarted"] == 6)
        #expect(report.eventsByType["SessionFinished"] == 6)
        #expect(report.eventsByType["SessionPaused"] == 2)
        #expect(report.skipped.isEmpty)
        #expect(report.warnings.contains { $0.message.contains("1 page stays on page 0") })
        let neverOpened = try Fixtures.book(result, "Never Opened Past The Cover")
        #expect(neverOpened.status == .wantToRead)
        #expect(report.warnings.contains { $0.message.contains("no page stays") })
        // The session across midnight: its minutes split at midnight, on the days the stays began.
        let buckets = try store.withViews { try $0.timeOfDay(reader: Fixtures.reader) }
        #expect(buckets.seconds.reduce(0, +) == expected.values.reduce(0) { $0 + $1.seconds })
        // The layout change: book 1's pages are on its 200-page scale, never above it.
        let stats = try Fixtures.book(result, "Stats Book")
        let detail = try #require(try store.withViews { try $0.bookDetail(reader: Fixtures.reader, book: stats.book) })
        #expect(detail.view.metadata.pageCount == 200)
        #expect(detail.view.entries.allSatisfy { $0.position <= 200 })
        #expect(report.warnings.allSatisfy { !$0.message.contains("not credited") })
    }

    /// Issue 26: time on page 0 (the cover) and past the book's total_pages is reading time
    /// KOReader counts. A day with only such stays is a reading day with KOReader's seconds; a
    /// stay past the end credits at most the last page.
    @Test(arguments: ["Asia/Seoul", "UTC", "America/Argentina/Buenos_Aires"])
    func secondsOnPageZeroAndPastTheLastPageAreKeptAsKOReaderSumsThem(zoneName: String) throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let zone = try ZoneID(zoneName)
        let fixture = try KOReaderFixture(path: dir.child("s.sqlite3").path)
        try fixture.addBook(id: 1, title: "Covers", authors: "A", pages: 100, md5: "c0", lastOpen: KOReaderFixture.day0)
        var random = SplitMix64(seed: 26)
        var stays: [KOReaderFixture.Stay] = []
        let offset = zone.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(KOReaderFixture.day0)))
        let midnight = KOReaderFixture.day0 + 9 * 3600 - Int64(offset)   // 2026-03-01 00:00 in the zone
        for day in 0..<6 {
            // From 01:00 ... 14:00 for at most about 4.5 hours: no stay crosses local midnight.
            var t = midnight + Int64(day) * 86_400 + Int64(1 + random.next() % 14) * 3600
            for _ in 0..<(3 + Int(random.next() % 10)) {
                let roll = random.next() % 4
                // Day 2 is all cover time; otherwise a mix of page 0, pages past 100 and pages.
                let page = day == 2 || roll == 0 ? 0 : roll == 1 ? 101 + Int(random.next() % 30) : 1 + Int(random.next() % 100)
                let duration = 20 + Int(random.next() % 400)
                stays.append(.init(book: 1, page: page, start: t, duration: duration, totalPages: 100))
                t += Int64(duration) + Int64(random.next() % 900)
            }
        }
        try fixture.insert(stays)
        let expected = try fixture.dailyFigures(offsetSeconds: offset)
        fixture.close()
        let result = try read(dir.child("s.sqlite3"), Fixtures.options(zone: zone))
        #expect(result.report.skipped.isEmpty)
        let store = try store(at: dir.child("store"), importing: result.envelopes)
        let days = try store.withViews { try $0.dailyPages(reader: Fixtures.reader, in: Fixtures.day("2026-02-25")...Fixtures.day("2026-03-10")) }
        let actual = Dictionary(uniqueKeysWithValues: days.filter { $0.total.isReadingDay }.map { ($0.day.description, $0.total) })
        #expect(Set(actual.keys) == Set(expected.keys))
        for (day, figure) in expected {
            #expect(actual[day]?.seconds == figure.seconds, "seconds on \(day) in \(zoneName)")
            // KOReader's view counts a page past the end as its own page; the import credits at most the last page.
            #expect((actual[day]?.pages ?? 0) <= figure.pages, "pages on \(day)")
        }
        #expect(actual.values.allSatisfy { $0.pages <= 100 })
        #expect(result.report.warnings.contains { $0.message.contains("past the book's total_pages") })
    }

    @Test func aWALModeFileIsReadCompletelyAndLeftByteForByteAsItWas() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let plain = try KOReaderFixture.standard(at: dir.child("plain.sqlite3").path)
        plain.close()
        // A WAL-mode database whose rows are still only in its -wal file, copied while open (as a
        // device's files are copied off it).
        let live = dir.child("live"), copied = dir.child("copied")
        try FileManager.default.createDirectory(at: live, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: copied, withIntermediateDirectories: true)
        let wal = try KOReaderFixture.standard(at: live.appendingPathComponent("statistics.sqlite3").path, wal: true)
        for name in ["statistics.sqlite3", "statistics.sqlite3-wal"] {
            try FileManager.default.copyItem(at: live.appendingPathComponent(name), to: copied.appendingPathComponent(name))
        }
        wal.close()
        let before = try files(in: copied)
        #expect(before["statistics.sqlite3-wal"].map { $0.count > 0 } == true)
        let fromWAL = try read(copied.appendingPathComponent("statistics.sqlite3"))
        #expect(try files(in: copied) == before)   // nothing written, no -shm created
        let fromPlain = try read(dir.child("plain.sqlite3"))
        #expect(try fromWAL.envelopes == fromPlain.envelopes)
        #expect(fromWAL.report.eventsByType["PagesRead"] ?? 0 > 0)
    }

    @Test func aHistorySplitAcrossTwoSnapshotsImportsToTheSameViewsAsTheWhole() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let cut = KOReaderFixture.day0 + 2 * 86_400   // between the day-1 and the day-2 sessions
        try KOReaderFixture.standard(at: dir.child("early.sqlite3").path, before: cut).close()
        try KOReaderFixture.standard(at: dir.child("full.sqlite3").path).close()
        let early = try read(dir.child("early.sqlite3")), full = try read(dir.child("full.sqlite3"))
        #expect(try early.envelopes.count < full.envelopes.count)
        let twoSteps = try store(at: dir.child("a"), importing: early.envelopes, full.envelopes)
        let oneStep = try store(at: dir.child("b"), importing: full.envelopes)
        #expect(try twoSteps.viewDigest() == oneStep.viewDigest())
        #expect(try twoSteps.lastPosition() == oneStep.lastPosition())
    }

    /// The documented limit: an older snapshot taken in the middle of a session (07:30-07:55 on
    /// day 2, cut at 07:40). The newer snapshot's pause and resume do not fit the stored,
    /// finished session: they are reported and not appended; the pages are all credited.
    @Test func aSnapshotTakenMidSessionLosesOnlyTheContinuationsMinutesAndSaysSo() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let cut = KOReaderFixture.day0 + 2 * 86_400 + 7 * 3600 + 40 * 60
        try KOReaderFixture.standard(at: dir.child("early.sqlite3").path, before: cut).close()
        try KOReaderFixture.standard(at: dir.child("full.sqlite3").path).close()
        let early = try read(dir.child("early.sqlite3")), full = try read(dir.child("full.sqlite3"))
        let twoSteps = try ReadingStore.open(at: dir.child("a"))
        #expect(try twoSteps.importHistory(early.envelopes).rejected.isEmpty)
        let outcome = try twoSteps.importHistory(full.envelopes)
        #expect(Set(outcome.rejected.map(\.type)) == ["SessionPaused", "SessionResumed"])
        let oneStep = try store(at: dir.child("b"), importing: full.envelopes)
        let range = Fixtures.day("2026-03-01")...Fixtures.day("2026-03-05")
        let a = try twoSteps.withViews { try $0.dailyPages(reader: Fixtures.reader, in: range) }
        let b = try oneStep.withViews { try $0.dailyPages(reader: Fixtures.reader, in: range) }
        #expect(a.map(\.total.pages) == b.map(\.total.pages))
        #expect(a.map(\.total.seconds).reduce(0, +) < b.map(\.total.seconds).reduce(0, +))
        #expect(try twoSteps.rebuild().digest == twoSteps.viewDigest())
    }

    @Test func pagesReReadBeyondTheBookAreCappedAndReported() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let fixture = try KOReaderFixture(path: dir.child("s.sqlite3").path)
        try fixture.addBook(id: 1, title: "Tiny", authors: "A", pages: 10, md5: "abc", lastOpen: KOReaderFixture.day0)
        var stays: [KOReaderFixture.Stay] = []
        for day in 0..<2 { for p in 1...10 { stays.append(.init(book: 1, page: p, start: KOReaderFixture.day0 + Int64(day * 86_400 + 36_000 + p * 30), duration: 30, totalPages: 10)) } }
        try fixture.insert(stays)
        fixture.close()
        let result = try read(dir.child("s.sqlite3"))
        let positions = try result.envelopes.compactMap { if case .pagesRead(let p) = $0.event { p.position } else { nil } }
        #expect(positions == [10])
        #expect(result.report.warnings.contains { $0.message.contains("10 pages read again") })
    }

    @Test func aDeviceClockOnLocalTimeIsMovedBackByTheZoneOffset() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let fixture = try KOReaderFixture(path: dir.child("s.sqlite3").path)
        try fixture.addBook(id: 1, title: "Clock", authors: "A", pages: 10, md5: "c1", lastOpen: 0)
        let wall: Int64 = 1_772_359_200   // 2026-03-01T10:00:00 read as UTC: the device's local wall time
        try fixture.insert([.init(book: 1, page: 1, start: wall, duration: 60, totalPages: 10)])
        fixture.close()
        var options = Fixtures.options(); options.deviceClockIsLocal = true
        let shifted = try read(dir.child("s.sqlite3"), options)
        let start = try #require(shifted.envelopes.first { if case .sessionStarted = $0.event { true } else { false } })
        #expect(start.occurredAt.seconds == wall - 9 * 3600)
        let plain = try read(dir.child("s.sqlite3"))
        #expect(try plain.envelopes.first { if case .sessionStarted = $0.event { true } else { false } }?.occurredAt.seconds == wall)
    }

    /// Issue 26: a directory or a device is refused before anything is copied.
    @Test func aDirectoryOrADeviceIsRefusedBeforeAnythingIsCopied() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let folder = dir.child("statistics.sqlite3")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(count: 1 << 20).write(to: folder.appendingPathComponent("big"))
        var options = Fixtures.options(); options.temporaryDirectory = dir.child("tmp")
        try FileManager.default.createDirectory(at: dir.child("tmp"), withIntermediateDirectories: true)
        for (url, kind) in [(folder, "a directory"), (URL(fileURLWithPath: "/dev/null"), "a character device")] {
            #expect {
                try HistoryImport.read(.koreader, from: url, options: options)
            } throws: { error in
                guard case ImportError.unreadable(_, let detail) = error else { return false }
                return detail.contains(kind) && detail.contains("nothing was copied")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.child("tmp").path).isEmpty)
    }

    /// Issue 26: only real tables are read, within a row and a time bound, and the private copy
    /// is gone after every failed import. A `page_stat_data` that is a never-ending view ran for
    /// ever before (and left its copy behind when the process was stopped).
    @Test func viewsAreNotReadRowsAndTimeAreBoundedAndTheCopyIsAlwaysRemoved() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let tmp = dir.child("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        var options = Fixtures.options(); options.temporaryDirectory = tmp
        let endless = try KOReaderFixture(path: dir.child("view.sqlite3").path)
        try endless.addBook(id: 1, title: "Loop", authors: "A", pages: 10, md5: "l1", lastOpen: 0)
        try endless.exec("""
            DROP VIEW page_stat; DROP TABLE page_stat_data;
            CREATE VIEW page_stat_data AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r)
                SELECT 1 AS id_book, 1 + i % 10 AS page, i AS start_time, 1 AS duration, 10 AS total_pages FROM r;
            """)
        endless.close()
        #expect {
            try HistoryImport.read(.koreader, from: dir.child("view.sqlite3"), options: options)
        } throws: { error in
            guard case ImportError.wrongFormat(.koreader, let expected) = error else { return false }
            return expected.contains("tables (not views)")
        }
        try KOReaderFixture.standard(at: dir.child("k.sqlite3").path).close()
        var few = options, quick = options
        few.maxRows = 10
        quick.readTimeLimitSeconds = 0
        for (bounded, bound) in [(few, "more rows than an import reads (10 rows"), (quick, "time limit")] {
            #expect {
                try HistoryImport.read(.koreader, from: dir.child("k.sqlite3"), options: bounded)
            } throws: { error in
                guard case ImportError.limitExceeded(let detail) = error else { return false }
                return detail.contains(bound)
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty)
        // A successful import removes its copy too.
        #expect(try HistoryImport.read(.koreader, from: dir.child("k.sqlite3"), options: options).envelopes.isEmpty == false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty)
    }

    @Test func aFileThatIsNotAKOReaderDatabaseIsRefused() throws {
        let dir = try ImportTempDirectory(); defer { dir.remove() }
        let other = try KOReaderFixture(path: dir.child("other.sqlite3").path)
        try other.exec("DROP VIEW page_stat; DROP TABLE page_stat_data")
        other.close()
        for url in [dir.child("other.sqlite3"), Fixtures.url("goodreads-24.csv")] {
            #expect {
                try HistoryImport.read(.koreader, from: url, options: Fixtures.options())
            } throws: { error in
                guard case ImportError.wrongFormat(.koreader, let expected) = error else { return false }
                return expected.contains("page_stat_data")
            }
        }
        #expect(throws: ImportError.self) { try HistoryImport.read(.koreader, from: dir.child("missing"), options: Fixtures.options()) }
    }
}
