/// One inconsistency found by ``EventLog/verify(chunkSize:progress:)``.
public struct ChainFault: Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public enum Kind: Sendable, Hashable {
        /// The record's CRC-32C does not match its bytes.
        case checksum
        /// The record cannot be decoded (truncated, unknown format, bad stream name).
        case malformed
        /// The record's position field differs from its key.
        case positionMismatch
        /// Positions are not 1, 2, 3, ... (a missing position).
        case positionGap
        /// The record's prevHash is not the hash of the record before it.
        case chainBreak
        /// The `eventIDs` index misses the record or points elsewhere (or has extra entries).
        case eventIDIndex
        /// The `streamIndex` misses the record or points elsewhere (or has extra entries).
        case streamIndex
        /// The stream's versions are not 1, 2, 3, ... in position order, or `streams` disagrees.
        case streamVersion
        /// The head hash or last position in `meta` disagrees with the last record.
        case head
    }

    /// The position the fault is found at (for index-wide faults, the last position).
    public let position: UInt64
    /// What is wrong.
    public let kind: Kind
    /// A sentence with the details.
    public let detail: String

    /// `position N: kind: detail`.
    public var description: String { "position \(position): \(kind): \(detail)" }
}
