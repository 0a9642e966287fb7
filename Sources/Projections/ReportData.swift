import ReadingEvents

/// One day of a chart: pages and minutes read on a local reading day.
///
/// `Sendable`: plain values.
public struct DayPoint: Hashable, Sendable {
    /// The reading day.
    public var day: LocalDate
    /// Pages credited to the day.
    public var pages: Int
    /// Minutes of timed reading (seconds / 60, rounded down).
    public var minutes: Int
    /// Whether this is "today" of the report.
    public var isToday: Bool
}

/// One time-of-day bar pair: pages and minutes in a bucket.
///
/// `Sendable`: plain values.
public struct TimeOfDayPoint: Hashable, Sendable {
    /// The bucket (night, morning, afternoon, evening).
    public var bucket: TimeOfDay
    /// Pages credited in the bucket, all time.
    public var pages: Int
    /// Minutes of timed reading in the bucket, all time.
    public var minutes: Int
}

/// One month's bar pair: pages read and finishes.
///
/// `Sendable`: plain values.
public struct MonthPoint: Hashable, Sendable {
    /// The month.
    public var month: YearMonth
    /// Pages credited to its days.
    public var pages: Int
    /// Finishes dated in it (a re-read finished again counts again).
    public var finishes: Int
}

/// One day of the challenge's pace chart: what was done by the end of the day, and where an even
/// pace to the target would be.
///
/// `Sendable`: plain values.
public struct PacePoint: Hashable, Sendable {
    /// The day.
    public var day: LocalDate
    /// Pages credited from 1 January through the day.
    public var cumulativePages: Int
    /// Distinct books first finished in the year on or before the day.
    public var cumulativeBooks: Int
    /// The even pace of the pages target by the end of the day (target × n / days in year).
    public var targetPages: Double?
    /// The even pace of the books target by the end of the day.
    public var targetBooks: Double?
}

/// One spine of the bookshelf stack: a finished book, drawn as tall as it is thick.
///
/// `Sendable`: plain values.
public struct ShelfSpine: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// Its title.
    public var title: String
    /// Its page count, when known.
    public var pageCount: Int?
    /// Its thickness in millimetres: the stated one, else page count × 0.06 mm (as ``Bookshelf``).
    public var heightMillimetres: Double
    /// Its latest finish day.
    public var lastFinished: LocalDate
    /// Its rating.
    public var rating: Rating?
}

/// Why the report data could not be made.
///
/// `Sendable`: plain values.
public enum ReportDataError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store has no record of the reader.
    case unknownReader(ReaderID)
    /// The reader has no pages, finishes, timed minutes or challenge in the year.
    case noData(reader: ReaderID, year: Int)
    /// The year is outside ``ReadingEvents/Limits/years`` (1900 ... 2199).
    case yearOutOfRange(Int)

    /// One sentence naming the field and the problem.
    public var description: String {
        switch self {
        case .unknownReader(let reader): "reader: \(reader) is not in the store"
        case .noData(let reader, let year): "year: reader \(reader) has no reading, finishes or challenge in \(year)"
        case .yearOutOfRange(let year): "year: \(year) is outside \(Limits.years.lowerBound) ... \(Limits.years.upperBound)"
        }
    }
}

/// Everything the reading report page shows, as plain values: what each chart plots, so a host app
/// can draw the same charts (with Swift Charts, say) without deriving anything again.
///
/// `Sendable`: plain values.
public struct ReportData: Hashable, Sendable {
    /// The reader.
    public var reader: ReaderID
    /// The reader's nickname, once set.
    public var nickname: String?
    /// The year shown.
    public var year: Int
    /// "Today": the reading day of the report's `asOf` instant in its zone.
    public var today: LocalDate
    /// The page calendar: every day of the year, in order (365 or 366 points).
    public var calendar: [DayPoint]
    /// Daily bars: the 30 days of the year ending today (or ending on 31 December for a past year,
    /// starting on 1 January for a future one).
    public var dailyBars: [DayPoint]
    /// Pages and minutes per time-of-day bucket, all time (the buckets are not kept per year).
    public var timeOfDay: [TimeOfDayPoint]
    /// Pages and finishes for each month of the year (12 points).
    public var monthly: [MonthPoint]
    /// Runs of reading days that touch the year, cut at its ends, in order.
    public var streakRuns: [StreakRun]
    /// Finished books and pages by category in the year.
    public var categories: CategoryBreakdown
    /// The challenge's progress as of today.
    public var challenge: ChallengeProgress
    /// The pace chart: one point per day of the year up to today (every day for a past year).
    public var pace: [PacePoint]
    /// The year in review.
    public var review: YearInReview
    /// Finished books (all time), latest finish first, as spines of a stack.
    public var shelf: [ShelfSpine]
    /// The home list (active goals with D-days) as of today.
    public var home: HomeList
    /// Reading speed from timed sessions, all time (per month and per book), and the reading time
    /// left for each book of ``home``.
    public var readingSpeed: ReadingSpeed
}

