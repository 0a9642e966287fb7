import Foundation

/// An event to append: its identity and its opaque payload (the encoded envelope).
public struct NewEvent: Sendable, Hashable {
    /// The event's ID; appending an ID that is already stored is a no-op (idempotent retry).
    public var eventID: UUID
    /// The payload bytes, stored as given.
    public var payload: [UInt8]

    /// An event with the given ID (a new random one by default) and payload.
    public init(eventID: UUID = UUID(), payload: [UInt8]) {
        self.eventID = eventID
        self.payload = payload
    }
}
