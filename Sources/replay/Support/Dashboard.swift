import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents

/// Everything `show` prints for one reader.
struct Dashboard {
    let reader: ReaderID
    let nickname: String?
    let zone: ZoneID
    let today: LocalDate
    let home: HomeList
    let finishedShelf: Bookshelf
    let likedShelf: Bookshelf
    let summary: SummaryCounts
    let streaks: Streaks
    let calendar: [(day: LocalDate, total: DayTotal)]
    let buckets: BucketTotals
    let monthly: [(month: YearMonth, total: MonthTotal)]
    let openSessions: [OpenSession]
    let months: ClosedRange<YearMonth>
    let readingSpeed: ReadingSpeed

    init(reader: ReaderID, views: any ViewStore, asOf: Timestamp, zone: ZoneID, today: LocalDate,
         clock: LocalClock) throws {
        self.reader = reader
        self.zone = zone
        self.today = today
        nickname = try views.readerView(reader: reader)?.nickname
        home = try views.homeList(reader: reader, asOf: asOf, zone: zone, sortedBy: .readerOrder, clock: clock)
        finishedShelf = try views.bookshelf(reader: reader, showing: .finished)
        likedShelf = try views.bookshelf(reader: reader, showing: .liked)
        summary = try views.summary(reader: reader)
        streaks = try views.streaks(reader: reader, asOf: today)
        // A contribution-graph heatmap of the last 26 weeks, ending with today's week.
        let weekday = (today.dayNumber + 3) % 7   // 0 = Monday (1970-01-01 was a Thursday)
        let heatStart = today.adding(days: -weekday - 25 * 7)
        calendar = try views.dailyPages(reader: reader, in: heatStart...today)
        buckets = try views.timeOfDay(reader: reader)
        let lastMonth = YearMonth(today)
        var firstMonth = lastMonth
        for _ in 0..<11 { firstMonth = firstMonth.previous }
        months = firstMonth...lastMonth
        monthly = try views.monthly(reader: reader, in: months)
        openSessions = try views.openSessions(reader: reader)
        readingSpeed = try views.readingSpeed(reader: reader, home: home, clock: clock)
    }

    /// `value` of `max` as a number of cells out of `cells` (rounded down), for any values: no
    /// overflow, never negative, never more than `cells`.
    static func scaled(_ value: Int, max: Int, cells: Int) -> Int {
        guard max > 0, value > 0 else { return 0 }
        let (product, overflow) = value.multipliedReportingOverflow(by: cells)
        let scaled = overflow ? Int(Double(value) / Double(max) * Double(cells)) : product / max
        return Swift.min(cells, Swift.max(0, scaled))
    }

    /// A bar of up to `width` cells; at least one cell for any positive value.
    static func bar(_ value: Int, max: Int, width: Int = 30) -> String {
        guard max > 0, value > 0 else { return "" }
        return String(repeating: "█", count: Swift.max(1, scaled(value, max: max, cells: width)))
    }

