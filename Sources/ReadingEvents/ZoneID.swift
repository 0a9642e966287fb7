import Foundation

/// An IANA time zone identifier that exists ("Asia/Seoul", "America/New_York").
///
/// Every day and hour computation uses the zone an event happened in, never the machine's zone.
/// `Sendable`: a value type holding a string.
public struct ZoneID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The identifier, exactly as validated.
    public let identifier: String

    /// Checks that the identifier names a time zone in the system's tz database; throws
    /// ``ValidationError`` (`unknownTimeZone`) naming `field` otherwise.
    public init(_ identifier: String, field: String = "timeZone") throws(ValidationError) {
        guard ZoneID.isKnown(identifier) else {
            throw ValidationError(field: field, rule: .unknownTimeZone,
                                  detail: "\"\(identifier)\" is not an IANA time zone identifier")
        }
        self.identifier = identifier
    }

    /// Wraps an identifier that was validated before (decoded from the store); not re-checked.
    public init(unchecked identifier: String) { self.identifier = identifier }

    /// The identifier.
    public var description: String { identifier }

    /// The Foundation time zone; falls back to UTC only for unchecked identifiers the system lacks.
    public var timeZone: TimeZone { TimeZone(identifier: identifier) ?? TimeZone(secondsFromGMT: 0)! }

    /// "UTC".
    public static let utc = ZoneID(unchecked: "UTC")

    private static let known: Set<String> = {
        var set = Set(TimeZone.knownTimeZoneIdentifiers)
        set.formUnion(["UTC", "GMT", "Etc/UTC", "Etc/GMT"])
        return set
    }()

    /// Known when the system lists it, or when Foundation resolves it to exactly that identifier
    /// (Linux lists only ICU's names, e.g. "Asia/Calcutta" but not "Asia/Kolkata"; "GMT+9" resolves
    /// to "GMT+0900" and is not an IANA identifier). Answers are cached: imports check a zone per line.
    static func isKnown(_ identifier: String) -> Bool {
        if known.contains(identifier) { return true }
        if let cached = resolved.value(identifier) { return cached }
        let answer = TimeZone(identifier: identifier)?.identifier == identifier
        resolved.store(identifier, answer)
        return answer
    }

    private static let resolved = ResolvedZones()



    /// Decodes and validates the identifier.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(try container.decode(String.self))
    }

    /// Encodes the identifier.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(identifier)
    }
}

/// Identifiers already checked against Foundation.
///
/// `@unchecked Sendable`: the dictionary is only touched while holding `lock`.
final class ResolvedZones: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [String: Bool] = [:]

    func value(_ identifier: String) -> Bool? { lock.withLock { answers[identifier] } }
    func store(_ identifier: String, _ answer: Bool) { lock.withLock { answers[identifier] = answer } }
}
