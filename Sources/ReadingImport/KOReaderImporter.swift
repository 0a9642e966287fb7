import Foundation
import ReadingEvents

/// KOReader's statistics database (`statistics.sqlite3` of the statistics plugin).
///
/// - Books by `md5` (`book`: title, authors, pages).
/// - Page stays (`page_stat_data`: page, start_time, duration, total_pages), in time order,
///   grouped into timed sessions: a gap longer than ``ImportOptions/sessionGapSeconds`` ends a
///   session, and so does a 24-hour total. Gaps inside a session are pauses, so a session's
///   running time is exactly the stays' durations, on the days and hours the stays happened.
/// - Pages: each stay's page is first mapped to the book's current page count the way KOReader's
///   own `page_stat` view does after a layout change (page p of t becomes the pages
///   ((p-1)·n)/t+1 … max(that, (p·n)/t) of n). A local day is credited with the distinct pages
///   read on it (KOReader's daily figure), once per (session, day, time-of-day bucket), so turning
///   back or jumping ahead never over-counts. The position is the running sum, capped at the
///   page count (reported when the cap takes pages off).
/// - Every stay's seconds count, as KOReader counts them: a stay on page 0 (the cover) credits no
///   page, a stay past its `total_pages` credits at most the last page (both reported).
enum KOReaderImporter {
    static let bookColumns: Set<String> = ["id", "title", "authors", "pages", "md5"]
    static let statColumns: Set<String> = ["id_book", "page", "start_time", "duration", "total_pages"]

    struct Stay {
        var rowid: Int
        var page: Int
        var rawStart: Int64
        var start: Int64
        var duration: Int64
        var totalPages: Int
        var end: Int64 { start + duration }
        var key: String { "\(page)@\(rawStart)" }
    }

