/// The version a stream must have for an append to go ahead (optimistic concurrency).
public enum ExpectedVersion: Sendable, Hashable, CustomStringConvertible {
    /// No check.
    case any
    /// The stream must have no events yet.
    case noStream
    /// The stream's current version must be exactly this (`.exactly(0)` means the same as
    /// ``noStream``).
    case exactly(UInt64)

    /// True when a stream at `current` (nil: no events) satisfies this expectation.
    func isSatisfied(by current: UInt64?) -> Bool {
        switch self {
        case .any: return true
        case .noStream: return (current ?? 0) == 0
        case .exactly(let version): return (current ?? 0) == version
        }
    }

    /// `any`, `noStream` or `exactly(N)`.
    public var description: String {
        switch self {
        case .any: return "any"
        case .noStream: return "noStream"
        case .exactly(let version): return "exactly(\(version))"
        }
    }
}
