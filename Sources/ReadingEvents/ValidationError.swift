/// A rule that a command, a value or an envelope broke.
///
/// `Sendable`: a plain enum.
public enum ValidationRule: String, Sendable, Hashable, CaseIterable, Codable {
    /// A number is outside its allowed range (a page position, a duration, a year).
    case outOfRange
    /// A rating is not a multiple of a quarter star.
    case offQuarterStep
    /// A text is empty, or only whitespace.
    case empty
    /// A text is longer than its stated limit.
    case tooLong
    /// A value does not have the required form (an ISBN-13, a date, a UUID).
    case malformed
    /// An ISBN-13 whose check digit does not match.
    case badCheckDigit
    /// An IANA time zone identifier that does not exist.
    case unknownTimeZone
    /// A target date before the start date.
    case targetBeforeStart
    /// The book was never added to the library.
    case bookNotAdded
    /// The book was added before and may not be added again.
    case bookAlreadyAdded
    /// The book was removed from the library.
    case bookRemoved
    /// The book is finished and needs a new read-through before pages can be recorded.
    case bookFinished
    /// The book is not finished (undoing a finish, starting a re-read).
    case bookNotFinished
    /// The book already has an active goal.
    case goalAlreadyActive
    /// The book has no active goal.
    case noActiveGoal
    /// A sentence or memo that does not exist (or was removed).
    case notFound
    /// An identifier that is already in use (a sentence, memo or session ID).
    case duplicateID
    /// A timed session that was never started, or already ended.
    case sessionNotStarted
    /// A timed session in the wrong state (pausing a paused session, resuming a running one).
    case sessionState
    /// A position correction that does not move backward, or a record that moves backward.
    case notBackward
    /// A list that contains the same element twice.
    case duplicateElement
    /// Fields of one event that contradict each other: an event filed under a stream it does not
    /// belong to (a book event under the reader's stream, another book's or reader's stream), or an
    /// action recorded before it happened (`occurredAt` after `recordedAt`).
    case inconsistent
}

/// A rejected command or value: names the field and the rule, with a sentence for people.
///
/// `Sendable`: value type of strings and an enum.
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The field that broke the rule, as named in the command or payload ("position", "rating").
    public let field: String
    /// The rule that was broken.
    public let rule: ValidationRule
    /// A sentence that explains the rejection, e.g. "position 320 is above the page count 300".
    public let detail: String

    /// Creates a validation error.
    public init(field: String, rule: ValidationRule, detail: String) {
        self.field = field
        self.rule = rule
        self.detail = detail
    }

    /// `"<field>: <detail> [rule: <rule>]"`.
    public var description: String { "\(field): \(detail) [rule: \(rule.rawValue)]" }
}