    static func read(url: URL, options: ImportOptions, progress: ImportProgress?) throws(ImportError) -> ImportResult {
        guard (1...86_400).contains(options.sessionGapSeconds) else {
            throw .invalidOption(name: "sessionGapSeconds", detail: "\(options.sessionGapSeconds) is outside 1 ... 86400")
        }
        let db = try SQLiteReader(copying: url, into: options.temporaryDirectory)
        let expected = "a KOReader statistics database with the tables (not views) book(\(bookColumns.sorted().joined(separator: ", "))) and page_stat_data(\(statColumns.sorted().joined(separator: ", ")))"
        let haveBook: Set<String>, haveStats: Set<String>
        do {
            // Only real tables are read: a view (which could run for ever) is not KOReader's schema.
            haveBook = try db.tableColumns(of: "book") ?? []
            haveStats = try db.tableColumns(of: "page_stat_data") ?? []
        } catch {
            // SQLITE_NOTADB (26) and friends: not an SQLite file at all.
            throw .wrongFormat(source: .koreader, expected: "\(expected) (\(error))")
        }
        guard bookColumns.isSubset(of: haveBook), statColumns.isSubset(of: haveStats) else {
            throw .wrongFormat(source: .koreader, expected: expected)
        }
        let lastOpen = haveBook.contains("last_open") ? "last_open" : "NULL"
        db.limitTime(seconds: options.readTimeLimitSeconds)
        var rowsRead = 0
        func count(_ table: String) throws(ImportError) {
            rowsRead += 1
            guard rowsRead <= options.maxRows else {
                throw .limitExceeded("\(table) has more rows than an import reads (\(options.maxRows) rows of book and page_stat_data)")
            }
        }

        struct BookRow { var id: Int64; var title: String; var authors: String; var pages: Int?; var md5: String; var lastOpen: Int64? }
        var books: [BookRow] = []
        try db.query("SELECT id, title, authors, pages, md5, \(lastOpen) FROM book ORDER BY id") { row throws(ImportError) in
            try count("book")
            guard let id = row[0].int else { return }
            books.append(BookRow(id: id, title: row[1].string ?? "", authors: row[2].string ?? "",
                                 pages: row[3].int.map { Int(clamping: $0) }, md5: row[4].string ?? "", lastOpen: row[5].int))
        }
        var plan = ImportPlan(source: .koreader, options: options)
        var stays: [Int64: [Stay]] = [:]
        var total = 0
        try db.query("SELECT rowid, id_book, page, start_time, duration, total_pages FROM page_stat_data ORDER BY id_book, start_time, page") { row throws(ImportError) in
            try count("page_stat_data")
            plan.report.rows += 1
            let rowid = Int(row[0].int ?? 0)
            guard let book = row[1].int, let page = row[2].int, let start = row[3].int, let duration = row[4].int,
                  let totalPages = row[5].int else {
                plan.skip("page_stat_data rowid \(rowid): a NULL or non-numeric value in id_book, page, start_time, duration or total_pages", line: rowid)
                return
            }
            // A stay on page 0 (the cover, an unpaged position), past total_pages, or with a
            // total_pages out of range is still reading time KOReader counts: kept for its seconds,
            // credited no page (or, past the end, the last page; see `creditedPages`).
            guard duration >= 0, duration <= Int64(86_400) else {
                plan.skip("duration: \(duration) s is outside 0 ... 86400 (rowid \(rowid))", line: rowid); return
            }
            // 1970 ..< 2200: the envelope's range for instants after the epoch.
            guard start >= 0, start < 7_258_118_400 - 86_400 else {
                plan.skip("start_time: \(start) is outside 1970 ... 2200 (rowid \(rowid))", line: rowid); return
            }
            var instant = start
            if options.deviceClockIsLocal {
                // The clock showed local wall time while set to UTC: undo the zone's offset there.
                let guess = start - Int64(options.zone.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(start))))
                instant = start - Int64(options.zone.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(guess))))
            }
            stays[book, default: []].append(Stay(rowid: rowid, page: Int(clamping: page), rawStart: start, start: instant,
                                                 duration: duration, totalPages: Int(clamping: totalPages)))
            total += 1
        }
        let known = Set(books.map(\.id))
        for (id, rows) in stays where !known.contains(id) {
            for stay in rows { plan.skip("id_book: \(id) is not in the book table (rowid \(stay.rowid))", line: stay.rowid) }
        }
        var done = 0
        for row in books {
            let rows = (stays[row.id] ?? []).sorted { ($0.start, $0.page) < ($1.start, $1.page) }
            importBook(row.title, authors: row.authors, pages: row.pages, md5: row.md5, lastOpen: row.lastOpen, stays: rows, &plan)
            done += rows.count
            progress?(done, total)
        }
        return try plan.result()
    }

    private static func importBook(_ title: String, authors: String, pages: Int?, md5: String, lastOpen: Int64?,
                                   stays: [Stay], _ plan: inout ImportPlan) {
        let identity: String
        if md5.isEmpty {
            identity = "title:\(title.lowercased())|authors:\(authors.lowercased())"
            plan.warn("\(title): no md5; identified by title and authors", line: nil)
        } else {
            identity = "md5:\(md5)"
        }
        var book = plan.book(identity: identity, line: stays.first?.rowid)
        book.title = title
        var pageCount = pages.flatMap { $0 > 0 ? $0 : nil }
        if pageCount == nil, let latest = stays.last(where: { (1...BookMetadata.maxPageCount).contains($0.totalPages) })?.totalPages {
            pageCount = latest
            plan.warn("\(title): the book table has no page count; used total_pages \(latest) of its latest page stay", line: nil)
        }
        let added: Timestamp
        if let first = stays.first {
            added = Timestamp(microseconds: first.start * 1_000_000)
        } else if let lastOpen, lastOpen > 0, lastOpen < 7_258_118_400 {
            added = Timestamp(microseconds: lastOpen * 1_000_000)
        } else {
            added = plan.options.importedAt
        }
        if stays.isEmpty { plan.warn("\(title): no page stays; added as want to read", line: nil) }
        let metadata = BookMetadata(title: title, authors: authors, pageCount: pageCount)
        guard plan.run(.addBook(metadata, status: stays.isEmpty ? .wantToRead : .reading), &book, role: "added", at: added, line: nil),
              let n = pageCount else { plan.finish(book); return }

        let zone = plan.options.zone
        let gap = Int64(plan.options.sessionGapSeconds)
        var seenByDay: [LocalDate: PageRanges] = [:]
        var position = 0, capped = 0, clipped = 0, unpaged = 0, pastEnd = 0
        var index = 0
        while index < stays.count {
            // One session: stays until a long gap or 24 h of reading.
            var end = index + 1
            var reading = stays[index].duration
            var previousEnd = stays[index].end
            while end < stays.count {
                let next = stays[end]
                let effective = max(0, next.end - max(next.start, previousEnd))
                guard next.start - previousEnd <= gap, reading + effective <= Int64(Limits.sessionSeconds) else { break }
                reading += effective
                previousEnd = max(previousEnd, next.end)
                end += 1
            }
            let first = stays[index]
            let session = SessionID(plan.derivedUUID(["session", identity, first.key]))
            plan.run(.startSession(session), &book, role: "session:\(first.key)", at: at(first.start), line: first.rowid)
            var runningUntil = first.start
            var credit = 0
            var seconds: Int64 = 0
            for k in index..<end {
                var stay = stays[k]
                if stay.start < runningUntil {
                    // Overlapping stays (a clock change): count the overlap once.
                    clipped += 1
                    stay.duration = max(0, stay.end - runningUntil)
                    stay.start = runningUntil
                } else if stay.start > runningUntil {
                    plan.run(.pauseSession(session), &book, role: "pause:\(stay.key)", at: at(runningUntil), line: stay.rowid)
                    plan.run(.resumeSession(session), &book, role: "resume:\(stay.key)", at: at(stay.start), line: stay.rowid)
                }
                runningUntil = stay.end
                seconds += stay.duration
                let local = LocalDays.local(stays[k].start, in: zone)
                let key = (local.day, local.hour / 6)
                var fresh = 0
                switch creditedPages(stay, of: n) {
                case .none: unpaged += 1
                case .pages(let pages, let past):
                    if past { pastEnd += 1 }
                    fresh = seenByDay[local.day, default: PageRanges()].insert(pages)
                }
                credit += fresh
                let next = k + 1 < end ? LocalDays.local(stays[k + 1].start, in: zone) : nil
                if next == nil || next!.day != key.0 || next!.hour / 6 != key.1 {
                    if credit > 0 {
                        let target = min(n, position + credit)
                        capped += position + credit - target
                        position = target
                        plan.run(.recordPages(position: position), &book, role: "pages:\(stay.key)", at: at(stays[k].start), line: stay.rowid)
                    }
                    credit = 0
                }
            }
            plan.run(.finishSession(session, endPosition: nil, durationSeconds: Int(seconds)), &book, role: "finish:\(first.key)",
                     at: at(runningUntil), line: stays[end - 1].rowid)
            index = end
        }
        if capped > 0 {
            plan.warn("\(title): \(capped) pages read again on later days go beyond the book's \(n) pages; not credited", line: nil)
        }
        if unpaged > 0 {
            plan.warn("\(title): \(unpaged) page stays on page 0 (the cover) or with no usable total_pages; their seconds are counted, no page is credited", line: nil)
        }
        if pastEnd > 0 {
            plan.warn("\(title): \(pastEnd) page stays past the book's total_pages; their seconds are counted, the page credit is capped at the last page", line: nil)
        }
        if clipped > 0 {
            plan.warn("\(title): \(clipped) page stays overlapped the one before; the overlap was counted once", line: nil)
        }
        plan.finish(book)
    }

    /// The distinct pages read on a day, as sorted disjoint ranges: memory grows with the stays,
    /// not with the pages a rescaled stay covers (one stay of a 1-page layout is all of a
    /// 100,000-page book).
    struct PageRanges {
        private var ranges: [ClosedRange<Int>] = []

        /// Adds `pages`; returns how many of them were not there yet.
        mutating func insert(_ pages: ClosedRange<Int>) -> Int {
            var lower = pages.lowerBound, upper = pages.upperBound
            var covered = 0
            // The ranges that overlap or touch `pages` merge into one.
            let first = ranges.firstIndex { $0.upperBound >= lower - 1 } ?? ranges.endIndex
            var last = first
            while last < ranges.endIndex, ranges[last].lowerBound <= upper + 1 {
                let r = ranges[last]
                covered += max(0, min(r.upperBound, pages.upperBound) - max(r.lowerBound, pages.lowerBound) + 1)
                lower = min(lower, r.lowerBound); upper = max(upper, r.upperBound)
                last += 1
            }
            ranges.replaceSubrange(first..<last, with: [lower...upper])
            return pages.count - covered
        }
    }

    /// The pages a stay credits.
    enum Credit: Equatable {
        /// None: page 0 (the cover or an unpaged position) or a total_pages outside 1 ... the limit.
        case none
        /// These pages of the book's `n`; `past` when the stay's page was past its total_pages
        /// (then it counts as the last page).
        case pages(ClosedRange<Int>, past: Bool)
    }

    /// KOReader's rescaling of a stay's page after a layout change (its `page_stat` view): page p of
    /// t becomes the pages ((p-1)·n)/t+1 … max(that, (p·n)/t) of n; a page past t counts as page t.
    static func creditedPages(_ stay: Stay, of n: Int) -> Credit {
        let t = stay.totalPages
        guard stay.page >= 1, (1...BookMetadata.maxPageCount).contains(t) else { return .none }
        let page = min(stay.page, t)
        let firstPage = ((page - 1) * n) / t + 1
        return .pages(firstPage...max(firstPage, (page * n) / t), past: stay.page > t)
    }

    private static func at(_ seconds: Int64) -> Timestamp { Timestamp(microseconds: seconds * 1_000_000) }
}
