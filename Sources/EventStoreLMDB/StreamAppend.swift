/// One stream's part of a multi-stream append: the stream, its expected version, its events.
public struct StreamAppend: Sendable, Hashable {
    /// The stream's name (1 to ``EventLog/maxStreamNameBytes`` UTF-8 bytes, no NUL).
    public var stream: String
    /// The version the stream must have before this part (checked only when it has new events).
    public var expectedVersion: ExpectedVersion
    /// The events, in order.
    public var events: [NewEvent]

    /// A part appending `events` to `stream` if it is at `expectedVersion`.
    public init(stream: String, expectedVersion: ExpectedVersion = .any, events: [NewEvent]) {
        self.stream = stream
        self.expectedVersion = expectedVersion
        self.events = events
    }
}
