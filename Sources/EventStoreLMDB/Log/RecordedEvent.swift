import Foundation

/// An event as stored in the log.
///
/// `Sendable`: a value of `Sendable` fields.
public struct RecordedEvent: Sendable, Hashable {
    /// Its global position (gapless from 1).
    public let position: UInt64
    /// Its ID.
    public let eventID: UUID
    /// The stream it belongs to, as stored (no text on the read path).
    public let key: StreamKey
    /// Its version in that stream (from 1).
    public let streamVersion: UInt64
    /// The payload bytes, as appended.
    public let payload: [UInt8]
    /// The first 16 bytes of the SHA-256 of the previous record (zeros at position 1).
    public let prevHash: [UInt8]

    /// The stream's text (``StreamKey/description``): built on each call.
    public var stream: String { key.description }

    /// An event with the given fields.
    public init(
        position: UInt64, eventID: UUID, key: StreamKey, streamVersion: UInt64,
        payload: [UInt8], prevHash: [UInt8]
    ) {
        self.position = position
        self.eventID = eventID
        self.key = key
        self.streamVersion = streamVersion
        self.payload = payload
        self.prevHash = prevHash
    }

    /// An event with the given fields, its stream named by text (``StreamKey/init(name:)``).
    public init(
        position: UInt64, eventID: UUID, stream: String, streamVersion: UInt64,
        payload: [UInt8], prevHash: [UInt8]
    ) {
        self.init(position: position, eventID: eventID, key: StreamKey(name: stream), streamVersion: streamVersion,
                  payload: payload, prevHash: prevHash)
    }
}