    /// `value` right-aligned in at least `width` columns (wider numbers are never cut).
    static func padded(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: " ", count: Swift.max(0, width - text.count)) + text
    }

    /// The text before the daily bars, the daily bars (streamed), and the text after them.
    func writeText(daily: DailyBars, to output: OutputBuffer) {
        output.write(textBeforeDaily)
        daily.forEachLine(output.write)
        output.write(textAfterDaily)
    }

    var textBeforeDaily: String {
        var out: [String] = []
        out.append("━━ reader \(reader)\(nickname.map { " (\(printable($0)))" } ?? "") · \(zone) · today \(today)")
        out.append("")
        out.append("Home (\(home.items.count) goals)")
        for group in home.byCategory {
            out.append("  [\(group.category.isEmpty ? "uncategorised" : printable(group.category))]")
            for item in group.items {
                let progress = item.progress.map { String(format: "%3.0f%%", $0 * 100) } ?? "  ?%"
                let dday = item.daysLeft >= 0 ? "D-\(item.daysLeft)" : "D+\(-item.daysLeft)"
                let needed = item.pagesPerDayNeeded.map { "\($0) p/day needed" } ?? "target passed"
                let projected = item.projectedFinish.map { "finish ≈ \($0)" } ?? "no pace yet"
                out.append("    \(printable(item.metadata.title)) — p.\(item.position)/\(item.metadata.pageCount.map(String.init) ?? "?") \(progress) · \(dday) (\(item.goal.targetDate)) · \(needed) · \(projected)")
            }
        }
        out.append("")
        out.append("Bookshelf: \(finishedShelf.items.count) finished, \(likedShelf.items.count) liked · stack \(String(format: "%.1f", finishedShelf.stackHeightMillimetres / 10)) cm")
        for item in finishedShelf.items.prefix(8) {
            let goal = item.goalStatus == .abandoned ? "goal abandoned" : item.goalMet.map { $0 ? "goal met" : "goal missed" } ?? "no goal"
            let stars = item.rating.map { "★ \($0.stars)" } ?? "unrated"
            let times = item.finishes.count > 1 ? " ×\(item.finishes.count)" : ""
            out.append("  \(item.finishes.last!) \(printable(item.metadata.title))\(times) · \(goal) · \(stars)\(item.liked ? " · ♥" : "")")
        }
        out.append("")
        out.append("Summary: \(summary.reading) reading · \(summary.finished) finished · \(summary.wantToRead) want to read · \(summary.didNotFinish) did not finish · \(summary.totalPages) pages · \(summary.totalSeconds / 3600) h \(summary.totalSeconds % 3600 / 60) min timed")
        out.append("Streaks: current \(streaks.currentLength) days\(streaks.current.map { " (since \($0.start))" } ?? "") · longest \(streaks.longestLength) days\(streaks.longest.map { " (\($0.start) – \($0.end))" } ?? "")")
        if !openSessions.isEmpty {
            out.append("Open timers: " + openSessions.map { "\(printable($0.title)) since \($0.session.startedAt)" }.joined(separator: "; "))
        }
        out.append("")
        out.append("Page calendar (26 weeks, Monday at the top; · none ░ ▒ ▓ █ by quartile)")
        let maxPages = calendar.map(\.total.pages).max() ?? 0
        let shades = ["░", "▒", "▓", "█"]
        for row in 0..<7 {
            var line = "  " + ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][row] + " "
            for week in 0..<26 {
                let index = week * 7 + row
                guard index < calendar.count else { line += " "; continue }
                let pages = calendar[index].total.pages
                line += pages == 0 ? "·" : shades[Swift.min(3, Self.scaled(pages, max: maxPages, cells: 4))]
            }
            out.append(line)
        }
        out.append("")
        return out.joined(separator: "\n") + "\n"
    }

    var textAfterDaily: String {
        var out: [String] = []
        out.append("")
        out.append("Time of day (pages · minutes)")
        let maxBucket = buckets.pages.max() ?? 0
        for bucket in TimeOfDay.allCases {
            let name = ["night     ", "morning   ", "afternoon ", "evening   "][bucket.rawValue]
            out.append("  \(name)\(Self.padded(buckets.pages[bucket.rawValue], 6)) p \(Self.padded(buckets.seconds[bucket.rawValue] / 60, 5)) min \(Self.bar(buckets.pages[bucket.rawValue], max: maxBucket))")
        }
        out.append("")
        out.append("Monthly (pages · books finished)")
        let maxMonth = monthly.map(\.total.pages).max() ?? 0
        for entry in monthly { out.append("  \(entry.month) \(Self.padded(entry.total.pages, 6)) p \(entry.total.finishes) ✓ \(Self.bar(entry.total.pages, max: maxMonth))") }
        out.append("")
        out.append(contentsOf: readingSpeedLines)
        out.append("")
        return out.joined(separator: "\n") + "\n"
    }

    /// `p/h` with one decimal, or `–` without a speed.
    static func speed(_ total: SpeedTotal) -> String { total.pagesPerHour.map { String(format: "%.1f p/h", $0) } ?? "– p/h" }

    /// Seconds as `H h M min`, rounded to the minute.
    static func duration(_ seconds: Int) -> String {
        let minutes = (seconds + 30) / 60
        return minutes >= 60 ? "\(minutes / 60) h \(minutes % 60) min" : "\(minutes) min"
    }

    /// The reading-speed section: all time, the months of the monthly bars, the time left of each
    /// home-list book.
    var readingSpeedLines: [String] {
        var out = ["Reading speed (timed sessions that ended on a page and ran a minute or more)"]
        let all = readingSpeed.overall
        out.append("  all time \(Self.padded(all.sessions, 4)) sessions \(Self.padded(all.pages, 6)) p in \(Self.duration(all.seconds)) · \(Self.speed(all))")
        var month = months.lowerBound
        while true {
            let total = readingSpeed.total(of: month)
            if total.sessions > 0 {
                out.append("  \(month)  \(Self.padded(total.sessions, 4)) sessions \(Self.padded(total.pages, 6)) p in \(Self.duration(total.seconds)) · \(Self.speed(total))")
            }
            if month == months.upperBound { break }
            month = month.next
        }
        for item in readingSpeed.timeLeft {
            let estimate: String
            if let seconds = item.seconds, let basis = item.basis {
                let speed = Self.speed(basis == .book ? readingSpeed.total(of: item.book) : all)
                estimate = "≈ \(Self.duration(seconds)) left (\(item.pagesLeft ?? 0) p at \(basis == .book ? "this book's" : "your") \(speed))"
            } else {
                estimate = item.pagesLeft == nil ? "page count unknown" : "no speed yet"
            }
            out.append("  time left: \(printable(item.title)) — \(estimate)")
        }
        return out
    }

    /// The JSON document of this reader, its daily bars streamed into it.
    func writeJSON(daily: DailyBars, to output: OutputBuffer) throws {
        // Every key but "daily" in one object (sorted keys), then "daily" written day by day.
        var head = try JSONEncoder.sorted.encode(self.output)
        head.removeLast()   // the closing brace
        output.write(head)
        output.write(",\"daily\":[")
        var first = true
        daily.forEach { day, total in
            output.write((first ? "" : ",") + "{\"day\":\"\(day)\",\"pages\":\(total.pages),\"seconds\":\(total.seconds)}")
            first = false
        }
        output.write("]}\n")
    }

    /// The `--json` document of one reader, but its daily bars (streamed after it). Absent values are `null`.
    struct Output: Encodable {
        struct Day: Encodable { let day: String, pages: Int, seconds: Int }
        struct HomeItem: Encodable {
            let book: String, title: String, category: String, position: Int
            @NullWhenAbsent var pageCount: Int?
            @NullWhenAbsent var progress: Double?
            @NullWhenAbsent var pagesLeft: Int?
            let targetDate: String, daysLeft: Int
            @NullWhenAbsent var pagesPerDayNeeded: Int?
            @NullWhenAbsent var projectedFinish: String?
        }
        struct FinishedItem: Encodable {
            let book: String, title: String, finishes: [String]
            @NullWhenAbsent var goalMet: Bool?
            @NullWhenAbsent var goalStatus: String?
            @NullWhenAbsent var rating: Double?
            let liked: Bool
        }
        struct LikedItem: Encodable {
            let book: String, title: String
            @NullWhenAbsent var goalStatus: String?
        }
        struct Shelf: Encodable { let finished: [FinishedItem], liked: [LikedItem], stackHeightMillimetres: Double }
        struct Summary: Encodable {
            let reading: Int, finished: Int, wantToRead: Int, didNotFinish: Int, liked: Int, totalPages: Int, totalSeconds: Int
        }
        struct Run: Encodable { let start: String, end: String, days: Int }
        struct Streaks: Encodable {
            @NullWhenAbsent var current: Run?
            @NullWhenAbsent var longest: Run?
        }
        struct Bucket: Encodable { let bucket: String, pages: Int, seconds: Int }
        struct Month: Encodable { let month: String, pages: Int, finishes: Int }
        struct Session: Encodable { let book: String, title: String, startedAt: String }
        struct Speed: Encodable {
            let sessions: Int, pages: Int, seconds: Int
            /// Rounded to 0.1; `null` without a counted second.
            @NullWhenAbsent var pagesPerHour: Double?
            init(_ total: SpeedTotal) {
                sessions = total.sessions; pages = total.pages; seconds = total.seconds
                pagesPerHour = total.pagesPerHour.map { ($0 * 10).rounded() / 10 }
            }
        }
        struct MonthSpeed: Encodable { let month: String, speed: Speed }
        struct BookSpeed: Encodable { let book: String, title: String, speed: Speed }
        struct TimeLeft: Encodable {
            let book: String, title: String
            @NullWhenAbsent var pagesLeft: Int?
            @NullWhenAbsent var secondsLeft: Int?
            @NullWhenAbsent var basis: String?
        }
        struct ReadingSpeed: Encodable {
            let overall: Speed, months: [MonthSpeed], books: [BookSpeed], timeLeft: [TimeLeft]
        }

        let reader: String
        @NullWhenAbsent var nickname: String?
        let zone: String, today: String
        let home: [HomeItem]
        let bookshelf: Shelf
        let summary: Summary
        let streaks: Streaks
        let calendar: [Day]
        let timeOfDay: [Bucket]
        let monthly: [Month]
        let openSessions: [Session]
        let readingSpeed: ReadingSpeed
    }

    var output: Output {
        func run(_ r: StreakRun?) -> Output.Run? { r.map { Output.Run(start: $0.start.description, end: $0.end.description, days: $0.length) } }
        return Output(
            reader: reader.description, nickname: nickname, zone: zone.identifier, today: today.description,
            home: home.items.map { item in
                Output.HomeItem(book: item.book.description, title: item.metadata.title, category: item.metadata.groupingCategory,
                                position: item.position, pageCount: item.metadata.pageCount, progress: item.progress,
                                pagesLeft: item.pagesLeft, targetDate: item.goal.targetDate.description, daysLeft: item.daysLeft,
                                pagesPerDayNeeded: item.pagesPerDayNeeded, projectedFinish: item.projectedFinish?.description)
            },
            bookshelf: Output.Shelf(
                finished: finishedShelf.items.map { item in
                    Output.FinishedItem(book: item.book.description, title: item.metadata.title, finishes: item.finishes.map(\.description),
                                        goalMet: item.goalMet, goalStatus: item.goalStatus?.rawValue, rating: item.rating?.stars, liked: item.liked)
                },
                liked: likedShelf.items.map { item in
                    Output.LikedItem(book: item.book.description, title: item.metadata.title, goalStatus: item.goalStatus?.rawValue)
                },
                stackHeightMillimetres: finishedShelf.stackHeightMillimetres),
            summary: Output.Summary(reading: summary.reading, finished: summary.finished, wantToRead: summary.wantToRead,
                                    didNotFinish: summary.didNotFinish, liked: summary.liked, totalPages: summary.totalPages,
                                    totalSeconds: summary.totalSeconds),
            streaks: Output.Streaks(current: run(streaks.current), longest: run(streaks.longest)),
            calendar: calendar.map { Output.Day(day: $0.day.description, pages: $0.total.pages, seconds: $0.total.seconds) },
            timeOfDay: TimeOfDay.allCases.map { b in
                Output.Bucket(bucket: ["night", "morning", "afternoon", "evening"][b.rawValue], pages: buckets.pages[b.rawValue],
                              seconds: buckets.seconds[b.rawValue])
            },
            monthly: monthly.map { Output.Month(month: $0.month.description, pages: $0.total.pages, finishes: $0.total.finishes) },
            openSessions: openSessions.map { Output.Session(book: $0.book.description, title: $0.title, startedAt: $0.session.startedAt.description) },
            readingSpeed: Output.ReadingSpeed(
                overall: Output.Speed(readingSpeed.overall),
                months: readingSpeed.months.map { Output.MonthSpeed(month: $0.month.description, speed: Output.Speed($0.total)) },
                books: readingSpeed.books.map { Output.BookSpeed(book: $0.book.description, title: $0.title, speed: Output.Speed($0.total)) },
                timeLeft: readingSpeed.timeLeft.map {
                    Output.TimeLeft(book: $0.book.description, title: $0.title, pagesLeft: $0.pagesLeft, secondsLeft: $0.seconds,
                                    basis: $0.basis?.rawValue)
                }))
    }
}

