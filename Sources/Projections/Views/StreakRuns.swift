import ReadingEvents

// The streaks view: a reader's runs of consecutive reading days, and the longest kept in the
// reader's record. Its record, table, codec, accessors, fold step and queries.

/// A run of consecutive reading days, both ends inclusive.
///
/// `Sendable`: two dates.
public struct StreakRun: Hashable, Sendable {
    /// The first day.
    public var start: LocalDate
    /// The last day.
    public var end: LocalDate
    /// Days in the run.
    public var length: Int { start.days(until: end) + 1 }
    /// A run.
    public init(start: LocalDate, end: LocalDate) { self.start = start; self.end = end }
}

extension ViewRecords {
    /// Streak runs by their first day (scanned backwards by the fold: not cached).
    ///
    /// `Sendable`: a table type.
    public enum Runs: ViewRecordTable {
        public typealias Key = LocalDate
        public typealias Record = StreakRun
        public static var kind: ViewRecordKind { .runs }
        public static var recordName: String { "StreakRun" }
        public static var summary: String { "a reader's streak runs" }
        public static func encodeRecord(_ record: StreakRun) -> [UInt8] { ViewRecordCodec.encode(record) }
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> StreakRun {
            try ViewRecordCodec.decodeStreakRun(bytes)
        }
        public static var isCached: Bool { false }
        public static var isScannedByTheFold: Bool { true }

        /// Joins or splits runs at each day that became a reading day or stopped being one (what
        /// the days' step found, ``ViewDeltas/readingDays``), keeping the reader's longest run.
        public static func fold<S: ViewStore>(_ deltas: inout ViewDeltas, into store: inout S) throws {
            for (day, isReading) in deltas.readingDays {
                if isReading { try addReadingDay(day, reader: deltas.reader, to: &store) }
                else { try removeReadingDay(day, reader: deltas.reader, from: &store) }
            }
        }

        private static func addReadingDay(_ day: LocalDate, reader: ReaderID, to store: inout some ViewStore) throws {
            let before = day.adding(days: -1)
            var left = try store.streakRun(reader: reader, startingOnOrBefore: before)
            if let run = left, run.end != before { left = nil }
            let right = try store.streakRun(reader: reader, startingOn: day.adding(days: 1))
            if let right { try store.removeStreakRun(reader: reader, start: right.start) }
            let run = StreakRun(start: left?.start ?? day, end: right?.end ?? day)
            try store.putStreakRun(reader: reader, run)
            // The new run holds the runs it joined, so it is longer than both: it is the longest
            // unless another run is at least as long (and, as long, earlier).
            var view = try store.readerView(reader: reader) ?? ReaderView()
            if view.longestRun.map({ Self.isLonger(run, than: $0) }) ?? true {
                view.longestRun = run
                try store.putReaderView(reader: reader, view)
            }
        }

        private static func removeReadingDay(_ day: LocalDate, reader: ReaderID, from store: inout some ViewStore) throws {
            guard let run = try store.streakRun(reader: reader, startingOnOrBefore: day), run.end >= day else { return }
            try store.removeStreakRun(reader: reader, start: run.start)
            if run.start < day { try store.putStreakRun(reader: reader, StreakRun(start: run.start, end: day.adding(days: -1))) }
            if day < run.end { try store.putStreakRun(reader: reader, StreakRun(start: day.adding(days: 1), end: run.end)) }
            // A split of the longest run (a late correction): the longest is found again among all.
            var view = try store.readerView(reader: reader) ?? ReaderView()
            guard view.longestRun == nil || view.longestRun == run else { return }
            view.longestRun = try store.streakRuns(reader: reader).reduce(nil) { best, next in
                best.map { Self.isLonger(next, than: $0) } ?? true ? next : best
            }
            try store.putReaderView(reader: reader, view)
        }

        /// The order of "longest": more days first, then the earlier start.
        static func isLonger(_ a: StreakRun, than b: StreakRun) -> Bool {
            a.length != b.length ? a.length > b.length : a.start < b.start
        }
    }
}

