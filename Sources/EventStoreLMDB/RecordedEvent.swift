import Foundation

/// An event as stored in the log.
public struct RecordedEvent: Sendable, Hashable {
    /// Its global position (gapless from 1).
    public let position: UInt64
    /// Its ID.
    public let eventID: UUID
    /// The stream it belongs to.
    public let stream: String
    /// Its version in that stream (from 1).
    public let streamVersion: UInt64
    /// The payload bytes, as appended.
    public let payload: [UInt8]
    /// The first 16 bytes of the SHA-256 of the previous record (zeros at position 1).
    public let prevHash: [UInt8]

    /// An event with the given fields.
    public init(
        position: UInt64, eventID: UUID, stream: String, streamVersion: UInt64,
        payload: [UInt8], prevHash: [UInt8]
    ) {
        self.position = position
        self.eventID = eventID
        self.stream = stream
        self.streamVersion = streamVersion
        self.payload = payload
        self.prevHash = prevHash
    }
}
