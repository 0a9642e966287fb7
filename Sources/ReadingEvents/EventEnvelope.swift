/// One stored fact with everything around it: where it sits in the log, which aggregate it
/// belongs to, who did it, when and in which time zone, and when it was recorded.
///
/// See "The event envelope" in the README. `Sendable`: a value type of Sendable fields.
public struct EventEnvelope: Hashable, Sendable {
    /// Global, gapless, strictly increasing position in the log from 1; 0 before the event is stored.
    public var position: UInt64
    /// The event's identifier, chosen by the caller; appending an ID already stored is a no-op.
    public var eventID: EventID
    /// The aggregate the event belongs to.
    public var stream: StreamID
    /// The event's version within its stream, from 1; 0 before the event is stored.
    public var streamVersion: UInt64
    /// Who did it.
    public var reader: ReaderID
    /// The instant of the action.
    public var occurredAt: Timestamp
    /// The IANA zone the action happened in; every day and hour computation uses it.
    public var timeZone: ZoneID
    /// When it was appended (later than ``occurredAt`` for back-dated or imported entries).
    public var recordedAt: Timestamp
    /// The fact itself; its ``ReadingEvent/type`` is the envelope's type tag and schema version.
    public var event: ReadingEvent
    /// Optional identifier tying together events of one host operation or import.
    public var correlationID: EventID?
    /// Optional identifier of the event or command that caused this one.
    public var causationID: EventID?
    /// The replica that created the event, its sequence there, and its hybrid-clock stamp: the
    /// event's place in the canonical order (see ``EventOrigin``). `nil` until a store appends it
    /// (the store stamps its own new events; merged events keep the origin they came with).
    public var origin: EventOrigin?

    /// Creates an envelope. The stream defaults to the event's own stream for `reader`.
    public init(position: UInt64 = 0, eventID: EventID = EventID(), stream: StreamID? = nil,
                streamVersion: UInt64 = 0, reader: ReaderID, occurredAt: Timestamp, timeZone: ZoneID,
                recordedAt: Timestamp, event: ReadingEvent, correlationID: EventID? = nil,
                causationID: EventID? = nil, origin: EventOrigin? = nil) {
        self.position = position
        self.eventID = eventID
        self.stream = stream ?? event.stream(for: reader)
        self.streamVersion = streamVersion
        self.reader = reader
        self.occurredAt = occurredAt
        self.timeZone = timeZone
        self.recordedAt = recordedAt
        self.event = event
        self.correlationID = correlationID
        self.causationID = causationID
        self.origin = origin
    }

    /// The event's type tag and schema version.
    public var type: EventType { event.type }
}
