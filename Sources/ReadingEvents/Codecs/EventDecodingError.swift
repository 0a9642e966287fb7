/// Stored or exchanged bytes that do not decode into a valid ``EventEnvelope``: names the field and
/// the problem. The codecs throw nothing else, and never trap on bad input.
///
/// Field names are the keys of the JSON Lines form for both codecs: envelope fields by name
/// (`reader`, `timeZone`), payload fields under `data.` (`data.position`, `data.metadata.isbn13`);
/// `bytes` and `line` stand for input that does not parse at all.
///
/// `Sendable`: a value type of strings and enums.
public struct EventDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem the field has.
    ///
    /// `Sendable`: a plain enum.
    public enum Problem: String, Sendable, Hashable, CaseIterable {
        /// The input does not parse (truncated protobuf, invalid JSON, not a JSON object).
        case malformed
        /// A required field is absent (or, in binary, empty).
        case missing
        /// A JSON value of the wrong kind (a string where an integer belongs).
        case wrongType
        /// A value that breaks a rule of the model (see ``EventDecodingError/rule``).
        case invalid
        /// Fields that contradict each other (a type tag and a payload of another type).
        case inconsistent
    }

    /// The field, e.g. `reader`, `data.position`, `data.metadata.isbn13`.
    public let field: String
    /// The kind of problem.
    public let problem: Problem
    /// The model rule that was broken, when the problem is a rule violation.
    public let rule: ValidationRule?
    /// A sentence for people, e.g. `expected an integer`.
    public let detail: String

    /// Creates an error.
    public init(field: String, problem: Problem, rule: ValidationRule? = nil, detail: String) {
        self.field = field
        self.problem = problem
        self.rule = rule
        self.detail = detail
    }

    /// `"<field>: <detail>"`, e.g. `data.position: expected an integer`.
    public var description: String { "\(field): \(detail)" }
}

extension EventDecodingError {
    /// A rule violation reported by the model's own checks, with its field placed under `prefix`.
    init(_ error: ValidationError, under prefix: String) {
        self.init(field: prefix + error.field, problem: .invalid, rule: error.rule, detail: error.detail)
    }

    static func missing(_ field: String, _ detail: String = "is required") -> EventDecodingError {
        EventDecodingError(field: field, problem: .missing, detail: detail)
    }

    static func invalid(_ field: String, _ rule: ValidationRule, _ detail: String) -> EventDecodingError {
        EventDecodingError(field: field, problem: .invalid, rule: rule, detail: detail)
    }

    static func inconsistent(_ field: String, _ detail: String) -> EventDecodingError {
        EventDecodingError(field: field, problem: .inconsistent, detail: detail)
    }
}
