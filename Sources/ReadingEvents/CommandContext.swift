/// Who issues a command, when and where: everything the envelope needs besides the event.
///
/// `Sendable`: a value type.
public struct CommandContext: Hashable, Sendable {
    /// The reader issuing the command.
    public var reader: ReaderID
    /// When the action happened (back-dated entries give an earlier instant).
    public var occurredAt: Timestamp
    /// The IANA zone the reader was in, as text; checked by ``envelopes(for:)``.
    public var timeZone: String
    /// When the command reaches the store.
    public var recordedAt: Timestamp
    /// The command's identifier. The events it produces get identifiers derived from it (see
    /// ``eventID(at:)``), so retrying the same command after a crash appends nothing twice.
    public var commandID: EventID
    /// Optional correlation identifier stamped on every event.
    public var correlationID: EventID?
    /// Optional causation identifier stamped on every event.
    public var causationID: EventID?

    /// Creates a context; `recordedAt` defaults to `occurredAt`, `commandID` to a random one.
    public init(reader: ReaderID, occurredAt: Timestamp, timeZone: String, recordedAt: Timestamp? = nil,
                commandID: EventID = EventID(), correlationID: EventID? = nil, causationID: EventID? = nil) {
        self.reader = reader
        self.occurredAt = occurredAt
        self.timeZone = timeZone
        self.recordedAt = recordedAt ?? occurredAt
        self.commandID = commandID
        self.correlationID = correlationID
        self.causationID = causationID
    }

    /// The identifier of the command's `index`-th event: the command ID itself for the first,
    /// and for later ones the command ID with its last two bytes XOR-ed with the index.
    public func eventID(at index: Int) -> EventID {
        guard index > 0 else { return commandID }
        var bytes = commandID.bytes
        bytes[15] ^= UInt8(truncatingIfNeeded: index)
        bytes[14] ^= UInt8(truncatingIfNeeded: index >> 8)
        return EventID(bytes: bytes)!
    }

    /// Wraps decided events in envelopes, checking the time zone (`unknownTimeZone`), that
    /// both instants lie in 1900 ..< 2200 (`outOfRange`, fields `occurredAt` and `recordedAt`), and
    /// that `occurredAt` is not after `recordedAt` (`inconsistent`).
    public func envelopes(for events: [ReadingEvent]) throws(ValidationError) -> [EventEnvelope] {
        let zone = try ZoneID(timeZone, field: "timeZone")
        try ValueRules.instants(occurredAt: occurredAt, recordedAt: recordedAt)
        let occurred = occurredAt, recorded = recordedAt
        return events.enumerated().map { index, event in
            EventEnvelope(eventID: eventID(at: index), reader: reader, occurredAt: occurred, timeZone: zone,
                          recordedAt: recorded, event: event, correlationID: correlationID, causationID: causationID)
        }
    }
}