extension ViewRecordCodec {
    /// Encodes a streak run.
    public static func encode(_ run: StreakRun) -> [UInt8] { var w = ByteWriter(); w.u8(format); w.date(run.start); w.date(run.end); return w.bytes }
    /// Decodes a streak run.
    public static func decodeStreakRun(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> StreakRun {
        try ByteReader.read(bytes, record: "StreakRun") { (r: inout ByteReader) throws(ViewDecodingError) -> StreakRun in
            _ = try r.expectFormat()
            let run = StreakRun(start: try r.date("start"), end: try r.date("end"))
            guard run.start <= run.end else { throw r.error("end", "a run ends before it starts") }
            try r.expectEnd(); return run
        }
    }
}

extension ViewStore {
    /// The streak run with the latest start on or before `day`, if any.
    public func streakRun(reader: ReaderID, startingOnOrBefore day: LocalDate) throws -> StreakRun? {
        var found: StreakRun?
        try forEachRecord(ViewRecords.Runs.self, reader: reader, from: nil, through: day, reverse: true) { _, run in
            found = run
            return false
        }
        return found
    }
    /// The streak run starting exactly on `day`, if any.
    public func streakRun(reader: ReaderID, startingOn day: LocalDate) throws -> StreakRun? {
        try record(ViewRecords.Runs.self, reader: reader, day)
    }
    /// Stores a run (keyed by its start).
    public mutating func putStreakRun(reader: ReaderID, _ run: StreakRun) throws {
        try putRecord(ViewRecords.Runs.self, reader: reader, run.start, run, replacing: nil)
    }
    /// Removes the run starting on `start`.
    public mutating func removeStreakRun(reader: ReaderID, start: LocalDate) throws {
        try putRecord(ViewRecords.Runs.self, reader: reader, start, nil, replacing: nil)
    }
    /// Every run of the reader, in order.
    public func streakRuns(reader: ReaderID) throws -> [StreakRun] { try records(ViewRecords.Runs.self, reader: reader).map { $0.record } }
}

/// Current and longest streak.
///
/// The rule: a reading day is a day with at least one page credited or at least one whole minute
/// of timed reading (``DayTotal/minimumReadingSeconds``; local day of the event's own zone,
/// day-start hour applied). A streak is a run of consecutive reading days. The current streak as
/// of a day is the run that ends on that day or on the day before (today not read yet does not
/// break it); otherwise 0.
///
/// `Sendable`: plain values.
public struct Streaks: Hashable, Sendable {
    /// The current run, if one ends today or yesterday.
    public var current: StreakRun?
    /// The longest run (the earliest among equals).
    public var longest: StreakRun?
    /// Days in the current run (0 without one).
    public var currentLength: Int { current?.length ?? 0 }
    /// Days in the longest run.
    public var longestLength: Int { longest?.length ?? 0 }
}

extension ViewStore {
    /// Current streak as of `day`, and the longest; see ``Streaks`` for the rule.
    public func streaks(reader: ReaderID, asOf day: LocalDate) throws -> Streaks {
        var current: StreakRun?
        if let run = try streakRun(reader: reader, startingOnOrBefore: day), run.end >= day.adding(days: -1), run.end <= day {
            current = run
        } else if let run = try streakRun(reader: reader, startingOnOrBefore: day), run.end > day {
            // As of a past day: the part of the run up to that day.
            current = StreakRun(start: run.start, end: day)
        }
        // The fold keeps the longest run in the reader's record; a record of an earlier build has
        // none, and then the runs are walked.
        var longest = try readerView(reader: reader)?.longestRun
        if longest == nil {
            for run in try streakRuns(reader: reader) where run.length > (longest?.length ?? 0) { longest = run }
        }
        return Streaks(current: current, longest: longest)
    }

    /// Streaks as of an instant in a zone.
    public func streaks(reader: ReaderID, asOf: Timestamp, zone: ZoneID, clock: LocalClock = LocalClock()) throws -> Streaks {
        try streaks(reader: reader, asOf: clock.localDay(of: asOf, in: zone))
    }
}