/// The daily bars of one reader: every day of a range, streamed (the stored totals are sparse).
struct DailyBars {
    /// The days shown; `nil` when the requested range lies outside the reader's history.
    let range: ClosedRange<LocalDate>?
    /// The range asked for, before clamping.
    let requested: ClosedRange<LocalDate>
    /// The stored (non-zero) totals within `range`, in day order.
    let stored: [(LocalDate, DayTotal)]

    /// Reads the stored totals of `requested`; with `clampedTo` (the day of the reader's latest
    /// event), first clamps it to the reader's history: the first to the last day with reading, widened
    /// to include that day. Days outside it hold nothing, so the clamp loses no data.
    init(reader: ReaderID, views: any ViewStore, requested: ClosedRange<LocalDate>, clampedTo latestDay: LocalDate?) throws {
        self.requested = requested
        var range: ClosedRange<LocalDate>? = requested
        if let latestDay {
            let all = try views.dayTotals(reader: reader, in: LocalDate(dayNumber: -719_162)...LocalDate(dayNumber: 2_932_896))
            let first = Swift.min(all.first?.0 ?? latestDay, latestDay), last = Swift.max(all.last?.0 ?? latestDay, latestDay)
            let lower = Swift.max(requested.lowerBound, first), upper = Swift.min(requested.upperBound, last)
            range = lower <= upper ? lower...upper : nil
            stored = range.map { r in all.filter { r.contains($0.0) } } ?? []
        } else {
            stored = try views.dayTotals(reader: reader, in: requested)
        }
        self.range = range
    }

