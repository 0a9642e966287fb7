import Foundation
import ReadingEvents

/// The part of the day a reading moment falls in, by local hour: night [0, 6), morning [6, 12),
/// afternoon [12, 18), evening [18, 24).
///
/// `Sendable`: a plain enum.
public enum TimeOfDay: Int, Sendable, Hashable, CaseIterable, Codable, Comparable {
    /// 00:00 ..< 06:00.
    case night = 0
    /// 06:00 ..< 12:00.
    case morning = 1
    /// 12:00 ..< 18:00.
    case afternoon = 2
    /// 18:00 ..< 24:00.
    case evening = 3

    /// The bucket of a local hour 0 ... 23.
    public init(hour: Int) { self = TimeOfDay(rawValue: min(3, max(0, hour / 6)))! }

    /// Orders night, morning, afternoon, evening.
    public static func < (lhs: TimeOfDay, rhs: TimeOfDay) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A local wall-clock moment: the calendar date and the second of that day, in some zone.
///
/// `Sendable`: plain values.
public struct LocalDateTime: Hashable, Sendable {
    /// The calendar date on the wall clock.
    public var date: LocalDate
    /// Seconds since local midnight, 0 ..< 86_400 (a repeated DST hour repeats its seconds).
    public var secondOfDay: Int
    /// The local hour, 0 ... 23.
    public var hour: Int { secondOfDay / 3600 }
}

/// The one local-day function of the package: every view puts events on days and into
/// time-of-day buckets through it.
///
/// - Local day of an instant = the calendar date of the instant in the event's own time zone,
///   shifted back by ``dayStartHour`` (with 4, 02:00 still belongs to the day before).
/// - Time-of-day bucket = by the unshifted local hour.
/// - The machine's time zone is never consulted, so a rebuild gives the same views under any `TZ`.
///
/// Not `Sendable`: it caches zone offsets in a reference it mutates; give each fold its own.
public struct LocalClock {
    /// The hour (0 ... 23) at which a new reading day starts; 0 means midnight.
    public let dayStartHour: Int
    private let cache = ZoneOffsetCache()

    /// A clock whose days start at `dayStartHour` (clamped to 0 ... 23).
    public init(dayStartHour: Int = 0) { self.dayStartHour = min(23, max(0, dayStartHour)) }

    /// The wall-clock moment of `instant` in `zone`.
    public func localDateTime(of instant: Timestamp, in zone: ZoneID) -> LocalDateTime {
        let seconds = instant.seconds + Int64(cache.offset(at: instant.seconds, zone: zone))
        let (day, second) = seconds.floorDivided(by: 86_400)
        return LocalDateTime(date: LocalDate(dayNumber: Int(day)), secondOfDay: Int(second))
    }

    /// The reading day of `instant` in `zone`, with the day-start hour applied.
    public func localDay(of instant: Timestamp, in zone: ZoneID) -> LocalDate {
        localDay(of: localDateTime(of: instant, in: zone))
    }

    /// The reading day of a wall-clock moment, with the day-start hour applied: what
    /// ``localDay(of:in:)`` gives for the instant that `local` is the wall clock of.
    public func localDay(of local: LocalDateTime) -> LocalDate {
        local.secondOfDay < dayStartHour * 3600 ? local.date.adding(days: -1) : local.date
    }

    /// The time-of-day bucket of `instant` in `zone`.
    public func timeOfDay(of instant: Timestamp, in zone: ZoneID) -> TimeOfDay {
        TimeOfDay(hour: localDateTime(of: instant, in: zone).hour)
    }

    /// Splits the interval [`start`, `end`) at every reading-day boundary and every time-of-day
    /// boundary of `zone`, giving each piece's reading day, bucket and seconds. Pieces cover the
    /// interval exactly, so across a DST change no second is lost or counted twice. Lengths come
    /// from the exact (microsecond) instants; the whole seconds of the pieces round the running
    /// total half up, so they add up to the interval's rounded length (0.2 s is 0 s, not 1).
    public func split(from start: Timestamp, to end: Timestamp, in zone: ZoneID) -> [(day: LocalDate, bucket: TimeOfDay, seconds: Int)] {
        var rounding = SecondsRounding()
        return exactSplit(from: start, to: end, in: zone).map { ($0.day, $0.bucket, rounding.add($0.microseconds)) }
    }

    /// The seconds of a session's closed intervals per reading day and bucket. Each interval is
    /// split in the zone of the event that began it (the start, or a resume in another city) and
    /// measured from the exact instants; the session's running total is rounded half up to whole
    /// seconds, so the pieces add up to ``SessionRecord/measuredSeconds``.
    public func split(_ session: SessionRecord) -> [(day: LocalDate, bucket: TimeOfDay, seconds: Int)] {
        var rounding = SecondsRounding()
        var pieces: [(day: LocalDate, bucket: TimeOfDay, seconds: Int)] = []
        for interval in session.intervals {
            for piece in exactSplit(from: interval.start, to: interval.end, in: interval.timeZone) {
                pieces.append((piece.day, piece.bucket, rounding.add(piece.microseconds)))
            }
        }
        return pieces
    }

