import ReadingEvents

// The reading-speed view (issue 37, item 5): pages per hour from timed sessions, per book and per
// month, and the time each book on the home list has left at the reader's own speed. The view, its
// rules and its queries live in this one file; it is derived from the book views (their sessions
// and page marks), so it needs no table of its own and is rebuilt with them.

/// The sessions that count for reading speed, added up: how many, the pages they credited and the
/// seconds they ran.
///
/// `Sendable`: plain values.
public struct SpeedTotal: Hashable, Sendable {
    /// Sessions counted.
    public var sessions: Int
    /// Pages their end positions credited.
    public var pages: Int
    /// Seconds they ran (``SessionRecord/measuredSeconds``, pauses excluded).
    public var seconds: Int

    /// A total.
    public init(sessions: Int = 0, pages: Int = 0, seconds: Int = 0) {
        self.sessions = sessions
        self.pages = pages
        self.seconds = seconds
    }

    /// Pages per hour; `nil` when no counted session ran (no seconds).
    public var pagesPerHour: Double? { seconds > 0 ? Double(pages) * 3600 / Double(seconds) : nil }

    /// Seconds `pages` more pages take at this speed, rounded to the nearest second (at most
    /// `Int.max`); `nil` when these sessions credited no page (no speed to go by) or `pages` is
    /// negative.
    public func seconds(forPages pages: Int) -> Int? {
        guard self.pages > 0, pages >= 0, seconds >= 0 else { return nil }
        let (product, overflow) = pages.multipliedReportingOverflow(by: seconds)
        guard !overflow, product <= Int.max - self.pages / 2 else {
            let estimate = (Double(pages) * Double(seconds) / Double(self.pages)).rounded()
            return estimate < Double(Int.max) ? Int(estimate) : Int.max
        }
        return (product + self.pages / 2) / self.pages
    }

    /// Adds one counted session.
    mutating func add(_ session: CountedSession) {
        sessions += 1
        pages += session.pages
        seconds += session.seconds
    }
}

/// One timed session as reading speed counts it (see ``CountedSession/counted(in:clock:)``).
///
/// `Sendable`: plain values.
public struct CountedSession: Hashable, Sendable {
    /// The book read.
    public var book: BookID
    /// The session.
    public var session: SessionID
    /// The reading day of its start, in the zone it started in: the day and month it counts in.
    public var day: LocalDate
    /// The pages its end position credited.
    public var pages: Int
    /// The seconds it ran.
    public var seconds: Int

    /// The month it counts in.
    public var month: YearMonth { YearMonth(day) }

    /// The sessions of `view` that count for reading speed, in the order the view keeps them.
    ///
    /// The rules, in one place (the Projections article "Rules the views follow" says them too):
    /// - a session counts once it is finished with an end position, and ran at least
    ///   ``DayTotal/minimumReadingSeconds`` (a minute, the least any view shows): a timer tapped on
    ///   and off by mistake, a finish whose start has not arrived yet (it has run no time) and a
    ///   session without an end position say nothing about pages per hour;
    /// - its seconds are its measured seconds (the same seconds the day and time-of-day totals
    ///   count, pauses excluded), never the duration the host reported;
    /// - its pages are what its end position credited: the credit of the first reading mark at that
    ///   position from the session's last running moment on (the mark its finish recorded, or a
    ///   page record of the same page made before the finish), after back-dated records and
    ///   corrections re-credited it. A session that ended on a page already reached credits 0 and
    ///   counts, with its time (the reader read without getting further);
    /// - a re-read credits its pages again (each read-through counts from 0), so its sessions count
    ///   like any other;
    /// - it counts in the month of its start's reading day, in the zone it started in, whole (a
    ///   session from 23:30 on 31 January to 00:30 counts in January).
    public static func counted(in view: BookView, clock: LocalClock = LocalClock()) -> [CountedSession] {
        var counted: [CountedSession] = []
        let entries = view.entries
        for session in view.sessions where session.isFinished {
            guard let end = session.endPosition else { continue }
            let seconds = session.measuredSeconds
            guard seconds >= DayTotal.minimumReadingSeconds else { continue }
            let from = session.intervals.last?.end ?? session.startedAt
            guard let mark = entries.first(where: { $0.kind == .read && $0.position == end && $0.occurredAt >= from }) else { continue }
            counted.append(CountedSession(book: view.book, session: session.session,
                                          day: clock.localDay(of: session.startedAt, in: session.timeZone),
                                          pages: mark.credited, seconds: seconds))
        }
        return counted
    }
}

