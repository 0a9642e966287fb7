/// A star rating in quarter-star steps, 0.25 ... 5.0, so whole stars, half stars and quarter
/// stars (and integer ratings of older apps) all fit without loss.
///
/// `Sendable`: one small integer.
public struct Rating: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The rating in quarter stars, 1 ... 20.
    public let quarters: Int

    /// Checks a quarter count; throws ``ValidationError`` (`outOfRange`) naming `rating`.
    public init(quarters: Int) throws(ValidationError) {
        guard (1...20).contains(quarters) else {
            throw ValidationError(field: "rating", rule: .outOfRange,
                                  detail: "\(Double(quarters) / 4) stars is outside 0.25 ... 5.0")
        }
        self.quarters = quarters
    }

    /// Checks a star value: 0.25 ... 5.0 (`outOfRange`) and a multiple of 0.25 (`offQuarterStep`).
    public init(stars: Double) throws(ValidationError) {
        guard stars.isFinite, stars >= 0.25, stars <= 5.0 else {
            throw ValidationError(field: "rating", rule: .outOfRange, detail: "\(stars) stars is outside 0.25 ... 5.0")
        }
        let q = stars * 4
        guard q == q.rounded() else {
            throw ValidationError(field: "rating", rule: .offQuarterStep,
                                  detail: "\(stars) stars is not a multiple of 0.25")
        }
        try self.init(quarters: Int(q))
    }

    /// The rating in stars (0.25 ... 5.0).
    public var stars: Double { Double(quarters) / 4 }

    /// e.g. `4.25`.
    public var description: String { String(stars) }

    /// Orders by value.
    public static func < (lhs: Rating, rhs: Rating) -> Bool { lhs.quarters < rhs.quarters }
}

/// Where a book stands in the reader's library.
///
/// `Sendable`: a plain enum.
public enum ReadingStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// On the wish list.
    case wantToRead
    /// Being read.
    case reading
    /// Read to the end.
    case finished
    /// Abandoned before the end.
    case didNotFinish
}

/// A colour theme chosen for a goal or the profile (the seed apps offer a palette; the core keeps
/// the host's name for it).
///
/// `Sendable`: a value type holding a string.
public struct Theme: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral {
    /// The host's name for the theme, e.g. "orange".
    public let rawValue: String
    /// Wraps a theme name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Wraps a theme name literal.
    public init(stringLiteral value: String) { self.rawValue = value }
}

extension Rating: Codable {
    /// Decodes a star number (`4.25`) and checks it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(stars: try container.decode(Double.self))
    }

    /// Encodes the star number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(stars)
    }
}
