/// An ISBN-13, checked by its check digit.
///
/// Accepts digits with optional hyphens or spaces ("978-89-01-23456-7"); stores the 13 digits.
/// `Sendable`: a value type holding a string.
public struct ISBN13: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The 13 digits, without separators.
    public let digits: String

    /// Validates the text form; throws ``ValidationError`` naming `isbn13` when it has not 13
    /// digits (`malformed`) or the check digit does not match (`badCheckDigit`).
    public init(_ text: String) throws(ValidationError) {
        var values: [Int] = []
        values.reserveCapacity(13)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "0"..."9": values.append(Int(scalar.value) - 48)
            case "-", " ": continue
            default:
                throw ValidationError(field: "isbn13", rule: .malformed,
                                      detail: "\"\(text)\" contains \"\(scalar)\"; only digits, hyphens and spaces are allowed")
            }
        }
        guard values.count == 13 else {
            throw ValidationError(field: "isbn13", rule: .malformed,
                                  detail: "\"\(text)\" has \(values.count) digits, an ISBN-13 has 13")
        }
        var sum = 0
        for (index, value) in values.prefix(12).enumerated() { sum += index % 2 == 0 ? value : 3 * value }
        let check = (10 - sum % 10) % 10
        guard check == values[12] else {
            throw ValidationError(field: "isbn13", rule: .badCheckDigit,
                                  detail: "\"\(text)\" ends in \(values[12]) but its check digit is \(check)")
        }
        self.digits = String(values.map { Character(String($0)) })
    }

    /// The 13 digits.
    public var description: String { digits }

    /// Decodes the digit string and checks it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(try container.decode(String.self))
    }

    /// Encodes the 13 digits.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(digits)
    }
}
