import Foundation

/// What an append did, event by event, in the order the events were given.
public struct AppendResult: Sendable, Hashable {
    /// One input event's outcome.
    public struct Entry: Sendable, Hashable {
        /// The event's ID.
        public let eventID: UUID
        /// Its position in the log (the stored one when it was already there).
        public let position: UInt64
        /// Its version in its stream.
        public let streamVersion: UInt64
        /// True when this append wrote it; false when the ID was already stored (or repeated
        /// earlier in the same append).
        public let isNew: Bool
    }

    /// The outcomes, in input order.
    public let entries: [Entry]
    /// The log's last position after the append.
    public let lastPosition: UInt64

    /// The positions of the input events, in input order.
    public var positions: [UInt64] { entries.map(\.position) }
    /// The number of events this append wrote.
    public var writtenCount: Int { entries.count { $0.isNew } }
}