    /// The pieces of [`start`, `end`) between reading-day, time-of-day and UTC-offset boundaries of
    /// `zone`, in microseconds; consecutive pieces of one day and bucket are merged.
    func exactSplit(from start: Timestamp, to end: Timestamp, in zone: ZoneID) -> [(day: LocalDate, bucket: TimeOfDay, microseconds: Int64)] {
        var pieces: [(day: LocalDate, bucket: TimeOfDay, microseconds: Int64)] = []
        var t = start.microseconds
        let stop = end.microseconds
        while t < stop {
            let local = localDateTime(of: Timestamp(microseconds: t), in: zone)
            // Next boundary on the wall clock: the next multiple of 6 h, or the day-start hour.
            let s = local.secondOfDay
            var next = (s / 21_600 + 1) * 21_600
            let dayStart = dayStartHour * 3600
            if dayStart > s && dayStart < next { next = dayStart }
            let (second, fraction) = t.floorDivided(by: 1_000_000)
            let step = Int64(next - s) * 1_000_000 - fraction   // next > s, so at least 1 µs
            // A UTC-offset change before that boundary moves it in real time (spring forward reaches
            // 06:00 an hour sooner): end the piece at the change and look again from there.
            let change = cache.offsetValidUntil(seconds: second, zone: zone) * 1_000_000
            let pieceEnd = min(stop, t + step, max(t + 1, change))
            let day = s < dayStart ? local.date.adding(days: -1) : local.date
            let bucket = TimeOfDay(hour: local.hour)
            if let last = pieces.last, last.day == day, last.bucket == bucket {
                pieces[pieces.count - 1].microseconds += pieceEnd - t
            } else {
                pieces.append((day, bucket, pieceEnd - t))
            }
            t = pieceEnd
        }
        return pieces
    }
}

/// Whole seconds from exact microseconds, rounded half up on the running total: each ``add(_:)``
/// returns the seconds that bring the rounded total up to date, so the parts always add up to the
/// rounded whole (three pieces of 0.4 s give 0, 1, 0: 1 s in all, neither 0 nor 3).
///
/// `Sendable`: two integers.
struct SecondsRounding {
    private var microseconds: Int64 = 0
    private var seconds: Int64 = 0

    /// Adds `part` microseconds and returns the whole seconds it brings.
    mutating func add(_ part: Int64) -> Int {
        microseconds += part
        let total = (microseconds + 500_000).floorDivided(by: 1_000_000).quotient
        defer { seconds = total }
        return Int(total - seconds)
    }
}

/// Per-zone UTC offsets with the instant range they hold for, so a fold over millions of events
/// asks Foundation only when it crosses a DST transition or jumps back in time.
///
/// Not `Sendable`: one fold owns it.
final class ZoneOffsetCache {
    private struct Span { var from: Int64; var until: Int64; var offset: Int }
    private var spans: [String: Span] = [:]
    private var zones: [String: TimeZone] = [:]
    /// The zone asked last and its span: a reader's events are mostly in one zone, and comparing
    /// two identifiers (short strings) costs far less than hashing one into `spans`.
    private var lastIdentifier: String?
    private var lastSpan = Span(from: 0, until: 0, offset: 0)

    func offset(at seconds: Int64, zone: ZoneID) -> Int {
        if seconds >= lastSpan.from, seconds < lastSpan.until, zone.identifier == lastIdentifier { return lastSpan.offset }
        if let span = spans[zone.identifier], seconds >= span.from, seconds < span.until {
            lastIdentifier = zone.identifier; lastSpan = span
            return span.offset
        }
        let tz: TimeZone
        if let known = zones[zone.identifier] { tz = known } else { tz = zone.timeZone; zones[zone.identifier] = tz }
        let date = Date(timeIntervalSince1970: TimeInterval(seconds))
        let offset = tz.secondsFromGMT(for: date)
        let next = tz.nextDaylightSavingTimeTransition(after: date).map { Int64($0.timeIntervalSince1970.rounded(.down)) }
        // Without a known next transition, hold the offset for a day at most.
        let span = Span(from: seconds, until: min(next ?? seconds + 86_400, seconds + 400 * 86_400), offset: offset)
        spans[zone.identifier] = span
        lastIdentifier = zone.identifier; lastSpan = span
        return offset
    }

    /// The first instant (in seconds) after `seconds` at which `zone`'s offset may change: the end
    /// of the span that ``offset(at:zone:)`` holds for `seconds`.
    func offsetValidUntil(seconds: Int64, zone: ZoneID) -> Int64 {
        _ = offset(at: seconds, zone: zone)
        return lastSpan.until // `offset` leaves the span of `zone` that holds `seconds` there
    }
}

extension Int64 {
    /// Floor division and the non-negative remainder.
    func floorDivided(by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        var q = self / divisor, r = self % divisor
        if r < 0 { r += divisor; q -= 1 }
        return (q, r)
    }
}
