import ArgumentParser
import Foundation
import ReadingEvents

/// A value of an option or argument, parsed and checked once, when the command line is parsed;
/// commands get the typed value and never parse the text again.
///
/// A refused value is a usage error (exit 64) whose message names the option and the rule:
/// "The value 'x' is invalid for '--reader <reader>': not a UUID …". Options pass
/// `transform: T.parse`, because ArgumentParser shows a thrown error's text, whereas
/// `init?(argument:)` alone can only say "invalid".
protocol CheckedArgument: ExpressibleByArgument {
    /// Parses `text`; the error says the rule it breaks.
    static func parse(_ text: String) throws -> Self
}

extension CheckedArgument {
    /// The value of `parse`, `nil` when refused. (The conformances of public types repeat it, as a
    /// public witness: ``ExpressibleByArgument`` is public.)
    init?(argument: String) {
        guard let value = try? Self.parse(argument) else { return nil }
        self = value
    }
}

/// Reader and book IDs: a UUID.
extension TaggedID: CheckedArgument {
    /// The value of ``parse(_:)``; `nil` when refused.
    public init?(argument: String) {
        guard let value = try? Self.parse(argument) else { return nil }
        self = value
    }

    static func parse(_ text: String) throws -> Self {
        guard let id = Self(uuidString: text) else {
            throw ValidationError("not a UUID (8-4-4-4-12 hexadecimal digits, e.g. 7a1c0e3e-4a64-4c43-9c5b-2b7d1e0f6a11)")
        }
        return id
    }
}

/// A time zone: an IANA identifier in the tz database.
extension ZoneID: CheckedArgument {
    /// The value of ``parse(_:)``; `nil` when refused.
    public init?(argument: String) {
        guard let value = try? Self.parse(argument) else { return nil }
        self = value
    }

    static func parse(_ text: String) throws -> ZoneID {
        guard let zone = try? ZoneID(text) else {
            throw ValidationError("not an IANA time zone identifier (e.g. Asia/Seoul)")
        }
        return zone
    }
}

/// A version vector, as `replay sync vector` prints it (`replica:sequence,...`; "" for none).
extension VersionVector: CheckedArgument {
    /// The value of ``parse(_:)``; `nil` when refused.
    public init?(argument: String) {
        guard let value = try? Self.parse(argument) else { return nil }
        self = value
    }

    static func parse(_ text: String) throws -> VersionVector {
        do { return try VersionVector(parsing: text) } catch {
            throw ValidationError("\(error.detail) [rule: \(error.rule.rawValue)]")
        }
    }
}

/// An ISO 8601 date or instant (`--as-of`, `--since`, `--until`). A date is a whole day of the
/// zone the command puts it in (the reader's, or UTC); ``instant(in:endOfDay:)`` places it.
enum DayOrInstant: CheckedArgument, CustomStringConvertible {
    case day(LocalDate)
    case instant(Timestamp)

    /// A bound of a range, clamped to a history later: any year 1 ... 9999.
    static func parse(_ text: String) throws -> DayOrInstant { try parse(text, years: 1...9999) }

    /// A "today" (`--as-of`): a year in ``Limits/years``.
    static func parseToday(_ text: String) throws -> DayOrInstant { try parse(text, years: Limits.years) }

    /// Parses a date or an instant whose year is in `years`.
    static func parse(_ text: String, years: ClosedRange<Int>) throws -> DayOrInstant {
        let yearText = text.prefix { $0.isASCII && $0.isNumber }
        if text.dropFirst(yearText.count).first == "-", let year = Int(yearText), yearText.count > 4 || !years.contains(year) {
            throw ValidationError("the year \(year) is outside \(years.lowerBound) ... \(years.upperBound)")
        }
        if let instant = Timestamp(iso8601: text) { return .instant(instant) }
        if let day = try? LocalDate(iso: text) { return .day(day) }
        throw ValidationError("not an ISO 8601 date (2026-03-01) or instant (2026-03-01T09:00:00+09:00)")
    }

    /// The instant; a date is the start of that day in `zone`, or with `endOfDay` its last microsecond.
    func instant(in zone: ZoneID, endOfDay: Bool = false) -> Timestamp {
        switch self {
        case .instant(let instant): return instant
        case .day(let day):
            let target = endOfDay ? day.adding(days: 1) : day
            let naive = Int64(target.dayNumber) * 86_400
            let offset = Int64(zone.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(naive))))
            return Timestamp(microseconds: (naive - offset) * 1_000_000 - (endOfDay ? 1 : 0))
        }
    }

    var description: String {
        switch self {
        case .day(let day): day.description
        case .instant(let instant): instant.description
        }
    }
}

/// A calendar year of a report and a challenge: ``Limits/challengeYears``.
struct ChallengeYear: CheckedArgument, CustomStringConvertible {
    let value: Int

    static func parse(_ text: String) throws -> ChallengeYear {
        let range = Limits.challengeYears
        guard let year = Int(text) else { throw ValidationError("not a whole number (a year \(range.lowerBound) ... \(range.upperBound))") }
        guard range.contains(year) else { throw ValidationError("the year \(year) is outside \(range.lowerBound) ... \(range.upperBound)") }
        return ChallengeYear(value: year)
    }

    var description: String { String(value) }
}

/// The sync server's address: an http or https URL.
struct ServerURL: CheckedArgument, CustomStringConvertible {
    let url: URL

    static func parse(_ text: String) throws -> ServerURL {
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
            throw ValidationError("not an http(s) URL (e.g. http://127.0.0.1:8080)")
        }
        return ServerURL(url: url)
    }

    var description: String { url.absoluteString }
}

/// An event type tag known to this build (`audit --type`).
struct EventTypeTag: CheckedArgument, CustomStringConvertible {
    let tag: String

    static func parse(_ text: String) throws -> EventTypeTag {
        let tags = EventType.known.map(\.tag)
        guard tags.contains(text) else { throw ValidationError("not an event type; types are \(tags.joined(separator: ", "))") }
        return EventTypeTag(tag: text)
    }

    var description: String { tag }
}