/// One book's reading speed.
///
/// `Sendable`: plain values.
public struct BookSpeed: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// Its title.
    public var title: String
    /// Its counted sessions, added up.
    public var total: SpeedTotal
}

/// One month's reading speed.
///
/// `Sendable`: plain values.
public struct MonthSpeed: Hashable, Sendable {
    /// The month.
    public var month: YearMonth
    /// The sessions counted in it, added up.
    public var total: SpeedTotal
}

/// Whose speed an estimate of the time left goes by.
///
/// `Sendable`: a plain enum.
public enum SpeedBasis: String, Hashable, Sendable, CaseIterable {
    /// The book's own counted sessions (a textbook reads slower than a novel).
    case book
    /// All of the reader's counted sessions: the book has none that credited a page.
    case reader
}

/// The reading time a book on the home list has left.
///
/// `Sendable`: plain values.
public struct TimeLeft: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// Its title.
    public var title: String
    /// Pages to the end; `nil` when the page count is unknown.
    public var pagesLeft: Int?
    /// The estimated seconds of reading left; `nil` when the page count is unknown or no counted
    /// session (of the book or the reader) credited a page.
    public var seconds: Int?
    /// The speed the estimate goes by; `nil` exactly when ``seconds`` is.
    public var basis: SpeedBasis?
}

/// The reading-speed view of one reader: pages per hour from timed sessions, all time, per book
/// and per month, and the reading time left for each book on the home list (KOReader's "time
/// left"), at the reader's own speed.
///
/// `Sendable`: plain values.
public struct ReadingSpeed: Hashable, Sendable {
    /// Every counted session of the reader, added up.
    public var overall: SpeedTotal
    /// Books with at least one counted session, in book-ID order.
    public var books: [BookSpeed]
    /// Months with at least one counted session, in order.
    public var months: [MonthSpeed]
    /// One estimate per home-list item, in the home list's order.
    public var timeLeft: [TimeLeft]

    /// The total of `month` (zero when no session counts in it).
    public func total(of month: YearMonth) -> SpeedTotal {
        months.first { $0.month == month }?.total ?? SpeedTotal()
    }

    /// The total of `book` (zero when none of its sessions counts).
    public func total(of book: BookID) -> SpeedTotal {
        books.first { $0.book == book }?.total ?? SpeedTotal()
    }
}

extension ViewStore {
    /// The reading-speed view of `reader`, with the time left for each item of `home` (the home
    /// list the caller shows, in its order). It reads every book view of the reader, as the
    /// bookshelf does.
    public func readingSpeed(reader: ReaderID, home: HomeList, clock: LocalClock = LocalClock()) throws -> ReadingSpeed {
        var overall = SpeedTotal()
        var books: [BookSpeed] = []
        var months: [YearMonth: SpeedTotal] = [:]
        for view in try bookViews(reader: reader) {
            let counted = CountedSession.counted(in: view, clock: clock)
            guard !counted.isEmpty else { continue }
            var total = SpeedTotal()
            for session in counted {
                total.add(session)
                overall.add(session)
                months[session.month, default: SpeedTotal()].add(session)
            }
            books.append(BookSpeed(book: view.book, title: view.metadata.title, total: total))
        }
        let byBook = Dictionary(books.map { ($0.book, $0.total) }, uniquingKeysWith: { a, _ in a })
        let timeLeft = home.items.map { item -> TimeLeft in
            var estimate: (seconds: Int, basis: SpeedBasis)?
            if let left = item.pagesLeft {
                if let seconds = byBook[item.book]?.seconds(forPages: left) {
                    estimate = (seconds, .book)
                } else if let seconds = overall.seconds(forPages: left) {
                    estimate = (seconds, .reader)
                }
            }
            return TimeLeft(book: item.book, title: item.metadata.title, pagesLeft: item.pagesLeft,
                            seconds: estimate?.seconds, basis: estimate?.basis)
        }
        return ReadingSpeed(overall: overall, books: books,
                            months: months.keys.sorted().map { MonthSpeed(month: $0, total: months[$0]!) },
                            timeLeft: timeLeft)
    }

    /// The reading-speed view of `reader` as of an instant in a zone: the time left is for the
    /// home list of that "today" (``homeList(reader:asOf:zone:sortedBy:clock:)``, in `sort` order).
    public func readingSpeed(reader: ReaderID, asOf: Timestamp, zone: ZoneID, sortedBy sort: HomeSort = .titleAscending,
                             clock: LocalClock = LocalClock()) throws -> ReadingSpeed {
        try readingSpeed(reader: reader, home: homeList(reader: reader, asOf: asOf, zone: zone, sortedBy: sort, clock: clock),
                         clock: clock)
    }
}
