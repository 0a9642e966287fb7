import CSQLite
import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents
import ReadingImport
import Testing

/// The committed CSV fixtures (Tests/ImportFixtures) and shared helpers.
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("ImportFixtures")
    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    static let reader = ReaderID(uuidString: "5b0e7c2a-3f1d-4e8a-9c61-0d2b7a4f9e13")!
    static let seoul = try! ZoneID("Asia/Seoul")
    static let importedAt = Timestamp(iso8601: "2026-11-23T00:00:00Z")!

    static func options(zone: ZoneID = seoul, undated: UndatedFinishPolicy = .leaveUnfinished) -> ImportOptions {
        ImportOptions(reader: reader, zone: zone, importedAt: importedAt, undatedFinish: undated)
    }

    static func day(_ text: String) -> LocalDate { try! LocalDate(iso: text) }

    /// The book a result holds with this title.
    static func book(_ result: ImportResult, _ title: String) throws -> ImportReport.Book {
        try #require(result.report.books.first { $0.title == title }, "no book \(title) in \(result.report.books.map(\.title))")
    }

    /// The events of one book, in order.
    static func events(_ result: ImportResult, of book: BookID) throws -> [ReadingEvent] {
        try result.envelopes.filter { $0.event.book == book }.map(\.event)
    }
}

/// A temporary directory per test.
struct ImportTempDirectory {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("reading-import-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func child(_ name: String) -> URL { url.appendingPathComponent(name) }
    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Every file of a directory with its bytes, for "modified nothing" checks.
func files(in directory: URL) throws -> [String: Data] {
    var result: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
        result[name] = try Data(contentsOf: directory.appendingPathComponent(name))
    }
    return result
}

/// A KOReader statistics database made with the SQLite C API, with KOReader's own schema
/// (tables `book`, `page_stat_data`, `numbers` and the `page_stat` view that rescales pages to
/// the book's current page count).
final class KOReaderFixture {
    private(set) var db: OpaquePointer?

    /// One page stay.
    struct Stay { var book: Int; var page: Int; var start: Int64; var duration: Int; var totalPages: Int }

    init(path: String, wal: Bool = false) throws {
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        if wal {
            try exec("PRAGMA journal_mode=WAL")
            try exec("PRAGMA wal_autocheckpoint=0")
        }
        try exec("""
            CREATE TABLE book (id integer PRIMARY KEY autoincrement, title text, authors text, notes integer,
                last_open integer, highlights integer, pages integer, series text, language text, md5 text,
                total_read_time integer, total_read_pages integer, UNIQUE (title, authors, md5));
            CREATE TABLE page_stat_data (id_book integer, page integer NOT NULL DEFAULT 0, start_time integer NOT NULL DEFAULT 0,
                duration integer NOT NULL DEFAULT 0, total_pages integer NOT NULL DEFAULT 0,
                UNIQUE (id_book, page, start_time), FOREIGN KEY(id_book) REFERENCES book(id));
            CREATE TABLE numbers (number INTEGER PRIMARY KEY);
            WITH RECURSIVE N(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM N WHERE i < 1000) INSERT INTO numbers SELECT i FROM N;
            CREATE VIEW page_stat AS
                SELECT id_book, first_page + idx - 1 AS page, start_time, duration / (last_page - first_page + 1) AS duration
                FROM (
                    SELECT id_book, page, total_pages, pages, start_time, duration,
                        ((page - 1) * pages) / total_pages + 1 AS first_page,
                        max(((page - 1) * pages) / total_pages + 1, (page * pages) / total_pages) AS last_page,
                        idx
                    FROM page_stat_data
                    JOIN book ON book.id = id_book
                    JOIN (SELECT number AS idx FROM numbers) AS N ON idx <= (last_page - first_page + 1)
                );
            """)
    }

    deinit { sqlite3_close(db) }

    func exec(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(db, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        try #require(code == SQLITE_OK, "\(message.map { String(cString: $0) } ?? "") in \(sql.prefix(200))")
    }

    func addBook(id: Int, title: String, authors: String, pages: Int?, md5: String, lastOpen: Int64) throws {
        try exec("INSERT INTO book (id, title, authors, pages, md5, last_open) VALUES (\(id), '\(title)', '\(authors)', \(pages.map(String.init) ?? "NULL"), '\(md5)', \(lastOpen))")
    }

    func insert(_ stays: [Stay]) throws {
        try exec("BEGIN")
        for s in stays {
            try exec("INSERT INTO page_stat_data VALUES (\(s.book), \(s.page), \(s.start), \(s.duration), \(s.totalPages))")
        }
        try exec("COMMIT")
    }

    /// Integer rows of a query.
    func rows(_ sql: String) throws -> [[Int64]] {
        var statement: OpaquePointer?
        try #require(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, "\(String(cString: sqlite3_errmsg(db)))")
        defer { sqlite3_finalize(statement) }
        var result: [[Int64]] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            result.append((0..<sqlite3_column_count(statement)).map { sqlite3_column_int64(statement, $0) })
        }
        return result
    }

    func close() { sqlite3_close(db); db = nil }

    // MARK: The standard history

    /// Seoul midnight of 2026-03-01 (UTC+9, no DST).
    static let day0: Int64 = 1_772_290_800

