import Foundation

/// An instant, as whole microseconds since 1970-01-01T00:00:00Z.
///
/// Integers keep every codec lossless and make day arithmetic exact; use ``date`` and
/// ``init(_:)`` to cross to Foundation. `Sendable`: one integer.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Microseconds since the Unix epoch (negative: before it).
    public let microseconds: Int64

    /// The earliest instant an event may carry: 1900-01-01T00:00:00Z.
    public static let earliestAllowed = Timestamp(microseconds: -2_208_988_800_000_000)
    /// The first instant an event may no longer carry: 2200-01-01T00:00:00Z.
    public static let latestAllowed = Timestamp(microseconds: 7_258_118_400_000_000)

    /// Wraps a microsecond count.
    public init(microseconds: Int64) { self.microseconds = microseconds }

    /// Rounds a `Date` to the nearest microsecond.
    public init(_ date: Date) {
        self.microseconds = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    /// Whole seconds since the epoch, rounded down.
    public var seconds: Int64 { microseconds >= 0 ? microseconds / 1_000_000 : -((-microseconds + 999_999) / 1_000_000) }

    /// The instant as a Foundation `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(microseconds) / 1_000_000) }

    /// The instant `seconds` later.
    public func adding(seconds: Int64) -> Timestamp { Timestamp(microseconds: microseconds + seconds * 1_000_000) }

    /// Throws ``ValidationError`` (`outOfRange`) naming `field` unless the instant lies in
    /// [1900-01-01, 2200-01-01) UTC, the years a reading history can plausibly hold.
    public func validated(field: String) throws(ValidationError) -> Timestamp {
        guard self >= Timestamp.earliestAllowed, self < Timestamp.latestAllowed else {
            throw ValidationError(field: field, rule: .outOfRange,
                                  detail: "\(self) is outside 1900-01-01 ..< 2200-01-01")
        }
        return self
    }

    /// Orders by instant.
    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.microseconds < rhs.microseconds }

    /// ISO 8601 in UTC with microseconds, e.g. `2026-03-01T12:30:00.000000Z`.
    public var description: String { ISO8601Micro.format(self) }

    /// Parses ISO 8601 with a `Z` or `±hh:mm` offset and optional fraction (up to microseconds);
    /// `nil` when the text has another form.
    public init?(iso8601 text: String) {
        guard let value = ISO8601Micro.parse(text) else { return nil }
        self = value
    }
}

extension Timestamp: Codable {
    /// Decodes the ISO 8601 text form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Timestamp(iso8601: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not an ISO 8601 instant")
        }
        self = value
    }

    /// Encodes ``description``.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// Exact ISO 8601 formatting and parsing with microseconds, without Foundation's formatters
/// (which round through `Double` and depend on the machine's settings).
enum ISO8601Micro {
    static func format(_ t: Timestamp) -> String {
        var days = t.microseconds / 86_400_000_000
        var rem = t.microseconds % 86_400_000_000
        if rem < 0 { rem += 86_400_000_000; days -= 1 }
        let date = LocalDate(dayNumber: Int(days))
        let secs = rem / 1_000_000, micros = rem % 1_000_000
        func pad(_ v: Int64, _ n: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, n - s.count)) + s }
        return "\(date)T\(pad(secs / 3600, 2)):\(pad(secs / 60 % 60, 2)):\(pad(secs % 60, 2)).\(pad(micros, 6))Z"
    }

    static func parse(_ text: String) -> Timestamp? {
        let u = Array(text.utf8)
        guard u.count >= 20, u[10] == UInt8(ascii: "T") || u[10] == UInt8(ascii: "t") else { return nil }
        guard let date = try? LocalDate(iso: String(decoding: u[0..<10], as: UTF8.self)) else { return nil }
        func num(_ r: Range<Int>) -> Int64? {
            guard r.upperBound <= u.count else { return nil }
            var v: Int64 = 0
            for c in u[r] { guard c >= 48, c <= 57 else { return nil }; v = v * 10 + Int64(c - 48) }
            return v
        }
        guard u[13] == UInt8(ascii: ":"), u[16] == UInt8(ascii: ":"),
              let h = num(11..<13), let m = num(14..<16), let s = num(17..<19), h < 24, m < 60, s < 60 else { return nil }
        var i = 19
        var micros: Int64 = 0
        if i < u.count, u[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < u.count, u[i] >= 48, u[i] <= 57 {
                if digits < 6 { micros = micros * 10 + Int64(u[i] - 48) } else if digits >= 9 { return nil }
                digits += 1; i += 1
            }
            guard digits > 0 else { return nil }
            for _ in 0..<max(0, 6 - digits) { micros *= 10 }
        }
        var offset: Int64 = 0
        guard i < u.count else { return nil }
        if u[i] == UInt8(ascii: "Z") || u[i] == UInt8(ascii: "z") {
            i += 1
        } else if u[i] == UInt8(ascii: "+") || u[i] == UInt8(ascii: "-") {
            let sign: Int64 = u[i] == UInt8(ascii: "-") ? -1 : 1
            guard i + 6 <= u.count, u[i + 3] == UInt8(ascii: ":"),
                  let oh = num(i + 1..<i + 3), let om = num(i + 4..<i + 6), oh < 24, om < 60 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
            i += 6
        } else { return nil }
        guard i == u.count else { return nil }
        let secs = Int64(date.dayNumber) * 86_400 + h * 3600 + m * 60 + s - offset
        return Timestamp(microseconds: secs * 1_000_000 + micros)
    }
}
