/// One stream's part of a multi-stream append: the stream, its expected version, its events.
///
/// `Sendable`: a value of `Sendable` fields.
public struct StreamAppend: Sendable, Hashable {
    /// The stream.
    public var key: StreamKey
    /// The version the stream must have before this part (checked only when it has new events).
    public var expectedVersion: ExpectedVersion
    /// The events, in order.
    public var events: [NewEvent]

    /// The stream's text (``StreamKey/description``).
    public var stream: String { key.description }

    /// A part appending `events` to the stream `key` if it is at `expectedVersion`.
    public init(key: StreamKey, expectedVersion: ExpectedVersion = .any, events: [NewEvent]) {
        self.key = key
        self.expectedVersion = expectedVersion
        self.events = events
    }

    /// A part appending `events` to the stream named `stream` (1 to ``EventLog/maxStreamNameBytes``
    /// UTF-8 bytes, no NUL; see ``StreamKey/init(name:)``) if it is at `expectedVersion`.
    public init(stream: String, expectedVersion: ExpectedVersion = .any, events: [NewEvent]) {
        self.init(key: StreamKey(name: stream), expectedVersion: expectedVersion, events: events)
    }
}