    /// A history with a layout change (book 1: 180 pages, later 200), turning back, jumping ahead,
    /// re-reading on the next day, a session across local midnight (no stay across it), a pause
    /// inside a session, page 0, a second book, and a book with no page stays.
    static func standardStays() -> [Stay] {
        var stays: [Stay] = []
        func run(_ book: Int, _ pages: [Int], from start: Int64, each: Int, total: Int) -> Int64 {
            var t = start
            for p in pages { stays.append(Stay(book: book, page: p, start: t, duration: each, totalPages: total)); t += Int64(each) }
            return t
        }
        // Day 0, 21:00: pages 1-30 (old layout, 180 pages), back to 25-28, on to 31-35.
        var t = run(1, Array(1...30), from: day0 + 21 * 3600, each: 40, total: 180)
        t = run(1, Array(25...28), from: t, each: 30, total: 180)
        _ = run(1, Array(31...35), from: t, each: 40, total: 180)
        // Day 0 -> 1, 23:50: pages 36-50 at 50 s each: the 13th stay starts at 00:00:00 exactly.
        _ = run(1, Array(36...50), from: day0 + 23 * 3600 + 50 * 60, each: 50, total: 180)
        // Day 1, 13:00: book 2 (50 pages), pages 1-20.
        _ = run(2, Array(1...20), from: day0 + 86_400 + 13 * 3600, each: 60, total: 50)
        // Day 2, 07:30: new layout (200 pages): 45-70, a 2-minute pause, a jump to 150, back to 71-80.
        t = run(1, Array(45...70), from: day0 + 2 * 86_400 + 7 * 3600 + 30 * 60, each: 35, total: 200)
        t = run(1, [150], from: t + 120, each: 8, total: 200)
        _ = run(1, Array(71...80), from: t, each: 45, total: 200)
        // Day 2, 09:00 (a new session after a long gap): page 0 (not a page) and pages 81-90.
        stays.append(Stay(book: 1, page: 0, start: day0 + 2 * 86_400 + 9 * 3600 - 30, duration: 20, totalPages: 200))
        _ = run(1, Array(81...90), from: day0 + 2 * 86_400 + 9 * 3600, each: 30, total: 200)
        // Day 3, 19:00: book 2, re-reading 15-20 on a later day, then 31-50.
        _ = run(2, Array(15...20) + Array(31...50), from: day0 + 3 * 86_400 + 19 * 3600, each: 55, total: 50)
        return stays
    }

    /// Writes the standard history, optionally only the stays that began before `cut`.
    static func standard(at path: String, wal: Bool = false, before cut: Int64? = nil) throws -> KOReaderFixture {
        let fixture = try KOReaderFixture(path: path, wal: wal)
        try fixture.addBook(id: 1, title: "Stats Book", authors: "K. O. Reader", pages: 200, md5: "a1b2c3d4e5f60718293a4b5c6d7e8f90", lastOpen: day0 + 3 * 86_400)
        try fixture.addBook(id: 2, title: "Short Book", authors: "Brief Author", pages: 50, md5: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", lastOpen: day0 + 4 * 86_400)
        try fixture.addBook(id: 3, title: "Never Opened Past The Cover", authors: "Nobody", pages: 120, md5: "ffeeddccbbaa99887766554433221100", lastOpen: day0 + 86_400)
        try fixture.insert(standardStays().filter { cut == nil || $0.start < cut! })
        return fixture
    }

    /// KOReader's own daily figures, by its own SQL (`getDatesFromAll` in the statistics plugin):
    /// distinct (book, page) per local day through the `page_stat` view, and the stays' seconds per
    /// local day; with a fixed offset instead of the machine's `localtime`. Every stay's seconds
    /// count, as KOReader counts them (page 0 and pages past total_pages included); page 0 is
    /// not a page, so it is left out of the page count.
    func dailyFigures(offsetSeconds: Int) throws -> [String: (pages: Int, seconds: Int)] {
        var result: [String: (pages: Int, seconds: Int)] = [:]
        var statement: OpaquePointer?
        let sql = """
            SELECT dates, count(*) AS pages FROM (
                SELECT strftime('%Y-%m-%d', start_time + \(offsetSeconds), 'unixepoch') AS dates
                FROM page_stat WHERE page >= 1 GROUP BY id_book, page, dates
            ) GROUP BY dates
            """
        try #require(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, "\(String(cString: sqlite3_errmsg(db)))")
        while sqlite3_step(statement) == SQLITE_ROW {
            result[String(cString: sqlite3_column_text(statement, 0)), default: (0, 0)].pages = Int(sqlite3_column_int64(statement, 1))
        }
        sqlite3_finalize(statement)
        let minutes = """
            SELECT strftime('%Y-%m-%d', start_time + \(offsetSeconds), 'unixepoch') AS dates, sum(duration)
            FROM page_stat_data GROUP BY dates
            """
        try #require(sqlite3_prepare_v2(db, minutes, -1, &statement, nil) == SQLITE_OK)
        while sqlite3_step(statement) == SQLITE_ROW {
            result[String(cString: sqlite3_column_text(statement, 0)), default: (0, 0)].seconds = Int(sqlite3_column_int64(statement, 1))
        }
        sqlite3_finalize(statement)
        return result
    }
}

/// Opens a store in `directory`, imports `envelopes`, returns the store.
func store(at directory: URL, importing envelopes: [EventEnvelope]...) throws -> ReadingStore {
    let store = try ReadingStore.open(at: directory)
    for batch in envelopes { try store.importHistory(batch) }
    return store
}
