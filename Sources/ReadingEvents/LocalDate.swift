/// A calendar date without a time or zone (a goal's start and target date, a finish date, a local
/// reading day).
///
/// Dates use the proleptic Gregorian calendar; ``dayNumber`` counts days from 1970-01-01, which
/// makes day arithmetic and ordering exact and cheap. `Sendable`: three integers.
public struct LocalDate: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    /// The year, 1...9999.
    public let year: Int
    /// The month, 1...12.
    public let month: Int
    /// The day of the month, 1...31 (checked against the month's length).
    public let day: Int

    /// Hashes the date as one word (year, month and day packed), not three: dates key the fold's
    /// day and book-day records, hashed several times an event (issue 37).
    public func hash(into hasher: inout Hasher) { hasher.combine(year << 9 | month << 5 | day) }

    /// A checked date; throws ``ValidationError`` (`outOfRange`) naming `field` for an impossible date.
    public init(year: Int, month: Int, day: Int, field: String = "date") throws(ValidationError) {
        guard (1...9999).contains(year), (1...12).contains(month),
              (1...LocalDate.daysIn(month: month, year: year)).contains(day) else {
            throw ValidationError(field: field, rule: .outOfRange,
                                  detail: "\(year)-\(month)-\(day) is not a calendar date")
        }
        self.year = year; self.month = month; self.day = day
    }

    /// The date `dayNumber` days after 1970-01-01 (negative: before). Precondition: year 1...9999.
    public init(dayNumber: Int) {
        // Howard Hinnant's civil_from_days.
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.year = yoe + era * 400 + (m <= 2 ? 1 : 0)
        self.month = m
        self.day = d
    }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    public var dayNumber: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date `days` later (or earlier, when negative).
    public func adding(days: Int) -> LocalDate { LocalDate(dayNumber: dayNumber + days) }

    /// Whole days from `self` to `other` (positive when `other` is later).
    public func days(until other: LocalDate) -> Int { other.dayNumber - dayNumber }

    /// Parses `YYYY-MM-DD`; throws ``ValidationError`` (`malformed` or `outOfRange`) naming `field`.
    public init(iso text: String, field: String = "date") throws(ValidationError) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]) else {
            throw ValidationError(field: field, rule: .malformed, detail: "\"\(text)\" is not a YYYY-MM-DD date")
        }
        try self.init(year: y, month: m, day: d, field: field)
    }

    /// `YYYY-MM-DD`.
    public var description: String {
        func pad(_ v: Int, _ n: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, n - s.count)) + s }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// Orders by day.
    public static func < (lhs: LocalDate, rhs: LocalDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// The number of days in a month.
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Decodes `YYYY-MM-DD`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(iso: try container.decode(String.self))
    }

    /// Encodes `YYYY-MM-DD`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
