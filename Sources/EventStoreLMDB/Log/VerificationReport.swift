/// The result of ``EventLog/verify(chunkSize:progress:)``.
public struct VerificationReport: Sendable, Hashable {
    /// The number of records walked.
    public let recordCount: UInt64
    /// The last position walked (0 for an empty log).
    public let lastPosition: UInt64
    /// Every fault found, in position order of discovery.
    public let faults: [ChainFault]

    /// True when no fault was found.
    public var isIntact: Bool { faults.isEmpty }
    /// The lowest position with a fault, or nil when the log is intact.
    public var firstBadPosition: UInt64? { faults.map(\.position).min() }
}