    /// Calls `body` with every day of the range and its totals (zero where nothing is stored).
    func forEach(_ body: (LocalDate, DayTotal) -> Void) {
        guard let range else { return }
        var index = 0
        var day = range.lowerBound
        while true {
            if index < stored.count, stored[index].0 == day { body(day, stored[index].1); index += 1 } else { body(day, DayTotal()) }
            if day == range.upperBound { break }
            day = day.adding(days: 1)
        }
    }

    /// The text lines: a heading, then one bar per day.
    func forEachLine(_ body: (String) -> Void) {
        guard let range else {
            body("Daily pages \(requested.lowerBound) … \(requested.upperBound): outside the reader's history, nothing to show\n")
            return
        }
        body("Daily pages \(range.lowerBound) … \(range.upperBound)\n")
        let maxDaily = stored.map(\.1.pages).max() ?? 0
        forEach { day, total in
            body("  \(day) \(Dashboard.padded(total.pages, 4)) \(Dashboard.bar(total.pages, max: maxDaily))\n")
        }
    }
}

/// Buffered writes to stdout, flushed every 64 KiB, so long output is streamed in bounded memory.
///
/// Not `Sendable`: used by one command on one thread.
final class OutputBuffer {
    private var buffer: [UInt8] = []

    func write(_ text: String) { buffer.append(contentsOf: text.utf8); flushIfFull() }
    func write(_ data: Data) { buffer.append(contentsOf: data); flushIfFull() }

    private func flushIfFull() { if buffer.count >= 1 << 16 { flush() } }

    func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}