extension ViewStore {
    /// The data of the reading report of `year` (default: the year of "today", clamped into
    /// ``ReadingEvents/Limits/years``) as of an instant in a zone. Throws ``ReportDataError`` for an unknown reader or a year without data.
    public func reportData(reader: ReaderID, year: Int? = nil, asOf: Timestamp, zone: ZoneID,
                           clock: LocalClock = LocalClock()) throws -> ReportData {
        let today = clock.localDay(of: asOf, in: zone)
        // "Today" may fall a day outside the years (an instant late on 2199-12-31 UTC is 2200 in
        // Seoul): the default year is clamped into them.
        let year = year ?? min(max(today.year, Limits.years.lowerBound), Limits.years.upperBound)
        guard Limits.years.contains(year) else { throw ReportDataError.yearOutOfRange(year) }
        guard let readerView = try readerView(reader: reader) else { throw ReportDataError.unknownReader(reader) }
        let first = try! LocalDate(year: year, month: 1, day: 1)
        let last = try! LocalDate(year: year, month: 12, day: 31)
        let yearView = try yearView(reader: reader, year: year)
        let days = try dailyPages(reader: reader, in: first...last)
        guard yearView != nil || days.contains(where: { !$0.total.isZero }) else {
            throw ReportDataError.noData(reader: reader, year: year)
        }
        let calendar = days.map { DayPoint(day: $0.day, pages: $0.total.pages, minutes: $0.total.seconds / 60, isToday: $0.day == today) }
        let barsEnd = min(max(today, first.adding(days: 29)), last)
        let dailyBars = calendar.filter { $0.day <= barsEnd && $0.day > barsEnd.adding(days: -30) }
        let buckets = try bucketTotals(reader: reader)
        let timeOfDay = TimeOfDay.allCases.map { TimeOfDayPoint(bucket: $0, pages: buckets.pages[$0.rawValue], minutes: buckets.seconds[$0.rawValue] / 60) }
        let monthly = try self.monthly(reader: reader, in: YearMonth(year: year, month: 1)...YearMonth(year: year, month: 12))
            .map { MonthPoint(month: $0.month, pages: $0.total.pages, finishes: $0.total.finishes) }
        let runs = try streakRuns(reader: reader).filter { $0.end >= first && $0.start <= last }
            .map { StreakRun(start: max($0.start, first), end: min($0.end, last)) }
        let challenge = try challengeProgress(reader: reader, year: year, today: today)

        // Distinct books by the first finish dated in the year.
        var firstFinish: [LocalDate: Int] = [:]
        for part in yearView?.books ?? [] where part.finishes > 0 {
            if let day = try bookView(reader: reader, book: part.book)?.finishes.filter({ $0.year == year }).min() {
                firstFinish[day, default: 0] += 1
            }
        }
        let paceEnd = min(today, last)
        var pace: [PacePoint] = []
        var pages = 0, books = 0
        for (n, point) in calendar.enumerated() where point.day <= paceEnd {
            pages += point.pages; books += firstFinish[point.day] ?? 0
            let share = Double(n + 1) / Double(challenge.daysInYear)
            pace.append(PacePoint(day: point.day, cumulativePages: pages, cumulativeBooks: books,
                                  targetPages: challenge.challenge?.pages.map { Double($0) * share },
                                  targetBooks: challenge.challenge?.books.map { Double($0) * share }))
        }
        let shelf = try bookViews(reader: reader).filter { $0.inLibrary && !$0.finishes.isEmpty }.map { view in
            ShelfSpine(book: view.book, title: view.metadata.title, pageCount: view.metadata.pageCount,
                       heightMillimetres: view.metadata.thicknessMillimetres ?? Double(view.metadata.pageCount ?? 0) * 0.06,
                       lastFinished: view.finishes.max()!, rating: view.rating)
        }.sorted { ($0.lastFinished, $0.title) > ($1.lastFinished, $1.title) }
        let home = try homeList(reader: reader, asOf: asOf, zone: zone, clock: clock)
        return ReportData(
            reader: reader, nickname: readerView.nickname, year: year, today: today, calendar: calendar, dailyBars: dailyBars,
            timeOfDay: timeOfDay, monthly: monthly, streakRuns: runs,
            categories: try categoryBreakdown(reader: reader, period: .year(year)), challenge: challenge, pace: pace,
            review: try yearInReview(reader: reader, year: year), shelf: shelf,
            home: home, readingSpeed: try readingSpeed(reader: reader, home: home, clock: clock))
    }
}
